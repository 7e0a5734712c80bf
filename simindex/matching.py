"""The one ending of every query path: candidate rows -> matches.

Whatever found the candidates (the block indexes, a held snapshot, a join on
the server, a full scan), each is a stored row (id, key, signed fingerprint,
signature) read after it was found, so its distance is checked again here (a
writer may have replaced the row meanwhile), each row counts once, and the
matches come sorted by distance, then key.

Verification (the second stage): a candidate within k whose row and query
both have a signature is a match only when their estimated similarity
(simindex.signature) reaches the threshold the pair needs
(signature.threshold_for: the one asked, lower for two longer texts of CJK
characters); a row or a query without one
(``add_fingerprint``, a query by fingerprint, an index not yet rebuilt from
its texts) is matched by distance alone.

Keys (the third way in): a verified query (threshold above 0) also
matches a row at any distance whose signature meets its own by the rule
every way asks (signature.meets) and is similar enough: a short text whose
exact set is at most one unit away (a one-word edit of a six-word text moves
its fingerprint past k), or a longer text with one band of its sketch
equal (a copy with a tenth of its words edited, one time in four). Such
rows are found by their keys (Verify.keys, signature.keys_of), and every
path adds them to its candidates.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from simindex.fingerprint import to_signed, to_unsigned
from simindex.results import Match
from simindex.signature import (
    Sketches,
    as_words,
    estimates,
    meets,
    middle_bounds,
    middle_layers,
    middle_many,
    similarity_to,
    threshold_for,
    thresholds_for,
)

_MASK64 = (1 << 64) - 1
Row = tuple[int, str, int, "bytes | None"]  # (id, key, signed fingerprint, signature), as stored


class Verify(NamedTuple):
    """How a query's candidates within k are judged: its signature (None:
    distance alone) and the similarity they need (0: any); and ``keys``, its
    signature's keys (signature.keys_of; empty: none, or the index has no
    keys, or the threshold is 0), which also match rows beyond k whose
    signatures meet its own (see the module's text)."""

    signature: bytes | None
    threshold: float
    keys: tuple[int, ...] = ()


def near(rows: list[tuple[int, int]], fingerprint: int, k: int) -> list[int]:
    """The ids of the rows (id, signed fingerprint) within distance k of an
    unsigned fingerprint, each once (the hot loop of every query)."""
    query = to_signed(fingerprint)  # xor in the stored (signed) form, then keep 64 bits
    ids = [row_id for row_id, stored in rows if ((stored ^ query) & _MASK64).bit_count() <= k]
    return list(dict.fromkeys(ids)) if len(ids) > 1 else ids


def within(
    rows: Iterable[Row], fingerprint: int, k: int, verify: Verify | None = None
) -> list[Match]:
    """The rows (id, key, signed fingerprint, signature) within distance k of
    an unsigned fingerprint, or at any distance meeting a keyed query's
    signature (see Verify.keys), and, where both sides have a signature, similar
    enough (see Verify; signature.threshold_for): each once, sorted by distance, then key."""
    found: dict[int, Match] = {}
    query = None if verify is None else verify.signature
    compare = None if query is None else similarity_to(query)
    threshold = 0.0 if verify is None else verify.threshold
    keyed = query is not None and verify is not None and bool(verify.keys)
    for row_id, key, stored, signature in rows:
        other = to_unsigned(stored)
        distance = (other ^ fingerprint).bit_count()
        if distance > k and not (keyed and meets(query, signature) is not None):
            continue
        estimate = None
        if compare is not None and signature is not None:
            estimate = compare(signature)
            if estimate < threshold_for(threshold, query, signature):
                continue
        found[row_id] = Match(key, distance, other, estimate)
    return sorted(found.values(), key=lambda m: (m.distance, m.key))


def within_each(
    candidates: Iterable[tuple[int, Row]],
    fingerprints: Sequence[int],
    k: int,
    verify: Sequence[Verify | None] | None = None,
) -> list[list[Match]]:
    """Per query (unsigned fingerprint, and how it verifies), its candidates
    ((query position, row)) within distance k: rechecked, verified, each once,
    sorted (see within)."""
    rows: list[list[Row]] = [[] for _ in fingerprints]
    for position, row in candidates:
        rows[position].append(row)
    checks = verify if verify is not None else [None] * len(fingerprints)
    return [within(r, fp, k, v) for r, fp, v in zip(rows, fingerprints, checks, strict=True)]


def unverified(
    queries: np.ndarray,
    stored: np.ndarray,
    checks: Sequence[Verify | None],
    held: Sketches,
) -> np.ndarray:
    """Which candidate pairs (query position, stored position) may still be
    matches, judged in memory before their rows are read: False only where
    the query and the held row both have a longer text's signature, not both
    keeping a middle set, and its similarity is under the threshold the
    pair needs (two middle sets: a bound of it, signature.middle_bounds),
    the very test ``within`` makes on the row
    (so the rows read afterwards lose nothing). ``held``: the stored rows'
    signatures as words and which have one (Snapshot.signatures). A row
    written since the snapshot was read may fail here on its old signature:
    its new fingerprint is among the snapshot's added rows, which are not
    judged here, so it is found through them if it matches."""
    keep = np.ones(len(queries), dtype=bool)
    judging = [v is not None and v.signature is not None and v.threshold > 0 for v in checks]
    if not len(queries) or not any(judging):
        return keep
    signatures = [
        v.signature if j and v is not None else None for v, j in zip(checks, judging, strict=True)
    ]
    asked = as_words(signatures)
    thresholds = np.array([v.threshold if v is not None else 0.0 for v in checks])
    at = np.flatnonzero(asked.present[queries] & held.present[stored])
    if at.size:
        q, s = queries[at], stored[at]
        needed = thresholds_for(thresholds[q], asked.characters[q] & held.characters[s])
        middle = asked.middle[q] & held.middle[s]
        judged = estimates(asked.words[q], held.words[s]) >= needed
        if middle.any():  # (two middle sets: by their sets, a bound of them held)
            m = np.flatnonzero(middle)
            layers = middle_layers(middle_many(signatures))
            bounds = middle_bounds(layers, q[m], held.maps, s[m])
            judged[m] = bounds >= needed[m]
        keep[at] = judged
    return keep
