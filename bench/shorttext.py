"""Short texts: are one-word (one-character) edits of short real texts found,
are short Chinese texts reordered into another meaning kept apart, and what
do the candidate and decision ideas for short texts cost?

    python bench/shorttext.py               # writes bench/results/shorttext.txt
    python bench/shorttext.py --no-save     # print only
    python bench/shorttext.py --quick       # fewer texts and edits, print only

The texts are the machine's own short texts: the installed packages' one-line
descriptions (dpkg, first lines, of at least two words and two units, one per
unit set: the short ones too, "Core Perl modules", which an earlier version
of this benchmark left out) and the translated messages of its Simplified
Chinese message catalogues (two to thirty distinct units, a seeded sample).

Positives: each sampled text edited once three ways (a word replaced by
another word of the corpus, one inserted, one deleted; a CJK character in
Chinese) and queried against an index of the originals: found when the
original is answered. A one-word edit is an edit of one whitespace-separated
word; where that word is several units (``high-level``, ``x86-64``) the edit
changes two or more units, which no rule of one differing unit finds: those
edits stay in the recall (a user sees one word changed) and their share is
printed. A one-word text is not edited (any replacement leaves nothing of it).

Negatives: every pair of distinct real texts a method reports among the
originals (what duplicates() shows a user), counted as false when the two
differ in three or more units (max of the units each has that the other has
not, so a replacement counts one); the share two or more apart is printed
too. And, for Chinese, reorderings: each sampled line with two of its words
(jieba's) swapped, or one word moved, the characters the same (so the unit
set the same): reported when the original is answered. Most swaps of two
words give another meaning (先保存再关闭 / 先关闭再保存); some do not (文件和目录
/ 目录和文件), so the rate is an upper bound; tests/test_short_order.py holds
a list checked by hand.

Rows: SimIndex() at its defaults (query and duplicates), then ideas measured
offline, none of them in simindex: candidates from Simhash at k, from exact
"set minus one unit" keys (the hash of each set of <= N units and of it with
each unit removed), or from an index of units (documents sharing one of the
query's two rarest units), each decided by the signature at 0.8, by distance
alone, or by an exact rule on small sets (both sets of <= N units: at most
one differing unit, among at least s shared where said, or also with their
exact Jaccard >= 0.8 ("J or rule"); larger sets: the signature at 0.8).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import log, output_options, pct, save_output  # noqa: E402
from data import (  # noqa: E402
    chinese_messages,
    one_unit_edits,
    package_descriptions,
    short_units,
)

from simindex import SimIndex  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG  # noqa: E402
from simindex.signature import DEFAULT_THRESHOLD, fingerprint_and_signature, similarity  # noqa: E402

THRESHOLD = 0.8
FALSE_AT = 3  # a reported pair differing in this many units or more is not a copy


class Side:
    """Texts as the ideas read them: unit sets, fingerprints, signatures."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.sets = [frozenset(short_units(t)) for t in texts]
        both = [fingerprint_and_signature(t, DEFAULT_CONFIG) for t in texts]
        self.fps = np.array([fp for fp, _ in both], dtype=np.uint64)
        self.sigs = [sig for _, sig in both]


def differ(a: frozenset[str], b: frozenset[str]) -> int:
    """How many units two texts differ in: a replacement counts one."""
    return max(len(a - b), len(b - a))


def popcount(x: np.ndarray) -> np.ndarray:
    return np.unpackbits(x.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)


# Candidate generators: (corpus, query side, query index) -> corpus indexes


def simhash_within(k: int) -> Callable:
    def gen(corpus: Side, side: Side, q: int) -> set[int]:
        return set(np.nonzero(popcount(corpus.fps ^ side.fps[q]) <= k)[0].tolist())

    gen.bytes = lambda corpus: 8.0  # type: ignore[attr-defined]
    return gen


def minus_one(n: int) -> Callable:
    """Exact lookups: a set of <= n units is stored under the hash of itself
    and of itself with each unit removed; a query looks up the same keys."""
    tables: dict[int, dict[frozenset[str], list[int]]] = {}

    def keys(units: frozenset[str]) -> list[frozenset[str]]:
        if len(units) > n:
            return []
        return [units] + [units - {u} for u in units]

    def table(corpus: Side) -> dict[frozenset[str], list[int]]:
        if id(corpus) not in tables:
            t: dict[frozenset[str], list[int]] = defaultdict(list)
            for i, units in enumerate(corpus.sets):
                for key in keys(units):
                    t[key].append(i)
            tables[id(corpus)] = t
        return tables[id(corpus)]

    def gen(corpus: Side, side: Side, q: int) -> set[int]:
        t = table(corpus)
        return {i for key in keys(side.sets[q]) for i in t.get(key, ())}

    gen.bytes = lambda corpus: (
        8.0
        * float(  # type: ignore[attr-defined]
            np.mean([len(s) + 1 if len(s) <= n else 0 for s in corpus.sets])
        )
    )
    return gen


def rare_units(m: int = 2) -> Callable:
    """An index of units: the documents sharing one of the query's m rarest
    units (rarest by their count among the stored documents)."""
    postings: dict[int, tuple[dict[str, list[int]], Counter]] = {}

    def index(corpus: Side) -> tuple[dict[str, list[int]], Counter]:
        if id(corpus) not in postings:
            p: dict[str, list[int]] = defaultdict(list)
            for i, units in enumerate(corpus.sets):
                for u in units:
                    p[u].append(i)
            postings[id(corpus)] = (p, Counter({u: len(v) for u, v in p.items()}))
        return postings[id(corpus)]

    def gen(corpus: Side, side: Side, q: int) -> set[int]:
        p, df = index(corpus)
        rarest = sorted(side.sets[q], key=lambda u: (df[u], u))[:m]
        return {i for u in rarest for i in p.get(u, ())}

    gen.bytes = lambda corpus: (
        8.0
        * float(  # type: ignore[attr-defined]
            np.mean([len(s) for s in corpus.sets])
        )
    )
    return gen


# Decision rules: (corpus, corpus index, query side, query index) -> near-duplicate?


def by_signature(corpus: Side, d: int, side: Side, q: int) -> bool:
    return similarity(corpus.sigs[d], side.sigs[q]) >= THRESHOLD


def by_distance(corpus: Side, d: int, side: Side, q: int) -> bool:
    return True


def exact_small(n: int, shared: int = 0) -> Callable:
    """Both sets of <= n units: at most one differing unit, among at least
    ``shared`` shared units; larger sets: the signature at the threshold."""

    def rule(corpus: Side, d: int, side: Side, q: int) -> bool:
        a, b = corpus.sets[d], side.sets[q]
        if len(a) <= n and len(b) <= n:
            return differ(a, b) <= 1 and len(a & b) >= shared
        return by_signature(corpus, d, side, q)

    return rule


def exact_jaccard_small(n: int) -> Callable:
    """Both sets of <= n units: their exact Jaccard at least the threshold, or
    at most one differing unit; larger sets: the signature at the threshold."""

    def rule(corpus: Side, d: int, side: Side, q: int) -> bool:
        a, b = corpus.sets[d], side.sets[q]
        if len(a) <= n and len(b) <= n:
            return differ(a, b) <= 1 or len(a & b) >= THRESHOLD * len(a | b)
        return by_signature(corpus, d, side, q)

    return rule


def union(*gens: Callable) -> Callable:
    def gen(corpus: Side, side: Side, q: int) -> set[int]:
        return set().union(*(g(corpus, side, q) for g in gens))

    gen.bytes = lambda corpus: sum(g.bytes(corpus) for g in gens)  # type: ignore[attr-defined]
    return gen


def off(corpus: Side, pairs) -> dict:
    """How many pairs were reported, and the shares differing in two and in
    FALSE_AT or more units."""
    apart = [differ(corpus.sets[a], corpus.sets[b]) for a, b in pairs]
    n = len(apart)
    return {
        "pairs": n,
        "two": sum(d >= 2 for d in apart) / n if n else None,
        "false": sum(d >= FALSE_AT for d in apart) / n if n else None,
    }


def measure_idea(corpus: Side, edits: Side, origin: list[int], gen: Callable, rule: Callable):
    found = 0
    candidates = []
    for q, want in enumerate(origin):
        cands = gen(corpus, edits, q)
        candidates.append(len(cands))
        found += want in cands and rule(corpus, want, edits, q)
    pairs = set()
    for i in range(len(corpus.texts)):
        for j in gen(corpus, corpus, i):
            if j != i and rule(corpus, j, corpus, i):
                pairs.add((min(i, j), max(i, j)))
    return {
        "recall": found / len(origin),
        **off(corpus, pairs),
        "candidates": float(np.mean(candidates)),
        "bytes": gen.bytes(corpus),
    }


def answered(index: SimIndex, texts: list[str], origin: list[int]) -> list[bool]:
    """For each query text, whether the index answers its original."""
    return [
        str(want) in {m.key for m in index.query(text)}
        for text, want in zip(texts, origin, strict=True)
    ]


def measure_index(corpus: Side, edits: Side, origin: list[int], **options):
    index = SimIndex(**options)
    index.add_many((str(i), t) for i, t in enumerate(corpus.texts))
    found = answered(index, edits.texts, origin)
    pairs = [(int(p.key_a), int(p.key_b)) for p in index.duplicates()]
    index.close()
    return {
        "recall": sum(found) / len(origin),
        **off(corpus, pairs),
        "candidates": None,
        "bytes": None,
        "found": found,
        "pairs_list": pairs,
    }


def ideas() -> list[tuple[str, Callable, Callable]]:
    rows: list[tuple[str, Callable, Callable]] = [
        ("Simhash k=8, distance alone (threshold=0)", simhash_within(8), by_distance),
        ("Simhash k=8, signature >= 0.8 (today, offline)", simhash_within(8), by_signature),
        ("Simhash k=8, exact rule <= 8 units", simhash_within(8), exact_small(8)),
        ("Simhash k=8, exact rule <= 16 units", simhash_within(8), exact_small(16)),
    ]
    for k in (12, 16, 20):
        rows.append((f"Simhash k={k}, signature >= 0.8", simhash_within(k), by_signature))
        rows.append((f"Simhash k={k}, exact rule <= 16 units", simhash_within(k), exact_small(16)))
        if k == 16:
            rows.append(
                (f"Simhash k={k}, J or rule <= 16", simhash_within(k), exact_jaccard_small(16))
            )
    keys15 = union(simhash_within(8), minus_one(15))
    for shared in (4, 3, 2):
        rows.append(
            (
                f"k=8 + minus-one keys <= 15, exact rule, >= {shared} shared",
                keys15,
                exact_small(15, shared),
            )
        )
    for n in (8, 12, 16):
        gen = union(simhash_within(8), minus_one(n))
        rows.append((f"k=8 + minus-one keys <= {n}, signature >= 0.8", gen, by_signature))
        rows.append((f"k=8 + minus-one keys <= {n}, exact rule <= {n}", gen, exact_small(n)))
        if n == 16:
            rows.append(
                (f"k=8 + minus-one keys <= {n}, J or rule <= {n}", gen, exact_jaccard_small(n))
            )
    gen = union(simhash_within(8), rare_units(2))
    rows.append(("k=8 + 2 rarest units' postings, signature >= 0.8", gen, by_signature))
    rows.append(("k=8 + 2 rarest units' postings, exact rule <= 16", gen, exact_small(16)))
    return rows


def buckets(n: int) -> str:
    """A text's size, as the breakdowns group it."""
    return str(n) if n <= 4 else "5-8" if n <= 8 else "9-15" if n <= 15 else "16+"


BUCKETS = ("2", "3", "4", "5-8", "9-15", "16+")


def breakdown(corpus: Side, edits: Side, origin: list[int], found: list[bool]) -> None:
    """SimIndex()'s recall by the original's units and by the units an edit changed."""
    by: dict[str, list[bool]] = defaultdict(list)
    for q, (want, hit) in enumerate(zip(origin, found, strict=True)):
        a, b = corpus.sets[want], edits.sets[q]
        by[buckets(len(a))].append(hit)
        by["1 unit changed" if differ(a, b) <= 1 else "2+ units changed"].append(hit)
    shown = [k for k in (*BUCKETS, "1 unit changed", "2+ units changed") if by[k]]
    print("SimIndex() defaults, found / edits, by the original's units and by the units changed:")
    print("  " + ", ".join(f"{k}: {sum(by[k])}/{len(by[k])}" for k in shown))


def false_examples(corpus: Side, pairs: list[tuple[int, int]], at: int = 2, most: int = 6) -> None:
    """A few reported pairs at least ``at`` units apart, to read."""
    far = [(a, b) for a, b in pairs if differ(corpus.sets[a], corpus.sets[b]) >= at]
    if far:
        print(f"pairs reported {at}+ units apart (of {len(far)}):")
        for a, b in sorted(far)[:most]:
            print(f"  {corpus.texts[a]!r} / {corpus.texts[b]!r}")


def table(title: str, corpus: Side, edits: Side, origin: list[int], quick: bool) -> None:
    sizes = Counter(min(len(s), 17) for s in corpus.sets)
    print(f"\n## {title}: {len(corpus.texts)} texts, {len(origin)} one-unit edits")
    print(
        "units a text: "
        + ", ".join(f"{n if n < 17 else '17+'}: {c}" for n, c in sorted(sizes.items()))
    )
    head = (
        f"{'method':<52} {'recall':>7} {'pairs':>6} {'>=2 off':>8} {'>=3 off':>8} "
        f"{'cands/q':>8} {'B/doc':>6}"
    )
    print(head)
    print("-" * len(head))

    def row(name: str, r: dict) -> None:
        cands = "-" if r["candidates"] is None else f"{r['candidates']:.1f}"
        size = "-" if r["bytes"] is None else f"{r['bytes']:.0f}"
        print(
            f"{name:<52} {pct(r['recall']):>6}% {r['pairs']:>6} "
            f"{pct(r['two']):>7}% {pct(r['false']):>7}% "
            f"{cands:>8} {size:>6}"
        )

    log(f"{title}: SimIndex()")
    defaults = measure_index(corpus, edits, origin)
    row(f"SimIndex() defaults (k=8, threshold={DEFAULT_THRESHOLD})", defaults)
    row("SimIndex(threshold=0)", measure_index(corpus, edits, origin, threshold=0))
    for name, gen, rule in ideas() if not quick else ():
        log(f"{title}: {name}")
        row(name, measure_idea(corpus, edits, origin, gen, rule))
    breakdown(corpus, edits, origin, defaults["found"])
    false_examples(corpus, defaults["pairs_list"])


_CJK_WORD = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def reorderings(texts: list[str], n: int, seed: int) -> list[tuple[int, str, str]]:
    """Reorderings of n of the texts (chosen with the seed), three ways: two
    of a line's words of two or more CJK characters (jieba's, not the same)
    swapped ("swap"), one such word moved to another place among the words
    ("move"), and one word of a single CJK character moved ("char": often
    a particle, 的 or 了, whose move garbles the line more than it gives it
    another meaning). The same characters, so the same unit set, in another
    order (drawn again until the units' order differs). Returns (text
    index, kind, reordered text)."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    rng = random.Random(seed)
    out = []
    for i in rng.sample(range(len(texts)), min(n, len(texts))):
        text = texts[i]
        words = jieba.lcut(text)
        long = [w for w, t in enumerate(words) if _CJK_WORD.fullmatch(t) and len(t) >= 2]
        single = [w for w, t in enumerate(words) if _CJK_WORD.fullmatch(t) and len(t) == 1]
        before = short_units(text)
        for kind in ("swap", "move", "char"):
            for _ in range(20):
                parts = list(words)
                if kind == "swap":
                    if len(long) < 2:
                        break
                    x, y = rng.sample(long, 2)
                    parts[x], parts[y] = parts[y], parts[x]
                else:
                    movable = long if kind == "move" else single
                    if not movable or len(parts) < 2:
                        break
                    x = rng.choice(movable)
                    word = parts.pop(x)
                    parts.insert(rng.choice([p for p in range(len(parts) + 1) if p != x]), word)
                made = "".join(parts)
                after = short_units(made)
                if set(after) == set(before) and after != before:
                    out.append((i, kind, made))
                    break
    return out


def reordered(corpus: Side, texts: list[str], seed: int, n: int) -> None:
    """How many reorderings of Chinese lines SimIndex() answers with their original."""
    made = reorderings(texts, n, seed)
    index = SimIndex()
    index.add_many((str(i), t) for i, t in enumerate(corpus.texts))
    found = answered(index, [t for _, _, t in made], [i for i, _, _ in made])
    index.close()
    by: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for (i, kind, _), hit in zip(made, found, strict=True):
        size = "<= 15 units" if len(corpus.sets[i]) <= 15 else "16+ units"
        by[(kind, size)].append(hit)
        if kind != "char":
            by[("words", size)].append(hit)
    print(f"\n## Chinese reorderings: {len(made)} of {n} lines, the same characters reordered")
    print("reported: the original answered by SimIndex() at its defaults (the target: at most")
    print("1% of the words swapped or moved in the short ones, the texts whose exact sets are")
    print("kept; a single character moved is shown apart: often a particle, it garbles more")
    print("than it changes the meaning)")
    for kind in ("swap", "move", "words", "char"):
        cells = []
        for size in ("<= 15 units", "16+ units"):
            hits = by[(kind, size)]
            if hits:
                cells.append(f"{size}: {sum(hits)}/{len(hits)} = {pct(sum(hits) / len(hits))}%")
        name = {
            "swap": "two words swapped",
            "move": "a word moved",
            "words": "both",
            "char": "a character moved",
        }[kind]
        print(f"{name:<18} " + ", ".join(cells))
    shown = [
        (corpus.texts[i], t)
        for (i, kind, t), hit in zip(made, found, strict=True)
        if hit and len(corpus.sets[i]) <= 15 and kind != "char"
    ]
    for a, b in shown[:8]:
        print(f"  reported: {a!r} / {b!r}")


def measure(args: argparse.Namespace) -> int:
    en = [t for t in package_descriptions(2) if len(t.split()) >= 2]
    zh = chinese_messages(2, 30)
    if not en or not zh:
        log("no package descriptions or no Chinese message catalogues on this machine")
        return 1
    rng = random.Random(args.seed)
    zh = sorted(rng.sample(zh, min(args.chinese, len(zh))))
    print(f"seed {args.seed}; a pair counts as false when its texts differ in >= {FALSE_AT} units")
    print("recall: one-word (one-character) edits whose original is answered; pairs: reported")
    print("among the originals; >=2 off, >=3 off: their shares differing in >= 2, >= 3 units")
    print("(the target: none >= 3); cands/q: candidates a query; B/doc: bytes a document the")
    print("candidate keys need (8 for the fingerprint)")
    zh_side = None
    for title, texts, lang, n in (
        ("English: package descriptions", en, "en", args.edits),
        ("Chinese: message catalogue lines", zh, "zh", args.edits),
    ):
        edits = one_unit_edits(texts, lang, n, args.seed)
        side = Side(texts)
        zh_side = side
        table(title, side, Side([e for _, _, e in edits]), [i for i, _, _ in edits], args.quick)
    assert zh_side is not None
    reordered(zh_side, zh, args.seed, args.edits)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--edits", type=int, default=1000, help="texts edited, each three ways (and reordered)"
    )
    ap.add_argument("--chinese", type=int, default=8000, help="Chinese lines sampled")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--quick", action="store_true", help="a smoke run: small, printed only")
    output_options(ap)
    args = ap.parse_args()
    if args.quick:
        args.edits, args.chinese = 40, 300
    return save_output("shorttext", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
