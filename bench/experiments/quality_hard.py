#!/usr/bin/env python
"""The harder quality benchmark: which verification signature separates the
near-duplicates a user meets from the texts that only look alike?

    python bench/experiments/quality_hard.py           # about 8 minutes on 2 cores
    python bench/experiments/quality_hard.py --quick   # a smoke run (the cache filled)
    python bench/experiments/quality_hard.py --json    # JSON on stdout instead of the tables

bench/quality.py's pairs (the same sources, cache and edits, built by
bench/data.py) and more negative kinds, as a user meets them (half-rewritten
copies made by mixed operations, same-genre texts: licences, manual pages,
templates), two Chinese positive kinds (spacing for punctuation, Traditional
script), and two-stage methods: the default's candidates within k = 8, kept
when a verification signature's estimate (bench/experiments/sketches.py)
reaches a threshold. simindex at its defaults, the fingerprint alone, MinHash
and the exact similarities are rows beside them. Thresholds are tuned on one
seed's pairs (--tune-seed) and reported on another's (--seed). Written to
bench/results/experiments/quality_hard.txt; what it decided:
docs/decisions/verification-signatures.md.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE), str(HERE.parent), str(HERE.parent.parent)):  # sketches, common, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
import sketches as sg  # noqa: E402
from common import log, output_options, pct, print_json, save_output  # noqa: E402
from data import (  # noqa: E402
    CACHE,
    EDITS10,
    HARD_NEGATIVE,
    HARD_POSITIVE,
    MAX_FP,
    NEGATIVE,
    NUM_PERM,
    POSITIVE,
    PRODUCT,
    SHORT,
    SHOWN,
    THRESHOLD,
    K,
    build_hard,
    build_pairs,
    cosine,
    hard_sources,
    memoise_words,
    read_sources,
    score_all,
    shingle_set,
)

import simindex.tokenize as tok  # noqa: E402
from simindex import signature as product_signature  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, features, hamming, prepare, simhash  # noqa: E402

memoise_words()

# The exact shingle-set similarities reported (ceilings): (units, n); see
# simindex.signature.units_of ("bigrams": words and CJK bigrams).
EXACT_N = (
    ("chars", 1),
    ("chars", 2),
    ("chars", 3),
    ("chars", 5),
    ("bigrams", 1),
    ("content", 1),
)
# The fingerprint before the Chinese normalisation became the default (CJK gaps kept,
# the script as it is), and with the gaps folded but no t2s: what each step changes.
AS_IS = "default before CJK normalisation"
FOLD = "CJK gaps folded, no t2s"
RECOMMENDED = "minhash128x4/1"  # the signature simindex keeps (simindex.signature.NAME)
FIXED_THRESHOLDS = (0.75, 0.78, 0.80, 0.82)  # RECOMMENDED also at these, in both languages
CONTENT = "minhash128x4/1s"  # the same sketch without stop words: at 0.78 and 0.80 too
CONTENT_THRESHOLDS = (0.78, 0.80)


HARD_METHODS = {  # label -> the fingerprint configuration
    "default": DEFAULT_CONFIG,
    AS_IS: replace(DEFAULT_CONFIG, cjk_gaps="kept", script="as-is"),
    FOLD: replace(DEFAULT_CONFIG, script="as-is"),
}


def score_hard(item: tuple[str, str]) -> dict:
    """(lang, text) -> what the --hard rows compare: the fingerprints (HARD_METHODS),
    the product's fingerprint and signature at its defaults
    (simindex.signature.fingerprint_and_signature), every signature of
    bench/experiments/sketches.py and the exact unit shingle sets (all over the text as
    DEFAULT_CONFIG prepares it: CJK gaps folded, Traditional made Simplified, as the
    product reads it), RECOMMENDED over the text as it is (the rows before the
    normalisation), and the two MinHash baselines (datasketch, 128 permutations: word
    5-shingles / jieba 3-shingles of the text as it is, as in the main run, and the
    signatures' own unit 3-shingles)."""
    lang, text = item
    out: dict = {"fp": {}, "sig": {}}
    for label, cfg in HARD_METHODS.items():
        try:
            out["fp"][label] = simhash(text, cfg)
        except ImportError:  # no opencc: the t2s rows are left out
            out["fp"][label] = None
    try:
        out["product"] = product_signature.fingerprint_and_signature(text, DEFAULT_CONFIG)
    except ImportError:
        out["product"] = None
    try:
        prepared = prepare(text, DEFAULT_CONFIG)
    except ImportError:
        prepared = text
    toks = tok.words(prepared, "chars")
    unit_lists = {m: sg.units_of(toks, m) for m in sg.UNITS}
    keys = {(s.units, s.n) for s in sg.SIGNATURES.values()} | set(EXACT_N)
    hashes = {key: sg.shingle_hashes(unit_lists[key[0]], key[1]) for key in keys}
    feats = features(prepared, DEFAULT_CONFIG)
    for name, s in sg.SIGNATURES.items():
        if s.make_features is not None:
            out["sig"][name] = s.make_features(feats)
        else:
            out["sig"][name] = s.make(hashes[s.units, s.n])
    out["h"] = {key: np.unique(hashes[key]) for key in EXACT_N}
    out["feats"] = dict(feats)
    rec = sg.SIGNATURES[RECOMMENDED]
    out["sig_as_is"] = rec.make(sg.shingle_hashes(sg.units(text, rec.units), rec.n))
    out["mh5"] = out["mh3"] = None
    try:
        from datasketch import MinHash
    except ImportError:
        return out
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.encode("utf-8") for x in shingle_set(text, lang)])
    out["mh5"] = m.hashvalues.copy()
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.tobytes() for x in out["h"]["chars", 3]])
    out["mh3"] = m.hashvalues.copy()
    return out


def _exact_arrays(a: np.ndarray, b: np.ndarray, how: str) -> float:
    inter = len(np.intersect1d(a, b, assume_unique=True))
    if how == "jaccard":
        union = len(a) + len(b) - inter
        return inter / union if union else 1.0
    return inter / math.sqrt(len(a) * len(b)) if len(a) and len(b) else 0.0


# A row: label -> (similarity(i, j), threshold grid, fixed threshold or None, what it is).
# A similarity is higher for nearer pairs; a distance row's is minus the distance.


def _distance(sc: list[dict], label: str):
    def d(i: int, j: int) -> float:
        a, b = sc[i]["fp"][label], sc[j]["fp"][label]
        return -float(hamming(a, b)) if a is not None and b is not None else -65.0

    return d


def _exact(sc: list[dict], key: tuple[str, int], how: str):
    return lambda i, j: _exact_arrays(sc[i]["h"][key], sc[j]["h"][key], how)


def _tf_cosine(sc: list[dict]):
    return lambda i, j: cosine(sc[i]["feats"], sc[j]["feats"])


def _named(key: tuple[str, int]) -> str:
    return f"{key[1]}{ {'chars': '', 'bigrams': 'w', 'content': 's'}[key[0]] }"


def _what(key: tuple[str, int]) -> str:
    cjk = "CJK bigrams" if key[0] == "bigrams" else "CJK characters"
    stop = ", stop words dropped" if key[0] == "content" else ""
    return f"unit {key[1]}-shingle sets (units: words, {cjk}{stop})"


def _two_stage(sc: list[dict], sim, k: int = K):
    """Candidates within k of the default fingerprint, then sim."""
    base = _distance(sc, "default")
    return lambda i, j: sim(i, j) if base(i, j) >= -k else -1.0


def fingerprint_rows(lang: str, sc: list[dict]) -> dict:
    """The product, the fingerprint alone (and, in Chinese, before each step of
    the normalisation), and MinHash."""
    rows: dict = {}
    dist = partial(_distance, sc)
    dgrid = [-float(k_) for k_ in range(64, -1, -1)]
    fine = [x / 100 for x in range(101)]
    if sc[0]["product"] is not None:

        def product(i: int, j: int) -> float:
            (fa, sa), (fb, sb) = sc[i]["product"], sc[j]["product"]
            near = hamming(fa, fb) <= K or product_signature.meets(sa, sb) is not None
            return product_signature.similarity(sa, sb) if near else -1.0

        rows[SHOWN[PRODUCT]] = (
            product,
            fine,
            THRESHOLD,
            "simindex as it ships: candidates within k = 8 of DEFAULT_CONFIG's fingerprint "
            "or whose signatures' keys meet (simindex.signature.meets), "
            f"kept when simindex.signature.similarity >= {THRESHOLD:.2f} (both from "
            "simindex.signature.fingerprint_and_signature)",
        )
    rows["default k<=8"] = (
        dist("default"),
        dgrid,
        -float(K),
        "the fingerprint alone (DEFAULT_CONFIG), k = 8",
    )
    rows["default best k"] = (dist("default"), dgrid, None, "the fingerprint alone, tuned k")
    if lang == "zh":
        rows[f"{AS_IS} k<=8"] = (
            dist(AS_IS),
            dgrid,
            -float(K),
            "the fingerprint alone, CJK gaps kept and the script as it is (the default "
            "before the normalisation)",
        )
        rows[f"{FOLD} k<=8"] = (dist(FOLD), dgrid, -float(K), "gaps folded, Traditional kept")
    if sc[0]["mh5"] is not None:
        mgrid = [x / NUM_PERM for x in range(NUM_PERM + 1)]

        def mh(key: str):
            return lambda i, j: float(np.mean(sc[i][key] == sc[j][key]))

        shingles = "jieba-word 3-shingles" if lang == "zh" else "word 5-shingles"
        rows["minhash128 (5-sh)"] = (mh("mh5"), mgrid, None, f"datasketch, {shingles}")
        rows["minhash128 (3-sh)"] = (mh("mh3"), mgrid, None, "datasketch, the unit 3-shingles")
    return rows


def ceiling_rows(sc: list[dict]) -> dict:
    """The exact similarities each family estimates."""
    rows: dict = {}
    grid = [x / 1000 for x in range(1001)]
    exact, named, what = partial(_exact, sc), _named, _what
    tf_cosine = _tf_cosine(sc)
    for key in EXACT_N:
        rows[f"jaccard{named(key)} (exact)"] = (
            exact(key, "jaccard"),
            grid,
            None,
            f"ceiling: the Jaccard of the {what(key)}",
        )
    rows["cosine3 (exact)"] = (
        exact(("chars", 3), "cosine"),
        grid,
        None,
        "ceiling: the cosine of the unit 3-shingle sets",
    )
    rows["tf-cosine (exact)"] = (
        tf_cosine,
        grid,
        None,
        "ceiling: the cosine of the default's weighted features (what Simhash estimates)",
    )
    return rows


def two_stage_rows(lang: str, sc: list[dict]) -> dict:
    """Candidates within k = 8 (or 10), verified by each exact similarity and by
    each signature of sketches.py, some at fixed thresholds."""
    rows: dict = {}
    fine = [x / 100 for x in range(101)]
    exact, named, what = partial(_exact, sc), _named, _what
    tf_cosine = _tf_cosine(sc)
    dist = partial(_distance, sc)
    two_stage = partial(_two_stage, sc)

    for key in EXACT_N:
        rows[f"k<=8 + jaccard{named(key)} (exact)"] = (
            two_stage(exact(key, "jaccard")),
            fine,
            None,
            f"ceiling of a two-stage row verifying with the Jaccard of the {what(key)}",
        )
    rows["k<=8 + tf-cosine (exact)"] = (
        two_stage(tf_cosine),
        fine,
        None,
        "ceiling of a two-stage row verifying with the default's weighted cosine",
    )
    for name, s in sg.SIGNATURES.items():
        rows[f"k<=8 + {name}"] = (
            two_stage(
                lambda i, j, s=s, name=name: s.similarity(sc[i]["sig"][name], sc[j]["sig"][name])
            ),
            fine,
            None,
            f"{s.nbytes} bytes, estimates the {s.estimates}",
        )
    s = sg.SIGNATURES[RECOMMENDED]
    for t in FIXED_THRESHOLDS:
        rows[f"k<=8 + {RECOMMENDED} at {t:.2f}"] = (
            rows[f"k<=8 + {RECOMMENDED}"][0],
            fine,
            t,
            "the same, at a threshold fixed for both languages",
        )
    for t in CONTENT_THRESHOLDS:
        rows[f"k<=8 + {CONTENT} at {t:.2f}"] = (
            rows[f"k<=8 + {CONTENT}"][0],
            fine,
            t,
            "the same, at a threshold fixed for both languages",
        )
    # What a larger k would add (a query at k = 10 reads far more candidate rows: docs/speed.md).
    rec = sg.SIGNATURES[RECOMMENDED]
    rows[f"k<=10 + {RECOMMENDED}"] = (
        two_stage(
            lambda i, j: rec.similarity(sc[i]["sig"][RECOMMENDED], sc[j]["sig"][RECOMMENDED]), 10
        ),
        fine,
        None,
        "candidates within k = 10 instead of 8",
    )
    rows["k<=10 + jaccard1 (exact)"] = (
        two_stage(exact(("chars", 1), "jaccard"), 10),
        fine,
        None,
        "its ceiling",
    )
    if lang == "zh":
        before = dist(AS_IS)

        def as_is(i: int, j: int) -> float:
            if before(i, j) < -K:
                return -1.0
            return rec.similarity(sc[i]["sig_as_is"], sc[j]["sig_as_is"])

        rows[f"{AS_IS}, k<=8 + {RECOMMENDED} at {THRESHOLD:.2f}"] = (
            as_is,
            fine,
            THRESHOLD,
            "the two stages on the text as it is (no CJK normalisation in either)",
        )
    return rows


def hard_rows(lang: str, sc: list[dict]) -> dict:
    """Every row, in the order the table shows them."""
    return {**fingerprint_rows(lang, sc), **ceiling_rows(sc), **two_stage_rows(lang, sc)}


def hard_kinds() -> tuple[list[str], list[str]]:
    return [*POSITIVE, *HARD_POSITIVE], [*NEGATIVE, *HARD_NEGATIVE]


def hard_scores(pairs, rows: dict) -> dict:
    """label -> kind -> the similarity of every pair of that kind."""
    pos, neg = hard_kinds()
    out = {}
    for label, (sim, _grid, _fixed, _what) in rows.items():
        d: dict[str, list[float]] = {}
        for _cls, kind, i, j in pairs:
            if kind in pos or kind in neg:
                d.setdefault(kind, []).append(sim(i, j))
        out[label] = {k: np.array(v) for k, v in d.items()}
    return out


def tune(arr: dict, grid) -> float | None:
    """The lowest threshold on grid keeping every negative kind's FP rate <= 1%."""
    _pos, neg = hard_kinds()
    for t in grid:
        if all(np.mean(arr[k] >= t) <= MAX_FP for k in neg if k in arr):
            return t
    return None


def hard_summary(arr: dict, t: float | None) -> dict:
    pos, neg = hard_kinds()
    rate = (lambda x: float(np.mean(x >= t))) if t is not None else (lambda x: 0.0)
    at = {k: rate(arr[k]) for k in arr}
    main_pos = [k for k in POSITIVE if k in arr]
    return {
        "threshold": t,
        "at": at,
        "edits10": float(np.mean(np.concatenate([arr[k] for k in EDITS10 if k in arr]) >= t))
        if t is not None
        else 0.0,
        "all": float(np.mean(np.concatenate([arr[k] for k in main_pos]) >= t))
        if t is not None
        else 0.0,
        "worst_fp": max((at[k] for k in neg if k in at), default=0.0),
        "worst_fp_kind": max((k for k in neg if k in at), key=lambda k: at[k], default=None),
    }


def shown_threshold(label: str, t: float | None) -> str:
    if t is None:
        return "-"
    if t <= 0 and ("k<=" in label or "best k" in label):
        return f"k<={-t:.0f}"
    return f">={t:.3f}" if "exact" in label and "+" not in label else f">={t:.2f}"


def hard_table(lang: str, tuned: dict, report: dict, rows: dict, tune_seed: int, seed: int):
    pos, neg = hard_kinds()
    pos = [k for k in pos if any(k in report[r]["tuned"]["at"] for r in report)]
    neg = [k for k in neg if any(k in report[r]["tuned"]["at"] for r in report)]
    head = (
        ["method", "ed<=10%"]
        + [SHORT[k] for k in pos]
        + ["all"]
        + ["FP " + SHORT[k] for k in neg]
        + ["worst FP", f"threshold (seed {tune_seed})", f"own ({seed}): recall"]
    )
    lines_ = [head]
    for label in rows:
        r = report[label]["tuned"]
        own = report[label]["own"]
        lines_.append(
            [label, pct(r["edits10"])]
            + [pct(r["at"].get(k)) for k in pos]
            + [pct(r["all"])]
            + [pct(r["at"].get(k)) for k in neg]
            + [pct(r["worst_fp"]), shown_threshold(label, r["threshold"])]
            + [f"{shown_threshold(label, own['threshold'])}: {pct(own['all'])}"]
        )
    widths = [max(len(row[c]) for row in lines_) for c in range(len(head))]
    out = []
    for n_, row in enumerate(lines_):
        out.append(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)]
            )
        )
        if n_ == 0:
            out.append("-" * len(out[0]))
    out.append("")
    out.append(
        f"Percent of pairs kept, seed {seed}, every threshold tuned on seed {tune_seed}'s pairs "
        "(the lowest on its grid keeping every negative kind's FP rate <= 1% there), except "
        "the rows that name theirs (k<=8, 'at t'). ed<=10%: the 2, 5 and 10% word edits "
        "together; all: the positive kinds of the main run (not zhsp, trad). own: the "
        f"threshold seed {seed}'s own pairs would choose, and all positives there. Two-stage rows: "
        "candidates within k = 8 of the default fingerprint, kept when the signature's "
        "estimate reaches the threshold."
    )
    for label, (_sim, _g, _f, what) in rows.items():
        out.append(f"  {label}: {what}")
    return "\n".join(out)


def measure_hard(args: argparse.Namespace) -> int:
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    tune_seed = args.tune_seed if args.tune_seed is not None else args.seed + 1
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    status: dict = {}
    out: dict = {"seed": args.seed, "tune_seed": tune_seed, "n_per_kind": n, "languages": {}}
    for lang in args.lang.split(","):
        log(f"{lang}: sources")
        src = read_sources(lang, status)
        genre = hard_sources(lang, status)
        if not src:
            out["languages"][lang] = {"error": "no source could be read"}
            continue
        cache: dict[str, dict] = {}
        results = {}
        for which, s_ in (("tuned", tune_seed), ("report", args.seed)):
            pairs, texts, counts = build_pairs(
                lang, src, n, n_random, pool, s_, extra=build_hard(lang, n, s_, genre)
            )
            todo = [t for t in texts if t not in cache]
            log(f"{lang} seed {s_}: {len(pairs)} pairs, {len(todo)} new texts to score")
            for t, r in zip(
                todo, score_all([(lang, t) for t in todo], args.workers, score_hard), strict=True
            ):
                cache[t] = r
            sc = [cache[t] for t in texts]
            # The product's fingerprint and signature beside the rows' own: the
            # "default" fingerprint and the RECOMMENDED sketch over the prepared text.
            check = [r for r in sc if r["product"] is not None]
            same = {
                "texts": len(check),
                "fingerprint": sum(r["product"][0] == r["fp"]["default"] for r in check),
                "signature": sum(r["product"][1] == r["sig"][RECOMMENDED] for r in check),
            }
            rows = hard_rows(lang, sc)
            results[which] = (
                hard_scores(pairs, rows),
                rows,
                {**counts, "_product_same_as_rows": same} if which == "report" else counts,
                Counter(k for _c, k, _i, _j in pairs),
            )
            log(f"{lang} seed {s_}: scored at {time.perf_counter() - t0:.0f} s")
        tuned_scores, rows, _c, _n = results["tuned"]
        report_scores, _rows, counts, n_pairs = results["report"]
        report = {}
        for label, (_sim, grid, fixed, _what) in rows.items():
            t = fixed if fixed is not None else tune(tuned_scores[label], grid)
            own = fixed if fixed is not None else tune(report_scores[label], grid)
            report[label] = {
                "tuned": hard_summary(report_scores[label], t),
                "own": hard_summary(report_scores[label], own),
            }
        out["languages"][lang] = {
            "pairs": dict(n_pairs),
            "counts": {k: v for k, v in counts.items() if k.startswith("_")},
            "results": report,
            "table": hard_table(lang, tuned_scores, report, rows, tune_seed, args.seed),
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["fetch"] = status
    if args.json:
        print_json(out)
        return 0
    print(
        f"simindex quality --hard: seed {args.seed} reported, thresholds tuned on seed "
        f"{tune_seed}; {n} pairs of each positive kind, {2 * n} of each negative kind "
        f"({n_random} random); {out['seconds']} s"
    )
    for name, st in status.items():
        print(f"  {name}: {st}")
    for lang, r in out["languages"].items():
        print()
        print(f"== {lang} ==")
        if "error" in r:
            print(r["error"])
            continue
        print("  pairs: " + ", ".join(f"{SHORT.get(k, k)} {v}" for k, v in r["pairs"].items()))
        same = r["counts"].pop("_product_same_as_rows")
        print("  " + ", ".join(f"{k.strip('_')} {v}" for k, v in r["counts"].items()))
        print(
            f"  of the {same['texts']} texts of seed {args.seed}, the product's fingerprint "
            f"(simindex.signature.fingerprint_and_signature, DEFAULT_CONFIG) equals the "
            f"'default' row's for {same['fingerprint']}, its signature the "
            f"'{RECOMMENDED}' rows' (bench/experiments/sketches.py over the prepared text) for "
            f"{same['signature']}"
        )
        print()
        print(r["table"])
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small samples: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the tables")
    ap.add_argument("--n", type=int, help="pairs of each positive kind (default 500; --quick 40)")
    ap.add_argument("--random", type=int, help="random negative pairs (default 10000)")
    ap.add_argument("--pool", type=int, help="passages per language (default 3000)")
    ap.add_argument("--lang", default="en,zh", help="languages, comma-separated (en,zh)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--tune-seed",
        type=int,
        help="the seed whose pairs tune the thresholds (default: --seed + 1)",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("experiments/quality_hard", args, lambda: measure_hard(args))


if __name__ == "__main__":
    sys.exit(main())
