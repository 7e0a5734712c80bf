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
memory as arrays (``_Kept``, the in-memory twin of an index's lookup), so a
corpus of any size is deduplicated in one pass, with memory growing only with
what is kept (about 200 bytes a kept document, beside its key, and a
middle-length text's set, 2 bytes a distinct unit; its keys add up to 256
more: a short text's set keys, or a longer text's twelve band keys, 192).
Documents are decided a batch at a time, in numpy: the batch against what
was kept before it, then within itself in the order read, so Python runs
per document only to read and yield it (the worker processes fingerprint
the next chunks meanwhile). Past _COMPILED_AFTER documents, where
simindex.compiled's loops load, the lookups of chained tables and the
batch's own pairs are compiled loops (the same pairs).
``simindex dedup CORPUS --out FILE`` is this function with files around it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np

from simindex import ingest
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, BlockLayout, check_k, table_flips
from simindex.compiled import LOOPS, Loops, kernels
from simindex.compiling import mode, tried
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.ingest import Doc
from simindex.signature import (
    DEFAULT_THRESHOLD,
    SMALL,
    WORDS,
    Marks,
    Middle,
    check_threshold,
    keys_of,
    marks_of,
    meets_many,
    needed,
    one_unit_reaches,
    similarities,
)
from simindex.tables import (
    Chained,
    Column,
    Keyed,
    Sorted,
    equal_pairs,
    key_type,
    packed_flips,
    probe_batch,
    run_positions,
    shared_radius,
)


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
        self._kept = _Kept(k, threshold)
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
        """The decisions, a batch of documents at a time (see _Kept.decide)."""
        counts, kept = self.counts, self._kept
        source = iter(self._fingerprinted)
        while True:
            batch: list[tuple[Doc, int | None, bytes | None]] = []
            failure: Exception | None = None
            try:
                for item in source:
                    batch.append(item)
                    if len(batch) >= _BATCH:
                        break
            except Exception as exc:  # raised after the decisions before it
                failure = exc
            if batch:
                yield from kept.decide(batch, counts)
            if failure is not None:
                raise failure
            if len(batch) < _BATCH:
                return


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
    near-duplicate of an earlier kept one (within k, or at any distance
    with signatures that meet by signature.meets: short texts one unit
    apart, longer texts with a band of their sketches equal; and at least
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
    ``threshold``: the similarity they need too, 0 to 1 (default 0.78, a new
    index's; 0: distance alone; two longer texts of CJK characters need the
    lower one signature.threshold_for gives them). ``config``:
    how texts are fingerprinted. ``workers``: processes that fingerprint
    (default: the CPUs this process may use; 1: this process).

    A document is compared only with the documents kept before it: one that
    is near a dropped document but not near any kept one is kept. Among the
    kept documents it meets (within k, or by their keys), it is the
    duplicate of the nearest (the earliest of equals) that verifies. A
    document with no words to fingerprint is dropped (``Decision.no_words``);
    kept ones are ``Decision.kept``; the others carry ``duplicate_of`` and
    ``distance``.

    A stream: the input is read a batch of 256 documents ahead of the
    decisions (one more while the compiled pass fingerprints it in a
    thread; with workers, a few chunks of 256 more), and memory holds the
    kept documents' fingerprints, signatures and keys, never their texts,
    beside fixed lookup tables (44 MiB at most, at k = 4, 5 and 8). The arguments are checked now
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


# --- the kept documents, and a batch decided against them -----------------------------------

# Documents decided at once: the workers' chunk. Alone, batches of 512 or
# 1,024 decide about a quarter faster (bench/dedup.py's corpus, one process),
# but the command was slower with them: the fingerprinting reads a chunk or
# two ahead, so it waited while a larger batch was decided.
_BATCH = 256
# Documents decided before the compiled loops are loaded, the switch at
# "auto": loading their cached code takes about 0.35 s (numba imported
# already, as the command's text pass has it), what they save deciding
# about 70,000 documents early in a stream (5 us each on bench/dedup.py's
# corpus), more later as the kept tables fill (7.5-9.6 us past 500,000,
# with the signature keys' Occupied:
# bench/results/experiments/dedup_growth.txt). Loaded at 70,000, a run of
# 72,000 paid the load for nothing; at 100,000 a run short of it never
# loads them and a longer one pays at most 0.35 s more than it could.
_COMPILED_AFTER = 100_000
_CHAINED_BITS = 22  # a probed table of keys up to 2**22 keeps chains (20 MiB at most)
_OCCUPIED_BITS = 22  # the signature keys' table keeps which of 2**22 low bits it holds (4 MiB)


class _Kept:
    """What a streaming dedup kept: fingerprints, signatures and keys, by the
    position they were kept at, found again by their tables' bits (the layout
    a new index for k gets: k + 1 exact blocks up to k = 3, above it fewer
    blocks looked up with probes) and by their signatures' keys
    (signature.keys_of: a short text's set keys, a longer text's band keys).
    ``decide`` takes a batch at a time."""

    def __init__(self, k: int, threshold: float) -> None:
        self.k, self.threshold = k, threshold
        self.keys: list[str] = []  # the kept documents' keys, by position
        self._fps = Column(np.uint64)
        self._words = Column(np.uint64, WORDS)
        self._sets = Column(np.uint32, SMALL)
        self._sizes = Column(np.intp)
        self._ordered = Column(np.bool_)
        self._characters = Column(np.bool_)
        self._middle = (Column(np.uint16), Column(np.int64), Column(np.int64))
        self._by_key = Sorted(np.int64, occupied=_OCCUPIED_BITS)
        # Whether a set of n units (n + 1 the larger of a pair) is looked up
        # by all its keys, or by its own alone (signature.one_unit_reaches).
        self._reaches = np.array([one_unit_reaches(n + 1, threshold) for n in range(SMALL + 1)])
        layout = BlockLayout.for_k(k)
        masks = layout.table_masks()
        flips = table_flips(layout, k)  # ([0] a table up to the layout's own k)
        self._tables: list[Keyed] = []
        for mask, xors in zip(masks, flips, strict=True):
            width = mask.bit_count()
            chained = len(xors) > 1 and width <= _CHAINED_BITS
            kept = Chained(width) if chained else Sorted(key_type(mask))
            self._tables.append(Keyed(mask, packed_flips(xors, mask), kept))
        self._radius = shared_radius(self._tables)  # (each pair found once, where not None)
        self._decided = 0  # documents decided so far (when the compiled loops pay: _compiled)

    def decide(
        self, batch: list[tuple[Doc, int | None, bytes | None]], counts: DedupCounts
    ) -> Iterator[Decision]:
        """The decisions about a batch of documents, in order, as if each were
        decided after the ones before it: kept unless a kept document (before
        the batch, or kept in it before it) is within k, or meets it by
        their keys (signature.meets), and verifies; then the nearest of
        those (the earliest of equals) is named."""
        worded = [i for i, (_, fp, sig) in enumerate(batch) if fp is not None and sig is not None]
        signatures: list[bytes] = [batch[i][2] for i in worded]  # type: ignore[misc]
        new = marks_of([batch[i][1] for i in worded], signatures)  # type: ignore[misc]
        old = Marks(
            self._fps.rows,
            self._words.rows,
            self._sets.rows,
            self._sizes.rows,
            self._ordered.rows,
            self._characters.rows,
            Middle(*(column.rows for column in self._middle)),
        )
        start = len(self.keys)
        loops = self._compiled()
        self._decided += len(batch)
        keys, owner, asked = self._keys(signatures, new)
        # Against what was kept before: (document, position, distance, similarity).
        i, p = self._near_kept(new, loops)
        if asked is not None:
            at, positions = self._by_key.find(keys[asked])
            i2, p2 = self._met(new, owner[asked][at], old, positions)
            i, p = np.concatenate([i, i2]), np.concatenate([p, p2])
        d = np.bitwise_count(new.fps[i] ^ old.fps[p]).astype(np.intp)
        sim = similarities(new, i, old, p)
        ok = sim >= needed(self.threshold, new, i, old, p)  # (found by keys: any distance)
        before = (i[ok], p[ok], d[ok], sim[ok])
        # Within the batch: (document, the earlier one, distance, similarity).
        i, j = self._near_in_batch(new, keys, owner, asked, loops)
        d = np.bitwise_count(new.fps[i] ^ new.fps[j]).astype(np.intp)
        sim = similarities(new, i, new, j)
        ok = sim >= needed(self.threshold, new, i, new, j)
        i, j, d, sim = i[ok], j[ok], d[ok], sim[ok]
        # Kept: nothing verified before the batch, and no earlier one kept in it.
        kept = np.ones(len(worded), dtype=bool)
        kept[before[0]] = False
        waiting = np.zeros(len(worded), dtype=bool)
        waiting[i] = True
        waiting &= kept
        if waiting.any():  # in order: each one's earlier neighbours are decided
            order = np.argsort(i, kind="stable")
            i_sorted, j_sorted = i[order], j[order]
            bounds = np.searchsorted(i_sorted, np.arange(len(worded) + 1))
            for doc in np.flatnonzero(waiting).tolist():
                if kept[j_sorted[bounds[doc] : bounds[doc + 1]]].any():
                    kept[doc] = False
        rank = np.cumsum(kept) - 1 + start  # the position each kept document gets
        by_kept = kept[j]
        best = _nearest(
            *(np.concatenate([before[n], x[by_kept]]) for n, x in enumerate((i, rank[j], d, sim))),
            n=len(worded),
        )
        self._keep(new, kept, rank, keys, owner, [batch[w][0].key for w in worded])
        yield from self._decisions(batch, worded, kept, best, counts)

    def _keys(
        self, signatures: list[bytes], new: Marks
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The batch's keys (signature.keys_of), their owners, and which of
        them a document looks up: every band key; every set key, or a set's
        own key alone where a set one unit apart cannot verify
        (one_unit_reaches). No keys when the threshold is 0."""
        if self.threshold == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty.astype(np.intp), None
        keys, owner = keys_of(signatures)
        own = np.ones(len(owner), dtype=bool)  # (a set's keys: its own first, together)
        own[1:] = owner[1:] != owner[:-1]
        sizes = new.sizes[owner]
        return keys, owner, own | (sizes == 0) | self._reaches[sizes]

    def _met(
        self, a: Marks, i: np.ndarray, b: Marks, j: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pairs (a[i], b[j]) found by a shared key that are farther
        apart than k (those within k the fingerprints find) and meet (_meet),
        each once (two copies share every band)."""
        far = np.bitwise_count(a.fps[i] ^ b.fps[j]) > self.k
        i, j = i[far], j[far]
        if len(i) > 1:  # (as np.unique of the pairs by axis, ordered by i then j: 1-D, faster)
            span = int(j.max()) + 1
            pairs = np.unique(i.astype(np.int64) * span + j)
            i, j = pairs // span, pairs % span
        met = meets_many(a, i, b, j)
        return i[met], j[met]

    def _compiled(self) -> Loops | None:
        """The compiled loops (simindex.compiled) the batch is decided by,
        or None (numpy): with simindex.compiling's switch at "auto", once
        the process has loaded them, or once the stream has decided
        _COMPILED_AFTER documents; at "always" from the first batch."""
        if mode() == "always" or tried(LOOPS) or self._decided >= _COMPILED_AFTER:
            return kernels()
        return None

    def _near_kept(self, new: Marks, loops: Loops | None) -> tuple[np.ndarray, np.ndarray]:
        """(document, position) of every kept fingerprint within k of one."""
        i, p, _ = probe_batch(self._tables, new.fps, self._fps.rows, self.k, self._radius, loops)
        return i, p

    def _near_in_batch(
        self,
        new: Marks,
        keys: np.ndarray,
        owner: np.ndarray,
        asked: np.ndarray | None,
        loops: Loops | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(document, an earlier one) of the batch within k, or meeting by
        their keys beyond it (see _met)."""
        if loops is not None:
            rows = loops.close_pairs(new.fps, self.k)
            i, j = rows[:, 0], rows[:, 1]
        else:
            distance = np.bitwise_count(new.fps[:, None] ^ new.fps[None, :])
            j, i = np.nonzero(np.triu(distance <= self.k, 1))
        if asked is not None and len(keys):
            order = np.argsort(keys, kind="stable")
            at, found = equal_pairs(keys[order], keys[asked])
            i2, j2 = owner[asked][at], owner[order][found]
            earlier = j2 < i2
            i2, j2 = self._met(new, i2[earlier], new, j2[earlier])
            i, j = np.concatenate([i, i2]), np.concatenate([j, j2])
        return i, j

    def _keep(
        self,
        new: Marks,
        kept: np.ndarray,
        rank: np.ndarray,
        signature_keys: np.ndarray,
        owner: np.ndarray,
        keys: list[str],
    ) -> None:
        at = np.flatnonzero(kept)
        positions = rank[at].astype(np.int64)
        self._fps.extend(new.fps[at])
        self._words.extend(new.words[at])
        self._sets.extend(new.sets[at])
        self._sizes.extend(new.sizes[at])
        self._ordered.extend(new.ordered[at])
        self._characters.extend(new.characters[at])
        values, lo, sizes = self._middle
        size = new.middle.sizes[at]
        lo.extend(values.size + np.cumsum(size) - size)
        sizes.extend(size)
        values.extend(new.middle.values[run_positions(new.middle.lo[at], size)])
        self.keys.extend([keys[a] for a in at.tolist()])
        for table in self._tables:
            table.lookup.add(table.key_of(new.fps[at]), positions)
        if len(signature_keys):
            mine = kept[owner]
            self._by_key.add(signature_keys[mine], rank[owner[mine]].astype(np.int64))

    def _decisions(
        self,
        batch: list[tuple[Doc, int | None, bytes | None]],
        worded: list[int],
        kept: np.ndarray,
        best: tuple[np.ndarray, np.ndarray, np.ndarray],
        counts: DedupCounts,
    ) -> Iterator[Decision]:
        at = dict(zip(worded, range(len(worded)), strict=True))
        kept_list = kept.tolist()
        positions, distances, estimates_ = (x.tolist() for x in best)
        keys = self.keys
        for n, (doc, fp, _) in enumerate(batch):
            counts.read += 1
            w = at.get(n)
            if w is None:
                counts.no_words += 1
                yield Decision(doc, None, None, None)
            elif kept_list[w]:
                counts.kept += 1
                yield Decision(doc, fp, None, None)
            else:
                counts.dropped += 1
                yield Decision(doc, fp, keys[positions[w]], distances[w], estimates_[w])


def _nearest(
    i: np.ndarray, p: np.ndarray, d: np.ndarray, sim: np.ndarray, *, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of n documents, the (position, distance, similarity) of its
    nearest candidate, the earliest position of equals (-1: none)."""
    order = np.lexsort((p, d, i))
    i, p, d, sim = i[order], p[order], d[order], sim[order]
    first = np.ones(len(i), dtype=bool)
    first[1:] = i[1:] != i[:-1]
    position = np.full(n, -1, dtype=np.int64)
    distance = np.full(n, -1, dtype=np.intp)
    similar = np.zeros(n, dtype=np.float64)
    position[i[first]], distance[i[first]], similar[i[first]] = p[first], d[first], sim[first]
    return position, distance, similar
