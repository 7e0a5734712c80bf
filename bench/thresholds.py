#!/usr/bin/env python
"""Which verification threshold, per script, finds the copies and keeps the look-alikes out?

    python bench/thresholds.py             # 500 pairs a positive kind, both languages (~10 min)
    python bench/thresholds.py --quick     # a smoke run (the cache filled)
    python bench/thresholds.py --no-save   # print only (else bench/results/thresholds.txt)

The pairs are the harder quality benchmark's (bench/data.py's build_pairs
with build_hard's kinds: bench/experiments/quality_hard.py), with one change
that makes them harder still: the word edits of a copy draw their new words
uniformly from the passages' 5,000 commonest (mostly content words, as a
real edit changes them), while the half-rewritten negatives keep drawing by
frequency (which makes them look closer). bench/experiments/edit_draws.py
shows why: frequency draws put Chinese copies closer than the edits a
reader makes, and an independent evaluation of real text agreed with the
uniform draws.

Each pair is scored as simindex scores it (signature.fingerprint_and_signature
at DEFAULT_CONFIG: a candidate within k = 8 or whose signatures' keys meet,
signature.meets, kept when signature.similarity reaches the threshold), its
main table with every pair at the threshold swept (the similarity alone);
"as the index judges them" then gives two longer texts of CJK characters
the lower threshold they need (signature.thresholds_for).
Per language, thresholds 0.60-0.86 are tuned on one seed's pairs
(--tune-seed: the lowest keeping every negative kind's false-positive rate
at or under --max-fp) and reported on another's
(--seed): the recall of copies with up to 10% of their words edited, of all
positive kinds, each negative kind's false-positive rate, and the candidate
stage's bound (the copies within k or meeting by keys, whatever the
threshold; and within k alone, the fingerprint's share).

A negative must be one by its content: a pair whose texts share half of
their 3-grams or more (Jaccard of character 3-grams in Chinese, of word
3-grams in English) is not counted as a negative (--no-content-check keeps
them). The half-rewritten kinds (mixsent above all: sentences inserted,
deleted and replaced until 30-50% of the words changed) make such pairs: one
text most of the other, which a reader would call a copy of it. How many
were set aside is printed per kind. It measures; it changes nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

from common import log, output_options, save_output  # noqa: E402
from data import (  # noqa: E402
    CACHE,
    CONTENT,
    EDITS10,
    HARD_NEGATIVE,
    HARD_POSITIVE,
    NEGATIVE,
    POSITIVE,
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
from simindex.fingerprint import DEFAULT_CONFIG, hamming  # noqa: E402

GRID = [round(0.60 + i / 100, 2) for i in range(27)]  # 0.60 .. 0.86
SHOWN = (0.65, 0.70, 0.72, 0.75, 0.78, 0.80, 0.82)


def scored(lang: str, src: dict, genre: dict, seed: int, args: argparse.Namespace):
    """(kind -> class, kind -> [(distance, similarity, keys meet, both of CJK
    characters)]) for one seed's pairs."""
    pairs, texts, _ = build_pairs(
        lang,
        src,
        args.n,
        args.random,
        args.pool,
        seed,
        extra=build_hard(lang, args.n, seed, genre),
        copy_draw=args.draw,
    )
    log(f"{lang} seed {seed}: {len(pairs)} pairs over {len(texts)} texts")
    marks = [signature.fingerprint_and_signature(t, DEFAULT_CONFIG) for t in texts]
    classes: dict[str, str] = {}
    out: dict[str, list[tuple[int, float, bool, bool]]] = defaultdict(list)
    set_aside: Counter[str] = Counter()
    aside: list[tuple[bool, float, float]] = []  # (a candidate, similarity, 3-gram Jaccard)
    check = ContentCheck(texts, lang)
    for cls, kind, i, j in pairs:
        if cls == "border":
            continue
        (fa, sa), (fb, sb) = marks[i], marks[j]
        if cls == "neg" and args.content_check and (shared := check.jaccard(i, j)) >= CONTENT:
            set_aside[kind] += 1
            near = hamming(fa, fb) <= K or signature.meets(sa, sb) is not None
            aside.append((near, signature.similarity(sa, sb), shared))
            continue
        classes[kind] = cls
        met = signature.meets(sa, sb) is not None
        chars = signature.of_characters(sa) and signature.of_characters(sb)
        out[kind].append((hamming(fa, fb), signature.similarity(sa, sb), met, chars))
    return classes, out, (set_aside, aside)


def needs(t: float, chars: bool, judged: bool) -> float:
    """The similarity a pair needs at threshold t: as asked, or (``judged``)
    as the index judges it (signature.thresholds_for: lower for two longer
    texts of CJK characters)."""
    return float(signature.thresholds_for(t, chars and judged))


def rate(scores: list, t: float, k: int = K, judged: bool = False) -> float:
    hits = sum((d <= k or m) and s >= needs(t, c, judged) for d, s, m, c in scores)
    return hits / max(1, len(scores))


def copies(out: dict, t: float, kinds, keys: bool = True, judged: bool = False) -> float:
    found = [
        (d <= K or (m and keys)) and s >= needs(t, c, judged)
        for kind in kinds
        for d, s, m, c in out.get(kind, [])
    ]
    return sum(found) / max(1, len(found))


def measure(lang: str, args: argparse.Namespace) -> None:
    status: dict = {}
    src = read_sources(lang, status)
    genre = hard_sources(lang, status)
    if not src:
        print(f"\n## {lang}: no source could be read ({status})")
        return
    tuned_classes, tuned, _ = scored(lang, src, genre, args.tune_seed, args)
    classes, report, (set_aside, aside) = scored(lang, src, genre, args.seed, args)
    negatives = [k for k, c in classes.items() if c == "neg"]
    positives = [k for k, c in classes.items() if c == "pos"]
    tuned_neg = [k for k, c in tuned_classes.items() if c == "neg"]
    chosen = next(
        (t for t in GRID if max(rate(tuned[k], t) for k in tuned_neg) <= args.max_fp), None
    )
    name = "Chinese" if lang == "zh" else "English"
    print(f"\n## {name}: copies' edits drawn {args.draw}ly, negatives by frequency")
    print("  " + ", ".join(f"{k} {len(report[k])}" for k in positives + negatives))
    if args.content_check:
        counted = ", ".join(f"{k} {n}" for k, n in sorted(set_aside.items())) or "none"
        print(f"  negatives set aside as sharing >= half of their 3-grams: {counted}")
        at = signature.DEFAULT_THRESHOLD
        passing = [j for near, s_, j in aside if near and s_ >= at]
        if passing:
            print(
                f"  of those, candidates and >= {at} (what they would add): {len(passing)}, "
                f"sharing {min(passing):.2f}-{max(passing):.2f} of their 3-grams"
            )
    print(
        f"  candidate stage (within k={K} or keys meeting, any threshold): copies with <= 10% "
        f"edits {copies(report, 0.0, EDITS10):.1%}, all positives "
        f"{copies(report, 0.0, positives):.1%}; within k={K} alone: "
        f"{copies(report, 0.0, EDITS10, keys=False):.1%}, "
        f"{copies(report, 0.0, positives, keys=False):.1%}"
    )
    print(
        f"  tuned on seed {args.tune_seed}: the lowest threshold keeping every negative kind "
        f"<= {args.max_fp:.1%}: {chosen}"
    )
    print(f"  reported on seed {args.seed}, at k={K}:")
    head = f"  {'threshold':>9} {'<=10%':>6} {'all+':>6} {'worst FP':>9}  " + "  ".join(
        f"{k:>8}" for k in positives + negatives
    )
    print(head)
    for t in sorted({*SHOWN, *([chosen] if chosen is not None else [])}):
        worst = max(rate(report[k], t) for k in negatives)
        cells = "  ".join(f"{rate(report[k], t):8.1%}" for k in positives + negatives)
        mark = " <- tuned" if t == chosen else ""
        print(
            f"  {t:>9.2f} {copies(report, t, EDITS10):6.1%} "
            f"{copies(report, t, positives):6.1%} {worst:9.2%}  {cells}{mark}"
        )
    pairs = [p for k in positives + negatives for p in report[k]]
    chars = sum(p[3] for p in pairs)
    if not chars:
        return
    default = signature.DEFAULT_THRESHOLD
    print(
        f"  as the index judges them: {chars} of {len(pairs)} pairs are two longer texts of "
        f"CJK characters, judged at {signature.characters_threshold(default):.4f} when "
        f"{default} is asked (signature.threshold_for):"
    )
    print(head)
    for t in (0.75, default, 0.80, 0.82):
        worst = max(rate(report[k], t, judged=True) for k in negatives)
        cells = "  ".join(f"{rate(report[k], t, judged=True):8.1%}" for k in positives + negatives)
        mark = " <- the default" if t == signature.DEFAULT_THRESHOLD else ""
        print(
            f"  {t:>9.2f} {copies(report, t, EDITS10, judged=True):6.1%} "
            f"{copies(report, t, positives, judged=True):6.1%} {worst:9.2%}  {cells}{mark}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    pair_options(ap)
    ap.add_argument(
        "--draw", choices=("uniform", "freq"), default="uniform", help="copies' new words"
    )
    ap.add_argument(
        "--no-content-check",
        dest="content_check",
        action="store_false",
        help="count every negative made, whatever it shares",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    sized(args)

    def run() -> int:
        started = time.perf_counter()
        CACHE.mkdir(parents=True, exist_ok=True)
        print(
            f"simindex thresholds: {args.n} pairs a positive kind, seed {args.seed} reported, "
            f"seed {args.tune_seed} tuned; DEFAULT_CONFIG, k={K}"
        )
        print(f"  the kinds: {', '.join([*POSITIVE, *HARD_POSITIVE])} (copies);")
        print(f"  {', '.join([*NEGATIVE, *HARD_NEGATIVE])} (negatives)")
        for lang in args.lang.split(","):
            measure(lang, args)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return 0

    return save_output("thresholds", args, run)


if __name__ == "__main__":
    raise SystemExit(main())
