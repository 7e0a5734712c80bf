#!/usr/bin/env python
"""More fingerprint bits to verify candidates: a one-off measurement.

    python bench/experiments/verify_bits.py            # both languages: about 80 s, 2 cores
    python bench/experiments/verify_bits.py --quick    # 40 pairs of each kind: about 25 s
    python bench/experiments/verify_bits.py --json     # JSON on stdout instead of the tables
    python bench/experiments/verify_bits.py --no-save  # print only
                          # (else bench/results/experiments/verify_bits.txt)

An index keeps a text's 64-bit Simhash and nothing else, so a verification
stage that needs the texts (bench/quality.py's `default+verify` row: the exact
cosine of the weighted features) is not open to it. What it could keep is more
fingerprint bits: a second, longer Simhash over the same weighted features,
stored beside the indexed 64 and read only to check the candidates. This
script measures what that buys, against MinHash on the same pairs.

It builds bench/quality.py's pairs (same sources, cache, seed and sizes, the
natural pairs included) and, per text:

- the 64 indexed bits: DEFAULT_CONFIG's Simhash, as simindex computes it;
- B = 64, 128 or 256 extra bits: B/64 more Simhash words over the same weighted
  features (simindex.fingerprint.features(text, DEFAULT_CONFIG)), word s hashing
  each feature with xxh64 at seed s (s = 1 .. B/64; simindex uses seed 0) and
  voting as simindex does (a bit is 1 where the +w/-w votes sum to more than 0).
  The votes are computed here for seeds 0 .. 4, and the seed-0 word is checked
  equal to simhash(text, DEFAULT_CONFIG) on every text (the run stops if not).

A pair is a candidate when its 64-bit distance is <= R (R = 8, 10, 12: the
index lookup), and a candidate is kept when its estimate is <= t:

- `extra`: the distance over the B extra bits, d_B / B;
- `64+extra`: the distance over all 64 + B bits, (d_64 + d_B) / (64 + B).

t is tuned as bench/quality.py tunes MinHash's threshold: on the grid of the
values the estimate can take (multiples of 1/B or 1/(64+B)), the largest t
keeping every negative kind's false-positive rate <= 1%, which is the most
recall that constraint allows. `none` rows are the lookup alone (t = 1).
MinHash (datasketch, 128 permutations, its own threshold), the default at
k = 8 and `default+verify` come from the evaluate() quality.py runs (bench/data.py), on
the same pairs and texts (this script narrows data.METHODS to the default
alone, so that evaluate() and score() compute only what is compared here).

Nothing in simindex is changed. Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import xxhash

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # common.py, data.py

import common  # noqa: E402
import data  # noqa: E402
from common import print_json  # noqa: E402

from simindex.fingerprint import DEFAULT_CONFIG  # noqa: E402

# evaluate() and score() walk data.METHODS: the default alone is what is compared
# here (quality.py's own run scores eight configurations).
data.METHODS = {"default": DEFAULT_CONFIG}
data.memoise_words()  # each text segmented once for every row, as quality.py does

RADII = (8, 10, 12)  # the 64-bit lookup: a candidate is within R
EXTRA = (64, 128, 256)  # extra bits stored beside the indexed 64
WORDS = 1 + max(EXTRA) // 64  # Simhash words per text: seed 0 (the indexed one), then 1..4
ESTIMATES = ("none", "extra", "64+extra")

_xxh64 = xxhash.xxh64_intdigest
_HASHES: dict[str, tuple[int, ...]] = {}  # per process: feature -> its WORDS hashes


def simhash_words(weighted: dict[str, int]) -> np.ndarray:
    """WORDS 64-bit Simhash words of weighted features, word s from xxh64 at seed s.

    simindex's rule: bit j of word s is 1 where the weights of the features whose
    seed-s hash has bit j set sum to more than half of all the weights (the +w/-w
    votes sum to more than 0). Word 0 is simindex.fingerprint.simhash_weighted's."""
    rows = []
    for f in weighted:
        h = _HASHES.get(f)
        if h is None:
            b = f.encode("utf-8", "surrogatepass")  # as simindex.fingerprint.feature_hash
            h = _HASHES[f] = tuple(_xxh64(b, seed=s) for s in range(WORDS))
        rows.append(h)
    hashes = np.array(rows, dtype="<u8")  # (features, WORDS)
    bits = np.unpackbits(
        hashes.view(np.uint8).reshape(len(rows), 8 * WORDS), axis=1, bitorder="little"
    )  # bits[i, 64 s + j]: bit j of feature i's seed-s hash
    w = np.fromiter(weighted.values(), dtype=np.float64, count=len(rows))
    positive = 2 * (w @ bits) > w.sum()  # whole-number weights: exact sums
    return np.packbits(positive, bitorder="little").view("<u8")


def score(item: tuple[str, str]):
    """data.score (the default's fingerprint, the MinHash signature, the weighted
    features) and the WORDS Simhash words of the same features."""
    fps, sig, feats, _shingles = data.score(item)
    return fps, sig, feats, simhash_words(feats)


def popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return np.unpackbits(x.view(np.uint8), axis=-1).reshape(*x.shape, 64).sum(-1)


def rates(kinds: np.ndarray, keep: np.ndarray) -> dict[str, float]:
    """kind -> the share of its pairs kept."""
    out = {}
    for k in (*data.POSITIVE, *data.NEGATIVE, *data.BORDERLINE, *data.NATURAL):
        m = kinds == k
        if m.any():
            out[k] = float(keep[m].mean())
    return out


def summarise(kinds: np.ndarray, keep: np.ndarray) -> dict:
    pos = np.isin(kinds, list(data.POSITIVE))
    at = rates(kinds, keep)
    worst = max((at[k], k) for k in data.NEGATIVE if k in at)
    nat = {k: int(keep[kinds == k].sum()) for k in ("nat+", "nat-")}
    return {
        "recall": float(keep[pos].mean()),
        "edit10": at.get("edit10"),
        "worst_fp": worst[0],
        "worst_kind": worst[1],
        "natural_kept": nat,
        "per_kind": at,
    }


def verify_bits(pairs, words: np.ndarray) -> list[dict]:
    """Every (R, B, estimate) setting, its threshold and its figures."""
    kinds = np.array([kind for _c, kind, _i, _j in pairs])
    i = np.array([p[2] for p in pairs])
    j = np.array([p[3] for p in pairs])
    diff = popcount(words[i] ^ words[j])  # (pairs, WORDS) distances per word
    d64 = diff[:, 0]
    neg = [kinds == k for k in data.NEGATIVE if (kinds == k).any()]
    out = []
    for r in RADII:
        cand = d64 <= r
        out.append({"R": r, "B": 0, "estimate": "none", "t": None, **summarise(kinds, cand)})
        for b in EXTRA:
            d_b = diff[:, 1 : 1 + b // 64].sum(axis=1)
            for est, dist, bits in (("extra", d_b, b), ("64+extra", d64 + d_b, 64 + b)):
                # The largest whole distance k (t = k / bits) keeping every negative
                # kind's false-positive rate <= 1% among the candidates.
                best = None
                for k in range(bits + 1):
                    keep = cand & (dist <= k)
                    if all(keep[m].mean() <= data.MAX_FP for m in neg):
                        best = k
                    else:
                        break  # the rates only grow with k
                keep = cand & (dist <= (-1 if best is None else best))
                out.append(
                    {
                        "R": r,
                        "B": b,
                        "estimate": est,
                        "t": None if best is None else best / bits,
                        "t_shown": "-" if best is None else f"<={best}/{bits}",
                        **summarise(kinds, keep),
                    }
                )
    return out


def reference(res: dict, n_pairs: Counter) -> dict[str, dict]:
    """MinHash, the default at k=8 and default+verify, from data.evaluate()."""
    out = {}
    for label, key, rec, shown in (
        (data.BASELINE, "at_best", "recall_best", None),
        (f"default k={data.K}", "at_default_k", "recall_default_k", f"k<={data.K}"),
        (data.VERIFY, "at_best", "recall_best", None),
    ):
        r = res["default" if label.startswith("default k") else label]
        a = r[key]
        worst = max((a[k], k) for k in data.NEGATIVE if a.get(k) is not None)
        out[label] = {
            "shown": shown or r["shown"],
            "recall": r[rec],
            "edit10": a.get("edit10"),
            "worst_fp": worst[0],
            "worst_kind": worst[1],
            "natural_kept": {
                k: round(a[k] * n_pairs[k]) if a.get(k) is not None else 0 for k in ("nat+", "nat-")
            },
            "per_kind": a,
        }
    return out


def text_table(lang: str, r: dict) -> str:
    pct = common.pct

    def pc1(x: float) -> str:
        return f"{100 * x:.1f}"

    mh = r["reference"][data.BASELINE]
    n_nat = r["pairs"]

    def nat(x: dict) -> str:
        return f"{x['natural_kept']['nat+']}/{n_nat.get('nat+', 0)} {x['natural_kept']['nat-']}"

    def fp(x: dict) -> str:
        return f"{pct(x['worst_fp'])} {data.SHORT[x['worst_kind']]}"

    head = ["R", "bits", "estimate", "t", "all", "ed10%", "worst FP", "vs minhash", "nat+ nat-"]
    rows = [head]
    for label, x in r["reference"].items():
        rows.append(
            ["", "", label, x["shown"], pc1(x["recall"]), pc1(x["edit10"]), fp(x), "", nat(x)]
        )
    for x in r["settings"]:
        bits = "64" if x["B"] == 0 else f"64+{x['B']}"
        rows.append(
            [
                str(x["R"]),
                bits,
                x["estimate"],
                x.get("t_shown", "-"),
                pc1(x["recall"]),
                pc1(x["edit10"]),
                fp(x) + ("" if x["worst_fp"] <= data.MAX_FP else " !"),
                f"{100 * (x['recall'] - mh['recall']):+.1f}",
                nat(x),
            ]
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = []
    for n, row in enumerate(rows):
        lines.append(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [row[1].rjust(widths[1]), row[2].ljust(widths[2]), row[3].ljust(widths[3])]
                + [x.rjust(w) for x, w in zip(row[4:], widths[4:], strict=True)]
            )
        )
        if n == 0 or n == len(r["reference"]):
            lines.append("-" * len(lines[0]))
    ok = [x for x in r["settings"] if x["worst_fp"] <= data.MAX_FP]
    best = max(ok, key=lambda x: (x["recall"], -x["R"], -x["B"]))
    lines += [
        "",
        f"Percent of all positives (all) and of 10% edits (ed10%) kept, and the worst "
        f"negative kind's false-positive rate, at each row's threshold. R: candidates are "
        f"within R of the 64 indexed bits; t: kept when the estimate's distance is at most "
        f"that share of its bits (the largest keeping every negative kind <= 1%; ! marks a "
        f"lookup alone over 1%). vs "
        f"minhash: points of recall against MinHash ({mh['shown']}). nat+ nat-: natural "
        f"near-duplicates kept / their number, natural related-but-different pairs kept "
        f"(of {n_nat.get('nat-', 0)}; not a rate, see bench/README.md). "
        f"{data.VERIFY} needs the texts at query time.",
        f"Best within 1%: R={best['R']}, 64+{best['B']} bits, {best['estimate']} "
        f"{best.get('t_shown', '')}: {pc1(best['recall'])}% of the positives "
        f"(MinHash {pc1(mh['recall'])}%).",
    ]
    return "\n".join(lines)


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
    ap.add_argument("--no-natural", action="store_true", help="leave out the natural pairs")
    common.output_options(ap)
    args = ap.parse_args(argv)
    return common.save_output("experiments/verify_bits", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    t0 = time.perf_counter()
    out: dict = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git": common.git_rev(),
        "seed": args.seed,
        "n_per_kind": n,
        "n_random": n_random,
        "pool": pool,
        "radii": RADII,
        "extra_bits": EXTRA,
        "max_fp": data.MAX_FP,
        "fetch": {},
        "languages": {},
    }
    data.CACHE.mkdir(parents=True, exist_ok=True)
    for lang in args.lang.split(","):
        common.log(f"{lang}: sources")
        src = data.read_sources(lang, out["fetch"])
        if not src:
            common.log(f"{lang}: no source could be read; skipped")
            out["languages"][lang] = {"error": "no source could be read"}
            continue
        pairs, texts, _counts = data.build_pairs(lang, src, n, n_random, pool, args.seed)
        if not args.no_natural:  # as data.main adds them
            common.log(f"{lang}: natural pairs (every passage of every source)")
            natural, _st = data.natural_pairs(lang, src)
            data.add_natural(pairs, texts, natural)
        common.log(f"{lang}: {len(pairs)} pairs over {len(texts)} texts; fingerprinting")
        scored = data.score_all([(lang, t) for t in texts], args.workers, score)
        words = np.stack([s[3] for s in scored])
        bad = [t for t, s in zip(texts, scored, strict=True) if int(s[3][0]) != s[0][0]]
        if bad:
            raise SystemExit(
                f"{len(bad)} of {len(texts)} seed-0 words differ from "
                f"simhash(text, DEFAULT_CONFIG), the first on {bad[0][:80]!r}"
            )
        common.log(f"{lang}: all {len(texts)} seed-0 words equal simhash(text, DEFAULT_CONFIG)")
        res = data.evaluate(
            lang, pairs, [s[0] for s in scored], [s[1] for s in scored], [s[2] for s in scored]
        )
        if data.BASELINE not in res:
            raise SystemExit("datasketch is not installed: no MinHash to compare against")
        n_pairs = Counter(kind for _c, kind, _i, _j in pairs)
        out["languages"][lang] = {
            "texts": len(texts),
            "seed0_checked": len(texts),
            "pairs": dict(n_pairs),
            "reference": reference(res, n_pairs),
            "settings": verify_bits(pairs, words),
        }
        common.log(f"{lang}: done at {time.perf_counter() - t0:.0f} s")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print_json(out)
        return 0
    print(
        f"Extra Simhash bits to verify candidates, bench/quality.py pairs: {out['date_utc']}, "
        f"git {out['git']}, seed {args.seed}, n {n}, random {n_random}, pool {pool}, "
        f"{out['seconds']} s"
    )
    for lang, r in out["languages"].items():
        print()
        if "error" in r:
            print(f"== {lang} == {r['error']}")
            continue
        print(
            f"== {lang} == {sum(r['pairs'].values())} pairs over {r['texts']} texts; "
            f"seed-0 words equal to simhash(text, DEFAULT_CONFIG): {r['seed0_checked']} "
            f"of {r['texts']}"
        )
        print(text_table(lang, r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
