#!/usr/bin/env python
"""How all pairs in memory grows with N: pairs.pairs_within at k = 8, one
plan beside another, in one run.

    python bench/growth.py                          # N = 1M and 3M, 1 run each (about 10 minutes)
    python bench/growth.py --n 1000000,10000000,30000000,100000000 --wide-max 30000000 \\
        --skewed-max 30000000       # (about an hour)
    python bench/growth.py --quick                  # N = 50,000: a smoke run (no results file)

Data, for each N: bench/data.py's make_data (random fingerprints, about half
with the top bit set, every 100th a planted near-duplicate of an earlier one
within 8 bits), and the same with the highest --skew-bits bits cleared
("skewed": the first block's keys crowd into fewer values; a pair within k
stays within k). Plans (pairs.pairs_plan), each timed on the same array:

  one block     one block a table (per_table=1): three 22/21/21-bit blocks
                probed within 2 bits, paired with numpy (compiled=False),
                for N up to --numpy-max
  compiled      the same plan paired by simindex.compiled's loops (numba:
                pip install 'simindex[fast]'); the rows below need it too
  by N          what pairs_within does by default: compiled, the plan
                pairs_plan(n, k, per_table=None, compiled=True) prices
                cheapest for N (not run again when it is the one-block plan)
  2 of 5        ten tables of two of five 13/13/13/13/12-bit blocks, probed
                within 2 bits (wider keys, five times the probes), forced,
                compiled, for N up to --wide-max

Columns: the median seconds of R runs (each run's in brackets), the pairs of
fingerprints compared (their distance computed) a document, the pairs found
(every plan must find the same: exit 1 if not), the peak of memory numpy
allocated during the call (tracemalloc), in bytes a document, beside the 8
bytes of the fingerprint itself (compiled rows: plus the 8 bytes a row of
the sort's order, which numba allocates and tracemalloc does not see), and
per N the ratio of time and of time a document to the first N's, for each
plan.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import fmt, log, median, output_options, save_output  # noqa: E402
from data import make_data  # noqa: E402

from simindex import compiled, pairs  # noqa: E402
from simindex.tables import Plan  # noqa: E402

K = 8


def describe(plan: Plan) -> str:
    widths = sorted({m.bit_count() for m in plan.masks}, reverse=True)
    probes = sum(len(f) - 1 for f in plan.flips)
    return (
        f"{len(plan.masks)} tables of {'/'.join(map(str, widths))} bits, "
        f"radius {plan.radius}, {probes} probes"
    )


def one(
    fps: np.ndarray, plan: Plan | None, fast: bool
) -> tuple[float, int, set[tuple[int, int]], int]:
    """Seconds, pairs compared, pairs found and peak bytes allocated of one call."""
    counts: dict[str, int] = {}
    tracemalloc.start()
    start = time.perf_counter()
    a, b, _ = pairs.pairs_within(fps, K, plan=plan, counts=counts, compiled=fast)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return seconds, counts["compared"], set(zip(a.tolist(), b.tolist(), strict=True)), peak


def measure(args: argparse.Namespace) -> int:
    sizes = [50_000] if args.quick else args.n
    runs = 1 if args.quick else args.runs
    if compiled.kernels() is None:  # (compiles, or loads numba's cache, here: untimed)
        log("numba is not installed (pip install 'simindex[fast]'): numpy rows only")
    ok = True
    rows: dict[tuple[str, str], list[tuple[int, float, float, int, int]]] = {}
    print(
        f"pairs.pairs_within at k = {K}; medians of {runs} run(s), the plans of an N "
        f"interleaved run by run; skewed: the highest {args.skew_bits} bits cleared\n"
    )
    print(
        f"{'data':7} {'plan':9} {'N':>11} {'median s':>9} {'compared/doc':>12} "
        f"{'pairs':>9} {'peak B/doc':>10}  runs (s)"
    )
    for n in sizes:
        random_fps, _ = make_data(n, 2, seed=5)
        skewed = random_fps & np.uint64((1 << (64 - args.skew_bits)) - 1)
        old = pairs.pairs_plan(n, K)
        plans: dict[str, tuple[Plan | None, bool]] = {}  # name: (plan, compiled)
        if n <= args.numpy_max:
            plans["one block"] = (old, False)
        if compiled.kernels() is not None:
            chosen = pairs.pairs_plan(n, K, per_table=None, compiled=True, cpus=pairs.usable_cpus())
            plans["compiled"] = (old, True)
            if chosen != old:
                plans["by N"] = (None, True)
            if n <= args.wide_max:
                plans["2 of 5"] = (pairs.pairs_plan(n, K, blocks=5, per_table=2), True)
            log(f"N = {n:,}: by N: {describe(chosen)}")
        if not plans:
            log(f"N = {n:,}: no plan to run (numpy only up to --numpy-max, and no numba)")
            continue
        datas = [("random", random_fps)]
        if n <= args.skewed_max:
            datas.append(("skewed", skewed))
        for data, fps in datas:
            times: dict[str, list[float]] = {name: [] for name in plans}
            found: dict[str, tuple[int, set[tuple[int, int]], int]] = {}
            for run in range(runs):
                for name, (plan, fast) in plans.items():
                    log(f"  {data}, {name}, run {run + 1} of {runs}")
                    seconds, compared, got, peak = one(fps, plan, fast)
                    times[name].append(seconds)
                    found[name] = (compared, got, peak + (8 * n if fast else 0))
            first = next(iter(plans))
            want = found[first][1]
            for name in plans:
                compared, got, peak = found[name]
                if got != want:
                    log(f"{data}, N = {n:,}: {name} found other pairs than {first}")
                    ok = False
                t = median(times[name])
                runs_s = ", ".join(f"{s:.1f}" for s in times[name])
                print(
                    f"{data:7} {name:9} {n:11,} {t:9.2f} {compared / n:12.1f} "
                    f"{len(got):9,} {peak / n:10.1f}  {runs_s}",
                    flush=True,
                )
                rows.setdefault((data, name), []).append((n, t, compared / n, len(got), peak))
            if "compiled" in plans and "by N" not in plans:
                print(f"{data:7} {'by N':9} {n:11,} {'(the compiled row)':>32}")
                rows.setdefault((data, "by N"), []).append(rows[(data, "compiled")][-1])
    print("\nplans pairs_within picks by N, compiled:")
    for n in sorted({*sizes, 1_000_000, 10_000_000, 100_000_000, 300_000_000, 1_000_000_000}):
        chosen = pairs.pairs_plan(n, K, per_table=None, compiled=True, cpus=pairs.usable_cpus())
        print(f"  {n:>13,}: {describe(chosen)}")
    print(f"\ngrowth: each N against the first ({sizes[0]:,}), time and time a document")
    for (data, name), got in rows.items():
        n0, t0 = got[0][0], got[0][1]
        for n, t, _, _, _ in got[1:]:
            print(
                f"  {data:7} {name:9} {n0:,} -> {n:,} ({n / n0:.0f}x N): "
                f"{fmt(t / t0)}x the time, {fmt(t / t0 * n0 / n)}x a document"
            )
    print(f"\nsame pairs: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=50,000, 1 run: a smoke run")
    ap.add_argument(
        "--n",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1_000_000, 3_000_000],
        help="fingerprints, comma-separated (default 1000000,3000000)",
    )
    ap.add_argument("--runs", type=int, default=1, help="runs (default 1)")
    ap.add_argument(
        "--wide-max",
        type=int,
        default=3_000_000,
        help="the largest N the forced 2-of-5 plan runs at (default 3,000,000)",
    )
    ap.add_argument(
        "--numpy-max",
        type=int,
        default=10_000_000,
        help="the largest N the numpy row runs at (default 10,000,000)",
    )
    ap.add_argument(
        "--skewed-max",
        type=int,
        default=100_000_000,
        help="the largest N the skewed data runs at (default 100,000,000)",
    )
    ap.add_argument("--skew-bits", type=int, default=4, help="high bits cleared (default 4)")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("growth", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
