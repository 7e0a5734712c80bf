#!/usr/bin/env python
"""Would bands of the signature find the copies the fingerprint leaves past k?

    python bench/experiments/bands.py            # 500 pairs a positive kind (~4 minutes)
    python bench/experiments/bands.py --quick    # a smoke run
    python bench/experiments/bands.py --no-save  # print only

The pairs of bench/thresholds.py (the harder benchmark's kinds; copies'
edits drawn uniformly; negatives sharing under half of their 3-grams),
seed 1. A second source of candidates, as MinHash LSH does it: the
signature's 128 four-bit bins cut into ``bands`` runs of ``rows`` bins; two
texts are candidates when any band is equal in both. Per language and
banding: the share of copies with up to 10% of their words edited found
within k = 8, by the bands, by either, and by either then verified at the
default threshold; each negative kind's rate as a candidate of the bands
and as a verified pair (the false positives the bands would add); random
pairs' candidate rate (times N: a query's extra candidates in an index of
N texts); and the bytes a text's band keys take (one 8-byte key a band,
before any index). Beside them, the fingerprint alone at k = 9 and 10. It
measures; nothing in simindex reads it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
from common import output_options, save_output  # noqa: E402
from data import (  # noqa: E402
    CONTENT,
    EDITS10,
    ContentCheck,
    build_hard,
    build_pairs,
    hard_sources,
    read_sources,
)

from simindex import signature  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, hamming  # noqa: E402

BANDINGS = ((4, 32), (5, 25), (6, 21), (8, 16), (10, 12), (12, 10), (16, 8))  # (rows, bands)
K = 8


def bins(sig: bytes) -> np.ndarray:
    """The 128 four-bit values of a signature's sketch."""
    b = np.frombuffer(sig[: signature.NBYTES], dtype=np.uint8)
    return np.stack([b & 15, b >> 4], axis=1).ravel()


def measure(lang: str, args: argparse.Namespace) -> None:
    status: dict = {}
    src, genre = read_sources(lang, status), hard_sources(lang, status)
    pairs, texts, _ = build_pairs(
        lang,
        src,
        args.n,
        args.random,
        args.pool,
        args.seed,
        extra=build_hard(lang, args.n, args.seed, genre),
        copy_draw="uniform",
    )
    marks = [signature.fingerprint_and_signature(t, DEFAULT_CONFIG) for t in texts]
    values = [bins(s) for _, s in marks]
    check = ContentCheck(texts, lang)
    t = signature.DEFAULT_THRESHOLD
    rows_of: dict[str, list[tuple[int, float, np.ndarray]]] = defaultdict(list)
    classes: dict[str, str] = {}
    for cls, kind, i, j in pairs:
        if cls == "border":
            continue
        if cls == "neg" and check.jaccard(i, j) >= CONTENT:
            continue
        classes[kind] = cls
        d = hamming(marks[i][0], marks[j][0])
        rows_of[kind].append(
            (d, signature.similarity(marks[i][1], marks[j][1]), values[i] == values[j])
        )
    copies = [r for kind in EDITS10 for r in rows_of.get(kind, [])]
    negatives = [k for k, c in classes.items() if c == "neg"]
    name = "Chinese" if lang == "zh" else "English"
    print(
        f"\n## {name}: {len(copies)} copies with <= 10% edits; negatives: "
        + ", ".join(f"{k} {len(rows_of[k])}" for k in negatives)
    )

    def banded(eq: np.ndarray, rows: int, bands: int) -> bool:
        return bool(eq[: rows * bands].reshape(bands, rows).all(axis=1).any())

    print(
        f"{'candidates':<18} {'copies: k<=8':>12} {'bands':>7} {'either':>7} {'verified':>9}"
        f"  {'worst neg. as cand.':>20} {'worst neg. verified':>20} {'random cand.':>13}"
        f" {'B/text':>7}"
    )
    within = np.mean([d <= K for d, _, _ in copies])
    for kk in (8, 9, 10):
        found = np.mean([d <= kk for d, _, _ in copies])
        ver = np.mean([d <= kk and s >= t for d, s, _ in copies])
        worst = max(np.mean([d <= kk for d, _, _ in rows_of[k]]) for k in negatives)
        worst_v = max(np.mean([d <= kk and s >= t for d, s, _ in rows_of[k]]) for k in negatives)
        rnd = np.mean([d <= kk for d, _, _ in rows_of["random"]])
        print(
            f"{'fingerprint k<=' + str(kk):<18} {found:12.1%} {'':>7} {'':>7} {ver:9.1%}"
            f"  {worst:20.2%} {worst_v:20.2%} {rnd:13.2e} {8:7d}"
        )
    for rows, bands in BANDINGS:
        by_band = [banded(eq, rows, bands) for _, _, eq in copies]
        either = [d <= K or b for (d, _, _), b in zip(copies, by_band, strict=True)]
        ver = np.mean([e and s >= t for (_, s, _), e in zip(copies, either, strict=True)])
        cand, verified = [], []
        for k in negatives:
            b = [d <= K or banded(eq, rows, bands) for d, _, eq in rows_of[k]]
            cand.append(np.mean([banded(eq, rows, bands) for _, _, eq in rows_of[k]]))
            verified.append(
                np.mean([x and s >= t for (_, s, _), x in zip(rows_of[k], b, strict=True)])
            )
        rnd = np.mean([banded(eq, rows, bands) for _, _, eq in rows_of["random"]])
        label = f"{bands} bands x {rows}"
        worst_kind = negatives[int(np.argmax(verified))]
        print(
            f"{label:<18} {within:12.1%} {np.mean(by_band):7.1%} {np.mean(either):7.1%} {ver:9.1%}"
            f"  {max(cand):20.2%} {max(verified):14.2%} {worst_kind:>5} {rnd:13.2e} {8 * bands:7d}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", default="zh,en")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true")
    output_options(ap)
    args = ap.parse_args(argv)
    args.n = 40 if args.quick else 500
    args.random = 400 if args.quick else 10000
    args.pool = 300 if args.quick else 3000
    if args.quick:
        args.no_save = args.no_save or not args.out

    def run() -> int:
        started = time.perf_counter()
        print(
            f"Signature bands as a second source of candidates; seed {args.seed}, "
            f"threshold {signature.DEFAULT_THRESHOLD}, k = {K}"
        )
        for lang in args.lang.split(","):
            measure(lang, args)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return 0

    return save_output("experiments/bands", args, run)


if __name__ == "__main__":
    raise SystemExit(main())
