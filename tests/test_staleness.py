"""Right answers whatever else writes the index: the staleness matrix.

Every reader of an index that can answer from a copy (a snapshot held in
memory, the snapshot stored in the index for the next process, a batch's
read, the pairs of duplicates() and clusters(), ``simindex dedup``) must
answer what the table holds now, whoever changed it: simindex's API, its
CLI, a plain sqlite3 / psycopg session doing INSERT, UPDATE or DELETE, or
an older copy of the index put back with every process closed. The
database counts every change itself (triggers, revision 0005); these
tests are the matrix of writers x readers, on SQLite and PostgreSQL, each
answer checked against a brute-force scan of the rows as they are.

The index holds STORE_MIN_ROWS fingerprints, so that the holder opened
before the write also stores what it read (the path that outlived plain
SQL writes before revision 0005).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simindex import SimIndex
from simindex.results import Match
from simindex.storage import locate
from simindex.storage.stored import STORE_MIN_ROWS
from tests.helpers import raw

from .conftest import ROOT

K = 8  # probed (above the default layout's k): the paths that hold
N = STORE_MIN_ROWS


def rows_now(location: str) -> dict[str, int]:
    """The truth: every (key, unsigned fingerprint) the table holds, read by SQL."""
    with raw(location) as cur:
        cur.execute("SELECT key, fingerprint FROM simindex_fingerprints")
        return {key: fp & (2**64 - 1) for key, fp in cur.fetchall()}


def copy_columns(location: str) -> list[str]:
    """The fingerprint and block columns (what a copy of a row needs)."""
    with raw(location) as cur:
        cur.execute("SELECT * FROM simindex_fingerprints WHERE 1 = 0")
        names = [d[0] for d in cur.description]
    return [n for n in names if n == "fingerprint" or n.startswith("block_")]


def build(location: str) -> int:
    """N random fingerprints (some with the top bit set), and "target" with
    a "twin" of the same fingerprint; returns the target's fingerprint."""
    rng = random.Random(23)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(N)}
    target = rng.getrandbits(64) | 1 << 63
    stored["target"] = stored["twin"] = target
    with SimIndex(location) as index:
        index.add_fingerprints(stored.items())
    return target


# --- the writers: each changes which rows are near the target ---------------------


def api_insert(location: str) -> None:
    with SimIndex(location, hold=False) as other:
        other.add_fingerprint("copy", other.get("target") or 0)


def cli_remove(location: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "simindex", "remove", location, "twin"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def sql_insert(location: str) -> None:
    columns = ", ".join(copy_columns(location))
    with raw(location) as cur:
        cur.execute(
            f"INSERT INTO simindex_fingerprints (key, {columns}) "
            f"SELECT 'copy', {columns} FROM simindex_fingerprints WHERE key = 'target'"
        )


def sql_update(location: str) -> None:
    """The twin takes k1's fingerprint: (target, twin) part, (k1, twin) pair."""
    columns = copy_columns(location)
    listed = ", ".join(columns)
    with raw(location) as cur:
        cur.execute(
            f"UPDATE simindex_fingerprints SET ({listed}) = "
            f"(SELECT {listed} FROM simindex_fingerprints WHERE key = 'k1') WHERE key = 'twin'"
        )


def sql_delete(location: str) -> None:
    with raw(location) as cur:
        cur.execute("DELETE FROM simindex_fingerprints WHERE key = 'twin'")


WRITERS: dict[str, Callable[[str], None]] = {
    "api-insert": api_insert,
    "cli-remove": cli_remove,
    "sql-insert": sql_insert,
    "sql-update": sql_update,
    "sql-delete": sql_delete,
}


# --- the readers -------------------------------------------------------------------


def dedup_cli(location: str) -> list[tuple[str, str, int]]:
    done = subprocess.run(
        [sys.executable, "-m", "simindex", "dedup", location, "--k", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    found = []
    for line in done.stdout.splitlines():
        distance, a, b = line.split("\t")
        found.append((a, b, int(distance)))
    return found


class Truth:
    """Brute force over every row the table holds now: each query compared
    with every fingerprint (numpy's popcount, not the index's code)."""

    def __init__(self, rows: dict[str, int]) -> None:
        self.keys = np.array(list(rows), dtype=object)
        self.fps = np.array(list(rows.values()), dtype=np.uint64)

    def near(self, query: int, k: int) -> list[Match]:
        distance = np.bitwise_count(self.fps ^ np.uint64(query))
        at = np.flatnonzero(distance <= k)
        found = [Match(str(self.keys[i]), int(distance[i]), int(self.fps[i])) for i in at]
        return sorted(found, key=lambda m: (m.distance, m.key))

    def same(self) -> list[tuple[str, str, int]]:
        """Every pair at distance 0: the keys of one fingerprint, two by two."""
        by_fp: dict[int, list[str]] = {}
        for key, fp in zip(self.keys.tolist(), self.fps.tolist(), strict=True):
            by_fp.setdefault(fp, []).append(key)
        pairs = []
        for keys in by_fp.values():
            keys.sort()
            pairs += [(a, b, 0) for i, a in enumerate(keys) for b in keys[i + 1 :]]
        return sorted(pairs)


def check_every_reader(location: str, target: int, held: SimIndex | None) -> None:
    """Every reader answers what the table holds now (brute force)."""
    truth = Truth(rows_now(location))
    q = target ^ 0b101
    rng = random.Random(7)
    batch = [q] + [rng.getrandbits(64) for _ in range(299)]
    want = truth.near(q, K)
    want_batch = [truth.near(f, K) for f in batch]
    want_pairs = truth.same()
    want_groups = _groups(want_pairs)
    if held is not None:  # held since before the write, in this process
        for _ in range(3):
            assert held.query(q, k=K) == want
        assert held.query_many(batch, k=K) == want_batch
        assert [(p.key_a, p.key_b, p.distance) for p in held.duplicates(k=0)] == want_pairs
    with SimIndex(location, hold=False) as fresh:  # from the database
        assert fresh.query(q, k=K) == want
    with SimIndex(location, hold=True) as holder:  # a new holder: the stored snapshot
        for _ in range(3):
            assert holder.query(q, k=K) == want
        assert holder.held
    with SimIndex(location) as other:
        assert other.query_many(batch, k=K) == want_batch
        assert [(p.key_a, p.key_b, p.distance) for p in other.duplicates(k=0)] == want_pairs
        found = {frozenset(key for key, _ in c.members) for c in other.clusters(k=0)}
        assert found == want_groups
    assert dedup_cli(location) == want_pairs


def _groups(pairs: list[tuple[str, str, int]]) -> set[frozenset[str]]:
    """At k = 0 a group is every key of one fingerprint (near is exact)."""
    groups: dict[str, set[str]] = {}
    for a, b, _ in pairs:
        group = groups.get(a) or groups.get(b) or set()
        group |= {a, b}
        for key in group:
            groups[key] = group
    return {frozenset(g) for g in groups.values()}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_reader_sees_every_writer(location: str, writer: str) -> None:
    target = build(location)
    with SimIndex(location, hold=True) as holder:
        q = target ^ 0b101
        assert [m.key for m in holder.query(q, k=K)] == ["target", "twin"]
        assert holder.held  # read, and stored for the next reader
        assert holder._store.snapshots.current()
        assert [(p.key_a, p.key_b) for p in holder.duplicates(k=0)] == [("target", "twin")]
        before = rows_now(location)
        WRITERS[writer](location)
        assert rows_now(location) != before  # the writer did change the rows
        check_every_reader(location, target, holder)


def test_an_older_copy_put_back_is_answered_as_it_is(location: str, tmp_path: Path) -> None:
    """A copy of the index taken earlier (its stored snapshot with it), put
    back with every process closed after the index has changed and stored a
    newer snapshot: every reader answers the copy's rows."""
    target = build(location)
    with SimIndex(location, hold=True) as held:
        held.query(target, k=K)
        assert held._store.snapshots.current()
    saved = _save(location, tmp_path)
    api_insert(location)
    sql_delete(location)
    with SimIndex(location, hold=True) as held:  # the newer rows, read and stored
        assert [m.key for m in held.query(target, k=K)] == ["copy", "target"]
        assert held._store.snapshots.current()
    _put_back(location, saved)
    assert set(rows_now(location)) >= {"target", "twin"} and "copy" not in rows_now(location)
    check_every_reader(location, target, None)


def _save(location: str, tmp_path: Path) -> Any:
    where = locate(location)
    if where.path is not None:
        backup = tmp_path / "backup.db"
        with raw(location) as cur:  # a consistent copy of a live file (SQLite's own)
            cur.execute(f"VACUUM INTO '{backup}'")
        return backup
    tables = {}
    with raw(location) as cur:
        for table in ("simindex_fingerprints", "simindex_meta", "simindex_snapshot"):
            cur.execute(f"SELECT * FROM {table}")
            tables[table] = ([d[0] for d in cur.description], cur.fetchall())
    return tables


def _put_back(location: str, saved: Any) -> None:
    """SQLite: the file copied over the index, its -wal and -shm removed
    (every process closed: docs/operating.md). PostgreSQL: the tables'
    rows replaced by the saved ones, the meta rows (the change count among
    them) included, in one transaction."""
    where = locate(location)
    if where.path is not None:
        for suffix in ("-wal", "-shm"):
            Path(f"{where.path}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(saved, where.path)
        return
    with raw(location) as cur:
        for table in ("simindex_fingerprints", "simindex_snapshot", "simindex_meta"):
            columns, rows = saved[table]
            cur.execute(f"DELETE FROM {table}")
            marks = ", ".join(["%s"] * len(columns))
            cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def test_the_stored_snapshot_of_an_upgraded_index_is_not_trusted(db_path: Path) -> None:
    """An index of revision 0004 whose stored snapshot a plain SQL write
    made stale (nothing counted it then): the upgrade to 0005 empties it,
    and the first holder reads the rows."""
    location = str(db_path)
    target = build(location)
    with SimIndex(location, hold=True) as held:
        held.query(target, k=K)
        assert held._store.snapshots.current()
    with raw(location) as cur:  # back to 0004: no triggers, the stored snapshot kept
        for name in ("simindex_count_inserts", "simindex_count_updates", "simindex_count_deletes"):
            cur.execute(f"DROP TRIGGER {name}")
        cur.execute("UPDATE simindex_alembic_version SET version_num = '0004'")
    sql_delete(location)  # uncounted, as before revision 0005
    check_every_reader(location, target, None)  # (opening upgrades it)


def test_triggers_dropped_by_hand_are_made_again_when_the_index_is_opened(
    location: str,
) -> None:
    """Whoever drops the counting triggers (by hand, a restore that left them
    out): the next SimIndex that opens the index for writing makes them
    again and trusts nothing stored meanwhile; one opened read-only holds
    nothing."""
    target = build(location)
    with SimIndex(location, hold=True) as held:
        held.query(target, k=K)
        assert held._store.snapshots.current()
    with raw(location) as cur:
        if locate(location).path is not None:
            for name in ("simindex_count_inserts", "simindex_count_updates"):
                cur.execute(f"DROP TRIGGER {name}")
        else:
            cur.execute("ALTER TABLE simindex_fingerprints DISABLE TRIGGER simindex_count_changes")
    sql_delete(location)  # uncounted
    if locate(location).path is not None:
        with SimIndex(location, readonly=True, hold=True) as reader:
            assert [m.key for m in reader.query(target ^ 0b101, k=K)] == ["target"]
            assert not reader.held  # nothing to tell it is current by
    check_every_reader(location, target, None)  # (the first opens it for writing)
    SimIndex(location).close()
    with raw(location) as cur:  # the triggers, as a sqlite3 or psql session sees them
        if locate(location).path is not None:
            cur.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                "AND tbl_name = 'simindex_fingerprints'"
            )
            names = {name for (name,) in cur.fetchall()}
            assert {f"simindex_count_{c}" for c in ("inserts", "updates", "deletes")} <= names
        else:
            cur.execute(
                "SELECT count(*) FROM pg_trigger WHERE tgname = 'simindex_count_changes' "
                "AND tgrelid = 'simindex_fingerprints'::regclass AND tgenabled <> 'D'"
            )
            assert cur.fetchone()[0] == 1  # there, and not disabled


# --- a second handle in the same process --------------------------------------------

COUNT_ROWS = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(c.execute('SELECT count(*) FROM simindex_fingerprints').fetchone()[0]); c.close()"
)


def other_process_count(path: Path) -> int:
    """The rows another process sees; as the last to close the file, it
    checkpoints the -wal and removes it (unless this process still holds
    its locks, as it must)."""
    done = subprocess.run(
        [sys.executable, "-c", COUNT_ROWS, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout)


def test_a_second_handle_in_this_process_keeps_the_first_ones_locks(db_path: Path) -> None:
    """Opening and closing another SimIndex on the same file (each way it
    can be opened) must not drop the locks this process holds through the
    first: on POSIX, closing any descriptor of a file drops them all. Lost
    locks let another process take the first one's -wal for abandoned, so
    its acknowledged writes vanish and the file fails integrity_check."""
    first = SimIndex(db_path)
    try:
        first.add_fingerprints([(f"a{i}", i * 7919 | (i % 2) << 63) for i in range(1000)])
        written = 1000
        for round_ in range(6):
            if round_ % 3 == 0:
                SimIndex(db_path).close()
            elif round_ % 3 == 1:
                SimIndex(db_path, readonly=True).close()
            else:
                with SimIndex(db_path, hold=True) as other:
                    other.query(0, k=3)
            assert other_process_count(db_path) == written
            first.add_fingerprint(f"after{round_}", 123456789 + round_)  # acknowledged
            written += 1
            assert other_process_count(db_path) == written
            assert len(first) == written
    finally:
        first.close()
    with raw(str(db_path)) as cur:
        cur.execute("PRAGMA integrity_check")
        assert cur.fetchall() == [("ok",)]
    with SimIndex(db_path, readonly=True) as index:
        assert len(index) == written and index.get("after5") == 123456789 + 5


# --- the triggers that count changes, dropped or disabled under an open holder -----------


def stop_counting(location: str) -> None:
    """What a user's SQL session may do: the triggers that count changes
    dropped (SQLite) or every trigger of the table disabled (PostgreSQL)."""
    with raw(location) as cur:
        if locate(location).path is not None:
            cur.execute("DROP TRIGGER simindex_count_inserts")
        else:
            cur.execute("ALTER TABLE simindex_fingerprints DISABLE TRIGGER ALL")


def test_a_holder_lets_go_the_moment_the_triggers_stop_counting(location: str) -> None:
    target = build(location)
    q = target ^ 0b101
    with SimIndex(location, hold=True) as holder:
        assert [m.key for m in holder.query(q, k=K)] == ["target", "twin"]
        assert holder.held
        stop_counting(location)
        assert [m.key for m in holder.query(q, k=K)] == ["target", "twin"]
        sql_insert(location)  # uncounted: nothing the holder reads counts it
        truth = Truth(rows_now(location))
        for _ in range(3):
            assert holder.query(q, k=K) == truth.near(q, K)
        assert [(p.key_a, p.key_b, p.distance) for p in holder.duplicates(k=0)] == truth.same()
        with SimIndex(location, readonly=True, hold=True) as reader:  # remakes nothing
            assert reader.query(q, k=K) == truth.near(q, K)
            assert not reader.held
        check_every_reader(location, target, holder)  # (a writable open makes them again)


def test_check_reports_triggers_that_stopped_counting_and_only_repair_remakes_them(
    location: str,
) -> None:
    build(location)
    stop_counting(location)
    for _ in range(2):  # the report does not mend them
        with SimIndex(location, readonly=True) as index:
            report = index.check()
        assert not report.ok
        assert any("triggers of the fingerprint table" in p for p in report.problems)
    with SimIndex(location, readonly=True) as index:
        assert index.check().problems
    with SimIndex(location) as index:  # an open for writing makes them again
        assert index.check().ok
