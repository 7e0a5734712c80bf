#!/usr/bin/env python
"""How long does duplicates() take on real text, where many pairs need their signatures judged?

    python bench/experiments/judged_pairs.py                 # this machine's man pages
    python bench/experiments/judged_pairs.py --before DIR    # also the package in DIR
    python bench/experiments/judged_pairs.py --no-save       # print only
                       # (else bench/results/experiments/judged_pairs.txt)

An index of this machine's manual pages (/usr/share/man/*/*.gz, at most
--n, read as UTF-8 with errors replaced; made once into --cache by this
checkout's package), then ``SimIndex.duplicates()`` at the index's defaults
in a child process with PYTHONPATH set to this checkout (and to DIR with
--before: ``git archive REV simindex | tar -x -C DIR``), the children
taking turns for --rounds rounds; medians. Templated pages (a family of
near-identical pages) give hundreds of thousands of pairs within k and
found by band keys, each verified by its signatures: what the time here
is mostly made of. Each child prints the pairs' count and a digest of
them: both packages must give the same.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
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


def pages(limit: int) -> list[tuple[str, str]]:
    out = []
    for path in sorted(Path("/usr/share/man").glob("*/*.gz"))[:limit]:
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        except (OSError, EOFError):
            continue
        if text.strip():
            out.append((str(path), text))
    return out


def build(index_path: Path, limit: int) -> int:
    from simindex import SimIndex

    docs = pages(limit)
    with SimIndex(str(index_path)) as index:
        index.add_many(docs)
        return len(index)


def child(index_path: str) -> None:
    import simindex
    from simindex import SimIndex

    with SimIndex(index_path) as index:
        start = time.perf_counter()
        found = index.duplicates()
        seconds = time.perf_counter() - start
    digest = hashlib.sha256(
        repr([(p.key_a, p.key_b, p.distance, p.similarity) for p in found]).encode()
    ).hexdigest()[:12]
    print(
        json.dumps({"s": seconds, "pairs": len(found), "digest": digest, "from": simindex.__file__})
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=30_000, help="manual pages at most")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="/tmp/simindex-judged-pairs")
    ap.add_argument("--before", metavar="DIR", help="also the simindex package in DIR")
    ap.add_argument("--child", metavar="INDEX", help=argparse.SUPPRESS)
    output_options(ap)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    index_path = Path(args.cache) / f"man-{args.n}.db"
    if not index_path.exists():
        index_path.parent.mkdir(parents=True, exist_ok=True)
        partial = index_path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        log(f"indexing this machine's manual pages into {index_path}")
        build(partial, args.n)
        partial.rename(index_path)
    trees = {"this checkout": str(ROOT)}
    if args.before:
        trees = {"before": str(Path(args.before).resolve()), **trees}

    def run() -> int:
        results: dict[str, list[dict]] = {name: [] for name in trees}
        for round_ in range(args.rounds):
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": tree}
                command = [sys.executable, __file__, "--child", str(index_path)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                results[name].append(json.loads(out.stdout.splitlines()[-1]))
                log(f"round {round_ + 1} {name}: {results[name][-1]['s']:.1f} s")
        from simindex import SimIndex

        with SimIndex(str(index_path)) as index:
            size = len(index)
        print(f"{size:,} manual pages of this machine, duplicates() at the index's defaults")
        print(f"medians of {args.rounds} round(s), the packages taking turns\n")
        print(f"{'package':16s} {'median s':>9s} {'runs (s)':>24s} {'pairs':>9s}  digest")
        for name, runs in results.items():
            times = ", ".join(f"{r['s']:.1f}" for r in runs)
            median = statistics.median(r["s"] for r in runs)
            first = runs[0]
            print(f"{name:16s} {median:9.1f} {times:>24s} {first['pairs']:9,}  {first['digest']}")
        digests = {r["digest"] for runs in results.values() for r in runs}
        print(f"\nsame pairs: {'yes' if len(digests) == 1 else 'NO'}")
        return 0 if len(digests) == 1 else 1

    return save_output("experiments/judged_pairs", args, run)


if __name__ == "__main__":
    sys.exit(main())
