#!/usr/bin/env python
"""IDF weights on top of the default configuration: a one-off measurement.

    python bench/experiments/idf_experiment.py   # both languages, quality.py's sizes: about 2 min
    python bench/experiments/idf_experiment.py --lang en --n 100 --random 2000
    python bench/experiments/idf_experiment.py --no-save   # print only
                          # (else bench/results/experiments/idf_experiment.txt)

It builds bench/quality.py's synthetic pairs (same sources, cache, seed and
sizes; the natural pairs are left out) and fingerprints every text three ways:

- `default`: DEFAULT_CONFIG (word unigrams, its weights (tf today; the
  figures in bench/results/experiments/idf_experiment.txt were printed while it had
  sublinear weights, 1 + ln tf), stop words dropped, CJK as characters and
  bigrams). The votes
  are recomputed here, and every fingerprint is asserted equal to
  simindex.fingerprint.simhash(text, DEFAULT_CONFIG);
- `idf smooth`: each feature's weight times log((N + 1) / (df + 1)) + 1;
- `idf log(N/df)`: each feature's weight times max(log(N / df), --floor),

where df is the number of the language's texts (every text a pair is built
from: the pool, the edited copies, the long texts; N of them) that hold the
feature. That is a document frequency learned from the evaluation's own texts,
as an index could learn it from its own corpus.

For each method it prints the recall of all positive kinds and the worst
negative kind's false-positive rate at k = 3, 6-10, the smallest k finding 90%
of the positives (k@90, with the worst rate there), and the best k (the
largest k keeping every negative kind at or under 1%). simindex itself is not
changed: an index would have to store document frequencies, and refingerprint
when they change, to use them.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # common.py, data.py

import common  # noqa: E402
import data  # noqa: E402

from simindex.fingerprint import DEFAULT_CONFIG, feature_hash, features, simhash  # noqa: E402

SHOWN_K = (3, 6, 7, 8, 9, 10)


def idf_smooth(n: int, df: int) -> float:
    return math.log((n + 1) / (df + 1)) + 1


def idf_plain(n: int, df: int, floor: float) -> float:
    return max(math.log(n / df), floor)


def fingerprints(
    feats: list[Counter[str]], scales: dict[str, Callable[[str], float] | None]
) -> dict[str, list[int]]:
    """Per method, the Simhash of each text's features with each weight times
    scale(feature) (None: the weights as they are). The votes are simindex's:
    bit j of the fingerprint is 1 where the weights of the features whose
    xxh64 hash has bit j set sum to more than half of all the weights."""
    hashes: dict[str, int] = {}
    out: dict[str, list[int]] = {m: [] for m in scales}
    for fe in feats:
        names = list(fe)
        for f in names:
            if f not in hashes:
                hashes[f] = feature_hash(f)
        h = np.array([hashes[f] for f in names], dtype="<u8")
        bits = np.unpackbits(h.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        tf = np.array([fe[f] for f in names], dtype=np.float64)
        for m, scale in scales.items():
            w = tf if scale is None else tf * np.array([scale(f) for f in names])
            positive = 2 * (w @ bits) > w.sum()
            out[m].append(int(np.packbits(positive, bitorder="little").view("<u8")[0]))
    return out


def summary(pairs, fps: list[int]) -> dict:
    dist: dict[str, list[int]] = {}
    for _cls, kind, i, j in pairs:
        dist.setdefault(kind, []).append((fps[i] ^ fps[j]).bit_count())
    arr = {k: np.array(v) for k, v in dist.items()}
    pos = np.concatenate([arr[k] for k in data.POSITIVE if k in arr])
    neg = [k for k in data.NEGATIVE if k in arr]

    # k -> (recall of all positives, the worst negative kind's FP rate, that kind)
    at = {
        k: (float(np.mean(pos <= k)), *max((float(np.mean(arr[n] <= k)), n) for n in neg))
        for k in range(65)
    }
    k90 = next(k for k in range(65) if at[k][0] >= data.TARGET)
    best = max((k for k in range(65) if at[k][1] <= data.MAX_FP), default=None)
    return {"at": at, "k90": k90, "best": best}


def cell(recall: float, fp: float, kind: str) -> str:
    return f"{common.pct(recall)}/{common.pct(fp)} {data.SHORT[kind] if fp else ''}".strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", default="en,zh")
    ap.add_argument("--n", type=int, default=500, help="pairs of each positive kind")
    ap.add_argument("--random", type=int, default=10000, help="random negative pairs")
    ap.add_argument("--pool", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--floor", type=float, default=0.01, help="the least log(N/df) weight")
    common.output_options(ap)
    args = ap.parse_args(argv)
    return common.save_output("experiments/idf_experiment", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    print(
        f"IDF on DEFAULT_CONFIG, bench/quality.py pairs: git {common.git_rev()}, "
        f"seed {args.seed}, n {args.n}, random {args.random}, pool {args.pool}"
    )
    for lang in args.lang.split(","):
        status: dict = {}
        src = data.read_sources(lang, status)
        pairs, texts, _ = data.build_pairs(lang, src, args.n, args.random, args.pool, args.seed)
        common.log(f"{lang}: {len(pairs)} pairs over {len(texts)} texts; fingerprinting")
        feats = [features(t, DEFAULT_CONFIG) for t in texts]
        df = Counter(f for fe in feats for f in fe)
        n = len(texts)
        smooth = {f: idf_smooth(n, d) for f, d in df.items()}
        plain = {f: idf_plain(n, d, args.floor) for f, d in df.items()}
        methods = {
            "default": None,
            "idf smooth": smooth.__getitem__,
            f"idf log(N/df)>={args.floor:g}": plain.__getitem__,
        }
        fps = fingerprints(feats, methods)
        for t, fp in zip(texts, fps["default"], strict=True):
            if fp != simhash(t, DEFAULT_CONFIG):
                raise SystemExit(f"the votes here are not DEFAULT_CONFIG's, on {t[:80]!r}")
        common.log(f"{lang}: all {n} default fingerprints equal simhash(text, DEFAULT_CONFIG)")
        res = {m: summary(pairs, f) for m, f in fps.items()}
        print()
        print(
            f"== {lang} == {len(pairs)} pairs over N={n} texts ({len(df)} distinct features); "
            f"default fingerprints checked equal to simhash(text, DEFAULT_CONFIG): {n} of {n}"
        )
        head = ["method", *[f"k={k}" for k in SHOWN_K], "k@90", "best k"]
        rows = [head]
        for m, r in res.items():
            at = r["at"]
            k90, best = r["k90"], r["best"]
            rows.append(
                [m]
                + [cell(*at[k]) for k in SHOWN_K]
                + [
                    f"{k90}: {cell(*at[k90])}",
                    "-" if best is None else f"{best}: {cell(*at[best])}",
                ]
            )
        widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
        for i, row in enumerate(rows):
            print(
                "  ".join(
                    [row[0].ljust(widths[0])]
                    + [x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)]
                )
            )
            if i == 0:
                print("-" * (sum(widths) + 2 * (len(widths) - 1)))
        print(
            "Each cell: recall of all positives / the worst negative kind's FP rate "
            "(percent of pairs within k), and which kind that is."
        )
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
