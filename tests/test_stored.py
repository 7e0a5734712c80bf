"""The stored snapshot (storage/stored.py): a holder stores the arrays it read
from the rows, the next holder reads those instead while no write has been
counted since, and every answer from them equals brute force (and the
database's own answer, where signatures verify). On both databases."""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from simindex import SimIndex
from simindex import costs as costs_module
from simindex.storage import store as store_module
from simindex.storage import stored
from tests.helpers import brute_force, brute_force_pairs, flip

pytestmark = pytest.mark.parametrize("location", ["sqlite", "postgres"], indirect=True)


@pytest.fixture(autouse=True)
def small_snapshots_are_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored, "STORE_MIN_ROWS", 0)


def corpus(n: int = 600, seed: int = 3) -> dict[str, int]:
    rng = random.Random(seed)
    fps = {f"k{i}": rng.getrandbits(64) | (1 << 63) * (i % 2) for i in range(n)}
    keys = list(fps)
    for i in range(n // 4):  # planted neighbours
        fps[f"near{i}"] = flip(fps[keys[i]], i % 9, rng)
    return fps


def queries(fps: dict[str, int], seed: int = 4) -> list[int]:
    rng = random.Random(seed)
    values = list(fps.values())
    return [flip(rng.choice(values), rng.randrange(9), rng) for _ in range(40)] + [2**63, 1]


def made(location: str, *, stored: bool = False) -> tuple[dict[str, int], list[int]]:
    """An index of corpus() at location, and queries for it; ``stored``: held
    once, so that its snapshot is stored."""
    fps = corpus()
    with SimIndex(location) as index:
        index.add_fingerprints(fps.items())
    qs = queries(fps)
    if stored:
        held_answers(location, qs)
    return fps, qs


class RowReads:
    """Counts the snapshots read from the rows (Store.load)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = store_module.Store.load

        def load(store: store_module.Store, conn: object, generation: object) -> object:
            self.count += 1
            return original(store, conn, generation)  # type: ignore[arg-type]

        monkeypatch.setattr(store_module.Store, "load", load)


def held_answers(location: str, qs: list[int]) -> list[list[object]]:
    with SimIndex(location, hold=True) as index:
        answers = [index.query(q) for q in qs]
        assert index.held
    return answers


def test_the_next_holder_reads_the_stored_arrays_and_answers_as_brute_force(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps, qs = made(location)
    reads = RowReads(monkeypatch)
    want = [brute_force(fps, q, 8) for q in qs]
    assert held_answers(location, qs) == want  # read from the rows, then stored
    assert reads.count == 1
    assert held_answers(location, qs) == want  # from the stored arrays
    assert held_answers(location, qs[::-1]) == want[::-1]
    assert reads.count == 1


def test_a_write_since_makes_the_next_holder_read_the_rows(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps, qs = made(location, stored=True)
    reads = RowReads(monkeypatch)
    with SimIndex(location, hold=False) as writer:  # another index object: counted
        writer.add_fingerprint("new", qs[0] ^ 1)
        writer.remove(next(iter(fps)))
    fps["new"] = qs[0] ^ 1
    del fps[next(iter(fps))]
    want = [brute_force(fps, q, 8) for q in qs]
    assert held_answers(location, qs) == want
    assert reads.count == 1  # the stored arrays were stale
    assert held_answers(location, qs) == want
    assert reads.count == 1  # stored again, and read


def test_a_holder_that_writes_keeps_answering_as_brute_force(location: str) -> None:
    """Storing is not a write of the index: the holder's snapshot stays held,
    its own writes applied, and a holder elsewhere sees them."""
    fps, qs = made(location)
    with SimIndex(location, hold=True) as a, SimIndex(location, hold=True) as b:
        assert [a.query(q) for q in qs] == [brute_force(fps, q, 8) for q in qs]
        assert b.query(qs[0]) == brute_force(fps, qs[0], 8)
        a.add_fingerprint("mine", qs[1] ^ 3)
        fps["mine"] = qs[1] ^ 3
        assert a.held  # its own write, applied
        for q in qs:
            assert a.query(q) == brute_force(fps, q, 8)
            assert b.query(q) == brute_force(fps, q, 8)


def test_text_queries_from_the_stored_arrays_verify_as_the_database_does(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(9)
    words = [f"w{i}" for i in range(300)]
    texts = {f"d{i}": " ".join(rng.choice(words) for _ in range(60)) for i in range(150)}
    for i in range(40):  # edited copies: some verify, some do not
        base = texts[f"d{i}"].split()
        for j in rng.sample(range(len(base)), i % 20):
            base[j] = rng.choice(words)
        texts[f"copy{i}"] = " ".join(base)
    with SimIndex(location) as index:
        index.add_many(texts.items())
    asked = list(texts.values())[::5]
    with SimIndex(location, hold=False) as index:
        want = [index.query(t) for t in asked]
    reads = RowReads(monkeypatch)
    for _ in range(2):  # from the rows (then stored), from the stored arrays
        with SimIndex(location, hold=True) as index:
            index.query(asked[0])
            assert index.held
            assert index._accel.snapshot.signatures is not None
            assert [index.query(t) for t in asked] == want
    assert reads.count == 1


def test_a_rebuild_makes_the_stored_arrays_stale(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps, qs = made(location, stored=True)
    with SimIndex(location) as index:
        index.rebuild(k=6, blocks=4)
    reads = RowReads(monkeypatch)
    assert held_answers(location, qs) == [brute_force(fps, q, 6) for q in qs]
    assert reads.count == 1


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_damaged_stored_arrays_are_not_read(
    location: str, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    fps, qs = made(location, stored=True)
    with SimIndex(location) as index, index._backend.engine.begin() as conn:
        if damage == "missing":
            conn.exec_driver_sql("DELETE FROM simindex_snapshot WHERE name = 'fps'")
        else:  # one byte of the fingerprints, the length kept
            t = index._store.tables.snapshot
            where = (t.c.name == "fps") & (t.c.part == 0)
            (data,) = conn.execute(t.select().with_only_columns(t.c.data).where(where)).one()
            changed = bytes([data[0] ^ 1]) + bytes(data[1:])
            conn.execute(t.update().where(where).values(data=changed))
    reads = RowReads(monkeypatch)
    assert held_answers(location, qs) == [brute_force(fps, q, 8) for q in qs]
    assert reads.count == 1


@pytest.mark.parametrize("blocker", ["writer", "rebuild"])
def test_storing_never_waits_for_another_writer(location: str, blocker: str) -> None:
    """A holder that would store while another transaction holds what
    storing needs (SQLite: the write lock; PostgreSQL: the stored rows, under
    another process's store, or the lock a rebuild holds) holds without
    storing, at once, not after its 20 s timeout."""
    postgres = not location.endswith(".db")
    if not postgres and blocker == "rebuild":
        pytest.skip("SQLite: one write lock, the case above")
    fps, qs = made(location, stored=True)
    with SimIndex(location, hold=False) as writer:  # counted: the stored one is stale
        writer.add_fingerprint("late", qs[0] ^ 3)
    fps["late"] = qs[0] ^ 3
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        if not postgres:
            conn = sqlite3.connect(location, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            locked.set()
            release.wait(30)
            conn.execute("ROLLBACK")
            conn.close()
            return
        from simindex.storage.dialects import _ADVISORY_KEY

        with (
            SimIndex(location, hold=False) as other,
            other._backend.engine.connect() as conn,
            conn.begin(),
        ):
            if blocker == "writer":  # another process storing (uncommitted)
                conn.exec_driver_sql("DELETE FROM simindex_snapshot")
            else:  # a rebuild (it holds this lock alone)
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_KEY})")
            locked.set()
            release.wait(30)
            conn.rollback()

    thread = threading.Thread(target=hold_the_lock)
    thread.start()
    try:
        assert locked.wait(10)
        with SimIndex(location, hold=True, timeout=60) as index:
            started = time.monotonic()
            answers = [index.query(q) for q in qs]
            took = time.monotonic() - started
            assert index.held  # held, though not stored
    finally:
        release.set()
        thread.join()
    assert answers == [brute_force(fps, q, 8) for q in qs]
    assert took < 30  # not the 60 s timeout (however loaded the machine)
    with SimIndex(location, hold=False) as index, index._backend.reading() as conn:
        current = index._store.snapshots.load(conn, index._backend.versions(conn))
    assert current is None  # nothing stored meanwhile


def test_an_in_memory_index_and_a_batch_with_hold_false_store_nothing(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if location.endswith(".db"):
        location = ":memory:"  # (nobody else could read what it stored)
    fps = corpus()
    with SimIndex(location, hold=location == ":memory:") as index:
        index.add_fingerprints(fps.items())
        qs = queries(fps)
        reads = RowReads(monkeypatch)
        if location == ":memory:":
            assert [index.query(q) for q in qs] == [brute_force(fps, q, 8) for q in qs]
        else:  # a batch too large to answer from the database: read for itself
            monkeypatch.setattr(costs_module, "READ_US_PER_ROW", 0.0)
            assert index.query_many(qs * 20) == [brute_force(fps, q, 8) for q in qs] * 20
        assert reads.count == 1
        with index._backend.reading() as conn:
            assert index._store.snapshots.header(conn) is None


def test_compact_and_rebuild_drop_the_stored_snapshot(location: str) -> None:
    fps, qs = made(location, stored=True)
    with SimIndex(location) as index:
        if location.endswith(".db"):
            index.compact()
            with index._backend.reading() as conn:
                assert index._store.snapshots.header(conn) is None
            held_answers(location, qs)  # stored again
        index.rebuild(k=6)
        with index._backend.reading() as conn:
            assert index._store.snapshots.header(conn) is None
    assert held_answers(location, qs) == [brute_force(fps, q, 6) for q in qs]


@pytest.mark.parametrize(
    "damage",
    [
        lambda h: h["arrays"]["fps"].__setitem__(1, [h["rows"] - 1]),  # shorter than the rows
        lambda h: h["arrays"]["ids"].__setitem__(0, "<f8"),  # not integers
        lambda h: h["arrays"].pop("ids"),  # missing
        lambda h: h.__setitem__("arrays", 7),  # not a mapping
        lambda h: h["arrays"].__setitem__("order_kx", ["<i4", [1]]),  # not an order
    ],
)
def test_a_header_that_does_not_hold_together_is_not_read(
    location: str, monkeypatch: pytest.MonkeyPatch, damage: object
) -> None:
    import json

    fps, qs = made(location, stored=True)
    with SimIndex(location) as index, index._backend.writing() as conn:
        t = index._store.tables.snapshot
        (data,) = conn.execute(
            t.select().with_only_columns(t.c.data).where(t.c.name == "header")
        ).one()
        header = json.loads(bytes(data))
        damage(header)  # type: ignore[operator]
        conn.execute(
            t.update().where(t.c.name == "header").values(data=json.dumps(header).encode())
        )
    reads = RowReads(monkeypatch)
    assert held_answers(location, qs) == [brute_force(fps, q, 8) for q in qs]
    assert reads.count == 1


def test_a_read_only_index_holds_without_storing(location: str, tmp_path: Path) -> None:
    fps, qs = made(location)
    with SimIndex(location, readonly=True, hold=True) as index:
        assert [index.query(q) for q in qs] == [brute_force(fps, q, 8) for q in qs]
        assert index.held
    with SimIndex(location) as index, index._backend.reading() as conn:
        assert index._store.snapshots.header(conn) is None


def test_duplicates_read_the_stored_arrays_while_current(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fps, _ = made(location, stored=True)
    reads = RowReads(monkeypatch)
    with SimIndex(location, hold=False) as index:
        found = index.duplicates()
        assert [(p.key_a, p.key_b, p.distance) for p in found] == brute_force_pairs(fps, 8)
        assert reads.count == 0
        index.add_fingerprint("late", fps["k3"] ^ 0b101)
        fps["late"] = fps["k3"] ^ 0b101
        found = index.duplicates()
        assert [(p.key_a, p.key_b, p.distance) for p in found] == brute_force_pairs(fps, 8)
        assert reads.count == 1  # stale: the rows


def test_the_stored_order_of_the_tables_is_used_only_for_the_same_tables(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder that reads the rows stores its single-query tables' order
    for the index's k, with the blocks it sorts; the next one builds its
    tables from it without sorting. An order stored for other blocks is not
    used (the tables are sorted anew); changed bytes make the whole stored
    snapshot unread (its digest), and the rows are read."""
    import json

    import numpy as np

    from simindex import snapshot

    monkeypatch.setattr(snapshot, "_OFFSETS_PER_ROW", 2**40)  # tables by offset: joined
    fps, qs = made(location, stored=True)
    with SimIndex(location) as index, index._backend.reading() as conn:
        header = index._store.snapshots.header(conn)
    assert header is not None and "order_k8" in header["arrays"] and "8" in header["layouts"]
    tables = len(header["layouts"]["8"])
    sorts = []
    original = snapshot.stable_order
    monkeypatch.setattr(snapshot, "stable_order", lambda keys: sorts.append(1) or original(keys))
    want = [brute_force(fps, q, 8) for q in qs]
    assert held_answers(location, qs) == want
    assert sorts == []  # from the stored order

    def change(name: str, edit: object) -> None:
        with SimIndex(location) as index, index._backend.writing() as conn:
            t = index._store.tables.snapshot
            where = t.c.name == name
            (data,) = conn.execute(t.select().with_only_columns(t.c.data).where(where)).one()
            conn.execute(t.update().where(where).values(data=edit(bytes(data))))  # type: ignore[operator]

    def other_blocks(data: bytes) -> bytes:
        header = json.loads(data)
        header["layouts"]["8"][0][0] += 1  # another table's block
        return json.dumps(header).encode()

    change("header", other_blocks)
    reads = RowReads(monkeypatch)
    assert held_answers(location, qs) == want
    assert reads.count == 0 and len(sorts) == tables  # the stored rows, sorted anew
    sorts.clear()
    change("order_k8", lambda data: np.frombuffer(data, "<i4")[::-1].tobytes())
    assert held_answers(location, qs) == want
    assert reads.count == 1 and len(sorts) == tables  # not read at all: the rows
