#!/usr/bin/env python
"""simindex beside its peers: one run, the same data, one table against numpy brute force.

    python bench/peers.py                   # N=100000 and 1000000 (about 3 minutes on 2 cores)
    python bench/peers.py --quick           # N=10000, fewer repeats: a smoke run for the tests
    python bench/peers.py --n 100000        # choose the sizes (comma-separated)
    python bench/peers.py --big             # also N=10000000 (about 9 minutes more)
    python bench/peers.py --json            # the results as JSON on stdout, not the table
    python bench/peers.py --json out.json   # the table on stdout, and the JSON in out.json
    python bench/peers.py --no-save         # print only (else bench/results/peers.txt)

It measures, in one process and on the same data, the systems a user would
otherwise pick for "which stored 64-bit Simhash fingerprints are within Hamming
distance 3 of this one?", every one beside a numpy brute force timed in the
same run:

- numpy brute force: np.flatnonzero(np.bitwise_count(fps ^ np.uint64(q)) <= 3),
  the exact baseline and the reference for recall;
- simindex: SimIndex(file, k=3), add_fingerprints(), query(fp), query_many()
  (when the checkout has it), the same with blocks=5 (when it has that), and
  all pairs with duplicates(3), and the in-memory pairing alone;
- simhash (PyPI) SimhashIndex, in memory;
- faiss IndexBinaryMultiHash(64, 4, 16), range_search with radius k + 1;
- simhash-pybind find_all, all pairs in C++;
- a document pipeline on real English and Chinese text: simindex (fingerprint,
  query, add) against datasketch MinHash + MinHashLSH(threshold=0.8).

A peer that is not installed, or does not import, gets a row saying so, and
the run carries on. The machines this runs on are noisy, so every figure is a
median, methods are interleaved (query by query, build by build) and the ratio
to the brute force of the same run is what to compare across runs. Progress
goes to stderr; the table to stdout. The exit status is 1 if an exact method
disagrees with brute force. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import inspect
import json
import random
import re
import sys
import tempfile
import textwrap
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):  # `python bench/peers.py` from a checkout
    if _p not in sys.path:
        sys.path.insert(0, _p)

import numpy as np  # noqa: E402
from common import (  # noqa: E402
    environment,
    fmt,
    log,
    median,
    output_options,
    p99,
    print_json,
    save_output,
)
from data import NEWS, english_docs, make_queries  # noqa: E402

from simindex.index import SimIndex  # noqa: E402
from simindex.tokenize import shingles, words  # noqa: E402

K = 3  # the distance every method answers (simindex's default k before k = 8)
PLANTED = 0.01  # fraction of the N fingerprints that are planted near-duplicates
FAISS_NHASH, FAISS_BITS = 4, 16  # IndexBinaryMultiHash(64, 4, 16): 4 tables of 16 bits
PYBIND_BLOCKS = 4  # find_all(hashes, 4 blocks, 3 bits): simindex's own 4 x 16-bit layout
DOC_CHARS = 2000  # English documents: consecutive paragraphs up to about 2 KB
SHINGLE = 5  # datasketch: word 5-shingles
NUM_PERM, LSH_THRESHOLD = 128, 0.8
MIN_LOOP_S = 0.2  # a baseline build that takes milliseconds is looped at least this long

NUMPY = "numpy brute force"
SIM = "simindex"
SIM5 = "simindex blocks=5"
SHI = "simhash SimhashIndex"
FAISS = "faiss MultiHash 4x16"
PYB = "simhash-pybind"
DS = "datasketch MinHashLSH"


# --- the peers: what imports, and why not --------------------------------------------


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:160]


class Peers:
    """The optional libraries, imported once; for each, the module or the reason it is missing."""

    def __init__(self) -> None:
        self.faiss = self.simhash = self.find_all = self.datasketch = None
        self.faiss_why = self.simhash_why = self.pybind_why = self.datasketch_why = ""
        try:
            self.faiss = importlib.import_module("faiss")
        except Exception as exc:  # noqa: BLE001 - any import failure is reported, not fatal
            self.faiss_why = f"faiss-cpu {version('faiss-cpu')}: import failed ({why(exc)})"
        # simhash (1e0n) and simhash-pybind both install a top-level package named
        # `simhash`: the last one installed owns simhash/__init__.py. pybind's C++
        # extension, simhash/_simhash*.so, survives either way, so it is imported directly.
        owner = "neither"
        try:
            mod = importlib.import_module("simhash")
            owner = (
                "simhash"
                if hasattr(mod, "SimhashIndex")
                else "simhash-pybind"
                if hasattr(mod, "find_all")
                else "unknown"
            )
            if owner == "simhash":
                self.simhash = mod
            else:
                self.simhash_why = (
                    f"simhash {version('simhash')}: `import simhash` has no SimhashIndex "
                    f"(simhash/__init__.py is {owner}'s: reinstall simhash after simhash-pybind)"
                )
        except Exception as exc:  # noqa: BLE001
            self.simhash_why = f"simhash {version('simhash')}: import failed ({why(exc)})"
        self.simhash_owner = owner
        try:
            self.find_all = importlib.import_module("simhash._simhash").find_all
        except Exception as exc:  # noqa: BLE001
            self.pybind_why = (
                f"simhash-pybind {version('simhash-pybind')}: simhash._simhash.find_all "
                f"did not import ({why(exc)})"
            )
        try:
            self.datasketch = importlib.import_module("datasketch")
        except Exception as exc:  # noqa: BLE001
            self.datasketch_why = f"datasketch {version('datasketch')}: import failed ({why(exc)})"

    def versions(self) -> dict:
        threads = self.faiss.omp_get_max_threads() if self.faiss is not None else None
        return {
            "faiss-cpu": version("faiss-cpu"),
            "faiss_omp_threads": threads,
            "simhash": version("simhash"),
            "simhash-pybind": version("simhash-pybind"),
            "simhash_init_owner": self.simhash_owner,
            "datasketch": version("datasketch"),
        }


def simindex_has_blocks() -> bool:
    """Whether SimIndex(..., blocks=m) exists in this checkout (it is being added)."""
    try:
        return "blocks" in inspect.signature(SimIndex).parameters
    except (TypeError, ValueError):
        return False


# --- data -----------------------------------------------------------------------------


def make_fingerprints(n: int, seed: int) -> tuple[list[int], int]:
    """N fingerprints: random ones, then PLANTED of N near-duplicates of random
    earlier ones (0..K bits flipped, distances spread evenly). Returns them and
    the number planted."""
    rng = random.Random(seed)
    planted = int(n * PLANTED)
    originals = n - planted
    fps = [rng.getrandbits(64) for _ in range(originals)]
    for i in range(planted):
        fp = fps[rng.randrange(originals)]
        for bit in rng.sample(range(64), i % (K + 1)):
            fp ^= 1 << bit
        fps.append(fp)
    return fps, planted


def key(i: int) -> str:
    return f"fp{i:08d}"


def packed(values: np.ndarray) -> np.ndarray:
    """uint64 fingerprints as faiss binary codes: [n, 8] uint8, little-endian bytes
    (the same order for stored codes and queries, which is all Hamming distance needs)."""
    return np.ascontiguousarray(values.astype("<u8", copy=False)).view(np.uint8).reshape(-1, 8)


# --- rows -----------------------------------------------------------------------------


def row(section: str, method: str, operation: str, unit: str, **kw) -> dict:
    """One line of the table. status: ok, not yet, unavailable, skipped or error."""
    out = {
        "section": section,
        "method": method,
        "operation": operation,
        "unit": unit,
        "status": "ok",
        "median": None,
        "spread": None,  # p99 (latencies) or "min-max" (rates, times over repeats)
        "baseline": None,  # numpy brute force, same unit, same run
        "ratio": None,  # time per item: this method / numpy brute force (>1: slower)
        "recall": None,
        "note": "",
    }
    out.update(kw)
    return out


def missing(section: str, method: str, operation: str, status: str, note: str) -> dict:
    return row(section, method, operation, "-", status=status, note=note)


def rate_ratio(rate: float | None, base_rate: float | None) -> float | None:
    """Time ratio from two rates: (1/rate) / (1/base_rate)."""
    return base_rate / rate if rate and base_rate else None


def rotate(seq: list, r: int) -> list:
    """seq started at its r-th item: who goes first changes from repeat to repeat."""
    if not seq:
        return seq
    r %= len(seq)
    return seq[r:] + seq[:r]


def spread(xs) -> str:
    return f"{fmt(min(xs))}-{fmt(max(xs))}" if len(xs) > 1 else "-"


def recall_of(got: list[set], want: list[set]) -> tuple[float, int, int]:
    """Matches found over matches brute force found (1.0 when there are none), the
    number of wrong extra matches, and the number of queries whose answer differs."""
    found = sum(len(g & w) for g, w in zip(got, want, strict=True))
    total = sum(len(w) for w in want)
    extra = sum(len(g - w) for g, w in zip(got, want, strict=True))
    differ = sum(g != w for g, w in zip(got, want, strict=True))
    return (found / total if total else 1.0), extra, differ


def exact_note(extra: int, differ: int) -> str:
    if differ == 0:
        return "exact"
    return f"NOT EXACT: {differ} queries differ, {extra} matches beyond distance {K}"


# --- 1. build, 2. queries, on N fingerprints -----------------------------------------------


class Built:
    """The indexes of the last build repeat, kept for the queries."""

    def __init__(self) -> None:
        self.arr: np.ndarray | None = None
        self.paths: dict[str, Path] = {}
        self.shi = None
        self.faiss = None


def bench_builds(n, fps, pairs, peers, args, tmp: Path, section: str):
    reps = args.build_repeat if n <= 1_000_000 else 1
    layouts = [(SIM, {})]
    if simindex_has_blocks():
        layouts.append((SIM5, {"blocks": 5}))
    shi_ok = peers.simhash is not None and n <= args.simhash_max_n
    built, times, errors = time_builds(n, fps, pairs, peers, tmp, layouts, shi_ok, reps)
    rows = build_rows(section, n, times, errors, layouts, shi_ok, peers, args)
    return built, rows, layouts, reps


def time_builds(n, fps, pairs, peers, tmp: Path, layouts, shi_ok: bool, reps: int):
    """Every build, R repeats, rotating who goes first: what was built (the
    last of each), the seconds of each repeat, and the errors."""
    built = Built()
    times: dict[str, list[float]] = {NUMPY: [], SIM: [], SIM5: [], SHI: [], FAISS: []}
    errors: dict[str, str] = {}

    def numpy_build(r):
        # milliseconds: looped for at least MIN_LOOP_S, so the timer's noise does not dominate
        loops, t0 = 0, time.perf_counter()
        while True:
            arr = np.fromiter(fps, dtype=np.uint64, count=n)
            loops += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= MIN_LOOP_S:
                break
        times[NUMPY].append(elapsed / loops)
        built.arr = arr

    def simindex_build(name, extra):
        def run(r):
            if name in errors:
                return
            path = tmp / f"{name.replace(' ', '-').replace('=', '')}-{n}-{r}.db"
            try:
                index = SimIndex(path, k=K, hold=False, **extra)  # creating the file is not timed
                try:
                    gc.collect()
                    t0 = time.perf_counter()
                    index.add_fingerprints(iter(pairs))
                    times[name].append(time.perf_counter() - t0)
                    if len(index) != n:
                        raise AssertionError(f"{len(index)} rows after adding {n}")
                finally:
                    index.close()
            except Exception as exc:  # noqa: BLE001 - reported in the row
                errors[name] = why(exc)
                return
            old = built.paths.get(name)
            built.paths[name] = path
            if old is not None:
                for p in tmp.glob(f"{old.name}*"):
                    p.unlink()

        return run

    def shi_build(r):
        built.shi = None  # one SimhashIndex in memory at a time
        gc.collect()
        sh = peers.simhash
        t0 = time.perf_counter()
        objs = [(k, sh.Simhash(fp)) for k, fp in pairs]  # it takes Simhash objects
        index = sh.SimhashIndex(objs, k=K)
        times[SHI].append(time.perf_counter() - t0)
        built.shi = index
        del objs

    def faiss_build(r):
        built.faiss = None
        gc.collect()
        faiss = peers.faiss
        t0 = time.perf_counter()
        codes = packed(np.fromiter(fps, dtype=np.uint64, count=n))
        index = faiss.IndexBinaryMultiHash(64, FAISS_NHASH, FAISS_BITS)
        index.add(codes)
        times[FAISS].append(time.perf_counter() - t0)
        built.faiss = index

    steps = [numpy_build] + [simindex_build(name, extra) for name, extra in layouts]
    if shi_ok:
        steps.append(shi_build)
    if peers.faiss is not None:
        steps.append(faiss_build)
    for r in range(reps):
        log(f"  build repeat {r + 1}/{reps}")
        for step in rotate(steps, r):
            step(r)
    return built, times, errors


def build_rows(section, n, times, errors, layouts, shi_ok: bool, peers, args):
    """A row a build, beside numpy's array (fingerprints a second)."""
    base = n / median(times[NUMPY])
    rows = [
        row(
            section,
            NUMPY,
            "build: np.fromiter(ints) -> uint64 array",
            "fps/s",
            median=base,
            spread=spread([n / t for t in times[NUMPY]]),
            baseline=base,
            ratio=1.0,
            note=f"{fmt(median(times[NUMPY]))} s; the array is the whole 'index'",
        )
    ]

    def build_row(name, operation, note=""):
        if name in errors:
            return row(section, name, operation, "-", status="error", note=errors[name])
        rate = n / median(times[name])
        return row(
            section,
            name,
            operation,
            "fps/s",
            median=rate,
            spread=spread([n / t for t in times[name]]),
            baseline=base,
            ratio=rate_ratio(rate, base),
            note=f"{fmt(median(times[name]))} s{note}",
        )

    rows.append(build_row(SIM, "add_fingerprints(), file in tmpdir", "; SQLite file"))
    if len(layouts) > 1:
        rows.append(build_row(SIM5, "add_fingerprints(), blocks=5", "; 10 indexes"))
    else:
        rows.append(
            missing(
                section,
                SIM5,
                "add_fingerprints(), blocks=5",
                "not yet",
                "SimIndex(path, k=3, blocks=5): no blocks= in this checkout",
            )
        )
    if peers.simhash is None:
        rows.append(missing(section, SHI, "build", "unavailable", peers.simhash_why))
    elif not shi_ok:
        rows.append(
            missing(
                section,
                SHI,
                "build",
                "skipped",
                f"N above --simhash-max-n {args.simhash_max_n:,}: pure Python, its build "
                "time and memory grow linearly (see the rows at smaller N)",
            )
        )
    else:
        rows.append(build_row(SHI, "build: Simhash(int) objects + SimhashIndex", "; in memory"))
    if peers.faiss is None:
        rows.append(missing(section, FAISS, "add", "unavailable", peers.faiss_why))
    else:
        rows.append(build_row(FAISS, "add: pack to uint8[n,8] + add()", "; in memory"))
    return rows


FAISS_RADIUS = K + 1  # faiss binary range_search keeps distances < radius
QUERY_OPERATION = {
    SIM: "query(fp)",
    SIM5: "query(fp), blocks=5",
    SHI: "get_near_dups(Simhash(q))",
    FAISS: f"range_search(1 query, radius {FAISS_RADIUS})",
}


def query_methods(built, layouts, peers, nq):
    """What answers the queries: (name, one query -> result, result -> set of
    positions) for single queries and (name, queries -> result, result -> sets)
    for batches, and the SimIndex files opened for them (the caller closes them)."""
    arr = built.arr

    def numpy_q(q):
        return np.flatnonzero(np.bitwise_count(arr ^ np.uint64(q)) <= K)

    opened = {}
    singles = [(NUMPY, numpy_q, lambda res: set(res.tolist()))]
    for name, _ in layouts:
        if name in built.paths:
            index = SimIndex(built.paths[name], hold=False)
            opened[name] = index
            singles.append((name, index.query, lambda res: {int(m.key[2:]) for m in res}))
    if built.shi is not None:
        sh, shi = peers.simhash, built.shi
        singles.append(
            (SHI, lambda q: shi.get_near_dups(sh.Simhash(q)), lambda res: {int(k[2:]) for k in res})
        )
    if built.faiss is not None:
        fi = built.faiss

        def faiss_q(q):
            return fi.range_search(packed(np.array([q], dtype=np.uint64)), FAISS_RADIUS)

        singles.append((FAISS, faiss_q, lambda res: set(res[2].tolist())))

    batches = []
    for name, index in opened.items():
        fn = getattr(index, "query_many", None)
        if fn is not None:
            batches.append((name, fn, lambda res: [{int(m.key[2:]) for m in ms} for ms in res]))
    if built.faiss is not None:
        fi = built.faiss

        def faiss_batch(qs):
            return fi.range_search(packed(np.array(qs, dtype=np.uint64)), FAISS_RADIUS)

        def faiss_sets(res):
            lims, _, ids = res
            return [set(ids[lims[i] : lims[i + 1]].tolist()) for i in range(nq)]

        batches.append((FAISS, faiss_batch, faiss_sets))
    return opened, singles, batches


def time_queries(singles, batches, qvals, repeat):
    """R passes: every single query, interleaved query by query (rotating who goes
    first), then each batch call (rotating by pass). Latencies per pass (us),
    batch seconds per pass, the answers of the first pass, and the errors."""
    nq = len(qvals)
    lat = {name: [] for name, _, _ in singles}  # per pass: the array of Q latencies
    per_pass = {name: [] for name, _, _ in batches}  # per pass: seconds for all Q
    got = {name: [] for name, _, _ in singles}
    got_batch: dict[str, list[set]] = {}
    errors: dict[str, str] = {}
    perf = time.perf_counter_ns
    for q in qvals[:20]:  # warm-up: connection pool, page cache
        for _name, fn, _ in singles:
            fn(q)
    for _name, fn, _ in batches:  # warm-up, untimed: first-call allocations
        fn(list(qvals))
    for r in range(repeat):
        log(f"  query pass {r + 1}/{repeat}")
        arrays = {name: np.empty(nq) for name in lat}
        gc.collect()
        for i, q in enumerate(qvals):
            for name, fn, conv in rotate(singles, i):
                if name in errors:
                    continue
                try:
                    t0 = perf()
                    res = fn(q)
                    t1 = perf()
                except Exception as exc:  # noqa: BLE001
                    errors[name] = why(exc)
                    continue
                arrays[name][i] = (t1 - t0) / 1e3
                if r == 0:
                    got[name].append(conv(res))
        for name in lat:
            lat[name].append(arrays[name])
        for name, fn, conv in rotate(batches, r):
            if name in errors or f"batch {name}" in errors:
                continue
            gc.collect()
            try:
                t0 = perf()
                res = fn(list(qvals))
                t1 = perf()
            except Exception as exc:  # noqa: BLE001
                errors[f"batch {name}"] = why(exc)
                continue
            per_pass[name].append((t1 - t0) / 1e9)
            if r == 0:
                got_batch[name] = conv(res)
    return lat, per_pass, got, got_batch, errors


def single_query_rows(section, queries, singles, lat, got, errors, layouts, built, peers):
    """A row for numpy (the baseline) and for each method's single queries,
    including the methods that could not run; and whether all were exact."""
    nq = len(queries)
    want = got[NUMPY]
    base_med = median([median(a) for a in lat[NUMPY]])
    base_p99 = median([p99(a) for a in lat[NUMPY]])
    planted = np.array([kind == "planted" for kind, _ in queries])
    exact = True
    rows = [
        row(
            section,
            NUMPY,
            "query: bitwise_count(fps ^ q) <= 3",
            "us",
            median=base_med,
            spread=fmt(base_p99),
            baseline=base_med,
            ratio=1.0,
            recall=1.0,
            note=f"reference: {sum(len(w) for w in want):,} matches for {nq:,} queries",
        )
    ]
    operation = QUERY_OPERATION
    for name, _, _ in singles[1:]:
        if name in errors:
            rows.append(row(section, name, operation[name], "-", status="error", note=errors[name]))
            exact = False
            continue
        med = median([median(a) for a in lat[name]])
        rec, extra, differ = recall_of(got[name], want)
        exact &= differ == 0
        split = (
            f"; planted {fmt(median([median(a[planted]) for a in lat[name]]))} us, "
            f"random {fmt(median([median(a[~planted]) for a in lat[name]]))} us"
        )
        rows.append(
            row(
                section,
                name,
                operation[name],
                "us",
                median=med,
                spread=fmt(median([p99(a) for a in lat[name]])),
                baseline=base_med,
                ratio=med / base_med,
                recall=rec,
                note=exact_note(extra, differ) + split,
            )
        )
    # the rows for methods that could not run at all
    for name, _ in layouts:
        if name not in built.paths:
            rows.append(missing(section, name, operation[name], "error", "no index was built"))
            exact = False
    if SIM5 not in dict(layouts):
        rows.append(
            missing(section, SIM5, operation[SIM5], "not yet", "no blocks= in this checkout")
        )
    if built.shi is None:
        status = "unavailable" if peers.simhash is None else "skipped"
        note = peers.simhash_why if peers.simhash is None else "not built at this N (see build)"
        rows.append(missing(section, SHI, operation[SHI], status, note))
    if built.faiss is None:
        rows.append(missing(section, FAISS, operation[FAISS], "unavailable", peers.faiss_why))
    return rows, exact, base_med


def batch_query_rows(
    section, nq, layouts, opened, batches, per_pass, got_batch, errors, base_med, want, built, peers
):
    """A row for each batch call (query_many, faiss's range_search of all Q), each
    beside numpy's single-query median; and whether all were exact."""
    rows = []
    exact = True
    for name, _ in layouts:
        if name not in opened:
            continue
        op = "query_many(Q fps)" + (", blocks=5" if name == SIM5 else "")
        if not any(b[0] == name for b in batches):
            rows.append(
                missing(section, name, op, "not yet", "SimIndex.query_many: not in this checkout")
            )
        elif f"batch {name}" in errors:
            rows.append(row(section, name, op, "-", status="error", note=errors[f"batch {name}"]))
            exact = False
        else:
            rows.append(
                batch_row(section, name, op, per_pass[name], nq, base_med, got_batch[name], want)
            )
            exact &= rows[-1]["_differ"] == 0
    if built.faiss is not None:
        op = f"range_search(Q queries, radius {FAISS_RADIUS})"
        if f"batch {FAISS}" in errors:
            rows.append(row(section, FAISS, op, "-", status="error", note=errors[f"batch {FAISS}"]))
            exact = False
        else:
            threads = peers.faiss.omp_get_max_threads()
            rows.append(
                batch_row(
                    section,
                    FAISS,
                    op,
                    per_pass[FAISS],
                    nq,
                    base_med,
                    got_batch[FAISS],
                    want,
                    f"; OpenMP threads {threads}",
                )
            )
            exact &= rows[-1]["_differ"] == 0
    return rows, exact


def bench_queries(n, fps, queries, built, layouts, peers, args, section: str):
    """Single queries, interleaved query by query (rotating who goes first), then
    the batch calls, R passes; recall from the first pass."""
    qvals = [q for _, q in queries]
    nq = len(qvals)
    opened, singles, batches = query_methods(built, layouts, peers, nq)
    try:
        lat, per_pass, got, got_batch, errors = time_queries(singles, batches, qvals, args.repeat)
    finally:
        for index in opened.values():
            index.close()
    rows, exact, base_med = single_query_rows(
        section, queries, singles, lat, got, errors, layouts, built, peers
    )
    more, batch_exact = batch_query_rows(
        section,
        nq,
        layouts,
        opened,
        batches,
        per_pass,
        got_batch,
        errors,
        base_med,
        got[NUMPY],
        built,
        peers,
    )
    rows += more
    exact &= batch_exact
    rank = {NUMPY: 0, SIM: 1, SIM5: 2, SHI: 3, FAISS: 4}
    rows.sort(
        key=lambda r: (
            r["operation"].startswith(("query_many", "range_search(Q")),
            rank[r["method"]],
        )
    )
    return rows, exact


def batch_row(section, name, op, seconds, nq, base_med, got, want, extra_note=""):
    us = [s / nq * 1e6 for s in seconds]
    med = median(us)
    rec, extra, differ = recall_of(got, want)
    return row(
        section,
        name,
        op,
        "us/q",
        median=med,
        spread=spread(us),
        baseline=base_med,
        ratio=med / base_med,
        recall=rec,
        note=f"{exact_note(extra, differ)}; {fmt(1e6 / med)} queries/s{extra_note}",
        _differ=differ,
    )


# --- 3. all pairs -------------------------------------------------------------------------


def brute_pairs(arr: np.ndarray) -> set[tuple[int, int]]:
    """Every (i, j), i < j, within K: row i against the rows after it."""
    out = set()
    for i in range(len(arr) - 1):
        js = np.flatnonzero(np.bitwise_count(arr[i + 1 :] ^ arr[i]) <= K)
        if js.size:
            out.update((i, i + 1 + j) for j in js.tolist())
    return out


def brute_pairs_estimate(arr: np.ndarray, seed: int, sample: int = 1000) -> float:
    """Seconds brute_pairs would take: `sample` random rows of it timed, scaled to N."""
    rng = random.Random(seed)
    rows = [rng.randrange(len(arr) - 1) for _ in range(sample)]
    t0 = time.perf_counter()
    for i in rows:
        np.flatnonzero(np.bitwise_count(arr[i + 1 :] ^ arr[i]) <= K)
    return (time.perf_counter() - t0) / sample * (len(arr) - 1)


def pairing_alone():
    """simindex's in-memory pairing, without reading the index: (name, prepare, run).
    prepare(items) makes its input (untimed); run(input) gives (i, j) positions in items."""

    import importlib

    try:
        home = importlib.import_module("simindex.pairs")  # since the in-memory split
    except ImportError:
        home = importlib.import_module("simindex.query")

    def run_arrays(fps_arr):
        a, b, _ = home.pairs_within(fps_arr, K)
        return zip(a.tolist(), b.tolist(), strict=True)

    def prepare_arrays(items):
        return np.fromiter((fp for _, fp in items), dtype=np.uint64, count=len(items))

    return "pairs_within(uint64 array, 3)", prepare_arrays, run_arrays


def time_pairs(fps, arr, index, alone, peers, run_brute: bool, reps: int):
    """Every all-pairs method, R repeats, rotating who goes first: seconds per
    repeat, the pairs of the first (as sorted position pairs), and the errors."""
    items = list(index.items()) if index is not None else []
    if alone is not None:
        alone_input = alone[1](items)  # untimed: the input the pairing takes
        position = {k: int(k[2:]) for k, _ in items}
    times: dict[str, list[float]] = {NUMPY: [], PYB: [], "dup": [], "pairs": []}
    found: dict[str, set] = {}
    errors: dict[str, str] = {}

    def as_index_pairs(pairs):
        return {tuple(sorted((int(p.key_a[2:]), int(p.key_b[2:])))) for p in pairs}

    def as_pairs_alone(res):
        out = set()
        for p in res:
            if isinstance(p, tuple) and len(p) == 2:  # positions in items
                a, b = position[items[p[0]][0]], position[items[p[1]][0]]
            else:  # a Pair of keys
                a, b = int(p.key_a[2:]), int(p.key_b[2:])
            out.add((min(a, b), max(a, b)))
        return out

    def step_brute(r):
        t0 = time.perf_counter()
        res = brute_pairs(arr)
        times[NUMPY].append(time.perf_counter() - t0)
        found.setdefault(NUMPY, res)

    def step_pybind(r):
        t0 = time.perf_counter()
        res = peers.find_all(set(fps), PYBIND_BLOCKS, K)  # the C++ binding takes a set
        times[PYB].append(time.perf_counter() - t0)
        found.setdefault(PYB, res)

    def step_dup(r):
        if "dup" in errors:
            return
        try:
            t0 = time.perf_counter()
            res = index.duplicates(K)
            times["dup"].append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            errors["dup"] = why(exc)
            return
        found.setdefault("dup", as_index_pairs(res))

    def step_pairs(r):
        if "pairs" in errors:
            return
        try:
            t0 = time.perf_counter()
            res = list(alone[2](alone_input))
            times["pairs"].append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001
            errors["pairs"] = why(exc)
            return
        found.setdefault("pairs", as_pairs_alone(res))

    steps = []
    if run_brute:
        steps.append(step_brute)
    if peers.find_all is not None:
        steps.append(step_pybind)
    if index is not None:
        steps.append(step_dup)
        if alone is not None:
            steps.append(step_pairs)
    try:
        for r in range(reps):
            log(f"  all pairs repeat {r + 1}/{reps}")
            gc.collect()
            for step in rotate(steps, r):
                step(r)
                gc.collect()
    finally:
        if index is not None:
            index.close()

    return times, found, errors


def bench_pairs(n, fps, built, peers, args, section: str):
    reps = args.pairs_repeat if n <= 1_000_000 else 1
    arr = built.arr
    path = built.paths.get(SIM)
    index = SimIndex(path) if path is not None else None
    alone = pairing_alone()
    run_brute = n <= args.brute_pairs_max_n
    times, found, errors = time_pairs(fps, arr, index, alone, peers, run_brute, reps)
    return pair_rows(
        section, fps, arr, index is not None, alone, peers, args, run_brute, times, found, errors
    )


def pair_rows(section, fps, arr, have_index, alone, peers, args, run_brute, times, found, errors):
    """A row for numpy (the reference, or its estimate when too slow), the C++
    binding and simindex's two ways; and whether all agree with the reference."""
    if run_brute:
        base = median(times[NUMPY])
        ref, ref_name = found[NUMPY], NUMPY
    else:
        base = brute_pairs_estimate(arr, args.seed)
        ref, ref_name = found.get("pairs", found.get("dup")), "simindex"
    exact = ref is not None
    approx = "" if run_brute else "~"
    ref = ref if ref is not None else set()
    dist0 = sum(fps[i] == fps[j] for i, j in ref)
    ref_values = {(min(fps[i], fps[j]), max(fps[i], fps[j])) for i, j in ref if fps[i] != fps[j]}
    rows = []
    if run_brute:
        rows.append(
            row(
                section,
                NUMPY,
                "all pairs: row i vs rows after it",
                "s",
                median=base,
                spread=spread(times[NUMPY]),
                baseline=base,
                ratio=1.0,
                recall=1.0,
                note=f"reference: {len(ref):,} pairs ({dist0:,} at distance 0)",
            )
        )
    else:
        rows.append(
            row(
                section,
                NUMPY,
                "all pairs: row i vs rows after it",
                "s",
                status="skipped",
                baseline=base,
                note=f"too slow at this N: about {fmt(base)} s (1,000 rows timed, scaled to "
                f"N); ratios marked ~ use this estimate; reference: simindex's pairs",
            )
        )

    def index_row(name, op, key_, note=""):
        if key_ in errors or not have_index:
            return row(
                section,
                name,
                op,
                "-",
                status="error",
                note=errors.get(key_, "no simindex index was built"),
            )
        med = median(times[key_])
        res = found[key_]
        agree = res == ref
        rec = len(res & ref) / len(ref) if ref else 1.0
        return row(
            section,
            name,
            op,
            "s",
            median=med,
            spread=spread(times[key_]),
            baseline=base,
            ratio=med / base,
            recall=rec,
            note=f"{len(res):,} pairs, {'agree' if agree else 'DISAGREE'} with {ref_name}{note}",
            _agree=agree,
            _approx=approx,
        )

    if peers.find_all is None:
        rows.append(
            missing(section, PYB, "find_all (C++), all pairs", "unavailable", peers.pybind_why)
        )
    else:
        med = median(times[PYB])
        res = {(int(a), int(b)) for a, b in found[PYB]}
        agree = res == ref_values
        rec = len(res & ref_values) / len(ref_values) if ref_values else 1.0
        rows.append(
            row(
                section,
                PYB,
                f"find_all(set, {PYBIND_BLOCKS} blocks, {K}) (C++)",
                "s",
                median=med,
                spread=spread(times[PYB]),
                baseline=base,
                ratio=med / base,
                recall=rec,
                _agree=agree,
                _approx=approx,
                note=f"{len(res):,} pairs of distinct values, "
                f"{'agree' if agree else 'DISAGREE'} with {ref_name}'s {len(ref_values):,}; "
                f"takes a set of hashes: can't report the {dist0:,} identical-fingerprint pairs",
            )
        )
        exact &= agree
    rows.append(index_row(SIM, "duplicates(3): read + pair", "dup", "; reads the SQLite file"))
    if alone is None:
        rows.append(
            missing(
                section,
                SIM,
                "pairing alone",
                "not yet",
                "no pairs_within in this checkout",
            )
        )
    else:
        rows.append(index_row(SIM, f"{alone[0]}: pair only", "pairs", "; input made untimed"))
    for r_ in rows:
        if r_["method"] == SIM:
            exact &= r_.get("_agree", r_["status"] == "not yet")
    for r_ in rows:
        if r_.get("_approx") and r_["ratio"] is not None:
            r_["ratio_approx"] = True
    return rows, exact


# --- 4. documents: fingerprint, query, add --------------------------------------------------


def english_documents() -> tuple[list[str], str]:
    """The licence texts cut into documents of consecutive paragraphs, about DOC_CHARS each."""
    texts, source = english_docs()
    docs = []
    for text in texts:
        cur: list[str] = []
        size = 0
        mine: list[str] = []
        for para in re.split(r"\n\s*\n", text):
            para = para.strip()
            if not para:
                continue
            cur.append(para)
            size += len(para)
            if size >= DOC_CHARS:
                mine.append("\n\n".join(cur))
                cur, size = [], 0
        if cur:
            if mine and size < DOC_CHARS // 2:  # a short tail joins the file's last document
                mine[-1] += "\n\n" + "\n\n".join(cur)
            else:
                mine.append("\n\n".join(cur))
        docs += mine
    return docs, source


EN_EDITS = ("one word replaced", "two words replaced", "a sentence appended", "one word deleted")


def edit_english(text: str, rng: random.Random, edit: str) -> str:
    """A lightly edited copy: re-wrapped at another width, with one small edit."""
    tokens = text.split()
    wordlike = [i for i, t in enumerate(tokens) if t.isalpha() and len(t) > 2]
    if edit == "one word replaced":
        tokens[rng.choice(wordlike)] = rng.choice([tokens[i] for i in wordlike])
    elif edit == "two words replaced":
        for i in rng.sample(wordlike, 2):
            tokens[i] = rng.choice([tokens[j] for j in wordlike])
    elif edit == "a sentence appended":
        tokens += ["This", "copy", "was", "posted", "again", "by", "request."]
    else:
        del tokens[rng.choice(wordlike)]
    return textwrap.fill(" ".join(tokens), width=rng.choice((60, 66, 80)))


def edit_chinese(text: str, rng: random.Random) -> str:
    """One Han character replaced by another from the same text."""
    han = [i for i, c in enumerate(text) if "\u4e00" <= c <= "\u9fff"]
    i = rng.choice(han)
    return text[:i] + rng.choice([text[j] for j in han if text[j] != text[i]]) + text[i + 1 :]


def document_sets(seed: int, quick: bool):
    """[(language, source, docs, copies)]: docs are (key, text) in stream order (the
    originals, then the copies shuffled); copies maps a copy's key to its original's."""
    rng = random.Random(seed)
    out = []
    try:
        en, en_source = english_documents()
    except SystemExit as exc:
        en, en_source = [], str(exc)
    if quick:
        en = en[:40]
    if en:
        originals = [(f"en-{i:03d}", t) for i, t in enumerate(en)]
        copies = [
            (f"en-{i:03d}.copy", edit_english(t, rng, EN_EDITS[i % len(EN_EDITS)]))
            for i, t in enumerate(en)
        ]
        rng.shuffle(copies)
        pairs = {k: k.split(".")[0] for k, _ in copies}
        source = (
            f"{en_source}; {len(en)} documents of paragraphs up to ~{DOC_CHARS} chars, "
            f"each with a re-wrapped copy with {' / '.join(EN_EDITS)} (in turn)"
        )
        out.append(("English", source, originals + copies, pairs))
    rows = []
    if NEWS.is_file():
        lines = NEWS.read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
    zh_rows = [(r["id"], r["text"]) for r in rows if str(r.get("id", "")).startswith("zh-")]
    if zh_rows:
        originals = [(k, t) for k, t in zh_rows if "." not in k]
        variants = [(k, t) for k, t in zh_rows if "." in k]
        made = [(f"{k}.edited", edit_chinese(t, rng)) for k, t in originals]
        copies = variants + made
        rng.shuffle(copies)
        pairs = {k: k.split(".")[0] for k, _ in copies}
        source = (
            f"{NEWS.relative_to(ROOT)}, ids zh-*: {len(originals)} articles, "
            f"their {len(variants)} variants from the file and {len(made)} copies "
            "with one character replaced"
        )
        out.append(("Chinese", source, originals + copies, pairs))
    return out


def docs_numpy(docs, found):
    """The exact baseline: simhash() each document, scan the fingerprints before it."""
    from simindex.fingerprint import simhash

    arr = np.zeros(len(docs), dtype=np.uint64)
    keys = [k for k, _ in docs]
    for i, (k, text) in enumerate(docs):
        fp = simhash(text)
        hits = np.flatnonzero(np.bitwise_count(arr[:i] ^ np.uint64(fp)) <= K)
        arr[i] = fp
        if found is not None:
            found[k] = {keys[j] for j in hits.tolist()}


def docs_rule(docs) -> dict[str, set[str]]:
    """What query(text) must answer, by brute force (untimed): the earlier
    documents within K, or whose signatures' keys meet (signature.meets: a
    short text one unit away, a longer one with a band of its sketch equal),
    whose similarity reaches the default threshold."""
    from simindex.fingerprint import DEFAULT_CONFIG
    from simindex.signature import (
        DEFAULT_THRESHOLD,
        fingerprint_and_signature,
        meets,
        similarity,
    )

    made = [fingerprint_and_signature(text, DEFAULT_CONFIG) for _, text in docs]
    out: dict[str, set[str]] = {}
    for i, (k, _) in enumerate(docs):
        fp, sig = made[i]
        out[k] = {
            docs[j][0]
            for j in range(i)
            if ((fp ^ made[j][0]).bit_count() <= K or meets(sig, made[j][1]) is not None)
            and similarity(sig, made[j][1]) >= DEFAULT_THRESHOLD
        }
    return out


def docs_simindex(docs, found):
    """query(text), then add(key, text): the text is fingerprinted twice."""
    with SimIndex(":memory:", k=K) as index:
        t0 = time.perf_counter()  # creating the index (Alembic) is not timed
        for k, text in docs:
            hits = index.query(text)
            index.add(k, text)
            if found is not None:
                found[k] = {m.key for m in hits}
        return time.perf_counter() - t0


def docs_simindex_once(docs, found):
    """fingerprint() once, then query(fp) and add_fingerprint()."""
    with SimIndex(":memory:", k=K) as index:
        t0 = time.perf_counter()
        for k, text in docs:
            fp = index.fingerprint(text)
            hits = index.query(fp)
            index.add_fingerprint(k, fp)
            if found is not None:
                found[k] = {m.key for m in hits}
        return time.perf_counter() - t0


def docs_datasketch(ds):
    """MinHash over word 5-shingles (simindex's tokenizer, so both see the same
    words), MinHashLSH query, then insert."""

    def run(docs, found):
        lsh = ds.MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
        for k, text in docs:
            m = ds.MinHash(num_perm=NUM_PERM)
            m.update_batch([s.encode("utf-8") for s in shingles(words(text), SHINGLE)])
            hits = lsh.query(m)
            lsh.insert(k, m)
            if found is not None:
                found[k] = set(hits)

    return run


def jaccard_hits(docs, copies) -> int:
    """Planted pairs whose exact Jaccard similarity of shingle sets reaches the LSH
    threshold: what MinHashLSH estimates, and the brute force for its recall."""
    sets = {k: set(shingles(words(t), SHINGLE)) for k, t in docs}
    return sum(
        len(sets[c] & sets[o]) / len(sets[c] | sets[o]) >= LSH_THRESHOLD for c, o in copies.items()
    )


def bench_documents(peers, args):
    from simindex.fingerprint import simhash

    sections, info = [], []
    exact = True
    passes = args.doc_repeat
    for lang, source, docs, copies in document_sets(args.seed, args.quick):
        section = f"documents, {lang}"
        rows: list[dict] = []
        info.append(f"{lang}: {source}")
        log(f"[docs] {lang}: {len(docs)} documents, {passes} passes")
        simhash(docs[0][1])  # warm-up: jieba's dictionary, stop words
        methods = [
            (NUMPY, docs_numpy, "simhash() + numpy scan of the earlier fps"),
            (SIM, docs_simindex, "query(text) + add(key, text), :memory:"),
            (SIM, docs_simindex_once, "fingerprint() once, query(fp), add_fingerprint()"),
        ]
        if peers.datasketch is not None:
            op = f"MinHash({NUM_PERM}), word {SHINGLE}-shingles, LSH({LSH_THRESHOLD})"
            methods.append((DS, docs_datasketch(peers.datasketch), op))
        rates: dict[str, list[float]] = {op: [] for _, _, op in methods}
        found: dict[str, dict] = {op: {} for _, _, op in methods}
        errors: dict[str, str] = {}
        for r in range(passes):
            for _name, fn, op in rotate(methods, r):
                if op in errors:
                    continue
                gc.collect()
                try:
                    t0 = time.perf_counter()
                    inner = fn(docs, found[op] if r == 0 else None)
                    elapsed = time.perf_counter() - t0
                except Exception as exc:  # noqa: BLE001
                    errors[op] = why(exc)
                    continue
                rates[op].append(len(docs) / (inner if inner is not None else elapsed))
        base = median(rates[methods[0][2]])
        truth = found[methods[0][2]]  # by fingerprint: what query(fp) must answer
        by_rule = docs_rule(docs)  # what query(text) must answer
        for name, fn, op in methods:
            if op in errors:
                rows.append(row(section, name, op, "-", status="error", note=errors[op]))
                exact = False
                continue
            rate = median(rates[op])
            hit = sum(copies[c] in found[op].get(c, set()) for c in copies)
            others = sum(len(found[op][k] - {copies.get(k)}) for k, _ in docs)
            if name == NUMPY:
                note = (
                    f"exact Hamming <= {K}: {hit}/{len(copies)} planted copies; "
                    f"{others} other matches"
                )
            elif name == SIM:
                texts = fn is docs_simindex
                same = found[op] == (by_rule if texts else truth)
                exact &= same
                note = (
                    f"{hit}/{len(copies)} planted copies; "
                    f"{'the same' if same else 'NOT THE SAME'} matches as brute force"
                    + (" (within k or keys meeting, verified)" if texts else "")
                )
            else:
                note = (
                    f"{hit}/{len(copies)} planted copies (exact Jaccard >= {LSH_THRESHOLD}: "
                    f"{jaccard_hits(docs, copies)}); {others} other matches"
                )
            rows.append(
                row(
                    section,
                    name,
                    op,
                    "docs/s",
                    median=rate,
                    spread=spread(rates[op]),
                    baseline=base,
                    ratio=rate_ratio(rate, base),
                    recall=hit / len(copies),
                    note=note,
                )
            )
        if peers.datasketch is None:
            rows.append(
                missing(section, DS, "MinHash + MinHashLSH", "unavailable", peers.datasketch_why)
            )
        title = f"documents, {lang} ({len(docs)} docs, {len(copies)} planted copies): per document"
        sections.append({"title": title + " fingerprint + query + insert", "rows": rows})
    return sections, info, exact


# --- output -----------------------------------------------------------------------------------


def ratio_words(r: dict) -> str:
    ratio = r["ratio"]
    if ratio is None:
        return ""
    if abs(ratio - 1) < 0.005:
        return "same"
    if ratio >= 1:
        return f"{fmt(ratio)}x slower"
    return f"{fmt(1 / ratio)}x faster"


def cells(r: dict) -> tuple:
    if r["status"] != "ok":
        base = fmt(r["baseline"]) if r["baseline"] is not None else "-"
        return (
            r["method"],
            r["operation"],
            r["unit"],
            r["status"],
            "-",
            base,
            "-",
            "-",
            "",
            r["note"],
        )
    approx = "~" if r.get("ratio_approx") else ""
    return (
        r["method"],
        r["operation"],
        r["unit"],
        fmt(r["median"]),
        r["spread"] or "-",
        fmt(r["baseline"]) if r["baseline"] is not None else "-",
        approx + (fmt(r["ratio"]) if r["ratio"] is not None else "-"),
        f"{r['recall']:.3f}" if r["recall"] is not None else "-",
        (approx + ratio_words(r)) if r["ratio"] is not None else "",
        r["note"],
    )


def table(res: dict) -> str:
    env, par = res["environment"], res["parameters"]
    peers = env["peers"]
    threads = peers["faiss_omp_threads"]
    lines = [
        "simindex beside its peers (bench/peers.py)",
        f"date        {env['date_utc']}    git {env['git']}"
        + ("  (uncommitted changes in the checkout)" if env["git"].endswith("dirty") else ""),
        f"machine     nproc {env['nproc']}    cpu {env['cpu']}    "
        f"load average at start {env['loadavg_at_start']}",
        f"versions    python {env['python']}    sqlite {env['sqlite']}    numpy {env['numpy']}    "
        f"sqlalchemy {env['sqlalchemy']}    xxhash {env['xxhash']}    jieba {env['jieba']}",
        f"peers       faiss-cpu {peers['faiss-cpu']}"
        + (f" (OpenMP threads {threads})" if threads else "")
        + f"    simhash {peers['simhash']}    simhash-pybind {peers['simhash-pybind']}    "
        f"datasketch {peers['datasketch']}",
        f"data        N random 64-bit fingerprints (random.Random({par['seed']}).getrandbits(64)), "
        f"{PLANTED:.0%} of them planted near-duplicates at distance 0-{K}; "
        f"Q={par['queries']:,} queries (half planted, half random); k={K}",
        f"repeats     builds: median of {par['build_repeat']}; queries: {par['repeat']} passes, "
        f"methods interleaved query by query; all pairs: median of {par['pairs_repeat']}; "
        f"documents: median of {par['doc_repeat']} pass(es) (1 build and 1 all-pairs run above "
        f"N=1,000,000)",
    ]
    if peers["simhash"] != "not installed" and peers["simhash-pybind"] != "not installed":
        lines.append(
            f"note        simhash and simhash-pybind both install the package `simhash`; its "
            f"__init__.py is {peers['simhash_init_owner']}'s here (pybind's find_all is used "
            f"from simhash._simhash)"
        )
    for text in res.get("documents_info", []):
        lines.append(f"documents   {text}")
    lines.append("")
    head = (
        "method",
        "operation",
        "unit",
        "median",
        "p99|range",
        "numpy",
        "ratio",
        "recall",
        "",
        "note",
    )
    body = []
    for section in res["sections"]:
        body.append(section["title"])
        body += [cells(r) for r in section["rows"]]
    table_rows = [b for b in body if isinstance(b, tuple)]
    widths = [max(len(str(t[i])) for t in (head, *table_rows)) for i in range(len(head))]
    widths[-1] = 0  # the note is left unpadded

    def render(t: tuple) -> str:
        return "  ".join(
            str(v).ljust(w) if i in (0, 1, 2, 8, 9) else str(v).rjust(w)
            for i, (v, w) in enumerate(zip(t, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths[:-1]) + "  ----"
    lines += [render(head), rule]
    for b in body:
        lines.append(f"[{b}]" if isinstance(b, str) else render(b))
    lines.append(rule)
    lines += [
        f"exact: {'yes' if res['exact'] else 'NO'} (every exact method returned what brute "
        f"force returned)",
        "",
        "median: over the repeats (rates, times) or over the Q queries of a pass (us, then the "
        "median over passes); p99|range: p99 over the Q queries (median over passes), or min-max "
        "over repeats. numpy: the brute force's figure for the same work in the same run. ratio: "
        "time per item, method / numpy brute force (>1: slower); compare ratios across runs and "
        "machines, not absolute numbers. recall: matches found / matches brute force found "
        "(all pairs: pairs; documents: planted copies found by the query the copy made).",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--n",
        default="100000,1000000",
        help="index sizes, comma-separated (default 100000,1000000)",
    )
    ap.add_argument("--big", action="store_true", help="also N=10000000 (long)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: N=10000, Q=200, one repeat, 40 English documents",
    )
    ap.add_argument("--queries", type=int, default=None, help="queries, half planted (1000)")
    ap.add_argument("--repeat", type=int, default=None, help="query passes (default 5)")
    ap.add_argument("--build-repeat", type=int, default=None, help="builds per N (default 3)")
    ap.add_argument(
        "--pairs-repeat", type=int, default=None, help="all-pairs runs per N (default 3)"
    )
    ap.add_argument("--doc-repeat", type=int, default=None, help="document passes (default 5)")
    ap.add_argument(
        "--simhash-max-n",
        type=int,
        default=1_000_000,
        help="largest N for simhash's SimhashIndex (pure Python; default 1000000)",
    )
    ap.add_argument(
        "--brute-pairs-max-n",
        type=int,
        default=100_000,
        help="largest N for numpy all pairs; above it, estimated (default 100000)",
    )
    ap.add_argument(
        "--faiss-threads",
        type=int,
        default=1,
        help="faiss OpenMP threads (default 1, like every other method; 0: faiss's own default)",
    )
    ap.add_argument("--no-docs", action="store_true", help="skip the document pipeline")
    ap.add_argument("--seed", type=int, default=20240901, help="random seed (default 20240901)")
    ap.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="the results as JSON: on stdout instead of the table, or into PATH",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    quick = args.quick
    defaults = {
        "queries": (1000, 200),
        "repeat": (5, 2),
        "build_repeat": (3, 1),
        "pairs_repeat": (3, 1),
        "doc_repeat": (5, 1),
    }
    for name, (full, small) in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    try:
        sizes = (
            [10_000]
            if quick and args.n == ap.get_default("n")
            else [int(s.replace("_", "")) for s in args.n.split(",") if s.strip()]
        )
    except ValueError:
        ap.error(f"--n: comma-separated whole numbers, not {args.n!r}")
    if args.big and 10_000_000 not in sizes:
        sizes.append(10_000_000)
    if (
        min(sizes) < 100
        or args.queries < 2
        or min(args.repeat, args.build_repeat, args.pairs_repeat, args.doc_repeat) < 1
    ):
        ap.error("sizes >= 100, --queries >= 2 and repeats >= 1, please")
    args.sizes = sizes
    return save_output("peers", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    quick, sizes = args.quick, args.sizes
    started = time.perf_counter()
    peers = Peers()
    if peers.faiss is not None and args.faiss_threads > 0:
        peers.faiss.omp_set_num_threads(args.faiss_threads)
    env = environment()
    env["peers"] = peers.versions()
    res = {
        "environment": env,
        "parameters": {
            "sizes": sizes,
            "queries": args.queries,
            "repeat": args.repeat,
            "build_repeat": args.build_repeat,
            "pairs_repeat": args.pairs_repeat,
            "doc_repeat": args.doc_repeat,
            "simhash_max_n": args.simhash_max_n,
            "brute_pairs_max_n": args.brute_pairs_max_n,
            "faiss_threads": args.faiss_threads,
            "seed": args.seed,
            "k": K,
            "planted_fraction": PLANTED,
            "quick": quick,
        },
        "sections": [],
    }
    exact = True
    for n in sizes:
        t_n = time.perf_counter()
        fps, planted = make_fingerprints(n, args.seed)
        pairs = [(key(i), fp) for i, fp in enumerate(fps)]
        queries = make_queries(fps, args.queries, args.seed)
        section = f"N={n:,} ({planted:,} planted)"
        with tempfile.TemporaryDirectory(prefix="simindex-peers-") as tmp:
            log(f"[N={n:,}] builds (in {tmp})")
            built, rows, layouts, reps = bench_builds(
                n, fps, pairs, peers, args, Path(tmp), section
            )
            res["sections"].append({"title": f"{section}: build", "rows": rows})
            log(f"[N={n:,}] {args.queries:,} queries x {args.repeat} passes")
            rows, ok = bench_queries(n, fps, queries, built, layouts, peers, args, section)
            exact &= ok
            res["sections"].append({"title": f"{section}: queries, k={K}", "rows": rows})
            built.shi = built.faiss = None
            gc.collect()
            log(f"[N={n:,}] all pairs within {K}")
            rows, ok = bench_pairs(n, fps, built, peers, args, section)
            exact &= ok
            res["sections"].append({"title": f"{section}: all pairs within {K}", "rows": rows})
        log(f"[N={n:,}] done in {time.perf_counter() - t_n:.0f} s")
        del fps, pairs, built
        gc.collect()
    if not args.no_docs:
        sections, info, ok = bench_documents(peers, args)
        exact &= ok
        res["documents_info"] = info
        res["sections"] += sections
    res["exact"] = exact
    res["elapsed_s"] = time.perf_counter() - started
    log(f"done in {res['elapsed_s']:.0f} s")

    for section in res["sections"]:
        for r in section["rows"]:
            for k in [k for k in r if k.startswith("_")]:
                del r[k]
    if args.json == "-":
        print_json(res)
    else:
        print(table(res))
        if args.json:
            Path(args.json).write_text(
                json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            log(f"JSON written to {args.json}")
    if not exact:
        log("FAIL: an exact method disagrees with brute force (see the table)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
