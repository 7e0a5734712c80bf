#!/usr/bin/env python
"""Streaming dedup of a corpus of many short documents beside rensa's deduplicator.

    python bench/dedup.py                     # the corpus in /tmp/simindex-dedup (made once)
    python bench/dedup.py --corpus FILE.jsonl # another corpus (its .copies.json beside it)
    python bench/dedup.py --limit 20000       # a corpus of at most this many originals
    python bench/dedup.py --quick             # 3,000 originals, one round: a smoke run
    python bench/dedup.py --no-save           # print only (else bench/results/dedup-peers.txt)
    python bench/dedup.py --before DIR        # also simindex from DIR (a checkout's tree)
    python bench/dedup.py --stages            # also the microseconds a document per stage

The corpus (data.dedup_corpus) is this machine's documentation cut into
short documents: copyright and licence files by paragraph, changelog.Debian.gz
entries and manual page sections; originals less than 0.6 similar to each
other (word sets), and copies of 5% of them with 2-5% of their words edited,
each placed after its original. It is made once into a folder outside git.

Each round runs, in fresh processes and interleaved, on the same file, reading
JSON Lines and writing the kept lines included:

- ``simindex dedup CORPUS --out OUT --quiet`` at its defaults (its workers:
  the CPUs this process may use), with ``--workers 1`` and ``--workers 2``;
- rensa's documented streaming deduplicator: ``RMinHashDeduplicator(
  threshold=0.8, num_perm=128, use_lsh=True, num_bands=16)``, an ``RMinHash
  (num_perm=128, seed=42)`` of ``text.split()`` a document, ``add(key, m)``
  keeping the document when it returns True (run by this script as a child:
  ``--rensa IN OUT``).

``--before DIR`` adds rows for the simindex package in DIR (``git archive
REV simindex | tar -x -C DIR``), run with PYTHONPATH=DIR. ``--stages``
also measures, in one process on one core, the microseconds a document of
each stage of ``simindex dedup``: reading and decoding the JSON Lines (as the
command reads them), fingerprint and signature (what the workers do),
deciding (dedup_stream over the fingerprinted documents), writing the kept
ones (the command's writer); with --before, for that package too.

Seconds are medians of the rounds; recall is the share of planted copies
dropped; wrong drops are originals dropped (the originals are not near each
other, so dropping one is wrong). Progress goes to stderr; the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:  # `python bench/dedup.py` from a checkout (PYTHONPATH first)
    sys.path.append(str(ROOT))

from common import environment, log, median, output_options, save_output  # noqa: E402

CORPUS = Path(tempfile.gettempdir()) / "simindex-dedup" / "corpus.jsonl"
RENSA = "rensa RMinHashDeduplicator"


def rensa_child(source: str, out: str) -> int:
    """rensa's streaming deduplicator over a JSON Lines corpus, as its README shows it."""
    from rensa import RMinHash, RMinHashDeduplicator

    dedup = RMinHashDeduplicator(threshold=0.8, num_perm=128, use_lsh=True, num_bands=16)
    with open(source, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as kept:
        for line in lines:
            doc = json.loads(line)
            m = RMinHash(num_perm=128, seed=42)
            m.update(doc["text"].split())
            if dedup.add(doc["id"], m):
                kept.write(line)
    return 0


def methods(corpus: Path, out: Path, before: Path | None) -> dict[str, tuple[list[str], dict]]:
    """Each row's command and the environment it runs in."""
    cli = [sys.executable, "-m", "simindex", "dedup", str(corpus), "--out", str(out), "--quiet"]
    here = {**os.environ}
    rows = {
        "simindex dedup (default workers)": (cli, here),
        "simindex dedup --workers 1": ([*cli, "--workers", "1"], here),
        "simindex dedup --workers 2": ([*cli, "--workers", "2"], here),
    }
    if before is not None:
        there = {**os.environ, "PYTHONPATH": str(before)}
        rows |= {
            "before: simindex dedup (default workers)": (cli, there),
            "before: simindex dedup --workers 1": ([*cli, "--workers", "1"], there),
        }
    me = str(Path(__file__).resolve())
    rows[RENSA] = ([sys.executable, me, "--rensa", str(corpus), str(out)], here)
    return rows


def stages_child(corpus: str) -> int:
    """The microseconds a document of each stage, in this process (see the module's text)."""
    import simindex
    from simindex import dedup_stream, ingest
    from simindex.cli import records
    from simindex.cli.files import written_together
    from simindex.fingerprint import DEFAULT_CONFIG

    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "kept.jsonl")
        plan = records.plan(out, [corpus], "auto")
        start = time.perf_counter()
        docs = list(
            ingest.read_docs(
                [corpus], fmt="auto", key_field="id", text_field="text",
                folder_keys="path", records=plan.as_read,
            )
        )  # fmt: skip
        read = time.perf_counter() - start
        list(ingest.fingerprint_docs(docs[:2000], DEFAULT_CONFIG, workers=1))  # warm
        start = time.perf_counter()
        marks = list(ingest.fingerprint_docs(docs, DEFAULT_CONFIG, workers=1))
        fingerprint = time.perf_counter() - start
        ingest.fingerprint_docs = lambda *a, **kw: iter(marks)  # the workers' output, made
        start = time.perf_counter()
        decisions = list(dedup_stream(docs, workers=1))
        decide = time.perf_counter() - start
        start = time.perf_counter()
        with written_together() as outputs:
            sink = records.Sink(outputs, out, plan, "id", "text")
            for decision in decisions:
                sink.take(decision.doc, decision.kept)
            sink.finish()
        write = time.perf_counter() - start
    n = len(docs)
    print(json.dumps({
        "package": str(Path(simindex.__file__).parent), "documents": n,
        "read": read / n * 1e6, "fingerprint": fingerprint / n * 1e6,
        "decide": decide / n * 1e6, "write": write / n * 1e6,
        "kept": sum(d.kept for d in decisions),
    }))  # fmt: skip
    return 0


def kept_ids(path: Path) -> set[str]:
    with open(path, encoding="utf-8") as lines:
        return {json.loads(line)["id"] for line in lines}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--corpus", type=Path, help=f"a JSON Lines corpus (default: {CORPUS})")
    ap.add_argument("--limit", type=int, help="originals in a corpus made here (default: all)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every method (default 3)")
    ap.add_argument("--quick", action="store_true", help="3,000 originals, one round")
    ap.add_argument("--before", type=Path, metavar="DIR", help="also simindex from DIR")
    ap.add_argument("--stages", action="store_true", help="also microseconds a stage")
    ap.add_argument("--rensa", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--stages-child", metavar="IN", help=argparse.SUPPRESS)
    output_options(ap)
    args = ap.parse_args(argv)
    if args.rensa:
        return rensa_child(*args.rensa)
    if args.stages_child:
        return stages_child(args.stages_child)
    return save_output("dedup-peers", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    import data

    limit = 3000 if args.quick and args.limit is None else args.limit
    rounds = 1 if args.quick else args.rounds
    corpus = args.corpus or CORPUS
    if args.corpus is None and (args.quick or limit is not None):
        corpus = CORPUS.with_name(f"corpus-{limit}.jsonl")
    if not corpus.exists():
        made = data.dedup_corpus(corpus, limit=limit)
        log(f"made {corpus}: {made}")
    planted: dict[str, str] = json.loads(Path(f"{corpus}.copies.json").read_text("utf-8"))
    with open(corpus, encoding="utf-8") as lines:
        ids = [json.loads(line)["id"] for line in lines]
    size = corpus.stat().st_size
    originals = set(ids) - set(planted)
    env = environment()
    print(
        f"corpus {corpus}: {len(ids):,} documents, {size / 1e6:.0f} MB, "
        f"{len(planted):,} planted copies (2-5% of words edited)"
    )
    print(
        f"python {env.get('python', sys.version.split()[0])}, numba "
        f"{'installed' if _has('numba') else 'not installed'}, rensa {_version('rensa')}, "
        f"{os.cpu_count()} CPUs; medians of {rounds} round(s), fresh processes, "
        "reading and writing included\n"
    )
    seconds: dict[str, list[float]] = {}
    found: dict[str, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kept.jsonl"
        runs = methods(corpus, out, args.before)
        if not _has("rensa"):
            del runs[RENSA]
            print(f"{RENSA}: not installed (pip install rensa)\n")
        for r in range(rounds):
            for name, (cmd, env) in runs.items():
                out.unlink(missing_ok=True)
                start = time.perf_counter()
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=tmp)
                took = time.perf_counter() - start
                seconds.setdefault(name, []).append(took)
                dropped = set(ids) - kept_ids(out)
                recall = len(dropped & planted.keys()) / max(1, len(planted))
                found[name] = (recall, len(dropped & originals))
                log(f"round {r + 1}: {name}: {took:.1f} s, recall {recall:.1%}")
    base = median(seconds[RENSA]) if RENSA in seconds else None
    rows = [("method", "seconds", "us a doc", "x rensa", "copies removed", "originals dropped")]
    for name, times in seconds.items():
        s = median(times)
        recall, wrong = found[name]
        ratio = "" if base is None else f"{s / base:.2f}"
        rows.append(
            (name, f"{s:.1f}", f"{s / len(ids) * 1e6:.0f}", ratio, f"{recall:.1%}", str(wrong))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        cells = zip(row, widths, strict=True)
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(cells)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    every = [f"{n}: {', '.join(f'{t:.1f}' for t in ts)}" for n, ts in seconds.items()]
    print("\nall rounds (s): " + "; ".join(every))
    if args.stages:
        stages(corpus, args.before)
    return 0


def stages(corpus: Path, before: Path | None) -> None:
    """The stages' table: microseconds a document, one process, one core."""
    packages = {"simindex": {**os.environ}}
    if before is not None:
        packages["before"] = {**os.environ, "PYTHONPATH": str(before)}
    found = {}
    for name, env in packages.items():
        cmd = [sys.executable, str(Path(__file__).resolve()), "--stages-child", str(corpus)]
        log(f"stages: {name}")
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env, cwd=tmp)
        found[name] = json.loads(done.stdout.strip().splitlines()[-1])
    print("\nmicroseconds a document, each stage in one process on one core (--stages):")
    names = ("read", "fingerprint", "decide", "write")
    print(f"{'package':10s} " + " ".join(f"{s:>11s}" for s in names) + "  documents kept")
    for name, r in found.items():
        cells = " ".join(f"{r[s]:11.1f}" for s in names)
        print(f"{name:10s} {cells}  {r['kept']:,} ({r['package']})")


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
