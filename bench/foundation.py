#!/usr/bin/env python
"""simindex foundation benchmark: one run, one table, every number next to a baseline.

    python bench/foundation.py              # N=100000, Q=1000, R=5 (under a minute on 2 cores)
    python bench/foundation.py --n 10000    # a quicker run
    python bench/foundation.py --json       # the same results as JSON on stdout
    python bench/foundation.py --no-save    # print only (else bench/results/foundation.txt)

It measures, in one process and one run:

1. simhash() throughput in MB/s of UTF-8 input, English and Chinese separately,
   against xxhash.xxh64 over the same bytes (raw hashing speed).
2. add_fingerprints() of N random 64-bit fingerprints into a fresh SQLite file,
   against plain sqlite3 executemany of the same rows into the same schema.
3. query(fp) latency on that N-fingerprint index (half planted near-duplicates,
   half random), against a numpy brute-force scan of the same N fingerprints,
   and checks that both return exactly the same matches (exit status 1 if not).
4. Candidates per query: how many stored fingerprints share at least one 16-bit
   block with the query (what the block lookups read before the Hamming filter),
   against N (what a brute-force scan reads).

The machines this runs on are noisy, so every figure is a median over R repeats
(or over the Q queries of a repeat), each is paired with a baseline measured in
the same run, interleaved with it, and the ratio is what to compare across runs.
Progress goes to stderr; the table (or JSON) to stdout. See bench/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # `python bench/foundation.py` from a checkout
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import xxhash  # noqa: E402
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

from simindex.fingerprint import simhash  # noqa: E402
from simindex.index import SimIndex  # noqa: E402

K = 3  # the index's k (the default before k = 8): 4 blocks of 16 bits
MIN_BASELINE_S = 0.1  # the xxh64 baseline is fast: loop it at least this long per repeat


# --- 1. fingerprint throughput ----------------------------------------------------------


def jieba_dictionary_docs(seed: int, target_bytes: int) -> list[str]:
    """Chinese-like text from jieba's own dictionary: words drawn by frequency
    (fixed seed), clauses joined with "，", sentences ended with "。", about 240
    characters a document (the size of the example news articles)."""
    from importlib.resources import files

    words, freqs = [], []
    with (files("jieba") / "dict.txt").open("r", encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                words.append(parts[0])
                freqs.append(int(parts[1]))
    rng = random.Random(seed)
    stream = iter(rng.choices(words, weights=freqs, k=target_bytes // 3 + 1000))
    docs, size = [], 0
    try:
        while size < target_bytes:
            doc = ""
            while len(doc) < 240:
                clauses = [
                    "".join(next(stream) for _ in range(rng.randint(2, 6)))
                    for _ in range(rng.randint(1, 4))
                ]
                doc += "，".join(clauses) + "。"
            docs.append(doc)
            size += len(doc.encode("utf-8"))
    except StopIteration:
        pass
    return docs


def chinese_docs(source: str, seed: int, target_bytes: int) -> tuple[list[str], str]:
    if source in ("auto", "news") and NEWS.is_file():
        docs = []
        with NEWS.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    if str(row.get("id", "")).startswith("zh-") and row.get("text"):
                        docs.append(row["text"])
        if docs:
            return docs, f"{NEWS.relative_to(ROOT)}: {len(docs)} articles with ids zh-*"
    if source == "news":
        raise SystemExit(f"--zh-source news: no Chinese articles in {NEWS}")
    why = "" if source == "jieba" else f" ({NEWS.relative_to(ROOT)} has none)"
    docs = jieba_dictionary_docs(seed, target_bytes)
    return docs, (
        f"jieba dict.txt{why}: {len(docs)} documents of words sampled by "
        f"frequency (seed {seed}) joined with ， and 。"
    )


def repeat_to(docs: list[str], target_bytes: int) -> tuple[list[str], int]:
    """The documents, repeated whole until they hold at least target_bytes of UTF-8."""
    size = sum(len(d.encode("utf-8")) for d in docs)
    times = max(1, -(-target_bytes // size))
    return docs * times, times


def bench_fingerprint(docs: list[str], repeat: int) -> dict:
    blobs = [d.encode("utf-8") for d in docs]
    total = sum(len(b) for b in blobs)
    mb = total / 1e6
    simhash(docs[0])  # warm-up (jieba's dictionary, stop words) outside the timings
    sim, raw = [], []
    digest = xxhash.xxh64_intdigest
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        for d in docs:
            simhash(d)
        sim.append(mb / (time.perf_counter() - t0))
        # baseline, interleaved: xxh64 over the same bytes, looped long enough to time
        gc.collect()
        loops, t0 = 0, time.perf_counter()
        while True:
            for b in blobs:
                digest(b)
            loops += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= MIN_BASELINE_S:
                break
        raw.append(mb * loops / elapsed)
    return {
        "bytes": total,
        "documents": len(docs),
        "simhash_mb_s": sim,
        "xxh64_mb_s": raw,
        "median": median(sim),
        "baseline_median": median(raw),
        "ratio": median(sim) / median(raw),
    }


# --- 2. bulk add --------------------------------------------------------------------


def raw_rows(pairs, spans):
    """What the baseline inserts: key, signed fingerprint, signed blocks (as simindex stores)."""
    for key, fp in pairs:
        yield (key, fp - (1 << 64) if fp >> 63 else fp, *[(fp >> s) & m for s, m in spans])


def bench_add(pairs, repeat: int, tmp: Path) -> tuple[dict, Path]:
    sim, raw = [], []
    keep = None
    for r in range(repeat):
        # simindex: a new file each run; creating it (Alembic) is not timed
        path = tmp / f"simindex-{r}.db"
        index = SimIndex(path, k=K, hold=False)
        spans = index.layout.spans()
        gc.collect()
        t0 = time.perf_counter()
        index.add_fingerprints(iter(pairs))
        sim.append(len(pairs) / (time.perf_counter() - t0))
        assert len(index) == len(pairs), "add_fingerprints lost rows"
        index.close()
        if keep is not None:
            for p in tmp.glob(f"{keep.name}*"):
                p.unlink()
        keep = path

        # baseline, interleaved: the same schema (made by simindex, untimed), plain
        # sqlite3, same pragmas, one BEGIN IMMEDIATE transaction, executemany INSERT
        bpath = tmp / f"baseline-{r}.db"
        SimIndex(bpath, k=K).close()
        conn = sqlite3.connect(bpath, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        cols = ", ".join(["key", "fingerprint"] + [f"block_{i}" for i in range(len(spans))])
        marks = ", ".join("?" * (2 + len(spans)))
        sql = f"INSERT INTO simindex_fingerprints ({cols}) VALUES ({marks})"
        gc.collect()
        t0 = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(sql, raw_rows(pairs, spans))
        conn.execute("COMMIT")
        raw.append(len(pairs) / (time.perf_counter() - t0))
        conn.close()
        for p in tmp.glob(f"{bpath.name}*"):
            p.unlink()
    return {
        "fingerprints_per_s": sim,
        "baseline_fingerprints_per_s": raw,
        "median": median(sim),
        "baseline_median": median(raw),
        "ratio": median(sim) / median(raw),
    }, keep


# --- 3. query latency and 4. candidates -------------------------------------------------


def popcount_fn():
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count, "np.bitwise_count"
    table = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.uint8)

    def count(x):
        v = x.view(np.uint16).reshape(-1, 4)
        return table[v].sum(axis=1, dtype=np.uint8)

    return count, "16-bit lookup table (numpy < 2.0 has no bitwise_count)"


def bench_query(path: Path, fps: list[int], queries, repeat: int) -> dict:
    arr = np.fromiter(fps, dtype=np.uint64, count=len(fps))
    popcount, popcount_name = popcount_fn()
    perf = time.perf_counter_ns

    def brute(q: int):
        return np.flatnonzero(popcount(arr ^ np.uint64(q)) <= K)

    sim_med, sim_p99, raw_med, raw_p99 = [], [], [], []
    kinds = np.array([kind for kind, _ in queries])
    by_kind = {"planted": ([], []), "random": ([], [])}
    mismatches, hits = 0, 0
    index = SimIndex(path, hold=False)
    try:
        for fp in (q for _, q in queries[:20]):  # warm-up: connection pool, page cache
            index.query(fp)
            brute(fp)
        for r in range(repeat):
            sim_lat = np.empty(len(queries))
            raw_lat = np.empty(len(queries))
            gc.collect()
            for i, (_, fp) in enumerate(queries):  # interleaved, query by query
                t0 = perf()
                got = index.query(fp)
                t1 = perf()
                want = brute(fp)
                t2 = perf()
                sim_lat[i] = (t1 - t0) / 1e3
                raw_lat[i] = (t2 - t1) / 1e3
                if r == 0:
                    mine = {(int(m.key[2:]), m.distance) for m in got}
                    theirs = {(int(j), (fps[j] ^ fp).bit_count()) for j in want}
                    mismatches += mine != theirs
                    hits += len(theirs)
            sim_med.append(median(sim_lat))
            sim_p99.append(p99(sim_lat))
            raw_med.append(median(raw_lat))
            raw_p99.append(p99(raw_lat))
            for kind, (s, b) in by_kind.items():
                s.append(median(sim_lat[kinds == kind]))
                b.append(median(raw_lat[kinds == kind]))
        stats = index.stats()
    finally:
        index.close()
    return {
        "median_us": median(sim_med),
        "p99_us": median(sim_p99),
        "baseline_median_us": median(raw_med),
        "baseline_p99_us": median(raw_p99),
        "ratio": median(sim_med) / median(raw_med),
        "per_repeat_median_us": sim_med,
        "per_repeat_baseline_median_us": raw_med,
        "planted_median_us": median(by_kind["planted"][0]),
        "planted_baseline_median_us": median(by_kind["planted"][1]),
        "random_median_us": median(by_kind["random"][0]),
        "random_baseline_median_us": median(by_kind["random"][1]),
        "exact": mismatches == 0,
        "mismatches": mismatches,
        "matches_found": hits,
        "popcount": popcount_name,
        "index_file_bytes": stats.get("file_bytes"),
    }


def candidates(fps: list[int], queries) -> dict:
    """Per query, how many stored fingerprints agree with it on at least one of the
    four 16-bit blocks: the rows the block lookups return before the Hamming filter.
    Computed here from the fingerprints alone (numpy), not read from simindex."""
    arr = np.fromiter(fps, dtype=np.uint64, count=len(fps))
    shifts = [48, 32, 16, 0]
    blocks = [((arr >> np.uint64(s)) & np.uint64(0xFFFF)).astype(np.uint16) for s in shifts]
    counts = {"planted": [], "random": []}
    for kind, q in queries:
        hit = np.zeros(len(arr), dtype=bool)
        for b, s in zip(blocks, shifts, strict=True):
            hit |= b == np.uint16((q >> s) & 0xFFFF)
        counts[kind].append(int(hit.sum()))
    every = counts["planted"] + counts["random"]
    n = len(fps)
    expected_random = n * (1 - (1 - 2**-16) ** 4)
    return {
        "mean": float(np.mean(every)),
        "median": median(every),
        "p99": p99(every),
        "max": max(every),
        "planted_mean": float(np.mean(counts["planted"])) if counts["planted"] else None,
        "random_mean": float(np.mean(counts["random"])) if counts["random"] else None,
        "expected_random_mean": expected_random,
        "baseline_rows": n,
        "ratio": float(np.mean(every)) / n,
    }


# --- output ---------------------------------------------------------------------------


def spread(xs) -> str:
    return f"{fmt(min(xs))}-{fmt(max(xs))}"


def slower(ratio: float, bigger_is_better: bool) -> str:
    factor = 1 / ratio if bigger_is_better else ratio
    if factor >= 1:
        return f"{fmt(factor)}x slower"
    return f"{fmt(1 / factor)}x faster"


def table(res: dict) -> str:
    env, args = res["environment"], res["parameters"]
    en, zh, add, q, c = (
        res[k] for k in ("fingerprint_en", "fingerprint_zh", "add", "query", "candidates")
    )
    n, r = args["n"], args["repeat"]
    lines = [
        "simindex foundation benchmark",
        f"date        {env['date_utc']}    git {env['git']}",
        f"python      {env['python']}    sqlite {env['sqlite']}    numpy {env['numpy']}    "
        f"sqlalchemy {env['sqlalchemy']}    xxhash {env['xxhash']}    jieba {env['jieba']}",
        f"machine     nproc {env['nproc']}    cpu {env['cpu']}    "
        f"load average at start {env['loadavg_at_start']}",
        f"parameters  N={n:,}  Q={args['queries']:,}  R={r}  seed={args['seed']}  "
        f"k={K} (4 blocks of 16 bits)",
        f"English     {en['source']}; {en['documents']} docs, {en['bytes'] / 1e6:.2f} MB "
        f"(the text repeated {en['repeated']}x)",
        f"Chinese     {zh['source']}; {zh['documents']} docs, {zh['bytes'] / 1e6:.2f} MB "
        f"(the text repeated {zh['repeated']}x)",
        "",
    ]
    head = (
        "row",
        "measurement",
        "unit",
        "simindex",
        "p99|range",
        "baseline (same run)",
        "baseline",
        "p99|range",
        "ratio",
        "",
    )
    rows = [
        (
            "1a",
            "simhash() English text",
            "MB/s",
            fmt(en["median"]),
            spread(en["simhash_mb_s"]),
            "xxhash.xxh64, same bytes",
            fmt(en["baseline_median"]),
            spread(en["xxh64_mb_s"]),
            f"{en['ratio']:.2g}",
            slower(en["ratio"], True),
        ),
        (
            "1b",
            "simhash() Chinese text",
            "MB/s",
            fmt(zh["median"]),
            spread(zh["simhash_mb_s"]),
            "xxhash.xxh64, same bytes",
            fmt(zh["baseline_median"]),
            spread(zh["xxh64_mb_s"]),
            f"{zh['ratio']:.2g}",
            slower(zh["ratio"], True),
        ),
        (
            "2",
            f"add_fingerprints(), {n:,} fps",
            "fps/s",
            fmt(add["median"]),
            spread(add["fingerprints_per_s"]),
            "sqlite3 executemany",
            fmt(add["baseline_median"]),
            spread(add["baseline_fingerprints_per_s"]),
            f"{add['ratio']:.2g}",
            slower(add["ratio"], True),
        ),
        (
            "3",
            f"query(fp) latency, Q={args['queries']:,}",
            "us",
            fmt(q["median_us"]),
            fmt(q["p99_us"]),
            "numpy brute force",
            fmt(q["baseline_median_us"]),
            fmt(q["baseline_p99_us"]),
            f"{q['ratio']:.2g}",
            slower(q["ratio"], False),
        ),
        (
            "4",
            "candidates/query (mean)",
            "rows",
            fmt(c["mean"]),
            fmt(c["p99"]),
            "rows brute force reads",
            fmt(c["baseline_rows"]),
            "-",
            f"{c['ratio']:.2g}",
            f"reads 1/{c['baseline_rows'] / c['mean']:,.0f} of the rows" if c["mean"] else "",
        ),
    ]
    widths = [max(len(str(row[i])) for row in (head, *rows)) for i in range(len(head))]
    rule = "  ".join("-" * w for w in widths)

    def render(row: tuple) -> str:
        return "  ".join(
            str(v).ljust(w) if i in (0, 1, 2, 5, 9) else str(v).rjust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    lines += [render(head), rule, *map(render, rows), rule]
    lines += [
        f"exact: {'yes' if q['exact'] else 'NO'} ({q['mismatches']} mismatches: queries whose "
        f"simindex result differs from brute force, of {args['queries']:,}; "
        f"{q['matches_found']:,} matches in all)",
        f"3 split     planted near-duplicates: {fmt(q['planted_median_us'])} us vs "
        f"{fmt(q['planted_baseline_median_us'])} us brute force; "
        f"random: {fmt(q['random_median_us'])} us vs {fmt(q['random_baseline_median_us'])} us",
        f"4 split     planted: {fmt(c['planted_mean'])} rows, random: {fmt(c['random_mean'])} rows "
        f"(expected for random: N*(1-(1-2^-16)^4) ~ N/16384 = {fmt(c['expected_random_mean'])}, "
        f"so the rows a lookup reads grow linearly with N, at 1/16384 of a full scan)",
        f"index file  {fmt(q['index_file_bytes'] / n)} bytes per fingerprint "
        f"({q['index_file_bytes'] / 1e6:.1f} MB for {n:,}); brute force popcount: {q['popcount']}",
        "",
        f"Values are medians over R={r} repeats; 'range' is min-max over the repeats; for row 3, "
        f"p99 is over the Q queries of a repeat (median over repeats). ratio = simindex / baseline "
        f"(MB/s, fps/s, us or rows); compare ratios across machines, not absolute numbers.",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--n", type=int, default=100_000, help="fingerprints in the index (default 100000)"
    )
    ap.add_argument(
        "--queries", type=int, default=1000, help="queries, half planted (default 1000)"
    )
    ap.add_argument(
        "--repeat", type=int, default=5, help="repeats each median is taken over (default 5)"
    )
    ap.add_argument(
        "--text-mb",
        type=float,
        default=3.0,
        help="MB of UTF-8 text per language per repeat for row 1 (default 3)",
    )
    ap.add_argument(
        "--zh-source",
        choices=("auto", "news", "jieba"),
        default="auto",
        help="Chinese text: examples/news.jsonl if present (auto), or jieba's dictionary",
    )
    ap.add_argument("--seed", type=int, default=20240901, help="random seed (default 20240901)")
    ap.add_argument(
        "--json", action="store_true", help="print the results as JSON instead of the table"
    )
    output_options(ap)
    args = ap.parse_args(argv)
    if args.n < 1 or args.queries < 2 or args.repeat < 1 or args.text_mb <= 0:
        ap.error("--n >= 1, --queries >= 2, --repeat >= 1 and --text-mb > 0, please")
    return save_output("foundation", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    res = {
        "environment": environment(),
        "parameters": {
            "n": args.n,
            "queries": args.queries,
            "repeat": args.repeat,
            "text_mb": args.text_mb,
            "zh_source": args.zh_source,
            "seed": args.seed,
            "k": K,
        },
    }
    target = int(args.text_mb * 1e6)

    for lang, (docs, source) in (
        ("en", english_docs()),
        ("zh", chinese_docs(args.zh_source, args.seed, target)),
    ):
        log(f"[1] fingerprint throughput, {lang}: {source}")
        docs, times = repeat_to(docs, target)
        row = bench_fingerprint(docs, args.repeat)
        row.update(source=source, repeated=times)
        res[f"fingerprint_{lang}"] = row

    rng = random.Random(args.seed)
    fps = [rng.getrandbits(64) for _ in range(args.n)]
    pairs = [(f"fp{i:08d}", fp) for i, fp in enumerate(fps)]
    queries = make_queries(fps, args.queries, args.seed)

    with tempfile.TemporaryDirectory(prefix="simindex-bench-") as tmp:
        log(f"[2] bulk add of {args.n:,} fingerprints, {args.repeat} runs (in {tmp})")
        res["add"], path = bench_add(pairs, args.repeat, Path(tmp))
        log(f"[3] {args.queries:,} queries x {args.repeat} repeats")
        res["query"] = bench_query(path, fps, queries, args.repeat)
    log("[4] candidates per query")
    res["candidates"] = candidates(fps, queries)
    res["elapsed_s"] = time.perf_counter() - started
    log(f"done in {res['elapsed_s']:.0f} s")

    if args.json:
        print_json(res)
    else:
        print(table(res))
    if not res["query"]["exact"]:
        log(f"FAIL: {res['query']['mismatches']} queries disagree with brute force")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
