"""What simindex answers: matches, pairs, clusters, check reports, and the
warning a full scan gives. Plain named tuples, so they compare, print and
unpack as tuples and turn into JSON with ``_asdict()``."""

from __future__ import annotations

from typing import NamedTuple


class Match(NamedTuple):
    """One stored document near a query: its key, distance and fingerprint."""

    key: str
    distance: int
    fingerprint: int


class Pair(NamedTuple):
    """Two stored documents within distance k of each other (key_a < key_b)."""

    key_a: str
    key_b: str
    distance: int


class Cluster(NamedTuple):
    """Near-duplicate documents linked by chains of pairs within k.

    ``canonical`` is the member added first; ``members`` are (key, distance
    to the canonical member), the canonical one first, then by distance, key.
    """

    canonical: str
    members: list[tuple[str, int]]


class CheckReport(NamedTuple):
    """What ``SimIndex.check`` found: ``ok`` when ``problems`` is empty."""

    ok: bool
    problems: list[str]
    repaired: list[str]


class FullScanWarning(UserWarning):
    """A query asked for a distance larger than the index's k and scanned every row."""
