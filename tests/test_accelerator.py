"""The accelerator: when it reads an index into memory, when it lets it go, and
what it does with the owner's writes (unit tests, no database; seconds are
made up) -- then the contract as a SimIndex keeps it: hold=False holds nothing
after any mix of calls, ``held`` says what is held, and the threads of a
process share one copy -- and its rules through SimIndex: one snapshot kept
across reads and the owner's writes, let go at anyone else's, and the next
rent doubled when one did not pay."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from simindex import SimIndex, accelerator
from simindex.accelerator import Accelerator
from simindex.signature import longer
from simindex.snapshot import Snapshot
from simindex.storage import Versions, dialects, store
from tests.helpers import brute_force, flip


def charged(accel: Accelerator, seconds: float, rows: int, most: int = 100_000) -> int:
    """Charge until the accelerator says read; returns how many charges it took."""
    for n in range(1, most + 1):
        if accel.charge(seconds, size(rows)):
            return n
    raise AssertionError(f"no read after {most} charges")


def snapshot(n: int = 1000) -> Snapshot:
    rng = np.random.default_rng(1)
    return Snapshot(np.arange(n, dtype=np.int64), rng.integers(0, 2**63, n, np.uint64), None)


def size(rows: int = 1_000_000) -> Callable[[], int]:
    return lambda: rows


# --- when it reads: ski rental ---------------------------------------------------


def test_it_reads_once_the_database_time_reaches_the_reading_cost() -> None:
    accel = Accelerator()
    # Before HOLD_FIRST_S (50 ms) has been spent, the index's size is not even asked.
    asked = []
    assert not accel.charge(0.03, lambda: asked.append(1) or 1_000_000)
    assert asked == []
    # 1M rows cost HOLD_S_PER_ROW each to read (about a second): queries of
    # 1 ms each pay for it after about a thousand.
    rent = accelerator.HOLD_S_PER_ROW * 1_000_000
    assert 0.03 + 0.001 * charged(accel, 0.001, 1_000_000) == pytest.approx(rent, abs=0.002)
    accel.install(snapshot(), Versions(1, 0), load_seconds=0.9)
    assert accel.snapshot is not None and accel.account.spent == 0.0


def test_a_stored_current_snapshot_is_read_sooner() -> None:
    """Where the last snapshot read is stored and current, reading costs
    STORED_S_PER_ROW a row: the rent is that much smaller (asked only once
    the size is)."""
    asked: list[int] = []

    def stored() -> bool:
        asked.append(1)
        return True

    accel = Accelerator()
    assert not accel.charge(0.03, size(), stored)
    assert asked == []
    n = 0
    while not accel.charge(0.001, size(), stored):
        n += 1
    rent = accelerator.STORED_S_PER_ROW * 1_000_000
    assert 0.03 + 0.001 * (n + 1) == pytest.approx(max(rent, accelerator.HOLD_FIRST_S), abs=0.002)
    assert asked


def test_hold_true_reads_at_the_first_probed_query_and_false_never() -> None:
    assert Accelerator(hold=True).charge(1e-6, size())
    never = Accelerator(hold=False)
    assert not any(never.charge(10.0, size()) for _ in range(10))
    never.install(snapshot(), Versions(1, 0), 0.1)  # a batch's read: not kept either
    assert never.snapshot is None and never.nbytes == 0


def test_too_large_an_index_is_never_held() -> None:
    accel = Accelerator()
    assert not any(accel.charge(10.0, size(accelerator.HOLD_MAX_ROWS + 1)) for _ in range(5))


# --- when it lets go -------------------------------------------------------------


def test_it_is_current_until_someone_else_writes() -> None:
    accel = Accelerator(hold=True)
    held = snapshot()
    accel.install(held, Versions(generation=77, changes=10), 0.5)
    assert accel.current(Versions(77, 10)) is held  # nothing happened
    assert accel.current(Versions(77, 11)) is None  # a change counted, whoever made it
    assert accel.snapshot is None
    accel.install(held, Versions(77, 10), 0.5)
    assert accel.current(Versions(78, 10)) is None  # the schema moved (a rebuild)
    accel.install(held, Versions(77, 10), 0.5)
    assert accel.current(None) is None


def test_own_writes_are_applied_and_keep_it_current() -> None:
    accel = Accelerator(hold=True)
    held = snapshot(100)
    accel.install(held, Versions(77, 10), 0.5)
    accel.committed(10, 13, [(500, -1), (7, 3)])  # found at our stamp: ours alone
    assert accel.snapshot is held and list(held.added_ids) == [500, 7]
    assert held.added_fps[0] == 2**64 - 1  # stored signed, held unsigned
    assert accel.current(Versions(77, 13)) is held  # our own changes, applied
    assert accel.current(Versions(77, 14)) is None  # and then someone else's
    accel.install(held, Versions(77, 10), 0.5)
    accel.committed(11, 12, [])  # someone else wrote before we did
    assert accel.snapshot is None
    accel.install(held, Versions(77, 10), 0.5)
    accel.committed(10, 11, None)  # rows not known
    assert accel.snapshot is None


def test_many_own_rows_are_merged() -> None:
    accel = Accelerator(hold=True)
    accel.install(snapshot(100), Versions(1, 0), 0.1)
    for writes in range(1, 4):
        rows = [(10_000 * writes + i, i) for i in range(accelerator.ADDED_MAX // 2 + 1)]
        accel.committed(writes - 1, writes, rows)
    merged = accel.snapshot
    assert merged is not None and merged.added_ids.size < accelerator.ADDED_MAX
    assert len(merged.ids) + merged.added_ids.size == 100 + 3 * (accelerator.ADDED_MAX // 2 + 1)


def test_a_snapshot_that_did_not_pay_doubles_the_next_rent() -> None:
    accel = Accelerator()
    factors = []
    for _ in range(6):  # read, then let go before it served a query
        charged(accel, 0.01, 10_000)
        accel.install(snapshot(), Versions(1, 0), load_seconds=0.01)
        assert accel.current(Versions(2, 0)) is None
        factors.append(accel.account.factor)
    assert factors == [2.0, 4.0, 8.0, 16.0, 16.0, 16.0]
    charged(accel, 0.01, 10_000)
    accel.install(snapshot(), Versions(1, 0), load_seconds=0.01)
    for _ in range(10):  # it served ten queries of 10 ms: it paid
        assert accel.current(Versions(1, 0)) is not None
    assert accel.current(Versions(2, 0)) is None
    assert accel.account.factor == 8.0


# --- the contract, through SimIndex ----------------------------------------------


def test_hold_false_holds_nothing_after_any_mix_of_calls(db_path: Path, hold: None) -> None:
    """hold=False: no call leaves anything in memory (stats says 0 bytes), and
    every query sees a write made elsewhere at once."""
    rng = random.Random(11)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    with SimIndex(db_path, hold=False) as index, SimIndex(db_path) as other:
        index.add_fingerprints(stored.items())
        queries = [flip(stored[f"k{i}"], i % 7, rng) for i in range(40)]
        for step, q in enumerate(queries):
            assert index.query(q) == brute_force(stored, q, index.k)  # probed: k = 8
            if step % 10 == 0:
                batch = queries[:8] * 40  # large beside the index: matched in memory, not kept
                assert index.query_many(batch, k=8) == [brute_force(stored, x, 8) for x in batch]
                assert len(index.duplicates(3)) == brute_force_pairs(stored, 3)
                index.add_fingerprint(f"mine{step}", q ^ 1)
                stored[f"mine{step}"] = q ^ 1
                other.add_fingerprint(f"theirs{step}", q ^ 2)
                stored[f"theirs{step}"] = q ^ 2
            assert index.stats()["held_in_memory_bytes"] == 0
            assert not index.held


def brute_force_pairs(stored: dict[str, int], k: int) -> int:
    fps = list(stored.values())
    return sum((a ^ b).bit_count() <= k for i, a in enumerate(fps) for b in fps[i + 1 :])


def test_held_says_what_is_held_and_asking_changes_nothing(db_path: Path) -> None:
    """``held``: False until a probed query reads the index in (exact lookups
    always ask the database), True after. Asking reads nothing: a write
    elsewhere is noticed by the next query, not by asking."""
    rng = random.Random(14)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(500)}
    with SimIndex(db_path, hold=True) as index, SimIndex(db_path) as other:
        index.add_fingerprints(stored.items())
        assert not index.held
        q = flip(stored["k3"], 2, rng)
        exact = index.layout.k
        assert index.query(q, k=exact) == brute_force(stored, q, exact)
        assert not index.held
        assert index.query(q) == brute_force(stored, q, 8)  # probed: read in
        assert index.held and index.held
        size = index.stats()["held_in_memory_bytes"]
        assert size > 0
        other.add_fingerprint("new", q ^ 1)
        stored["new"] = q ^ 1
        assert index.held  # the database was not asked
        assert index.stats()["held_in_memory_bytes"] == size
        assert index.query(q) == brute_force(stored, q, 8)  # let go, and read again
        assert index.held


def test_a_held_index_reads_again_after_compact(db_path: Path) -> None:
    """compact closes the kept connections, the one versions are read on too:
    the next probed query reads the index again and answers exactly."""
    rng = random.Random(13)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(500)}
    with SimIndex(db_path, hold=True) as index:
        index.add_fingerprints(stored.items())
        q = flip(stored["k3"], 2, rng)
        assert index.query(q) == brute_force(stored, q, 8)
        assert index.stats()["held_in_memory_bytes"] > 0 and index.held
        index.compact()
        assert index.stats()["held_in_memory_bytes"] == 0 and not index.held
        assert index.query(q) == brute_force(stored, q, 8)
        assert index.stats()["held_in_memory_bytes"] > 0 and index.held


def test_threads_share_one_copy(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight threads asking probed queries with hold=True read the index once
    and hold one copy; a write in one of them is applied for all."""
    loads = []
    original = store.Store.load
    monkeypatch.setattr(store.Store, "load", lambda self, *a: loads.append(1) or original(self, *a))
    rng = random.Random(12)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(2000)}
    with SimIndex(db_path, hold=True) as index:
        index.add_fingerprints(stored.items())
        queries = [flip(stored[f"k{i}"], i % 6, rng) for i in range(64)]
        failures: list[str] = []
        start = threading.Barrier(8)

        def work(part: int) -> None:
            start.wait()
            for q in queries[part::8]:
                if index.query(q) != brute_force(stored, q, 8):
                    failures.append(f"thread {part}: {q:#x}")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        assert len(loads) == 1
        held = index._accel.snapshot
        assert held is not None and index.stats()["held_in_memory_bytes"] == held.nbytes
        writer = threading.Thread(target=index.add_fingerprint, args=("new", queries[0] ^ 1))
        writer.start()
        writer.join()
        stored["new"] = queries[0] ^ 1
        assert index.query(queries[0]) == brute_force(stored, queries[0], 8)
        assert index._accel.snapshot is held and len(loads) == 1  # applied, not reread


# --- its rules, through SimIndex: one snapshot across reads and own writes ---------
#
# The snapshot a SimIndex holds stays the same object while only its own
# writes come (they are applied to it), and is let go at anyone else's; a
# snapshot let go unused doubles the next rent. These ask the accelerator
# itself what it holds: the identity of a snapshot, its stamp and its
# rent's factor are its own state, which nothing public shows.


def test_a_held_snapshot_answers_as_brute_force_and_sees_every_write(
    location: str, hold: None
) -> None:
    """Once queries have spent what reading the index would cost, the index
    holds its fingerprints in memory (SQLite and PostgreSQL): answers stay
    exact; writes through this object are applied to it, and any other write
    (through another object, a rebuild) lets the snapshot go."""
    rng = random.Random(5)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(2000)}
    keys = list(stored)
    for i in range(300):
        stored[f"near{i}"] = flip(stored[keys[i % 40]], i % 11, rng)
    stored["top"] = 2**64 - 1
    queries = [flip(stored[keys[i]], rng.randrange(0, 6), rng) for i in range(30)] + [2**63]

    def check(index: SimIndex) -> None:
        for q in queries:
            for k in (3, 8):
                assert index.query(q, k=k) == brute_force(stored, q, k), (k, q)
            assert index.query_many([q, q ^ 1], k=5) == [
                brute_force(stored, q, 5),
                brute_force(stored, q ^ 1, 5),
            ]

    with SimIndex(location, k=3) as index, SimIndex(location) as other:
        index.add_fingerprints(stored.items())
        index.query(queries[0], k=8)  # a probed query's time spent: it reads them all
        held = index._accel.snapshot  # on PostgreSQL too: by the writes counted
        assert held is not None
        assert index.stats()["held_in_memory_bytes"] >= 16 * len(stored)
        check(index)
        assert index._accel.snapshot is held  # still the same one
        index.remove("k0")  # through this object
        del stored["k0"]
        index.add_fingerprint("k1", queries[2] ^ 3)  # a replaced fingerprint
        stored["k1"] = queries[2] ^ 3
        check(index)
        assert index._accel.snapshot is held  # the writes were applied
        other.add_fingerprint("new", queries[3] ^ 1)  # through another connection
        stored["new"] = queries[3] ^ 1
        other.remove("k2")
        del stored["k2"]
        check(index)
        other.rebuild(k=8)  # another layout, made elsewhere
        check(index)
        assert index.k == 8


def test_writes_that_come_often_push_the_next_read_back(
    db_path: Path, hold: None, clock: None
) -> None:
    """A snapshot let go (a write) before it answered anything did not pay for
    reading it: the next one waits twice as long, up to 16 times (ski rental
    with backoff, see Accelerator.charge); answers stay exact throughout. Every
    query and every read takes 1 ms by the clock (whether one paid is
    decided by those times, not by how fast the machine was)."""
    rng = random.Random(9)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(300)}
    with SimIndex(db_path, k=3) as index, SimIndex(db_path) as other:
        index.add_fingerprints(stored.items())
        q = rng.getrandbits(64)
        assert index.query(q, k=8) == brute_force(stored, q, 8)  # read into memory
        factors = []
        for i in range(
            6
        ):  # each write elsewhere lets the snapshot go unused; each query rereads it
            other.add_fingerprint(f"new{i}", q ^ 1)
            stored[f"new{i}"] = q ^ 1
            q = rng.getrandbits(64)
            assert index.query(q, k=8) == brute_force(stored, q, 8)
            factors.append(index._accel.account.factor)
        assert factors == [2.0, 4.0, 8.0, 16.0, 16.0, 16.0]
        for _ in range(50):  # queries with no write between: it pays, and the factor falls
            assert index.query(q, k=8) == brute_force(stored, q, 8)
        other.add_fingerprint("last", q ^ 3)
        stored["last"] = q ^ 3
        assert index.query(q, k=8) == brute_force(stored, q, 8)
        assert index._accel.account.factor == 8.0


def held_near(index: SimIndex, seed: int, n: int) -> tuple[dict[str, int], int]:
    """Fill an index with n random fingerprints and ask a probed query near
    the one of "k5" (a `hold` test: the index then holds them): (stored, query)."""
    rng = random.Random(seed)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(n)}
    index.add_fingerprints(stored.items())
    q = stored["k5"] ^ 0b11
    assert index.query(q, k=8) == brute_force(stored, q, 8)
    assert index.held
    return stored, q


def test_writes_elsewhere_are_seen_whoever_makes_them(db_path: Path, hold: None) -> None:
    """A write the index did not make lets its snapshot go: through another
    object, or through plain SQL (counted all the same, by the triggers)."""
    with SimIndex(db_path, k=3) as index, SimIndex(db_path) as other:
        stored, q = held_near(index, 4, 300)
        held = index._accel.snapshot
        other.add_fingerprint("near", q ^ 1)
        stored["near"] = q ^ 1
        assert index.query(q, k=8) == brute_force(stored, q, 8)
        assert index._accel.snapshot is not held
        index.add_fingerprint("mine", q ^ 2)  # applied: the snapshot stays
        stored["mine"] = q ^ 2
        assert index.query(q, k=8) == brute_force(stored, q, 8)
        held = index._accel.snapshot
        with sqlite3.connect(db_path) as raw:  # not simindex: nothing counted
            raw.execute("DELETE FROM simindex_fingerprints WHERE key = 'k5'")
        del stored["k5"]
        assert index.query(q, k=8) == brute_force(stored, q, 8)
        assert index._accel.snapshot is not held


def test_a_write_in_another_thread_lets_this_threads_snapshot_go(db_path: Path, hold: None) -> None:
    with SimIndex(db_path, k=3) as index:
        stored, q = held_near(index, 6, 300)
        worker = threading.Thread(target=index.add_fingerprint, args=("there", q ^ 1))
        worker.start()
        worker.join()
        stored["there"] = q ^ 1
        assert index.query(q, k=8) == brute_force(stored, q, 8)


def test_writes_are_counted_without_returning_too(
    db_path: Path, hold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite before 3.35 (no RETURNING) counts a write in two statements."""
    monkeypatch.setattr(dialects.sqlite3, "sqlite_version_info", (3, 34, 1))
    with SimIndex(db_path, k=3) as index:
        stored, q = held_near(index, 8, 200)
        held = index._accel.snapshot
        for i in range(3):
            index.add_fingerprint(f"n{i}", q ^ (1 << i))
            stored[f"n{i}"] = q ^ (1 << i)
            assert index.query(q, k=8) == brute_force(stored, q, 8)
        assert index._accel.snapshot is held and index._accel.stamp == index._store.versions()


def test_the_held_snapshot_holds_the_signatures_and_takes_every_kind_of_own_write(
    db_path: Path,
) -> None:
    """What a holder reads holds, as words, the sketch of every row that has
    one (so candidates are verified in memory, test_verification.py; a short
    text's exact set is judged from its row, after it is read); this
    object's writes of texts over stored keys, of bare fingerprints and its
    removals are applied to that snapshot, not read again."""
    rng = random.Random(15)
    words = [f"w{i}" for i in range(400)]
    texts = {f"d{i}": " ".join(rng.choices(words, k=40)) for i in range(200)}
    texts |= {f"s{i}": " ".join(rng.sample(words, rng.randint(4, 14))) for i in range(30)}
    keys = sorted(texts)
    bare = keys[:20]
    signed = keys[20:]
    with SimIndex(db_path, hold=True) as index:
        index.add_fingerprints((key, index.fingerprint(texts[key])) for key in bare)
        index.add_many((key, texts[key]) for key in signed)
        assert index.query(texts["d50"])[0].key == "d50"  # probed (k = 8): read in
        snapshot = index._accel.snapshot
        assert snapshot is not None and snapshot.signatures is not None
        present = snapshot.signatures.present
        sketches = sum(longer(index.signature(texts[key])) for key in signed)
        assert int(present.sum()) == sketches < len(signed)
        for key in rng.sample(keys, 12):  # the same ids, other texts
            index.add(key, texts[rng.choice(keys)])
        for key in rng.sample(keys, 5):  # signatures dropped
            index.add_fingerprint(key, index.fingerprint(texts[key]))
        index.remove_many(rng.sample(keys, 5))
        assert index._accel.snapshot is snapshot  # the writes were applied, not reread
