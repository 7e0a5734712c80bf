"""What each way of answering costs: every cost model, and the layout advisor.

The estimates assume fingerprints spread uniformly over the 64 bits (real
corpora share more bits, so they are lower bounds on the candidates). Every
constant they multiply by is in one block below, written by
``python bench/costs.py --write``, which measures each by timing this
package's own code (at a million fingerprints, on the machine it ran on);
each says how above it. They only ever choose between ways that give the
same answers: a wrong estimate costs time, never a result.

- The database lookup (lookup_cost): seeks and candidate rows of one query.
- A new index's number of blocks (default_blocks) and the advisor (advise).
- Reading the index into memory (READ_US_PER_ROW, HOLD_S_PER_ROW, STORED_S_PER_ROW).
- In memory: one table of a batch query (batch_table_cost, in binary-search
  steps), a single query (held_query_us), and one table of all pairs
  (pairs_table_ns, pairs_by_offsets, pairs_lookup; compiled_table_ns).

Who decides with them: planner.py (which way), accelerator.py (when to read),
blocks.BlockLayout.for_k (through DEFAULT_BLOCKS, which a test keeps equal to
default_blocks), snapshot.py and pairs.py (which in-memory tables).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb, expm1, log2

from simindex.blocks import (
    MAX_INDEX_K,
    MAX_TABLES,
    BlockLayout,
    cheapest,
    check_k,
    probes,
)
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import BITS

# -- measured by `python bench/costs.py --write` on this
# machine (2 cores) at 0dc947c (clean tree), 2026-12-06;
# bench/results/costs.txt gives each beside the value before. Measure again
# rather than edit them by hand. --
# microseconds an index seek of a query from the database (SQLite, hold=False, 1,000,000
# fingerprints), fitted with _ROW_US over queries at 7 (layout, k); the rest of a query, which the
# model leaves out, 16 us
_SEEK_US = 0.819
# microseconds a candidate row of such a query, the same fit
_ROW_US = 0.537
# bytes a fingerprint in a file besides its lookup indexes (files of 1,000,000 fingerprints at 4
# layouts, fitted with _INDEX_BYTES)
_ROW_BYTES = 56.7
# bytes a fingerprint in one lookup index, the same fit
_INDEX_BYTES = 20.2
# microseconds a row of a batch's read of the index into memory (1,000,000 fingerprints)
READ_US_PER_ROW = 0.723
# seconds a row of holding it: read from its rows, its tables for the index's k sorted, and stored
# (the first query with hold=True, nothing stored, less a later one)
HOLD_S_PER_ROW = 1.07e-06
# seconds a row of holding it from the stored snapshot (the same, snapshot stored)
STORED_S_PER_ROW = 4.58e-08
# microseconds a joined query (more than one table, all by offset) besides its lookups and
# candidates: Snapshot.near timed over 136 forced layouts at n = 20,000, 200,000, 1,000,000, one
# least-squares fit of relative error for all eight (a constant fitting negative set to 0 and the
# rest fitted again)
_HELD_JOINED_US = 18.6
# microseconds a query looped over its tables (not joined) besides them, the same fit
_HELD_QUERY_US = 5.18
# microseconds a table without probes (one slice) in that loop, the same fit
_HELD_EXACT_US = 2.59
# microseconds a candidate row of a table without probes in that loop, the same fit
_HELD_EXACT_ROW_US = 0.00371
# microseconds a probed table in that loop besides its probes and rows, the same fit
_HELD_PROBED_US = 20.2
# microseconds a lookup by offset (joined, or a probe in that loop), the same fit
_HELD_OFFSET_US = 0.0196
# microseconds a probe found by binary search in that loop, the same fit
_HELD_SEARCH_US = 0.0797
# microseconds a candidate row, joined or probed, the same fit
_HELD_ROW_US = 0.00526
# packed_key + stable_order + the two gathers of a table of 16-bit keys (a real plan's mask), time
# at n minus at n/2, per row
_SORT_16_NS = 25.6
# packed_key + stable_order + the two gathers of a table of 22-bit keys (a real plan's mask), time
# at n minus at n/2, per row
_SORT_32_NS = 46.6
# packed_key + stable_order + the two gathers of a table of 64-bit keys (a real plan's mask), time
# at n minus at n/2, per row
_SORT_WIDE_NS = 140.0
# _Table.runs on 32-bit keys (no equal runs), time at n minus n/2, a row
_RUN_NS = 0.534
# _Table.runs on 16-bit keys held as uint32 minus 32-bit keys, same n, per extra pair it compared
_RUN_PAIR_NS = 3.87
# _flip_hits' numpy lines (bincount, cumsum, uint8 copy) on sorted uniform keys of 22 minus 20
# bits, same rows, per extra possible key
_BUILD_NS = 2.38
# _flip_hits by offset, 22-bit keys, flips that all miss: 20 flips minus 10, per extra lookup
_OFFSET_NS = 1.15
# _flip_hits by binary search, the missing flips as for _OFFSET_NS, per extra lookup over log2(n+1)
# = 19.9 steps
_SEARCH_NS = 1.44
# _flip_hits by offset, flips that find runs minus as many that miss, per run found
_HIT_NS = 17.2
# _Table.flipped minus _flip_hits with the same flips (by offset), per pair compared
_PAIR_NS = 11.3
# _flip_hits by offset: 21 missing flips of as many highest bits minus as many of one highest bit,
# per extra group and row of the table (n=1,000,000)
_GROUP_NS = 2.76
# _flip_hits' numpy lines (zeros, scatter of the distinct keys) for 28 minus 24 bits, same rows,
# per extra possible key
_OCCUPIED_BUILD_NS = 0.0955
# _flip_hits by occupied, 26-bit keys (two of five blocks), flips that all miss: more minus fewer,
# per extra lookup
_OCCUPIED_NS = 5.17
# table_pairs on uniform 21- and 16-bit tables (every flip minus every other): the line of ns a
# lookup against rows found a lookup, at 0 rows
COMPILED_LOOKUP_NS = 6.68
# the slope of that line, ns a row found (21 bits: 0.48 rows a lookup, 16 bits: 15), a hit's own
# cost shared out over its rows
COMPILED_ROW_NS = 0.686
# prepared + table_pairs' equal runs (no flips), 21-bit keys, at n minus n/2 (their pairs taken
# off), per row
COMPILED_SORT_NS = 35.2
# prepared + table_pairs' equal runs (no flips), same rows, 26-bit keys minus 21 (their pairs taken
# off), per extra possible key
COMPILED_KEY_NS = 1.27
# a fresh process's compiled.kernels() with the machine code in numba's cache (numba's import and
# the loops loaded and run once), after importing simindex.compiled: median of 5, ms
COMPILED_LOAD_MS = 347.0
# -- end of the measured constants --

# Every constant of the block above: what bench/costs.py measures.
MEASURED = (
    "_SEEK_US", "_ROW_US", "_ROW_BYTES", "_INDEX_BYTES",
    "READ_US_PER_ROW", "HOLD_S_PER_ROW", "STORED_S_PER_ROW",
    "_HELD_JOINED_US", "_HELD_QUERY_US", "_HELD_EXACT_US", "_HELD_EXACT_ROW_US", "_HELD_PROBED_US",
    "_HELD_OFFSET_US", "_HELD_SEARCH_US", "_HELD_ROW_US",
    "_SORT_16_NS", "_SORT_32_NS", "_SORT_WIDE_NS", "_RUN_NS", "_RUN_PAIR_NS",
    "_BUILD_NS", "_OFFSET_NS", "_SEARCH_NS", "_HIT_NS", "_PAIR_NS", "_GROUP_NS",
    "_OCCUPIED_BUILD_NS", "_OCCUPIED_NS",
    "COMPILED_LOOKUP_NS", "COMPILED_ROW_NS", "COMPILED_SORT_NS", "COMPILED_KEY_NS",
    "COMPILED_LOAD_MS",
)  # fmt: skip


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask; Python 3.13's
    os.process_cpu_count), at least 1: what all pairs' threads and the
    fingerprinting workers are sized by, and the plans priced for."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return int(count() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# -- the database lookup ---------------------------------------------------


def lookup_cost(layout: BlockLayout, k: int, n: int) -> tuple[int, float, float] | None:
    """(seeks, expected candidate rows, estimated microseconds) of one query at
    distance k among n uniform fingerprints, or None if it would not probe."""
    if k <= layout.k:
        seeks = len(layout.tables)
        bits = [sum(layout.widths[b] for b in t) for t in layout.tables]
    else:
        found = probes(layout, k)
        if found is None:
            return None
        seeks = len(found)
        bits = [sum(layout.widths[b] for b in layout.tables[p.table]) for p in found]
    rows = sum(n / 2.0**b for b in bits)
    return seeks, rows, seeks * _SEEK_US + rows * _ROW_US


# -- a new index's layout, and the advisor ---------------------------------

_DEFAULT_N = 1_000_000
_DEFAULT_TABLES = 6  # database indexes a default layout may have (more: ask with blocks=)


def default_blocks(k: int) -> int:
    """Blocks of a new index for k: k + 1 up to k = 3 (four 16-bit blocks for
    the classic k = 3); past that, of the layouts with at most six database
    indexes, the cheapest lookup at a million fingerprints by lookup_cost.
    (blocks.DEFAULT_BLOCKS holds these values; a test keeps the two equal.)"""
    check_k(k, limit=MAX_INDEX_K, what="k")
    if k <= 3:
        return k + 1

    def cost(layout: BlockLayout) -> float | None:
        m = len(layout.widths)
        if m > k and comb(m, k) > _DEFAULT_TABLES:  # each index costs disk and load time
            return None
        found = lookup_cost(layout, k, _DEFAULT_N)
        return None if found is None else found[2]

    # Tables of one block each while m <= k (probed), of m - k blocks past it.
    layout = cheapest(k, cost, grouped=lambda m: [m - k] if m > k + 1 else [])
    return k + 1 if layout is None else len(layout.widths)


@dataclass(frozen=True)
class LayoutAdvice:
    """One candidate layout for n fingerprints and distance k."""

    layout: BlockLayout
    candidates: float  # expected rows per query that share a table's bits by chance
    bytes_per_fingerprint: float  # estimated size on disk
    cost: float  # estimated query cost, in microseconds (lookup_cost)
    seeks: int  # index lookups per query (probes included)

    @property
    def blocks(self) -> int:
        return len(self.layout.widths)


def advise(n: int, k: int) -> list[LayoutAdvice]:
    """Every layout for k, from one block (probed) up to the table limit, with
    its expected candidates per query (for fingerprints spread uniformly),
    size and cost (lookup_cost, in estimated microseconds), cheapest first.
    Real corpora share more bits than uniform ones, so treat the candidate
    counts as a lower bound."""
    check_k(k, limit=MAX_INDEX_K, what="k")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidArgumentError(f"n must be a whole number of at least 0, not {n!r}")
    out = []
    for m in range(1, BITS // 4 + 1):
        if m > k and comb(m, k) > MAX_TABLES:
            break
        try:
            layout = BlockLayout.for_k(k, m)
        except InvalidArgumentError:  # too many probes
            continue
        cost = lookup_cost(layout, k, n)
        assert cost is not None  # for_k checked the probes
        size = _ROW_BYTES + _INDEX_BYTES * len(layout.tables)
        out.append(LayoutAdvice(layout, cost[1], size, cost[2], cost[0]))
    return sorted(out, key=lambda a: (a.cost, a.blocks))


# -- in memory --------------------------------------------------------------


def batch_table_cost(probe_count: int, width: int, n: int) -> float:
    """A batch query's cost of one sorted table of `width` bits among n
    fingerprints, looked up with `probe_count` values (the query's own
    included), in binary-search steps: a probe costs about a binary search
    (log2 n steps), a candidate one step (tables.plan_for)."""
    steps = max(1.0, log2(n + 1))
    return probe_count * (steps + n / 2.0**width)


def held_query_us(
    widths: Sequence[int], n: int, probe_counts: Sequence[int] | None, by_offset: Sequence[bool]
) -> float:
    """One single query's estimated microseconds among n fingerprints held in
    memory, in one-block tables of these widths (snapshot.single_layout),
    each looked up with its probe count (None: exact lookups, one a table)
    by offset or by binary search. Tables all found by offset, more than
    one, are joined (one lookup for all their probes: a fixed cost a query,
    then each lookup and candidate); else a fixed cost a query, and each
    table its own: without probes a slice (a fixed cost and one a
    candidate), with probes a fixed cost, one a probe and one a candidate."""
    lookups = [1] * len(widths) if probe_counts is None else list(probe_counts)
    rows = [count * n / 2.0**width for count, width in zip(lookups, widths, strict=True)]
    if len(widths) > 1 and all(by_offset):
        return _HELD_JOINED_US + sum(lookups) * _HELD_OFFSET_US + sum(rows) * _HELD_ROW_US
    if probe_counts is None:
        return _HELD_QUERY_US + len(widths) * _HELD_EXACT_US + sum(rows) * _HELD_EXACT_ROW_US
    total = _HELD_QUERY_US + len(widths) * _HELD_PROBED_US + sum(rows) * _HELD_ROW_US
    for count, offset in zip(lookups, by_offset, strict=True):
        total += count * (_HELD_OFFSET_US if offset else _HELD_SEARCH_US)
    return total


PAIRS_OFFSETS_MAX_BITS = (
    22  # the widest key all pairs looks up by offset (2**bits + 1 entries), unless n >= 2**bits
)


def pairs_by_offsets(n: int, width: int, probes: int) -> bool:
    """Whether all pairs looks up a table of `width` bits (with `probes`
    probes besides 0) by offset rather than by binary search: when the
    offsets fit and building them costs less than the searches they save."""
    if width > PAIRS_OFFSETS_MAX_BITS and 2**width > n:  # (wider: no more keys than rows)
        return False
    saved = probes * n / 2 * (_SEARCH_NS * max(1.0, log2(n + 1)) - _OFFSET_NS)
    return 2.0**width * _BUILD_NS <= saved


PAIRS_OCCUPIED_MAX_BITS = 28  # the widest key all pairs tests in a table of a byte a key


def pairs_lookup(n: int, width: int, probes: int) -> str:
    """How all pairs looks up a table of `width` bits with `probes` probes
    besides 0: "offsets" (pairs_by_offsets), "occupied" (keys too wide for
    offsets: test a byte a possible key, then search for the few found) or
    "search" (binary search among the distinct keys)."""
    if pairs_by_offsets(n, width, probes):
        return "offsets"
    if width <= PAIRS_OCCUPIED_MAX_BITS:
        saved = probes * n / 2 * (_SEARCH_NS * max(1.0, log2(n + 1)) - _OFFSET_NS)
        if 2.0**width * _OCCUPIED_BUILD_NS <= saved:
            return "occupied"
    return "search"


def pairs_table_ns(n: int, width: int, radius: int, cpus: int = 1) -> float:
    """The estimated nanoseconds of one table of `width` bits in all pairs
    (uniform fingerprints): sort it and walk its equal runs, then for each
    probe look up the rows of half the table (pairs_lookup), and compare
    the pairs found; the probes shared by ``cpus`` threads (pairs_within
    splits them so), the rest on one."""
    per_key = n / 2.0**width  # rows of a key
    pairs = n * per_key / 2  # pairs of rows with equal keys, or one probe's flips apart
    sort = _SORT_16_NS if width <= 16 else _SORT_32_NS if width <= 32 else _SORT_WIDE_NS
    cost = n * (sort + _RUN_NS) + pairs * _RUN_PAIR_NS
    if radius:
        probe_count = sum(comb(width, i) for i in range(1, radius + 1))
        hits = -expm1(-per_key)  # the share of lookups that find a run
        search = _SEARCH_NS * max(1.0, log2(n + 1))
        how = pairs_lookup(n, width, probe_count)
        if how == "offsets":
            cost += 2.0**width * _BUILD_NS
            lookup = _OFFSET_NS + hits * _HIT_NS
        elif how == "occupied":
            cost += 2.0**width * _OCCUPIED_BUILD_NS
            lookup = _OCCUPIED_NS + hits * (_HIT_NS + search)
        else:
            lookup = search + hits * _HIT_NS
        probing = probe_count * (n / 2 * lookup + pairs * _PAIR_NS) + width * n * _GROUP_NS
        cost += probing / cpus
    return cost


def compiled_load_ns() -> float:
    """What loading the compiled loops costs a process that has not yet
    (numba's import and their machine code from its cache), in ns."""
    return COMPILED_LOAD_MS * 1_000_000


def compiled_table_ns(n: int, width: int, radius: int, cpus: int = 1) -> float:
    """The estimated nanoseconds of one table of `width` bits in all pairs
    by the compiled loops (uniform fingerprints): prepare it and walk its
    equal runs on one thread, and for each probe look up the rows of half
    the table and compare the rows found, the probes shared by ``cpus``
    threads (pairs._compiled_table splits them so)."""
    per_key = n / 2.0**width  # rows of a key
    probe_count = sum(comb(width, i) for i in range(1, radius + 1))
    lookups = probe_count * n / 2
    prepared = (
        n * COMPILED_SORT_NS + 2.0**width * COMPILED_KEY_NS + n * per_key / 2 * COMPILED_ROW_NS
    )
    probing = lookups * COMPILED_LOOKUP_NS + lookups * per_key * COMPILED_ROW_NS
    return prepared + probing / cpus
