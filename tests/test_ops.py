"""Upkeep: check (and repair), compact, bucket warnings, read-only opening, lock timeouts."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection

from simindex import DamagedIndexError, SimIndex, StorageError, storage
from simindex.upkeep import crowded
from tests.helpers import banded_pair, invoke, ok


def fill(location: str) -> None:
    with SimIndex(location) as index:
        index.add_fingerprints((f"k{i}", (i * 0x9E3779B97F4A7C15) % 2**64) for i in range(2000))


@pytest.fixture
def filled(location: str) -> str:
    """A filled index on each backend."""
    fill(location)
    return location


@pytest.fixture
def filled_file(db_path: Path) -> Path:
    """A filled SQLite file."""
    fill(str(db_path))
    return db_path


@contextlib.contextmanager
def raw(location: str) -> Iterator[Connection]:
    """A transaction on the index's database, outside simindex."""
    backend = storage.open_backend(storage.locate(location))
    try:
        with backend.engine.begin() as conn:
            yield conn
    finally:
        backend.dispose()


def test_a_healthy_index_checks_ok(filled: str) -> None:
    with SimIndex(filled) as index:
        assert index.check() == (True, [], [])
    assert ok("check", filled).stdout.strip().endswith(": ok")
    assert json.loads(ok("check", filled, "--json").stdout)["ok"] is True


def test_check_finds_and_repairs_damaged_blocks_and_missing_indexes(filled: str) -> None:
    with raw(filled) as conn:
        conn.exec_driver_sql("UPDATE simindex_fingerprints SET block_1 = block_1 + 1 WHERE id <= 3")
        conn.exec_driver_sql("DROP INDEX ix_simindex_fingerprints_t2")
    result = invoke("check", filled)
    assert result.exit_code == 1
    assert "3 rows have block columns" in result.stdout and "t2" in result.stdout
    with SimIndex(filled) as index:
        report = index.check(repair=True)
        assert report.ok and len(report.repaired) == 2
        assert index.check().ok
        assert index.query((1 * 0x9E3779B97F4A7C15) % 2**64)[0].key == "k1"


def test_check_finds_and_repairs_rows_that_lack_keys(location: str) -> None:
    """Key rows lost (deleted here, as a damaged page of the key table would
    lose them) hide a copy beyond k from a query of the database: check
    counts the rows that lack a key, and --repair makes every key again."""
    original, copy = banded_pair(1)
    texts = {f"t{i}": f"some other text number {i} with words of its own" for i in range(20)}
    with SimIndex(location) as index:
        index.add_many([*texts.items(), ("original", original)])
        assert index.check().ok
        assert [m.key for m in index.query(copy)] == ["original"]
    with raw(location) as conn:
        conn.exec_driver_sql(
            "DELETE FROM simindex_set_keys WHERE id IN "
            "(SELECT id FROM simindex_fingerprints WHERE key IN ('original', 't3'))"
        )
    result = invoke("check", location)
    assert result.exit_code == 1 and "2 rows lack some of their keys" in result.stdout
    with SimIndex(location, hold=False) as index:
        assert index.query(copy) == []  # (the loss check reports)
        report = index.check(repair=True)
        assert report.ok and report.repaired == ["made every row's keys again"]
        assert [m.key for m in index.query(copy)] == ["original"]


def test_check_reports_a_corrupted_file(filled_file: Path) -> None:
    with SimIndex(filled_file) as index:
        index.compact()  # everything in the main file, no WAL
    data = bytearray(filled_file.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = b"\xa5" * 4096
    filled_file.write_bytes(bytes(data))
    result = invoke("check", filled_file)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output


def test_compact_shrinks_after_removals(filled_file: Path) -> None:
    with SimIndex(filled_file) as index:
        index.remove_many(f"k{i}" for i in range(1500))
        sizes = index.compact()
        assert sizes["after"] < sizes["before"]
        assert len(index) == 500 and index.check().ok
    assert "bytes" in ok("compact", filled_file).stdout


def test_stats_warns_of_a_crowded_bucket(db_path: Path) -> None:
    with SimIndex(db_path) as index:
        index.add_fingerprints((f"t{i}", 0xABCD_0000_0000_0000 | i) for i in range(300))
        info = index.stats()
    assert info["largest_buckets"][0]["rows"] == 300 and info["warnings"]
    result = ok("stats", db_path)
    assert "Warning: one value" in result.stderr


@pytest.mark.parametrize(
    ("rows", "count", "expected", "warned"),
    [
        (25, 727, 0.0003, True),  # 3.4% of a small index: the case that went unsaid
        (15, 727, 0.0003, True),  # 2.1%
        (9, 727, 0.0003, False),  # 1.2%, but fewer than 10 rows
        (5, 100, 0.0, False),  # 5% of a tiny index: a few shared values say little
        (10, 1000, 0.0, True),  # 1%, 10 rows
        (5_000, 500_000, 0.1, True),  # 1%
        (9_999, 2_000_000, 0.5, False),  # 0.5%, under 10,000
        (10_000, 20_000_000, 5.0, True),  # 0.05%, but a query there reads 10,000 rows
        (20_000, 2_000_000_000, 15_000.0, False),  # what uniform fingerprints put there
    ],
)
def test_crowded_bucket_rule(rows: int, count: int, expected: float, warned: bool) -> None:
    assert crowded(rows, count, expected) is warned


def test_stats_warns_of_a_crowded_bucket_in_a_small_index(db_path: Path) -> None:
    with SimIndex(db_path) as index:
        # 700 spread fingerprints and 20 (2.7%) sharing their top block
        rng = random.Random(7)
        index.add_fingerprints((f"r{i}", rng.getrandbits(64)) for i in range(700))
        index.add_fingerprints((f"t{i}", 0xABCD_0000_0000_0000 | i) for i in range(20))
        info = index.stats()
    # They share two of the three blocks (the top one, and the zeros in the middle).
    crowded_warnings = [w for w in info["warnings"] if "holds" in w]
    assert len(crowded_warnings) == 2
    assert all("holds 20 fingerprints (2.8%)" in w for w in crowded_warnings)
    # Added as fingerprints, none has a signature: stats says so too.
    assert info["without_signature"] == 720
    (unsigned,) = [w for w in info["warnings"] if w not in crowded_warnings]
    assert unsigned.startswith("720 of 720 documents have no verification signature")


def test_readonly_answers_queries_and_refuses_writes(filled_file: Path) -> None:
    before = filled_file.read_bytes()
    with SimIndex(filled_file, readonly=True) as index:
        assert len(index) == 2000 and index.query(0)[0].key == "k0"
        with pytest.raises(StorageError, match="read-only"):
            index.add_fingerprint("new", 1)
        with pytest.raises(StorageError, match="read-only"):
            index.remove("k1")
    assert filled_file.read_bytes() == before


def test_a_stuck_writer_makes_others_fail_after_the_timeout(filled: str) -> None:
    backend = storage.open_backend(storage.locate(filled))
    try:
        # A transaction holding the write lock (on PostgreSQL: the lock a rebuild takes).
        with backend.writing(alone=True), SimIndex(filled, timeout=0.3) as index:
            started = time.monotonic()
            with pytest.raises(StorageError, match="locked by another writer"):
                index.add_fingerprint("late", 1)
            # after its timeout, not the 30 s default (however loaded the machine)
            assert 0.25 <= time.monotonic() - started < 15
            assert index.query(0)[0].key == "k0"  # reading does not wait
    finally:
        backend.dispose()
    with SimIndex(filled) as index:
        assert "late" not in index


@pytest.fixture
def damaged(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """An index file damaged as a user finds one: cut short, or pages overwritten."""
    path = tmp_path / "damaged.db"
    with SimIndex(path) as index:
        index.add_fingerprints((f"k{i}", i * 0x9E37_79B9_7F4A_7C15 % 2**64) for i in range(20_000))
    data = bytearray(path.read_bytes())
    if request.param == "truncated":
        data = data[: len(data) // 3]
    elif request.param == "header only":
        data = data[:4096]
    else:  # pages in the middle overwritten
        middle = len(data) // 2
        data[middle : middle + 3 * 4096] = bytes(range(256)) * 48
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("damaged", ["truncated", "header only", "overwritten"], indirect=True)
def test_check_reports_a_damaged_file(damaged: Path) -> None:
    before = damaged.read_bytes()
    for repair in ([], ["--repair"]):
        result = invoke("check", damaged, *repair)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert "problem: " in result.stdout
        assert "restore it from a backup, or rebuild it" in result.stdout or (
            "integrity" in result.stdout or "malformed" in result.stdout
        )
        report = json.loads(invoke("check", damaged, *repair, "--json").stdout)
        assert report["ok"] is False and report["problems"]
    assert damaged.read_bytes() == before  # check --repair leaves a damaged file as it was


@pytest.mark.parametrize("damaged", ["truncated", "header only"], indirect=True)
def test_a_damaged_file_is_a_damaged_index_error(damaged: Path) -> None:
    with pytest.raises(DamagedIndexError) as caught:
        SimIndex(damaged)
    assert caught.value.path == damaged and isinstance(caught.value, StorageError)
    result = invoke("stats", damaged)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "damaged" in result.stderr and result.stderr.count("\n") == 1


def test_a_plain_pytest_says_why_tests_skipped(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMINDEX_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_postgres.py", "-k", "not slow"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    said = r"^\d+ skipped: no PostgreSQL server: set SIMINDEX_TEST_POSTGRES_URL"
    assert re.search(said, done.stdout, re.M), done.stdout
