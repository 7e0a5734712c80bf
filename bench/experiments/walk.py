#!/usr/bin/env python
"""How many rooms does one call walk through? SimIndex.query(text) and SimIndex.add.

    python bench/experiments/walk.py            # the counts (bench/results/experiments/walk.txt)
    python bench/experiments/walk.py --calls    # and every simindex function entered
    python bench/experiments/walk.py --no-save  # print only

On a SQLite index of 2,000 short documents (held in memory after the first
query), one warm call of each is traced with sys.setprofile: the simindex
functions entered, the modules they are in, the crossings (a call whose
nearest simindex caller is in another module) and the depth of simindex
frames before the first one doing the work. Fewer rooms and crossings: a
path a newcomer can follow. It measures; nothing in simindex reads it.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import output_options, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402

PACKAGE = str(HERE.parent.parent / "simindex")


def module_of(frame) -> str | None:  # type: ignore[no-untyped-def]
    path = frame.f_code.co_filename
    if not path.startswith(PACKAGE):
        return None
    return path[len(PACKAGE) - len("simindex") :].removesuffix(".py").replace("/", ".")


def traced(call):  # type: ignore[no-untyped-def]
    """(functions entered, modules, crossings, deepest simindex depth, names) of call()."""
    entered: Counter[str] = Counter()
    crossings = 0
    deepest = 0

    def profile(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal crossings, deepest
        if event != "call":
            return
        mine = module_of(frame)
        if mine is None:
            return
        entered[f"{mine}.{frame.f_code.co_name}"] += 1
        depth, caller, outer = 0, None, frame.f_back
        while outer is not None:
            theirs = module_of(outer)
            if theirs is not None:
                depth += 1
                caller = caller or theirs
            outer = outer.f_back
        deepest = max(deepest, depth + 1)
        if caller is not None and caller != mine:
            crossings += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    modules = {name.rsplit(".", 1)[0] for name in entered}
    return len(entered), len(modules), crossings, deepest, entered


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", action="store_true", help="list the functions entered")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("experiments/walk", args, lambda: walk(args.calls))


def walk(calls: bool) -> int:
    rng = random.Random(1)
    words = [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(3000)
    ]
    docs = [(f"d{i}", " ".join(rng.choices(words, k=rng.randint(6, 14)))) for i in range(2000)]
    with (
        tempfile.TemporaryDirectory() as tmp,
        SimIndex(str(Path(tmp) / "walk.db"), hold=True) as index,
    ):
        index.add_many(docs)
        index.query(docs[0][1])  # warm: the snapshot held, statements compiled
        index.add("warm", docs[2][1] + " warm")
        index.query(docs[4][1])  # and the held tables built (on the first held query)
        rows = [
            ("query", traced(lambda: index.query(docs[1][1]))),
            ("add", traced(lambda: index.add("new", docs[3][1] + " new"))),
        ]
    print(f"{'call':<6} {'functions':>9} {'modules':>7} {'crossings':>9} {'depth':>5}")
    for name, (functions, modules, crossings, depth, _) in rows:
        print(f"{name:<6} {functions:>9} {modules:>7} {crossings:>9} {depth:>5}")
    if calls:
        for name, (*_, entered) in rows:
            print(f"\n{name}:")
            for function, count in sorted(entered.items()):
                print(f"  {count:>4}  {function}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
