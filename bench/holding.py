#!/usr/bin/env python
"""Single queries at the default k on SQLite and PostgreSQL: from the database,
held in memory, and what an application opening the index gets, beside numpy
brute force measured in the same run.

    python bench/holding.py                      # N=1,000,000, both backends (a few minutes)
    python bench/holding.py --quick              # N=50,000: a smoke run (no results file)
    python bench/holding.py --postgres-url URL   # or set SIMINDEX_TEST_POSTGRES_URL
    python bench/holding.py --skip-postgres      # SQLite alone

Data: N random 64-bit fingerprints (seeded; about half with the top bit set),
every 100th a planted near-duplicate of an earlier one (1..8 bits), and Q
queries, half planted (a stored fingerprint with 0..8 bits flipped), half
random. Per backend, an index made with the defaults (k = 8, three probed
blocks) gets all N through add_fingerprints, then:

  database      query() with hold=False, after 200 untimed: p50 us
  held          query() with hold=True: the first query (it reads the index
                in from its rows, and stores what it read: storage/stored.py)
                in ms, then the others' p50 us; then the first query of a
                new SimIndex(hold=True), which reads the stored snapshot
  open + Q      a new SimIndex at the default hold, opened and asked the Q
                queries one by one: mean us a query, everything included
                (the opening, the database queries before it holds, the
                read), with nothing stored (emptied first: it reads the rows)
                and with the snapshot stored
  query_many    one call over the Q queries on a newly opened index (default
                hold): queries a second, nothing stored and stored

numpy brute force (``np.bitwise_count(fps ^ q) <= k`` over an array of all
N) is timed over the same queries in the same process: its p50 is the
baseline of the `x numpy` column. faiss IndexBinaryMultiHash (3 x 21 bits,
nflip = 2, one thread), when installed, answers them too, one by one and in
one batched range_search: its figures are printed above the table. Every
path's answers are checked to be the same (exit 1 if not). Progress goes to
stderr, the table to stdout and bench/results/holding.txt (common.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import drop_schema, forget_stored, log, output_options, per_call, save_output  # noqa: E402
from data import make_data  # noqa: E402

from simindex import SimIndex  # noqa: E402

WARM = 200


def brute(fps: np.ndarray, queries: np.ndarray, k: int) -> tuple[list[list[int]], float]:
    """Positions within k of each query, and the p50 seconds a query."""
    times, found = [], []
    for q in queries:
        start = time.perf_counter()
        hits = np.flatnonzero(np.bitwise_count(fps ^ q) <= k)
        times.append(time.perf_counter() - start)
        found.append(sorted(hits.tolist()))
    return found, statistics.median(times)


def faiss_baseline(fps: np.ndarray, queries: np.ndarray, k: int, want: list[list[int]]) -> str:
    """faiss IndexBinaryMultiHash (3 tables of 21 bits, 2 flips: the plan of
    simindex's default) over the same data: single p50 and one batched
    range_search, answers checked; a line for the header, or why not."""
    try:
        import faiss  # type: ignore[import-untyped]
    except ImportError:
        return "faiss: not installed (pip install -e '.[bench]'): no faiss rows"
    faiss.omp_set_num_threads(1)
    codes = np.ascontiguousarray(fps.astype("<u8")).view(np.uint8).reshape(-1, 8)
    asked = np.ascontiguousarray(queries.astype("<u8")).view(np.uint8).reshape(-1, 8)
    index = faiss.IndexBinaryMultiHash(64, 3, 21)
    index.nflip = 2
    index.add(codes)
    times, found = [], []
    for i in range(len(asked)):
        start = time.perf_counter()
        lims, _, labels = index.range_search(asked[i : i + 1], k + 1)
        times.append(time.perf_counter() - start)
        found.append(sorted(labels.tolist()))
    start = time.perf_counter()
    lims, _, labels = index.range_search(asked, k + 1)
    batch = len(asked) / (time.perf_counter() - start)
    batched = [sorted(labels[lims[i] : lims[i + 1]].tolist()) for i in range(len(asked))]
    same = "same answers" if found == want == batched else "answers differ (faiss misses some)"
    return (
        f"faiss {faiss.__version__} IndexBinaryMultiHash(3x21 bits, nflip=2), one thread, "
        "same run: "
        f"single p50 {statistics.median(times) * 1e6:,.0f} us, batched {batch:,.0f} q/s ({same})"
    )


def timed(index: SimIndex, queries: list[int]) -> tuple[list[list[str]], list[float]]:
    answers, times = per_call(index.query, queries)
    return [sorted(m.key for m in matches) for matches in answers], times


def measure_backend(
    location: str, fps: np.ndarray, queries: list[int], want: list[list[str]]
) -> dict[str, float] | str:
    keys = [f"k{i}" for i in range(len(fps))]
    start = time.perf_counter()
    with SimIndex(location) as index:
        index.add_fingerprints(zip(keys, fps.tolist(), strict=True))
    log(f"  loaded {len(fps):,} in {time.perf_counter() - start:.1f} s")
    out: dict[str, float] = {}
    with SimIndex(location, hold=False) as index:
        timed(index, queries[:WARM])
        found, times = timed(index, queries)
        if found != want:
            return "database answers differ from brute force"
        out["database"] = statistics.median(times)
    with SimIndex(location, hold=True) as index:
        found, times = timed(index, queries)
        if found != want:
            return "held answers differ from brute force"
        out["first"] = times[0]  # nothing stored yet: reads the rows (and stores them)
        out["held"] = statistics.median(times[1:])
    with SimIndex(location, hold=True) as index:
        found, times = timed(index, queries[:WARM])
        if found != want[:WARM]:
            return "held answers (stored snapshot) differ from brute force"
        out["first stored"] = times[0]
    for stored in (False, True):
        suffix = " stored" if stored else ""
        if not stored:
            forget_stored(location)
        start = time.perf_counter()
        with SimIndex(location) as index:
            found, _ = timed(index, queries)
        out["open" + suffix] = (time.perf_counter() - start) / len(queries)
        if found != want:
            return "default-hold answers differ from brute force"
        if not stored:
            forget_stored(location)
        with SimIndex(location) as index:
            start = time.perf_counter()
            many = index.query_many(queries)
            out["many" + suffix] = len(queries) / (time.perf_counter() - start)
        if [sorted(m.key for m in ms) for ms in many] != want:
            return "query_many answers differ from brute force"
    return out


def measure(args: argparse.Namespace) -> int:
    n = 50_000 if args.quick else args.n
    fps, queries = make_data(n, args.queries, args.seed)
    log(f"data: {n:,} fingerprints, {len(queries):,} queries")
    k = 8
    positions, numpy_p50 = brute(fps, queries, k)
    faiss_line = faiss_baseline(fps, queries, k, positions)
    log(faiss_line)
    want = [sorted(f"k{i}" for i in p) for p in positions]
    backends: list[tuple[str, str]] = []
    folder = tempfile.mkdtemp(prefix="simindex-holding-")
    backends.append(("SQLite", str(Path(folder) / "index.db")))
    url = args.postgres_url
    if url and not args.skip_postgres:
        schema = f"simindex_bench_{uuid.uuid4().hex[:8]}"
        backends.append(("PostgreSQL", f"{url}{'&' if '?' in url else '?'}schema={schema}"))
    results = {}
    try:
        for name, location in backends:
            log(f"{name}:")
            got = measure_backend(location, fps, queries.tolist(), want)
            if isinstance(got, str):
                log(f"{name}: {got}")
                return 1
            results[name] = got
    finally:
        for name, location in backends:
            if name == "PostgreSQL":
                drop_schema(url, location.rsplit("schema=", 1)[1])
        for path in Path(folder).glob("*"):
            path.unlink()
        os.rmdir(folder)
    print(f"single queries at the default k (8), N={n:,}, Q={len(queries):,} (half planted)")
    print(f"numpy brute force over all N, same run: p50 {numpy_p50 * 1e6:,.0f} us a query")
    print(f"{faiss_line}\n")
    print(f"{'':48} {'unit':>6} " + " ".join(f"{b:>12} {'x numpy':>8}" for b in results))
    rows = [
        ("query, database (hold=False), p50", "database", 1e6, "us"),
        ("query, held (hold=True), p50", "held", 1e6, "us"),
        ("first query, hold=True, nothing stored", "first", 1e3, "ms"),
        ("first query, hold=True, stored snapshot", "first stored", 1e3, "ms"),
        ("open + Q queries, default hold, nothing stored", "open", 1e6, "us"),
        ("open + Q queries, default hold, stored", "open stored", 1e6, "us"),
        ("query_many(Q), default hold, nothing stored", "many", 1, "q/s"),
        ("query_many(Q), default hold, stored", "many stored", 1, "q/s"),
    ]
    for label, key, scale, unit in rows:
        cells = []
        for r in results.values():
            ratio = f"{r[key] / numpy_p50:8.2f}" if unit == "us" else f"{'':8}"
            cells.append(f"{r[key] * scale:12,.0f} {ratio}")
        print(f"{label:48} {unit:>6} " + " ".join(cells))
    print("\nx numpy: the row's figure over numpy brute force's p50 (under 1: faster).")
    print("same answers: yes (every path against brute force)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=2000, help="queries (default 2,000)")
    ap.add_argument("--quick", action="store_true", help="N=50,000: a smoke run")
    ap.add_argument("--postgres-url", default=os.environ.get("SIMINDEX_TEST_POSTGRES_URL"))
    ap.add_argument("--skip-postgres", action="store_true", help="SQLite alone")
    ap.add_argument("--seed", type=int, default=20261201)
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("holding", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
