"""Fixtures. Index tests run on every backend: SQLite (a file, and in memory)
and PostgreSQL, when SIMINDEX_TEST_POSTGRES_URL names a database simindex may
fill (see tests/test_postgres.py for setting one up). Without it the
PostgreSQL cases skip, saying how to run them, unless
SIMINDEX_REQUIRE_POSTGRES=1 (CI), which makes them fail instead.
"""

from __future__ import annotations

import itertools
import os
import signal
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from simindex import SimIndex, accelerator, reader
from tests.helpers import ROOT as ROOT  # (re-exported: many test modules import it from here)

POSTGRES_URL = os.environ.get("SIMINDEX_TEST_POSTGRES_URL", "")
HOW = (
    "no PostgreSQL server: set SIMINDEX_TEST_POSTGRES_URL to run the PostgreSQL half "
    "(see tests/test_postgres.py)"
)


def postgres_or_skip() -> str:
    """The test server's URL; skips (or, with SIMINDEX_REQUIRE_POSTGRES=1, fails) without one."""
    if not POSTGRES_URL:
        if os.environ.get("SIMINDEX_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"SIMINDEX_REQUIRE_POSTGRES=1 but {HOW}")
        pytest.skip(HOW)
    return POSTGRES_URL


# Ctrl-C as a terminal gives it, whatever started the suite: a shell without
# job control starts a background command (`pytest &`, `setsid pytest &` in a
# script) with SIGINT ignored, Python then leaves it ignored, and every child
# a test starts inherits that, so the tests of what Ctrl-C does fail as if
# the interrupt were lost.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No example may fail for taking long: Hypothesis's 200 ms deadline made a
# test's outcome depend on the machine (a first example that loads OpenCC or
# jieba on a busy machine, retried fast, reads as "flaky").
settings.register_profile("simindex", deadline=None)
settings.load_profile("simindex")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL URL whose ?schema= is new for this test (dropped after it)."""
    base = postgres_or_skip()
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield f"{base}{'&' if '?' in base else '?'}schema={name}"
    from sqlalchemy import create_engine

    engine = create_engine(base)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    finally:
        engine.dispose()


@pytest.fixture
def hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Indexes left at the default hold read their fingerprints into memory
    at their first probed database query (the rent paid at once), so the
    tests of what the default does with a held snapshot need no long run.
    Elsewhere an index is made with the hold it is about (``hold=True`` or
    ``hold=False``), or left to the default's own rent."""
    monkeypatch.setattr(accelerator, "HOLD_FIRST_S", 0.0)
    monkeypatch.setattr(accelerator, "HOLD_S_PER_ROW", 0.0)
    monkeypatch.setattr(accelerator, "STORED_S_PER_ROW", 0.0)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock SimIndex times its database work with (reader.py's
    ``time.perf_counter``) moves 1 ms each time it is read: every probed
    query and every read of the index into memory takes the same made-up
    time, on any machine however loaded, so whether a snapshot paid for
    itself is decided by the test, not by the machine."""
    ticks = itertools.count()
    fake = types.SimpleNamespace(perf_counter=lambda: next(ticks) / 1000)
    monkeypatch.setattr(reader, "time", fake)


@pytest.fixture
def memory_index() -> Iterator[SimIndex]:
    with SimIndex(":memory:") as index:
        yield index


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


@pytest.fixture
def file_index(db_path: Path) -> Iterator[SimIndex]:
    with SimIndex(db_path) as index:
        yield index


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where an index goes, on each backend: a SQLite file, or a PostgreSQL schema."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "index.db")


@pytest.fixture(params=["memory", "file", "postgres"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimIndex]:
    if request.param == "postgres":
        where = str(request.getfixturevalue("pg_url"))
    else:
        where = ":memory:" if request.param == "memory" else str(tmp_path / "index.db")
    with SimIndex(where) as ix:
        yield ix


# The cost model's constants the plan-shape tests were written against
# (simindex/costs.py's block as bench/costs.py wrote it at d39f7b5, and
# COMPILED_LOAD_MS, added since, at about what it measured): a test
# asserting which plan the planner picks for a size takes these, so that a
# new measurement (python bench/costs.py --write) changes what the planner
# picks on that machine, which bench/costs.py reports, without changing what
# these tests mean.
REFERENCE_COSTS = {
    "_SEEK_US": 1.09,
    "_ROW_US": 0.672,
    "_ROW_BYTES": 56.7,
    "_INDEX_BYTES": 20.2,
    "READ_US_PER_ROW": 0.772,
    "HOLD_S_PER_ROW": 1.21e-06,
    "STORED_S_PER_ROW": 7e-08,
    "_HELD_JOINED_US": 29.7,
    "_HELD_QUERY_US": 7.67,
    "_HELD_EXACT_US": 3.16,
    "_HELD_EXACT_ROW_US": 0.00518,
    "_HELD_PROBED_US": 19.6,
    "_HELD_OFFSET_US": 0.0333,
    "_HELD_SEARCH_US": 0.127,
    "_HELD_ROW_US": 0.00657,
    "_SORT_16_NS": 27.2,
    "_SORT_32_NS": 45.4,
    "_SORT_WIDE_NS": 128.0,
    "_RUN_NS": 0.751,
    "_RUN_PAIR_NS": 5.64,
    "_BUILD_NS": 3.78,
    "_OFFSET_NS": 1.28,
    "_SEARCH_NS": 1.76,
    "_HIT_NS": 16.0,
    "_PAIR_NS": 14.4,
    "_GROUP_NS": 3.92,
    "_OCCUPIED_BUILD_NS": 0.125,
    "_OCCUPIED_NS": 4.7,
    "COMPILED_LOOKUP_NS": 8.51,
    "COMPILED_ROW_NS": 0.765,
    "COMPILED_SORT_NS": 46.5,
    "COMPILED_KEY_NS": 2.19,
    "COMPILED_LOAD_MS": 300.0,
}


@pytest.fixture
def reference_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """simindex.costs with REFERENCE_COSTS in place of its measured block."""
    from simindex import costs

    assert set(REFERENCE_COSTS) == set(costs.MEASURED)
    for name, value in REFERENCE_COSTS.items():
        monkeypatch.setattr(costs, name, value)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line per reason the skipped tests skipped, so a plain `pytest`
    says why (e.g. how to run the PostgreSQL half), not only `s`."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items(), key=lambda r: -r[1]):
        terminalreporter.write_line(f"{count} skipped: {reason}")
