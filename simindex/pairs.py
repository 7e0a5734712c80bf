"""All pairs within k in memory (SimIndex.duplicates and clusters), and the leader rule.

pairs_within sorts one table per combination of blocks of an even layout
(pairs_plan: one block a table, or, paired by simindex.compiled's loops,
the cheapest by their costs for the number of fingerprints: one block a
table while they are few, Manku's tables of several blocks, wider keys, as
they grow) and pairs the fingerprints of equal runs, and with probes the
runs a probe's flips apart; each pair is reported once, by the first table
whose bits it agrees on within the plan's radius. group_pairs is the same
for one group of a table (simindex.spark's task). leader_clusters turns
pairs into clusters without chaining.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np

from simindex.blocks import BlockLayout, cheapest, even_layout, probe_radius
from simindex.compiled import LOOPS, MAX_WIDTH, Loops, kernels, prepared, sorted_table
from simindex.compiling import mode, tried
from simindex.costs import (
    compiled_load_ns,
    compiled_table_ns,
    pairs_by_offsets,
    pairs_lookup,
    pairs_table_ns,
    usable_cpus,
)
from simindex.tables import (
    Plan,
    RunIndex,
    close_runs,
    earlier,
    flipped_pairs,
    layout_plan,
    looked_up,
    packed_flips,
    packed_key,
    run_rows,
    stable_order,
)

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

_MAX_FLIPS = 1 << 16  # probes of a plan pairs_plan considers


def pairs_plan(
    n: int,
    k: int,
    *,
    blocks: int | None = None,
    per_table: int | None = 1,
    compiled: bool = False,
    cpus: int = 1,
) -> Plan:
    """The cheapest plan to pair n fingerprints within k (uniform estimate,
    see costs.pairs_table_ns, or with ``compiled`` costs.compiled_table_ns
    and keys of at most compiled.MAX_WIDTH bits): unlike a query's, each
    probe is a pass over the whole table. Its tables are every combination
    of ``per_table`` blocks of an even layout (1: one block a table, the
    plan simindex.spark pairs by), or with None the cheapest of any number
    (one block a table while they are few; more blocks a table, wider keys
    and more tables, as n grows, so the rows a probe finds stay few).
    ``blocks`` forces the number of blocks (tests), with per_table=None one
    block a table. ``cpus``: the threads that share a table's probes
    (pairs_within's; one for simindex.spark's tasks)."""
    if blocks is not None:
        return layout_plan(even_layout(blocks, per_table or 1), k)
    price = compiled_table_ns if compiled else pairs_table_ns
    rows = max(n, 1)  # (priced as one row at least: with none, every plan costs nothing)

    def cost(layout: BlockLayout) -> float | None:
        radius = probe_radius(layout, k)
        widths = [mask.bit_count() for mask in layout.table_masks()]
        if sum(comb(w, i) for w in widths for i in range(radius + 1)) > _MAX_FLIPS:
            return None
        if compiled and max(widths) > MAX_WIDTH:
            return None
        return sum(price(rows, w, radius, cpus) for w in widths)

    assert per_table in (1, None), "tables of a given number of blocks: give blocks too"

    def grouped(m: int) -> list[int]:
        """Tables of several blocks (per_table None): any number of them."""
        return [t for t in range(2, m) if comb(m, t) <= _MAX_TABLES] if per_table is None else []

    layout = cheapest(k, cost, grouped=grouped)
    return layout_plan(layout or even_layout(k + 1), k)


_MAX_TABLES = 35  # tables a plan of pairs_plan may have (blocks.MAX_TABLES)


def _chosen(n: int, k: int, plan: Plan | None, compiled: bool | None) -> tuple[Plan, Loops | None]:
    """pairs_within's plan (``plan``, where given) and the compiled loops it
    pairs it by (None: numpy). Each way is priced by its own costs
    (costs.pairs_table_ns, costs.compiled_table_ns) for its own plan unless
    one is given; the compiled one, where this process has not loaded the
    loops yet, with their load (costs.compiled_load_ns: numba's import and
    its cached machine code; compiling them, once a machine, is not
    priced). ``compiled`` True, or simindex.compiling's switch at
    "always": the loops loaded now, and a given plan compiled wherever
    they load, else the cheaper of the two plans; False, or the switch at
    "never": numpy."""
    cpus = usable_cpus()
    threads = cpus if n >= _THREADED_MIN else 1
    # numpy: one block a table. The plans of several blocks a table
    # (pairs_plan(n, k, per_table=None)) are exact and tested, but the N
    # from which numpy's price model says they pay (about 40M at k = 8, 2.5M
    # at k = 3, by the constants bench/costs.py measured) is not checked
    # end to end (docs/scaling.md).
    numpy_plan = plan or pairs_plan(n, k, cpus=threads)
    if compiled is False or mode() == "never":
        return numpy_plan, None
    forced = compiled is True or mode() == "always"
    fast = kernels() if forced or tried(LOOPS) else None  # (loaded: no load to price)
    numpy_ns = _price(numpy_plan, n, pairs_table_ns, threads)
    load = 0.0 if fast is not None else compiled_load_ns()
    if load and numpy_ns <= load:  # (numpy is done before the loops would load)
        return numpy_plan, None
    # Compiled, of any number of blocks a table (one block a table up to
    # about 150M at k = 8: bench/results/growth.txt), keys of at most
    # MAX_WIDTH bits.
    fast_plan = plan or pairs_plan(n, k, per_table=None, compiled=True, cpus=cpus)
    if max((m.bit_count() for m in fast_plan.masks), default=0) > MAX_WIDTH:
        return numpy_plan, None
    priced = not (forced and plan is not None)  # (a given plan, forced: compiled)
    if priced and _price(fast_plan, n, compiled_table_ns, cpus) + load > numpy_ns:
        return numpy_plan, None
    fast = fast or kernels()
    return (fast_plan, fast) if fast is not None else (numpy_plan, None)


def _price(plan: Plan, n: int, table_ns: Callable[[int, int, int, int], float], cpus: int) -> float:
    """A plan's estimated nanoseconds by one of costs' table prices."""
    return sum(table_ns(n, mask.bit_count(), plan.radius, cpus) for mask in plan.masks)


def pairs_within(
    fps: np.ndarray,
    k: int,
    *,
    plan: Plan | None = None,
    counts: dict[str, int] | None = None,
    compiled: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (a, b, distance), a < b as positions in fps, within distance k.

    For each table (``plan``; by default, paired compiled, pairs_plan's
    cheapest for len(fps) by the compiled costs, of any number of blocks a
    table, else one block a table): sort by its bits (packed side by side,
    tables.packed_key), then compare each
    fingerprint with the ones 1, 2, 3... places further on while they still
    share those bits (the positions still inside a run shrink at every step);
    with probes, also pair the runs whose bits differ by each probe's flips
    (tables.flipped_pairs). Each pair is reported once: by the first table whose bits it
    agrees on within the plan's radius. From _THREADED_MIN fingerprints the
    tables' runs and slices of their flips are paired by threads, one a CPU
    (numpy lets go of the GIL for the gathers and comparisons): the same
    pairs, in another order. ``counts``, if given, gets "compared" added:
    the pairs of fingerprints whose distance was computed (benchmarks).
    ``compiled``: pair each table with simindex.compiled's loops (numba) -
    None: where numba is installed and they are priced cheaper, loading
    them included (_chosen; with simindex.compiling's switch at "always",
    loaded at the first call and their load not priced); True: loaded,
    and a given plan paired by them wherever numba is installed (tests),
    else the cheaper plan, unless the switch is at "never"; False: never.
    The same pairs.
    """
    fps = fps.astype(np.uint64, copy=False)
    n = len(fps)
    plan, fast = _chosen(n, k, plan, compiled)
    masks = [np.uint64(m) for m in plan.masks]
    cpus = usable_cpus() if n >= _THREADED_MIN or fast is not None else 1
    pool = None
    if cpus > 1:  # (its module loads here: a query that never pairs starts without it)
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(cpus)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    compared = 0
    try:
        for t, mask in enumerate(plan.masks):  # one table's sorted copies at a time
            if fast is not None:
                pieces, count = _compiled_table(fast, fps, plan, t, k, pool, cpus)
                found += pieces
                compared += count
                continue
            keyed = packed_key(fps, mask)
            flips = packed_flips(plan.flips[t], mask).tolist()
            order = stable_order(keyed)
            table = _Table(t, order, keyed[order], fps[order], masks[:t], plan.radius, k)
            del keyed
            work: list[Callable[[], _Found]] = [table.runs]
            probes = [keyed_flip for keyed_flip in flips if keyed_flip]
            if probes:
                width = mask.bit_count()
                how = pairs_lookup(n, width, len(probes))
                offsets = width if how == "offsets" else None
                occupied = width if how == "occupied" else None
                per = -(-len(probes) // cpus)
                for c in range(0, len(probes), per):
                    work.append(partial(table.flipped, probes[c : c + per], offsets, occupied))
            done = pool.map(lambda job: job(), work) if pool is not None else (j() for j in work)
            for pieces, count in done:
                found += pieces
                compared += count
    finally:
        if pool is not None:
            pool.shutdown()
    if counts is not None:
        counts["compared"] = counts.get("compared", 0) + compared
    return _together(found)


_Found = tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], int]  # pieces, pairs compared


def _compiled_table(
    fast: Loops,
    fps: np.ndarray,
    plan: Plan,
    t: int,
    k: int,
    pool: ThreadPoolExecutor | None,
    cpus: int,
) -> _Found:
    """Table t's pairs by the compiled loops, its flips split over the threads."""
    table = prepared(fast.counting_sort, fps, plan, t)
    probes = len(table.flips)
    per = max(1, -(-probes // cpus))
    slices = [slice(c, c + per) for c in range(0, probes, per)] or [slice(0, 0)]

    def job(i: int) -> tuple[np.ndarray, int]:
        return table.pairs(fast, plan.radius, k, i == 0, slices[i])

    done = pool.map(job, range(len(slices))) if pool is not None else map(job, range(len(slices)))
    pieces, compared = [], 0
    for out, count in done:
        if len(out):
            pieces.append((out[:, 0], out[:, 1], out[:, 2]))
        compared += count
    return pieces, compared


_THREADED_MIN = 1 << 16  # fingerprints from which pairs_within pairs in threads


class _Table:
    """One table of pairs_within, sorted: its pairs as (a, b, distance) pieces."""

    def __init__(
        self,
        t: int,
        order: np.ndarray,
        sorted_keys: np.ndarray,
        sorted_fps: np.ndarray,
        earlier_masks: list[np.uint64],
        radius: int,
        k: int,
    ) -> None:
        self.t, self.order, self.keys, self.fps = t, order, sorted_keys, sorted_fps
        self.earlier_masks, self.radius, self.k = earlier_masks, radius, k

    def _kept(
        self, a: np.ndarray, b: np.ndarray, d: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted positions a, b within k as positions in fps, a < b, unless an
        earlier table finds them."""
        fresh = ~earlier(self.fps[a] ^ self.fps[b], self.earlier_masks, self.radius)
        a, b = self.order[a[fresh]], self.order[b[fresh]]
        return np.minimum(a, b), np.maximum(a, b), d[fresh].astype(np.int64)

    def flipped(self, flips: list[Any], offsets: int | None, occupied: int | None) -> _Found:
        """The pairs whose bits here differ by one of these flips."""
        out = []
        compared = 0
        index = RunIndex(self.keys, offsets=offsets, occupied=occupied)
        for a, b in flipped_pairs(index, flips):
            distance = np.bitwise_count(self.fps[a] ^ self.fps[b])
            compared += len(a)
            near = np.flatnonzero(distance <= self.k)
            if near.size:
                out.append(self._kept(a[near], b[near], distance[near]))
        return out, compared

    def runs(self) -> _Found:
        """The pairs with equal bits here."""
        out = []
        compared = 0
        for a, b, distance, count in close_runs(self.keys, self.fps, self.k):
            compared += count
            if a.size:
                out.append(self._kept(a, b, distance))
        return out, compared


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


# --- all pairs of a group (the Spark path's task: simindex.spark) -----------------------------


def prefix_mask(mask: int, bits: int) -> int:
    """The highest ``bits`` bits of a table's mask (its group's bits)."""
    prefix = 0
    for _ in range(bits):
        prefix |= 1 << ((mask & ~prefix).bit_length() - 1)
    return prefix


def visit_flips(plan: Plan, t: int, prefix: int) -> list[int]:
    """The flips of table t inside ``prefix`` (but 0): a row visits the group
    of its prefix XOR each of them whose highest bit its prefix has clear."""
    return [f for f in plan.flips[t] if f and not f & ~prefix]


def group_pairs(
    fps: np.ndarray,
    k: int,
    plan: Plan,
    t: int,
    prefix: int,
    group: int,
    *,
    compiled: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs (a, b, distance) of positions in fps within k that table t
    finds in one group, each once, and only those no earlier table finds.

    A group holds the rows whose bits under ``prefix`` (prefix_mask of the
    table's mask) equal ``group`` (its home rows) and the rows that visit it
    (visit_flips: their prefix is h = 1..radius bits from the group's). Two
    home rows pair when the rest of the table's bits are within the radius;
    a visitor pairs with a home row when they are within radius - h: so a
    pair the table finds, found in the group of whichever side's prefix has
    the differing bits' highest bit set, is found once over all groups.
    ``compiled``: pair by simindex.compiled's loops (None: where numba is
    installed; True as well; False: never). The same pairs.
    """
    fps = fps.astype(np.uint64, copy=False)
    mask, radius = plan.masks[t], plan.radius
    rest = mask & ~prefix
    away = np.bitwise_count((fps & np.uint64(prefix)) ^ np.uint64(group))
    home = np.flatnonzero(away == 0)
    flips = [f for f in plan.flips[t] if not f & prefix]  # within the rest, 0 first
    # Compiled, the home rows' table holds 5 bytes a possible key: not for
    # keys far wider than the group's rows (numpy then).
    fits = rest.bit_count() <= MAX_WIDTH and 1 << rest.bit_count() <= _KEYS_A_ROW * max(len(fps), 1)
    fast = kernels() if compiled is not False and fits else None
    if fast is not None:
        return _compiled_group(fast, fps, k, plan, t, rest, flips, away, home)
    if rest:
        keys, key_flips = packed_key(fps, rest), list(packed_flips(flips, rest))
    else:
        keys, key_flips = np.zeros(len(fps), dtype=np.uint16), [np.uint16(0)]
    order = stable_order(keys[home])
    sorted_keys, at = keys[home][order], home[order]  # at: sorted position -> position in fps
    earlier_masks = [np.uint64(m) for m in plan.masks[:t]]
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def kept(a: np.ndarray, b: np.ndarray, distance: np.ndarray | None = None) -> None:
        """Candidates a, b (positions in fps) within k that no earlier table
        finds (``distance``: theirs, where known to be within k)."""
        x = fps[a] ^ fps[b]
        if distance is None:
            distance = np.bitwise_count(x)
            keep = (distance <= k) & ~earlier(x, earlier_masks, radius)
        else:
            keep = ~earlier(x, earlier_masks, radius)
        found.append((a[keep], b[keep], distance[keep].astype(np.int64)))

    # The home rows as pairs_within pairs one table: equal keys, then flips apart.
    for a, b, distance, _ in close_runs(sorted_keys, fps[at], k):
        kept(at[a], at[b], distance)
    n, width = len(sorted_keys), rest.bit_count()
    if not radius:  # (no flips, no visitors: the equal keys were all)
        return _together(found)
    by_offset = n and len(flips) > 1 and pairs_by_offsets(n, width, len(flips) - 1)
    index = RunIndex(sorted_keys, offsets=width if by_offset else None)
    for a, b in flipped_pairs(index, key_flips[1:]):
        kept(at[a], at[b])
    # Each visitor h bits away with the home rows its flips of at most radius - h bits reach.
    for h in range(1, radius + 1):
        visitors = np.flatnonzero(away == h)
        if not visitors.size or not n:
            continue
        mine = np.array(
            [
                int(kf)
                for f, kf in zip(flips, key_flips, strict=True)
                if f.bit_count() <= radius - h
            ],
            dtype=index.dtype,
        )
        visitor_keys = keys[visitors].astype(index.dtype)
        for v, lo, count in looked_up(index, visitors, visitor_keys, mine):
            for a, b in run_rows(v, lo, count):
                kept(a, at[b])
    return _together(found)


def _together(
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pieces of (a, b, distance) as three arrays."""
    if not found:
        empty = np.zeros(0, np.int64)
        return empty, empty.copy(), empty.copy()
    a, b, d = zip(*found, strict=True)
    return np.concatenate(a), np.concatenate(b), np.concatenate(d)


_KEYS_A_ROW = 64  # possible keys a row of a group may cost compiled (see group_pairs)


def _compiled_group(
    fast: Loops,
    fps: np.ndarray,
    k: int,
    plan: Plan,
    t: int,
    rest: int,
    flips: list[int],
    away: np.ndarray,
    home: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """group_pairs by the compiled loops: the home rows as one sorted table
    (its pairs as pairs_within's), then each visitor h bits away looked up
    in it with the flips of at most radius - h bits."""
    radius = plan.radius
    table = sorted_table(fast.counting_sort, fps[home], rest, flips, plan.masks[:t])
    out, _ = table.pairs(fast, radius, k, True)
    found = [(home[out[:, 0]], home[out[:, 1]], out[:, 2])]
    for h in range(1, radius + 1):
        visitors = np.flatnonzero(away == h)
        if not visitors.size or not home.size:
            continue
        mine = [f for f in flips if f.bit_count() <= radius - h]  # 0 among them
        mine_packed = packed_flips(mine, rest).astype(np.int64)
        visitor_keys = packed_key(fps[visitors], rest).astype(np.int64)
        out = table.visits(fast, visitor_keys, fps[visitors], mine_packed, radius, k)
        found.append((visitors[out[:, 0]], home[out[:, 1]], out[:, 2]))
    return _together(found)
