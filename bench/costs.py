#!/usr/bin/env python
"""The cost model's constants measured on this machine: what simindex/costs.py prices plans with.

    python bench/costs.py            # measure (a few minutes), print beside today's, save
    python bench/costs.py --write    # ... and write them into simindex/costs.py
    python bench/costs.py --quick    # small sizes: a smoke run (writes nothing)
    python bench/costs.py --no-save  # print only (else bench/results/costs.txt)

simindex/costs.py keeps every constant its models multiply by in one block
(between its "measured" markers); this script measures each of them by
timing simindex's own code on random uniform fingerprints, the model's
assumption, and ``--write`` writes the block again, each constant with how
it was measured above it. Sections:

- a query from the database (``lookup_cost``): an index seek and a
  candidate row, fitted over queries at several k on indexes of several
  layouts (SQLite, hold=False), the per-query rest reported beside them;
  the bytes of a row and of a lookup index, fitted over files of three
  layouts;
- reading the index into memory: a batch's read (``READ_US_PER_ROW``),
  holding it from its rows and from the stored snapshot (the first held
  query less a later one);
- a held single query's tables (``held_query_us``; bench/cost_parts/held.py):
  ``Snapshot.near`` with its layout forced, fitted over layouts, probes
  and sizes;
- all pairs in numpy (``pairs_table_ns``, ``pairs_lookup``) and by the
  compiled loops (``compiled_table_ns``; bench/cost_parts/pairs.py): each
  term isolated by timing pairs.py's and compiled.py's own functions.

Then the plans the measured values would choose beside today's: a new
index's blocks for every k (blocks.DEFAULT_BLOCKS must follow, and
tests/test_costs.py says so when they differ), the held single query's
layout and all pairs' plans over a grid of sizes and k. Medians of several
repetitions; the machine is shared, so a constant moves by tens of percent
from one run to the next, and only a plan that changes says whether that
matters.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(HERE / "cost_parts"))

import held  # noqa: E402  (bench/cost_parts: a held query's tables)
import pairs  # noqa: E402  (bench/cost_parts: all pairs)
from common import (  # noqa: E402
    forget_stored,
    log,
    median,
    output_options,
    revision,
    save_output,
    values_in,
)

from simindex import SimIndex, costs  # noqa: E402
from simindex.blocks import MAX_INDEX_K, BlockLayout  # noqa: E402

COSTS = ROOT / "simindex" / "costs.py"
BEGIN = "# -- measured by `python bench/costs.py --write`"
END = "# -- end of the measured constants --"

Measured = list[tuple[str, float, str]]  # (name, value, how it was measured)
Log = Callable[[str], None]


def _fit(rows: list[list[float]], times: list[float]) -> np.ndarray:
    """Least squares of times over the rows' terms (each row: one configuration)."""
    solution, *_ = np.linalg.lstsq(np.array(rows, dtype=float), np.array(times), rcond=None)
    return solution


def _fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


def _index(path: Path, fps: np.ndarray, k: int, blocks: int | None) -> None:
    with SimIndex(str(path), k=k, blocks=blocks) as index:
        index.add_fingerprints((str(i), fp) for i, fp in enumerate(fps.tolist()))


# -- the database ------------------------------------------------------------

# (k the index is made for, its blocks, the k its queries ask): seeks and
# candidate rows spread wide enough to tell the two apart.
_LOOKUPS = [(8, 3, 8), (8, 3, 5), (8, 3, 2), (3, 4, 3), (3, 4, 4), (5, 5, 5), (2, 3, 2)]


def database(quick: bool, folder: Path, log: Log) -> Measured:
    """An index seek and a candidate row of a query from the database, and
    the bytes of a row and of a lookup index."""
    n = 20_000 if quick else 1_000_000
    queries = 50 if quick else 400
    fps = _fingerprints(n, 1)
    asked = _fingerprints(queries, 2).tolist()
    rows, times, sizes = [], [], {}
    for made_k, blocks, k in _LOOKUPS:
        path = folder / f"lookup-{made_k}-{blocks}.db"
        if not path.exists():
            log(f"database: an index of {n:,} fingerprints, k = {made_k}, {blocks} blocks")
            _index(path, fps, made_k, blocks)
            sizes[(made_k, blocks)] = path.stat().st_size
        with SimIndex(str(path), hold=False) as index:
            layout = BlockLayout.for_k(made_k, blocks)
            cost = costs.lookup_cost(layout, k, n)
            assert cost is not None, (made_k, blocks, k)
            for fp in asked[:20]:  # warm: the file's pages in the cache
                index.query(fp, k=k)
            spent = []
            for _ in range(3 if quick else 5):
                start = time.perf_counter()
                for fp in asked:
                    index.query(fp, k=k)
                spent.append((time.perf_counter() - start) / len(asked) * 1e6)
        rows.append([cost[0], cost[1], 1.0])
        times.append(median(spent))
        log(f"  k = {k}, {blocks} blocks: {cost[0]} seeks, {cost[1]:.1f} rows, {times[-1]:.0f} us")
    seek, row, rest = _fit(rows, times)
    tables = {key: len(BlockLayout.for_k(*key).tables) for key in sizes}
    terms = [[1.0, tables[key]] for key in sizes]
    per_row, per_index = _fit(terms, [size / n for size in sizes.values()])
    return [
        (
            "_SEEK_US",
            float(seek),
            f"microseconds an index seek of a query from the database (SQLite, hold=False, "
            f"{n:,} fingerprints), fitted with _ROW_US over queries at {len(rows)} (layout, k); "
            f"the rest of a query, which the model leaves out, {rest:.0f} us",
        ),
        ("_ROW_US", float(row), "microseconds a candidate row of such a query, the same fit"),
        (
            "_ROW_BYTES",
            float(per_row),
            f"bytes a fingerprint in a file besides its lookup indexes (files of {n:,} "
            f"fingerprints at {len(sizes)} layouts, fitted with _INDEX_BYTES)",
        ),
        ("_INDEX_BYTES", float(per_index), "bytes a fingerprint in one lookup index, the same fit"),
    ]


def reading(quick: bool, folder: Path, log: Log) -> Measured:
    """Reading the index into memory: for a batch (its rows), and to hold it
    (from its rows, and from the stored snapshot)."""
    n = 20_000 if quick else 1_000_000
    path = folder / "lookup-8-3.db"
    if not path.exists():
        _index(path, _fingerprints(n, 1), 8, 3)
    asked = _fingerprints(20, 3).tolist()
    read: list[float] = []
    hold: list[float] = []
    stored: list[float] = []
    for _ in range(3 if quick else 5):
        forget_stored(str(path))
        with SimIndex(str(path), hold=False) as index:
            start = time.perf_counter()
            index._views.read(partial(index._reader._read_snapshot, store=False))
            read.append((time.perf_counter() - start) / n)
        for into in (hold, stored):
            if into is hold:
                forget_stored(str(path))
            with SimIndex(str(path), hold=True) as index:
                start = time.perf_counter()
                index.query(asked[0], k=8)  # reads (and stores what it read)
                first = time.perf_counter() - start
                later = []
                for fp in asked[1:]:
                    start = time.perf_counter()
                    index.query(fp, k=8)
                    later.append(time.perf_counter() - start)
            into.append((first - median(later)) / n)
    log(f"reading: {median(read) * 1e6:.2f} us a row; hold {median(hold) * 1e6:.2f} us a row")
    return [
        (
            "READ_US_PER_ROW",
            median(read) * 1e6,
            f"microseconds a row of a batch's read of the index into memory ({n:,} fingerprints)",
        ),
        (
            "HOLD_S_PER_ROW",
            median(hold),
            "seconds a row of holding it: read from its rows, its tables for the index's k "
            "sorted, and stored (the first query with hold=True, nothing stored, less a later one)",
        ),
        (
            "STORED_S_PER_ROW",
            median(stored),
            "seconds a row of holding it from the stored snapshot (the same, snapshot stored)",
        ),
    ]


# -- the plans they choose ------------------------------------------------------


def _plans() -> dict[str, str]:
    """What each choice the model makes chooses, by question."""
    from simindex import pairs as all_pairs
    from simindex import snapshot

    out: dict[str, str] = {}
    out[f"a new index's blocks, k = 0..{MAX_INDEX_K}"] = str(
        [costs.default_blocks(k) for k in range(MAX_INDEX_K + 1)]
    )
    for n in (20_000, 200_000, 1_000_000, 20_000_000):
        for k in (1, 3, 6, 8):
            chosen = snapshot.single_layout(n, k)
            held = None if chosen is None else chosen[0].widths
            out[f"held single query, n = {n:,}, k = {k}: block widths"] = str(held)
    cpus = all_pairs.usable_cpus()  # (pairs_within shares a table's probes among them)
    for n in (1_000_000, 10_000_000, 100_000_000, 300_000_000):
        for k in (3, 8):
            for compiled in (False, True):
                plan = all_pairs.pairs_plan(
                    n, k, per_table=None if compiled else 1, compiled=compiled, cpus=cpus
                )
                widths = [m.bit_count() for m in plan.masks]
                how = "compiled" if compiled else "numpy"
                out[
                    f"all pairs ({how}, {cpus} threads), n = {n:,}, k = {k}: table widths, radius"
                ] = f"{widths}, {plan.radius}"
    return out


# -- the block in simindex/costs.py -----------------------------------------------


def _block(measured: Measured, measured_at: str) -> str:
    """The measured block of simindex/costs.py: each constant, how above it."""
    lines = [
        BEGIN + " on this",
        f"# machine ({os.cpu_count()} cores) at {measured_at}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())};",
        "# bench/results/costs.txt gives each beside the value before. Measure again",
        "# rather than edit them by hand. --",
    ]
    for name, value, how in measured:
        words = ("# " + how).split()
        line = ""
        for word in words:
            if len(line) + len(word) + 1 > 99:
                lines.append(line)
                line = "#"
            line = f"{line} {word}" if line else word
        lines.append(line)
        lines.append(f"{name} = {float(f'{value:.3g}')!r}")
    lines.append(END)
    return "\n".join(lines)


def write(measured: Measured, measured_at: str) -> None:
    """simindex/costs.py's block written again: every constant in costs.MEASURED's
    order, those this run did not measure kept as they are (said so above
    them); refused, with nothing written, for a value that is not a finite
    number of at least 0. Written beside the file and renamed over it."""
    by_name = {name: (value, how) for name, value, how in measured}
    wrong = [n for n, (v, _) in by_name.items() if not math.isfinite(v) or v < 0]
    if wrong:
        raise SystemExit(f"not a finite cost of at least 0: {', '.join(wrong)}; nothing written")
    kept = "not measured by this run (numba missing): the value before, kept"
    block = [by_name.get(name, (getattr(costs, name), kept)) for name in costs.MEASURED]
    text = COSTS.read_text(encoding="utf-8")
    found = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, flags=re.S)
    if found is None:
        raise SystemExit(f"no measured block in {COSTS}")
    rows = [(name, value, how) for name, (value, how) in zip(costs.MEASURED, block, strict=True)]
    partial = COSTS.with_name(COSTS.name + ".partial")
    partial.write_text(text[: found.start()] + _block(rows, measured_at) + text[found.end() :])
    os.replace(partial, COSTS)
    log(f"wrote {len(measured)} measured constants into {COSTS.relative_to(ROOT)}")


def measure(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    measured_at = revision()  # (before the results file's partial copy is there)
    measured: Measured = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        measured += database(args.quick, folder, log)
        measured += reading(args.quick, folder, log)
    measured += held.measure(args.quick, log)
    measured += pairs.measure(args.quick, log)
    names = [name for name, _, _ in measured]
    missing = sorted(set(costs.MEASURED) - set(names))
    print(
        f"The cost model's constants measured on this machine ({os.cpu_count()} cores), "
        f"{'quick sizes' if args.quick else 'full sizes'}, in {time.perf_counter() - started:.0f} s"
    )
    print(f"\n{'constant':<22} {'measured':>12} {'before':>12} {'ratio':>7}")
    for name, value, _ in measured:
        before = getattr(costs, name)
        ratio = value / before if before else math.nan
        print(f"{name:<22} {value:12.4g} {before:12.4g} {ratio:7.2f}")
    if missing:
        print(f"\nnot measured (kept as they are): {', '.join(missing)}")
    print("\nHow each was measured:")
    for name, _, how in measured:
        print(f"- {name}: {how}")
    values = {name: value for name, value, _ in measured}
    print("\nThe held query's model with the measured values, beside its timings:")
    print("\n".join(held.report(values)))
    print("\nAll pairs' model with the measured values, beside one table's time:")
    print("\n".join(pairs.report(values)))
    before = _plans()
    with values_in(costs, values):
        after = _plans()
    changed = [q for q in before if before[q] != after[q]]
    print(f"\nPlans the measured values choose differently ({len(changed)} of {len(before)}):")
    for question in changed:
        print(f"- {question}: {before[question]} -> {after[question]}")
    if args.write and not args.quick:
        if any(not name.startswith("COMPILED_") for name in missing):
            raise SystemExit("not every constant was measured: nothing written")
        write(measured, measured_at)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (writes nothing)")
    ap.add_argument(
        "--write", action="store_true", help="write the measured values into simindex/costs.py"
    )
    output_options(ap)
    args = ap.parse_args(argv)
    if args.write and args.no_save:  # (the block it writes cites the results file)
        ap.error("--write keeps its results file: leave out --no-save")
    return save_output("costs", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())
