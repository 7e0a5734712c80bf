"""What each way of answering costs: every cost model, and the layout advisor.

The estimates assume fingerprints spread uniformly over the 64 bits (real
corpora share more bits, so they are lower bounds on the candidates) and were
measured on a 2-core machine at a million fingerprints. They only ever choose
between ways that give the same answers: a wrong estimate costs time, never
a result.

- The database lookup (lookup_cost): seeks and candidate rows of one query.
- A new index's number of blocks (default_blocks) and the advisor (advise).
- Reading the index into memory (READ_US_PER_ROW, HOLD_S_PER_ROW, STORED_S_PER_ROW).
- In memory: one table of a batch query (batch_table_cost), one table of a
  single query (held_table_us), and one table of all pairs (pairs_table_ns,
  pairs_by_offsets, pairs_lookup).

Who decides with them: planner.py (which way), accelerator.py (when to read),
blocks.BlockLayout.for_k (through DEFAULT_BLOCKS, which a test keeps equal to
default_blocks), snapshot.py and pairs.py (which in-memory tables).
"""

from __future__ import annotations

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

# -- the database lookup ---------------------------------------------------

# Measured at 1M fingerprints (SQLite, 2 cores): about 1.2 us an index seek
# and 0.45 us a candidate row (k=3, 4 blocks: 42 us; k=6, 4 blocks probed:
# 570 us; k=8, 3 blocks probed: 960 us).
_SEEK_US = 1.2
_ROW_US = 0.45


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


# Measured with bench/ at 1M fingerprints (SQLite): 139 bytes per fingerprint
# with 4 indexes, 288 with 10, so about 25 bytes per index and 40 for the row.
_ROW_BYTES = 40.0
_INDEX_BYTES = 25.0


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


# -- reading the index into memory -----------------------------------------

# A batch reads the index (~0.5 us a row, once) when its lookups would cost
# at least that: lookup_cost's microseconds a query times the batch.
READ_US_PER_ROW = 0.5
# Holding it: reading and sorting a row (at 1M: 0.6 s to read, 0.3 s to sort).
HOLD_S_PER_ROW = 1e-6
# The same from the stored snapshot (storage/stored.py; at 1M: about 0.05 s
# to read its arrays and check their digests, 0.05 s to build its tables
# from their stored order).
STORED_S_PER_ROW = 1e-7


# -- in memory --------------------------------------------------------------


def batch_table_cost(probe_count: int, width: int, n: int) -> float:
    """A batch query's cost of one sorted table of `width` bits among n
    fingerprints, looked up with `probe_count` values (the query's own
    included), in binary-search steps: a probe costs about a binary search
    (log2 n steps), a candidate one step (tables.plan_for)."""
    steps = max(1.0, log2(n + 1))
    return probe_count * (steps + n / 2.0**width)


def held_table_us(width: int, n: int, probe_count: int | None, by_offset: bool) -> float:
    """One single query's estimated microseconds in one table of a held
    snapshot (snapshot.single_layout; measured at 20k and 1M): a table
    without probes (probe_count None) about 2 and 0.004 a candidate; with
    probes about 10, 0.045 a probe by offset or 0.09 by binary search, and
    0.013 a candidate."""
    rows = n / 2.0**width
    if probe_count is None:
        return 2 + 0.004 * rows
    per_probe = 0.045 if by_offset else 0.09
    return 10 + probe_count * (per_probe + 0.013 * rows)


# All pairs (pairs.pairs_within), in nanoseconds (numpy, measured at 1M):
_SORT_NS = (18.0, 90.0)  # sorting a table, per row (keys of <= 16 bits, <= 32)
_SORT_WIDE_NS = 180.0  # sorting a table of keys wider than 32 bits, per row
_RUN_NS = 5.0  # walking its equal runs, per row
_RUN_PAIR_NS = 2.0  # per pair of rows in an equal run
_BUILD_NS = 5.0  # per possible key, building the offsets
_OFFSET_NS = 2.0  # per row and probe, a lookup by offset
_SEARCH_NS = 1.8  # per row, probe and step of a binary search
_HIT_NS = 8.0  # per row and probe that finds a run
_PAIR_NS = 7.0  # per pair of rows a probe finds
_GROUP_NS = 30_000.0  # per table and highest bit of a probe (a few numpy calls)
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
_OCCUPIED_BUILD_NS = 0.5  # per possible key, the table of which keys are there
# Per row and probe, a test in that table: most miss the cache (measured at
# 1M, ten tables of 2 of 5 blocks: about 7 ns a lookup against 2 by offset).
_OCCUPIED_NS = 7.0


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


def pairs_table_ns(n: int, width: int, radius: int) -> float:
    """The estimated nanoseconds of one table of `width` bits in all pairs
    (uniform fingerprints): sort it and walk its equal runs, then for each
    probe look up the rows of half the table (pairs_lookup), and compare
    the pairs found."""
    per_key = n / 2.0**width  # rows of a key
    pairs = n * per_key / 2  # pairs of rows with equal keys, or one probe's flips apart
    sort = _SORT_NS[0] if width <= 16 else _SORT_NS[1] if width <= 32 else _SORT_WIDE_NS
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
        cost += probe_count * (n / 2 * lookup + pairs * _PAIR_NS)
        cost += width * _GROUP_NS
    return cost


# All pairs by simindex.compiled's loops, in nanoseconds of one core (one
# table on one thread at 1M, 4M and 16M, keys of 21 and 26 bits, as
# bench/experiments/run_order.py's "by row" column times it; checked against
# bench/results/growth.txt in docs/scaling.md): a lookup costs about 11 ns whatever
# it finds (reading its run's length, and the branch on it), a row it finds
# about 1 more; preparing a table about 200 a row and 16 a possible key
# (the keys packed, the counting sort, its arrays of 5 bytes a key value).
COMPILED_LOOKUP_NS = 11.0
COMPILED_ROW_NS = 1.0
COMPILED_SORT_NS = 200.0
COMPILED_KEY_NS = 16.0


def compiled_table_ns(n: int, width: int, radius: int) -> float:
    """The estimated core nanoseconds of one table of `width` bits in all
    pairs by the compiled loops (uniform fingerprints): prepare it, walk
    its equal runs, and for each probe look up the rows of half the table
    and compare the rows found."""
    per_key = n / 2.0**width  # rows of a key
    probe_count = sum(comb(width, i) for i in range(1, radius + 1))
    lookups = probe_count * n / 2
    rows = n * per_key / 2 + lookups * per_key
    return (
        n * COMPILED_SORT_NS
        + 2.0**width * COMPILED_KEY_NS
        + lookups * COMPILED_LOOKUP_NS
        + rows * COMPILED_ROW_NS
    )
