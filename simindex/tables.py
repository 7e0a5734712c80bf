"""Sorted tables in memory: the plan and the primitives every in-memory path shares.

The in-memory paths (snapshot.py for queries, pairs.py for all pairs,
dedup.py for a stream) use the same pigeonhole argument as the database:
for a layout of tables (combinations of blocks), two fingerprints within
distance k agree on every bit of at least one table's mask, so keying rows
by ``fp & mask`` (packed_key) and comparing only equal keys (and the keys a
probe's flips away) finds every pair. They work for any k <= 15, whatever
layout the index itself was built with.

A table a batch of queries looks up is a ``Keyed``: its mask, its flips and
its lookup, a ``Sorted`` (sorted once and found by binary search or by
offset, or grown as sorted runs) or a ``Chained`` (grown, found by offset
through chains); ``probe_batch`` looks a batch up in a layout's tables, for
a held snapshot's batch queries and for streaming dedup alike.

A table's own pairs (all pairs: pairs.py's numpy tables, and the home rows
of Spark's groups) are a self-join of its sorted keys: ``close_runs`` pairs
the rows of equal keys, ``flipped_pairs`` the rows whose keys differ by a
flip, found through a ``RunIndex`` (by offset or among the distinct keys),
which also finds the runs a group's visiting rows reach.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from math import comb
from typing import Any, NamedTuple

import numpy as np

from simindex.blocks import (
    MAX_PROBES,
    BlockLayout,
    cheapest,
    even_layout,
    probe_radius,
    table_flips,
)
from simindex.costs import batch_table_cost


class Plan(NamedTuple):
    """How the in-memory paths find everything within k among n fingerprints:
    one sorted table per block of an even layout of m blocks, each looked up
    with every value within `radius` bits of the query's (blocks.probe_radius;
    0 when m > k: the plain pigeonhole lookup)."""

    masks: list[int]  # per block, its bits in the fingerprint
    radius: int
    flips: list[list[int]]  # per block, the XORs (within its bits) to look up


def plan_for(n: int, k: int, *, blocks: int | None = None) -> Plan:
    """The cheapest plan for a batch of queries within k over n fingerprints
    (costs.batch_table_cost). ``blocks`` forces the number of blocks (tests)."""

    def cost(layout: BlockLayout) -> float | None:
        radius = probe_radius(layout, k)
        probes = [sum(comb(w, i) for i in range(radius + 1)) for w in layout.widths]
        if sum(probes) > 4 * MAX_PROBES:
            return None
        return sum(batch_table_cost(p, w, n) for p, w in zip(probes, layout.widths, strict=True))

    layout = even_layout(blocks) if blocks is not None else cheapest(k, cost)
    return layout_plan(layout or even_layout(k + 1), k)


def layout_plan(layout: BlockLayout, k: int) -> Plan:
    """The plan of a layout for k: one table per combination of its blocks
    (Manku's tables, one block each or several), each looked up with every
    value within blocks.probe_radius bits of a fingerprint's own."""
    return Plan(layout.table_masks(), probe_radius(layout, k), table_flips(layout, k))


def key_type(mask: int) -> type:
    """The integers a table's keys are packed in: 16, 32 or 64 bits, the
    narrowest that hold mask's bits."""
    width = mask.bit_count()
    return np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64


def packed_key(values: np.ndarray, mask: int) -> np.ndarray:
    """The bits of values under mask, packed side by side in their order (in
    key_type(mask)): a table of several blocks
    sorts and is looked up by offset like one block as wide. Packing keeps
    the order and the XORs of the masked values (flips pack the same way)."""
    dtype = key_type(mask)
    values = values.astype(np.uint64, copy=False)
    out: np.ndarray | None = None
    at = 0  # bits packed so far, from the lowest
    rest = mask
    while rest:
        low = (rest & -rest).bit_length() - 1
        run = (rest >> low) & ~((rest >> low) + 1)  # the lowest run of set bits
        span = run.bit_length()
        part = (values >> np.uint64(low)) & np.uint64(run)
        if at:
            part <<= np.uint64(at)
        out = part if out is None else out | part
        at += span
        rest &= ~(run << low)
    if out is None:
        return np.zeros(len(values), dtype=dtype)
    return out.astype(dtype)


def earlier(x: np.ndarray, masks: list[np.uint64], radius: int) -> np.ndarray:
    """Which XORs x a table before this one found already (its bits differ in <= radius)."""
    found = np.zeros(len(x), dtype=bool)
    for mask in masks:
        found |= np.bitwise_count(x & mask) <= radius
    return found


def run_positions(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of every run lo[i] .. lo[i] + counts[i] - 1, run after run."""
    total = int(counts.sum())
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)


def equal_runs(
    sorted_keys: np.ndarray, wanted: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(position in wanted, where its run begins in sorted_keys, the run's
    length) for every wanted value sorted_keys holds, in wanted's sorted
    order. The wanted values are searched in sorted order, each search
    starting where the last one ended (numpy's searchsorted does so: far
    fewer cache misses in a large table), and the end of a run only for
    those found: 2,560 random keys in 6M, 1.7 ms -> 0.5 ms. ``order``:
    wanted's stable argsort, where the caller has it."""
    if order is None:
        order = np.argsort(wanted, kind="stable")
    needles = wanted[order]
    lo = np.searchsorted(sorted_keys, needles, side="left")
    hit = np.flatnonzero(lo < len(sorted_keys))
    hit = hit[sorted_keys[lo[hit]] == needles[hit]]
    lo = lo[hit]
    counts = np.searchsorted(sorted_keys, needles[hit], side="right") - lo
    return order[hit], lo, counts


def equal_pairs(sorted_keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (position in wanted, position in sorted_keys) holding equal
    values (equal_runs' runs, each position of them), in wanted's sorted
    order (no caller needs wanted's own: sorting the pairs back cost a
    batch of lookups half its time)."""
    at, lo, counts = equal_runs(sorted_keys, wanted)
    return np.repeat(at, counts), run_positions(lo, counts)


def stable_order(keys: np.ndarray) -> np.ndarray:
    """np.argsort(keys, kind="stable") of unsigned integer keys, by radix:
    one stable pass per 16 bits of the largest key, low digit first (numpy
    sorts 16-bit integers by radix; wider ones by merging, several times
    slower: a million 22-bit keys in about a quarter of the time)."""
    if keys.dtype.kind != "u":
        raise TypeError(f"stable_order sorts unsigned integers, not {keys.dtype}")
    if keys.itemsize <= 2 or len(keys) < 2:
        return np.argsort(keys, kind="stable")
    top = int(keys.max()).bit_length()
    order: np.ndarray | None = None
    for shift in range(0, max(top, 1), 16):
        digits = keys if order is None else keys[order]
        if shift:
            digits = digits >> keys.dtype.type(shift)
        digits = (digits & keys.dtype.type(0xFFFF)).astype(np.uint16)
        step = np.argsort(digits, kind="stable")
        order = step if order is None else order[step]
    assert order is not None
    return order


_FOUND = 1 << 20  # positions a lookup's piece holds at most, but for one longer run (memory)


class Occupied:
    """Which values of its keys' lowest ``bits`` bits a table holds (a byte
    a value): a wanted key whose value it lacks is held nowhere, so where
    most lookups find nothing most are answered by one gather. Exact for
    keys of at most that many bits."""

    def __init__(self, bits: int) -> None:
        self.held = np.zeros(1 << bits, dtype=bool)

    def add(self, keys: np.ndarray) -> None:
        self.held[self._slots(keys)] = True

    def maybe(self, wanted: np.ndarray) -> np.ndarray:
        """The positions in wanted of the keys whose value it holds."""
        return np.flatnonzero(self.held[self._slots(wanted)])

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        low = keys.astype(np.int64, copy=False) & (len(self.held) - 1)
        return low.astype(np.intp, copy=False)


class Sorted:
    """Keys with a position under each, found by equal keys: a table sorted
    once (``of``: a held snapshot's tables), found by binary search, or by
    offset (``key_count`` entries: where each key's run begins), or a table
    grown (``add``: streaming dedup's kept documents) as sorted runs, each
    less than half the one before it: a batch added merges the runs it is
    not less than half of, so a key is moved about log2(n) times in all,
    not once a batch (which made a stream of n documents take time growing
    as n squared), and a lookup searches about log2(n) runs. A grown table
    of ``occupied`` bits searches its runs only for the wanted keys an
    ``Occupied`` of that many bits says it may hold (streaming dedup's
    signature keys: hashes, nearly all found nowhere)."""

    def __init__(
        self,
        dtype: type,
        keys: np.ndarray | None = None,
        positions: np.ndarray | None = None,
        starts: np.ndarray | None = None,
        *,
        occupied: int | None = None,
    ) -> None:
        if (keys is None) != (positions is None):
            raise ValueError("a sorted table's keys and positions come together")
        self._dtype = dtype
        self._there = None if occupied is None else Occupied(occupied)
        if self._there is not None and keys is not None:
            self._there.add(keys)
        self._runs: list[tuple[np.ndarray, np.ndarray]] = (
            [] if keys is None or positions is None else [(keys, positions)]
        )
        # By offset: the positions of key v are positions[starts[v] : starts[v + 1]]
        # (the keys are then never searched: an array of none will do, of its
        # own, not a view that keeps the keys alive). The positions may be
        # more than this table's: a snapshot's joined tables share one array
        # of every table's, each table's starts pointing into its own part.
        self.starts = starts

    @classmethod
    def of(cls, keys: np.ndarray, *, key_count: int | None = None) -> Sorted:
        """The table of unsigned keys, each at its position in ``keys``;
        found by offset with ``key_count``, the number of possible keys."""
        index = np.int32 if len(keys) < 2**31 else np.int64  # (half the bytes of a position)
        order = stable_order(keys).astype(index)
        if key_count is None:
            return cls(keys.dtype.type, keys[order], order)
        starts = np.zeros(key_count + 1, index)
        np.cumsum(np.bincount(keys, minlength=key_count), out=starts[1:])
        return cls(keys.dtype.type, np.empty(0, keys.dtype), order, starts)

    def add(self, keys: np.ndarray, positions: np.ndarray) -> None:
        """Keys, each with its position (the next ones kept)."""
        if self.starts is not None:
            raise TypeError("a table found by offset is sorted once")
        if not len(keys):
            return
        keys = keys.astype(self._dtype, copy=False)
        if self._there is not None:
            self._there.add(keys)
        order = np.argsort(keys, kind="stable")
        runs = self._runs
        runs.append((keys[order], positions[order]))
        while len(runs) > 1 and 2 * len(runs[-1][0]) >= len(runs[-2][0]):
            later = runs.pop()
            runs[-1] = _merged(runs[-1], *later)

    @property
    def by_offset(self) -> bool:
        """Whether a key's rows are found by offset (else by binary search)."""
        return self.starts is not None

    def run_of(self, key: int) -> np.ndarray:
        """The positions under one key, of a table sorted once."""
        if len(self._runs) != 1:
            raise TypeError("run_of reads a table sorted once (of)")
        keys, positions = self._runs[0]
        key = int(key)  # (a numpy integer's key + 2 could wrap)
        if self.starts is not None:
            lo, hi = self.starts[key : key + 2].tolist()
        else:  # (the key as the keys' type: a Python int would convert them all)
            typed = keys.dtype.type(key)
            lo = int(keys.searchsorted(typed, side="left"))
            hi = int(keys.searchsorted(typed, side="right"))
        return positions[lo:hi]

    def pieces(self, wanted: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(index in wanted, position) for every key equal to a wanted one,
        in no particular order, in pieces of at most _FOUND positions (or
        one run, if longer): a batch's memory is bounded by the rows it
        finds, however many a key has."""
        if self.starts is not None:
            wanted = wanted.astype(np.intp, copy=False)  # (key + 1 in the key's own type wraps)
            lo = self.starts[wanted]
            counts = self.starts[wanted + 1] - lo
            hit = np.flatnonzero(counts)
            positions = self._runs[0][1]
            for at, j in run_pieces(hit, lo[hit], counts[hit], _FOUND):
                yield at, positions[j]
            return
        if self._there is None:
            yield from self._searched(wanted)
            return
        maybe = self._there.maybe(wanted)
        for at, positions in self._searched(wanted[maybe]):
            yield maybe[at], positions

    def _searched(self, wanted: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """pieces' (index in wanted, position), each run searched."""
        order = np.argsort(wanted, kind="stable") if len(self._runs) > 1 else None
        for keys, positions in self._runs:
            for at, j in run_pieces(*equal_runs(keys, wanted, order), _FOUND):
                yield at, positions[j]

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All of ``pieces`` at once."""
        return _together(self.pieces(wanted))

    @property
    def arrays(self) -> list[np.ndarray]:
        """The arrays it holds (their memory)."""
        starts = [] if self.starts is None else [self.starts]
        there = [] if self._there is None else [self._there.held]
        return [array for run in self._runs for array in run] + starts + there


def run_pieces(
    a: np.ndarray, lo: np.ndarray, count: np.ndarray, most: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(a[i], lo[i] + j) for every j below count[i], in pieces of about
    ``most`` (or one run, if longer): what a lookup found, expanded in
    bounded memory however many rows a key has."""
    ends = np.cumsum(count)
    start = 0
    while start < len(a):
        done = int(ends[start - 1]) if start else 0
        if int(ends[-1]) - done <= most:  # (the rest in one piece: no search)
            stop = len(a)
        else:
            stop = max(start + 1, int(np.searchsorted(ends, done + most, side="right")))
        yield (
            np.repeat(a[start:stop], count[start:stop]),
            run_positions(lo[start:stop], count[start:stop]),
        )
        start = stop


def _together(
    pieces: Iterable[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray]:
    """Pieces of (index, position) as two arrays."""
    found = list(pieces)
    at = np.concatenate([np.zeros(0, np.intp), *(i for i, _ in found)])
    return at, np.concatenate([np.zeros(0, np.int64), *(p for _, p in found)])


class Chained:
    """A growing table of keys of up to ``width`` bits found by offset, as
    chains: the last position kept under each key (-1: none), and for each
    position the one kept before it under the same key. Where a batch looks
    up hundreds of probes a row (streaming dedup's probed tables), they are
    one gather of a bitmap of the keys kept (a quarter of the heads' bytes:
    fewer cache misses), and the few that are kept are followed, all at
    once, to the chains' ends."""

    by_offset = True

    def __init__(self, width: int) -> None:
        self._kept = np.zeros(1 << width, dtype=bool)
        self._head = np.full(1 << width, -1, dtype=np.int32)
        self._after = Column(np.int32)  # by position

    def add(self, keys: np.ndarray, positions: np.ndarray) -> None:
        """Keep positions (the next ones, in order) under keys."""
        keys = keys.astype(np.intp)
        order = np.argsort(keys, kind="stable")
        keys, at = keys[order], positions[order]
        first = np.ones(len(keys), dtype=bool)  # the first of its key in this batch
        first[1:] = keys[1:] != keys[:-1]
        after = np.empty(len(keys), dtype=np.int32)
        after[first] = self._head[keys[first]]
        after[~first] = at[:-1][~first[1:]]
        by_position = np.empty(len(keys), dtype=np.int32)
        by_position[at - self._after.size] = after
        self._after.extend(by_position)
        last = np.ones(len(keys), dtype=bool)
        last[:-1] = first[1:]
        self._head[keys[last]] = at[last]
        self._kept[keys] = True

    def pieces(self, wanted: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(index in wanted, position) for every position kept under a
        wanted key, in no particular order: a piece a step along the chains
        (at most one position a wanted key)."""
        at = np.flatnonzero(self._kept[wanted])
        positions = self._head[wanted[at]]
        after = self._after.rows
        while positions.size:
            yield at, positions.astype(np.int64)
            positions = after[positions]
            live = positions >= 0
            at, positions = at[live], positions[live]

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All of ``pieces`` at once."""
        return _together(self.pieces(wanted))

    def visits(
        self,
        loops: Any,
        keys: np.ndarray,
        queries: np.ndarray,
        flips: np.ndarray,
        stored: np.ndarray,
        earlier: list[np.uint64],
        radius: int | None,
        k: int,
    ) -> np.ndarray:
        """probe_batch's pairs by this table, as rows of (query, position,
        distance), found by the compiled loop (simindex.compiled's
        chained_visits) instead of ``pieces``: the same rows."""
        return loops.chained_visits(
            keys.astype(np.int64),
            queries,
            flips.astype(np.int64),
            self._kept,
            self._head,
            self._after.rows,
            stored,
            np.array(earlier if radius is not None else [], dtype=np.uint64),
            -1 if radius is None else radius,
            k,
        )

    @property
    def arrays(self) -> list[np.ndarray]:
        """The arrays it holds (their memory)."""
        return [self._kept, self._head, self._after.rows]


class Column:
    """Rows appended a batch at a time (capacity doubled), read as one array."""

    def __init__(self, dtype: type, width: int = 0) -> None:
        self._data: np.ndarray = np.zeros((64, width) if width else 64, dtype)
        self.size = 0

    def extend(self, rows: np.ndarray) -> None:
        end = self.size + len(rows)
        if end > len(self._data):
            grown = np.zeros(
                (max(end, 2 * len(self._data)), *self._data.shape[1:]), self._data.dtype
            )
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = rows
        self.size = end

    @property
    def rows(self) -> np.ndarray:
        return self._data[: self.size]


class Keyed(NamedTuple):
    """One table of a layout: rows found by their bits under ``mask``,
    packed (packed_key), in ``lookup`` (a Sorted or a Chained: each gives
    the pieces of (index in wanted, position) for the keys wanted); a query
    looks up its own packed bits XOR each of ``flips`` (0 first, then its
    probes: packed the same way, in the keys' type)."""

    mask: int
    flips: np.ndarray
    lookup: Sorted | Chained

    def key_of(self, fps: np.ndarray) -> np.ndarray:
        """The packed keys of unsigned fingerprints."""
        return packed_key(fps, self.mask)


def keyed(fps: np.ndarray, mask: int, flips: Sequence[int]) -> Keyed:
    """The table of unsigned fingerprints by their bits under mask, sorted
    once and searched, looked up with flips."""
    return Keyed(mask, packed_flips(flips, mask), Sorted.of(packed_key(fps, mask)))


def packed_flips(flips: Sequence[int], mask: int) -> np.ndarray:
    """Flips within mask, packed as its keys are (packed_key)."""
    return packed_key(np.array(flips, dtype=np.uint64), mask)


def shared_radius(tables: Sequence[Keyed]) -> int | None:
    """The radius r where every table's flips are all the values within r
    bits of its mask (probe_batch then finds each pair once), else None."""
    radius = max((int(f).bit_count() for t in tables for f in t.flips.tolist()), default=0)
    balls = (
        len(set(t.flips.tolist())) == sum(comb(t.mask.bit_count(), r) for r in range(radius + 1))
        for t in tables
    )
    return radius if all(balls) else None


_LOOKUPS = 1 << 18  # probe_batch: keys looked up at once (with _FOUND, bounds memory)


def probe_batch(
    tables: Sequence[Keyed],
    queries: np.ndarray,
    stored: np.ndarray,
    k: int,
    radius: int | None,
    loops: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (query position, stored position, distance) within distance k,
    for unsigned fingerprints ``queries`` among ``stored`` (positions as
    the tables hold them): per table, each query's key XOR each flip, in
    chunks of lookups. With ``radius`` (every table's flips: all values
    within it of its bits), each pair once: a pair is kept by a table only
    if no earlier one finds it too (earlier); None: by every table that
    finds it. ``loops`` (simindex.compiled.kernels(), where loaded): a
    Chained table is looked up by its compiled loop (Chained.visits)."""
    masks = [np.uint64(table.mask) for table in tables]
    out_q, out_s, out_d = [], [], []
    for t, table in enumerate(tables):
        flips = table.flips
        per = max(1, _LOOKUPS // len(flips))  # queries at once
        for start in range(0, len(queries), per):
            chunk = queries[start : start + per]
            if loops is not None and isinstance(table.lookup, Chained):
                rows = table.lookup.visits(
                    loops, table.key_of(chunk), chunk, flips, stored, masks[:t], radius, k
                )
                out_q.append(rows[:, 0] + start)
                out_s.append(rows[:, 1])
                out_d.append(rows[:, 2])
                continue
            wanted = (table.key_of(chunk)[:, None] ^ flips[None, :]).ravel()
            for at, s in table.lookup.pieces(wanted):
                q = at // len(flips) + start
                x = stored[s] ^ queries[q]
                distance = np.bitwise_count(x)
                keep = distance <= k
                if t and radius is not None:
                    keep &= ~earlier(x, masks[:t], radius)
                out_q.append(q[keep])
                out_s.append(s[keep].astype(np.int64))
                out_d.append(distance[keep].astype(np.int64))
    if not out_q:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), empty.copy()
    return np.concatenate(out_q), np.concatenate(out_s), np.concatenate(out_d)


# --- a sorted table's own pairs (all pairs: pairs.py; Spark's groups) -----------------------

# The lookups of a RunIndex made at once, and the rows a piece of the runs
# they found holds (looked_up, run_rows: memory)
_PAIRED = 1 << 18


def close_runs(
    keys: np.ndarray, fps: np.ndarray, k: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, int]]:
    """(a, b, distance, compared) for every a < b of positions in sorted
    ``keys`` with equal keys whose fingerprints (``fps``, in the keys'
    order) are within k, in pieces (compared: the pairs a piece compared):
    each row with the ones 1, 2, 3... places further on while they still
    share its key (the positions still inside a run shrink at every step)."""
    n = len(keys)
    step = 1
    # While most positions are still inside a run, whole-array slices are
    # cheaper than gathering the live positions.
    while step < n:
        same = keys[:-step] == keys[step:]
        live = int(np.count_nonzero(same))
        if 4 * live < n:
            break
        distance = np.bitwise_count(fps[:-step] ^ fps[step:])
        hit = np.flatnonzero(same & (distance <= k))
        yield hit, hit + step, distance[hit], live
        step += 1
    alive = np.flatnonzero(keys[step:] == keys[:-step]) if step < n else np.zeros(0, np.intp)
    while alive.size:
        other = alive + step
        distance = np.bitwise_count(fps[alive] ^ fps[other])
        near = np.flatnonzero(distance <= k)
        yield alive[near], other[near], distance[near], len(alive)
        step += 1
        alive = alive[alive + step < n]
        alive = alive[keys[alive + step] == keys[alive]]


class RunIndex:
    """Where each key's run begins in sorted keys: by offset (a table of
    every key of ``offsets`` bits), or among the distinct keys by binary
    search, where ``occupied`` first asked a table of which keys of that
    many bits are there (one byte a key: for keys too wide for offsets,
    where most lookups find nothing). Keys of up to 32 bits are held as
    numpy's index type (``dtype``: what wanted keys are given in): gathers
    and searches with them are about twice as fast as with narrower ones."""

    def __init__(
        self, sorted_keys: np.ndarray, *, offsets: int | None = None, occupied: int | None = None
    ) -> None:
        self.dtype = np.dtype(np.intp) if sorted_keys.itemsize <= 4 else sorted_keys.dtype
        self.keys = keys = sorted_keys.astype(self.dtype)
        self._sizes: np.ndarray | None = None
        self._there: Occupied | None = None
        if offsets is not None:
            sizes = np.bincount(keys, minlength=1 << offsets)
            self._starts = np.zeros(len(sizes) + 1, dtype=np.intp)
            np.cumsum(sizes, out=self._starts[1:])
            # A narrower copy of the run lengths to test every lookup
            # against (most find nothing) before reading the run's start.
            self._sizes = sizes.astype(np.uint8) if sizes.max(initial=0) <= 0xFF else sizes
            return
        n = len(keys)
        bounds = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        self._bounds = np.concatenate(([0], bounds, [n])) if n else np.zeros(1, np.intp)
        self._values = keys[self._bounds[:-1]]  # the distinct keys, runs bounds[i]:bounds[i + 1]
        if occupied is not None:  # (keys of that many bits: exact)
            self._there = Occupied(occupied)
            self._there.add(self._values)

    def runs_of(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(i, lo, count): for each wanted[i] the keys hold, its run lo ..
        lo + count - 1 (wanted in ``dtype``)."""
        if self._sizes is not None:
            count = self._sizes[wanted]
            hit = np.flatnonzero(count != 0)
            return hit, self._starts[wanted[hit]], count[hit]
        values, bounds = self._values, self._bounds
        if not len(values):
            empty = np.zeros(0, np.intp)
            return empty, empty, empty
        if self._there is not None:
            hit = self._there.maybe(wanted)
            at = np.searchsorted(values, wanted[hit])
        else:
            at = np.minimum(np.searchsorted(values, wanted), len(values) - 1)
            hit = np.flatnonzero(values[at] == wanted)
            at = at[hit]
        return hit, bounds[at], bounds[at + 1] - bounds[at]


def flip_hits(
    index: RunIndex, flips: Sequence[int]
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(a, lo, count): positions a in the index's sorted keys and the run lo
    .. lo + count - 1 of the keys one of the flips (packed, none of them 0)
    away from a's, every such pair of positions once, in pieces of bounded
    size. Each pair is taken from the side whose key has the flip's highest
    bit clear (so key_a < key_b): each of its positions looks up the run of
    key ^ flip."""
    keys = index.keys
    if not len(keys) or not len(flips):
        return
    dtype = index.dtype
    top = np.array([int(f).bit_length() - 1 for f in flips])
    flip_array = np.array([int(f) for f in flips], dtype=dtype)
    one = dtype.type(1)
    for bit in np.unique(top).tolist():
        mine = np.flatnonzero((keys >> dtype.type(bit)) & one == 0)
        if not mine.size:
            continue
        yield from looked_up(index, mine, keys[mine], flip_array[top == bit])


def looked_up(
    index: RunIndex, rows: np.ndarray, keys: np.ndarray, flips: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(a, lo, count): for rows (positions, their keys in the index's dtype)
    each looking up its key XOR each of the flips (the same dtype), the row
    and the run lo .. lo + count - 1 found, _PAIRED lookups at a time."""
    per = max(1, _PAIRED // len(rows))
    for c in range(0, len(flips), per):
        wanted = (keys[None, :] ^ flips[c : c + per, None]).ravel()
        hit, lo, count = index.runs_of(wanted)
        yield (rows[hit % len(rows)] if len(wanted) > len(rows) else rows[hit]), lo, count


def run_rows(
    a: np.ndarray, lo: np.ndarray, count: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(a[i], lo[i] + j) for every j below count[i] (runs found: count > 0),
    in pieces of bounded size: the first row of each run at once (most runs
    are one row), then run_pieces of the longer ones' rest."""
    yield a, lo.astype(np.intp, copy=False)
    longer = np.flatnonzero(count > 1)
    if longer.size:
        rest = count[longer].astype(np.intp) - 1
        yield from run_pieces(a[longer], lo[longer] + 1, rest, _PAIRED)


def flipped_pairs(index: RunIndex, flips: Sequence[int]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every (a, b) of positions in the index's sorted keys whose keys
    differ by one of the flips (none of them 0), each pair once, in pieces
    of bounded size (flip_hits' runs, one pair a row)."""
    for a, lo, count in flip_hits(index, flips):
        yield from run_rows(a, lo, count)


def _merged(
    into: tuple[np.ndarray, np.ndarray], keys: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted runs as one; equal keys: ``into``'s first (kept earlier)."""
    at = np.searchsorted(into[0], keys, side="right")
    return np.insert(into[0], at, keys), np.insert(into[1], at, positions)
