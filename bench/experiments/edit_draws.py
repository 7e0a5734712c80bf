#!/usr/bin/env python
"""How much do the words an edit draws move a copy, at both stages?

    python bench/experiments/edit_draws.py            # 400 passages a language (about 2 minutes)
    python bench/experiments/edit_draws.py --n 100    # fewer
    python bench/experiments/edit_draws.py --no-save  # print only

bench/data.py's Editor makes the word edits of the quality benchmarks with
new words drawn by their frequency in the passages (Editor.word): a
person writing uses common words. In Chinese the commonest jieba words
(的, 了, 是, 在 ...) are characters nearly every passage has already, so
such an edit barely changes a passage's set of characters (the units of
the verification signature) and a copy looks closer than an edit with
other words would leave it; a half-rewritten negative, the same way, looks
closer too. This measures, on the quality benchmark's passages (its cache,
~/.cache/simindex-quality; bench/quality.py fills it) of 200-2,000
characters or words, a copy with 2-50% of its words inserted, deleted or
replaced (Editor.word_edits), the new words drawn by frequency ("freq", as
the benchmarks do) or uniformly from the same 5,000 commonest ("uniform"):
the share within k = 8 (the candidate stage), the median similarity of the
verification signatures, and the share at or above thresholds 0.75-0.82.
It measures; nothing in simindex reads it.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import data  # noqa: E402
import numpy as np  # noqa: E402
from common import log, output_options, save_output  # noqa: E402

from simindex.fingerprint import DEFAULT_CONFIG, hamming  # noqa: E402
from simindex.signature import fingerprint_and_signature, similarity  # noqa: E402

THRESHOLDS = (0.75, 0.78, 0.80, 0.82)
FRACTIONS = (0.02, 0.05, 0.10, 0.30, 0.50)


def passages(lang: str, n: int, seed: int) -> tuple[list[str], list[str]]:
    """n passages of 200-2,000 characters (Chinese) or words (English), and all of them."""
    src = data.read_sources(lang, {})
    length = data.zh_len if lang == "zh" else data.en_len
    docs = [p for groups in src.values() for g in groups for p in g if 200 <= length(p) <= 2000]
    return random.Random(seed).sample(docs, min(n, len(docs))), docs


def measure(lang: str, n: int, seed: int) -> None:
    sample, docs = passages(lang, n, seed)
    rng = random.Random(seed)
    editor = data.Editor(lang, docs, rng)

    def uniform() -> str:
        return rng.choice(editor.vocab)

    print(f"\n## {'Chinese' if lang == 'zh' else 'English'}: {len(sample)} passages")
    shown = "  ".join(f">={t:.2f}" for t in THRESHOLDS)
    print(f"{'edited':>7} {'draw':<8} {'within k=8':>10} {'median sim':>10}  {shown}")
    for frac in FRACTIONS:
        for name, draw in (("freq", None), ("uniform", uniform)):
            log(f"{lang} {frac:.0%} {name}")
            sims, within = [], 0
            for passage in sample:
                copy = editor.word_edits(passage, frac, draw)
                fa, sa = fingerprint_and_signature(passage, DEFAULT_CONFIG)
                fb, sb = fingerprint_and_signature(copy, DEFAULT_CONFIG)
                within += hamming(fa, fb) <= 8
                sims.append(similarity(sa, sb))
            s = np.array(sims)
            at = "  ".join(f"{(s >= t).mean():6.1%}" for t in THRESHOLDS)
            print(
                f"{frac:>7.0%} {name:<8} {within / len(sample):>10.1%} "
                f"{float(np.median(s)):>10.3f}  {at}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=400, help="passages a language (default 400)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--lang", default="zh,en", help="languages (default zh,en)")
    output_options(ap)
    args = ap.parse_args(argv)

    def run() -> int:
        print("Copies with words edited, new words drawn by frequency or uniformly from the")
        print("passages' 5,000 commonest; DEFAULT_CONFIG's fingerprints, simindex.signature's")
        print(f"signatures; seed {args.seed}")
        for lang in args.lang.split(","):
            measure(lang, args.n, args.seed)
        return 0

    return save_output("experiments/edit_draws", args, run)


if __name__ == "__main__":
    raise SystemExit(main())
