"""What a larger k costs: single-query latency per k, against numpy brute force.

    python bench/distance.py [--n 1000000] [--k 3,4,6,8] [--queries 2000]
    python bench/distance.py --no-save   # print only (else bench/results/distance.txt)

For each k it builds an index of N random fingerprints (seeded; half the
queries are stored fingerprints with 0..k bits flipped, half random) with the
layout a new index for that k gets (costs.default_blocks: four exact blocks
for k = 3; fewer blocks, probed, above it), then times `query` one query at a
time: median, p90 and p99, in microseconds. Numpy brute force (popcount of
XOR over every fingerprint) answers a sample of the same queries in the same
run; the ratio is brute force's median over simindex's. Every answer is
checked against brute force. Then the loop an application runs as documents
come, query one and add it when nothing matched (--stream fresh random
fingerprints per k), through the database (hold=False) and from memory
(hold=True: the thread's own adds are applied to what it holds): median time a
document, and the mean with reading the index in. Progress goes to stderr, the
table to stdout.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import git_rev, log, output_options, percentile, print_json, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402
from simindex.blocks import probe_radius  # noqa: E402
from simindex.costs import lookup_cost  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--k", default="3,4,6,8", help="distances, comma-separated (default 3,4,6,8)")
    ap.add_argument("--queries", type=int, default=2000, help="queries per k (default 2,000)")
    ap.add_argument(
        "--stream", type=int, default=2000, help="query-then-add documents per k (default 2,000)"
    )
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    output_options(ap)
    args = ap.parse_args()
    return save_output("distance", args, lambda: measure(args))


def queries_near(rng: random.Random, fps: list[int], count: int, k: int) -> list[int]:
    """count queries: every other one random, the rest a stored fingerprint with
    0..k bits flipped."""
    queries = []
    for i in range(count):
        if i % 2:
            queries.append(rng.getrandbits(64))
            continue
        q = fps[rng.randrange(len(fps))]
        for bit in rng.sample(range(64), rng.randrange(0, k + 1)):
            q ^= 1 << bit
        queries.append(q)
    return queries


def assert_exact(found, array: np.ndarray, q: int, k: int) -> None:
    near = np.flatnonzero(np.bitwise_count(array ^ np.uint64(q)) <= k)
    assert sorted(m.key for m in found) == sorted(f"k{j}" for j in near)


def from_database(path: str, k: int, fps: list[int], queries: list[int], array: np.ndarray):
    """Build the index at k, then time each query through the database, with
    numpy brute force on every tenth, interleaved and checked: the layout, our
    seconds and numpy's."""
    log(f"k={k}: building {len(fps):,} fingerprints")
    with SimIndex(path, k=k, hold=False) as index:
        index.add_fingerprints((f"k{i}", fp) for i, fp in enumerate(fps))
        layout = index.layout
        for q in queries[:200]:  # warm the page cache and the statements
            index.query(q)
        log(f"k={k}: {layout.describe()}; timing {len(queries):,} queries")
        ours, brute = [], []
        for i, q in enumerate(queries):
            start = time.perf_counter()
            found = index.query(q)
            ours.append(time.perf_counter() - start)
            if i % 10 == 0:  # brute force on every tenth, interleaved
                start = time.perf_counter()
                near = np.flatnonzero(np.bitwise_count(array ^ np.uint64(q)) <= k)
                brute.append(time.perf_counter() - start)
                assert sorted(m.key for m in found) == sorted(f"k{j}" for j in near)
    return layout, ours, brute


def held_in_memory(path: str, k: int, queries: list[int], array: np.ndarray):
    """The same queries from the fingerprints held in memory (SimIndex(hold=True):
    what an index answers from once its queries have cost what reading it does):
    the seconds reading in, each query's seconds, and duplicates() and its seconds."""
    with SimIndex(path, hold=True) as index:
        start = time.perf_counter()
        index.query(queries[0])  # reads the index into memory
        load = time.perf_counter() - start
        for q in queries[:200]:  # builds the in-memory tables for k
            index.query(q)
        held = []
        for i, q in enumerate(queries):
            start = time.perf_counter()
            found = index.query(q)
            held.append(time.perf_counter() - start)
            if i % 10 == 0:
                assert_exact(found, array, q, k)
        start = time.perf_counter()
        pairs = index.duplicates()  # every pair within k, read and paired in memory
        all_pairs = time.perf_counter() - start
    return load, held, pairs, all_pairs


def query_then_add(path: str, rng: random.Random, count: int) -> dict[bool, tuple[float, float]]:
    """Query, then add when nothing matched: through the database, then held;
    the median and mean seconds a document."""
    stream = {}
    for hold in (False, True):
        new = [rng.getrandbits(64) for _ in range(count)]
        with SimIndex(path, hold=hold) as index:
            times = []
            for i, fp in enumerate(new):
                start = time.perf_counter()
                if not index.query(fp):
                    index.add_fingerprint(f"s{hold}{i}", fp)
                times.append(time.perf_counter() - start)
        stream[hold] = (statistics.median(times), statistics.fmean(times))
    return stream


def measure(args: argparse.Namespace) -> int:
    ks = [int(k) for k in args.k.split(",")]
    rng = random.Random(args.seed)
    fps = [rng.getrandbits(64) for _ in range(args.n)]
    array = np.array(fps, dtype=np.uint64)
    rev = git_rev()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in ks:
            queries = queries_near(rng, fps, args.queries, k)
            path = os.path.join(tmp, f"k{k}.db")
            layout, ours, brute = from_database(path, k, fps, queries, array)
            load, held, pairs, all_pairs = held_in_memory(path, k, queries, array)
            stream = query_then_add(path, rng, args.stream)
            cost = lookup_cost(layout, k, args.n)
            rows.append(
                {
                    "k": k,
                    "layout": layout.describe(),
                    "probe_radius": probe_radius(layout, k) if k > layout.k else 0,
                    "seeks": cost[0] if cost else None,
                    "expected_candidates": round(cost[1], 1) if cost else None,
                    "p50_us": statistics.median(ours) * 1e6,
                    "p90_us": percentile(ours, 0.9) * 1e6,
                    "p99_us": percentile(ours, 0.99) * 1e6,
                    "brute_p50_us": statistics.median(brute) * 1e6,
                    "held_p50_us": statistics.median(held) * 1e6,
                    "held_p99_us": percentile(held, 0.99) * 1e6,
                    "hold_seconds": load,
                    "duplicates_seconds": all_pairs,
                    "duplicates": len(pairs),
                    "stream_db_p50_us": stream[False][0] * 1e6,
                    "stream_db_mean_us": stream[False][1] * 1e6,
                    "stream_held_p50_us": stream[True][0] * 1e6,
                    "stream_held_mean_us": stream[True][1] * 1e6,
                }
            )
    if args.json:
        print_json({"n": args.n, "git": rev, "rows": rows})
        return 0
    print_tables(args, rev, rows)
    return 0


def print_tables(args: argparse.Namespace, rev: str, rows: list[dict]) -> None:
    print(f"simindex distance: n={args.n:,}, {args.queries:,} queries per k, git {rev}")
    head = f"{'k':>3}  {'layout':<58} {'r':>2} {'seeks':>6} {'cand.':>8}"
    print(
        f"{head} {'p50 us':>8} {'p90':>8} {'p99':>8} {'numpy p50':>10} {'x faster':>9}"
        f" {'held p50':>9} {'p99':>6} {'x faster':>9} {'hold s':>7} {'pairs s':>8}"
    )
    for r in rows:
        print(
            f"{r['k']:>3}  {r['layout']:<58} {r['probe_radius']:>2} {r['seeks']:>6} "
            f"{r['expected_candidates']:>8,.1f} {r['p50_us']:>8,.0f} {r['p90_us']:>8,.0f} "
            f"{r['p99_us']:>8,.0f} {r['brute_p50_us']:>10,.0f} "
            f"{r['brute_p50_us'] / r['p50_us']:>9.1f} {r['held_p50_us']:>9,.0f} "
            f"{r['held_p99_us']:>6,.0f} {r['brute_p50_us'] / r['held_p50_us']:>9.1f} "
            f"{r['hold_seconds']:>7.2f} {r['duplicates_seconds']:>8.2f}"
        )
    print("r: probe radius (0: exact lookups); seeks and cand.: per query, expected (uniform)")
    print(
        "p50/p90/p99: through the database (hold=False); held: the same queries answered "
        "from the fingerprints held in memory (hold=True; a k up to the layout's always asks "
        "the database); hold s: reading them in; pairs s: duplicates(), every pair within k; "
        "x faster: numpy brute force p50 (same run) / ours"
    )
    print()
    print(f"query, then add when nothing matched ({args.stream:,} documents per k), us a document:")
    print(
        f"{'k':>3} {'db p50':>8} {'held p50':>9} {'x faster':>9} {'db mean':>8} {'held mean':>10}"
    )
    for r in rows:
        print(
            f"{r['k']:>3} {r['stream_db_p50_us']:>8,.0f} {r['stream_held_p50_us']:>9,.0f} "
            f"{r['stream_db_p50_us'] / r['stream_held_p50_us']:>9.1f} "
            f"{r['stream_db_mean_us']:>8,.0f} {r['stream_held_mean_us']:>10,.0f}"
        )
    print(
        "db: hold=False; held: hold=True (read in at the first query, the adds applied to "
        "what it holds; a k up to the layout's asks the database either way); mean: with "
        "reading the index in"
    )


if __name__ == "__main__":
    raise SystemExit(main())
