"""Streaming dedup of a corpus: keep a document unless it is near an earlier kept one.

>>> from simindex import dedup_stream
>>> docs = [
...     ("a", "the quick brown fox jumps over the lazy dog"),
...     ("b", "The quick brown fox jumps over the lazy dog!"),
...     ("c", "an entirely different sentence about something else"),
... ]
>>> run = dedup_stream(docs, k=3, workers=1)
>>> [(d.key, d.kept, d.duplicate_of, d.similarity) for d in run]
[('a', True, None, None), ('b', False, 'a', 1.0), ('c', True, None, None)]
>>> run.counts
DedupCounts(read=3, kept=2, dropped=1, no_words=0)

No index and no database: the kept fingerprints and signatures are held in
memory (``Seen``, the in-memory twin of an index's lookup), so a corpus
of any size is deduplicated in one pass, with memory growing only with what
is kept (about 150 bytes a kept document, beside its key).
``simindex dedup CORPUS --out FILE`` is this function with files around it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np

from simindex import ingest
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, BlockLayout, check_k, probes
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.ingest import Doc
from simindex.signature import (
    DEFAULT_THRESHOLD,
    check_threshold,
    exact_set,
    one_unit_apart,
    one_unit_reaches,
    set_keys,
    similarity,
)

_SEEN_BITMAP_BITS = 24  # Seen: a bitmap of a table's values up to 2**24 bytes (16 MiB)


class Decision(NamedTuple):
    """What dedup_stream decided about one document (one for each, in input order)."""

    doc: Doc  # the document as read: key, text, where it came from, its size
    fingerprint: int | None  # None: it has no words to fingerprint (it is dropped)
    duplicate_of: str | None  # the key of the earlier kept document it is a near-duplicate of
    distance: int | None  # the Hamming distance to that document
    similarity: float | None = None  # their verified similarity (see simindex.signature)

    @property
    def key(self) -> str:
        """The document's key."""
        return self.doc.key

    @property
    def kept(self) -> bool:
        """Whether the document is kept: it has words and is not near a kept one."""
        return self.fingerprint is not None and self.duplicate_of is None

    @property
    def no_words(self) -> bool:
        """Whether the document was dropped for having no words to fingerprint."""
        return self.fingerprint is None


@dataclass
class DedupCounts:
    """What a dedup run has decided so far."""

    read: int = 0
    kept: int = 0
    dropped: int = 0  # near-duplicates of a kept document
    no_words: int = 0  # dropped for having no words


class DedupStream:
    """The decisions of a streaming dedup, as an iterator (made by dedup_stream).

    ``counts`` is updated as the decisions are read; ``k`` and ``threshold``
    are the distance and similarity used. ``close()`` (or leaving a ``with``
    block) stops early: the worker processes are stopped and the rest of the
    input is not read.
    """

    def __init__(
        self,
        docs: Iterable[Doc | tuple[str, str]],
        k: int,
        config: FingerprintConfig,
        workers: int | None,
        threshold: float,
    ) -> None:
        self.k = k
        self.threshold = threshold
        self.counts = DedupCounts()
        self._seen = Seen(k)
        self._kept_keys: list[str] = []  # by their position in self._seen
        self._kept_signatures: list[bytes] = []  # likewise
        # Short texts: the kept positions under each of their set keys, so a
        # text one unit apart is found at any distance (signature.set_keys),
        # as a query of an index finds it.
        self._by_set_key: dict[int, list[int]] = {}
        self._kept_sets: dict[int, frozenset[int]] = {}  # their exact sets, by position
        # Looked up in ingest when called (the CLI's tests replace it there).
        self._fingerprinted = ingest.fingerprint_docs(_as_docs(docs), config, workers=workers)
        self._decisions = self._decide()

    def __iter__(self) -> DedupStream:
        return self

    def __next__(self) -> Decision:
        return next(self._decisions)

    def close(self) -> None:
        """Stop: the rest of the input is not read, and the worker processes exit."""
        self._decisions.close()
        close = getattr(self._fingerprinted, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> DedupStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _decide(self) -> Generator[Decision, None, None]:
        counts, seen, kept = self.counts, self._seen, self._kept_signatures
        threshold = self.threshold
        for doc, fp, signature in self._fingerprinted:
            counts.read += 1
            if fp is None or signature is None:
                counts.no_words += 1
                yield Decision(doc, None, None, None)
                continue

            def verified(position: int, signature: bytes = signature) -> bool:
                return threshold == 0 or similarity(signature, kept[position]) >= threshold

            nearest = seen.nearest(fp, verified)
            keys = set_keys(signature) if threshold > 0 else []
            if keys:
                nearest = self._nearest_short(fp, signature, keys, nearest)
            if nearest is None:
                position = seen.add(fp)
                self._kept_keys.append(doc.key)
                kept.append(signature)
                for key in keys:
                    self._by_set_key.setdefault(key, []).append(position)
                if keys:
                    self._kept_sets[position] = exact_set(signature)  # type: ignore[assignment]
                counts.kept += 1
                yield Decision(doc, fp, None, None)
            else:
                position, distance = nearest
                counts.dropped += 1
                estimate = similarity(signature, kept[position])
                yield Decision(doc, fp, self._kept_keys[position], distance, estimate)

    def _nearest_short(
        self,
        fingerprint: int,
        signature: bytes,
        keys: list[int],
        nearest: tuple[int, int] | None,
    ) -> tuple[int, int] | None:
        """The nearest of ``nearest`` and the kept short texts one unit apart
        (at any distance) that verify: (position, distance), the earliest
        among equals (matching's rule, as an index's query applies it)."""
        mine = exact_set(signature)
        assert mine is not None  # (it has keys)
        best = None if nearest is None else (nearest[1], nearest[0])
        n = len(mine)
        if not one_unit_reaches(n + 1, self.threshold):
            # Then only the same set can reach the threshold: its own key alone.
            keys = keys[:1]
        positions = {p for key in keys for p in self._by_set_key.get(key, ())}
        for position in positions:
            theirs = self._kept_sets[position]
            if not one_unit_apart(mine, theirs):
                continue
            if similarity(signature, self._kept_signatures[position]) < self.threshold:
                continue
            distance = (self._seen.fingerprints[position] ^ fingerprint).bit_count()
            if best is None or (distance, position) < best:
                best = (distance, position)
        return None if best is None else (best[1], best[0])


def dedup_stream(
    docs: Iterable[Doc | tuple[str, str]] | Any,
    *,
    k: int = DEFAULT_K,
    threshold: float = DEFAULT_THRESHOLD,
    config: FingerprintConfig = DEFAULT_CONFIG,
    workers: int | None = None,
    key_field: str | None = None,
    text_field: str = "text",
) -> DedupStream:
    """Deduplicate a stream of documents: keep each one unless it is a
    near-duplicate of an earlier kept one (within k, and at least
    ``threshold`` similar by their verification signatures, as a query of
    an index finds them). Returns an iterator of a ``Decision`` for every
    document, in input order.

    ``docs``: ``(key, text)`` pairs, or the ``ingest.Doc`` records that
    ``ingest.read_docs`` reads from files, folders, JSON Lines, CSV and
    Parquet; or a table: a pyarrow Table or RecordBatch, an iterable of them
    (a RecordBatchReader), or a pandas DataFrame, whose rows are read a
    chunk at a time, the text in column ``text_field`` (default "text") and
    the key in column ``key_field`` (default "id", else "key"; integers
    become strings).
    ``k``: the largest Hamming distance between two fingerprints that makes
    them near-duplicates, 0 to 15 (default 8, a new index's k).
    ``threshold``: the similarity they need too, 0 to 1 (default 0.82, a new
    index's; 0: distance alone). ``config``:
    how texts are fingerprinted. ``workers``: processes that fingerprint
    (default: the CPUs this process may use; 1: this process).

    A document is compared only with the documents kept before it: one that
    is near a dropped document but not near any kept one is kept. Among kept
    documents within k, it is the duplicate of the nearest (the earliest of
    equals) that verifies. A document with no words to fingerprint is dropped
    (``Decision.no_words``); kept ones are ``Decision.kept``; the others
    carry ``duplicate_of`` and ``distance``.

    A stream: the input is read at most a few chunks of 256 documents ahead
    of the decisions (with workers=1, not at all), and memory holds the kept
    documents' fingerprints, signatures and keys, never their texts, beside fixed lookup
    bitmaps (8 MiB at most, at k = 4, 5 and 8). The arguments are checked now
    (``InvalidArgumentError``); an error in the input (a malformed line) is
    raised after the decisions about the documents before it. ``.counts``
    holds the counts so far; ``with`` or ``close()`` stops early (and stops
    the worker processes).

    >>> run = dedup_stream([("a", "one two three"), ("b", "one two three")], k=0, workers=1)
    >>> [d.duplicate_of for d in run], run.counts.kept
    ([None, 'a'], 1)
    """
    check_k(k, limit=MAX_INDEX_K)  # config and workers: checked by ingest.fingerprint_docs
    threshold = check_threshold(threshold)
    if isinstance(docs, (str, bytes)):
        raise InvalidArgumentError("docs is an iterable of (key, text) pairs, not one string")
    docs = ingest.as_pairs(docs, key_field=key_field, text_field=text_field)
    return DedupStream(docs, k, config, workers, threshold)


def _as_docs(docs: Iterable[Doc | tuple[str, str]]) -> Iterator[Doc]:
    """The documents as Doc records, read one at a time; pairs checked as they come."""
    for number, item in enumerate(docs, 1):
        if isinstance(item, Doc):
            yield item
            continue
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidArgumentError(
                f"document {number} is not a (key, text) pair or a Doc: {type(item).__name__}"
            )
        key, text = item
        if not isinstance(key, str) or not isinstance(text, str):
            raise InvalidArgumentError(
                f"document {number}: the key and the text must be strings, not "
                f"{type(key).__name__} and {type(text).__name__}"
            )
        yield Doc(key, text, f"document {number}", 0)  # no source: no bytes read


__all__ = ["Decision", "DedupCounts", "DedupStream", "dedup_stream"]


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
