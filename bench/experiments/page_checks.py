#!/usr/bin/env python
"""What SQLite's cell check costs with and without the memory map: a one-off measurement.

    python bench/experiments/page_checks.py                    # 1M and 10M rows: about 10 min
    python bench/experiments/page_checks.py --sizes 1000000    # 1M only: about 2 min
    python bench/experiments/page_checks.py --no-save          # print only
                      # (else bench/results/experiments/page_checks.txt)

simindex's SQLite connections check each B-tree page's cells as they read it
(``PRAGMA cell_size_check``), which turns a damaged index page that would
answer "no such row" in silence into an error (tests/test_damage.py). Pages
read through a memory map (``PRAGMA mmap_size``) are checked each time a
query touches them; pages read into SQLite's own page cache are checked once,
when read. This script measures, on one file of N random fingerprints (the
default k, made once in a temporary folder), each way of reading it, in
turns, for --rounds rounds:

- ``map, no check``: the memory map, no cell check (simindex before the check);
- ``map, check``: the memory map and the check (simindex at 325ce05);
- ``cache C MB, check``: no memory map, the check, a page cache of C MB
  (``PRAGMA cache_size = -C*1024``), for each C of --caches (simindex's
  setting since this measurement: 64 MB).

Each way is set on every connection after simindex's own settings (a
listener on the engine's "connect" event replaces simindex.storage.dialects'
function for the run). Per way and round: ``probe``, the median of --queries
single queries at k = 8 from the database (hold=False), random fingerprints,
after 200 untimed; ``open + held``, opening the file with hold=True and its
first query (the whole read); ``open + query_many``, a newly opened index
(default hold) answering --queries queries in one call. Figures are medians
over the rounds; every way's answers are checked equal.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
if str(HERE.parent.parent) not in sys.path:
    sys.path.append(str(HERE.parent.parent))

from common import log, output_options, save_output  # noqa: E402


def ways(caches: list[int]) -> dict[str, tuple[bool, bool, int | None]]:
    """name -> (memory map, cell check, page cache in MB or None for SQLite's 2 MB)."""
    found: dict[str, tuple[bool, bool, int | None]] = {
        "map, no check": (True, False, None),
        "map, check": (True, True, None),
    }
    for mb in caches:
        found[f"cache {mb} MB, check"] = (False, True, mb)
    return found


def measure(n: int, args: argparse.Namespace, folder: str) -> None:
    import simindex
    from simindex.storage import dialects

    path = os.path.join(folder, f"n{n}.db")
    rng = random.Random(args.seed)
    start = time.perf_counter()
    with simindex.SimIndex(path) as index:
        index.add_fingerprints((f"k{i}", rng.getrandbits(64)) for i in range(n))
    log(f"{n:,} rows written in {time.perf_counter() - start:.0f} s")
    queries = [rng.getrandbits(64) for _ in range(args.queries)]
    original = dialects._on_sqlite_connect
    rows: dict[tuple[str, str], list[float]] = {}
    answers: dict[str, object] = {}

    def way_of(mapped: bool, check: bool, mb: int | None):  # type: ignore[no-untyped-def]
        def factory(timeout: float, *, query_only: bool):  # type: ignore[no-untyped-def]
            inner = original(timeout, query_only=query_only)

            def on_connect(connection, record) -> None:  # type: ignore[no-untyped-def]
                inner(connection, record)
                cursor = connection.cursor()
                cursor.execute(f"PRAGMA mmap_size = {1 << 40 if mapped else 0}")
                cursor.execute(f"PRAGMA cell_size_check = {'ON' if check else 'OFF'}")
                cursor.execute(f"PRAGMA cache_size = {-1024 * mb if mb else -2000}")
                cursor.close()

            return on_connect

        return factory

    try:
        for round_ in range(args.rounds):
            for name, way in ways(args.caches).items():
                dialects._on_sqlite_connect = way_of(*way)
                with simindex.SimIndex(path, hold=False, readonly=True) as index:
                    times = []
                    got = []
                    for q in queries[:1200]:
                        t = time.perf_counter_ns()
                        got.append(index.query(q))
                        times.append(time.perf_counter_ns() - t)
                rows.setdefault((name, "probe (us)"), []).append(
                    statistics.median(times[200:]) / 1e3
                )
                t = time.perf_counter()
                with simindex.SimIndex(path, hold=True, readonly=True) as index:
                    index.query(queries[0])
                rows.setdefault((name, "open + held (s)"), []).append(time.perf_counter() - t)
                t = time.perf_counter()
                with simindex.SimIndex(path, readonly=True) as index:
                    many = index.query_many(queries)
                rows.setdefault((name, "open + query_many (s)"), []).append(time.perf_counter() - t)
                answers.setdefault(name, (got, many))
                log(f"round {round_ + 1} {name}: probe {rows[(name, 'probe (us)')][-1]:.0f} us")
    finally:
        dialects._on_sqlite_connect = original
    first = next(iter(answers.values()))
    same = all(a == first for a in answers.values())
    size = os.path.getsize(path) / 1e6
    print(f"\nN = {n:,} random fingerprints, file {size:,.0f} MB, {args.queries:,} queries")
    names = list(ways(args.caches))
    base = "map, no check"
    print(f"{'way':24s} {'probe (us)':>11s} {'x':>6s} {'open + held (s)':>16s} "
          f"{'open + query_many (s)':>22s}")  # fmt: skip
    for name in names:
        probe = statistics.median(rows[(name, "probe (us)")])
        ratio = probe / statistics.median(rows[(base, "probe (us)")])
        held = statistics.median(rows[(name, "open + held (s)")])
        many_s = statistics.median(rows[(name, "open + query_many (s)")])
        print(f"{name:24s} {probe:11,.0f} {ratio:6.2f} {held:16.2f} {many_s:22.2f}")
    print(f"same answers: {'yes' if same else 'NO'}")
    os.remove(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,10000000", help="rows (default 1M and 10M)")
    ap.add_argument("--caches", default="16,64", help="page caches in MB (default 16,64)")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    output_options(ap)
    args = ap.parse_args(argv)
    args.caches = [int(c) for c in args.caches.split(",")]

    def run() -> int:
        print("x: the probe's median over the memory map's without the check, in the same run")
        with tempfile.TemporaryDirectory() as folder:
            for n in (int(s) for s in args.sizes.split(",")):
                measure(n, args, folder)
        return 0

    return save_output("experiments/page_checks", args, run)


if __name__ == "__main__":
    sys.exit(main())
