"""The storage contract: what simindex.storage promises the rest of simindex,
run over every backend (SQLite in memory, a SQLite file, PostgreSQL), through
the package's own interface (no SimIndex). Fingerprints include the top bit
(stored signed) and 2**64 - 1."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from simindex import StorageError, storage
from simindex.blocks import BlockLayout
from simindex.fingerprint import DEFAULT_CONFIG, to_unsigned

LAYOUT = BlockLayout.for_k(8)  # probed above 2, as the default index


@pytest.fixture(params=["memory", "file", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[storage.Store]:
    if request.param == "postgres":
        where = storage.locate(str(request.getfixturevalue("pg_url")))
    else:
        where = storage.locate(":memory:" if request.param == "memory" else tmp_path / "s.db")
    backend = storage.open_backend(where)
    backend.ensure_schema(create=True)
    with backend.writing(alone=True) as conn:
        storage.create(conn, storage.Settings(layout=LAYOUT, config=DEFAULT_CONFIG, distance=8))
    backend.use_wal()
    store = storage.Store(backend, LAYOUT)
    yield store
    store.close()
    backend.dispose()


def signature_of(key: str) -> bytes | None:
    """The verification signature fill stores for a key: 64 bytes for about
    half of them, none for the rest (a row added as a fingerprint alone)."""
    digest = hashlib.blake2b(key.encode(), digest_size=64).digest()
    return digest if digest[0] % 2 else None


def fill(store: storage.Store, n: int = 2000, seed: int = 1) -> dict[str, int]:
    rng = random.Random(seed)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(n)}
    stored["top"], stored["zero"] = 2**64 - 1, 0
    for i in range(40):  # near-duplicates of a few, for the lookups to find
        stored[f"near{i}"] = stored[f"k{i % 5}"] ^ (1 << rng.randrange(64))
    keys = list(stored)
    with store.backend.write() as write:
        fps = np.array([stored[k] for k in keys], dtype=np.uint64)
        sigs = [signature_of(k) for k in keys]
        read, written = store.put_stream(write, [(keys, fps, sigs)])
    assert read == written == len(stored)
    return stored


def test_capabilities_are_what_each_database_can_do(opened: storage.Store) -> None:
    caps = opened.backend.caps
    sqlite = not opened.where.postgres
    assert caps.can_hold and caps.server_join is not sqlite
    assert caps.bulk_copy is not sqlite and opened.backend.caps is caps  # detected once


def test_rows_round_trip(opened: storage.Store) -> None:
    stored = fill(opened)
    with opened.backend.reading() as conn:
        assert opened.size(conn) == len(stored)
        ids, fps = opened.load(conn, opened.backend.generation(conn))
        signed = fps.view(np.int64).tolist()
        named = opened.keys_for(conn, dict(zip(ids.tolist(), signed, strict=True)))
        everything = {key: (to_unsigned(fp), sig) for _, key, fp, sig in opened.everything(conn)}
        assert opened.without_signature(conn) == sum(signature_of(k) is None for k in stored)
    keys = {i: key for i, (key, _) in named.items()}
    assert {keys[i]: int(f) for i, f in zip(ids.tolist(), fps.tolist(), strict=True)} == stored
    assert all(sig == signature_of(key) for key, sig in named.values())
    assert everything == {key: (fp, signature_of(key)) for key, fp in stored.items()}
    assert {signature_of(key) is None for key in stored} == {True, False}  # both kinds
    assert to_unsigned(opened.fetch("top") or 0) == 2**64 - 1 and opened.fetch("nope") is None
    assert opened.fetch_row("top") == (-1, signature_of("top")) and opened.fetch_row("nope") is None
    assert opened.estimated_size() >= len(stored)
    found = {
        key: (to_unsigned(fp), sig) for _, key, fp, sig in opened.rows_by_id(ids[:50].tolist())
    }
    assert found == {keys[i]: (stored[keys[i]], signature_of(keys[i])) for i in ids[:50].tolist()}
    with opened.backend.reading() as conn:
        by_key = opened.rows_by_key(conn, ["top", "zero", "nope", *[f"k{i}" for i in range(600)]])
    assert {to_unsigned(f) for _, f in by_key} == {stored[k] for k in ["top", "zero"]} | {
        stored[f"k{i}"] for i in range(600)
    }


def test_lookups_find_every_row_a_table_agrees_with(opened: storage.Store) -> None:
    stored = fill(opened)
    rng = random.Random(2)
    for key in ["top", "zero", *rng.sample(sorted(stored), 30)]:
        q = stored[key] ^ (1 << rng.randrange(64))
        rows = opened.lookup(q, opened.generation())
        got = {to_unsigned(f) for _, f in rows}
        for fp in stored.values():  # the pigeonhole: within the layout's k, a table agrees
            if (fp ^ q).bit_count() <= LAYOUT.k:
                assert fp in got
        assert opened.can_probe(8)
        probed = opened.probe_lookup(q, 8, opened.generation())
        assert probed is not None
        near = {to_unsigned(f) for _, f in probed}
        assert {fp for fp in stored.values() if (fp ^ q).bit_count() <= 8} <= near


def test_writes_replace_keep_and_remove(opened: storage.Store) -> None:
    fill(opened, n=100)
    with opened.backend.write() as write:
        keys, fps = ["k1", "k2", "new"], np.array([1, 2**63, 3], dtype=np.uint64)
        assert opened.put(write.conn, keys, fps, keep=True) == 1  # only the new key
        assert opened.put(write.conn, ["k1"], np.array([7], dtype=np.uint64), keep=False) == 1
        assert opened.remove(write.conn, ["k2", "nope"]) == 1
        signed = [bytes(range(64)), None]
        one = np.array([8, 9], dtype=np.uint64)
        assert opened.put(write.conn, ["k3", "k4"], one, keep=False, signatures=signed) == 2
        kept = np.array([10], dtype=np.uint64)
        assert opened.put(write.conn, ["k3"], kept, keep=True, signatures=[b"\0" * 64]) == 0
    assert opened.fetch("k1") == 7 and opened.fetch("k2") is None and opened.fetch("new") == 3
    # A replaced row takes the new signature (or none); keep leaves both as they were.
    assert opened.fetch_row("k3") == (8, bytes(range(64))) and opened.fetch_row("k4") == (9, None)
    assert opened.fetch_row("new") == (3, None)  # put without signatures: none


def test_a_write_knows_the_changes_counted_before_and_after_it(opened: storage.Store) -> None:
    """Each write of simindex's sees the count it started from and left;
    one row written moves it by the row (a trigger, SQLite) or not at all
    (PostgreSQL: the triggers leave simindex's own writes to their one
    count), and by one more for the write itself."""
    seen = []
    for i in range(3):
        with opened.backend.write() as write:
            opened.put(write.conn, [f"c{i}"], np.array([i], dtype=np.uint64), keep=False)
        seen.append((write.before, write.after))
    assert all(b is not None and a is not None and a > b for b, a in seen)
    assert [b for b, _ in seen[1:]] == [a for _, a in seen[:-1]]  # nobody else wrote
    versions = opened.versions()
    assert versions is not None and versions.changes == seen[-1][1]
    with opened.backend.reading() as conn:
        assert opened.backend.versions(conn) == versions


def test_a_failed_write_leaves_nothing(opened: storage.Store) -> None:
    with pytest.raises(RuntimeError), opened.backend.write() as write:
        opened.put(write.conn, ["gone"], np.array([5], dtype=np.uint64), keep=False)
        raise RuntimeError("stop")
    assert opened.fetch("gone") is None


def test_a_batch_joined_on_the_server_equals_brute_force(opened: storage.Store) -> None:
    if not opened.backend.caps.server_join:
        pytest.skip("joins on the server: PostgreSQL")
    stored = fill(opened)
    rng = random.Random(3)
    queries = [stored[f"k{i}"] ^ (1 << rng.randrange(64)) for i in range(20)] + [2**64 - 1]
    with opened.backend.reading() as conn:
        rows = opened.copying.join_lookup(conn, queries, LAYOUT.k)
    got = {(qid, key) for qid, _, key, _, _ in rows}
    assert all(sig == signature_of(key) for _, _, key, _, sig in rows)
    expected = {
        (qid, key)
        for qid, q in enumerate(queries)
        for key, fp in stored.items()
        if (fp ^ q).bit_count() <= LAYOUT.k
    }
    assert got == expected


def test_a_rebuild_moves_the_generation(opened: storage.Store) -> None:
    fill(opened, n=50)
    before = opened.generation()
    relaid = storage.Settings(layout=BlockLayout.for_k(3), config=DEFAULT_CONFIG)
    with opened.backend.writing(alone=True) as conn:
        assert storage.swap_in(conn, relaid, from_staging=False) == 52 + 40
    assert opened.generation() != before


def test_a_read_under_another_generation_says_changed(opened: storage.Store) -> None:
    """Every read that names its generation raises storage.Changed when the
    database is at another (the reader then asks again: view.Views.read)."""
    fill(opened, n=50)
    stale = opened.generation() + 1
    with pytest.raises(storage.Changed):
        opened.lookup(12345, stale)
    with pytest.raises(storage.Changed):
        opened.probe_lookup(12345, 8, stale)
    with opened.backend.reading() as conn, pytest.raises(storage.Changed):
        opened.load(conn, stale)
    assert opened.lookup(12345, opened.generation()) is not None


def test_a_read_only_backend_refuses_every_write(tmp_path: Path) -> None:
    where = storage.locate(tmp_path / "ro.db")
    backend = storage.open_backend(where)
    with backend.writing(alone=True) as conn:
        storage.create(conn, storage.Settings(layout=LAYOUT, config=DEFAULT_CONFIG))
    backend.dispose()
    readonly = storage.open_backend(where, readonly=True)
    with pytest.raises(StorageError, match="read-only"), readonly.writing():
        pass
    with readonly.reading() as conn:
        assert storage.read_settings(conn, where) is not None
    readonly.dispose()


def test_an_index_opened_again_compiles_no_statement_again(tmp_path: Path) -> None:
    """Statements are compiled once a process (storage/sql.py), for every
    index of a layout (schema.build's tables are shared): opening an index
    again and asking what was asked before compiles nothing new, and a
    statement differing only in its IN list's length is another one."""
    from simindex import SimIndex
    from simindex.storage import sql

    path = str(tmp_path / "again.db")
    texts = [(f"k{i}", f"text {i} about the river bank and the school fair") for i in range(200)]
    with SimIndex(path) as index:
        index.add_many(texts)

    def ask() -> None:
        # (hold False and True, not the default: whether that holds depends
        # on the time the queries took, and a held query reads its rows by
        # another statement)
        for hold in (False, True):
            with SimIndex(path, hold=hold) as index:
                index.query(texts[5][1])
                index.query_many([texts[7][1], texts[9][1]])
                index.add("one more", "another text about a river")
                index.duplicates()

    ask()
    compiled = dict(sql._compiled)
    ask()
    assert sql._compiled == compiled
    from sqlalchemy import bindparam, select
    from sqlalchemy.dialects import sqlite

    table = storage.schema.build(BlockLayout.for_k(3)).fingerprints
    dialect = sqlite.dialect()
    one = sql.Sql(select(table.c.id).where(table.c.id.in_([bindparam("a")])), dialect, ["a"])
    two = sql.Sql(
        select(table.c.id).where(table.c.id.in_([bindparam("a"), bindparam("b")])),
        dialect,
        ["a", "b"],
    )
    assert one.text != two.text and two.text.count("?") == 2
