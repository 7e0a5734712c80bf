#!/usr/bin/env python
"""All pairs with a compiled inner loop: what it buys, and the growth it leaves.

    pip install numba                                     # not a dependency of simindex
    python bench/experiments/compiled_pairs.py            # N = 1M and 4M (a few minutes)
    python bench/experiments/compiled_pairs.py --n 1000000,10000000
    python bench/experiments/compiled_pairs.py --quick    # N = 100,000, no results file
    python bench/experiments/compiled_pairs.py --no-save  # print only
                          # (else bench/results/experiments/compiled_pairs.txt)

A one-off measurement for the question of issue 26: would a compiled loop
make all pairs grow with N rather than N squared? pairs.pairs_within pairs
with numpy, a few array passes per probe and per comparison; here the same
plan (pairs_plan(n, 8): three 22/21/21-bit tables probed within 2 bits, each
pair reported by the first table it agrees on within the radius) runs as
numba-compiled loops (simindex/_loops.py, the ones pairs_within runs where
numba is installed), one table at a time, its flips split over two threads
(numba releases the GIL), the table sorted by a compiled counting sort.

For each N (bench/data.py's make_data: random fingerprints, 1% planted within
8 bits) it prints:

- the time of pairs_within and of the compiled pairing, and that both found
  the same pairs (exit 1 if not);
- the compiled loop's parts for one table, single-threaded: the lookups
  alone (every fingerprint's key XOR every flip, its run's length read from
  a byte a key: ns a lookup) and the lookups with the comparisons of the rows
  they find (ns a comparison, the lookups' time taken off);
- the pairs compared a document (the rows the lookups find grow with N).

The figures are in docs/scaling.md's account of what bounds the growth.
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

from simindex.compiled import prepared  # noqa: E402
from simindex.pairs import pairs_plan, pairs_within  # noqa: E402

K = 8


def kernels() -> Any:
    """The compiled loops: simindex's own (simindex/_loops.py, which pairs_within
    runs with numba installed) and a loop of lookups alone, to time apart."""
    try:
        from numba import njit
    except ImportError:
        sys.exit("this experiment needs numba: pip install numba")
    from simindex import _loops

    @njit(nogil=True, cache=False)
    def lookups(keys: Any, sizes8: Any, flips: Any, tops: Any) -> Any:
        found = 0
        for fi in range(len(flips)):
            f, top = flips[fi], tops[fi]
            for a in range(len(keys)):
                v = keys[a]
                if (v >> top) & 1 == 0:
                    found += sizes8[v ^ f]
        return found

    return _loops.counting_sort, lookups, _loops.table_pairs


class Compiled:
    """The one-block plan's pairs, compiled; its parts timed apart."""

    def __init__(self) -> None:
        self.counting_sort, self.lookups, self.table_pairs = kernels()

    def pairs(self, fps: np.ndarray) -> tuple[np.ndarray, int]:
        """pairs_within's compiled pairing (two threads), as rows (a, b, d)."""
        counts: dict[str, int] = {}
        a, b, d = pairs_within(fps, K, counts=counts, compiled=True)
        return np.stack([a, b, d], axis=1), counts["compared"]

    def parts(self, fps: np.ndarray) -> tuple[float, float, int, int]:
        """One table, one thread: (s of the lookups alone, s of lookups and
        comparisons, lookups, comparisons)."""
        plan = pairs_plan(len(fps), K)
        table = prepared(self.counting_sort, fps, plan, 0)
        start = time.perf_counter()
        self.lookups(table.keys, table.sizes8, table.flips, table.tops)
        alone = time.perf_counter() - start
        start = time.perf_counter()
        _, compared = self.table_pairs(*table[:7], np.zeros(0, np.uint64), plan.radius, K, False)
        both = time.perf_counter() - start
        tops = table.tops.tolist()
        looked = int(sum(np.count_nonzero((table.keys >> top) & 1 == 0) for top in tops))
        return alone, both, looked, compared


def canonical(a: np.ndarray, b: np.ndarray, d: np.ndarray) -> np.ndarray:
    rows = np.stack([a, b, d], axis=1).astype(np.int64)
    return rows[np.lexsort((rows[:, 1], rows[:, 0]))]


def run(args: argparse.Namespace) -> int:
    sizes = [100_000] if args.quick else [int(x) for x in args.n.split(",")]
    compiled = Compiled()
    warm = make_data(20_000, 0, 0)[0]
    compiled.pairs(warm)  # compile once, untimed
    compiled.parts(warm)
    print(f"all pairs within k = {K}, the one-block plan (pairs_plan); numpy: pairs.pairs_within;")
    print("compiled: the same plan as numba loops, two threads; one run each")
    print()
    head = f"{'N':>12} {'numpy s':>8} {'compiled s':>10} {'ratio':>6} {'compared/doc':>12}"
    head += f" {'ns/lookup':>9} {'ns/compare':>10}  same pairs"
    print(head)
    print("-" * len(head))
    first: dict[str, float] = {}
    rows = []
    bad = False
    for n in sizes:
        fps = make_data(n, 0, 0)[0]
        log(f"N={n:,}: pairs_within")
        start = time.perf_counter()
        a, b, d = pairs_within(fps, K, compiled=False)  # numpy, at every N
        numpy_s = time.perf_counter() - start
        log(f"N={n:,}: compiled")
        start = time.perf_counter()
        out, compared = compiled.pairs(fps)
        compiled_s = time.perf_counter() - start
        same = np.array_equal(canonical(a, b, d), canonical(out[:, 0], out[:, 1], out[:, 2]))
        bad |= not same
        alone, both, looked, compares = compiled.parts(fps)
        per_lookup = alone / looked * 1e9
        per_compare = (both - alone) / max(compares, 1) * 1e9
        print(
            f"{n:>12,} {numpy_s:>8.2f} {compiled_s:>10.2f} {numpy_s / compiled_s:>5.1f}x"
            f" {compared / n:>12.1f} {per_lookup:>9.2f} {per_compare:>10.2f}"
            f"  {'yes' if same else 'NO'}",
            flush=True,
        )
        first = first or {"n": n, "numpy": numpy_s, "compiled": compiled_s}
        rows.append((n, numpy_s, compiled_s))
    if len(rows) > 1:
        print()
        for n, numpy_s, compiled_s in rows[1:]:
            times = n / first["n"]
            print(
                f"{first['n']:,} -> {n:,} ({times:g}x N): numpy {numpy_s / first['numpy']:.1f}x"
                f" the time, compiled {compiled_s / first['compiled']:.1f}x"
            )
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", default="1000000,4000000", help="N, comma-separated")
    ap.add_argument("--quick", action="store_true", help="N = 100,000, no results file")
    output_options(ap)
    args = ap.parse_args()
    if args.quick:
        args.no_save = True
    return save_output("experiments/compiled_pairs", args, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
