"""Candidates to matches: the Hamming filter, and the order results come in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

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
