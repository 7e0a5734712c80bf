#!/usr/bin/env python
"""All pairs by key value instead of by row: tried, not kept.

    python bench/experiments/run_order.py                    # N = 4M and 16M (a few minutes)
    python bench/experiments/run_order.py --quick            # N = 200,000, one block (no file)

The compiled loops (simindex/_loops.py's table_pairs) walk a sorted table
row by row: for each flip, each row looks up the run of its key ^ flip (a
byte a key value says whether it is empty) and compares itself with its
rows. A lookup costs about ten times a row found there (costs.py), so the
question was whether walking the table by key value instead (key_pairs
below: for each flip, a scan of the byte a key value in order, and for each
value whose run and whose flipped run are both there, every row of the one
with every row of the other) would be cheaper where the table is dense.

For each N (bench/data.py's make_data, random fingerprints), two plans'
second table (one block: 21 bits; two of five blocks: 26 bits), its first
200 flips, one thread: the seconds of each loop, their ratio, and that both
found the same pairs and compared as many (exit 1 if not). The answer is in
docs/decisions/compiled-pairs.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from common import log, output_options, save_output  # noqa: E402
from data import make_data  # noqa: E402

from simindex import compiled  # noqa: E402
from simindex.compiled import prepared  # noqa: E402
from simindex.pairs import pairs_plan  # noqa: E402

K = 8
FLIPS = 200

try:
    from numba import njit

    from simindex._loops import appended, found_earlier, popcount
except ImportError:
    sys.exit("this experiment needs numba: pip install numba")


@njit(nogil=True, cache=False)
def key_pairs(
    a_fps: Any,
    a_order: Any,
    a_starts: Any,
    a_sizes8: Any,
    b_fps: Any,
    b_order: Any,
    b_starts: Any,
    b_sizes8: Any,
    flips: Any,
    tops: Any,
    earlier: Any,
    radius: int,
    k: int,
    within: bool,
    same: bool,
) -> Any:
    """(rows of (a, b, distance), pairs compared) of two sorted tables A and
    B (of keys of the same bits) by key value, not by row: for each flip f,
    every key value v whose run in A is there and whose run v ^ f in B is
    there, each row of the one with each row of the other. ``within``: A is
    B, and v goes over the values with f's highest bit (tops) clear, so each
    pair once (rows as min, max of their order); ``same``: the pairs inside
    each run too. A pair within k is kept unless an earlier table's bits
    differ in at most the radius. Cheaper than looking up row by row when
    the table is dense: a scan of a byte a key value, in order, finds the
    runs, and the rows of a run are compared with each other's in cache."""
    out = np.empty((1024, 3), np.int64)
    m = 0
    compared = 0
    width = len(a_sizes8)
    for fi in range(-1 if same else 0, len(flips)):
        f = 0 if fi < 0 else flips[fi]
        step = width
        if within and fi >= 0:
            step = 1 << tops[fi]
        for base in range(0, width, 2 * step if within and fi >= 0 else width):
            for v in range(base, base + step):
                w = v ^ f
                if a_sizes8[v] == 0 or b_sizes8[w] == 0:
                    continue
                b_end = np.int64(b_starts[w + 1])
                for i in range(np.int64(a_starts[v]), np.int64(a_starts[v + 1])):
                    fa = a_fps[i]
                    for j in range(i + 1 if fi < 0 else np.int64(b_starts[w]), b_end):
                        x = fa ^ b_fps[j]
                        d = popcount(x)
                        compared += 1
                        if d > k or found_earlier(x, earlier, radius):
                            continue
                        p, q = a_order[i], b_order[j]
                        if within and q < p:
                            p, q = q, p
                        out = appended(out, m, p, q, d)
                        m += 1
    return out[:m], compared


def run(args: argparse.Namespace) -> int:
    loops = compiled.kernels()
    if loops is None:
        sys.exit("numba cannot compile the loops here")
    sizes = [200_000] if args.quick else [int(x) for x in args.n.split(",")]
    warm = make_data(20_000, 0, 0)[0]
    plan = pairs_plan(len(warm), K)
    table = prepared(loops.counting_sort, warm, plan, 1)
    runs = (table.fps, table.order, table.starts, table.sizes8)
    key_pairs(*runs, *runs, table.flips, table.tops, table.earlier, plan.radius, K, True, True)
    print(f"one table (the second), its first {FLIPS} flips, k = {K}, one thread, one run\n")
    print(f"{'N':>12} {'plan':8} {'by row s':>9} {'by key s':>9} {'row/key':>8}  same")
    bad = False
    for n in sizes:
        fps = make_data(n, 0, seed=5)[0]
        plans = [("one", pairs_plan(n, K))]
        if not args.quick:  # (by key, a sparse table's scan takes minutes)
            plans.append(("2 of 5", pairs_plan(n, K, blocks=5, per_table=2)))
        for name, plan in plans:
            log(f"N = {n:,}, {name}")
            table = prepared(loops.counting_sort, fps, plan, 1)
            flips, tops = table.flips[:FLIPS], table.tops[:FLIPS]
            start = time.perf_counter()
            by_row, rows_compared = loops.table_pairs(
                *table[:5], flips, tops, table.earlier, plan.radius, K, True
            )
            row_s = time.perf_counter() - start
            runs = (table.fps, table.order, table.starts, table.sizes8)
            start = time.perf_counter()
            by_key, keys_compared = key_pairs(
                *runs, *runs, flips, tops, table.earlier, plan.radius, K, True, True
            )
            key_s = time.perf_counter() - start
            same = rows_compared == keys_compared and sorted(map(tuple, by_row.tolist())) == sorted(
                map(tuple, by_key.tolist())
            )
            bad |= not same
            print(
                f"{n:12,} {name:8} {row_s:9.2f} {key_s:9.2f} {row_s / key_s:7.2f}x"
                f"  {'yes' if same else 'NO'}",
                flush=True,
            )
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="4000000,16000000", help="N, comma-separated")
    ap.add_argument("--quick", action="store_true", help="N = 200,000, no results file")
    output_options(ap)
    args = ap.parse_args()
    if args.quick:
        args.no_save = True
    return save_output("experiments/run_order", args, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
