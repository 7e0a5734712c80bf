"""The all-pairs cost constants of simindex.costs, measured instead of typed in.

bench/costs.py runs ``measure`` (n = 1,000,000; quick: 100,000, where the
per-hit terms are noise) and ``report``. ``measure`` times
simindex's own functions (tables.flip_hits, pairs._Table, tables.packed_key
and stable_order, compiled.prepared and the compiled table_pairs) on uniform
random fingerprints, one term of the model at a time: a per-row cost as the
time at n minus at n / 2, a per-lookup cost as the time of more flips minus
fewer, a per-hit or per-pair cost as a table or flips that find many minus
the same that find none (a key bit cleared in every row, flips that set it:
every lookup misses); the compiled lookup and row costs as the line through
a sparse and a dense uniform table's ns a lookup. Medians of 5 runs (3
quick) after a warm-up, one thread. Its log adds checks of single terms.
``report`` checks the whole model: costs.pairs_table_ns and
compiled_table_ns with the measured values beside the measured time of
whole tables of the plans pairs_within picks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from math import log2
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
from common import values_in  # (bench/: on the path bench/costs.py runs with)

from simindex import compiled, compiling, costs
from simindex.blocks import even_layout
from simindex.costs import pairs_lookup
from simindex.pairs import _Table, pairs_plan
from simindex.tables import (
    Plan,
    RunIndex,
    flip_hits,
    layout_plan,
    packed_flips,
    packed_key,
    stable_order,
)

Log = Callable[[str], None]
Result = tuple[str, float, str]

SEED = 1_000_003
K = 8  # the distance pairs are kept within (random fingerprints: almost never)


def measure(quick: bool, log: Callable[[str], None]) -> list[tuple[str, float, str]]:
    """(name, value, how it was measured in one short sentence) for each constant below."""
    started = time.perf_counter()
    n = 100_000 if quick else 1_000_000
    reps = 3 if quick else 5
    rng = np.random.default_rng(SEED)
    fps = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
    log(f"n = {n:,}, medians of {reps} runs")
    out = _sorts(fps, reps, log)
    out += _runs(fps, reps, log)
    out += _lookups(fps, reps, log)
    out += _builds(fps, reps, quick, log)
    out += _compiled(fps, reps, log)
    log(f"measured in {time.perf_counter() - started:.1f} s")
    _LAST["fps"] = fps
    return out


_LAST: dict[str, Any] = {}  # the last measure's fingerprints, for report


# -- timing and tables --------------------------------------------------------


def _medians(jobs: Sequence[Callable[[], Any]], reps: int) -> list[float]:
    """Each job's median seconds: each run once to warm up, then all in turn, reps times."""
    for job in jobs:
        job()
    times: list[list[float]] = [[] for _ in jobs]
    for _ in range(reps):
        for job, took in zip(jobs, times, strict=True):
            start = time.perf_counter()
            job()
            took.append(time.perf_counter() - start)
    return [median(took) for took in times]


def _mask(blocks: int, k: int, t: int, per_table: int = 1) -> int:
    """Table t's mask in the plan of an even layout (its keys as pairs_within's)."""
    return layout_plan(even_layout(blocks, per_table), k).masks[t]


# Masks of real plans: 16 bits (k = 3), 22 and 21 bits (k = 2), 32 (k = 1),
# 64 (k = 0), and 26 (two of five blocks, not side by side).
MASK_16 = _mask(4, 3, 0)
MASK_22 = _mask(3, 2, 0)
MASK_32 = _mask(2, 1, 1)
MASK_64 = _mask(1, 0, 0)
MASK_26 = _mask(5, 8, 1, per_table=2)


def _cleared(fps: np.ndarray, mask: int) -> np.ndarray:
    """fps with the lowest bit of mask cleared: key bit 0 is 0 in every row."""
    return fps & ~np.uint64(mask & -mask)


def _table(fps: np.ndarray, keys: np.ndarray) -> _Table:
    """pairs_within's sorted table of fps by keys (no earlier tables)."""
    order = stable_order(keys)
    return _Table(0, order, keys[order], fps[order], [], 0, K)


def _hits(keys: np.ndarray, flips: list[int], offsets: int | None, occupied: int | None) -> int:
    """Runs every lookup of flip_hits; the lookups that found a run."""
    index = RunIndex(keys, offsets=offsets, occupied=occupied)
    return sum(len(a) for a, _, _ in flip_hits(index, flips))


def _lookups_of(keys: np.ndarray, flips: list[int]) -> int:
    """The lookups the flips make: each from the rows whose key has its highest bit clear."""
    return sum(int(np.count_nonzero((keys >> (f.bit_length() - 1)) & 1 == 0)) for f in flips)


def _ns(seconds: float, count: float) -> float:
    """Nanoseconds each of count."""
    return seconds / count * 1e9


# -- numpy: sorting and equal runs ----------------------------------------------


def _sorts(fps: np.ndarray, reps: int, log: Log) -> list[Result]:
    """Sorting a table, per row, by key width: packed_key, stable_order and the
    two gathers pairs_within makes, at n minus at n / 2."""
    half = fps[: len(fps) // 2]

    def sort(x: np.ndarray, mask: int) -> None:
        keyed = packed_key(x, mask)
        order = stable_order(keyed)
        _ = keyed[order], x[order]  # (the gathers are part of the cost)

    out = []
    for name, mask in (
        ("_SORT_16_NS", MASK_16),
        ("_SORT_32_NS", MASK_22),
        ("_SORT_WIDE_NS", MASK_64),
    ):
        full, part = _medians([partial(sort, fps, mask), partial(sort, half, mask)], reps)
        ns = _ns(full - part, len(fps) - len(half))
        log(f"{name}: {ns:.1f} ns a row ({len(fps):,} rows: {full * 1e3:.1f} ms)")
        width = mask.bit_count()
        how = (
            f"packed_key + stable_order + the two gathers of a table of {width}-bit keys "
            f"(a real plan's mask), time at n minus at n/2, per row"
        )
        out.append((name, ns, how))
    return out


def _runs(fps: np.ndarray, reps: int, log: Log) -> list[Result]:
    """_Table.runs: per row from 32-bit keys (no equal runs) at n minus n / 2;
    per pair from 16-bit keys held as uint32 (15 rows a key at 1M) minus 32-bit keys."""
    half = len(fps) // 2
    wide = packed_key(fps, MASK_32)  # uint32, about n**2 / 2**33 equal pairs
    narrow = packed_key(fps, MASK_16).astype(np.uint32)
    mid = packed_key(fps, MASK_22)
    tables = [
        _table(fps, wide),
        _table(fps[:half], wide[:half]),
        _table(fps, narrow),
        _table(fps, mid),
    ]
    t_wide, t_half, t_narrow, t_mid = _medians([t.runs for t in tables], reps)
    c_wide, _, c_narrow, c_mid = (t.runs()[1] for t in tables)
    row = _ns(t_wide - t_half, len(fps) - half)
    pair = _ns(t_narrow - t_wide, c_narrow - c_wide)
    log(f"_RUN_NS: {row:.2f} ns a row ({len(fps):,} rows of 32-bit keys: {t_wide * 1e3:.1f} ms)")
    log(f"_RUN_PAIR_NS: {pair:.2f} ns a pair ({c_narrow:,} pairs of 16-bit keys)")
    log(
        f"  check: 22-bit keys ({c_mid:,} pairs, few a run): "
        f"{_ns(t_mid - t_wide, max(1, c_mid - c_wide)):.2f} ns a pair"
    )
    return [
        ("_RUN_NS", row, "_Table.runs on 32-bit keys (no equal runs), time at n minus n/2, a row"),
        (
            "_RUN_PAIR_NS",
            pair,
            (
                "_Table.runs on 16-bit keys held as uint32 minus 32-bit keys, same n, "
                "per extra pair it compared"
            ),
        ),
    ]


# -- numpy: probes -----------------------------------------------------------------


def _lookups(fps: np.ndarray, reps: int, log: Log) -> list[Result]:
    """flip_hits with offsets, binary search or occupied forced, on a table
    whose key bit 0 is clear: flips with bit 0 set miss every lookup, the same
    without it find runs. All flips of a set share their highest bit (one group)."""
    n = len(fps)
    even = _cleared(fps, MASK_22)
    table = _table(even, packed_key(even, MASK_22))
    keys = table.keys
    width = MASK_22.bit_count()
    top = 1 << (width - 1)
    miss = [top | 1 << b | 1 for b in range(1, width - 1)]
    hit = [top | 1 << b for b in range(1, width - 1)]
    fewer = miss[::2]
    extra = _lookups_of(keys, miss) - _lookups_of(keys, fewer)
    spread = [1 << b | 1 for b in range(1, width)]  # every highest bit: a group each
    one_group = [top | 1, *miss]
    out = []

    def hits(
        flips: list[int], offsets: int | None, occupied: int | None = None
    ) -> Callable[[], int]:
        return lambda: _hits(keys, flips, offsets, occupied)

    # By offset: lookups, hits, groups, pairs.
    t_fewer, t_miss, t_hit, t_spread, t_one, t_pairs = _medians(
        [
            hits(fewer, width),
            hits(miss, width),
            hits(hit, width),
            hits(spread, width),
            hits(one_group, width),
            lambda: table.flipped(hit, width, None),
        ],
        reps,
    )
    found = hits(hit, width)()
    compared = table.flipped(hit, width, None)[1]
    offset = _ns(t_miss - t_fewer, extra)
    hit_ns = _ns(t_hit - t_miss, found)
    group = _ns(t_spread - t_one, (len(spread) - 1) * n)  # a group is a pass over the table
    pair = _ns(t_pairs - t_hit, compared)
    log(f"_OFFSET_NS: {offset:.2f} ns a lookup ({width}-bit keys, {len(miss)} flips missing)")
    log(f"_HIT_NS: {hit_ns:.2f} ns a hit ({found / _lookups_of(keys, hit):.0%} of lookups hit)")
    log(
        f"_GROUP_NS: {group:.2f} ns a row and group ({group * n / 1e6:.2f} ms a group at n = {n:,})"
    )
    log(f"_PAIR_NS: {pair:.2f} ns a pair ({compared:,} pairs, {compared / found:.2f} a hit)")
    halved = _table(even[: n // 2], packed_key(even[: n // 2], MASK_22)).keys
    h_spread, h_one = _medians(
        [lambda: _hits(halved, spread, width, None), lambda: _hits(halved, one_group, width, None)],
        reps,
    )
    per_half = _ns(h_spread - h_one, (len(spread) - 1) * (n // 2))
    log(f"  check: at n = {n // 2:,}, {per_half:.2f} ns a row and group")
    _dense_check(fps, reps, log, offset, hit_ns, pair)
    out += [
        (
            "_OFFSET_NS",
            offset,
            (
                f"flip_hits by offset, {width}-bit keys, flips that all miss: {len(miss)} flips "
                f"minus {len(fewer)}, per extra lookup"
            ),
        ),
        (
            "_HIT_NS",
            hit_ns,
            "flip_hits by offset, flips that find runs minus as many that miss, per run found",
        ),
        (
            "_GROUP_NS",
            group,
            (
                f"flip_hits by offset: {len(spread)} missing flips of as many highest bits minus "
                f"as many of one highest bit, per extra group and row of the table (n={n:,})"
            ),
        ),
        (
            "_PAIR_NS",
            pair,
            "_Table.flipped minus flip_hits with the same flips (by offset), per pair compared",
        ),
    ]

    # The same by binary search.
    s_fewer, s_miss, s_hit = _medians([hits(fewer, None), hits(miss, None), hits(hit, None)], reps)
    steps = max(1.0, log2(n + 1))
    search = _ns(s_miss - s_fewer, extra * steps)
    log(f"_SEARCH_NS: {search:.3f} ns a step ({_ns(s_miss - s_fewer, extra):.1f} ns a lookup)")
    log(f"  check: a hit by binary search {_ns(s_hit - s_miss, found):.2f} ns (model: _HIT_NS)")
    out.append(
        (
            "_SEARCH_NS",
            search,
            (
                f"flip_hits by binary search, the missing flips as for _OFFSET_NS, per extra "
                f"lookup over log2(n+1) = {steps:.1f} steps"
            ),
        )
    )

    # Occupied: keys of 26 bits (two of five blocks), where it is used.
    even26 = _cleared(fps, MASK_26)
    keys26 = _table(even26, packed_key(even26, MASK_26)).keys
    width26 = MASK_26.bit_count()
    top26 = 1 << (width26 - 1)
    miss26 = [top26 | 1 << b | 1 for b in range(1, width26 - 1)]
    hit26 = [top26 | 1 << b for b in range(1, width26 - 1)]
    o_fewer, o_miss, o_hit = _medians(
        [
            lambda: _hits(keys26, miss26[::2], None, width26),
            lambda: _hits(keys26, miss26, None, width26),
            lambda: _hits(keys26, hit26, None, width26),
        ],
        reps,
    )
    extra26 = _lookups_of(keys26, miss26) - _lookups_of(keys26, miss26[::2])
    occupied = _ns(o_miss - o_fewer, extra26)
    found26 = _hits(keys26, hit26, None, width26)
    log(f"_OCCUPIED_NS: {occupied:.2f} ns a lookup ({width26}-bit keys)")
    log(
        f"  check: a hit by occupied {_ns(o_hit - o_miss, max(1, found26)):.1f} ns "
        f"({found26:,} hits; model: _HIT_NS + a search)"
    )
    out.append(
        (
            "_OCCUPIED_NS",
            occupied,
            (
                f"flip_hits by occupied, {width26}-bit keys (two of five blocks), flips that all "
                "miss: more minus fewer, per extra lookup"
            ),
        )
    )
    return out


def _dense_check(
    fps: np.ndarray, reps: int, log: Log, offset: float, hit: float, pair: float
) -> None:
    """Logs the model's time of two more flips by offset (_Table.flipped) on a
    uniform table of 16-bit keys (every lookup hits, many rows a run) beside
    the measured one."""
    table = _table(fps, packed_key(fps, MASK_16))
    top = 1 << 15
    flips = [top | 1, top | 1 << 5, top | 1 << 9, top | 1 << 13]
    fewer = flips[:2]
    t_fewer, t_all = _medians([partial(table.flipped, f, 16, None) for f in (fewer, flips)], reps)
    lookups = _lookups_of(table.keys, flips) - _lookups_of(table.keys, fewer)
    hits = _hits(table.keys, flips, 16, None) - _hits(table.keys, fewer, 16, None)
    pairs = table.flipped(flips, 16, None)[1] - table.flipped(fewer, 16, None)[1]
    model = (lookups * offset + hits * hit + pairs * pair) * 1e-9
    log(
        f"  check: 16-bit keys, {len(flips) - len(fewer)} flips ({pairs:,} pairs): "
        f"{(t_all - t_fewer) * 1e3:.1f} ms, the model with these values {model * 1e3:.1f} ms"
    )


def _builds(fps: np.ndarray, reps: int, quick: bool, log: Log) -> list[Result]:
    """The tables a lookup by offset or occupied builds, per possible key
    (tables.RunIndex), at a wider key minus a narrower one, the same rows."""

    def offsets(keys: np.ndarray, width: int) -> None:
        RunIndex(keys, offsets=width)

    # tables.RunIndex's lines for occupied, the distinct keys left out (they
    # differ in number between the two widths)
    def occupied(values: np.ndarray, width: int) -> None:
        there = np.zeros(1 << width, dtype=bool)
        there[values] = True

    def keys(width: int) -> np.ndarray:
        return np.sort(packed_key(fps, (1 << width) - 1)).astype(np.intp)

    narrow, wide = 20, costs.PAIRS_OFFSETS_MAX_BITS
    k_narrow, k_wide = keys(narrow), keys(wide)
    t_narrow, t_wide = _medians(
        [lambda: offsets(k_narrow, narrow), lambda: offsets(k_wide, wide)], reps
    )
    build = _ns(t_wide - t_narrow, 2**wide - 2**narrow)
    log(f"_BUILD_NS: {build:.2f} ns a possible key ({wide} bits: {t_wide * 1e3:.1f} ms)")

    o_narrow, o_wide = (23, 26) if quick else (24, costs.PAIRS_OCCUPIED_MAX_BITS)
    v_narrow, v_wide = np.unique(keys(o_narrow)), np.unique(keys(o_wide))
    t_o_narrow, t_o_wide = _medians(
        [lambda: occupied(v_narrow, o_narrow), lambda: occupied(v_wide, o_wide)], reps
    )
    there = _ns(t_o_wide - t_o_narrow, 2**o_wide - 2**o_narrow)
    log(f"_OCCUPIED_BUILD_NS: {there:.3f} ns a possible key ({o_wide} bits: {t_o_wide:.3f} s)")
    return [
        (
            "_BUILD_NS",
            build,
            (
                f"RunIndex by offset (bincount, cumsum, uint8 copy) on sorted uniform keys of "
                f"{wide} minus {narrow} bits, same rows, per extra possible key"
            ),
        ),
        (
            "_OCCUPIED_BUILD_NS",
            there,
            (
                f"RunIndex by occupied (zeros, scatter of the distinct keys) for {o_wide} minus "
                f"{o_narrow} bits, same rows, per extra possible key"
            ),
        ),
    ]


# -- compiled loops --------------------------------------------------------------


def _loops(log: Log) -> compiled.Loops | None:
    """simindex.compiled's loops, loaded (compiled the first time) if need be."""
    before = compiling.mode()
    compiling.use("always")
    started = time.perf_counter()
    try:
        loops = compiled.kernels()
    finally:
        compiling.use(before)
    if loops is None:
        log(f"no compiled loops ({compiling.why(compiled.LOOPS)!r}): their constants skipped")
    else:
        log(f"compiled loops loaded in {time.perf_counter() - started:.1f} s")
    return loops


def _compiled(fps: np.ndarray, reps: int, log: Log) -> list[Result]:
    """simindex.compiled's loops on one thread: a table prepared (prepared) and
    walked for its equal runs (table_pairs without flips), and its lookups
    (table_pairs with flips only) on uniform tables sparse and dense."""
    loops = _loops(log)
    if loops is None:
        return []
    n, half = len(fps), len(fps) // 2
    no_flips = np.zeros(0, np.int64)

    def walk(plan_t: tuple[Any, int], rows: np.ndarray) -> int:
        """Prepare table t of the plan over rows and pair its equal runs: pairs compared."""
        plan, t = plan_t
        table = compiled.prepared(loops.counting_sort, rows, plan, t)
        return table._replace(flips=no_flips, tops=no_flips).pairs(loops, plan.radius, K, True)[1]

    def probe(table: compiled.Table, flips: list[int]) -> Callable[[], int]:
        """table_pairs with these flips only (no equal runs): rows compared."""
        array = np.array(flips, np.int64)
        tops = np.array([f.bit_length() - 1 for f in flips], np.int64)
        only = table._replace(flips=array, tops=tops)

        def run() -> int:
            return only.pairs(loops, 0, K, False)[1]

        return run

    def per_lookup(
        plan_t: tuple[Any, int], mask: int, clear: bool = False
    ) -> tuple[float, float, float]:
        """(ns, rows found, hits) per lookup on table t of the plan (uniform,
        or with key bit 0 cleared: every lookup misses): every flip of
        highest bits 2 .. width - 1 (bit 0 set in each) minus every other one."""
        rows = _cleared(fps, mask) if clear else fps
        table = compiled.prepared(loops.counting_sort, rows, *plan_t)
        flips = [1 | 1 << b for b in range(2, mask.bit_count())]
        fewer = flips[::2]
        t_fewer, t_all = _medians([probe(table, fewer), probe(table, flips)], reps)
        lookups = _lookups_of(table.keys, flips) - _lookups_of(table.keys, fewer)
        found = probe(table, flips)() - probe(table, fewer)()
        hits = _runs_found(table, flips) - _runs_found(table, fewer)
        return _ns(t_all - t_fewer, lookups), found / lookups, hits / lookups

    def _runs_found(table: compiled.Table, flips: list[int]) -> int:
        """The lookups of these flips that find a run."""
        keys, found = table.keys, 0
        for f in flips:
            mine = keys[(keys >> (f.bit_length() - 1)) & 1 == 0]
            found += int(np.count_nonzero(table.sizes8[mine ^ f]))
        return found

    plan21 = (layout_plan(even_layout(3), 2), 1)  # 21 bits
    plan26 = (layout_plan(even_layout(5, 2), 8), 1)  # 26 bits (two blocks)
    plan16 = (layout_plan(even_layout(4), 3), 1)  # 16 bits
    mask21, mask16 = _mask(3, 2, 1), _mask(4, 3, 1)
    y21, x21, h21 = per_lookup(plan21, mask21)
    y16, x16, _ = per_lookup(plan16, mask16)
    row = (y16 - y21) / (x16 - x21)
    lookup = y21 - row * x21
    log(
        f"COMPILED_LOOKUP_NS: {lookup:.2f}, COMPILED_ROW_NS: {row:.2f} (a lookup: "
        f"{y21:.2f} ns at 21 bits, {x21:.2f} rows; {y16:.2f} ns at 16 bits, {x16:.2f} rows)"
    )
    plan13 = (layout_plan(even_layout(5), 4), 1)  # 13 bits (k = 9's compiled plan at 1M)
    for plan_t, mask in ((plan26, MASK_26), (plan13, _mask(5, 4, 1))):
        y, x, _ = per_lookup(plan_t, mask)
        log(
            f"  check at {mask.bit_count()} bits ({x:.2f} rows a lookup): {y:.2f} ns a lookup, "
            f"the model {lookup + row * x:.2f}"
        )
    miss, _, _ = per_lookup(plan21, mask21, clear=True)
    log(
        f"  at 21 bits a lookup that misses costs {miss:.2f} ns, one that hits "
        f"{miss + (y21 - miss) / h21:.2f} with its {x21 / h21:.2f} rows ({h21:.0%} hit)"
    )

    t_full, t_half, t_wide = _medians(
        [lambda: walk(plan21, fps), lambda: walk(plan21, fps[:half]), lambda: walk(plan26, fps)],
        reps,
    )
    c_full, c_half, c_wide = walk(plan21, fps), walk(plan21, fps[:half]), walk(plan26, fps)
    per_row = _ns(t_full - t_half - (c_full - c_half) * row * 1e-9, n - half)
    per_key = _ns(t_wide - t_full - (c_wide - c_full) * row * 1e-9, 2**26 - 2**21)
    log(f"COMPILED_SORT_NS: {per_row:.1f} ns a row ({n:,} rows: {t_full * 1e3:.1f} ms)")
    log(f"COMPILED_KEY_NS: {per_key:.2f} ns a possible key (26 bits: {t_wide * 1e3:.1f} ms)")
    loads = [_load_seconds() for _ in range(6)][1:]  # (the first after a compile: warm the cache)
    each = ", ".join(f"{x:.2f}" for x in loads)
    log(f"COMPILED_LOAD_MS: {median(loads) * 1e3:.0f} ms ({each} s)")
    return [
        (
            "COMPILED_LOOKUP_NS",
            lookup,
            (
                "table_pairs on uniform 21- and 16-bit tables (every flip minus every other): "
                "the line of ns a lookup against rows found a lookup, at 0 rows"
            ),
        ),
        (
            "COMPILED_ROW_NS",
            row,
            (
                f"the slope of that line, ns a row found (21 bits: {x21:.2g} rows a lookup, "
                f"16 bits: {x16:.2g}), a hit's own cost shared out over its rows"
            ),
        ),
        (
            "COMPILED_SORT_NS",
            per_row,
            (
                "prepared + table_pairs' equal runs (no flips), 21-bit keys, at n minus n/2 "
                "(their pairs taken off), per row"
            ),
        ),
        (
            "COMPILED_KEY_NS",
            per_key,
            (
                "prepared + table_pairs' equal runs (no flips), same rows, 26-bit keys minus 21 "
                "(their pairs taken off), per extra possible key"
            ),
        ),
        (
            "COMPILED_LOAD_MS",
            median(loads) * 1e3,
            (
                "a fresh process's compiled.kernels() with the machine code in numba's cache "
                "(numba's import and the loops loaded and run once), after importing "
                "simindex.compiled: median of 5, ms"
            ),
        ),
    ]


_LOAD = """
import time
from simindex import compiled, compiling
compiling.use("always")
started = time.perf_counter()
assert compiled.kernels() is not None
print(time.perf_counter() - started)
"""


def _load_seconds() -> float:
    """What loading the compiled loops costs a fresh process (this package's)."""
    root = str(Path(compiled.__file__).resolve().parent.parent)
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(  # (from the package's own folder: a child's cwd comes first)
        [sys.executable, "-c", _LOAD],
        cwd=root,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout)


# -- the model with the measured values beside whole tables ----------------------------


def _numpy_table(fps: np.ndarray, plan: Plan, t: int) -> list[float]:
    """Seconds of table t as pairs_within pairs it with numpy on one thread:
    [sort, equal runs, probes]."""
    n, mask = len(fps), plan.masks[t]
    start = time.perf_counter()
    keyed = packed_key(fps, mask)
    flips = packed_flips(plan.flips[t], mask).tolist()
    order = stable_order(keyed)
    earlier = [np.uint64(m) for m in plan.masks[:t]]
    table = _Table(t, order, keyed[order], fps[order], earlier, plan.radius, K)
    del keyed
    sorted_at = time.perf_counter()
    table.runs()
    runs_at = time.perf_counter()
    probes = [f for f in flips if f]
    if probes:
        width = mask.bit_count()
        how = pairs_lookup(n, width, len(probes))
        offsets = width if how == "offsets" else None
        table.flipped(probes, offsets, width if how == "occupied" else None)
    done = time.perf_counter()
    return [sorted_at - start, runs_at - sorted_at, done - runs_at]


def _compiled_one(loops: compiled.Loops, fps: np.ndarray, plan: Plan, t: int) -> list[float]:
    """Seconds of table t as pairs_within pairs it compiled on one thread
    (_compiled_table): [prepared, table_pairs]."""
    start = time.perf_counter()
    table = compiled.prepared(loops.counting_sort, fps, plan, t)
    prepared_at = time.perf_counter()
    table.pairs(loops, plan.radius, K, True)
    return [prepared_at - start, time.perf_counter() - prepared_at]


def _timed(job: Callable[[], list[float]], runs: int) -> list[float]:
    """Each part's median seconds over runs (ordered by their total)."""
    times = sorted((job() for _ in range(runs)), key=sum)
    return times[len(times) // 2]


def report(measured: dict[str, float]) -> list[str]:
    """The model with the measured values (and with today's) beside the
    measured time of whole tables: the plans pairs_within picks at n for
    k = 3 and 8, numpy and compiled, one thread, and a compiled table of 26
    bits (k = 8's plan from 300M fingerprints), at the last measure's n."""
    fps = _LAST.get("fps")
    if fps is None:
        fps = np.random.default_rng(SEED).integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    n = len(fps)
    runs = 3
    lines = [
        f"Whole tables at n = {n:,}, one thread, medians of {runs}: measured ms, the model "
        f"with the measured values (its ratio to measured), with today's"
    ]
    ms = 1e-6  # model nanoseconds to ms
    mine = {name: value for name, value in measured.items() if hasattr(costs, name)}

    def line(what: str, took: float, model: Callable[[], float]) -> str:
        with values_in(costs, mine):
            new = model() * ms
        old = model() * ms
        return (
            f"{what}: {took * 1e3:,.0f} ms; model {new:,.0f} ({new / (took * 1e3):.2f}x), "
            f"today's {old:,.0f} ({old / (took * 1e3):.2f}x)"
        )

    for k in (3, 8):
        plan = pairs_plan(n, k)
        t = len(plan.masks) - 1
        width, radius = plan.masks[t].bit_count(), plan.radius
        probes = sum(1 for f in plan.flips[t] if f)
        how = pairs_lookup(n, width, probes) if probes else "no probes"  # (as pairs_within)
        sort, walk, probed = _timed(partial(_numpy_table, fps, plan, t), runs)
        lines.append(
            line(
                f"numpy, k = {k}: {width} bits, radius {radius} ({how})",
                sort + walk + probed,
                partial(costs.pairs_table_ns, n, width, radius),
            )
        )
        with values_in(costs, mine):
            parts = _numpy_parts(n, width, radius)
        lines.append(
            f"  sort {sort * 1e3:,.0f} ms (model {parts[0] * ms:,.0f}), equal runs "
            f"{walk * 1e3:,.0f} ({parts[1] * ms:,.0f}), probes {probed * 1e3:,.0f} "
            f"({parts[2] * ms:,.0f})"
        )
    loops = _loops(lambda _: None)
    if loops is None:
        return [*lines, "no compiled loops: their tables skipped"]
    tables = []
    for k in (3, 8):
        plan = pairs_plan(n, k, per_table=None, compiled=True)
        tables.append((f"k = {k}", plan, len(plan.masks) - 1))
    tables.append(
        ("k = 8's plan at 300M", pairs_plan(3 * 10**8, 8, per_table=None, compiled=True), 0)
    )
    for what, plan, t in tables:
        width, radius = plan.masks[t].bit_count(), plan.radius
        prep, paired = _timed(partial(_compiled_one, loops, fps, plan, t), runs)
        lines.append(
            line(
                f"compiled, {what}: {width} bits, radius {radius}",
                prep + paired,
                partial(costs.compiled_table_ns, n, width, radius),
            )
        )
        with values_in(costs, mine):
            flat = costs.compiled_table_ns(n, width, 0)
            probed = costs.compiled_table_ns(n, width, radius) - flat
        lines.append(
            f"  prepared {prep * 1e3:,.0f} ms + table_pairs {paired * 1e3:,.0f}; model: "
            f"sort, keys and equal runs {flat * ms:,.0f}, lookups and their rows {probed * ms:,.0f}"
        )
    return lines


def _numpy_parts(n: int, width: int, radius: int) -> list[float]:
    """costs.pairs_table_ns of a table in its parts: [sort, equal runs, probes]."""
    flat = costs.pairs_table_ns(n, width, 0)  # sorted and its equal runs walked
    walk = n * costs._RUN_NS + n * (n / 2.0**width) / 2 * costs._RUN_PAIR_NS
    return [flat - walk, walk, costs.pairs_table_ns(n, width, radius) - flat]
