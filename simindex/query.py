"""Candidates to matches: the Hamming filter, batch queries and all pairs in memory.

The in-memory paths use the same pigeonhole argument as the database: for a
layout of tables (combinations of blocks), two fingerprints within distance k
agree on every bit of at least one table's mask, so sorting by ``fp & mask``
and comparing only equal runs finds every pair. They work for any k <= 15,
whatever layout the index itself was built with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import combinations
from math import comb
from typing import Any, NamedTuple

import numpy as np

from simindex.blocks import (
    MAX_INDEX_K,
    MAX_PROBES,
    BlockLayout,
    Probe,
    even_widths,
    probe_radius,
    probes,
)
from simindex.fingerprint import BITS

_QUERY_CHUNK = 8192  # queries matched at once in query_many (bounds memory)
# A single-query table finds a block value's rows by offset (one array entry
# per possible value) when there are at most this many entries a row, else by
# binary search; and never past blocks of _OFFSETS_MAX_BITS.
_OFFSETS_PER_ROW = 8
_OFFSETS_MAX_BITS = 26
_OFFSET_LOOKUPS = 1 << 18  # a batch's lookups by offset made at once (bounds memory)
_ADDED_COMPARED = 1 << 20  # Snapshot.added_within: comparisons made at once (bounds memory)
_SEEN_BITMAP_BITS = 24  # Seen: a bitmap of a table's values up to 2**24 bytes (16 MiB)
# All pairs (pairs_within): lookups made at once (bounds memory), and the
# widest block found by offset (an array of 2**bits + 1 entries).
_PAIRS_CHUNK = 1 << 18
_PAIRS_OFFSETS_MAX_BITS = 22
_PAIRS_MAX_FLIPS = 1 << 16  # probes of a plan pairs_plan considers
# pairs_plan's cost model, in nanoseconds (numpy, measured at 1M fingerprints):
_SORT_NS = (18.0, 90.0)  # sorting a table, per row (keys of <= 16 bits, wider)
_RUN_NS = 5.0  # walking its equal runs, per row
_RUN_PAIR_NS = 2.0  # per pair of rows in an equal run
_BUILD_NS = 5.0  # per possible key, building the offsets
_OFFSET_NS = 2.0  # per row and probe, a lookup by offset
_SEARCH_NS = 1.8  # per row, probe and step of a binary search
_HIT_NS = 8.0  # per row and probe that finds a run
_PAIR_NS = 7.0  # per pair of rows a probe finds
_GROUP_NS = 30_000.0  # per table and highest bit of a probe (a few numpy calls)


class Plan(NamedTuple):
    """How the in-memory paths find everything within k among n fingerprints:
    one sorted table per block of an even layout of m blocks, each looked up
    with every value within `radius` bits of the query's (blocks.probe_radius;
    0 when m > k: the plain pigeonhole lookup)."""

    masks: list[int]  # per block, its bits in the fingerprint
    radius: int
    flips: list[list[int]]  # per block, the XORs (within its bits) to look up


def plan_for(n: int, k: int, *, blocks: int | None = None) -> Plan:
    """The cheapest plan for k over n fingerprints (uniform estimate): a probe
    costs about a binary search (log2 n steps), a candidate one step.
    ``blocks`` forces the number of blocks (tests)."""
    best: tuple[float, int] | None = None
    if blocks is not None:
        best = (0.0, blocks)
    for m in range(1, min(k + 1, BITS // 4) + 1) if blocks is None else ():
        layout = BlockLayout(even_widths(m), tuple((b,) for b in range(m)))
        radius = probe_radius(layout, k)
        probes = [sum(comb(w, i) for i in range(radius + 1)) for w in layout.widths]
        if sum(probes) > 4 * MAX_PROBES:
            continue
        steps = max(1.0, float(np.log2(n + 1)))
        cost = sum(p * (steps + n / 2.0**w) for p, w in zip(probes, layout.widths, strict=True))
        if best is None or cost < best[0]:
            best = (cost, m)
    m = k + 1 if best is None else best[1]
    layout = BlockLayout(even_widths(m), tuple((b,) for b in range(m)))
    radius = probe_radius(layout, k)
    flips = []
    for shift, mask in layout.spans():
        bits = [1 << (shift + i) for i in range(mask.bit_length())]
        flips.append([sum(c) for r in range(radius + 1) for c in combinations(bits, r)])
    return Plan(layout.table_masks(), radius, flips)


def _earlier(x: np.ndarray, masks: list[np.uint64], radius: int) -> np.ndarray:
    """Which XORs x a table before this one found already (its bits differ in <= radius)."""
    found = np.zeros(len(x), dtype=bool)
    for mask in masks:
        found |= np.bitwise_count(x & mask) <= radius
    return found


def _keyed(fps: np.ndarray, mask: int, flips: list[int]) -> tuple[np.ndarray, list[Any]]:
    """A block's bits as sort keys (see _sort_key), and the probes' flips in the same terms."""
    keyed = _sort_key(fps, mask)
    low = (mask & -mask).bit_length() - 1
    span = mask >> low
    shift = 0 if span & (span + 1) else low  # _sort_key shifted contiguous bits down
    return keyed, [keyed.dtype.type(f >> shift) for f in flips]


def _runs(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of every run lo[i] .. lo[i] + counts[i] - 1, run after run."""
    total = int(counts.sum())
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)


def _equal(sorted_keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (position in wanted, position in sorted_keys) holding equal values."""
    lo = np.searchsorted(sorted_keys, wanted, side="left")
    counts = np.searchsorted(sorted_keys, wanted, side="right") - lo
    return np.repeat(np.arange(len(wanted)), counts), _runs(lo, counts)


def _sort_key(fps: np.ndarray, mask: int) -> np.ndarray:
    """The bits of fps under mask, as the narrowest integers that hold them
    (a table of one block of <= 16 bits sorts by radix, several times faster)."""
    low = (mask & -mask).bit_length() - 1
    span = mask >> low
    if span & (span + 1):  # blocks that are not side by side: keep the bits in place
        return fps & np.uint64(mask)
    keyed = (fps >> np.uint64(low)) & np.uint64(span)
    if span <= 0xFFFF:
        return keyed.astype(np.uint16)
    if span <= 0xFFFF_FFFF:
        return keyed.astype(np.uint32)
    return keyed


def pairs_plan(n: int, k: int, *, blocks: int | None = None) -> Plan:
    """The cheapest plan to pair n fingerprints within k (uniform estimate,
    see _pairs_cost): unlike a query's, each probe is a pass over the whole
    table. ``blocks`` forces the number of blocks (tests)."""
    if blocks is None:
        best: tuple[float, int] | None = None
        for m in range(1, min(k + 1, BITS // 4) + 1):
            widths = even_widths(m)
            radius = probe_radius(BlockLayout(widths, tuple((b,) for b in range(m))), k)
            if sum(comb(w, i) for w in widths for i in range(radius + 1)) > _PAIRS_MAX_FLIPS:
                continue
            cost = sum(_pairs_cost(n, w, radius) for w in widths)
            if best is None or cost < best[0]:
                best = (cost, m)
        blocks = k + 1 if best is None else best[1]
    return plan_for(n, k, blocks=blocks)


def _pairs_offsets(n: int, width: int, probes: int) -> bool:
    """Whether pairs_within looks up a table of `width` bits (with `probes`
    probes besides 0) by offset rather than by binary search: when the
    offsets fit and building them costs less than the searches they save."""
    if width > _PAIRS_OFFSETS_MAX_BITS:
        return False
    saved = probes * n / 2 * (_SEARCH_NS * max(1.0, np.log2(n + 1)) - _OFFSET_NS)
    return 2.0**width * _BUILD_NS <= saved


def _pairs_cost(n: int, width: int, radius: int) -> float:
    """The estimated nanoseconds of one table of `width` bits in pairs_within
    (uniform fingerprints): sort it and walk its equal runs, then for each
    probe look up the rows of half the table (by offset or binary search),
    and compare the pairs found."""
    per_key = n / 2.0**width  # rows of a key
    pairs = n * per_key / 2  # pairs of rows with equal keys, or one probe's flips apart
    cost = n * (_SORT_NS[width > 16] + _RUN_NS) + pairs * _RUN_PAIR_NS
    if radius:
        probes = sum(comb(width, i) for i in range(1, radius + 1))
        if _pairs_offsets(n, width, probes):
            cost += 2.0**width * _BUILD_NS
            lookup = _OFFSET_NS
        else:
            lookup = _SEARCH_NS * max(1.0, float(np.log2(n + 1)))
        hits = -float(np.expm1(-per_key))  # the share of lookups that find a run
        cost += probes * (n / 2 * (lookup + hits * _HIT_NS) + pairs * _PAIR_NS)
        cost += width * _GROUP_NS
    return cost


def _flipped(
    sorted_keys: np.ndarray, flips: list[Any], offsets: int | None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every (a, b) of positions in sorted_keys whose keys differ by one of the
    flips (none of them 0), each pair once, in pieces of bounded size.

    Each pair is taken from the side whose key has the flip's highest bit
    clear (so key_a < key_b): each of its positions looks up the run of
    key ^ flip, by offset (in a table of every key of `offsets` bits) or,
    when offsets is None, by binary search among the distinct keys.
    """
    n = len(sorted_keys)
    if not n or not flips:
        return
    # Keys of up to 32 bits as numpy's index type: gathers and searches
    # with them are about twice as fast as with narrower ones.
    dtype = np.dtype(np.intp) if sorted_keys.itemsize <= 4 else sorted_keys.dtype
    keys = sorted_keys.astype(dtype)
    if offsets is not None:
        sizes = np.bincount(keys, minlength=1 << offsets)
        starts = np.zeros(len(sizes) + 1, dtype=np.intp)
        np.cumsum(sizes, out=starts[1:])
        # A narrower copy of the run lengths to test every lookup against
        # (most find nothing) before reading the run's start.
        sizes = sizes.astype(np.uint8) if sizes.max() <= 0xFF else sizes
    else:
        bounds = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        bounds = np.concatenate(([0], bounds, [n]))
        values = keys[bounds[:-1]]  # the distinct keys, their runs bounds[i]:bounds[i + 1]
    top = np.array([int(f).bit_length() - 1 for f in flips])
    flip_array = np.array(flips, dtype=dtype)
    one = dtype.type(1)
    for bit in np.unique(top).tolist():
        mine = np.flatnonzero((keys >> dtype.type(bit)) & one == 0)
        if not mine.size:
            continue
        mine_keys = keys[mine]
        group = flip_array[top == bit]
        per = max(1, _PAIRS_CHUNK // len(mine))
        for c in range(0, len(group), per):
            wanted = (mine_keys[None, :] ^ group[c : c + per, None]).ravel()
            if offsets is not None:
                count = sizes[wanted]
                hit = np.flatnonzero(count != 0)
                lo, count = starts[wanted[hit]], count[hit]
            else:
                at = np.minimum(np.searchsorted(values, wanted), len(values) - 1)
                hit = np.flatnonzero(values[at] == wanted)
                at = at[hit]
                lo, count = bounds[at], bounds[at + 1] - bounds[at]
            a = mine[hit % len(mine)] if len(wanted) > len(mine) else mine[hit]
            yield a, lo  # the first row of each run found
            longer = np.flatnonzero(count > 1)
            if longer.size:
                rest = count[longer].astype(np.intp) - 1
                yield from _rest_of_runs(a[longer], lo[longer] + 1, rest)


def _rest_of_runs(
    a: np.ndarray, lo: np.ndarray, count: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(a[i], lo[i] + j) for every j below count[i], in pieces of about
    _PAIRS_CHUNK pairs (or one run, if longer)."""
    ends = np.cumsum(count)
    start = 0
    while start < len(a):
        done = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, done + _PAIRS_CHUNK, side="right")))
        runs = count[start:stop]
        within = np.arange(int(ends[stop - 1]) - done) - np.repeat(
            ends[start:stop] - runs - done, runs
        )
        yield np.repeat(a[start:stop], runs), np.repeat(lo[start:stop], runs) + within
        start = stop


def pairs_within(fps: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a, b, distance), a < b as positions in fps, within distance k.

    For each table (pairs_plan): sort by its bits, then compare each
    fingerprint with the ones 1, 2, 3... places further on while they still
    share those bits (the positions still inside a run shrink at every step);
    with probes, also pair the runs whose bits differ by each probe's flips
    (_flipped). Each pair is reported once: by the first table whose bits it
    agrees on within the plan's radius.
    """
    fps = fps.astype(np.uint64, copy=False)
    n = len(fps)
    plan = pairs_plan(n, k)
    masks = plan.masks
    out_a, out_b, out_d = [], [], []

    def keep(a: np.ndarray, b: np.ndarray, d: np.ndarray, t: int) -> None:
        # Found already through an earlier table?
        fresh = ~_earlier(fps[a] ^ fps[b], [np.uint64(m) for m in masks[:t]], plan.radius)
        a, b, d = a[fresh], b[fresh], d[fresh]
        out_a.append(np.minimum(a, b))
        out_b.append(np.maximum(a, b))
        out_d.append(d.astype(np.int64))

    for t, mask in enumerate(masks):
        keyed, flips = _keyed(fps, mask, plan.flips[t])
        order = np.argsort(keyed, kind="stable")
        sorted_keys, sorted_fps = keyed[order], fps[order]
        # Pairs whose bits here differ by a probe's flips.
        width = mask.bit_count()
        offsets = width if _pairs_offsets(n, width, len(flips) - 1) else None
        for a, b in _flipped(sorted_keys, flips[1:], offsets):
            distance = np.bitwise_count(sorted_fps[a] ^ sorted_fps[b])
            near = np.flatnonzero(distance <= k)
            if near.size:
                keep(order[a[near]], order[b[near]], distance[near], t)
        step = 1
        # While most positions are still inside a run, whole-array slices are
        # cheaper than gathering the live positions.
        while step < n:
            same = sorted_keys[:-step] == sorted_keys[step:]
            if 4 * int(np.count_nonzero(same)) < n:
                break
            distance = np.bitwise_count(sorted_fps[:-step] ^ sorted_fps[step:])
            hit = np.flatnonzero(same & (distance <= k))
            if hit.size:
                keep(order[hit], order[hit + step], distance[hit], t)
            step += 1
        alive = np.flatnonzero(sorted_keys[step:] == sorted_keys[:-step]) if step < n else order[:0]
        while alive.size:
            other = alive + step
            distance = np.bitwise_count(sorted_fps[alive] ^ sorted_fps[other])
            near = distance <= k
            if near.any():
                keep(order[alive[near]], order[other[near]], distance[near], t)
            step += 1
            alive = alive[alive + step < n]
            alive = alive[sorted_keys[alive + step] == sorted_keys[alive]]
    if not out_a:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_d)


# A sorted table in memory: (mask, sorted keys, positions in that order, probe flips).
_Table = tuple[int, np.ndarray, np.ndarray, list[Any]]


class _Probed(NamedTuple):
    """One table of the single-query lookup (one block of a layout for k):
    the positions in order of the block's bits, found by offset when the
    block is narrow beside the snapshot, else by binary search."""

    shift: int  # the block's lowest bit
    span: int  # its bits, shifted down
    starts: np.ndarray | None  # positions with block value v: order[starts[v] : starts[v + 1]]
    keys: np.ndarray  # the block values in sorted order (searched when starts is None)
    order: np.ndarray  # positions, sorted by block value
    flips: np.ndarray  # the values to XOR into the query's block value: 0, then the probes


def _offsets_fit(width: int, n: int) -> bool:
    """Whether a table of a width-bit block finds its rows by offset (see _Probed)."""
    return width <= _OFFSETS_MAX_BITS and 1 << width <= _OFFSETS_PER_ROW * n


def single_layout(n: int, k: int) -> tuple[BlockLayout, list[Probe] | None] | None:
    """The layout of one-block tables that answers one query within k among n
    fingerprints in memory soonest, and its probes (None: exact lookups, m > k);
    None past MAX_INDEX_K. Estimated in microseconds (Snapshot.near, measured
    at 20k and 1M): a table without probes about 2 and 0.004 a candidate; with
    probes about 10, 0.045 a probe by offset or 0.09 by binary search, and
    0.013 a candidate."""
    if k > MAX_INDEX_K:
        return None
    best: tuple[float, BlockLayout, list[Probe] | None] | None = None
    for m in range(1, min(k + 1, BITS // 4) + 1):
        layout = BlockLayout(even_widths(m), tuple((b,) for b in range(m)))
        found = probes(layout, k) if m <= k else None
        if m <= k and (found is None or m == 1):  # (a probed 64-bit block: not in int64)
            continue
        cost = 0.0
        for t, width in enumerate(layout.widths):
            rows = n / 2.0**width
            if found is None:
                cost += 2 + 0.004 * rows
                continue
            count = sum(p.table == t for p in found)
            per_probe = 0.045 if _offsets_fit(width, n) else 0.09
            cost += 10 + count * (per_probe + 0.013 * rows)
        if best is None or cost < best[0]:
            best = (cost, layout, found)
    assert best is not None  # m = k + 1 always qualifies
    return best[1], best[2]


def _probed_tables(fps: np.ndarray, k: int) -> list[_Probed] | None:
    """The tables that answer one query within k (see single_layout), or None
    past MAX_INDEX_K."""
    chosen = single_layout(len(fps), k)
    if chosen is None:
        return None
    layout, found = chosen
    tables = []
    for t, (shift, span) in enumerate(layout.spans()):
        keyed = _sort_key(fps, span << shift)
        order = np.argsort(keyed, kind="stable")
        keys = keyed[order]
        index_type = np.int32 if len(fps) < 2**31 else np.int64
        starts = None
        if _offsets_fit(span.bit_length(), len(fps)):
            starts = np.zeros(span + 2, dtype=index_type)
            np.cumsum(np.bincount(keyed, minlength=span + 1), out=starts[1:])
        flips = [0] if found is None else [p.flips[0] for p in found if p.table == t]
        tables.append(
            _Probed(shift, span, starts, keys, order.astype(index_type), np.array(flips, np.int64))
        )
    return tables


class Snapshot:
    """The fingerprints of an index at one moment, held in memory for batch
    queries: the ids and fingerprints, and per k the tables sorted by their bits
    (built on first use, kept for the next batch).

    Rows written since (by the holder, which knows them: see add) are kept
    apart, ``added_ids`` / ``added_fps``, and compared one by one (added_within)
    until there are many of them (merged). Threads may share a snapshot: the
    two added arrays are replaced together, in one assignment, so a reader
    always sees a pair that belongs together, and tables built on first use
    by two threads at once are built twice, never half."""

    def __init__(self, ids: np.ndarray, fps: np.ndarray, version: object) -> None:
        self.ids = ids
        self.fps = fps.astype(np.uint64, copy=False)
        self.version = version  # what the index looked like; compared by the caller
        self._tables: dict[int, tuple[Plan, list[_Table]]] = {}
        self._probed: dict[int, list[_Probed] | None] = {}
        self._added = (np.zeros(0, np.int64), np.zeros(0, np.uint64))

    @property
    def added_ids(self) -> np.ndarray:
        return self._added[0]

    @property
    def added_fps(self) -> np.ndarray:
        return self._added[1]

    def add(self, ids: Sequence[int], fps: Sequence[int]) -> None:
        """Rows written since it was read: (id, unsigned fingerprint). A row
        written again is found by both entries; the caller rechecks each
        candidate's stored fingerprint, so the older one finds nothing."""
        added_ids, added_fps = self._added
        self._added = (
            np.concatenate([added_ids, np.array(ids, dtype=np.int64)]),
            np.concatenate([added_fps, np.array(fps, dtype=np.uint64)]),
        )

    def merged(self) -> Snapshot:
        """The same rows with the added ones among the others (tables rebuilt
        on first use): the ids added replace the held rows of those ids."""
        added_ids, added_fps = self._added
        keep = ~np.isin(self.ids, added_ids)
        # The last entry of an id added twice is its newest fingerprint.
        last = len(added_ids) - 1 - np.unique(added_ids[::-1], return_index=True)[1]
        ids = np.concatenate([self.ids[keep], added_ids[last]])
        fps = np.concatenate([self.fps[keep], added_fps[last]])
        return Snapshot(ids, fps, self.version)

    def added_within(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(query position, id) of every added row within distance k of each
        unsigned fingerprint: compared one by one (in chunks bounding memory)."""
        out_q, out_ids = [], []
        added_ids, added_fps = self._added
        if added_ids.size:
            per = max(1, _ADDED_COMPARED // len(added_ids))
            for start in range(0, len(queries), per):
                chunk = queries[start : start + per]
                near = np.bitwise_count(chunk[:, None] ^ added_fps[None, :]) <= k
                q, a = np.nonzero(near)
                out_q.append(q + start)
                out_ids.append(added_ids[a])
        if not out_q:
            empty = np.zeros(0, np.int64)
            return empty, empty
        return np.concatenate(out_q), np.concatenate(out_ids)

    @property
    def nbytes(self) -> int:
        """The memory its arrays take, the tables built so far included."""
        arrays = [self.ids, self.fps, *self._added]
        for _plan, tables in self._tables.values():
            arrays += [a for _mask, keys, order, _flips in tables for a in (keys, order)]
        for probed in self._probed.values():
            for t in probed or ():
                arrays += [t.keys, t.order, t.flips] + ([] if t.starts is None else [t.starts])
        return sum(a.nbytes for a in arrays)

    def _match_by_offsets(
        self, queries: np.ndarray, k: int, tables: list[_Probed]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """match through the single-query tables: per table, each query's
        block value XOR each flip, found by offset, in chunks of queries. A
        pair is kept by the first table that finds it (_earlier)."""
        stored = self.fps
        radius = max(int(f).bit_count() for f in tables[0].flips.tolist())
        masks = [np.uint64(t.span << t.shift) for t in tables]
        out_q, out_s, out_d = [], [], []
        for t, table in enumerate(tables):
            assert table.starts is not None  # the caller checked
            flips = table.flips
            per = max(1, _OFFSET_LOOKUPS // len(flips))  # queries at once
            for start in range(0, len(queries), per):
                chunk = queries[start : start + per]
                keys = ((chunk >> np.uint64(table.shift)) & np.uint64(table.span)).astype(np.int64)
                wanted = (keys[:, None] ^ flips[None, :]).ravel()
                lo = table.starts[wanted]
                counts = table.starts[wanted + 1] - lo
                hit = np.flatnonzero(counts)
                if not hit.size:
                    continue
                lo, counts = lo[hit], counts[hit]
                q = np.repeat(hit // len(flips), counts) + start
                s = table.order[_runs(lo, counts)]
                x = stored[s] ^ queries[q]
                distance = np.bitwise_count(x)
                keep = distance <= k
                if t:
                    keep &= ~_earlier(x, masks[:t], radius)
                out_q.append(q[keep])
                out_s.append(s[keep].astype(np.int64))
                out_d.append(distance[keep].astype(np.int64))
        if not out_q:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        return np.concatenate(out_q), np.concatenate(out_s), np.concatenate(out_d)

    def _tables_for(self, k: int) -> tuple[Plan, list[_Table]]:
        found = self._tables.get(k)
        if found is None:
            plan = plan_for(len(self.fps), k)
            tables: list[_Table] = []
            for t, mask in enumerate(plan.masks):
                keyed, flips = _keyed(self.fps, mask, plan.flips[t])
                order = np.argsort(keyed, kind="stable")
                tables.append((mask, keyed[order], order, flips))
            found = self._tables[k] = (plan, tables)
        return found

    def near(self, fingerprint: int, k: int) -> np.ndarray:
        """The positions of the fingerprints within distance k of one unsigned
        fingerprint, each once: per table of the layout for k, the rows whose
        block equals the query's or one of its probes (one vectorised
        lookup a table, where match loops over the probes for a batch)."""
        if k not in self._probed:
            self._probed[k] = _probed_tables(self.fps, k)
        tables = self._probed[k]
        if tables is None:
            _, s, _ = self.match(np.array([fingerprint], dtype=np.uint64), k)
            return np.unique(s)
        found = []
        for table in tables:
            key = (fingerprint >> table.shift) & table.span
            if len(table.flips) == 1:  # no probes: one slice (cheaper than the arrays below)
                if table.starts is not None:
                    lo, hi = table.starts[key : key + 2].tolist()
                else:
                    lo = int(table.keys.searchsorted(key, side="left"))
                    hi = int(table.keys.searchsorted(key, side="right"))
                found.append(table.order[lo:hi])
                continue
            wanted = table.flips ^ key
            if table.starts is not None:
                lo_all = table.starts[wanted]
                counts = table.starts[wanted + 1] - lo_all
            else:
                wanted = wanted.astype(table.keys.dtype)
                lo_all = np.searchsorted(table.keys, wanted, side="left")
                counts = np.searchsorted(table.keys, wanted, side="right") - lo_all
            found.append(table.order[_runs(lo_all, counts)])
        candidates = np.concatenate(found) if found else np.zeros(0, np.int64)
        distance = np.bitwise_count(self.fps[candidates] ^ np.uint64(fingerprint))
        return np.unique(candidates[distance <= k])

    def match(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (query position, stored position, distance) within distance k,
        each once, for an array of unsigned fingerprints.

        Where the single-query tables (see near) find their rows by offset,
        a batch uses them too, every query's probes looked up at once;
        else tables sorted for the batch plan (plan_for), probe by probe."""
        queries = queries.astype(np.uint64, copy=False)
        if k not in self._probed:
            self._probed[k] = _probed_tables(self.fps, k)
        probed = self._probed[k]
        if probed is not None and all(t.starts is not None for t in probed):
            return self._match_by_offsets(queries, k, probed)
        stored = self.fps
        plan, tables = self._tables_for(k)
        masks = [np.uint64(mask) for mask, _, _, _ in tables]
        out_q, out_s, out_d = [], [], []
        for start in range(0, len(queries), _QUERY_CHUNK):
            chunk = queries[start : start + _QUERY_CHUNK]
            for t, (mask, keyed_sorted, order, flips) in enumerate(tables):
                keyed, _ = _keyed(chunk, mask, [])
                for flip in flips:  # the query's own value, then the probes
                    q, at = _equal(keyed_sorted, keyed ^ flip)
                    if not q.size:
                        continue
                    s = order[at]
                    distance = np.bitwise_count(stored[s] ^ chunk[q])
                    keep = distance <= k
                    q, s, distance = q[keep], s[keep], distance[keep]
                    fresh = ~_earlier(stored[s] ^ chunk[q], masks[:t], plan.radius)
                    q, s, distance = q[fresh], s[fresh], distance[fresh]
                    out_q.append(q + start)
                    out_s.append(s)
                    out_d.append(distance.astype(np.int64))
        if not out_q:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        return np.concatenate(out_q), np.concatenate(out_s), np.concatenate(out_d)


def leader_clusters(pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Clusters (of two or more) of the pairs' graph by the leader rule: in
    the order of the ids (a pair (a, b) has a < b), each one joins the cluster
    of the first leader it is paired with, else leads a cluster of its own.
    So every member is paired with its cluster's first member (no chains: A~B
    and B~C do not put C with A unless C~A). Each cluster: its leader, then
    its members in id order."""
    neighbours: dict[int, set[int]] = {}
    for a, b in pairs:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    members: dict[int, list[int]] = {}  # leader -> members, leaders in id order
    for node in sorted(neighbours):  # leaders so far all come before node
        home = min((x for x in neighbours[node] if x in members), default=None)
        if home is None:
            members[node] = [node]
        else:
            members[home].append(node)
    return [m for m in members.values() if len(m) > 1]


class Seen:
    """Fingerprints kept so far, found again by their tables' bits: the
    in-memory twin of the index, for streaming dedup of a corpus.

    Memory grows with the fingerprints added (a few dozen bytes each), beside
    a fixed bitmap per probed table (see below).
    """

    def __init__(self, k: int) -> None:
        self.k = k
        # The layout a new index for k gets: k + 1 exact blocks up to k = 3,
        # above it fewer blocks looked up with probes (so a lookup's cost
        # does not grow with what is kept, as k + 1 narrow blocks' would).
        layout = BlockLayout.for_k(k)
        self._masks = layout.table_masks()
        # Per table, the XORs to look up: 0 alone, or every probe's flips.
        self._flips: list[list[int]] = [[0] for _ in self._masks]
        if k > layout.k:
            found = probes(layout, k)
            assert found is not None  # for_k checked
            self._flips = [[] for _ in self._masks]
            spans = layout.spans()
            for probe in found:
                table = layout.tables[probe.table]
                flip = sum(f << spans[b][0] for b, f in zip(table, probe.flips, strict=True))
                self._flips[probe.table].append(flip)
        self._tables: list[dict[int, list[int]]] = [{} for _ in self._masks]
        # A probed table whose bits are one run of at most _SEEN_BITMAP_BITS
        # also keeps a bitmap of the values kept: a lookup tests all its
        # probes (hundreds at k = 8) in one numpy step and reads the dict only
        # for the values there (78 -> 21 us a lookup at k = 8 among 50,000
        # random fingerprints, one-off timing; 8 MiB of bitmaps at k = 8).
        self._bitmaps: list[tuple[int, np.ndarray, np.ndarray] | None] = []
        for mask, flips in zip(self._masks, self._flips, strict=True):
            shift = (mask & -mask).bit_length() - 1
            width = (mask >> shift).bit_length()
            one_run = mask >> shift == (1 << width) - 1
            if len(flips) > 1 and one_run and width <= _SEEN_BITMAP_BITS:
                shifted = np.array([f >> shift for f in flips], dtype=np.int64)
                self._bitmaps.append((shift, np.zeros(1 << width, dtype=bool), shifted))
            else:
                self._bitmaps.append(None)
        self.fingerprints: list[int] = []

    def nearest(
        self, fingerprint: int, accept: Callable[[int], bool] | None = None
    ) -> tuple[int, int] | None:
        """(position, distance) of the nearest kept fingerprint within k (the
        earliest kept among equals) that ``accept`` (given its position)
        accepts, or None."""
        best: tuple[int, int] | None = None
        tables = zip(self._masks, self._flips, self._tables, self._bitmaps, strict=True)
        for mask, flips, table, bitmap in tables:
            key = fingerprint & mask
            if bitmap is None:
                values: Iterable[int] = [key ^ f for f in flips] if flips[1:] else (key ^ flips[0],)
            else:  # only the probes whose value is kept
                shift, kept, shifted = bitmap
                wanted = (key >> shift) ^ shifted
                values = [v << shift for v in wanted[kept[wanted]].tolist()]
            for value in values:
                for position in table.get(value, ()):
                    distance = (self.fingerprints[position] ^ fingerprint).bit_count()
                    if (
                        distance <= self.k
                        and (best is None or (distance, position) < best[::-1])
                        and (accept is None or accept(position))
                    ):
                        best = (position, distance)
        return best

    def add(self, fingerprint: int) -> int:
        """Keep a fingerprint; returns its position."""
        position = len(self.fingerprints)
        self.fingerprints.append(fingerprint)
        for mask, table, bitmap in zip(self._masks, self._tables, self._bitmaps, strict=True):
            table.setdefault(fingerprint & mask, []).append(position)
            if bitmap is not None:
                bitmap[1][(fingerprint & mask) >> bitmap[0]] = True
        return position
