"""Batch queries: query_many over a large batch, against numpy brute force.

    python bench/batch.py [--n 1000000] [--queries 100000] [--k 3]
    python bench/batch.py --no-save   # print only (else bench/results/batch.txt)

Builds an index of N random fingerprints in a temporary folder, then times
one query_many call over Q queries (half planted near-duplicates) twice: the
first reads the index's fingerprints into memory, the second reuses them.
Numpy brute force answers the same queries (a sample, scaled) in the same
run, and every answer is checked against it.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import output_options, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402

K = 3  # the default --k (what the README's batch table measures)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=100_000, help="queries (default 100,000)")
    ap.add_argument("--k", type=int, default=K, help=f"the index's k (default {K})")
    ap.add_argument("--seed", type=int, default=20240901)
    output_options(ap)
    args = ap.parse_args()
    return save_output("batch", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    k = args.k
    rng = random.Random(args.seed)
    fps = [rng.getrandbits(64) for _ in range(args.n)]
    queries = [
        fps[rng.randrange(args.n)] ^ (1 << rng.randrange(64)) if i % 2 else rng.getrandbits(64)
        for i in range(args.queries)
    ]
    print(f"date {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}    nproc {os.cpu_count()}")
    print(f"N={args.n:,} fingerprints, Q={args.queries:,} queries (half planted), k={k}")
    with tempfile.TemporaryDirectory() as tmp:
        index = SimIndex(Path(tmp) / "batch.db", k=k)
        index.add_fingerprints((f"k{i}", fp) for i, fp in enumerate(fps))
        start = time.perf_counter()
        first = index.query_many(queries)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        second = index.query_many(queries)
        warm = time.perf_counter() - start
        index.close()
    arr = np.array(fps, dtype=np.uint64)
    sample = rng.sample(range(args.queries), min(2000, args.queries))
    start = time.perf_counter()
    wrong = 0
    for i in sample:
        hits = np.flatnonzero(np.bitwise_count(arr ^ np.uint64(queries[i])) <= k)
        if sorted(f"k{j}" for j in hits.tolist()) != sorted(m.key for m in first[i]):
            wrong += 1
    brute = (time.perf_counter() - start) / len(sample)
    rows = [
        ("query_many, first batch (reads the index)", args.queries / cold),
        ("query_many, next batch (snapshot held)", args.queries / warm),
        ("numpy brute force, one query at a time", 1 / brute),
    ]
    for name, rate in rows:
        print(f"{name:<44} {rate:>12,.0f} queries/s   {rate * brute:>8.1f}x brute force")
    print(
        f"exact: {'yes' if wrong == 0 and first == second else 'no'} "
        f"({wrong} of {len(sample)} sampled answers differ from brute force)"
    )
    return 0 if wrong == 0 and first == second else 1


if __name__ == "__main__":
    sys.exit(main())
