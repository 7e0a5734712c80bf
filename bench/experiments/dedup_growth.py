#!/usr/bin/env python
"""Whether streaming dedup's time a document grows with what it has kept: a one-off measurement.

    python bench/experiments/dedup_growth.py                  # 1M documents: about 2 min
    python bench/experiments/dedup_growth.py --n 200000       # smaller
    python bench/experiments/dedup_growth.py --before DIR     # also the package in DIR
    python bench/experiments/dedup_growth.py --no-save        # print only
                       # (else bench/results/experiments/dedup_growth.txt)

The deciding stage of ``simindex dedup`` alone (dedup_stream with the
fingerprints made beforehand, as bench/dedup.py's --stages measures it): N
documents with random fingerprints (half with the top bit set) and random
64-byte signatures (no exact sets: ten band keys each), nearly all kept, so
what is held grows to N. Printed: the microseconds a document of each
quarter of the stream, in a child process with PYTHONPATH set to this
checkout (and to DIR with --before, a tree made by ``git archive REV
simindex | tar -x -C DIR``), the children taking turns for --rounds rounds;
medians over the rounds. A flat row is a stream whose cost a document does
not grow with its length; the lookup tables' candidates (3 tables of 21-22
bits at k = 8) do grow with what is kept, a few per 100,000 documents.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from common import log, output_options, save_output  # noqa: E402


def child(n: int, seed: int) -> None:
    import numpy as np

    import simindex
    from simindex import dedup_stream, ingest

    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 1 << 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, n, dtype=np.uint64
    )
    sigs = rng.integers(0, 256, (n, 64), dtype=np.uint8)
    docs = [ingest.Doc(str(i), "x", "", 0) for i in range(n)]

    def made(*_args: object, **_kwargs: object):  # type: ignore[no-untyped-def]
        for i in range(n):
            yield docs[i], int(fps[i]), sigs[i].tobytes()

    ingest.fingerprint_docs = made  # the workers' output, made beforehand
    quarters: list[float] = []
    kept = 0
    start = last = time.perf_counter()
    for count, decision in enumerate(dedup_stream(docs, workers=1), 1):
        kept += decision.kept
        if count % (n // 4) == 0:
            now = time.perf_counter()
            quarters.append((now - last) / (n // 4) * 1e6)
            last = now
    print(
        json.dumps(
            {
                "quarters": quarters,
                "total": time.perf_counter() - start,
                "kept": kept,
                "from": simindex.__file__,
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--before", metavar="DIR", help="also the simindex package in DIR")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    output_options(ap)
    args = ap.parse_args(argv)
    if args.child:
        child(args.n, args.seed)
        return 0
    trees = {"this checkout": str(ROOT)}
    if args.before:
        trees = {"before": str(Path(args.before).resolve()), **trees}

    def run() -> int:
        results: dict[str, list[dict]] = {name: [] for name in trees}
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": tree}
                command = [sys.executable, __file__, "--child", "--n", str(args.n)]
                command += ["--seed", str(args.seed)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                results[name].append(json.loads(out.stdout))
                log(f"round {round_ + 1} {name}: {results[name][-1]['total']:.1f} s")
        print(f"N = {args.n:,} documents, random fingerprints and signatures, k = 8, workers=1")
        print(f"medians of {args.rounds} round(s); us a document, each quarter of the stream\n")
        heads = " ".join(f"{q:>7s}" for q in ("1st", "2nd", "3rd", "4th"))
        print(f"{'package':16s} {heads} {'all (s)':>8s}  kept")
        for name, runs in results.items():
            quarters = [statistics.median(r["quarters"][q] for r in runs) for q in range(4)]
            total = statistics.median(r["total"] for r in runs)
            cells = " ".join(f"{q:7.1f}" for q in quarters)
            print(f"{name:16s} {cells} {total:8.1f}  {runs[0]['kept']:,} ({runs[0]['from']})")
        return 0

    return save_output("experiments/dedup_growth", args, run)


if __name__ == "__main__":
    sys.exit(main())
