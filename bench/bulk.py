#!/usr/bin/env python
"""A bulk load into a fresh SQLite file and a fresh PostgreSQL index:
add_fingerprints beside the floor each database itself sets for the same
rows in the same schema.

    python bench/bulk.py              # N=1,000,000, 3 runs (a few minutes)
    python bench/bulk.py --n 100000   # another size
    python bench/bulk.py --no-save    # print only (else bench/results/bulk.txt)
    python bench/bulk.py --postgres-url URL   # or SIMINDEX_TEST_POSTGRES_URL; else SQLite alone

Rows: N (key, random 64-bit fingerprint) pairs, made before the clock starts.

- `add_fingerprints`: SimIndex(path) at the defaults (k = 8, three blocks),
  then add_fingerprints(rows), close included, into a fresh file;
- `sqlite3, same schema`: the floor: plain sqlite3 into the table simindex
  makes (its CREATE statements read from a simindex file: the id primary
  key, the key's UNIQUE constraint, the fingerprint and block columns), with
  the rows' block values computed before the clock starts, one BEGIN
  IMMEDIATE, executemany, then the three lookup indexes created after the
  load (what simindex does for a load larger than the table), COMMIT; the
  same pragmas (WAL, synchronous NORMAL, threads 2). Its phases are timed
  apart: insert, lookup indexes, commit.
- PostgreSQL, when a server is given: `add_fingerprints` into a new schema
  (?schema=) at the defaults, open to close (the VACUUM after a large load
  included); the floor: psycopg alone into a new simindex schema of the
  same index (made empty before the clock), in one transaction: the lookup
  indexes and the key's UNIQUE constraint dropped, one COPY of the rows
  (block values made before the clock), the constraint and the lookup
  indexes (their definitions read from pg_indexes) made again, ANALYZE,
  COMMIT; phases apart: copy, key, lookups, analyze and commit.

Medians of R runs, runs interleaved; the ratio is simindex over the floor.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from common import drop_schema, log, output_options, save_output  # noqa: E402

from simindex import SimIndex  # noqa: E402
from simindex.fingerprint import to_signed  # noqa: E402


def schema(folder: Path) -> tuple[list[str], list[str], tuple[tuple[int, int], ...]]:
    """simindex's CREATE TABLE of the fingerprint table and its lookup
    indexes, read from a fresh simindex file, and the layout's (shift, mask)."""
    path = folder / "schema.db"
    with SimIndex(str(path)) as index:
        spans = tuple(index._store.layout.spans())
    conn = sqlite3.connect(path)
    table = [
        r[0]
        for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'simindex_fingerprints'"
        )
    ]
    lookups = [
        r[0]
        for r in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' "
            "AND name LIKE 'ix_simindex_fingerprints_t%' ORDER BY name"
        )
    ]
    conn.close()
    path.unlink()
    return table, lookups, spans


def floor(
    path: Path, table: list[str], lookups: list[str], rows: list[tuple[object, ...]]
) -> dict[str, float]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA threads = 2")
    for sql in table:
        conn.execute(sql)
    names = ", ".join(["key", "fingerprint", *(f"block_{i}" for i in range(len(rows[0]) - 2))])
    marks = ", ".join("?" * len(rows[0]))
    t0 = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(f"INSERT INTO simindex_fingerprints ({names}) VALUES ({marks})", rows)
    t1 = time.perf_counter()
    for sql in lookups:
        conn.execute(sql)
    t2 = time.perf_counter()
    conn.execute("COMMIT")
    t3 = time.perf_counter()
    conn.close()
    return {"total": t3 - t0, "insert": t1 - t0, "lookups": t2 - t1, "commit": t3 - t2}


def postgres_floor(url: str, rows: list[tuple[object, ...]]) -> dict[str, float]:
    """The PostgreSQL floor (see the module's docstring) into a new schema."""
    import psycopg
    from sqlalchemy import make_url

    name = f"bulk_floor_{uuid.uuid4().hex[:8]}"
    with SimIndex(with_schema(url, name)):
        pass  # an empty index of the defaults: the schema to load into
    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    blocks = [f"block_{i}" for i in range(len(rows[0]) - 2)]
    with psycopg.connect(plain.split("?")[0]) as conn:
        cur = conn.cursor()
        try:
            cur.execute(f"SET search_path TO {name}")
            lookups = [
                r[0]
                for r in cur.execute(
                    "SELECT indexdef FROM pg_indexes WHERE schemaname = %s "
                    "AND indexname LIKE 'ix_simindex_fingerprints_t%%' ORDER BY indexname",
                    (name,),
                )
            ]
            (key,) = cur.execute(
                "SELECT conname FROM pg_constraint WHERE contype = 'u' "
                "AND conrelid = 'simindex_fingerprints'::regclass"
            ).fetchone()
            conn.commit()
            t0 = time.perf_counter()
            for index in lookups:
                cur.execute(f"DROP INDEX {index.split()[2]}")
            cur.execute(f"ALTER TABLE simindex_fingerprints DROP CONSTRAINT {key}")
            columns = ", ".join(["key", "fingerprint", *blocks])
            with cur.copy(f"COPY simindex_fingerprints ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            t1 = time.perf_counter()
            cur.execute(f"ALTER TABLE simindex_fingerprints ADD CONSTRAINT {key} UNIQUE (key)")
            t2 = time.perf_counter()
            for index in lookups:
                cur.execute(index)
            t3 = time.perf_counter()
            cur.execute("ANALYZE simindex_fingerprints")
            conn.commit()
            t4 = time.perf_counter()
        finally:
            conn.rollback()
            cur.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
            conn.commit()
    return {
        "total": t4 - t0,
        "copy": t1 - t0,
        "key": t2 - t1,
        "lookups": t3 - t2,
        "analyze and commit": t4 - t3,
    }


def with_schema(url: str, name: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={name}"


def measure_postgres(
    url: str, pairs: list[tuple[str, int]], rows: list[tuple[object, ...]], runs: int
) -> None:
    n = len(pairs)
    ours: list[float] = []
    theirs: list[dict[str, float]] = []
    for run in range(runs):
        log(f"PostgreSQL: run {run + 1} of {runs}")
        name = f"bulk_{uuid.uuid4().hex[:8]}"
        try:
            start = time.perf_counter()
            with SimIndex(with_schema(url, name)) as index:
                index.add_fingerprints(pairs)
            ours.append(time.perf_counter() - start)
        finally:
            drop_schema(url.split("?")[0], name)
        theirs.append(postgres_floor(url, rows))
    s = statistics.median(ours)
    f = {key: statistics.median(r[key] for r in theirs) for key in theirs[0]}
    print(
        f"\na bulk load of {n:,} fingerprints into a fresh PostgreSQL index (k = 8, "
        f"three blocks; the server on this machine); medians of {runs} runs\n"
    )
    print(f"{'':46} {'median s':>9} {'fps/s':>10}")
    print(f"{'add_fingerprints (open to close)':46} {s:9.2f} {n / s:10,.0f}")
    print(f"{'psycopg COPY, same schema (the floor)':46} {f['total']:9.2f} {n / f['total']:10,.0f}")
    for phase in ("copy", "key", "lookups", "analyze and commit"):
        print(f"{'  of which ' + phase:46} {f[phase]:9.2f}")
    print(f"\nratio: add_fingerprints takes {s / f['total']:.2f}x the floor's time")
    print("target: add_fingerprints >= 200,000 fps/s into a fresh index")


def measure(args: argparse.Namespace) -> int:
    n = args.n
    rng = random.Random(7)
    pairs = [(f"doc-{i:08d}", rng.getrandbits(64)) for i in range(n)]
    with tempfile.TemporaryDirectory(prefix="bench-bulk-") as tmp:
        folder = Path(tmp)
        table, lookups, spans = schema(folder)
        rows = [
            (key, to_signed(fp), *((fp >> shift) & mask for shift, mask in spans))
            for key, fp in pairs
        ]
        ours: list[float] = []
        theirs: list[dict[str, float]] = []
        for run in range(args.runs):
            log(f"run {run + 1} of {args.runs}")
            path = folder / f"simindex-{run}.db"
            start = time.perf_counter()
            with SimIndex(str(path)) as index:
                index.add_fingerprints(pairs)
            ours.append(time.perf_counter() - start)
            theirs.append(floor(folder / f"sqlite-{run}.db", table, lookups, rows))
            for file in folder.glob("*-*.db*"):
                file.unlink()
    s = statistics.median(ours)
    f = {key: statistics.median(r[key] for r in theirs) for key in theirs[0]}
    print(
        f"a bulk load of {n:,} fingerprints into a fresh SQLite file (k = 8, three "
        f"blocks); medians of {args.runs} runs\n"
    )
    print(f"{'':46} {'median s':>9} {'fps/s':>10}")
    print(f"{'add_fingerprints (open to close)':46} {s:9.2f} {n / s:10,.0f}")
    print(f"{'sqlite3, same schema (the floor)':46} {f['total']:9.2f} {n / f['total']:10,.0f}")
    for phase in ("insert", "lookups", "commit"):
        print(f"{'  of which ' + phase:46} {f[phase]:9.2f}")
    print(f"\nratio: add_fingerprints takes {s / f['total']:.2f}x the floor's time")
    print("target: add_fingerprints >= 400,000 fps/s into a fresh file")
    url = args.postgres_url or os.environ.get("SIMINDEX_TEST_POSTGRES_URL")
    if url:
        measure_postgres(url, pairs, rows, args.runs)
    else:
        print("\n(PostgreSQL: no server given: --postgres-url or SIMINDEX_TEST_POSTGRES_URL)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    ap.add_argument(
        "--postgres-url",
        help="a PostgreSQL database to load into too (or SIMINDEX_TEST_POSTGRES_URL)",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("bulk", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
