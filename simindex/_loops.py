"""The loops simindex.compiled runs (numba): imported only by it, and only
where numba is installed. Module-level functions, so numba keeps their
machine code in __pycache__ (or its user cache) and a later process loads it
instead of compiling again."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def popcount(x: Any) -> Any:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    m2 = np.uint64(0x3333333333333333)
    x = (x & m2) + ((x >> np.uint64(2)) & m2)
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(nogil=True, cache=True)
def found_earlier(x: Any, earlier: Any, radius: int) -> bool:
    """Whether an earlier table finds the pair whose XOR is x: its bits
    under one of the earlier masks differ in at most the radius."""
    for e in earlier:  # noqa: SIM110 (a loop numba compiles; any() of a generator it may not)
        if popcount(x & e) <= radius:
            return True
    return False


@njit(nogil=True, cache=True)
def appended(out: Any, m: int, a: Any, b: Any, d: Any) -> Any:
    """``out`` (rows of (a, b, distance), m of them filled) with (a, b, d)
    as row m, grown twice as long first when full."""
    if m == len(out):
        grown = np.empty((2 * len(out), 3), np.int64)
        grown[:m] = out
        out = grown
    out[m, 0] = a
    out[m, 1] = b
    out[m, 2] = d
    return out


@njit(nogil=True, cache=True)
def counting_sort(keys: Any, starts: Any, sizes8: Any) -> Any:
    """The stable order of keys below len(sizes8); fills ``starts`` (zeros,
    one longer than sizes8) with where each key value's run begins in it
    (starts[v] .. starts[v + 1]) and sizes8 with each run's length, at most
    255. No array of the keys' range but those two."""
    n = len(keys)
    for v in keys:
        starts[v] += 1
    total = 0
    for v in range(len(sizes8)):
        size = starts[v]
        sizes8[v] = min(size, 255)
        total += size
        starts[v] = total  # for now: where the run of v ends
    starts[len(sizes8)] = n
    order = np.empty(n, np.int64)
    for i in range(n - 1, -1, -1):  # backwards, so each run keeps the keys' order
        v = keys[i]
        starts[v] -= 1
        order[starts[v]] = i
    return order


@njit(nogil=True, cache=True)
def table_pairs(
    keys: Any,
    fps: Any,
    order: Any,
    starts: Any,
    sizes8: Any,
    flips: Any,
    tops: Any,
    earlier: Any,
    radius: int,
    k: int,
    same: bool,
) -> Any:
    """(rows of (a, b, distance), pairs compared): see simindex.compiled."""
    out = np.empty((1024, 3), np.int64)
    m = 0
    compared = 0
    n = len(keys)
    for fi in range(-1 if same else 0, len(flips)):
        f = 0 if fi < 0 else flips[fi]
        top = 63 if fi < 0 else tops[fi]
        for a in range(n):
            v = keys[a]
            if fi >= 0 and ((v >> top) & 1 or sizes8[v ^ f] == 0):
                continue
            w = v ^ f
            lo = a + 1 if fi < 0 else np.int64(starts[w])
            fa = fps[a]
            for b in range(lo, np.int64(starts[w + 1])):
                x = fa ^ fps[b]
                d = popcount(x)
                compared += 1
                if d > k or found_earlier(x, earlier, radius):
                    continue
                out = appended(out, m, min(order[a], order[b]), max(order[a], order[b]), d)
                m += 1
    return out[:m], compared


@njit(nogil=True, cache=True)
def visitor_pairs(
    vkeys: Any,
    vfps: Any,
    fps: Any,
    order: Any,
    starts: Any,
    sizes8: Any,
    flips: Any,
    earlier: Any,
    radius: int,
    k: int,
) -> Any:
    """(rows of (i, b, distance), pairs compared): each visitor i (its key
    vkeys[i] and fingerprint vfps[i]) with every row of a sorted table
    (order[b]: its position before sorting) whose key is one of the flips
    (0 among them) from its own, within k and not within the radius on an
    earlier table's bits."""
    out = np.empty((1024, 3), np.int64)
    m = 0
    compared = 0
    for fi in range(len(flips)):
        f = flips[fi]
        for i in range(len(vkeys)):
            w = vkeys[i] ^ f
            if sizes8[w] == 0:
                continue
            fa = vfps[i]
            for b in range(np.int64(starts[w]), np.int64(starts[w + 1])):
                x = fa ^ fps[b]
                d = popcount(x)
                compared += 1
                if d > k or found_earlier(x, earlier, radius):
                    continue
                out = appended(out, m, i, order[b], d)
                m += 1
    return out[:m], compared


@njit(nogil=True, cache=True)
def chained_visits(
    vkeys: Any,
    vfps: Any,
    flips: Any,
    kept: Any,
    head: Any,
    after: Any,
    fps: Any,
    earlier: Any,
    radius: int,
    k: int,
) -> Any:
    """Rows of (i, p, distance): each visitor i (its key vkeys[i] and
    fingerprint vfps[i]) with every position p a growing chained table
    (tables.Chained: ``kept``, ``head``, ``after``) keeps under its key XOR
    one of the flips, within k of fps[p] and not within the radius on an
    earlier table's bits (radius < 0: no earlier table is asked). A step
    along every chain at once, as tables.Chained.pieces does: each pass's
    reads wait on none of the others (memory answers them together)."""
    n, m = len(vkeys), 0
    at = np.empty(n * len(flips), np.int64)  # the visitor of each key kept
    chain = np.empty(n * len(flips), np.int64)  # that key, then a position along its chain
    live = 0
    for i in range(n):
        v = vkeys[i]
        for f in flips:
            at[live] = i
            chain[live] = v ^ f
            live += kept[v ^ f]  # (kept or not, written: no branch on the read)
    for x in range(live):
        chain[x] = head[chain[x]]
    out = np.empty((1024, 3), np.int64)
    while live:
        left = 0
        for x in range(live):
            i, p = at[x], chain[x]
            y = vfps[i] ^ fps[p]
            d = popcount(y)
            if d <= k and (radius < 0 or not found_earlier(y, earlier, radius)):
                out = appended(out, m, i, p, d)
                m += 1
            after_p = after[p]
            if after_p >= 0:
                at[left] = i
                chain[left] = after_p
                left += 1
        live = left
    return out[:m]


@njit(nogil=True, cache=True)
def close_pairs(fps: Any, k: int) -> Any:
    """Rows of (i, j, distance) for every j < i with fps[i] and fps[j]
    within k: a batch's own pairs, all compared."""
    out = np.empty((1024, 3), np.int64)
    m = 0
    for i in range(len(fps)):
        fa = fps[i]
        for j in range(i):
            d = popcount(fa ^ fps[j])
            if d <= k:
                out = appended(out, m, i, j, d)
                m += 1
    return out[:m]
