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
memory (``query.Seen``, the in-memory twin of an index's lookup), so a corpus
of any size is deduplicated in one pass, with memory growing only with what
is kept (about 150 bytes a kept document, beside its key).
``simindex dedup CORPUS --out FILE`` is this function with files around it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import NamedTuple

from simindex import ingest
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, check_k
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.ingest import Doc
from simindex.query import Seen
from simindex.signature import DEFAULT_THRESHOLD, check_threshold, similarity


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
            if nearest is None:
                seen.add(fp)
                self._kept_keys.append(doc.key)
                kept.append(signature)
                counts.kept += 1
                yield Decision(doc, fp, None, None)
            else:
                position, distance = nearest
                counts.dropped += 1
                estimate = similarity(signature, kept[position])
                yield Decision(doc, fp, self._kept_keys[position], distance, estimate)


def dedup_stream(
    docs: Iterable[Doc | tuple[str, str]],
    *,
    k: int = DEFAULT_K,
    threshold: float = DEFAULT_THRESHOLD,
    config: FingerprintConfig = DEFAULT_CONFIG,
    workers: int | None = None,
) -> DedupStream:
    """Deduplicate a stream of documents: keep each one unless it is a
    near-duplicate of an earlier kept one (within k, and at least
    ``threshold`` similar by their verification signatures, as a query of
    an index finds them). Returns an iterator of a ``Decision`` for every
    document, in input order.

    ``docs``: ``(key, text)`` pairs, or the ``ingest.Doc`` records that
    ``ingest.read_docs`` reads from files, folders, JSON Lines and CSV.
    ``k``: the largest Hamming distance between two fingerprints that makes
    them near-duplicates, 0 to 15 (default 8, a new index's k).
    ``threshold``: the similarity they need too, 0 to 1 (default 0.8, a new
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
