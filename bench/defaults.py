#!/usr/bin/env python
"""What an application and a shell user get at the defaults: one run of the
scripts that measure it, and one table of what they printed.

    python bench/defaults.py                 # a million fingerprints (about 15 minutes)
    python bench/defaults.py --quick         # tiny sizes: a smoke run (no results file)
    python bench/defaults.py --postgres-url URL   # or SIMINDEX_TEST_POSTGRES_URL

It runs, one after another in fresh processes, each with --no-save (so the
files each writes on its own stay as they are):

  holding.py    single queries at k = 8 on SQLite and PostgreSQL beside
                numpy brute force and faiss IndexBinaryMultiHash 3x21
  allpairs.py   duplicates() at k = 3 and 8, beside a numpy prototype
  bulk.py       add_fingerprints of a million into a fresh file and index
  threads.py    8 threads of one process with hold=True beside 1
  startup.py    `simindex query` on a small index, the whole process
  peers.py      k = 3 single queries from the database beside faiss
                IndexBinaryMultiHash 4x16 (--n 1000000 --no-docs --json)

then prints the table (each row: simindex, what it is measured beside in
the same script's run, the target set for the defaults, and the script), followed
by what each script printed. Ratios come from one script's run; figures of
different scripts come from different minutes of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import log, output_options, save_output  # noqa: E402

Row = tuple[str, str, str, str, str]  # what, simindex, beside, target, script


def run(script: str, args: list[str], env: dict[str, str]) -> str:
    log(f"running {script} {' '.join(args)}")
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, env=env
    )
    if done.returncode:
        raise RuntimeError(f"{script} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def number(text: str) -> float:
    return float(text.replace(",", ""))


def cells(printed: str, label: str) -> list[str]:
    """The figures of the row that starts with label (columns two or more spaces apart)."""
    for line in printed.splitlines():
        if line.startswith(label):
            return re.split(r"\s{2,}", line[len(label) :].strip())
    raise LookupError(f"no row {label!r} in:\n{printed}")


def last_column(line: str) -> str:
    return re.split(r"\s{2,}", line.strip())[-1]


def holding_rows(printed: str) -> list[Row]:
    found = re.search(r"p50 ([\d,]+) us a query", printed)
    if found is None:
        raise LookupError(f"no numpy p50 in:\n{printed}")
    at_numpy = f"numpy {number(found.group(1)):,.0f} us"
    faiss = re.search(r"single p50 ([\d,]+) us, batched ([\d,]+) q/s", printed)
    single = f"faiss single {faiss.group(1)} us" if faiss else "faiss not installed"
    batched = f"faiss batched {faiss.group(2)} q/s" if faiss else "faiss not installed"
    # The targets beside faiss are ratios: the figure over faiss's, in the same run.
    held_x = many_x = ""
    if faiss:
        held_us = number(cells(printed, "query, held (hold=True), p50")[1])
        many_qps = number(cells(printed, "query_many(Q), default hold, stored")[1])
        held_x = f", {held_us / number(faiss.group(1)):.2f}x faiss"
        many_x = f" ({many_qps / number(faiss.group(2)):.2f}x faiss)"
    open_stored = cells(printed, "open + Q queries, default hold, stored")
    open_nothing = cells(printed, "open + Q queries, default hold, nothing stored")
    held = cells(printed, "query, held (hold=True), p50")
    database = cells(printed, "query, database (hold=False), p50")
    many_stored = cells(printed, "query_many(Q), default hold, stored")
    many_nothing = cells(printed, "query_many(Q), default hold, nothing stored")
    rows: list[Row] = [
        (
            "open the index, 2,000 single queries at the default hold: mean a query",
            f"{open_stored[1]} us ({open_stored[2]}x numpy) stored; "
            f"{open_nothing[1]} us ({open_nothing[2]}x) nothing stored",
            at_numpy,
            "<= 0.2x numpy",
            "holding.py",
        ),
        (
            "single query, database path (hold=False), p50",
            f"{database[1]} us ({database[2]}x numpy)",
            at_numpy,
            "",
            "holding.py",
        ),
        (
            "single query held in memory (hold=True), p50",
            f"{held[1]} us ({held[2]}x numpy{held_x})",
            single,
            "<= 0.25x faiss single",
            "holding.py",
        ),
        (
            "query_many of the 2,000",
            f"{many_stored[1]} q/s stored{many_x}; {many_nothing[1]} q/s nothing stored",
            batched,
            ">= 3x faiss batched",
            "holding.py",
        ),
    ]
    if len(database) >= 4:  # PostgreSQL ran
        rows += [
            (
                "PostgreSQL single query at the default k, held, p50",
                f"{held[3]} us ({held[4]}x numpy); database path {database[3]} us",
                at_numpy,
                "<= 0.5x numpy",
                "holding.py",
            ),
            (
                "PostgreSQL query_many of the 2,000",
                f"{many_stored[2]} q/s stored; {many_nothing[2]} q/s nothing stored",
                "",
                ">= 10,000 q/s",
                "holding.py",
            ),
        ]
    return rows


def allpairs_rows(printed: str) -> list[Row]:
    proto = cells(printed, "prototype(k=3)")
    three = cells(printed, "duplicates(3)")
    eight = cells(printed, "duplicates(8)")
    return [
        (
            "duplicates() at the default k (8), reading included",
            f"{eight[0]} s",
            "",
            "<= 1 s",
            "allpairs.py",
        ),
        (
            "duplicates(3), reading included",
            f"{three[0]} s ({three[1]}x the prototype)",
            f"numpy prototype {proto[0]} s",
            "<= 1.5x the prototype",
            "allpairs.py",
        ),
    ]


def bulk_rows(printed: str) -> list[Row]:
    ours = [line for line in printed.splitlines() if line.startswith("add_fingerprints (open")]
    sqlite_floor = cells(printed, "sqlite3, same schema (the floor)")
    rows: list[Row] = [
        (
            "add_fingerprints of 1M into a fresh file",
            f"{last_column(ours[0])} fps/s",
            f"plain sqlite3 floor {sqlite_floor[1]} fps/s",
            ">= 400,000 fps/s",
            "bulk.py",
        )
    ]
    if len(ours) > 1:
        pg_floor = cells(printed, "psycopg COPY, same schema (the floor)")
        rows.append(
            (
                "PostgreSQL add_fingerprints of 1M into a fresh index",
                f"{last_column(ours[1])} fps/s",
                f"psycopg COPY floor {pg_floor[1]} fps/s",
                ">= 200,000 fps/s",
                "bulk.py",
            )
        )
    return rows


def threads_rows(printed: str) -> list[Row]:
    found: dict[tuple[bool, int], list[str]] = {}
    for line in printed.splitlines():
        parts = line.split()
        if len(parts) >= 8 and parts[-1] in ("rows", "stored") and parts[-2].isdigit():
            found[(line.startswith("stored"), int(parts[-8]))] = parts[-7:]
    one = found[(True, 1)]
    many = found[(True, max(t for s, t in found if s))]
    return [
        (
            "8 threads of one process, hold=True, 200 queries each (snapshot stored)",
            f"{many[0]} s ({many[1]}x one thread), +{many[2]} MB, {many[5]} read, "
            f"{many[4]} MB held",
            f"1 thread: {one[0]} s, +{one[2]} MB",
            "one copy, one load",
            "threads.py",
        )
    ]


def startup_rows(printed: str) -> list[Row]:
    whole = cells(printed, "simindex query INDEX TEXT (whole process)")
    imports = cells(printed, "import all of the above")
    return [
        (
            "`simindex query` on a small index, whole process",
            f"{whole[0]} ms",
            f"its libraries' imports alone {imports[0]} ms",
            "<= 250 ms",
            "startup.py",
        )
    ]


def peers_rows(printed: str) -> list[Row]:
    sections = json.loads(printed)["sections"]
    queries = [s for s in sections if s["title"].endswith("queries, k=3")][-1]
    by = {(r["method"], r["operation"]): r for r in queries["rows"]}
    ours = by[("simindex", "query(fp)")]
    faiss = by.get(("faiss MultiHash 4x16", "range_search(1 query, radius 4)"))
    if faiss is None or faiss["median"] is None:
        beside, ratio = "faiss not installed", ""
    else:
        beside = f"faiss MultiHash 4x16 {faiss['median']:.1f} us"
        ratio = f" ({ours['median'] / faiss['median']:.2f}x faiss)"
    return [
        (
            f"k = 3 single query from the database ({queries['title'].split(':')[0]})",
            f"{ours['median']:.1f} us{ratio}",
            beside,
            "<= 1.5x faiss 4x16",
            "peers.py",
        )
    ]


def peers_summary(out: str) -> str:
    """peers.py's query rows (its JSON is long): method, operation, unit, median."""
    lines = []
    for section in json.loads(out)["sections"]:
        if "queries" in section["title"]:
            lines.append(section["title"])
            for r in section["rows"]:
                median = "-" if r["median"] is None else f"{r['median']:,.1f}"
                lines.append(f"  {r['method']:22} {r['operation']:52} {r['unit']:5} {median}")
    return "\n".join(lines)


def measure(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    url = args.postgres_url or env.get("SIMINDEX_TEST_POSTGRES_URL")
    if url:
        env["SIMINDEX_TEST_POSTGRES_URL"] = url
    quick = args.quick
    plan: list[tuple[str, list[str], Callable[[str], list[Row]]]] = [
        (
            "holding.py",
            (["--n", "20000", "--queries", "300"] if quick else [])
            + ([] if url else ["--skip-postgres"])
            + ["--no-save"],
            holding_rows,
        ),
        ("allpairs.py", ["--quick" if quick else "--no-save"], allpairs_rows),
        ("bulk.py", (["--n", "5000", "--runs", "1"] if quick else []) + ["--no-save"], bulk_rows),
        (
            "threads.py",
            (["--n", "5000", "--queries", "20"] if quick else []) + ["--no-save"],
            threads_rows,
        ),
        ("startup.py", (["--runs", "2"] if quick else []) + ["--no-save"], startup_rows),
        (
            "peers.py",
            ["--quick" if quick else "--n=1000000", "--no-docs", "--json"],
            peers_rows,
        ),
    ]
    rows: list[Row] = []
    printed: list[tuple[str, str]] = []
    for script, extra, parse in plan:
        out = run(script, extra, env)
        printed.append((f"{script} {' '.join(extra)}", out))
        rows += parse(out)
    print(
        "At the defaults (k = 8 unless said), one run of the scripts below on this "
        f"machine ({os.cpu_count()} cores); each ratio within one script's run\n"
    )
    print("| what a user does | simindex | beside, in the same script's run | target | script |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for name, out in printed:
        print(f"\n## python bench/{name}\n")
        print(peers_summary(out) if name.endswith("--json") else out.rstrip())
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    ap.add_argument(
        "--postgres-url",
        help="PostgreSQL for holding.py and bulk.py (or SIMINDEX_TEST_POSTGRES_URL)",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("defaults", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
