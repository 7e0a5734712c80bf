"""Sorted tables in memory: the plan and the primitives every in-memory path shares.

The in-memory paths (snapshot.py for queries, pairs.py for all pairs) use the
same pigeonhole argument as the database: for a layout of tables
(combinations of blocks), two fingerprints within distance k agree on every
bit of at least one table's mask, so sorting by ``fp & mask`` and comparing
only equal runs (and the runs a probe's flips away) finds every pair. They
work for any k <= 15, whatever layout the index itself was built with.
"""

from __future__ import annotations

from itertools import combinations
from math import comb
from typing import Any, NamedTuple

import numpy as np

from simindex.blocks import MAX_PROBES, BlockLayout, cheapest, even_layout, probe_radius
from simindex.costs import batch_table_cost
from simindex.fingerprint import BITS


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
    radius = probe_radius(layout, k)
    masks = layout.table_masks()
    flips = []
    for mask in masks:
        bits = [1 << b for b in range(BITS) if mask >> b & 1]
        flips.append([sum(c) for r in range(radius + 1) for c in combinations(bits, r)])
    return Plan(masks, radius, flips)


def packed_key(values: np.ndarray, mask: int) -> np.ndarray:
    """The bits of values under mask, packed side by side in their order (the
    narrowest unsigned integers that hold them): a table of several blocks
    sorts and is looked up by offset like one block as wide. Packing keeps
    the order and the XORs of the masked values (flips pack the same way)."""
    width = mask.bit_count()
    dtype = np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64
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


def keyed_by(fps: np.ndarray, mask: int, flips: list[int]) -> tuple[np.ndarray, list[Any]]:
    """A block's bits as sort keys (see sort_key), and the probes' flips in the same terms."""
    keyed = sort_key(fps, mask)
    low = (mask & -mask).bit_length() - 1
    span = mask >> low
    shift = 0 if span & (span + 1) else low  # sort_key shifted contiguous bits down
    return keyed, [keyed.dtype.type(f >> shift) for f in flips]


def run_positions(lo: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of every run lo[i] .. lo[i] + counts[i] - 1, run after run."""
    total = int(counts.sum())
    return np.repeat(lo - (np.cumsum(counts) - counts), counts) + np.arange(total)


def equal_pairs(
    sorted_keys: np.ndarray, wanted: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Every (position in wanted, position in sorted_keys) holding equal
    values, in wanted's order (then sorted_keys'). The wanted values are
    searched in sorted order, each search starting where the last one
    ended (numpy's searchsorted does so: far fewer cache misses in a large
    table), and the end of a run only for those found: 2,560 random keys in
    6M, 1.7 ms -> 0.5 ms. ``order``: wanted's stable argsort, where the
    caller has it."""
    if order is None:
        order = np.argsort(wanted, kind="stable")
    needles = wanted[order]
    lo = np.searchsorted(sorted_keys, needles, side="left")
    hit = np.flatnonzero(lo < len(sorted_keys))
    hit = hit[sorted_keys[lo[hit]] == needles[hit]]
    lo = lo[hit]
    counts = np.searchsorted(sorted_keys, needles[hit], side="right") - lo
    owners = np.repeat(order[hit], counts)
    positions = run_positions(lo, counts)
    back = np.argsort(owners, kind="stable")  # (wanted's order again)
    return owners[back], positions[back]


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


def sort_key(fps: np.ndarray, mask: int) -> np.ndarray:
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


class Sorted:
    """Keys with a position under each, found by equal keys (``find``): the
    one sorted table every in-memory path looks keys up in. ``of`` sorts a
    table once (a snapshot's batch tables); ``add`` grows one (streaming
    dedup's kept documents) as sorted runs, each less than half the one
    before it: a batch added merges the runs it is not less than half of,
    so a key is moved about log2(n) times in all, not once a batch (which
    made a stream of n documents take time growing as n squared), and a
    lookup searches about log2(n) runs."""

    def __init__(
        self, dtype: type, keys: np.ndarray | None = None, positions: np.ndarray | None = None
    ) -> None:
        if (keys is None) != (positions is None):
            raise ValueError("a sorted table's keys and positions come together")
        self._dtype = dtype
        self._runs: list[tuple[np.ndarray, np.ndarray]] = (
            [] if keys is None or positions is None else [(keys, positions)]
        )

    @classmethod
    def of(cls, keys: np.ndarray) -> Sorted:
        """The table of unsigned keys, each at its position in ``keys``."""
        order = stable_order(keys)
        return cls(keys.dtype.type, keys[order], order)

    def add(self, keys: np.ndarray, positions: np.ndarray) -> None:
        """Keys, each with its position (the next ones kept)."""
        if not len(keys):
            return
        keys = keys.astype(self._dtype, copy=False)
        order = np.argsort(keys, kind="stable")
        runs = self._runs
        runs.append((keys[order], positions[order]))
        while len(runs) > 1 and 2 * len(runs[-1][0]) >= len(runs[-2][0]):
            later = runs.pop()
            runs[-1] = _merged(runs[-1], *later)

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index in wanted, position) for every key equal to a wanted one."""
        if len(self._runs) == 1:  # (a table sorted once: one lookup)
            at, j = equal_pairs(self._runs[0][0], wanted)
            return at, self._runs[0][1][j]
        order = np.argsort(wanted, kind="stable")
        found = [equal_pairs(keys, wanted, order) for keys, _ in self._runs]
        at = np.concatenate([np.zeros(0, np.intp), *(i for i, _ in found)])
        positions = np.concatenate(
            [
                np.zeros(0, np.int64),
                *(run[1][j] for (_, j), run in zip(found, self._runs, strict=True)),
            ]
        )
        back = np.argsort(at, kind="stable")  # (the runs hold positions in the order kept)
        return at[back], positions[back]

    @property
    def arrays(self) -> list[np.ndarray]:
        """The arrays it holds (their memory)."""
        return [array for run in self._runs for array in run]


def _merged(
    into: tuple[np.ndarray, np.ndarray], keys: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted runs as one; equal keys: ``into``'s first (kept earlier)."""
    at = np.searchsorted(into[0], keys, side="right")
    return np.insert(into[0], at, keys), np.insert(into[1], at, positions)
