"""Candidates to matches: the Hamming filter, and the order results come in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from simindex.blocks import BlockLayout
from simindex.fingerprint import to_unsigned


class Match(NamedTuple):
    """One stored document near a query: its key, distance and fingerprint."""

    key: str
    distance: int
    fingerprint: int


def within(rows: Iterable[tuple[str, int]], fingerprint: int, k: int) -> list[Match]:
    """The rows (key, signed fingerprint) within distance k of an unsigned
    fingerprint, sorted by distance, then key."""
    found = []
    for key, stored in rows:
        other = to_unsigned(stored)
        distance = (other ^ fingerprint).bit_count()
        if distance <= k:
            found.append(Match(key, distance, other))
    found.sort(key=lambda m: (m.distance, m.key))
    return found


class Pair(NamedTuple):
    """Two stored documents within distance k of each other (key_a < key_b)."""

    key_a: str
    key_b: str
    distance: int


def all_pairs(items: Sequence[tuple[str, int]], k: int) -> list[Pair]:
    """Every pair of (key, unsigned fingerprint) items within distance k.

    The same pigeonhole argument as the index, in memory: cut the fingerprints
    into k + 1 blocks; for each block, sort by it and compare only the
    fingerprints in runs of equal block values. Exact for any k <= 15.
    Sorted by distance, then keys.
    """
    if len(items) < 2:
        return []
    keys = [key for key, _ in items]
    fps = np.fromiter((fp for _, fp in items), dtype=np.uint64, count=len(items))
    seen: set[tuple[int, int]] = set()
    found: list[Pair] = []
    for shift, mask in BlockLayout.for_k(k).spans():
        values = (fps >> np.uint64(shift)) & np.uint64(mask)
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        # Start of each run of equal values, and the runs of two or more.
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        ends = np.r_[starts[1:], len(ordered)]
        for start, end in zip(starts[ends - starts > 1], ends[ends - starts > 1], strict=True):
            run = order[start:end]
            for j in range(len(run) - 1):
                a = int(run[j])
                others = run[j + 1 :]
                distances = np.bitwise_count(fps[others] ^ fps[a])
                near = distances <= k
                for b, d in zip(others[near].tolist(), distances[near].tolist(), strict=True):
                    pair = (a, b) if a < b else (b, a)
                    if pair not in seen:
                        seen.add(pair)
                        ka, kb = sorted((keys[a], keys[b]))
                        found.append(Pair(ka, kb, int(d)))
    found.sort(key=lambda p: (p.distance, p.key_a, p.key_b))
    return found
