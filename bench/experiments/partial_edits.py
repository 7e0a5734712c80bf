#!/usr/bin/env python
"""Are passages quoted with light edits found, both ways, by SimIndex.overlaps?

    python bench/experiments/partial_edits.py            # 300 passages a language and edit level
    python bench/experiments/partial_edits.py --n 40     # fewer
    python bench/experiments/partial_edits.py --no-save  # print only

From the quality benchmark's texts (its cache, ~/.cache/simindex-quality;
bench/quality.py fills it), per language: hosts (a source's passages joined
into texts of about 1,000 words or 1,500 characters) and quotations (a
passage of 100-300 words or characters of another text of the same source:
the same genre). Each quotation is edited (0, 2 or 5% of its units: English
words inserted, deleted or replaced, new words drawn uniformly from the
5,000 commonest; Chinese characters replaced by characters drawn the same
way) and put whole between two paragraphs of a host.

- inside a stored text: the hosts, each holding an edited quotation, stored
  in an index made with overlaps=True; the quotation as it was written
  asked (``index.overlaps(quotation)``): found when its host is returned.
- a stored text inside the query: the quotations stored; the host holding
  an edited copy asked: found when the quotation is returned.

Every other document returned is checked by content: it must hold at least
half of the asked text's or its own 5-word (English) or 8-character
(Chinese) shingles (what the independent evaluation asks); one that does
not is a wrong return. Recall and wrong returns are given for thresholds
0.4-0.8 (SimIndex.overlaps' threshold: the larger of the two shares must
reach it); every query is asked once at the lowest and filtered. It
measures; nothing in simindex reads it.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import data  # noqa: E402
from common import log, output_options, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402

THRESHOLDS = (0.4, 0.5, 0.52, 0.53, 0.55, 0.6, 0.7, 0.8)
EDITS = (0.0, 0.02, 0.05)
QUOTE = (100, 300)  # a quotation's words (English) or characters (Chinese)
HOST = {"en": (600, 1600, 1000), "zh": (900, 2400, 1500)}  # a host: lo, hi, target
SHINGLE = {"en": 5, "zh": 8}


def shingles(text: str, lang: str) -> set[str]:
    if lang == "zh":
        s = re.sub(r"\s", "", text)
        n = SHINGLE["zh"]
        return {s[i : i + n] for i in range(len(s) - n + 1)}
    w = re.findall(r"\w+", text.lower())
    n = SHINGLE["en"]
    return {" ".join(w[i : i + n]) for i in range(len(w) - n + 1)}


def held(a: str, b: str, lang: str) -> float:
    """The larger of the shares of a's shingles in b and of b's in a."""
    sa, sb = shingles(a, lang), shingles(b, lang)
    if not sa or not sb:
        return 0.0
    shared = len(sa & sb)
    return max(shared / len(sa), shared / len(sb))


def quotation(text: str, lang: str, rng: random.Random) -> str | None:
    """A run of whole sentences of 100-300 units from text, or None."""
    size = data.zh_len if lang == "zh" else data.en_len
    parts = (
        re.split(r"(?<=[.!?。！？；])\s*", text)
        if lang == "zh"
        else re.split(r"(?<=[.!?])\s+", text)
    )
    parts = [p for p in parts if p.strip()]
    for _ in range(20):
        start = rng.randrange(len(parts))
        out, n = [], 0
        for p in parts[start:]:
            out.append(p)
            n += size(p)
            if n >= QUOTE[0]:
                break
        if QUOTE[0] <= n <= QUOTE[1]:
            return ("" if lang == "zh" else " ").join(out)
    return None


def edited(text: str, frac: float, lang: str, editor: data.Editor, chars: list[str]) -> str:
    if frac == 0:
        return text
    if lang == "en":
        return editor.word_edits(text, frac, editor.uniform_word)
    at = [i for i, c in enumerate(text) if "\u4e00" <= c <= "\u9fff"]
    out = list(text)
    for i in editor.rng.sample(at, max(1, round(frac * len(at)))):
        out[i] = editor.rng.choice(chars)
    return "".join(out)


def insert(host: str, quote: str, rng: random.Random) -> str:
    paras = host.split("\n\n")
    at = rng.randint(0, len(paras))
    return "\n\n".join([*paras[:at], quote, *paras[at:]])


def measure(lang: str, n: int, seed: int) -> None:
    rng = random.Random(f"{seed}-{lang}")
    src = data.read_sources(lang, {})
    size = data.zh_len if lang == "zh" else data.en_len
    hosts_by_source = {
        name: data.group([p for unit in units for p in unit], size, *HOST[lang])
        for name, units in src.items()
    }
    pool = [(name, h) for name, hosts in hosts_by_source.items() for h in hosts]
    log(f"{lang}: {len(pool)} hosts from {len(hosts_by_source)} sources")
    docs = [p for units in src.values() for unit in units for p in unit]
    editor = data.Editor(lang, docs, rng)
    chars = sorted({c for w in editor.vocab for c in w if "\u4e00" <= c <= "\u9fff"})
    name = "Chinese" if lang == "zh" else "English"
    units = "characters" if lang == "zh" else "words"
    print(f"\n## {name}: quotations of {QUOTE[0]}-{QUOTE[1]} {units}")
    header = "  ".join(f"t={t:<4}" for t in THRESHOLDS)
    print(f"{'edited':>7} {'way':<22} {header}   (found %; wrong returns)")
    for frac in EDITS:
        cases = []  # (host with the edited quotation, the quotation)
        while len(cases) < n:
            (source, host), (other, giver) = rng.sample(pool, 2)
            if other != source:
                continue  # the same genre: a quotation of another text of the host's source
            quote = quotation(giver, lang, rng)
            if quote is None or quote in host:
                continue
            cases.append((insert(host, edited(quote, frac, lang, editor, chars), rng), quote))
        ways = {}
        shown: list[tuple[float, float]] = []  # wrong returns from 0.5: (share, held)
        with tempfile.TemporaryDirectory() as tmp:
            for way in ("inside a stored text", "a stored text inside"):
                path = str(Path(tmp) / f"{way[:8].strip()}.db")
                stored = (
                    [h for h, _ in cases] if way.startswith("inside") else [q for _, q in cases]
                )
                asked = [q for _, q in cases] if way.startswith("inside") else [h for h, _ in cases]
                with SimIndex(path, overlaps=True) as index:
                    index.add_many((f"d{i}", t) for i, t in enumerate(stored))
                    found = {t: 0 for t in THRESHOLDS}
                    wrong = {t: 0 for t in THRESHOLDS}
                    for i, text in enumerate(asked):
                        for o in index.overlaps(text, threshold=min(THRESHOLDS)):
                            share = max(o.query_share, o.stored_share)
                            j = int(o.key[1:])
                            right = j == i
                            exact = 1.0 if right else held(text, stored[j], lang)
                            if not right and exact < 0.5:
                                for t in THRESHOLDS:
                                    wrong[t] += share >= t
                                if share >= 0.5:
                                    shown.append((share, exact))
                            if right:
                                for t in THRESHOLDS:
                                    found[t] += share >= t
                ways[way] = (found, wrong)
        for way, (found, wrong) in ways.items():
            cells = "  ".join(f"{found[t] / n:5.0%};{wrong[t]:<2}" for t in THRESHOLDS)
            print(f"{frac:>7.0%} {way:<22} {cells}")
        both = "  ".join(f"{min(ways[w][0][t] for w in ways) / n:5.0%}   " for t in THRESHOLDS)
        print(f"{frac:>7.0%} {'(the worse way)':<22} {both}")
        if shown:
            listed = ", ".join(f"{a:.3f} / {b:.3f}" for a, b in sorted(shown))
            print(f"{'':>7} wrong returns from 0.5 (their share / the exact one held): {listed}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="quotations a language and edit level")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lang", default="zh,en", help="languages (default zh,en)")
    output_options(ap)
    args = ap.parse_args(argv)

    def run() -> int:
        started = time.perf_counter()
        print(
            f"SimIndex.overlaps on quotations edited 0-5%, {args.n} a language and edit level, "
            f"seed {args.seed}; wrong: a returned text holding under half of the asked one's "
            f"shingles and the asked one under half of its"
        )
        for lang in args.lang.split(","):
            measure(lang, args.n, args.seed)
        print(f"\n{time.perf_counter() - started:.0f} s")
        return 0

    return save_output("experiments/partial_edits", args, run)


if __name__ == "__main__":
    raise SystemExit(main())
