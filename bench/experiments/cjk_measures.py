#!/usr/bin/env python
"""Which similarity, computed exactly, separates Chinese copies from look-alikes best now?

    python bench/experiments/cjk_measures.py           # both languages, 500 pairs a kind
    python bench/experiments/cjk_measures.py --quick   # a smoke run (the cache filled)
    python bench/experiments/cjk_measures.py --lang zh

bench/thresholds.py's pairs (copies edited by uniformly drawn words,
negatives by frequency, a negative only where its texts share under half of
their 3-grams), candidates as simindex finds them (fingerprints within k = 8
or signatures' keys meeting: signature.meets). What bounds Chinese recall
there is no longer the candidate stage (98.8% of the copies with up to 10%
edits are candidates) but the similarity the signature estimates: the set
of a text's units (words; single CJK characters). A sentence replaced, or
10% of foreign text appended, brings a short Chinese text many characters
it did not have. This script computes, exactly (the ceiling of any sketch),
other similarities over the same candidates:

- units: Jaccard of the unit sets (what the 64-byte sketch estimates today);
- units tf: weighted Jaccard of the units' counts (sum of minima over sum of
  maxima), so a character the text repeats weighs as often as it stands;
- units+bigrams: Jaccard of the units with the CJK character bigrams beside
  them (the fingerprint's own features);
- bigrams tf: weighted Jaccard of the bigrams' and the other units' counts.

For each, per language: the lowest threshold (a multiple of 0.01) keeping
every negative kind at or under --max-fp on the tuning seed, and at it, on
the reported seed, the recall of copies with up to 10% edits, of all
positives, of the kinds that miss most, and the worst negative kind. Nothing
in simindex reads it; a change of units or weights is a new signature kind
(every stored row's signature made again from its text).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import log, output_options, save_output  # noqa: E402
from data import (  # noqa: E402
    CONTENT,
    EDITS10,
    ContentCheck,
    K,
    build_hard,
    build_pairs,
    hard_sources,
    pair_options,
    read_sources,
    sized,
)

from simindex import signature  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, hamming, prepare  # noqa: E402
from simindex.tokenize import has_cjk, words  # noqa: E402

GRID = [round(0.30 + i / 100, 2) for i in range(66)]  # 0.30 .. 0.95
Counts = Counter[str]


def _features(text: str) -> tuple[Counts, Counts]:
    """(units, units and CJK bigrams) of a text as counts, read as the index reads it."""
    tokens = words(prepare(text, DEFAULT_CONFIG), "chars")
    units = Counter(signature.units_of(tokens))
    bigrams = Counter(t for t in tokens if len(t) == 2 and has_cjk(t))
    return units, units + bigrams


def _jaccard(a: Counts, b: Counts) -> float:
    union = len(a.keys() | b.keys())
    return len(a.keys() & b.keys()) / union if union else 0.0


def _weighted(a: Counts, b: Counts) -> float:
    keys = a.keys() | b.keys()
    most = sum(max(a[x], b[x]) for x in keys)
    return sum(min(a[x], b[x]) for x in keys) / most if most else 0.0


MEASURES: dict[str, Callable[[tuple[Counts, Counts], tuple[Counts, Counts]], float]] = {
    "units (today)": lambda a, b: _jaccard(a[0], b[0]),
    "units tf": lambda a, b: _weighted(a[0], b[0]),
    "units+bigrams": lambda a, b: _jaccard(a[1], b[1]),
    "units+bigrams tf": lambda a, b: _weighted(a[1], b[1]),
}


def scored(lang: str, src: dict, genre: dict, seed: int, args: argparse.Namespace):
    """(kind -> "pos"/"neg", kind -> [(candidate, {measure: similarity}, signature estimate)])."""
    pairs, texts, _ = build_pairs(
        lang,
        src,
        args.n,
        args.random,
        args.pool,
        seed,
        extra=build_hard(lang, args.n, seed, genre),
        copy_draw="uniform",
    )
    log(f"{lang} seed {seed}: {len(pairs)} pairs over {len(texts)} texts")
    marks: dict[int, tuple[int, bytes]] = {}
    feats: dict[int, tuple[Counts, Counts]] = {}
    check = ContentCheck(texts, lang)
    classes: dict[str, str] = {}
    out: dict[str, list[tuple[bool, dict[str, float], float]]] = {}
    for cls, kind, i, j in pairs:
        if cls == "border" or (cls == "neg" and check.jaccard(i, j) >= CONTENT):
            continue
        for x in (i, j):
            if x not in marks:
                marks[x] = signature.fingerprint_and_signature(texts[x], DEFAULT_CONFIG)
                feats[x] = _features(texts[x])
        (fa, sa), (fb, sb) = marks[i], marks[j]
        candidate = hamming(fa, fb) <= K or signature.meets(sa, sb) is not None
        exact = {name: f(feats[i], feats[j]) for name, f in MEASURES.items()}
        classes[kind] = cls
        out.setdefault(kind, []).append((candidate, exact, signature.similarity(sa, sb)))
    return classes, out


def pct(found: list[bool]) -> str:
    return f"{sum(found) / max(1, len(found)):.1%}"


def _rate(rows: list[tuple[bool, dict[str, float], float]], name: str, t: float) -> float:
    found = [c and (s if name == "sketch" else e[name]) >= t for c, e, s in rows]
    return sum(found) / max(1, len(found))


def measure(lang: str, args: argparse.Namespace) -> None:
    status: dict = {}
    src = read_sources(lang, status)
    genre = hard_sources(lang, status)
    if not src:
        print(f"\n## {lang}: no source could be read ({status})")
        return
    tuned_classes, tuned = scored(lang, src, genre, args.tune_seed, args)
    classes, report = scored(lang, src, genre, args.seed, args)
    negatives = [k for k, c in classes.items() if c == "neg"]
    positives = [k for k, c in classes.items() if c == "pos"]
    tuned_neg = [k for k, c in tuned_classes.items() if c == "neg"]
    name = "Chinese" if lang == "zh" else "English"
    print(f"\n## {name}: {', '.join(f'{k} {len(report[k])}' for k in positives + negatives)}")
    edits = [candidate for k in EDITS10 for candidate, _, _ in report[k]]
    print(f"  candidates (within k or keys meeting): copies with <= 10% edits {pct(edits)}")
    shown = [k for k in positives if k not in ("reorder", "rewrap", "punct", "zhspace", "trad")]
    head = f"  {'similarity':18} {'t':>5} {'<=10%':>6} {'all+':>6} {'worst FP':>9}  "
    print(head + "  ".join(f"{k:>8}" for k in shown) + "  (t: tuned on the other seed)")
    for measure_name in ["sketch", *MEASURES]:
        chosen = next(
            (
                t
                for t in GRID
                if max(_rate(tuned[k], measure_name, t) for k in tuned_neg) <= args.max_fp
            ),
            None,
        )
        label = "sketch (today)" if measure_name == "sketch" else measure_name
        if chosen is None:
            print(f"  {label:18} none of {GRID[0]}-{GRID[-1]} keeps every negative kind under")
            continue
        rows10 = [r for k in EDITS10 for r in report[k]]
        rows_all = [r for k in positives for r in report[k]]
        worst = max(_rate(report[k], measure_name, chosen) for k in negatives)
        cells = "  ".join(f"{_rate(report[k], measure_name, chosen):8.1%}" for k in shown)
        print(
            f"  {label:18} {chosen:5.2f} {_rate(rows10, measure_name, chosen):6.1%} "
            f"{_rate(rows_all, measure_name, chosen):6.1%} {worst:9.2%}  {cells}"
        )
        if measure_name == "sketch":  # and at the product's threshold, for reference
            t = signature.DEFAULT_THRESHOLD
            worst = max(_rate(report[k], measure_name, t) for k in negatives)
            cells = "  ".join(f"{_rate(report[k], measure_name, t):8.1%}" for k in shown)
            print(
                f"  {'sketch at default':18} {t:5.2f} {_rate(rows10, measure_name, t):6.1%} "
                f"{_rate(rows_all, measure_name, t):6.1%} {worst:9.2%}  {cells}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    pair_options(ap)
    output_options(ap)
    args = ap.parse_args(argv)
    sized(args)

    def run() -> int:
        started = time.perf_counter()
        print(
            f"exact similarities over simindex's candidates: {args.n} pairs a positive kind, "
            f"seed {args.seed} reported, seed {args.tune_seed} tuned, at most {args.max_fp:.1%} "
            f"of each negative kind; k={K}"
        )
        for lang in args.lang.split(","):
            measure(lang, args)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return 0

    return save_output("experiments/cjk_measures", args, run)


if __name__ == "__main__":
    sys.exit(main())
