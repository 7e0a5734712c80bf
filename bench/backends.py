#!/usr/bin/env python
"""simindex on SQLite beside simindex on PostgreSQL: the same index, the same run.

    python bench/backends.py                       # N=1,000,000: about 5 minutes on 2 cores
    python bench/backends.py --quick               # N=100,000: under a minute
    python bench/backends.py --postgres-url URL    # or set SIMINDEX_TEST_POSTGRES_URL
    python bench/backends.py --skip-postgres       # SQLite alone (e.g. --n 10000000)
    python bench/backends.py --json                # the numbers as JSON on stdout
    python bench/backends.py --no-save             # print only (else bench/results/backends.txt)

Both backends get the same N random 64-bit fingerprints (seeded; about half
have the top bit set, and the extremes 0, 2**63 and 2**64-1 are among them)
and k=3 (the default layout). It measures, for each backend:

- bulk add: add_fingerprints() of all N into a fresh index, in fingerprints/s;
  then an incremental add of 10,000 more into the filled index;
- single queries: query(fp) latency in microseconds (p50/p90/p99) over Q
  queries (half planted near-duplicates, 0-3 bits flipped, half random),
  after a warm-up; the two backends' query loops alternate in rounds, and the
  first backend changes from round to round, so noise on the box hits both;
- batch queries: query_many() of B queries (half planted), called twice
  (the first call reads the index's fingerprints, the second reuses them);
- all pairs: duplicates() time;
- size: the SQLite file (with its -wal), or pg_total_relation_size summed over
  the tables of the index's PostgreSQL schema; bytes per fingerprint.

SQLite is a file in a temporary folder; PostgreSQL is a fresh schema
(``?schema=simindex_bench_<pid>``) in the given database, dropped at the end.
The last column is the ratio PostgreSQL / SQLite in the row's own unit:
compare that across runs, not the absolute numbers. Every answer of the
single queries is checked to be the same on both backends (exit 1 if not).
Progress goes to stderr, the table (or JSON) to stdout. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # `python bench/backends.py` from a checkout
    sys.path.insert(0, str(ROOT))

import sqlalchemy  # noqa: E402
from common import (  # noqa: E402
    git_rev,
    interpolated_percentile,
    load_average,
    log,
    output_options,
    print_json,
    save_output,
)
from sqlalchemy.engine import make_url  # noqa: E402

from simindex.index import SimIndex  # noqa: E402

K = 3
MORE = 10_000  # the incremental add
WARMUP = 200  # untimed queries per backend before the timed rounds
ROUNDS = 10  # the timed single queries are cut into this many rounds


def data(n: int, queries: int, batch: int, seed: int):
    """N stored fingerprints, MORE extra, Q single queries and B batch queries."""
    rng = random.Random(seed)
    fps = [rng.getrandbits(64) for _ in range(n)]
    for i, edge in enumerate((0, 1 << 63, (1 << 64) - 1)):  # the extremes, signed and not
        if i < n:
            fps[i] = edge
    more = [rng.getrandbits(64) for _ in range(MORE)]

    def planted() -> int:
        fp = fps[rng.randrange(n)]
        for bit in rng.sample(range(64), rng.randint(0, K)):
            fp ^= 1 << bit
        return fp

    single = [planted() if i % 2 else rng.getrandbits(64) for i in range(queries)]
    many = [planted() if i % 2 else rng.getrandbits(64) for i in range(batch)]
    return fps, more, single, many


# --- the backends ------------------------------------------------------------------------


class Backend:
    def __init__(self, name: str, location: str) -> None:
        self.name = name
        self.location = location
        self.index: SimIndex | None = None
        self.results: dict[str, float] = {}
        self.latencies: list[float] = []  # microseconds, the timed single queries
        self.floor: list[float] = []  # microseconds, SELECT 1 through the bare driver
        self.answers: list[list[tuple[str, int]]] = []

    def open(self) -> SimIndex:
        self.index = SimIndex(self.location, k=K, hold=False)
        return self.index

    def size(self) -> int:
        raise NotImplementedError

    def raw(self):
        """A bare DB-API connection to the same database, in autocommit mode."""
        raise NotImplementedError

    def cleanup(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None


class SQLiteBackend(Backend):
    def __init__(self, folder: str) -> None:
        self.path = Path(folder) / "backends.db"
        super().__init__("SQLite", str(self.path))

    def size(self) -> int:
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())

    def raw(self):
        return sqlite3.connect(self.path, isolation_level=None)


class PostgresBackend(Backend):
    def __init__(self, url: str) -> None:
        self.schema = f"simindex_bench_{os.getpid()}"
        self.admin = sqlalchemy.create_engine(url)
        u = make_url(url).update_query_dict({"schema": self.schema})
        super().__init__("PostgreSQL", u.render_as_string(hide_password=False))
        self.url = url
        with self.admin.connect() as conn:
            self.version = conn.exec_driver_sql("SHOW server_version").scalar()

    def size(self) -> int:
        with self.admin.connect() as conn:
            return int(
                conn.exec_driver_sql(
                    "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %(s)s AND c.relkind = 'r'",
                    {"s": self.schema},
                ).scalar()
            )

    def raw(self):
        import psycopg

        u = make_url(self.url).set(drivername="postgresql")
        return psycopg.connect(u.render_as_string(hide_password=False), autocommit=True)

    def cleanup(self) -> None:
        super().cleanup()
        with self.admin.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        self.admin.dispose()


# --- the measures ------------------------------------------------------------------------


def build(b: Backend, fps: list[int], more: list[int]) -> None:
    index = b.open()
    start = time.perf_counter()
    index.add_fingerprints((f"k{i}", fp) for i, fp in enumerate(fps))
    b.results["bulk_add_fps_per_s"] = len(fps) / (time.perf_counter() - start)
    start = time.perf_counter()
    index.add_fingerprints((f"m{i}", fp) for i, fp in enumerate(more))
    b.results["incremental_add_fps_per_s"] = len(more) / (time.perf_counter() - start)
    if len(index) != len(fps) + len(more):
        raise SystemExit(f"{b.name}: {len(index)} fingerprints, not {len(fps) + len(more)}")


def single_queries(backends: list[Backend], warm: list[int], queries: list[int]) -> None:
    for b in backends:  # warm-up: untimed, not part of the Q
        assert b.index is not None
        for q in warm:
            b.index.query(q)
    raws = {b.name: b.raw() for b in backends}
    size = -(-len(queries) // ROUNDS)
    for r in range(ROUNDS):
        part = queries[r * size : (r + 1) * size]
        order = backends if r % 2 == 0 else backends[::-1]
        for b in order:
            assert b.index is not None
            query = b.index.query
            clock = time.perf_counter_ns
            for q in part:
                t0 = clock()
                matches = query(q)
                b.latencies.append((clock() - t0) / 1000)
                b.answers.append([(m.key, m.distance) for m in matches])
            cursor = raws[b.name].cursor()
            for _ in part:  # the floor: one round trip through the bare driver
                t0 = clock()
                cursor.execute("SELECT 1")
                cursor.fetchall()
                b.floor.append((clock() - t0) / 1000)
            cursor.close()
    for raw in raws.values():
        raw.close()
    for b in backends:
        b.results["query_p50_us"] = interpolated_percentile(b.latencies, 0.5)
        b.results["query_p90_us"] = interpolated_percentile(b.latencies, 0.9)
        b.results["query_p99_us"] = interpolated_percentile(b.latencies, 0.99)
        b.results["select1_p50_us"] = interpolated_percentile(b.floor, 0.5)
        floor = b.results["select1_p50_us"]
        b.results["query_p50_over_select1"] = b.results["query_p50_us"] / floor


def batch_queries(backends: list[Backend], queries: list[int]) -> None:
    answers = {}
    for b in backends:
        assert b.index is not None
        for call in ("first", "second"):
            start = time.perf_counter()
            got = b.index.query_many(queries)
            b.results[f"query_many_{call}_q_per_s"] = len(queries) / (time.perf_counter() - start)
        answers[b.name] = sum(len(x) for x in got)
        b.results["query_many_matches"] = answers[b.name]


def all_pairs(backends: list[Backend]) -> None:
    for b in backends:
        assert b.index is not None
        start = time.perf_counter()
        pairs = b.index.duplicates()
        b.results["duplicates_s"] = time.perf_counter() - start
        b.results["duplicates_pairs"] = len(pairs)


ROWS = [
    # key, label, format, unit
    ("bulk_add_fps_per_s", "bulk add of N (add_fingerprints)", "{:,.0f}", "fps/s"),
    ("incremental_add_fps_per_s", f"add {MORE:,} more into the filled index", "{:,.0f}", "fps/s"),
    ("query_p50_us", "query(fp) latency p50", "{:,.0f}", "us"),
    ("query_p90_us", "query(fp) latency p90", "{:,.0f}", "us"),
    ("query_p99_us", "query(fp) latency p99", "{:,.0f}", "us"),
    ("select1_p50_us", "floor: SELECT 1, bare driver, p50", "{:,.0f}", "us"),
    ("query_p50_over_select1", "query p50 / floor p50", "{:,.1f}", "x"),
    ("query_many_first_q_per_s", "query_many(B), first call", "{:,.0f}", "q/s"),
    ("query_many_second_q_per_s", "query_many(B), second call", "{:,.0f}", "q/s"),
    ("duplicates_s", "duplicates() (all pairs)", "{:,.2f}", "s"),
    ("size_bytes", "size", "{:,.0f}", "bytes"),
    ("bytes_per_fp", "size per fingerprint", "{:,.1f}", "bytes"),
]


def table(backends: list[Backend], facts: dict, note: str | None) -> str:
    lines = [
        f"date {facts['date_utc']}   git {facts['git']}   nproc {facts['nproc']}   "
        f"load at start {facts['loadavg_at_start']}",
        f"SQLite {facts['sqlite']}   PostgreSQL {facts['postgresql']}   "
        f"Python {facts['python']}   SQLAlchemy {facts['sqlalchemy']}",
        f"N={facts['n']:,} random fingerprints, k={K} ({facts['layout']}), "
        f"Q={facts['queries']:,} single queries, B={facts['batch']:,} batch queries "
        f"(half planted, 0-{K} bits flipped)",
        "",
    ]
    header = ["measure", "unit", *(b.name for b in backends)]
    if len(backends) == 2:
        header.append("PG/SQLite")
    rows = [header]
    for key, label, fmt, unit in ROWS:
        row = [label, unit]
        vals = [b.results.get(key) for b in backends]
        row += [fmt.format(v) if v is not None else "-" for v in vals]
        if len(backends) == 2:
            a, p = vals
            row.append(f"{p / a:.2f}" if a and p is not None else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for j, row in enumerate(rows):
        cells = [c.ljust(widths[i]) if i < 2 else c.rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    for b in backends:
        lines.append(
            f"{b.name}: {b.results['query_many_matches']:,} batch matches, "
            f"{b.results['duplicates_pairs']:,} pairs within {K}"
        )
    if len(backends) == 2:
        lines.append(f"single-query answers identical on both backends: {facts['same_answers']}")
        lines.append("ratio > 1: PostgreSQL is higher (slower for latencies, times and sizes).")
    if note:
        lines.append(note)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=None, help="fingerprints (default 1,000,000)")
    ap.add_argument("--quick", action="store_true", help="N=100,000")
    ap.add_argument("--queries", type=int, default=2000, help="single queries (default 2000)")
    ap.add_argument("--batch", type=int, default=100_000, help="batch queries (default 100,000)")
    ap.add_argument("--postgres-url", default=os.environ.get("SIMINDEX_TEST_POSTGRES_URL"))
    ap.add_argument("--skip-postgres", action="store_true", help="SQLite alone")
    ap.add_argument("--seed", type=int, default=20240901)
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    output_options(ap)
    args = ap.parse_args()
    n = args.n if args.n is not None else (100_000 if args.quick else 1_000_000)
    if n < 1 or args.queries < ROUNDS or args.batch < 1:
        ap.error("--n and --batch must be at least 1, --queries at least 10")
    args.n = n
    return save_output("backends", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    n = args.n
    facts = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git": git_rev(),
        "nproc": os.cpu_count(),
        "loadavg_at_start": load_average(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "postgresql": "not measured",
        "n": n,
        "queries": args.queries,
        "batch": args.batch,
        "seed": args.seed,
    }
    note = None
    log(f"generating {n:,} fingerprints and {args.queries + args.batch:,} queries")
    fps, more, single, many = data(n, args.queries + WARMUP, args.batch, args.seed)
    warm, single = single[:WARMUP], single[WARMUP:]

    with tempfile.TemporaryDirectory(prefix="simindex-backends-") as tmp:
        backends: list[Backend] = [SQLiteBackend(tmp)]
        if args.skip_postgres:
            note = "PostgreSQL: skipped (--skip-postgres)."
        elif not args.postgres_url:
            note = "PostgreSQL: skipped (no --postgres-url and no SIMINDEX_TEST_POSTGRES_URL)."
        else:
            pg = PostgresBackend(args.postgres_url)
            facts["postgresql"] = pg.version
            backends.append(pg)
        try:
            for b in backends:
                log(f"{b.name}: bulk add of {n:,}, then {MORE:,} more")
                build(b, fps, more)
            assert backends[0].index is not None
            facts["layout"] = backends[0].index.layout.describe()
            log(f"single queries: {WARMUP} warm-up, {len(single):,} timed in {ROUNDS} rounds")
            single_queries(backends, warm, single)
            log(f"query_many of {len(many):,}, twice per backend")
            batch_queries(backends, many)
            log("duplicates()")
            all_pairs(backends)
            for b in backends:
                assert b.index is not None
                b.index.close()  # SQLite checkpoints its -wal on close
                b.index = None
                b.results["size_bytes"] = b.size()
                b.results["bytes_per_fp"] = b.results["size_bytes"] / (n + MORE)
            facts["same_answers"] = (
                "yes" if all(b.answers == backends[0].answers for b in backends) else "NO"
            )
        finally:
            for b in backends:
                b.cleanup()

    same = facts["same_answers"] == "yes"
    if args.json:
        out = {
            "facts": facts,
            "note": note,
            "results": {b.name: b.results for b in backends},
            "ratio_pg_over_sqlite": (
                {
                    key: backends[1].results[key] / backends[0].results[key]
                    for key, *_ in ROWS
                    if backends[0].results.get(key)
                }
                if len(backends) == 2
                else None
            ),
        }
        print_json(out)
    else:
        print(table(backends, facts, note))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
