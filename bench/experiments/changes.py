#!/usr/bin/env python
"""What counting every change in the database costs writes (revision 0005).

    python bench/experiments/changes.py      # SQLite, and PostgreSQL if SIMINDEX_TEST_POSTGRES_URL
    python bench/experiments/changes.py --n 100000 --no-save
    python bench/experiments/changes.py --postgres-url URL

The triggers that count every change of the fingerprint table (SQLite: one
run per row; PostgreSQL: one per statement) against the same code with the
triggers dropped by hand, which is what a write cost before them. Both
kinds of index are made alike and measured in turns (with then without,
then without then with, ...), so the machine's noise and the order hit
both; medians of --repeats rounds, and the ratio with / without.

- ``single add``: add_fingerprint() of one new key, one write transaction
  each, --singles of them into an index of N: median us a write.
- ``5,000 at once``: add_fingerprints() of 5,000 new keys into an index of N
  (at COUNT_ASIDE_MIN: the triggers run for every row): ms.
- ``50,000 at once``: add_fingerprints() of 50,000 new keys into an index
  of N (above it: SQLite sets its triggers aside for the load): ms.
- ``bulk load``: add_fingerprints() of N into a new index, open to close: s.

First, what a trigger run per row costs where a row costs little: plain
sqlite3 (no simindex) loading 200,000 rows into an empty table of simindex's
shape, with and without one (why SQLite's loads set them aside).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common.py, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import drop_schema, log, output_options, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402
from simindex.storage import dialects  # noqa: E402


def without_triggers(index: SimIndex) -> None:
    """Drop the triggers that count changes (the cost of a write before 0005)."""
    with index._backend.writing(alone=True) as conn:
        if conn.dialect.name == "sqlite":
            for name in dialects.COUNT_TRIGGERS.values():
                conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
        else:
            table = "simindex_fingerprints"
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {dialects.COUNT_FUNCTION} ON {table}")


@contextlib.contextmanager
def uncounted(on: bool) -> Iterator[None]:
    """With ``on``, an index opened meanwhile is taken as it is: its missing
    triggers are not made again (Dialect.counting says they are there)."""
    if not on:
        yield
        return
    saved = {d: d.counting for d in (dialects.SQLITE, dialects.POSTGRES)}
    for d in saved:
        d.counting = lambda conn: True  # type: ignore[method-assign]
    try:
        yield
    finally:
        for d, real in saved.items():
            d.counting = real  # type: ignore[method-assign]


class Place:
    """Where the indexes of one database go: a folder, or schemas of one server."""

    def __init__(self, url: str | None, folder: Path) -> None:
        self.url, self.folder = url, folder

    def new(self) -> str:
        name = f"b{uuid.uuid4().hex[:10]}"
        if self.url is None:
            return str(self.folder / f"{name}.db")
        return f"{self.url}{'&' if '?' in self.url else '?'}schema={name}"

    def drop(self, location: str) -> None:
        if self.url is None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{location}{suffix}").unlink(missing_ok=True)
        else:
            drop_schema(self.url, location.rsplit("schema=", 1)[1])


def rows(n: int, prefix: str, rng: random.Random) -> list[tuple[str, int]]:
    return [(f"{prefix}{i}", rng.getrandbits(64)) for i in range(n)]


def measure(place: Place, n: int, singles: int, repeats: int) -> dict[str, list[float]]:
    rng = random.Random(5)
    base = rows(n, "k", rng)
    extra5 = rows(5_000, "f", rng)
    extra50 = rows(50_000, "g", rng)
    one = rows(singles, "s", rng)
    out: dict[str, list[float]] = {}

    def record(name: str, counted: bool, value: float) -> None:
        out.setdefault(f"{name}|{'with' if counted else 'without'}", []).append(value)

    for r in range(repeats):
        for counted in (True, False) if r % 2 == 0 else (False, True):  # (either first)
            log(f"  round {r + 1}, {'with' if counted else 'without'} triggers")
            location = place.new()
            started = time.perf_counter()
            with SimIndex(location, hold=False) as index:
                if not counted:  # (dropped before the load: the trigger-less cost)
                    without_triggers(index)
                index.add_fingerprints(base)
            record("bulk load", counted, time.perf_counter() - started)
            if not counted:  # (a large load makes them again as it ends)
                with SimIndex(location, hold=False) as index:
                    without_triggers(index)
            # Measured on an object opened after the triggers were dropped: a
            # schema change made through an open object slows its later
            # writes (about a third, on SQLite), which would be charged to
            # the triggers' absence. Opened as it is (see uncounted).
            with uncounted(not counted), SimIndex(location, hold=False) as index:
                times = []
                for key, fp in one:
                    t = time.perf_counter()
                    index.add_fingerprint(key, fp)
                    times.append(time.perf_counter() - t)
                record("single add", counted, statistics.median(times))
                t = time.perf_counter()
                index.add_fingerprints(extra5)
                record("5,000 at once", counted, time.perf_counter() - t)
                t = time.perf_counter()
                index.add_fingerprints(extra50)
                record("50,000 at once", counted, time.perf_counter() - t)
            place.drop(location)
    return out


def sqlite_rows_alone(n: int, repeats: int) -> tuple[float, float]:
    """Plain sqlite3, no simindex: n rows into an empty table of simindex's
    shape (a unique key, three indexed blocks) in one transaction, with a
    counting trigger of simindex's kind and without: seconds, medians. Where
    a row costs little (an empty table, keys in order), what the trigger
    adds shows."""
    import sqlite3

    rng = random.Random(3)
    rows = [
        (f"k{i:09d}", rng.getrandbits(63), *(rng.getrandbits(21) for _ in range(3)))
        for i in range(n)
    ]
    found: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as folder:
        for r in range(repeats):
            for trigger in (True, False):
                conn = sqlite3.connect(Path(folder) / f"{r}{trigger}.db", isolation_level=None)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("CREATE TABLE simindex_meta (name TEXT PRIMARY KEY, value TEXT)")
                conn.execute(
                    "CREATE TABLE simindex_fingerprints (id INTEGER PRIMARY KEY, key TEXT "
                    "UNIQUE NOT NULL, fingerprint INTEGER, block_0 INTEGER, block_1 INTEGER, "
                    "block_2 INTEGER)"
                )
                for b in range(3):
                    conn.execute(
                        f"CREATE INDEX ix{b} ON simindex_fingerprints (block_{b}, fingerprint)"
                    )
                if trigger:
                    conn.execute(
                        f"CREATE TRIGGER simindex_count_inserts AFTER INSERT ON "
                        f"simindex_fingerprints BEGIN {dialects.COUNT_SQL}; END".replace(
                            "simindex_meta.value AS", "value AS"
                        )
                    )
                started = time.perf_counter()
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO simindex_fingerprints (key, fingerprint, block_0, block_1, "
                    "block_2) VALUES (?, ?, ?, ?, ?)",
                    rows,
                )
                conn.execute("COMMIT")
                found[trigger].append(time.perf_counter() - started)
                conn.close()
    return statistics.median(found[True]), statistics.median(found[False])


UNITS: dict[str, tuple[str, Callable[[float], float]]] = {
    "single add": ("us", lambda s: s * 1e6),
    "5,000 at once": ("ms", lambda s: s * 1e3),
    "50,000 at once": ("ms", lambda s: s * 1e3),
    "bulk load": ("s", lambda s: s),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="rows of the index (default 1M)")
    ap.add_argument("--singles", type=int, default=2000, help="single adds timed a round")
    ap.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--postgres-url", default=os.environ.get("SIMINDEX_TEST_POSTGRES_URL"))
    output_options(ap)
    args = ap.parse_args()

    def run() -> int:
        print(
            f"Counting every change (triggers, revision 0005) beside the same code without "
            f"them: N={args.n:,}, {args.singles:,} single adds, medians of {args.repeats} rounds"
        )
        alone = 200_000
        w, wo = sqlite_rows_alone(alone, args.repeats)
        print(
            f"\nplain sqlite3, {alone:,} rows into an empty table, one transaction: "
            f"{w:.2f} s with a counting trigger, {wo:.2f} s without ({w / wo:.2f}x; "
            f"{(w - wo) / alone * 1e6:.1f} us a row)"
        )
        with tempfile.TemporaryDirectory() as folder:
            kinds = [("SQLite", None)]
            if args.postgres_url:
                kinds.append(("PostgreSQL", args.postgres_url))
            for label, url in kinds:
                log(f"measuring {label}")
                found = measure(Place(url, Path(folder)), args.n, args.singles, args.repeats)
                print(f"\n{label}")
                print(f"{'write':<16} {'with':>10} {'without':>10} {'with/without':>13}")
                for name, (unit, scale) in UNITS.items():
                    w = statistics.median(found[f"{name}|with"])
                    wo = statistics.median(found[f"{name}|without"])
                    print(
                        f"{name:<16} {scale(w):>8.1f}{unit:>2} {scale(wo):>8.1f}{unit:>2} "
                        f"{w / wo:>12.2f}x"
                    )
        return 0

    return save_output("experiments/changes", args, run)


if __name__ == "__main__":
    sys.exit(main())
