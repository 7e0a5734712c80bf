#!/usr/bin/env python
"""All pairs within k at a million: SimIndex.duplicates() from a file,
reading included, beside a short numpy sort-by-block prototype, in one run.

    python bench/allpairs.py            # N=1,000,000, k = 3 and 8, 3 runs (about 2 minutes)
    python bench/allpairs.py --quick    # N=50,000, 1 run: a smoke run (no results file)
    python bench/allpairs.py --before DIR   # also the simindex package in DIR

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

``--before DIR`` adds the rows of the simindex package in DIR (``git archive
REV simindex | tar -x -C DIR``), run by a child process that imports it
from there (and says so): one round of the child's after each round of
this process's, on the same file and fingerprints, numba loaded once in
each process, so the first round of both pays its load alike.

pairs_within runs its tables in threads, one a CPU (`nproc` is in the
header). At k = 3 the pairs of all three must be the same (exit 1 if not);
at k = 8 duplicates() and pairs_within must find the same pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:  # (after PYTHONPATH: --before's child imports DIR's)
    sys.path.append(str(HERE.parent))

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


def one_round(path: str, fps: np.ndarray) -> tuple[dict[str, float], dict[str, set]]:
    """duplicates(k) and pairs_within(k) at k = 3 and 8 once: seconds and pairs."""
    times: dict[str, float] = {}
    found: dict[str, set] = {}
    for k in (3, 8):
        start = time.perf_counter()
        with SimIndex(path) as index:
            got = index.duplicates(k)
        times[f"duplicates({k})"] = time.perf_counter() - start
        start = time.perf_counter()
        a, b, _ = pairs_within(fps, k)
        times[f"pairs_within({k})"] = time.perf_counter() - start
        found[f"duplicates({k})"] = {(int(p.key_a), int(p.key_b)) for p in got}
        found[f"pairs_within({k})"] = as_set(a, b)
    return times, found


def child(path: str, n: int) -> int:
    """--before's child: a round for each line read, its seconds and the
    digest of each row's pairs as one JSON line."""
    import simindex

    fps, _ = make_data(n, 2, seed=5)
    print(json.dumps({"package": str(Path(simindex.__file__).resolve().parent)}), flush=True)
    for _ in sys.stdin:
        times, found = one_round(path, fps)
        digest = {name: hash(frozenset(pairs)) for name, pairs in found.items()}
        print(json.dumps({"times": times, "pairs": digest}), flush=True)
    return 0


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
        before = None
        if args.before is not None:
            env = {**os.environ, "PYTHONPATH": str(args.before.resolve())}
            before = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--child", path, "--n", str(n)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                cwd=scratch,  # (no simindex in the working folder)
            )
            assert before.stdin is not None and before.stdout is not None
            package = json.loads(before.stdout.readline())["package"]
            if Path(package) != (args.before / "simindex").resolve():
                log(f"--before: the child imported {package}, not DIR's package")
                before.kill()
                return 2
            log(f"before: simindex from {package}")
        try:
            for run in range(runs):
                log(f"run {run + 1} of {runs}")
                round_times, found = one_round(path, fps)
                for name, seconds in round_times.items():
                    times.setdefault(name, []).append(seconds)
                for k in (3, 8):
                    mine = found[f"duplicates({k})"]
                    if mine != found[f"pairs_within({k})"]:
                        log(f"k = {k}: duplicates() and pairs_within differ")
                        ok = False
                    counts[f"duplicates({k})"] = counts[f"pairs_within({k})"] = len(mine)
                start = time.perf_counter()
                proto = prototype(fps, 3)
                times.setdefault("prototype(k=3)", []).append(time.perf_counter() - start)
                counts["prototype(k=3)"] = len(proto)
                if as_set(proto[:, 0], proto[:, 1]) != found["duplicates(3)"]:
                    log("k = 3: the prototype and duplicates() differ")
                    ok = False
                if before is not None:
                    assert before.stdin is not None and before.stdout is not None
                    before.stdin.write("round\n")
                    before.stdin.flush()
                    theirs = json.loads(before.stdout.readline())
                    for name, seconds in theirs["times"].items():
                        times.setdefault(f"before: {name}", []).append(seconds)
                        counts[f"before: {name}"] = counts[name]
                        if theirs["pairs"][name] != hash(frozenset(found[name])):
                            log(f"before: {name} found other pairs")
                            ok = False
        finally:
            if before is not None:
                assert before.stdin is not None
                before.stdin.close()
                before.wait()
    base = statistics.median(times["prototype(k=3)"])
    print(
        f"{n:,} fingerprints (1% planted), an index made with the defaults (k = 8); "
        f"medians of {runs} run(s)"
        + (f"; before: the package in {args.before}" if args.before is not None else "")
        + "\n"
    )
    print(f"{'':26} {'median s':>9} {'x prototype':>11} {'pairs':>9}  runs (s)")
    names = ["prototype(k=3)"]
    for k in (3, 8):
        for row in (f"duplicates({k})", f"pairs_within({k})"):
            names += [row] + ([f"before: {row}"] if args.before is not None else [])
    for name in names:
        median = statistics.median(times[name])
        ratio = f"{median / base:11.2f}" if "3" in name else f"{'':11}"
        runs_s = ", ".join(f"{t:.2f}" for t in times[name])
        print(f"{name:26} {median:9.2f} {ratio} {counts[name]:9,}  {runs_s}")
    print(f"\nsame pairs: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=50,000, 1 run: a smoke run")
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    ap.add_argument("--before", type=Path, metavar="DIR", help="also the simindex package in DIR")
    ap.add_argument("--child", metavar="INDEX", help=argparse.SUPPRESS)
    output_options(ap)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.n)
    if args.before is not None and not (args.before / "simindex").is_dir():
        ap.error(f"--before: {args.before} holds no simindex package")
    return save_output("allpairs", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
