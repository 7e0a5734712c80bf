"""Short texts' set keys (storage/short_sets.py, schema revision 0007): a
short text finds the texts one unit apart at any distance, whoever wrote
them and however.

Each test checks the answers against a brute-force oracle (tests/helpers.py:
short_and_close, the rule written out) and the tables against what the rows
hold: every row with a set of at least two units has its keys, or is due.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from simindex import IndexVersionError, SimIndex, dedup_stream, storage
from simindex.blocks import BlockLayout
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.signature import (
    NBYTES,
    fingerprint_and_signature,
    keys_of_sets,
    set_keys,
)
from simindex.storage import locate
from simindex.storage.loading import FAST_LOAD_MIN
from tests.helpers import (
    assert_keys_complete,
    banded_pair,
    oracle,
    pairs_oracle,
    raw,
    set_key_tables,
    short_and_close,
    stored_of,
)

_VOCAB = [a + b + c for a in "bdfgklmnprstvz" for b in "aeiouy" for c in "mnrstlk"]


def short_texts(seed: int, n: int) -> dict[str, str]:
    """n short texts of 3 to 16 distinct words, each with a copy one word
    replaced, one with a word more, and one two words off."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    for i in range(n):
        words = rng.sample(_VOCAB, rng.randint(3, 16))
        texts[f"t{i}"] = " ".join(words)
        one = list(words)
        one[rng.randrange(len(one))] = rng.choice(_VOCAB)
        texts[f"t{i}-r"] = " ".join(one)
        texts[f"t{i}-i"] = " ".join([*words, rng.choice(_VOCAB)])
        one[rng.randrange(len(one))] = rng.choice(_VOCAB)
        texts[f"t{i}-2"] = " ".join(one)
    return texts


@pytest.fixture
def texts() -> dict[str, str]:
    return short_texts(3, 60)


def test_keys_agree_with_their_numpy_twin_and_meet_one_unit_apart(
    texts: dict[str, str],
) -> None:
    sigs = [fingerprint_and_signature(t, DEFAULT_CONFIG)[1] for t in texts.values()]
    keys, owner = keys_of_sets([None, bytes(NBYTES), *sigs])
    for i, sig in enumerate(sigs):
        assert keys[owner == i + 2].tolist() == set_keys(sig)
    assert not (owner < 2).any()
    for i, sig in enumerate(sigs[:20]):  # one set among others without: its position kept
        one, where = keys_of_sets([None, bytes(NBYTES), sig])
        assert one.tolist() == keys[owner == i + 2].tolist() and (where == 2).all()
    for a in sigs:
        for b in sigs:
            if short_and_close(a, b):
                assert set(set_keys(a)) & set(set_keys(b))
    # Fewer than two units: no keys (one unit of one or two is not "one word apart").
    assert set_keys(fingerprint_and_signature("alpha", DEFAULT_CONFIG)[1]) == []
    assert len(set_keys(fingerprint_and_signature("alpha beta", DEFAULT_CONFIG)[1])) == 1


def test_every_way_of_asking_finds_short_texts_one_unit_apart(
    location: str, texts: dict[str, str]
) -> None:
    half = dict(list(texts.items())[::2])
    stored = stored_of(half)
    with SimIndex(location, hold=False) as index:
        index.add_many(half.items())
        assert_keys_complete(location, drained=True)
        beyond = 0
        for text in texts.values():
            want = oracle(stored, text)
            beyond += any(m.distance > 8 for m in want)
            assert index.query(text) == want
            assert index.query(text, threshold=0) == oracle(stored, text, threshold=0)
        assert beyond > 10  # (the case is there)
        queries = list(texts.values())
        assert index.query_many(queries[:40]) == [oracle(stored, t) for t in queries[:40]]
        assert index.query_many(queries[:5]) == [oracle(stored, t) for t in queries[:5]]
    with SimIndex(location, hold=True) as index:  # held in memory
        assert index.query_many(queries) == [oracle(stored, t) for t in queries]
        for text in queries[:30]:
            assert index.query(text) == oracle(stored, text)


def test_copies_of_two_texts_whose_bands_meet_pair_every_copy(location: str) -> None:
    """Copies of a longer text (one fingerprint, one signature) are one
    group to all pairs by band keys: each copy of one is paired with each
    of the other, beyond k, and nothing twice; a query finds every copy."""
    a, b = banded_pair(7)
    texts = {f"a{i}": a for i in range(5)} | {f"b{i}": b for i in range(4)}
    texts |= {f"c{i}": t for i, t in enumerate(banded_pair(8))}
    stored = stored_of(texts)
    want = pairs_oracle(stored)
    assert sum(p[2] > 8 for p in want) == 5 * 4 + 1
    with SimIndex(location) as index:
        index.add_many(texts.items())
        assert [tuple(p) for p in index.duplicates()] == want
        assert index.query(b) == oracle(stored, b)
        assert len(index.query(b)) == 9


def test_duplicates_and_dedup_pair_them_alike(texts: dict[str, str]) -> None:
    stored = stored_of(texts)
    want = pairs_oracle(stored)
    with SimIndex() as index:
        index.add_many(texts.items())
        assert [tuple(p) for p in index.duplicates()] == want
    assert any(p[2] > 8 for p in want)
    # dedup: each text is dropped for the nearest kept text it matches
    kept: list[str] = []
    for decision in dedup_stream(texts.items(), workers=1):
        text_stored = {k: stored[k] for k in kept}
        found = oracle(text_stored, texts[decision.key])
        assert decision.duplicate_of == (found[0].key if found else None)
        if decision.kept:
            kept.append(decision.key)


def test_rows_another_program_writes_are_found_then_keyed(
    location: str, texts: dict[str, str]
) -> None:
    """Rows inserted, changed and deleted with plain SQL: due (found as
    candidates) until simindex writes, keyed after; never missed."""
    items = list(texts.items())
    with SimIndex(location) as index:
        index.add_many(items[:100])
        outside = dict(items[100:140])
        with raw(location) as cur:
            marker = "?" if locate(location).path is not None else "%s"
            rows = []
            for key, text in outside.items():
                fp, sig = fingerprint_and_signature(text, DEFAULT_CONFIG)
                rows.append((key, fp, sig))
            layout = BlockLayout.for_k(8)  # (the index's: made at the defaults)
            assert index.layout == layout
            for key, fp, sig in rows:
                blocks = layout.blocks(fp)
                names = ", ".join(f"block_{i}" for i in range(len(blocks)))
                cur.execute(
                    f"INSERT INTO simindex_fingerprints (key, fingerprint, {names}, signature) "
                    f"VALUES ({', '.join([marker] * (3 + len(blocks)))})",
                    (key, _signed(fp), *blocks, sig),
                )
            # One row's text replaced by another's, one row deleted.
            first = items[0][0]
            cur.execute(
                f"UPDATE simindex_fingerprints SET signature = {marker} WHERE key = {marker}",
                (fingerprint_and_signature(items[150][1], DEFAULT_CONFIG)[1], first),
            )
            cur.execute(f"DELETE FROM simindex_fingerprints WHERE key = {marker}", (items[1][0],))
        stored = stored_of(dict(items[:100]))
        stored.update((k, (fp, sig)) for k, fp, sig in rows)
        changed = fingerprint_and_signature(items[150][1], DEFAULT_CONFIG)[1]
        stored[first] = (stored[first][0], changed)
        del stored[items[1][0]]
        assert_keys_complete(location, drained=False)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)
        batch = list(texts.values())  # the rows due matched to the queries by their keys
        assert index.query_many(batch) == [oracle(stored, t) for t in batch]
        index.add("another", "one more short text of words")  # simindex writes: keys made
        stored["another"] = fingerprint_and_signature(
            "one more short text of words", DEFAULT_CONFIG
        )
        assert_keys_complete(location, drained=True)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)


def _signed(fp: int) -> int:
    return fp - (1 << 64) if fp >> 63 else fp


@pytest.mark.parametrize("how", ["add", "bulk", "replace", "bare", "remove", "rebuild"])
def test_every_write_leaves_every_key_made(location: str, how: str) -> None:
    texts = short_texts(8, 40 if how != "bulk" else FAST_LOAD_MIN // 4 + 10)
    with SimIndex(location) as index:
        if how == "bulk":  # past FAST_LOAD_MIN: lookup indexes set aside, or COPY on PostgreSQL
            index.add_many(texts.items())
        else:
            index.add_many(list(texts.items())[:80])
        if how == "add":
            index.add("x", "a short text with six words")
        elif how == "replace":
            index.add("t0", "now quite another text of seven words")
        elif how == "bare":
            index.add_fingerprint("t0", 12345)  # its signature (and keys) go
        elif how == "remove":
            index.remove("t0")
            index.remove_many(["t1", "t1-r"])
        elif how == "rebuild":
            index.rebuild(list(texts.items())[40:90])
        assert_keys_complete(location, drained=True)


def test_a_large_load_marks_what_the_triggers_set_aside_would(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite a load of MARK_ASIDE_MIN rows or more writes without the
    triggers that mark inserts and updates (each costs a row about as much
    again) and marks the rows itself: new short texts, and rows there before
    it whose texts it replaces (short by short, by long, by a bare
    fingerprint; long by short), in its first chunk and in later ones."""
    from simindex.storage import short_sets
    from simindex.storage.loading import MARK_ASIDE_MIN
    from simindex.storage.store import Store

    texts = short_texts(11, MARK_ASIDE_MIN // 4 + 150)
    keys = list(texts)
    long_text = " ".join(_VOCAB[:40])
    aside: list[bool] = []
    put = Store.put

    def spying(self: Store, conn: object, *args: object, **kwargs: object) -> int:
        aside.append(not short_sets.marking(conn))  # type: ignore[arg-type]
        return put(self, conn, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Store, "put", spying)
    with SimIndex(location) as index:
        index.add_many([(key, texts[key]) for key in keys[:200]])  # small: triggers on
        index.add_many([("long-0", long_text), ("long-1", long_text + " extra")])
        assert not any(aside)
        aside.clear()
        replaced = {keys[i]: texts[keys[(i + 7) % 200]] for i in range(0, 60)}
        replaced.update({keys[i]: long_text + f" w{i}" for i in range(60, 80)})
        replaced["long-0"] = texts[keys[5]]
        load = [*replaced.items(), *((key, texts[key]) for key in keys[200:])]
        load += [(f"again-{i}", texts[keys[i]]) for i in range(300)]
        load += [(keys[i], texts[keys[i + 1]]) for i in range(200, 260)]  # rows of this load
        index.add_many(load)
        index.add_fingerprints([(keys[i], 12345 + i) for i in range(80, 1200)])
        assert aside and all(aside) == location.endswith(".db")
        assert_keys_complete(location, drained=True)
        final = {key: texts[key] for key in keys[:200]}
        final.update({"long-0": long_text, "long-1": long_text + " extra"})
        final.update(load)
        stored = stored_of(final)
        stored.update({keys[i]: (12345 + i, None) for i in range(80, 1200)})
        for text in list(texts.values())[::40]:
            assert index.query(text) == oracle(stored, text)
    with raw(location) as cur:  # the triggers are back: a row written by hand is due
        cur.execute(
            "UPDATE simindex_fingerprints SET signature = "
            "(SELECT signature FROM simindex_fingerprints WHERE key = 't0') WHERE key = 't3'"
        )
    keys_now, due, rows = set_key_tables(location)
    assert len(due) == 1


def test_dropped_triggers_are_made_again_with_every_key(
    db_path: Path, texts: dict[str, str]
) -> None:
    with SimIndex(db_path) as index:
        index.add_many(texts.items())
    with raw(str(db_path)) as cur:
        for name in ("inserted", "updated", "deleted"):
            cur.execute(f"DROP TRIGGER simindex_set_keys_{name}")
        cur.execute("DELETE FROM simindex_set_keys")
    stored = stored_of(texts)
    with SimIndex(db_path, readonly=True) as index:  # read as it is: no set keys
        for text in texts.values():
            assert index.query(text) == oracle(stored, text, sets=False)
        assert all(p.distance <= 8 for p in index.duplicates())  # no set keys: within k
        a, b = texts["t3"], texts["t3-r"]  # one word apart: explained as the index answers
        assert not index.explain(a, b).sets_one_unit_apart
    with SimIndex(db_path) as index:  # to write: the triggers and every key made again
        assert_keys_complete(str(db_path), drained=True)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)


def test_an_index_of_revision_0006_gets_its_keys(db_path: Path, texts: dict[str, str]) -> None:
    with SimIndex(db_path) as index:
        index.add_many(texts.items())
    with raw(str(db_path)) as cur:  # what revision 0006 had
        for name in ("inserted", "updated", "deleted"):
            cur.execute(f"DROP TRIGGER simindex_set_keys_{name}")
        cur.execute("DROP TABLE simindex_set_keys")
        cur.execute("DROP TABLE simindex_set_keys_due")
        cur.execute("UPDATE simindex_alembic_version SET version_num = '0006'")
    stored = stored_of(texts)
    with pytest.raises(IndexVersionError, match="revision 0006"):
        SimIndex(db_path, readonly=True)  # refused, untouched
    with SimIndex(db_path) as index:
        assert index.stats()["schema_revision"] == storage.HEAD
        assert_keys_complete(str(db_path), drained=True)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)


def test_a_row_replaced_by_insert_or_replace_leaves_nothing_behind(
    db_path: Path, texts: dict[str, str]
) -> None:
    """SQLite's INSERT OR REPLACE deletes the old row without the delete
    trigger: the next drain takes its mark and keys away (nothing left due
    for ever), and the new row is keyed."""
    items = list(texts.items())[:40]
    with SimIndex(db_path) as index:
        index.add_many(items)
        key, _ = items[0]
        new_text = items[20][1] + " more"
        fp, sig = fingerprint_and_signature(new_text, DEFAULT_CONFIG)
        blocks = BlockLayout.for_k(8).blocks(fp)
        names = ", ".join(f"block_{i}" for i in range(len(blocks)))
        with raw(str(db_path)) as cur:
            cur.execute("SELECT id FROM simindex_fingerprints WHERE key = ?", (key,))
            (old_id,) = cur.fetchone()
            cur.execute("INSERT INTO simindex_set_keys_due (id) VALUES (?)", (old_id,))
            cur.execute(
                f"INSERT OR REPLACE INTO simindex_fingerprints (key, fingerprint, {names}, "
                f"signature) VALUES ({', '.join('?' * (3 + len(blocks)))})",
                (key, _signed(fp), *blocks, sig),
            )
        index.add("another", "one more short text of words")
        assert_keys_complete(str(db_path), drained=True)
        stored = stored_of(dict(items))
        stored[key] = (fp, sig)
        stored["another"] = fingerprint_and_signature(
            "one more short text of words", DEFAULT_CONFIG
        )
        assert index.query(new_text) == oracle(stored, new_text)


def test_a_key_written_twice_in_one_batch(location: str, texts: dict[str, str]) -> None:
    """The second write of a key in one statement's batch updates a row just
    marked due: marked once, no conflict (the upsert's conflict policy
    overrides a trigger's INSERT OR IGNORE on SQLite), the later text kept."""
    items = list(texts.items())[:20]
    twice = [*items, (items[0][0], items[5][1]), (items[1][0], items[1][1] + " more")]
    with SimIndex(location) as index:
        index.add_many(twice)
        assert_keys_complete(location, drained=True)
        stored = stored_of(dict(twice))
        for _, text in twice:
            assert index.query(text) == oracle(stored, text)


def test_a_load_sets_the_marking_triggers_aside_where_they_cost_it_per_row(
    location: str, texts: dict[str, str]
) -> None:
    """Dialect.short_sets_aside: SQLite's row triggers that mark inserts and
    updates are set aside for a load (the largest id before it returned),
    PostgreSQL's statement triggers stay; past 2**62, where SQLite may give
    a new row an id below the largest, nothing is set aside."""
    from simindex.storage import short_sets

    with SimIndex(location) as index:
        index.add_many(list(texts.items())[:5])
    backend = storage.Backend(locate(location))
    try:
        with backend.engine.connect() as conn:
            with conn.begin() as transaction:
                largest = conn.exec_driver_sql("SELECT MAX(id) FROM simindex_fingerprints")
                before = int(largest.scalar_one())
                aside = short_sets.marking_aside(conn)
                if location.endswith(".db"):
                    assert aside == before and not short_sets.marking(conn)
                else:
                    assert aside is None and short_sets.marking(conn)
                transaction.rollback()
            with conn.begin() as transaction:
                conn.exec_driver_sql(f"UPDATE simindex_fingerprints SET id = id + {1 << 62}")
                assert short_sets.marking_aside(conn) is None and short_sets.marking(conn)
                transaction.rollback()
    finally:
        backend.engine.dispose()


def test_the_ids_lacking_a_key_pair_are_those_a_scan_finds() -> None:
    """short_sets._absent (what check counts) against sets of pairs: keys
    of both signs, a pair wanted twice, held pairs of other ids (stale)."""
    from simindex.storage.short_sets import _absent

    rng = np.random.default_rng(9)
    for _ in range(200):
        n, m = rng.integers(0, 40, 2)
        keys = rng.integers(-4, 4, n, dtype=np.int64) * (1 << 61)
        ids = rng.integers(0, 6, n, dtype=np.int64)
        held_keys = rng.integers(-4, 4, m, dtype=np.int64) * (1 << 61)
        held_ids = rng.integers(0, 8, m, dtype=np.int64)
        held = set(zip(held_keys.tolist(), held_ids.tolist(), strict=True))
        want = sorted(
            {i for k, i in zip(keys.tolist(), ids.tolist(), strict=True) if (k, i) not in held}
        )
        assert _absent(keys, ids, held_keys, held_ids).tolist() == want
