"""What simindex answers: matches, pairs, clusters, overlaps, check reports, and the
warning a full scan gives. Plain named tuples, so they compare, print and
unpack as tuples and turn into JSON with ``_asdict()``."""

from __future__ import annotations

from typing import NamedTuple


class Match(NamedTuple):
    """One stored document near a query: its key, distance and fingerprint,
    and ``similarity``, the verified estimate (0 to 1) of how much of their
    text they share (simindex.signature), or None where the query or the
    stored document has no signature (matched by distance alone)."""

    key: str
    distance: int
    fingerprint: int
    similarity: float | None = None


class Pair(NamedTuple):
    """Two stored documents within distance k of each other (key_a < key_b),
    and their verified similarity (None where either has no signature)."""

    key_a: str
    key_b: str
    distance: int
    similarity: float | None = None


class Cluster(NamedTuple):
    """Near-duplicates of one canonical document.

    ``canonical`` is the member added first; every other member is a
    near-duplicate of it (within k and, where both have a signature,
    verified), so no member is unlike its canonical one. ``members`` are
    (key, distance to the canonical member), the canonical one first, then
    by distance, key.
    """

    canonical: str
    members: list[tuple[str, int]]


class Overlap(NamedTuple):
    """A stored document sharing passages with a query (SimIndex.overlaps):
    ``query_share``, the share of the query's passages found in it, and
    ``stored_share``, the share of its passages found in the query (0 to 1;
    shares of winnowed shingle hashes, simindex.passages). A text inside the
    document has a query_share near 1; the document inside the text, a
    stored_share near 1."""

    key: str
    query_share: float
    stored_share: float


class CheckReport(NamedTuple):
    """What ``SimIndex.check`` found: ``ok`` when ``problems`` is empty."""

    ok: bool
    problems: list[str]
    repaired: list[str]


class FullScanWarning(UserWarning):
    """A query asked for a distance larger than the index's k and scanned every row."""
