#!/usr/bin/env python
"""What each verification signature (bench/experiments/sketches.py) costs: bytes a
document, and fingerprinting speed with it beside simindex.simhash alone.

    python bench/experiments/signatures.py            # about a minute on 2 cores
    python bench/experiments/signatures.py --quick    # a smoke run (prints only)
    python bench/experiments/signatures.py --json     # the results as JSON on stdout
    python bench/experiments/signatures.py --no-save  # print only
                          # (else bench/results/experiments/signatures.txt)

Text: bench/quality.py's passages (English: fortunes, the Jargon File, the
common licences; Chinese: the People's Daily, fortunes-zh, the Debian Edu
manual; from its cache, fetched the first time), as documents of 80-400 words
or 150-800 characters, about --mb MB (UTF-8) of each language.

Per signature, over the same documents, R repeats interleaved (the method
first in a repeat rotating), medians:

- `simhash` alone: simindex.fingerprint.simhash(text) at DEFAULT_CONFIG, what
  an add costs today;
- `+ signature`: the fingerprint and the signature in one pass, as an index
  would compute them (sketches.fingerprint_and_signature: the text
  tokenised once, each distinct token hashed once for both; the fingerprint is
  checked equal to simhash(text) for every document); the ratio is simhash
  alone / with the signature (target >= 0.7);
- bytes a document (the hybrid: at most; the mean over these documents).

Then what Chinese normalisation would cost: OpenCC's t2s conversion (if the
opencc package is installed) and bench/quality.py's folding of punctuation
and whitespace between CJK characters, in MB/s; and, for short texts (the
first 6-30 words or 8-40 characters of a passage, against a copy with one
word edited or another passage's opening), the mean error of the 64-byte
MinHash and of the hybrid (exact sets for up to 15 shingles) against the exact
Jaccard.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402
import numpy as np  # noqa: E402
import sketches as sg  # noqa: E402
from common import clock, log, output_options, print_json, save_output  # noqa: E402

from simindex.fingerprint import simhash  # noqa: E402


def documents(lang: str, mb: float, seed: int = 1) -> list[str]:
    """Passages of a language's sources, shuffled, about mb MB in all."""
    src = data.read_sources(lang, {})
    docs = [p for units in src.values() for unit in units for p in unit]
    random.Random(seed).shuffle(docs)
    out, size = [], 0
    for d in docs:
        if size >= mb * 1e6:
            break
        out.append(d)
        size += len(d.encode("utf-8"))
    return out


def both(text: str, s: sg.Signature) -> tuple[int, bytes]:
    """The fingerprint (DEFAULT_CONFIG) and the signature in one pass
    (sketches.fingerprint_and_signature)."""
    return sg.fingerprint_and_signature(text, s)


def timed(fn, docs: list[str]) -> float:
    """Seconds for fn over every document, one after another."""

    def every() -> None:
        for d in docs:
            fn(d)

    return clock(every)[1]


def costs(lang: str, docs: list[str], names: list[str], repeats: int) -> list[dict]:
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    sigs = {n: sg.SIGNATURES[n] for n in names}
    for d in docs:  # the one-pass fingerprint is the fingerprint
        assert both(d, sigs[names[0]])[0] == simhash(d), d[:80]
    methods = {"simhash": simhash}
    for n, s in sigs.items():
        methods[n] = lambda d, s=s: both(d, s)
    times: dict[str, list[float]] = {m: [] for m in methods}
    order = list(methods)
    for r in range(repeats):
        for m in order[r % len(order) :] + order[: r % len(order)]:
            times[m].append(timed(methods[m], docs))
    base = statistics.median(times["simhash"])
    out = [
        {
            "lang": lang,
            "method": "simhash alone",
            "bytes": 8,
            "mb_s": mb / base,
            "ratio": 1.0,
        }
    ]
    for n, s in sigs.items():
        t = statistics.median(times[n])
        size = float(np.mean([len(both(d, s)[1]) for d in docs[:300]]))
        out.append(
            {
                "lang": lang,
                "method": f"simhash + {n}",
                "bytes": s.nbytes,
                "mean_bytes": size,
                "mb_s": mb / t,
                "ratio": base / t,
                "estimates": s.estimates,
            }
        )
    return out


def normalisation_speed(docs: list[str], repeats: int) -> dict:
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    out = {"fold_mb_s": mb / min(timed(data.fold_gaps, docs) for _ in range(repeats))}
    if data.have_opencc():
        import opencc

        conv = opencc.OpenCC("t2s")
        conv.convert(docs[0])
        out["opencc"] = getattr(opencc, "__version__", "?")
        out["t2s_mb_s"] = mb / min(timed(conv.convert, docs) for _ in range(repeats))
        simple = min(timed(lambda d: simhash(d), docs) for _ in range(repeats))
        out["simhash_mb_s"] = mb / simple
    return out


def short_texts(lang: str, docs: list[str], count: int, seed: int = 2) -> dict:
    """Mean |estimate - exact Jaccard| over short pairs, for the MinHash and the hybrid."""
    rng = random.Random(seed)
    ed = data.Editor(lang, docs, rng)
    pairs = []
    for _ in range(count):
        d = rng.choice(docs)
        if lang == "en":
            w = d.split()
            cut = " ".join(w[: rng.randint(6, 30)])
        else:
            flat = "".join(d.split())
            cut = flat[: rng.randint(8, 40)]
        if rng.random() < 0.5:
            other = ed.word_edits(cut, 0.0001)  # one word edited
        else:
            o = rng.choice(docs)
            other = " ".join(o.split()[: len(cut.split())]) if lang == "en" else o[: len(cut)]
        pairs.append((cut, other))
    res = {}
    for name in ("minhash128x4/3", "hybrid128x4/3", "minhash128x4/1", "hybrid128x4/1"):
        s = sg.SIGNATURES[name]
        err = []
        for a, b in pairs:
            try:
                ha, hb = sg.text_hashes(a, s.n, s.units), sg.text_hashes(b, s.n, s.units)
            except Exception:  # an opening of punctuation only
                continue
            err.append(abs(s.similarity(s.make(ha), s.make(hb)) - sg.exact_jaccard(ha, hb)))
        res[name] = {
            "pairs": len(err),
            "mean_error": float(np.mean(err)),
            "p90": float(np.quantile(err, 0.9)),
        }
    return res


def disk_bytes(rows: int, seed: int = 3) -> dict:
    """Bytes a document of an index file (after compact()) of `rows` random
    fingerprints and keys, without and with a 64-byte signature each."""
    import os
    import tempfile

    from simindex import SimIndex

    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(rows)]
    sigs = [rng.randbytes(64) for _ in range(rows)]
    out = {"rows": rows}
    with tempfile.TemporaryDirectory() as folder:
        for name, signed in (("without", False), ("with", True)):
            path = os.path.join(folder, f"{name}.db")
            with SimIndex(path) as index:
                index.add_fingerprints(
                    (f"doc-{i:07d}", fp, sigs[i] if signed else None) for i, fp in enumerate(fps)
                )
                index.compact()
            out[name] = os.path.getsize(path) / rows
    return out


def measure(args: argparse.Namespace) -> int:
    names = args.signatures.split(",") if args.signatures else list(sg.SIGNATURES)
    mb = args.mb or (0.1 if args.quick else 1.0)
    repeats = args.repeats or (2 if args.quick else 5)
    t0 = time.perf_counter()
    out: dict = {"mb": mb, "repeats": repeats, "costs": [], "normalisation": {}, "short": {}}
    for lang in ("en", "zh"):
        log(f"{lang}: documents")
        docs = documents(lang, mb)
        log(f"{lang}: {len(docs)} documents; timing")
        out["costs"] += costs(lang, docs, names, repeats)
        if lang == "zh":
            out["normalisation"] = normalisation_speed(docs, repeats)
        out["short"][lang] = short_texts(lang, docs, 200 if args.quick else 1000)
    log("on disk: two indexes, without and with signatures")
    out["disk"] = disk_bytes(10_000 if args.quick else 100_000)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        print_json(out)
        return 0
    print(
        f"verification signatures: bytes a document and speed, {mb:g} MB of each language, "
        f"medians of {repeats} interleaved repeats; {out['seconds']} s"
    )
    print()
    head = ["method", "bytes", "estimates", "en MB/s", "en ratio", "zh MB/s", "zh ratio"]
    rows = [head]
    by = {(c["lang"], c["method"]): c for c in out["costs"]}
    for c in out["costs"]:
        if c["lang"] != "en":
            continue
        z = by.get(("zh", c["method"]), {})
        size = str(c["bytes"])
        if c.get("mean_bytes") is not None and c["mean_bytes"] != c["bytes"]:
            size += f" (mean {c['mean_bytes']:.0f})"
        rows.append(
            [
                c["method"],
                size,
                c.get("estimates", "-"),
                f"{c['mb_s']:.2f}",
                f"{c['ratio']:.2f}",
                f"{z.get('mb_s', 0):.2f}",
                f"{z.get('ratio', 0):.2f}",
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for n_, r in enumerate(rows):
        print(
            "  ".join(
                [r[0].ljust(widths[0])]
                + [x.rjust(w) for x, w in zip(r[1:], widths[1:], strict=True)]
            )
        )
        if n_ == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    print()
    print(
        "ratio: simhash alone / simhash and the signature in one pass (target >= 0.7); "
        "bytes: the signature's, beside the 8 of the fingerprint."
    )
    nm = out["normalisation"]
    print()
    print(
        f"Chinese normalisation: folding punctuation and whitespace between CJK characters "
        f"{nm['fold_mb_s']:.1f} MB/s"
        + (
            f"; OpenCC {nm['opencc']} t2s {nm['t2s_mb_s']:.1f} MB/s (simhash alone "
            f"{nm['simhash_mb_s']:.2f} MB/s on the same text)"
            if "t2s_mb_s" in nm
            else "; opencc not installed"
        )
    )
    print()
    print("Short texts (6-30 words, 8-40 characters): mean |estimate - exact Jaccard| (p90)")
    for lang, res in out["short"].items():
        print(
            f"  {lang}: "
            + "; ".join(
                f"{n} {r['mean_error']:.3f} ({r['p90']:.3f}) over {r['pairs']}"
                for n, r in res.items()
            )
        )
    disk = out["disk"]
    print()
    print(
        f"On disk (SQLite, {disk['rows']:,} random fingerprints and keys, after compact()): "
        f"{disk['without']:.1f} bytes a document without signatures, {disk['with']:.1f} "
        f"with (+{disk['with'] - disk['without']:.1f}: the 64-byte signature and its record "
        f"header)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="0.1 MB, 2 repeats: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    ap.add_argument("--mb", type=float, help="MB of text per language (default 1)")
    ap.add_argument("--repeats", type=int, help="interleaved repeats (default 5)")
    ap.add_argument("--signatures", help="comma-separated names (default: every one)")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("experiments/signatures", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
