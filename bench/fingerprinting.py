#!/usr/bin/env python
"""What a corpus job's fingerprinting costs a core: the text to fingerprint
and signature step of simindex.spark.fingerprints, on real English and
Chinese documents, one thread.

    python bench/fingerprinting.py             # 3 runs (a few minutes)
    python bench/fingerprinting.py --quick     # 200 documents a language, 1 run (no results file)

Documents (bench/data.py's read_sources and hard_sources, the quality
benchmark's texts, fetched once into ~/.cache/simindex-quality): English,
the licences, fortunes and jargon file, every distinct copyright file of
/usr/share/doc and the rendered manual pages; Chinese, the People's Daily
articles of January 1998 and the Chinese manual pages. A document is a
source's unit (a file, a licence, an article, a page), its passages joined;
the few longer than tokenize.PIECE_CHARS characters (the jargon file) are
left out and counted: every path reads them piece by piece, the Python way.

Rows, for each language: ``simhash`` (the fingerprint alone) and
``fingerprint_and_signature`` (what corpus jobs compute per row, with the
signature the second stage verifies) the Python way, and
``fingerprint_and_signature`` compiled (simindex.fastmarks, where numba is
installed: what a process runs once it has fingerprinted a few MB), each
over every document, medians of R runs: documents a second, MB of UTF-8 a
second, microseconds a document and a KB, and the compiled row's speed-up
over the Python one; and ``prepare`` alone (fingerprint.prepare: NFKC, the
CJK gaps folded, Traditional made Simplified), which every path runs before
tokenising, the compiled one in Python. Before timing, the two paths' fingerprints and
signatures are compared on every document: a difference stops the script.
docs/scaling.md prices a billion documents with these.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import log, median, output_options, save_output  # noqa: E402
from data import hard_sources, read_sources  # noqa: E402

from simindex import compiling, fastmarks, simhash  # noqa: E402
from simindex.errors import EmptyTextError  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, prepare  # noqa: E402
from simindex.signature import _probes, fingerprint_and_signature, one_pass  # noqa: E402
from simindex.tokenize import PIECE_CHARS  # noqa: E402


def documents(lang: str, limit: int | None) -> list[str]:
    status: dict = {}
    docs = []
    for units in read_sources(lang, status).values():
        for passages in units:
            docs.append(("\n\n" if lang == "en" else "\n").join(passages))
    for groups in hard_sources(lang, status).values():
        for texts in groups:
            docs.extend(texts)
    docs = [text for text in docs if text.strip()]
    return docs[:limit] if limit else docs


def split_long(docs: list[str]) -> tuple[list[str], list[str]]:
    """The documents of at most tokenize.PIECE_CHARS characters, and the
    longer ones (read piece by piece, the Python way, on every path)."""
    return [d for d in docs if len(d) <= PIECE_CHARS], [d for d in docs if len(d) > PIECE_CHARS]


def timed(docs: list[str], step: Callable[[str], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for text in docs:
            step(text)
        times.append(time.perf_counter() - start)
    return times


def measure(args: argparse.Namespace) -> int:
    limit = 200 if args.quick else None
    runs = 1 if args.quick else args.runs
    compiling.use("always")
    compiled = fastmarks.available()
    probes = _probes()
    steps: dict[str, tuple[str, Callable[[str], object]]] = {
        "simhash": ("never", lambda text: simhash(text, DEFAULT_CONFIG)),
        "fingerprint_and_signature": (
            "never",
            lambda text: fingerprint_and_signature(text, DEFAULT_CONFIG),
        ),
    }
    if compiled:
        steps["  compiled"] = (
            "always",
            lambda text: fingerprint_and_signature(text, DEFAULT_CONFIG),
        )
    else:
        print("(numba is not installed: no compiled row)\n")
    # What every path runs before tokenising (NFKC, the CJK gaps folded,
    # Traditional made Simplified): for Chinese, most of the compiled row's
    # Python. (For English it is only the scan for CJK; the NFKC such a text
    # needs runs in fastmarks.marks itself.)
    steps["  prepare"] = ("never", lambda text: prepare(text, DEFAULT_CONFIG))
    print(f"one thread; medians of {runs} run(s); a document: a source's unit, passages joined\n")
    print(
        f"{'lang':4} {'step':26} {'docs':>7} {'MB':>7} {'KB/doc':>7} {'docs/s':>8} "
        f"{'MB/s':>6} {'us/doc':>8} {'us/KB':>6}  runs (s)"
    )
    for lang in ("en", "zh"):
        log(f"reading the {lang} documents")
        docs = documents(lang, limit)
        if not docs:
            print(f"{lang:4} (no documents: see bench/data.py's read_sources)")
            continue
        docs, long = split_long(docs)
        if long:
            print(
                f"{lang:4} left out: {len(long)} document(s) of more than {PIECE_CHARS:,} "
                f"characters ({sum(len(d.encode('utf-8')) for d in long) / 1e6:.1f} MB), "
                "which every path reads piece by piece, the Python way"
            )
        size = sum(len(text.encode("utf-8")) for text in docs)
        simhash(docs[0], DEFAULT_CONFIG)  # (jieba loads its dictionary here, untimed)
        if compiled:
            log(f"  {lang}: checking the compiled pass against the Python one")
            compiling.use("always")  # (the last step of the other language set its own)
            for text in docs:
                try:
                    python: object = one_pass(text, DEFAULT_CONFIG)
                except EmptyTextError:
                    python = (0, b"")  # what marks gives a text with no word
                if python != fastmarks.marks(text, DEFAULT_CONFIG, probes):
                    raise SystemExit(f"the two paths differ on {text[:60]!r}")
            print(f"{lang:4} the compiled pass gives the Python one's bits on all {len(docs):,}")
        python_time = 0.0
        for name, (mode, step) in steps.items():
            log(f"  {lang}: {name}")
            compiling.use(mode)
            times = timed(docs, step, runs)
            t = median(times)
            if name == "fingerprint_and_signature":
                python_time = t
            ratio = f"  {python_time / t:.1f}x" if name == "  compiled" else ""
            per_doc = size / len(docs) / 1e3
            print(
                f"{lang:4} {name:26} {len(docs):7,} {size / 1e6:7.1f} {per_doc:7.1f} "
                f"{len(docs) / t:8,.0f} {size / 1e6 / t:6.2f} {t / len(docs) * 1e6:8.0f} "
                f"{t / (size / 1e3) * 1e6:6.1f}  {', '.join(f'{s:.1f}' for s in times)}{ratio}",
                flush=True,
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 documents a language, 1 run")
    ap.add_argument("--runs", type=int, default=3, help="runs (default 3)")
    output_options(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.no_save = True
    return save_output("fingerprinting", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
