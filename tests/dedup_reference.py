"""Streaming dedup one document at a time in Python: the reference that
simindex.dedup's batch decisions are tested against (its per-document path
before the batches, kept here as the oracle).

``decide_each`` takes the same (document, fingerprint, signature) stream the
batch path takes and gives the same Decision for each; ``Seen`` holds the
kept fingerprints in a dict per table of the layout a new index for k gets
(k + 1 exact blocks up to k = 3, probes above), and every kept signature by
its keys (signature.keys_of_one: a short text's set keys, a longer text's
band keys), the candidates at any distance, each asked signature.meets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from simindex.blocks import BlockLayout, probes
from simindex.dedup import Decision, DedupCounts
from simindex.ingest import Doc
from simindex.signature import keys_of_one, meets, similarity
from tests.helpers import needed

_SEEN_BITMAP_BITS = 24  # Seen: a bitmap of a table's values up to 2**24 bytes (16 MiB)


def decide_each(
    fingerprinted: Iterable[tuple[Doc, int | None, bytes | None]],
    k: int,
    threshold: float,
    counts: DedupCounts | None = None,
) -> Iterator[Decision]:
    """The decisions, one document at a time."""
    counts = DedupCounts() if counts is None else counts
    seen = Seen(k)
    kept_keys: list[str] = []  # by their position in seen
    kept: list[bytes] = []  # likewise
    by_key: dict[int, list[int]] = {}
    for doc, fp, signature in fingerprinted:
        counts.read += 1
        if fp is None or signature is None:
            counts.no_words += 1
            yield Decision(doc, None, None, None)
            continue

        def verified(position: int, signature: bytes = signature) -> bool:
            other = kept[position]
            if threshold == 0:
                return True
            return similarity(signature, other) >= needed(threshold, signature, other)

        nearest = seen.nearest(fp, verified)
        keys = keys_of_one(signature) if threshold > 0 else []
        if keys:
            nearest = _nearest_keyed(fp, signature, keys, nearest, threshold, seen, kept, by_key)
        if nearest is None:
            position = seen.add(fp)
            kept_keys.append(doc.key)
            kept.append(signature)
            for key in keys:
                by_key.setdefault(key, []).append(position)
            counts.kept += 1
            yield Decision(doc, fp, None, None)
        else:
            position, distance = nearest
            counts.dropped += 1
            estimate = similarity(signature, kept[position])
            yield Decision(doc, fp, kept_keys[position], distance, estimate)


def _nearest_keyed(
    fingerprint: int,
    signature: bytes,
    keys: list[int],
    nearest: tuple[int, int] | None,
    threshold: float,
    seen: Seen,
    kept: list[bytes],
    by_key: dict[int, list[int]],
) -> tuple[int, int] | None:
    """The nearest of ``nearest`` and the kept documents sharing a key with
    this one (at any distance) whose signatures meet (signature.meets) and
    verify: (position, distance), the earliest among equals."""
    best = None if nearest is None else (nearest[1], nearest[0])
    positions = {p for key in keys for p in by_key.get(key, ())}
    for position in positions:
        if meets(signature, kept[position]) is None:
            continue
        if similarity(signature, kept[position]) < needed(threshold, signature, kept[position]):
            continue
        distance = (seen.fingerprints[position] ^ fingerprint).bit_count()
        if best is None or (distance, position) < best:
            best = (distance, position)
    return None if best is None else (best[1], best[0])


class Seen:
    """Fingerprints kept so far, found again by their tables' bits: the
    in-memory twin of the index, for streaming dedup of a corpus.

    Memory grows with the fingerprints added (a few dozen bytes each), beside
    a fixed bitmap per probed table (see below).
    """

    def __init__(self, k: int) -> None:
        self.k = k
        # The layout a new index for k gets: k + 1 exact blocks up to k = 3,
        # above it fewer blocks looked up with probes (so a lookup's cost
        # does not grow with what is kept, as k + 1 narrow blocks' would).
        layout = BlockLayout.for_k(k)
        self._masks = layout.table_masks()
        # Per table, the XORs to look up: 0 alone, or every probe's flips.
        self._flips: list[list[int]] = [[0] for _ in self._masks]
        if k > layout.k:
            found = probes(layout, k)
            assert found is not None  # for_k checked
            self._flips = [[] for _ in self._masks]
            spans = layout.spans()
            for probe in found:
                table = layout.tables[probe.table]
                flip = sum(f << spans[b][0] for b, f in zip(table, probe.flips, strict=True))
                self._flips[probe.table].append(flip)
        self._tables: list[dict[int, list[int]]] = [{} for _ in self._masks]
        # A probed table whose bits are one run of at most _SEEN_BITMAP_BITS
        # also keeps a bitmap of the values kept: a lookup tests all its
        # probes (hundreds at k = 8) in one numpy step and reads the dict only
        # for the values there (78 -> 21 us a lookup at k = 8 among 50,000
        # random fingerprints, one-off timing; 8 MiB of bitmaps at k = 8).
        self._bitmaps: list[tuple[int, np.ndarray, np.ndarray] | None] = []
        for mask, flips in zip(self._masks, self._flips, strict=True):
            shift = (mask & -mask).bit_length() - 1
            width = (mask >> shift).bit_length()
            one_run = mask >> shift == (1 << width) - 1
            if len(flips) > 1 and one_run and width <= _SEEN_BITMAP_BITS:
                shifted = np.array([f >> shift for f in flips], dtype=np.int64)
                self._bitmaps.append((shift, np.zeros(1 << width, dtype=bool), shifted))
            else:
                self._bitmaps.append(None)
        self.fingerprints: list[int] = []

    def nearest(
        self, fingerprint: int, accept: Callable[[int], bool] | None = None
    ) -> tuple[int, int] | None:
        """(position, distance) of the nearest kept fingerprint within k (the
        earliest kept among equals) that ``accept`` (given its position)
        accepts, or None."""
        best: tuple[int, int] | None = None
        tables = zip(self._masks, self._flips, self._tables, self._bitmaps, strict=True)
        for mask, flips, table, bitmap in tables:
            key = fingerprint & mask
            if bitmap is None:
                values: Iterable[int] = [key ^ f for f in flips] if flips[1:] else (key ^ flips[0],)
            else:  # only the probes whose value is kept
                shift, kept, shifted = bitmap
                wanted = (key >> shift) ^ shifted
                values = [v << shift for v in wanted[kept[wanted]].tolist()]
            for value in values:
                for position in table.get(value, ()):
                    distance = (self.fingerprints[position] ^ fingerprint).bit_count()
                    if (
                        distance <= self.k
                        and (best is None or (distance, position) < best[::-1])
                        and (accept is None or accept(position))
                    ):
                        best = (position, distance)
        return best

    def add(self, fingerprint: int) -> int:
        """Keep a fingerprint; returns its position."""
        position = len(self.fingerprints)
        self.fingerprints.append(fingerprint)
        for mask, table, bitmap in zip(self._masks, self._tables, self._bitmaps, strict=True):
            table.setdefault(fingerprint & mask, []).append(position)
            if bitmap is not None:
                bitmap[1][(fingerprint & mask) >> bitmap[0]] = True
        return position
