#!/usr/bin/env python
"""Which units should a Chinese text's verification signature be made of, and
which threshold should each script use? Measured on the harder benchmark, with
the thresholds chosen on one part of the passages and reported on another.

    python bench/experiments/cjk_units.py           # both languages: about 25 minutes on 2 cores
    python bench/experiments/cjk_units.py --quick   # a smoke run (the cache filled): prints only
    python bench/experiments/cjk_units.py --lang zh --n 300

The passages of bench/data.py's sources (the cache of bench/quality.py) are
split in two by source document (an article, a file, a licence; a source of
few documents, such as one long file, in chunks of CHUNK consecutive
passages), documents that share a passage or a near-duplicate of one
(fingerprints within LINK_K and unit Jaccard >= LINK_JACCARD) held together,
each group drawn to TUNE or TEST with a seed; the same-genre texts (copyright
files, manual pages) are split the same way. The harder benchmark's pairs
(bench/data.py: build_pairs with build_hard) are made on each part alone, so
no copy of a TEST passage is ever seen when tuning.

Every verification row is two-stage, as simindex answers: candidates within
k = 8 of DEFAULT_CONFIG's fingerprint, kept when the similarity of two unit
sets reaches a threshold. A unit set is estimated by the 64-byte sketch
simindex.signature makes (b-bit one-permutation MinHash, 128 bins of 4 bits;
its functions, over this script's units), at 128 bytes (256 bins) for some, and
computed exactly (the ceiling). The CJK units compared (words of spaced
scripts are words in every one):

- chars: single CJK characters (simindex.signature today);
- bigrams: CJK character bigrams, and characters in no bigram;
- chars+bigrams: both (the fingerprint's own tokens);
- jieba: jieba's words (simindex.tokenize.words(text, "words"));
- 2-shingles: runs of two consecutive units of today's (characters and words).

Each threshold is the lowest multiple of 0.01 keeping every negative kind's FP
rate <= 1% on TUNE; TEST gives the recall of each positive kind and the FP rate
of each negative kind there. MinHash (datasketch, 128 permutations, the
threshold tuned on the same TUNE pairs) and simindex as it ships are rows
beside them. One kind is reported and not scored (sedit*, see
sentence_edits): half of a passage in sentences each with half its words
rewritten, the other sentences untouched. Fingerprinting speed: the
product's fingerprint_and_signature beside a one-pass prototype per unit
choice (same tokens, same hashing),
medians over interleaved passes on TEST passages. Written to
bench/results/experiments/cjk_units.txt; what it decided:
docs/decisions/chinese-units.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common and data, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
import xxhash  # noqa: E402
from common import log, median, output_options, pct, print_json, save_output  # noqa: E402
from data import (  # noqa: E402
    CACHE,
    EDITS10,
    HARD_NEGATIVE,
    HARD_POSITIVE,
    MAX_FP,
    NEGATIVE,
    NUM_PERM,
    POSITIVE,
    SHORT,
    THRESHOLD,
    Editor,
    K,
    build_hard,
    build_pairs,
    hard_sources,
    memoise_words,
    read_sources,
    score_all,
    shingle_set,
)

import simindex.tokenize as tok  # noqa: E402
from simindex import signature as product  # noqa: E402
from simindex.fingerprint import (  # noqa: E402
    DEFAULT_CONFIG,
    features_of_tokens,
    hamming,
    prepare,
    simhash_of_hashes,
)
from simindex.pairs import pairs_within  # noqa: E402

# The original tokeniser, bound before memoise_words() replaces tok.words: the
# timed prototypes tokenise as the product does (no cache).
_words = tok.words
memoise_words()

MODES = ("chars", "bigrams", "chars+bigrams", "jieba", "2-shingles")
EN_MODES = ("chars", "2-shingles")  # without CJK the first four are the same units: words
WIDE = ("chars", "bigrams", "chars+bigrams")  # also sketched in 128 bytes (256 bins)
SHOWN_MODE = {"chars": "chars (today)", "2-shingles": "unit 2-shingles"}
EN_SHOWN = {"chars": "words (today)", "2-shingles": "word 2-shingles"}
CHUNK = 20  # a source of few documents is split in chunks of this many passages
FEW_DOCS = 10  # ... when it has fewer documents than this
LINK_K = 12  # documents with passages this near (fingerprints) and ...
LINK_JACCARD = 0.5  # ... this alike (today's unit sets) stay on one side
SENTEDIT = "sentedit"  # reported beside the negatives, not scored (see sentence_edits)
SENTEDIT_SHARE = 0.5  # the share of the text (words; Chinese: characters) in edited sentences
SENTEDIT_WORDS = 0.5  # ... and of each such sentence's words changed
SWEEP = (0.70, 0.75, 0.78, 0.80, 0.82, 0.84, 0.85, 0.86, 0.88, 0.90)
_xxh64 = xxhash.xxh64_intdigest
_U64 = np.uint64


# --- units -----------------------------------------------------------------------------------


def _lone(tokens_: list[str], cjk_chars: list[str]) -> list[str]:
    """CJK characters that are part of no CJK bigram among tokens_."""
    in_bigram = {c for t in tokens_ if len(t) == 2 and tok.has_cjk(t) for c in t}
    return [c for c in cjk_chars if c not in in_bigram]


def _is_cjk_char(t: str) -> bool:
    return len(t) == 1 and tok.has_cjk(t)


def _is_cjk_bigram(t: str) -> bool:
    return len(t) == 2 and tok.has_cjk(t)


def _shingles2(units_: list[str]) -> list[str]:
    if len(units_) < 2:
        return units_
    return [f"{a} {b}" for a, b in zip(units_, units_[1:], strict=False)]


def unit_strings(prepared: str, mode: str, tokens_: list[str] | None = None) -> list[str]:
    """The distinct units of a prepared text, by mode (see the module's text)."""
    if tokens_ is None:
        tokens_ = _words(prepared, "chars")
    if mode == "jieba":
        return list(dict.fromkeys(_words(prepared, "words")))
    if not tok.has_cjk(prepared):
        if mode == "2-shingles":
            return list(dict.fromkeys(_shingles2(tokens_)))
        return list(dict.fromkeys(tokens_))
    if mode == "chars":
        return list(dict.fromkeys(product.units_of(tokens_)))
    if mode == "chars+bigrams":
        return list(dict.fromkeys(tokens_))
    if mode == "bigrams":
        distinct = list(dict.fromkeys(tokens_))
        chars = [t for t in distinct if _is_cjk_char(t)]
        lone = set(_lone(distinct, chars))
        return [t for t in distinct if not _is_cjk_char(t) or t in lone]
    if mode == "2-shingles":
        return list(dict.fromkeys(_shingles2(product.units_of(tokens_))))
    raise ValueError(mode)


def one_pass(text: str, mode: str) -> tuple[int, bytes]:
    """A prototype of fingerprint_and_signature with the signature over mode's
    units: the text prepared and tokenised once, each distinct token hashed once
    for both where the units are tokens (chars, bigrams, chars+bigrams), the
    other units (jieba words, 2-shingles) hashed on their own; the sketch and a
    small text's exact set as simindex.signature makes them."""
    prepared = prepare(text, DEFAULT_CONFIG)
    tokens_ = _words(prepared, "chars")
    counts = Counter(tokens_)
    distinct = list(counts)
    hashes = product.unit_hashes(distinct)
    chosen = features_of_tokens(counts, DEFAULT_CONFIG)
    if len(chosen) == len(distinct):
        weights = np.fromiter(chosen.values(), np.float64, count=len(distinct))
        fingerprint = simhash_of_hashes(hashes, weights)
    else:
        kept = np.fromiter(map(chosen.__contains__, distinct), bool, count=len(distinct))
        weights = np.fromiter(chosen.values(), np.float64, count=len(chosen))
        fingerprint = simhash_of_hashes(hashes[kept], weights)
    cjk = not prepared.isascii() and tok.has_cjk(prepared)
    if mode in ("jieba", "2-shingles") and (cjk or mode == "2-shingles"):
        units_ = unit_strings(prepared, mode, tokens_)
        return fingerprint, product._signature_of(product.unit_hashes(units_))
    if not cjk or mode == "chars+bigrams":
        return fingerprint, product._signature_of(hashes)
    if mode == "chars":
        single = np.fromiter(map(product._single, distinct), bool, count=len(distinct))
        return fingerprint, product._signature_of(hashes[single])
    # bigrams: every token but the CJK characters that are in a bigram
    lone = set(_lone(distinct, [t for t in distinct if _is_cjk_char(t)]))
    keep = np.fromiter((not _is_cjk_char(t) or t in lone for t in distinct), bool, len(distinct))
    return fingerprint, product._signature_of(hashes[keep])


# --- scoring ---------------------------------------------------------------------------------


def score_text(item: tuple[str, str]) -> dict:
    """(lang, text) -> the product's fingerprint and signature; per mode the
    distinct unit hashes (sorted), the 64-byte sketch's 128 values and, for WIDE,
    256 bins' values; the two MinHash baselines (datasketch, 128 permutations:
    quality.py's word 5-shingles / jieba-word 3-shingles of the text as it is,
    and today's unit 3-shingles)."""
    lang, text = item
    out: dict = {"product": product.fingerprint_and_signature(text, DEFAULT_CONFIG)}
    prepared = prepare(text, DEFAULT_CONFIG)
    tokens_ = _words(prepared, "chars")
    modes = MODES if lang == "zh" else EN_MODES
    for mode in modes:
        h = np.unique(product.unit_hashes(unit_strings(prepared, mode, tokens_)))
        out[mode] = h
        out[mode, 128] = product.minhash_values(product.top32(h)).astype(np.uint8)
        if mode in WIDE and lang == "zh":
            out[mode, 256] = product.minhash_values(product.top32(h), 256).astype(np.uint8)
    out["mh"] = out["mh3"] = None
    try:
        from datasketch import MinHash
    except ImportError:
        return out
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.encode("utf-8") for x in shingle_set(text, lang)])
    out["mh"] = m.hashvalues.copy()
    units3 = product.units_of(tokens_)
    sh3 = {" ".join(units3[i : i + 3]) for i in range(max(1, len(units3) - 2))}
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.encode("utf-8") for x in sh3])
    out["mh3"] = m.hashvalues.copy()
    return out


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    inter = len(np.intersect1d(a, b, assume_unique=True))
    union = len(a) + len(b) - inter
    return inter / union if union else 1.0


def rows_for(lang: str) -> dict:
    """label -> (how a pair is scored, threshold grid, fixed threshold or None)."""
    fine = [x / 100 for x in range(101)]
    shown = SHOWN_MODE if lang == "zh" else EN_SHOWN
    rows: dict = {
        f"simindex today (k<={K}, sig>={THRESHOLD:.2f})": ("product", fine, THRESHOLD),
        f"fingerprint alone (k<={K})": ("alone", fine, 0.0),
    }
    for mode in MODES if lang == "zh" else EN_MODES:
        name = shown.get(mode, mode)
        rows[f"k<={K} + sketch64 {name}"] = (("sketch", mode, 128), fine, None)
        if lang == "zh" and mode in WIDE:
            rows[f"k<={K} + sketch128 {name}"] = (("sketch", mode, 256), fine, None)
        rows[f"k<={K} + exact J {name}"] = (("exact", mode), fine, None)
    mgrid = [x / NUM_PERM for x in range(NUM_PERM + 1)]
    classic = "jieba-word 3-shingles" if lang == "zh" else "word 5-shingles"
    rows[f"MinHash 512 B, {classic}"] = ("mh", mgrid, None)
    rows["MinHash 512 B, unit 3-shingles"] = ("mh3", mgrid, None)
    return rows


def pair_scores(pairs, sc: list[dict], how) -> dict[str, np.ndarray]:
    """kind -> the similarity of each pair of that kind under one row (-1: not a
    candidate within k)."""
    out: dict[str, list[float]] = {}
    for _cls, kind, i, j in pairs:
        a, b = sc[i], sc[j]
        near = hamming(a["product"][0], b["product"][0]) <= K
        if how == "product":
            s = product.similarity(a["product"][1], b["product"][1]) if near else -1.0
        elif how == "alone":
            s = 1.0 if near else -1.0
        elif how in ("mh", "mh3"):
            s = float(np.mean(a[how] == b[how])) if a[how] is not None else -1.0
        elif how[0] == "sketch":
            key = how[1], how[2]
            agree = float(np.mean(a[key] == b[key])) if near else -1.0
            s = product.jaccard_from_agreement(agree) if near else -1.0
        else:
            s = _jaccard(a[how[1]], b[how[1]]) if near else -1.0
        out.setdefault(kind, []).append(s)
    return {k: np.array(v) for k, v in out.items()}


def kinds(lang: str) -> tuple[list[str], list[str]]:
    pos = [*POSITIVE, *(HARD_POSITIVE if lang == "zh" else {})]
    return pos, [*NEGATIVE, *HARD_NEGATIVE]


def tune(arr: dict, grid, neg: list[str]) -> float | None:
    """The lowest threshold on grid keeping every negative kind's FP rate <= MAX_FP."""
    for t in grid:
        if all(np.mean(arr[k] >= t) <= MAX_FP for k in neg if k in arr):
            return t
    return None


def summary(arr: dict, t: float | None, lang: str) -> dict:
    pos, neg = kinds(lang)
    if t is None:
        return {"threshold": None, "at": {k: 0.0 for k in arr}, "edits10": 0.0, "all": 0.0}
    at = {k: float(np.mean(arr[k] >= t)) for k in arr}
    main = [k for k in POSITIVE if k in arr]
    worst = max((k for k in neg if k in at), key=lambda k: at[k])
    return {
        "threshold": t,
        "at": at,
        "edits10": float(np.mean(np.concatenate([arr[k] for k in EDITS10]) >= t)),
        "all": float(np.mean(np.concatenate([arr[k] for k in main]) >= t)),
        "worst_fp": at[worst],
        "worst_fp_kind": worst,
    }


def sentence_edits(lang: str, n: int, seed: int, base_extra):
    """build_pairs' extra: build_hard's kinds, and n pairs of SENTEDIT, a passage and
    a copy with sentences (in random order) rewritten until those held
    SENTEDIT_SHARE of it, each with SENTEDIT_WORDS of its words (Chinese: jieba
    words) inserted, deleted or replaced by words drawn uniformly from the 5,000
    commonest: every edited sentence keeps its place and about half its words,
    the others are untouched (about a quarter of the text changed). Neither a
    copy nor a different text: reported, not scored."""

    def extra(pool: list[str], add, pairs: list, counts: dict) -> None:
        base_extra(pool, add, pairs, counts)
        ed = Editor(lang, pool, random.Random(f"{seed}-{lang}-{SENTEDIT}"))
        size = (lambda t: len(t.split())) if lang == "en" else (lambda t: len("".join(t.split())))
        multi = [t for t in pool if len(ed.sentences(t)) >= 2]
        for base in ed.rng.sample(multi, min(n, len(multi))):
            sents = ed.sentences(base)
            total, done = size(base), 0
            for i in ed.rng.sample(range(len(sents)), len(sents)):
                if done >= SENTEDIT_SHARE * total:
                    break
                done += size(sents[i])
                old = sents[i]
                lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
                new = ed.word_edits(old.strip(), SENTEDIT_WORDS, draw=ed.any_word)
                sents[i] = lead + new + trail
            pairs.append(("border", SENTEDIT, add(base), add(ed.spaced(sents))))

    return extra


# --- the split -------------------------------------------------------------------------------


class _Groups:
    """Union-find over document ids."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)


def _documents(src: dict) -> dict[tuple, list[str]]:
    """(source, document) -> its passages in order; a source of fewer than
    FEW_DOCS documents cut into chunks of CHUNK passages."""
    docs: dict[tuple, list[str]] = {}
    for name, units in src.items():
        few = len(units) < FEW_DOCS
        for u, unit in enumerate(units):
            if not few:
                docs[name, u, 0] = unit
                continue
            for c in range(0, len(unit), CHUNK):
                docs[name, u, c] = unit[c : c + CHUNK]
    return {k: v for k, v in docs.items() if v}


def _chars_set(text: str) -> set[str]:
    return set(product.units(prepare(text, DEFAULT_CONFIG)))


def split_sources(src: dict, genre: dict, seed: int) -> tuple[dict, dict, dict, dict, dict]:
    """(tune sources, test sources, tune genre, test genre, stats): documents
    linked (a passage in common, or passages whose fingerprints are within
    LINK_K and whose unit sets have Jaccard >= LINK_JACCARD) are one group,
    and each group goes to one side, drawn with the seed."""
    docs = _documents(src)
    owners: list[tuple] = []
    texts: list[str] = []
    for key, passages in docs.items():
        for p in passages:
            owners.append(key)
            texts.append(p)
    # Same-genre texts join the same groups (a licence is a passage and a copyright file).
    for kind, groups in genre.items():
        for g, group_ in enumerate(groups):
            for t_, text in enumerate(group_):
                owners.append((f"genre:{kind}", g, t_))
                texts.append(text)
    uf = _Groups()
    for key in owners:
        uf.find(key)
    by_text: dict[str, tuple] = {}
    for key, text in zip(owners, texts, strict=True):
        flat = " ".join(text.split())
        if flat in by_text:
            uf.union(key, by_text[flat])
        else:
            by_text[flat] = key
    fps = np.array(
        [product.fingerprint_and_signature(t, DEFAULT_CONFIG)[0] for t in texts], dtype=np.uint64
    )
    a, b, _d = pairs_within(fps, LINK_K)
    linked = 0
    sets: dict[int, set[str]] = {}
    for i, j in zip(a.tolist(), b.tolist(), strict=True):
        if uf.find(owners[i]) == uf.find(owners[j]):
            continue
        si = sets.setdefault(i, _chars_set(texts[i]))
        sj = sets.setdefault(j, _chars_set(texts[j]))
        if len(si & sj) >= LINK_JACCARD * len(si | sj):
            uf.union(owners[i], owners[j])
            linked += 1
    roots = sorted({uf.find(k) for k in owners}, key=repr)
    rng = random.Random(f"{seed}-split")
    side = {r: rng.random() < 0.5 for r in roots}  # True: TEST
    tune_src: dict = {}
    test_src: dict = {}
    for key, passages in docs.items():
        name = key[0]
        (test_src if side[uf.find(key)] else tune_src).setdefault(name, []).append(passages)
    tune_genre: dict = {}
    test_genre: dict = {}
    for kind, groups in genre.items():
        for g, group_ in enumerate(groups):
            for part, want in ((tune_genre, False), (test_genre, True)):
                kept = [
                    t
                    for n, t in enumerate(group_)
                    if side[uf.find((f"genre:{kind}", g, n))] == want
                ]
                if len(kept) >= 2:
                    part.setdefault(kind, []).append(kept)
    sizes = Counter()
    for r in roots:
        sizes[r] = 0
    for key in owners:
        sizes[uf.find(key)] += 1
    stats = {
        "documents": len(docs),
        "groups": len(roots),
        "largest_group_texts": max(sizes.values()) if sizes else 0,
        "near_links": linked,
        "tune_passages": {k: sum(map(len, v)) for k, v in tune_src.items()},
        "test_passages": {k: sum(map(len, v)) for k, v in test_src.items()},
        "tune_genre_texts": {k: sum(map(len, v)) for k, v in tune_genre.items()},
        "test_genre_texts": {k: sum(map(len, v)) for k, v in test_genre.items()},
    }
    return tune_src, test_src, tune_genre, test_genre, stats


# --- speed -----------------------------------------------------------------------------------


def measure_speed(texts: list[str], modes: tuple[str, ...], repeats: int) -> dict:
    """Median seconds of a pass over texts for the product and each mode's
    prototype, passes interleaved (the first method rotating); every prototype's
    'chars' output checked against the product's."""
    same = sum(
        one_pass(t, "chars") == product.fingerprint_and_signature(t, DEFAULT_CONFIG) for t in texts
    )
    for m in modes:  # warm: jieba's dictionary, OpenCC
        one_pass(texts[0], m)
    methods = {"product": lambda t: product.fingerprint_and_signature(t, DEFAULT_CONFIG)}
    methods.update({m: (lambda t, m=m: one_pass(t, m)) for m in modes})
    names = list(methods)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            fn = methods[n]
            t0 = time.perf_counter()
            for t in texts:
                fn(t)
            times[n].append(time.perf_counter() - t0)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    med = {n: median(v) for n, v in times.items()}
    return {
        "texts": len(texts),
        "mb": mb,
        "repeats": repeats,
        "same_as_product": same,
        "median_s": med,
        "mb_s": {n: mb / med[n] for n in names},
        "ratio": {n: med[n] / med["product"] for n in names},
    }


# --- one language ------------------------------------------------------------------------------


def table(lang: str, rows: dict, tuned: dict, test: dict) -> str:
    pos, neg = kinds(lang)
    pos = [k for k in pos if k in next(iter(test.values()))]
    neg = [k for k in neg if k in next(iter(test.values()))]
    head = (
        ["method", "TUNE t", "ed<=10%"]
        + [SHORT[k] for k in pos]
        + ["all"]
        + ["FP " + SHORT[k] for k in neg]
        + ["worst FP", "sedit*"]
    )
    lines = [head]
    for label, (_how, _grid, fixed) in rows.items():
        t = tuned[label]
        s = summary(test[label], t, lang)
        shown = "-" if t is None else (f"{t:.2f}" if fixed is None else f"{t:.2f} fixed")
        if label.startswith("fingerprint alone"):
            shown = f"k<={K}"
        lines.append(
            [label, shown, pct(s["edits10"])]
            + [pct(s["at"].get(k)) for k in pos]
            + [pct(s["all"])]
            + [pct(s["at"].get(k)) for k in neg]
            + [pct(s.get("worst_fp")), pct(s["at"].get(SENTEDIT))]
        )
    return _render(lines)


def _render(lines: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in lines) for c in range(len(lines[0]))]
    out = []
    for n, r in enumerate(lines):
        out.append(
            "  ".join(
                [r[0].ljust(widths[0])]
                + [x.rjust(w) for x, w in zip(r[1:], widths[1:], strict=True)]
            )
        )
        if n == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out)


def sweep_table(lang: str, rows: dict, tune_arr: dict, test_arr: dict) -> str:
    """The two-stage sketch rows at fixed thresholds: worst FP on TUNE and TEST, and
    ed<=10% and all on TEST."""
    _pos, neg = kinds(lang)
    head = ["method", *(f"{t:.2f}" for t in SWEEP)]
    lines = [head]
    for label, (how, _grid, _fixed) in rows.items():
        if not (isinstance(how, tuple) and how[0] == "sketch") and how != "product":
            continue
        cells = []
        for t in SWEEP:
            tu = max(float(np.mean(tune_arr[label][k] >= t)) for k in neg if k in tune_arr[label])
            s = summary(test_arr[label], t, lang)
            sedit = pct(s["at"].get(SENTEDIT))
            cells.append(
                f"{pct(tu)}/{pct(s['worst_fp'])} {pct(s['edits10'])}/{pct(s['all'])} {sedit}"
            )
        lines.append([label.replace(f"k<={K} + ", ""), *cells])
    return _render(lines)


def measure_lang(lang: str, args: argparse.Namespace, status: dict) -> dict:
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    log(f"{lang}: sources")
    src = read_sources(lang, status)
    genre = hard_sources(lang, status)
    if not src:
        return {"error": "no source could be read"}
    tune_src, test_src, tune_genre, test_genre, split = split_sources(src, genre, args.seed)
    log(f"{lang}: split {split}")
    parts = {}
    for part, s_src, s_genre, seed in (
        ("TUNE", tune_src, tune_genre, args.seed + 1),
        ("TEST", test_src, test_genre, args.seed),
    ):
        pairs, texts, counts = build_pairs(
            lang,
            s_src,
            n,
            n_random,
            pool,
            seed,
            extra=sentence_edits(lang, n, seed, build_hard(lang, n, seed, s_genre)),
        )
        log(f"{lang} {part}: {len(pairs)} pairs, {len(texts)} texts to score")
        sc = score_all([(lang, t) for t in texts], args.workers, score_text)
        parts[part] = (pairs, texts, sc, counts)
    rows = rows_for(lang)
    arrs = {
        part: {label: pair_scores(p[0], p[2], how) for label, (how, _g, _f) in rows.items()}
        for part, p in parts.items()
    }
    _pos, neg = kinds(lang)
    tuned = {}
    own = {}
    for label, (_how, grid, fixed) in rows.items():
        tuned[label] = fixed if fixed is not None else tune(arrs["TUNE"][label], grid, neg)
        own[label] = fixed if fixed is not None else tune(arrs["TEST"][label], grid, neg)
    results = {label: summary(arrs["TEST"][label], tuned[label], lang) for label in rows}
    test_texts = [t for t in parts["TEST"][1] if len(t) >= 100]
    rng = random.Random(f"{args.seed}-{lang}-speed")
    sample = rng.sample(test_texts, min(args.speed_texts, len(test_texts)))
    log(f"{lang}: timing {len(sample)} passages")
    speed = measure_speed(sample, MODES if lang == "zh" else EN_MODES, args.repeats)
    return {
        "split": split,
        "pairs": {part: dict(Counter(k for _c, k, _i, _j in p[0])) for part, p in parts.items()},
        "tuned": tuned,
        "own": own,
        "results": results,
        "table": table(lang, rows, tuned, arrs["TEST"]),
        "sweep": sweep_table(lang, rows, arrs["TUNE"], arrs["TEST"]),
        "speed": speed,
    }


def measure(args: argparse.Namespace) -> int:
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    status: dict = {}
    out: dict = {"seed": args.seed, "languages": {}}
    for lang in args.lang.split(","):
        out["languages"][lang] = measure_lang(lang, args, status)
        log(f"{lang}: done at {time.perf_counter() - t0:.0f} s")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["fetch"] = status
    if args.json:
        for r in out["languages"].values():
            r.get("results", {}).clear()
        print_json(out)
        return 0
    print(
        f"CJK verification units: the harder benchmark split by source document (seed "
        f"{args.seed}); thresholds tuned on TUNE (pairs of seed {args.seed + 1}), reported on "
        f"TEST (seed {args.seed}); {out['seconds']} s"
    )
    for name, st in status.items():
        print(f"  {name}: {st}")
    for lang, r in out["languages"].items():
        print()
        print(f"== {lang} ==")
        if "error" in r:
            print(r["error"])
            continue
        sp = r["split"]
        print(
            f"  split: {sp['documents']} documents in {sp['groups']} groups (largest "
            f"{sp['largest_group_texts']} texts; {sp['near_links']} near-duplicate links)"
        )
        for part in ("tune", "test"):
            print(
                f"  {part.upper()}: passages "
                + ", ".join(f"{k} {v}" for k, v in sp[f"{part}_passages"].items())
                + "; same-genre texts "
                + ", ".join(f"{k} {v}" for k, v in sp[f"{part}_genre_texts"].items())
            )
        for part, p in r["pairs"].items():
            print(f"  {part} pairs: " + ", ".join(f"{SHORT.get(k, k)} {v}" for k, v in p.items()))
        print()
        print(r["table"])
        print()
        print(
            "TEST, percent of pairs kept. TUNE t: the lowest threshold keeping every negative "
            "kind's FP rate <= 1% on TUNE (fixed: simindex's default). ed<=10%: the 2, 5 and "
            "10% word edits together; all: the positive kinds of the main run (not zhsp, trad). "
            f"Two-stage rows: candidates within k = {K} of DEFAULT_CONFIG's fingerprint kept "
            "when the similarity reaches the threshold; sketch64: simindex.signature's 64-byte "
            "sketch (128 bins x 4 bits) over those units, sketch128: 256 bins; exact J: the "
            "units' exact Jaccard (the ceiling). MinHash rows: alone (no k stage), datasketch. "
            f"sedit*: {SENTEDIT}, half the text in sentences each with half its words "
            "rewritten, kept (reported, not scored: neither a copy nor another text)."
        )
        print(
            "  the threshold TEST's own pairs would choose: "
            + ", ".join(
                f"{lbl.replace(f'k<={K} + ', '')} {t:.2f}"
                for lbl, t in r["own"].items()
                if t is not None
                and lbl in r["tuned"]
                and r["tuned"][lbl] is not None
                and "fixed" not in lbl
            )
        )
        print()
        print(
            "At fixed thresholds: worst negative kind's FP on TUNE / on TEST, then ed<=10% / all "
            f"on TEST, then {SENTEDIT} kept on TEST"
        )
        print(r["sweep"])
        s = r["speed"]
        print()
        print(
            f"Fingerprint and signature in one pass, {s['texts']} TEST passages "
            f"({s['mb']:.2f} MB), median of {s['repeats']} interleaved passes; the 'chars' "
            f"prototype equals the product for {s['same_as_product']} of {s['texts']}"
        )
        for name in s["median_s"]:
            print(
                f"  {name:<14} {1000 * s['median_s'][name]:8.1f} ms  {s['mb_s'][name]:6.2f} MB/s  "
                f"x{s['ratio'][name]:.2f} of the product's time"
            )
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small samples: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the tables")
    ap.add_argument("--n", type=int, help="pairs of each positive kind (default 500; --quick 40)")
    ap.add_argument("--random", type=int, help="random negative pairs (default 10000)")
    ap.add_argument("--pool", type=int, help="passages per language and part (default 3000)")
    ap.add_argument("--lang", default="en,zh", help="languages, comma-separated (en,zh)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1, help="the split's and TEST's seed (TUNE: +1)")
    ap.add_argument("--speed-texts", type=int, default=300, help="passages timed (default 300)")
    ap.add_argument("--repeats", type=int, default=11, help="timed passes (default 11)")
    output_options(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.speed_texts, args.repeats = min(args.speed_texts, 40), min(args.repeats, 3)
    return save_output("experiments/cjk_units", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
