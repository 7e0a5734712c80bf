#!/usr/bin/env python
"""All pairs within k at a million: SimIndex.duplicates() from a file,
reading included, beside a short numpy sort-by-block prototype, in one run.

    python bench/allpairs.py            # N=1,000,000, k = 3 and 8, 3 runs (about 2 minutes)
    python bench/allpairs.py --quick    # N=50,000, 1 run: a smoke run (no results file)

Data: bench/holding.py's (N random fingerprints, about half with the top bit
set, every 100th a planted near-duplicate of an earlier one within 8 bits).
Rows, medians of R runs, interleaved run by run:

  duplicates(k)    SimIndex(path).duplicates(k) on a file made with the
                   defaults (k = 8) holding the N (add_fingerprints, not
                   timed): opening the index, reading its fingerprints (from
                   the stored snapshot, storage/stored.py: stored by an
                   untimed held query first) and pairing them (pairs.pairs_within),
                   every Pair made
  pairs_within(k)  the pairing alone, on the fingerprints as a numpy array
  prototype(k=3)   the pigeonhole argument in numpy, as one would first
                   write it: four 16-bit blocks, for each a stable argsort
                   and each fingerprint compared with the next ones while
                   they share the block, the pairs of the four tables made
                   unique with np.unique (the array already in memory)

pairs_within runs its tables in threads, one a CPU (`nproc` is in the
header). At k = 3 the pairs of all three must be the same (exit 1 if not);
at k = 8 duplicates() and pairs_within must find the same pairs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import log, output_options, save_output  # noqa: E402
from data import make_data  # noqa: E402

from simindex import SimIndex  # noqa: E402
from simindex.pairs import pairs_within  # noqa: E402


def prototype(fps: np.ndarray, k: int = 3) -> np.ndarray:
    """Every pair (a, b), a < b, within k <= 3: four 16-bit blocks, one of
    which two such fingerprints share."""
    found = []
    for t in range(4):
        key = (fps >> np.uint64(16 * t)) & np.uint64(0xFFFF)
        order = np.argsort(key, kind="stable")
        keys, sorted_fps = key[order], fps[order]
        step = 1
        alive = np.flatnonzero(keys[1:] == keys[:-1])
        while alive.size:
            near = np.bitwise_count(sorted_fps[alive] ^ sorted_fps[alive + step]) <= k
            a, b = order[alive[near]], order[alive[near] + step]
            found.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
            step += 1
            alive = alive[alive + step < len(keys)]
            alive = alive[keys[alive + step] == keys[alive]]
    return np.unique(np.concatenate(found), axis=0)


def as_set(a: np.ndarray, b: np.ndarray) -> set[tuple[int, int]]:
    return set(zip(a.tolist(), b.tolist(), strict=True))


def measure(args: argparse.Namespace) -> int:
    n = 50_000 if args.quick else args.n
    runs = 1 if args.quick else args.runs
    fps, _ = make_data(n, 2, seed=5)
    keys = [f"{i:08d}" for i in range(n)]
    times: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-allpairs-") as scratch:
        path = str(Path(scratch) / "index.db")
        log(f"building {n:,} fingerprints")
        with SimIndex(path) as index:
            index.add_fingerprints(zip(keys, fps.tolist(), strict=True))
        with SimIndex(path, hold=True) as index:
            index.query(int(fps[0]))  # a holder reads the rows and stores the snapshot
        for run in range(runs):
            log(f"run {run + 1} of {runs}")
            for k in (3, 8):
                start = time.perf_counter()
                with SimIndex(path) as index:
                    got = index.duplicates(k)
                times.setdefault(f"duplicates({k})", []).append(time.perf_counter() - start)
                start = time.perf_counter()
                a, b, _ = pairs_within(fps, k)
                times.setdefault(f"pairs_within({k})", []).append(time.perf_counter() - start)
                mine = {(int(p.key_a), int(p.key_b)) for p in got}
                if mine != as_set(a, b):
                    log(f"k = {k}: duplicates() and pairs_within differ")
                    ok = False
                counts[f"duplicates({k})"] = counts[f"pairs_within({k})"] = len(mine)
                if k == 3:
                    start = time.perf_counter()
                    proto = prototype(fps, 3)
                    times.setdefault("prototype(k=3)", []).append(time.perf_counter() - start)
                    counts["prototype(k=3)"] = len(proto)
                    if as_set(proto[:, 0], proto[:, 1]) != mine:
                        log("k = 3: the prototype and duplicates() differ")
                        ok = False
    base = statistics.median(times["prototype(k=3)"])
    print(
        f"{n:,} fingerprints (1% planted), an index made with the defaults (k = 8); "
        f"medians of {runs} run(s)\n"
    )
    print(f"{'':18} {'median s':>9} {'x prototype':>11} {'pairs':>9}  runs (s)")
    for name in ("prototype(k=3)", "duplicates(3)", "pairs_within(3)", "duplicates(8)"):
        median = statistics.median(times[name])
        ratio = f"{median / base:11.2f}" if "3" in name else f"{'':11}"
        runs_s = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"{name:18} {median:9.2f} {ratio} {counts[name]:9,}  {runs_s}")
    name = "pairs_within(8)"
    median = statistics.median(times[name])
    runs_s = ", ".join(f"{t:.2f}" for t in times[name])
    print(f"{name:18} {median:9.2f} {'':11} {counts[name]:9,}  {runs_s}")
    print(f"\nsame pairs: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=50,000, 1 run: a smoke run")
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("allpairs", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
