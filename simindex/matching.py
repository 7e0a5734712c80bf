"""The one ending of every query path: candidate rows -> matches.

Whatever found the candidates (the block indexes, a held snapshot, a join on
the server, a full scan), each is a stored row (id, key, signed fingerprint)
read after it was found, so its distance is checked again here (a writer may
have replaced the row meanwhile), each row counts once, and the matches come
sorted by distance, then key.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from simindex.fingerprint import to_signed, to_unsigned
from simindex.results import Match

_MASK64 = (1 << 64) - 1
Row = tuple[int, str, int]  # (id, key, signed fingerprint), as stored


def near(rows: list[tuple[int, int]], fingerprint: int, k: int) -> list[int]:
    """The ids of the rows (id, signed fingerprint) within distance k of an
    unsigned fingerprint, each once (the hot loop of every query)."""
    query = to_signed(fingerprint)  # xor in the stored (signed) form, then keep 64 bits
    ids = [row_id for row_id, stored in rows if ((stored ^ query) & _MASK64).bit_count() <= k]
    return list(dict.fromkeys(ids)) if len(ids) > 1 else ids


def within(rows: Iterable[tuple[int, str, int]], fingerprint: int, k: int) -> list[Match]:
    """The rows (id, key, signed fingerprint) within distance k of an unsigned
    fingerprint, each once, sorted by distance, then key."""
    found: dict[int, Match] = {}
    for row_id, key, stored in rows:
        other = to_unsigned(stored)
        distance = (other ^ fingerprint).bit_count()
        if distance <= k:
            found[row_id] = Match(key, distance, other)
    return sorted(found.values(), key=lambda m: (m.distance, m.key))


def within_each(
    candidates: Iterable[tuple[int, Row]], fingerprints: Sequence[int], k: int
) -> list[list[Match]]:
    """Per query (unsigned fingerprint), its candidates ((query position, row))
    within distance k: rechecked, each once, sorted (see within)."""
    rows: list[list[Row]] = [[] for _ in fingerprints]
    for position, row in candidates:
        rows[position].append(row)
    return [within(r, fp, k) for r, fp in zip(rows, fingerprints, strict=True)]
