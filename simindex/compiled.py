"""All pairs of sorted tables, and streaming dedup's lookups, as compiled
loops where numba is installed.

An accelerator of pairs.pairs_within, where numba is installed (the
default install, where numba has wheels) and the loops are priced cheaper,
loading them included (pairs._chosen), and of pairs.group_pairs
(simindex.spark's task): the same pairs,
found by loops numba compiles instead of numpy's array passes
(bench/results/growth.txt); and of streaming dedup's lookups past
dedup._COMPILED_AFTER documents (tables.Chained.visits, a batch's own
pairs: chained_visits and close_pairs). A plan for them is priced by their own costs
(costs.compiled_table_ns: a lookup costs about ten times a row found,
where numpy's cost about the same), so pairs_within keeps one block a table
longer when it pairs compiled. The loops are in simindex/_loops.py, which
imports numba, loaded by simindex.compiling's loader: without numba, where
it cannot compile them, or with the switch at "never" (SIMINDEX_COMPILED),
``kernels()`` is None and the callers pair with numpy.

A table is sorted by a counting sort of its packed keys (tables.packed_key);
``starts[v]`` is where the run of key v begins. For each flip of the plan
(its bits XORed into the key: a probe), every row whose key has the flip's
highest bit clear looks up the run of key ^ flip (first in a byte a key
that says whether the run is empty), and compares itself with each row of
it; with ``same``, each row is also compared with the rows after it in its
own run. Rows from outside the table (a group's visitors) look it up with
every flip, 0 included (visitor_pairs). A pair within k is kept unless an
earlier table's bits differ in at most the radius (that table reports
it): pairs.py's rule.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from simindex.compiling import Compiling, load
from simindex.tables import Plan, packed_flips, packed_key

MAX_WIDTH = 28  # widest table key paired compiled (its starts and sizes take 5 bytes a key value)
LOOPS = "simindex._loops"  # the module of loops (simindex.compiling.tried asks by its name)
# What the listeners of simindex.compiling are told while numba compiles the
# loops, the first time on a machine: 8.2 s on 2 busy cores with numba's cache
# empty, its import included (as fastmarks.COMPILING was measured), about
# 0.35-0.5 s from the cache.
COMPILING = Compiling("the fast pairing", 9)


class Loops(NamedTuple):
    """The compiled loops (simindex/_loops.py)."""

    counting_sort: Any
    table_pairs: Any  # the pairs of one sorted table
    visitor_pairs: Any  # rows from outside it with the rows of a sorted table
    chained_visits: Any  # rows from outside it with the rows of a growing chained table
    close_pairs: Any  # a batch's own pairs within k, each with every one before it


def kernels() -> Loops | None:
    """The loops, compiled on first use; None without numba, when numba
    cannot compile them here, or with the switch at "never"."""
    return load(LOOPS, _ENTRIES, COMPILING, _warmed)


class Table(NamedTuple):
    """Table t of a plan, sorted for table_pairs (its arguments before the flips')."""

    keys: np.ndarray  # the packed keys, sorted
    fps: np.ndarray  # the fingerprints in that order
    order: np.ndarray  # sorted position -> position in the fingerprints given
    starts: np.ndarray  # starts[v]: where the run of key v begins
    sizes8: np.ndarray  # a byte a key value: 0 for an empty run
    flips: np.ndarray  # the plan's flips of this table but 0, packed like the keys
    tops: np.ndarray  # each flip's highest bit
    earlier: np.ndarray  # the masks of the tables before it

    def pairs(
        self, loops: Loops, radius: int, k: int, same: bool, part: slice = slice(None)
    ) -> tuple[np.ndarray, int]:
        """Its pairs (rows (a, b, distance), sorted positions) within k by a
        part of its flips, and with ``same`` those of equal keys; the pairs
        compared (table_pairs)."""
        out, count = loops.table_pairs(
            self.keys,
            self.fps,
            self.order,
            self.starts,
            self.sizes8,
            self.flips[part],
            self.tops[part],
            self.earlier,
            radius,
            k,
            same,
        )
        return out, int(count)

    def visits(
        self,
        loops: Loops,
        keys: np.ndarray,
        fps: np.ndarray,
        flips: np.ndarray,
        radius: int,
        k: int,
    ) -> np.ndarray:
        """The pairs (rows (i, b, distance): i in the rows given, b a sorted
        position) within k of rows from outside it, with these keys and
        fingerprints, looking it up with these flips (0 included)
        (visitor_pairs)."""
        table = (self.fps, self.order, self.starts, self.sizes8)
        out, _ = loops.visitor_pairs(keys, fps, *table, flips, self.earlier, radius, k)
        return out


def prepared(counting_sort: Any, fps: np.ndarray, plan: Plan, t: int) -> Table:
    """Table t of ``plan`` over ``fps`` (unsigned), sorted by counting_sort."""
    return sorted_table(counting_sort, fps, plan.masks[t], plan.flips[t], plan.masks[:t])


def sorted_table(
    counting_sort: Any, fps: np.ndarray, mask: int, flips: list[int], earlier: list[int]
) -> Table:
    """``fps`` (unsigned) sorted by their bits under ``mask`` (packed), with
    the flips (within mask) a row looks up and the earlier tables' masks."""
    keyed = packed_key(fps, mask).astype(np.int64)
    width = mask.bit_count()
    # Where each key value's run begins: 4 bytes a key value while the rows'
    # positions fit (2**28 values, MAX_WIDTH: 1 GiB), 8 past that.
    starts = np.zeros((1 << width) + 1, np.uint32 if len(fps) < 1 << 32 else np.int64)
    sizes8 = np.zeros(1 << width, np.uint8)
    order = counting_sort(keyed, starts, sizes8)
    packed = packed_flips(flips, mask).tolist()
    nonzero = [f for f in packed if f]
    return Table(
        keyed[order],
        fps[order],
        order,
        starts,
        sizes8,
        np.array(nonzero, dtype=np.int64),
        np.array([int(f).bit_length() - 1 for f in nonzero], dtype=np.int64),
        np.array(earlier, dtype=np.uint64),
    )


_ENTRIES = ("counting_sort", "table_pairs", "visitor_pairs", "chained_visits", "close_pairs")


def _warmed(loops: Any) -> Loops:
    """The loops of simindex/_loops.py, run once on a table of two rows."""
    keys = np.array([0, 1], np.int64)
    starts = np.zeros(3, np.uint32)
    sizes8 = np.zeros(2, np.uint8)
    fps = np.array([0, 1], np.uint64)
    flips = np.array([1], np.int64)
    earlier = flips.astype(np.uint64)
    order = loops.counting_sort(keys, starts, sizes8)
    loops.table_pairs(keys, fps, order, starts, sizes8, flips, flips * 0, earlier, 0, 1, True)
    loops.visitor_pairs(keys, fps, fps, order, starts, sizes8, flips, earlier, 0, 1)
    head = np.array([-1, 0], np.int32)
    loops.chained_visits(keys, fps, flips, sizes8 > 0, head, head[:1], fps, earlier, 0, 1)
    loops.close_pairs(fps, 1)
    return Loops(*(getattr(loops, name) for name in _ENTRIES))
