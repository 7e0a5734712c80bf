#!/usr/bin/env python
"""Partial duplicates on a real corpus: the licences inside this machine's copyright files.

    python bench/overlaps.py            # every file: about a minute on 2 cores
    python bench/overlaps.py --quick    # the first 120 copyright files: a smoke run
    python bench/overlaps.py --no-save  # print only (else bench/results/overlaps.txt)

Every Debian machine has /usr/share/doc/*/copyright, many of which hold a
licence of /usr/share/common-licenses whole (BSD, Apache-2.0, GPL-2, ...)
inside a much longer text; compared whole (query, duplicates) they are far
apart. Each copyright file is read once (a symlink to a file already read is
not read again), and each licence once (GPL -> GPL-3 and the like).

The truth, computed here without simindex's passages: a licence's *exact
containment* in a file is the share of the licence's word 5-shingles (words
as simindex's signature reads them, simindex.signature.units, stop words
kept; shingles hashed with xxh64) that are shingles of the file. A pair
(licence, file) is *inside* when that is at least 0.8.

1. Windows, offline: for each window w, every text's passages made as
   simindex makes them (simindex.passages.winnow over its shingle hashes,
   with w), and the shares overlaps() would give, computed with Python
   sets for every pair. Per w: the passage rows a KB of text, the recall
   of the inside pairs (a pair is found when overlaps returns it at 0.8,
   by either share: asked with the licence, its query_share; with the
   file, the licence's stored_share), the pairs returned that break
   the precision rule: a pair returned for a share whose exact
   containment (the same direction) is under 0.5, and the error of the
   licence's share found in the file against its exact containment, over
   the pairs where that is at least 0.5 (median, p90, max). Then short
   passages: 40 excerpts of 20, 40, 80 and 160 words in a row from each
   licence, 3% of their words replaced, each asked against the licence it
   is from: the p90 of the error of its query_share against its exact
   containment (an excerpt not edited has a query_share of exactly 1 at
   every window: each of its windows is one of the licence's).
2. The index, at simindex's WINDOW: the copyright files in a SimIndex
   file with overlaps=True, beside the same files without (add_many, one
   transaction, the two interleaved twice, medians), the bytes of the
   passages' tables and indexes (SQLite's dbstat) a KB of text stored;
   then each licence asked with overlaps() (median ms a query, each the
   median of 5 rounds, beside the exact shingle sets of every file held
   in a Python dict and intersected with the licence's, interleaved
   round by round: what a script without an index does), and the
   other way round: the licences in an index, each copyright file asked.
   Every answer is checked against the offline shares of step 1 (exit 1
   if one differs), and the recall and precision rule are read from them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

import data  # noqa: E402
import numpy as np  # noqa: E402
import xxhash  # noqa: E402
from common import log, median, output_options, save_output  # noqa: E402

from simindex import DEFAULT_CONFIG, SimIndex  # noqa: E402
from simindex import passages as ps  # noqa: E402
from simindex.fingerprint import prepare  # noqa: E402
from simindex.overlaps import DEFAULT_THRESHOLD as overlaps_default  # noqa: E402
from simindex.signature import unit_hashes, units  # noqa: E402

INSIDE = 0.8  # an inside pair: the licence's exact containment in the file
ASKED = overlaps_default  # section 2: what overlaps() returns at its default threshold
FLOOR = 0.5  # the precision rule: a pair returned holds at least this much
WINDOWS = (1, 2, 4, 6, 8, 12, 16)
EXCERPTS = (20, 40, 80, 160)  # words of a licence in a row, asked against it
EXCERPTS_EACH = 40  # excerpts of each length from each licence
EDITED = 0.03  # the share of an excerpt's words replaced
ROUNDS = 5  # each licence asked this many times


def exact_shingles(text: str) -> set[int]:
    words = units(prepare(text, DEFAULT_CONFIG))
    if len(words) < 5:
        return {_hash(" ".join(words))}
    return {_hash(" ".join(words[i : i + 5])) for i in range(len(words) - 4)}


def _hash(shingle: str) -> int:
    return xxhash.xxh64_intdigest(shingle.encode("utf-8", "surrogatepass"))


def shingle_hashes(text: str) -> np.ndarray:
    found = units(prepare(text, DEFAULT_CONFIG))
    return ps.shingle_hashes(unit_hashes(found), ps.unit_weights(found))


def shares(a: set[int], b: set[int]) -> tuple[float, float]:
    """(share of a in b, share of b in a)."""
    both = len(a & b)
    return both / len(a), both / len(b)


def score(
    returned: dict[tuple[str, str], tuple[float, float]],
    exact: dict[tuple[str, str], tuple[float, float]],
    inside: set[tuple[str, str]],
    at: float = INSIDE,
) -> tuple[float, int, int]:
    """(recall of the inside pairs, pairs returned, pairs breaking the rule).
    Pairs are (licence, file); returned: (licence-in-file, file-in-licence)
    shares as overlaps gave them (returned when either reaches ``at``);
    exact: the same, by exact shingles."""
    found = sum(1 for pair in inside if pair in returned)
    broken = 0
    for pair, (lic_in_file, _) in returned.items():
        exact_lic, exact_file = exact.get(pair, (0.0, 0.0))
        if (lic_in_file >= at and exact_lic < FLOOR) or (lic_in_file < at and exact_file < FLOOR):
            broken += 1
    return (found / len(inside) if inside else 1.0), len(returned), broken


def db_bytes(path: Path) -> dict[str, int]:
    import sqlite3

    con = sqlite3.connect(path)
    try:
        rows = con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        con.close()
    return {str(n): int(b) for n, b in rows}


def measure(args: argparse.Namespace) -> int:
    files = data.read_once(sorted(data.DOC.glob("*/copyright")))
    if args.quick:
        files = files[:120]
    licences = data.read_once(sorted(data.LICENSES.glob("*")))
    if not files or not licences:
        log("no copyright files or licences here (not a Debian machine?)")
        return 1
    text_bytes = sum(len(t.encode()) for _, t in files)
    lic_bytes = sum(len(t.encode()) for _, t in licences)
    log(f"{len(files)} copyright files ({text_bytes:,} bytes), {len(licences)} licences")

    exact_f = {k: exact_shingles(t) for k, t in files}
    exact_l = {k: exact_shingles(t) for k, t in licences}
    exact: dict[tuple[str, str], tuple[float, float]] = {}
    for lk, ls in exact_l.items():
        for fk, fs in exact_f.items():
            both = len(ls & fs)
            if both:
                exact[lk, fk] = (both / len(ls), both / len(fs))
    inside = {pair for pair, (lic, _) in exact.items() if lic >= INSIDE}
    log(f"{len(inside)} inside pairs (a licence's shingles at least {INSIDE:.0%} in a file)")

    sh_f = {k: shingle_hashes(t) for k, t in files}
    sh_l = {k: shingle_hashes(t) for k, t in licences}
    offline: dict[int, dict[tuple[str, str], tuple[float, float]]] = {}
    print(
        f"{len(files)} copyright files ({text_bytes / 1e6:.1f} MB), {len(licences)} licences "
        f"({lic_bytes / 1e3:.0f} kB); {len(inside)} inside pairs (exact containment of the "
        f"licence's word 5-shingles >= {INSIDE}); precision rule: every pair returned holds "
        f">= {FLOOR} by the exact share it was returned for\n"
    )
    print("1. windows, offline (the shares overlaps() gives, at threshold 0.8)")
    # Excerpts: EXCERPTS words in a row from a licence, asked against it.
    rng = np.random.default_rng(20261203)
    excerpts: dict[int, list[tuple[str, np.ndarray, float]]] = {n: [] for n in EXCERPTS}
    for lk, text in licences:
        found = units(prepare(text, DEFAULT_CONFIG))
        for n in EXCERPTS:
            for _ in range(EXCERPTS_EACH if len(found) > n else 0):
                at = int(rng.integers(0, len(found) - n))
                piece = [
                    f"edited{i}" if rng.random() < EDITED else u
                    for i, u in enumerate(found[at : at + n])
                ]
                truth = len(exact_shingles(" ".join(piece)) & exact_l[lk])
                truth /= len(exact_shingles(" ".join(piece)))
                hashes = ps.shingle_hashes(unit_hashes(piece), ps.unit_weights(piece))
                excerpts[n].append((lk, hashes, truth))
    heads = " ".join(f"{f'{n} w p90':>9}" for n in EXCERPTS)
    print(
        f"{'window':>6} {'rows/KB':>8} {'recall':>7} {'returned':>9} {'broken':>7} "
        f"{'error p50':>9} {'p90':>6} {'max':>6} {heads}"
    )
    near = [pair for pair, (lic, _) in exact.items() if lic >= FLOOR]
    for w in WINDOWS:
        win_f = {k: set(ps.winnow(h, w).tolist()) for k, h in sh_f.items()}
        win_l = {k: set(ps.winnow(h, w).tolist()) for k, h in sh_l.items()}
        got: dict[tuple[str, str], tuple[float, float]] = {}
        for lk, ls in win_l.items():
            for fk, fs in win_f.items():
                if ls & fs:
                    got[lk, fk] = shares(ls, fs)
        offline[w] = got
        returned = {p: s for p, s in got.items() if max(s) >= INSIDE}
        recall, count, broken = score(returned, exact, inside)
        rows = sum(len(s) for s in win_f.values())
        errors = sorted(abs(got.get(p, (0.0, 0.0))[0] - exact[p][0]) for p in near)
        p90 = errors[int(0.9 * (len(errors) - 1))]
        cells = []
        for n in EXCERPTS:
            off = sorted(
                abs(len(set(ps.winnow(h, w).tolist()) & win_l[lk]) / len(ps.winnow(h, w)) - t)
                for lk, h, t in excerpts[n]
            )
            cells.append(f"{off[int(0.9 * (len(off) - 1))]:9.3f}")
        print(
            f"{w:>6} {rows / (text_bytes / 1024):8.1f} {recall:7.3f} {count:9} {broken:7} "
            f"{median(errors):9.3f} {p90:6.3f} {errors[-1]:6.3f} {' '.join(cells)}"
        )

    w = ps.WINDOW
    print(f"\n2. the index (SQLite, window {w}): the copyright files stored")
    folder = Path(tempfile.mkdtemp(prefix="simindex-overlaps-"))
    try:
        times: dict[bool, list[float]] = {True: [], False: []}
        sizes: dict[str, int] = {}
        for attempt in range(2):
            for keep in (attempt % 2 == 0, attempt % 2 == 1):
                path = folder / f"index-{keep}-{attempt}.db"
                start = time.perf_counter()
                with SimIndex(path, overlaps=keep) as index:
                    index.add_many(files)
                times[keep].append(time.perf_counter() - start)
                if keep:
                    sizes = db_bytes(path)
        ours = {n: b for n, b in sizes.items() if "passage" in n}
        total = sum(ours.values())
        per_kb = total / (text_bytes / 1024)
        print(f"passages' bytes: {total:,} ({per_kb:,.0f} bytes a KB of text), of which")
        for name, size in sorted(ours.items(), key=lambda x: -x[1]):
            print(f"    {name:44} {size:>12,}")
        plain, kept = median(times[False]), median(times[True])
        print(
            f"add_many of every file: {plain:.2f} s without passages, {kept:.2f} s with "
            f"({kept / plain:.2f}x)"
        )

        index = SimIndex(folder / "index-True-0.db", readonly=True)
        answers: dict[tuple[str, str], tuple[float, float]] = {}
        spent: list[float] = []  # per licence, the median of ROUNDS
        brute: list[float] = []  # the same licence's exact shares over every file's set
        for lk, text in licences:
            ours, theirs = [], []
            for _ in range(ROUNDS):  # interleaved, round by round
                start = time.perf_counter()
                found = index.overlaps(text, threshold=0.0)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                query = exact_shingles(text)
                [len(query & fs) for fs in exact_f.values()]
                theirs.append(time.perf_counter() - start)
            spent.append(median(ours))
            brute.append(median(theirs))
            for o in found:
                answers[lk, o.key] = (o.query_share, o.stored_share)
        index.close()
        want = offline[w]
        if answers != want:
            log(f"overlaps() differs from the offline shares: {len(answers)} vs {len(want)}")
            return 1
        returned = {p: s for p, s in answers.items() if max(s) >= ASKED}
        recall, count, broken = score(returned, exact, inside, ASKED)
        print(
            f"each licence asked ({len(licences)} queries, each the median of {ROUNDS}): median "
            f"{median(spent) * 1e3:.1f} ms, max {max(spent) * 1e3:.1f} ms (beside: exact shingle "
            f"sets of every file held in Python, intersected: median {median(brute) * 1e3:.1f} "
            f"ms); at overlaps' default threshold ({ASKED}): recall {recall:.3f} of "
            f"{len(inside)} inside "
            f"pairs, {count} returned, {broken} breaking the precision rule"
        )

        print("\n   the other way round: the licences stored, each copyright file asked")
        path = folder / "licences.db"
        with SimIndex(path, overlaps=True) as index:
            index.add_many(licences)
            answers = {}
            spent = []
            for fk, text in files:
                start = time.perf_counter()
                found = index.overlaps(text, threshold=0.0)
                spent.append(time.perf_counter() - start)
                for o in found:
                    answers[o.key, fk] = (o.stored_share, o.query_share)
        if answers != want:
            log(f"overlaps() differs from the offline shares: {len(answers)} vs {len(want)}")
            return 1
        returned = {p: s for p, s in answers.items() if max(s) >= ASKED}
        recall, count, broken = score(returned, exact, inside, ASKED)
        spent.sort()
        print(
            f"each file asked ({len(files)} queries): median {median(spent) * 1e3:.1f} ms, "
            f"p90 {spent[int(0.9 * (len(spent) - 1))] * 1e3:.1f} ms, max {spent[-1] * 1e3:.1f} "
            f"ms; recall {recall:.3f}, {count} returned, {broken} breaking the precision rule"
        )
    finally:
        for p in folder.glob("*"):
            p.unlink()
        folder.rmdir()
    print("\nanswers: the same as the offline shares (both ways)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="120 copyright files: a smoke run")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("overlaps", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
