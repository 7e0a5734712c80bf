#!/usr/bin/env python
"""Recall on a real corpus: which pairs of this machine's copyright files does duplicates() report?

    python bench/experiments/copyright_recall.py            # every file (a few seconds)
    python bench/experiments/copyright_recall.py --no-save  # print only

Every distinct /usr/share/doc/*/copyright and /usr/share/common-licenses
file (data.copyright_files: the same text once), indexed by SimIndex() at its
defaults (add_many, then duplicates()). The truth is the word 5-shingle
Jaccard of every pair of files (words lower-cased, as \\w+ finds them),
computed exactly: per band of Jaccard, how many pairs there are and how many
duplicates() reports; and the reported pairs below 0.3 in both Jaccard and
containment (false alarms, bench/experiments/copyright.py's rule). It
measures; nothing in simindex reads it.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import data  # noqa: E402
from common import log, output_options, save_output  # noqa: E402

from simindex import SimIndex, signature  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, prepare  # noqa: E402
from simindex.signature import DEFAULT_THRESHOLD  # noqa: E402

BANDS = (0.5, 0.6, 0.7, 0.8, 0.9)


def shingles(text: str) -> set[int]:
    w = re.findall(r"\w+", text.lower())
    return {hash(" ".join(w[i : i + 5])) for i in range(len(w) - 4)}


def measure() -> int:
    files = data.copyright_files(distinct=True)
    log(f"{len(files)} distinct files")
    sets = [shingles(t) for _, t in files]
    by_band: dict[float, list[tuple[int, int]]] = defaultdict(list)
    low = set()  # pairs below 0.3 in both Jaccard and containment
    for i in range(len(files)):
        a = sets[i]
        for j in range(i + 1, len(files)):
            b = sets[j]
            if not a or not b:
                continue
            shared = len(a & b)
            jac = shared / (len(a) + len(b) - shared)
            if jac < 0.3 and shared < 0.3 * min(len(a), len(b)):
                low.add((i, j))
            for band in BANDS:
                if jac >= band:
                    by_band[band].append((i, j))
    log("indexing")
    with SimIndex() as index:
        index.add_many((str(n), t) for n, (_, t) in enumerate(files))
        reported = {tuple(sorted((int(p.key_a), int(p.key_b)))) for p in index.duplicates()}
    print(
        f"{len(files)} distinct copyright and licence files; SimIndex() at its defaults "
        f"(k = 8, threshold {DEFAULT_THRESHOLD}); {len(reported)} pairs reported"
    )
    print(f"{'word 5-shingle Jaccard':<24} {'pairs':>6} {'reported':>9} {'recall':>7}")
    for band in BANDS:
        pairs = by_band[band]
        found = sum(p in reported for p in pairs)
        print(
            f"{'>= ' + str(band):<24} {len(pairs):>6} {found:>9} {found / max(1, len(pairs)):7.1%}"
        )
    alarms = sum(p in low for p in reported)
    print(f"false alarms (Jaccard and containment both below 0.3): {alarms}")
    missed = [p for p in by_band[0.7] if p not in reported]
    if missed:
        print("pairs >= 0.7 not reported (Jaccard; the two files):")
        for i, j in missed[:15]:
            a, b = sets[i], sets[j]
            jac = len(a & b) / len(a | b)
            print(f"  {jac:.2f}  {files[i][0]}  {files[j][0]}")
    sizes = [len(set(signature.units(prepare(t, DEFAULT_CONFIG)))) for _, t in files]
    shares = ", ".join(
        f"<= {n}: {sum(s <= n for s in sizes) / len(sizes):.0%}"
        for n in (signature.SMALL, 128, 192, signature.MIDDLE_UNITS, 512)
    )
    print(f"distinct units a file (signature.units): {shares}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    output_options(ap)
    args = ap.parse_args(argv)
    started = time.perf_counter()

    def run() -> int:
        code = measure()
        print(f"\n{time.perf_counter() - started:.0f} s")
        return code

    return save_output("experiments/copyright_recall", args, run)


if __name__ == "__main__":
    raise SystemExit(main())
