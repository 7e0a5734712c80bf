"""SimIndex: the facade over fingerprints, blocks and storage."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from sqlalchemy import URL

from simindex import accelerator, storage
from simindex import overlaps as partial  # (overlaps: a parameter's name here)
from simindex.accelerator import Accelerator
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, BlockLayout, check_k
from simindex.errors import ClosedIndexError, EmptyTextError, InvalidArgumentError
from simindex.fingerprint import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    simhash,
)
from simindex.reader import Reader
from simindex.results import CheckReport, Cluster, Match, Overlap, Pair
from simindex.signature import DEFAULT_THRESHOLD, check_threshold, fingerprint_and_signature
from simindex.validate import as_config, check_key, check_limit, checked_chunk
from simindex.view import View, Views

if TYPE_CHECKING:
    from simindex.explain import Explanation

# What only some calls need loads with them (a command that queries starts
# without them): ingest (add_many's tables), upkeep (stats, check, compact),
# explain, and pairs' clustering.

# What add_fingerprints and rebuild(fingerprints=...) take: (key, fingerprint)
# or (key, fingerprint, signature) with a signature of simindex.signature's (or
# None); add_fingerprints also (key, fingerprint, signature, text), the text an
# index that keeps passages makes them from.
Item = tuple[str, int] | tuple[str, int, bytes | None] | tuple[str, int, bytes | None, str]

_BATCH = 5000  # rows per write in add_many / add_fingerprints


class SimIndex:
    """A persistent near-duplicate index of texts, by 64-bit Simhash.

    ``SimIndex(location)`` opens the index at a file path, ``":memory:"`` or an
    SQLAlchemy URL, creating it when there is none (unless ``create=False``).
    ``k`` is the Hamming distance queries use by default (8: about 90% of
    lightly edited copies found, see docs/quality.md for what each k
    finds), ``blocks`` the number of
    blocks (default: k + 1 up to k = 3, above it the cheapest probed layout,
    see blocks.DEFAULT_BLOCKS; more blocks mean more database indexes and
    fewer false candidates per query, k or fewer are looked up with probes,
    see ``simindex advise``), ``config`` the fingerprint configuration,
    ``threshold`` the similarity a candidate within k needs, by its
    verification signature, to be a near-duplicate (default 0.78; 0: distance
    alone; see query). All are chosen at creation and stored in the index:
    opening an existing index without them uses its own, and asking for
    different ones raises ConfigMismatchError (``rebuild`` changes them).
    ``with SimIndex(...) as index:`` closes it at the end.

    ``hold``: whether queries may be answered from the fingerprints held in
    memory (SQLite; see query): None (default) once the database time they
    cost reaches what reading them would, True from the first query, False
    never (every query asks the database).

    ``readonly=True`` opens an existing SQLite index for reading only (every
    write raises StorageError). An index in a folder simindex cannot write
    (where SQLite cannot keep its -wal and -shm files) is opened that way by
    itself, as a file nobody changes while it is open. ``timeout``: seconds a
    write waits for another process's write to finish before it fails with
    StorageError (default 30).

    ``overlaps=True`` makes a new index keep its documents' passages (the
    winnowed hashes of their shingles, about 1.1 KB of database a KB of
    text), which ``overlaps`` needs to find a text inside a stored one;
    stored in the index like k (None: the index's own; a new index keeps
    none).

    One SimIndex may be shared between threads.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | URL = ":memory:",
        *,
        k: int | None = None,
        blocks: int | None = None,
        config: FingerprintConfig | Mapping[str, Any] | None = None,
        threshold: float | None = None,
        create: bool = True,
        readonly: bool = False,
        timeout: float = storage.BUSY_TIMEOUT_S,
        hold: bool | None = None,
        overlaps: bool | None = None,
    ) -> None:
        if overlaps is not None and not isinstance(overlaps, bool):
            raise InvalidArgumentError(f"overlaps is True, False or None, not {overlaps!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise InvalidArgumentError(f"timeout is a number of seconds, not {timeout!r}")
        self._timeout = float(timeout)
        if hold is not None and not isinstance(hold, bool):
            raise InvalidArgumentError(f"hold is True, False or None, not {hold!r}")
        self.readonly = bool(readonly)
        wanted_layout = None
        if k is not None or blocks is not None:  # validate before anything is opened
            wanted_layout = BlockLayout.for_k(DEFAULT_K if k is None else k, blocks)
        wanted = as_config(config)
        if threshold is not None:
            threshold = check_threshold(threshold)
        self._where = storage.locate(location)
        storage.check_file(self._where, create=create and not readonly, timeout=self._timeout)
        # A file or folder this process may not write: read-only, by itself.
        access = storage.file_access(self._where)
        self.readonly = readonly = self.readonly or access.readonly
        self._backend = storage.open_backend(
            self._where, timeout=self._timeout, readonly=readonly, immutable=access.immutable
        )
        try:
            new = storage.Settings(  # what a new index gets
                layout=wanted_layout or BlockLayout.for_k(DEFAULT_K),
                config=wanted or DEFAULT_CONFIG,
                distance=DEFAULT_K if k is None else k,
                threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                passages=bool(overlaps),
            )
            settings = storage.open_settings(
                self._backend,
                new,
                may_create=create and not readonly,
                k=k,
                blocks=blocks,
                config=wanted,
                threshold=threshold,
                passages=overlaps,
            )
            if not readonly:
                self._backend.use_wal()
            self._accel = Accelerator(hold)  # shared by this object's threads
            # The index as every read and write sees it (view.py), and its queries.
            self._views = Views(self._backend, self._where, self._accel, settings)
        except BaseException:
            self._backend.dispose()
            raise
        self._reader = Reader(self._views)
        self._lock = self._views.lock

    # --- about the index --------------------------------------------------

    @property
    def _settings(self) -> storage.Settings:
        views = self._views
        if isinstance(views, _Closed):  # what it was opened with stays known
            return views.settings
        return views.current.settings

    @property
    def _store(self) -> storage.Store:
        return self._views.current.store

    @property
    def k(self) -> int:
        """The largest distance answered through the block indexes."""
        return self._settings.k

    @property
    def config(self) -> FingerprintConfig:
        """The fingerprint configuration every add and query on this index uses."""
        return self._settings.config

    @property
    def threshold(self) -> float:
        """The verified similarity queries ask of a candidate within k, by default."""
        return self._settings.threshold

    @property
    def passages(self) -> bool:
        """Whether the index keeps its documents' passages (``overlaps``)."""
        return self._settings.passages

    @property
    def layout(self) -> BlockLayout:
        return self._settings.layout

    @property
    def location(self) -> str:
        """The file path, ":memory:" or the URL (password hidden)."""
        return str(self._where)

    @property
    def held(self) -> bool:
        """Whether this object holds the index's fingerprints in memory now
        (see ``hold`` and query). It reads nothing, and reads in or lets go
        of nothing: the next query may find what is held stale and let it
        go. ``stats()["held_in_memory_bytes"]`` says how much memory it takes."""
        return self._accel.snapshot is not None

    def __repr__(self) -> str:
        if isinstance(self._views, _Closed):
            return f"SimIndex({self.location!r}, closed)"
        return f"SimIndex({self.location!r}, k={self.k})"

    def fingerprint(self, text: str) -> int:
        """The fingerprint this index gives a text (with its own configuration)."""
        return simhash(text, self._settings.config)

    def signature(self, text: str) -> bytes:
        """The verification signature this index gives a text (64 bytes; 4
        more a distinct unit for a text of at most 15, and one more for one
        with CJK: up to 125; 2 more a distinct unit and one more for a text
        of 16 to 256: up to 577; one more for a longer text of CJK
        characters: see simindex.signature); with the fingerprint:
        fingerprint_and_signature."""
        return fingerprint_and_signature(text, self._settings.config)[1]

    def rebuild(
        self,
        source: Iterable[tuple[str, str]] | None = None,
        *,
        fingerprints: Iterable[Item] | None = None,
        k: int | None = None,
        blocks: int | None = None,
        config: FingerprintConfig | Mapping[str, Any] | None = None,
        threshold: float | None = None,
        batch_size: int = 10_000,
        overlaps: bool | None = None,
    ) -> int:
        """Re-lay the index (new k, blocks or threshold), or re-fingerprint it from a source.

        Without a source, the stored fingerprints and signatures are laid out
        anew (a new fingerprint configuration needs the texts). With a
        ``source`` of (key, text) pairs, the index becomes exactly that
        source, fingerprinted (and given signatures) with ``config`` (default: the
        index's own): keys not in it are gone, and a key that comes twice
        keeps its later text; so an index made before signatures gets them.
        ``fingerprints`` instead of a source: (key, fingerprint) or (key,
        fingerprint, signature) items already computed with ``config``.
        ``overlaps``: whether the index keeps passages from now on (default:
        as it does); they are made from the texts, so keeping them needs a
        source (or ``fingerprints`` of (key, fingerprint, signature, text)
        items), unless the index keeps them already and is only laid out
        anew.

        All of it is one write transaction: readers go on seeing the old index
        until it commits, then the new one; writers wait for it (up to their
        timeout, then fail with StorageError: no write is acknowledged and then
        lost); if anything fails, the old index is left as it was, with no
        trace of the attempt. Returns the rows.
        """
        if source is not None and fingerprints is not None:
            raise InvalidArgumentError(
                "give rebuild a source of texts or of fingerprints, not both"
            )
        layout = self.layout
        if k is not None or blocks is not None:
            layout = BlockLayout.for_k(self.k if k is None else k, blocks)
        wanted = as_config(config) or self.config
        if source is None and fingerprints is None and wanted != self.config:
            raise InvalidArgumentError(
                "a new fingerprint configuration needs the texts: give rebuild a source"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be at least 1, not {batch_size!r}")
        at = self.threshold if threshold is None else check_threshold(threshold)
        if overlaps is not None and not isinstance(overlaps, bool):
            raise InvalidArgumentError(f"overlaps is True, False or None, not {overlaps!r}")
        keeps = self.passages if overlaps is None else overlaps
        # Passages made anew from the texts: a source, or (key, fingerprint,
        # signature, text) items; laid out anew, the index keeps its own.
        anew = keeps and (source is not None or fingerprints is not None)
        if keeps and not anew and not self.passages:
            raise InvalidArgumentError(
                "passages (overlaps) are made from the texts: give rebuild a source"
            )
        if source is not None:
            made = _marked(source, wanted)
            fingerprints = made if keeps else (item[:3] for item in made)
        settings = storage.Settings(
            layout=layout,
            config=wanted,
            created_by=self._settings.created_by,
            distance=self.k if k is None else k,
            threshold=at,
            passages=keeps,
        )
        with self._lock:
            # One transaction: readers go on seeing the old index until it
            # commits; writers wait for it (up to their timeout); a failure
            # rolls everything back, staging table included.
            with self._views.writing(alone=True, fresh=False) as (write, view):
                conn = write.conn
                passages = self._views.passages
                if anew or not keeps:
                    passages.clear(conn, keep_stamp=False)
                if anew:
                    passages.made_now(conn)
                if fingerprints is not None:
                    storage.start_staging(conn)
                    items = iter(fingerprints)
                    read = 0
                    while batch := list(islice(items, batch_size)):
                        keys, values, signatures, texts = _columns(batch, read + 1)
                        keys, fps, sigs = checked_chunk(keys, values, signatures)
                        storage.stage(conn, keys, fps, sigs)
                        if anew:
                            passages.put(
                                conn, keys, partial.made(texts, wanted, read + 1), keep=False
                            )
                        read += len(batch)
                # (swap_in rewrites simindex_meta: the count restarts with this write)
                rows = storage.swap_in(conn, settings, from_staging=fingerprints is not None)
                view.store.snapshots.drop(conn)  # (of the old table: stale from now on)
                if anew:  # the last statement before the write counts itself
                    passages.end(conn, None)
            self._views.adopt(settings)
        return rows

    # --- writing ----------------------------------------------------------

    def add(self, key: str, text: str) -> int:
        """Fingerprint a text and store it under key (replacing what key had).

        Returns the fingerprint. Raises EmptyTextError for a text with no words.
        """
        check_key(key)
        fingerprint, signature = _fingerprinted(key, text, self._settings.config)
        self.add_fingerprints([(key, fingerprint, signature, text)])
        return fingerprint

    def add_fingerprint(self, key: str, fingerprint: int, signature: bytes | None = None) -> None:
        """Store a fingerprint computed elsewhere (an int in [0, 2**64)). With
        no ``signature`` (see ``signature()``), queries match the document by
        distance alone."""
        self.add_fingerprints([(key, fingerprint, signature)])

    def add_many(
        self,
        items: Iterable[tuple[str, str]] | Any,
        *,
        batch_size: int | None = None,
        skip_existing: bool = False,
        skip_empty: bool = False,
        key_field: str | None = None,
        text_field: str = "text",
    ) -> int:
        """Add (key, text) pairs (or a table's rows: simindex.ingest.as_pairs, by
        ``key_field`` and ``text_field``); the input is consumed as a stream (bounded memory).

        By default in one transaction: all of them, or none on error. With
        ``batch_size``, every batch of that many pairs is committed on its own,
        so an import that stops half-way keeps the batches before it, and can
        be resumed with ``skip_existing=True``, which leaves keys that are
        already stored as they are. When a key comes twice, the later text
        wins (the first, with skip_existing). Returns the number of documents
        written: every pair read, or with skip_existing only the new keys.

        A text with no words raises EmptyTextError naming its key (``.key``),
        and the transaction it is in writes nothing; ``skip_empty=True``
        leaves such texts out instead (not counted as written).
        """
        config = self._settings.config
        from simindex import ingest

        items = ingest.as_pairs(items, key_field=key_field, text_field=text_field)

        made: Iterable[Item] = _marked(
            items,
            config,
            skip_empty=skip_empty,
            batch_size=batch_size if isinstance(batch_size, int) and batch_size > 0 else None,
        )
        if not self.passages:  # (the texts are not held)
            made = (item[:3] for item in made)
        return self.add_fingerprints(
            made,
            batch_size=batch_size,
            skip_existing=skip_existing,
        )

    def add_fingerprints(
        self,
        items: Iterable[Item],
        *,
        batch_size: int | None = None,
        skip_existing: bool = False,
    ) -> int:
        """Add (key, fingerprint) pairs, or (key, fingerprint, signature)
        triples, like add_many (without a signature, queries match a document
        by distance alone). An index that keeps passages (``overlaps``) makes
        them from the texts: it takes (key, fingerprint, signature, text)
        items (the fingerprint and signature made with its configuration)
        and refuses the others with InvalidArgumentError.

        A large load (more rows than the index holds) sets the block indexes
        aside and rebuilds them at the end, in the same transaction: readers
        keep seeing the old index until it commits.
        """
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise InvalidArgumentError(f"batch_size must be at least 1, not {batch_size!r}")
        chunk_size = min(_BATCH, batch_size or _BATCH)

        def chunks(
            source: Iterator[Item],
            limit: int | None,
            listed: list[str] | None,
            view: View,
            passages: list[tuple[list[str], list[np.ndarray]]],
        ) -> Iterator[storage.Chunk]:
            read = 0  # items taken so far: at most `limit`, this transaction's
            while taken := list(
                islice(source, chunk_size if limit is None else min(chunk_size, limit - read))
            ):
                keys, fps, sigs, texts = _columns(taken, read + 1)
                chunk = checked_chunk(keys, fps, sigs)
                if view.settings.passages:  # (stored with the rows: below)
                    passages.append((keys, partial.made(texts, view.settings.config, read + 1)))
                yield chunk
                if listed is not None and len(listed) <= accelerator.APPLIED_MAX:  # bounded
                    listed += chunk[0]
                read += len(taken)
                if read == limit:
                    return

        source = iter(items)
        written = 0
        while True:
            # The keys written, for a held snapshot (see Accelerator.committed).
            held = self._accel.wants_rows
            keys: list[str] | None = [] if held else None
            with self._views.writing() as (write, view):
                # The chunks' passages (an index that keeps them), stored in
                # the same transaction as each chunk is read, or after all of
                # them where its rows may go through one COPY, which a
                # statement between would interrupt (PostgreSQL).
                found: list[tuple[list[str], list[np.ndarray]]] = []
                stream = chunks(source, batch_size, keys, view, found)
                if not view.store.caps.bulk_copy:
                    stream = _storing(stream, found, self._views.passages, write, skip_existing)
                rows: list[tuple[int, int]] = []
                count, stored = view.store.put_stream(
                    write, stream, keep=skip_existing, returned=rows if held else None
                )
                _store_passages(found, self._views.passages, write, skip_existing)
                if keys is not None:
                    if len(rows) == count:  # put returned every row it wrote
                        write.rows = rows
                    elif (
                        len(keys) <= accelerator.APPLIED_MAX
                    ):  # else too many to apply: the snapshot goes
                        write.rows = view.store.rows_by_key(write.conn, keys)
            if count >= storage.FAST_LOAD_MIN:
                view.store.tidy_after_load()
            written += stored
            if batch_size is None or count < batch_size:
                return written

    def remove(self, key: str) -> bool:
        """Remove a key; True if it was there."""
        return self.remove_many([key]) > 0

    def remove_many(self, keys: Iterable[str]) -> int:
        """Remove keys in one transaction; returns how many were there."""
        unique = list(dict.fromkeys(check_key(k) for k in keys))
        with self._views.writing() as (write, view):
            removed = view.store.remove(write.conn, unique)
            if view.settings.passages:
                self._views.passages.remove(write.conn, unique)
            write.rows = []  # removed rows stay in a held snapshot: their ids find no row
        return removed

    # --- asking -----------------------------------------------------------

    def query(
        self,
        text_or_fingerprint: str | int,
        *,
        k: int | None = None,
        limit: int | None = None,
        threshold: float | None = None,
    ) -> list[Match]:
        """The stored documents that are near-duplicates of a text or a fingerprint.

        A near-duplicate is within distance k (default: the index's k) and,
        where the query is a text and the stored document has a signature,
        at least ``threshold`` similar by their signatures (default: the
        index's threshold, 0.78 for a new index; 0: distance alone, as a query
        by fingerprint always is; two longer texts of CJK characters need
        the lower signature.characters_threshold of it: signature.threshold_for).
        ``Match.similarity`` gives the estimate.
        A verified text query also finds, at any distance, the stored texts
        its signature's keys meet (signature.meets: a short text one unit
        away, a longer one with a band of its sketch equal), verified alike.
        Sorted by distance, then key; at most ``limit`` of them. A k above
        the index's is answered exactly too: by
        probing the block indexes with every value within a few bits of the
        query's where that takes at most 1,024 lookups (k up to 11 with k = 3's
        four blocks, see blocks.probe_radius), else by reading every
        row, which says so with a FullScanWarning.

        Once probed queries (a k above the layout's, such as the default 8)
        have spent in the database about what reading the whole index would
        cost (~1 us a fingerprint), the index reads its fingerprints and
        signatures into memory (~70 bytes each, ~135 with signatures, ~215
        once text queries ask for their band keys;
        indexes of up to 20M; see ``hold``) and answers those from there,
        with its own writes applied, until anyone else writes to it: the same
        answers, several times sooner (on PostgreSQL from schema revision
        0003, docs/storage.md).
        """
        if k is not None:
            check_k(k)
        if limit is not None:
            check_limit(limit)
        if threshold is not None:
            check_threshold(threshold)
        matches = self._reader.query(text_or_fingerprint, k, threshold)
        return matches[:limit] if limit is not None else matches

    def query_many(
        self,
        queries: Iterable[str | int],
        *,
        k: int | None = None,
        limit: int | None = None,
        threshold: float | None = None,
    ) -> list[list[Match]]:
        """Answer many queries in one pass: one list of matches per query, in order.

        A batch that is large beside the index (or a k above the index's,
        up to 15) reads the index's fingerprints once, in one snapshot, and
        matches the whole batch in memory; a small batch uses the block
        indexes query by query. Both give exactly what ``query`` gives.
        """
        queries = list(queries)
        if k is not None:
            check_k(k)
        check_limit(limit)
        if threshold is not None:
            check_threshold(threshold)
        if not queries:
            return []
        results = self._reader.query_many(queries, k, threshold)
        return [r[:limit] for r in results] if limit is not None else results

    def overlaps(
        self, text: str, *, threshold: float = partial.DEFAULT_THRESHOLD, limit: int | None = None
    ) -> list[Overlap]:
        """The stored documents that share passages with a text: the text
        inside one of them, or one of them inside the text.

        For each, ``Overlap(key, query_share, stored_share)``: the share of
        the text's passages found in the document and the share of the
        document's found in the text (0 to 1; passages are the winnowed
        hashes of five-word shingles, eight characters in Chinese: see
        simindex.passages). A document is returned when either share reaches
        ``threshold``; sorted by the larger share, then key; at most
        ``limit``. Needs an index that keeps passages (``overlaps=True``,
        else PassagesNotKeptError) whose rows no other program has written
        since (else StalePassagesError: rebuild it from its texts). Raises
        EmptyTextError for a text with no words.
        """
        check_threshold(threshold)
        check_limit(limit)
        return partial.find(self._views, text, float(threshold), limit)

    # --- reading ----------------------------------------------------------

    def get(self, key: str) -> int | None:
        """The fingerprint stored under key, or None."""
        check_key(key)
        with self._lock:
            value = self._store.fetch(key)
        return None if value is None else value & ((1 << 64) - 1)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(key) and self.get(key) is not None

    def __len__(self) -> int:
        with self._lock, self._backend.reading() as conn:
            return self._store.size(conn)

    def items(self) -> Iterator[tuple[str, int]]:
        """Every (key, fingerprint), in no particular order, read in one snapshot."""
        with self._lock, self._backend.reading() as conn:
            rows = [(key, value) for _, key, value, _ in self._store.everything(conn)]
        for key, value in rows:
            yield key, value & ((1 << 64) - 1)

    def _pairs(
        self, k: int | None, threshold: float | None
    ) -> tuple[list[tuple[int, int, int, float | None]], dict[int, str]]:
        if k is not None:
            check_k(k, limit=MAX_INDEX_K)
        if threshold is not None:
            check_threshold(threshold)
        return self._reader.pairs(k, threshold)

    def duplicates(self, k: int | None = None, *, threshold: float | None = None) -> list[Pair]:
        """Every pair of stored near-duplicates: within distance k (default: the
        index's k), or, threshold above 0, whose signatures' keys meet
        (signature.meets, at any distance), and, where both have a
        signature, at least ``threshold`` similar (default: the index's; 0:
        distance alone; two longer texts of CJK characters: the lower
        threshold signature.threshold_for gives them).

        Reads the fingerprints in one snapshot and pairs them in memory (see
        pairs.pairs_within), and the rows with a signature, paired by their keys:
        exact for any k from 0 to 15. Sorted by distance, then keys.
        """
        found, keys = self._pairs(k, threshold)
        pairs = []
        for a, b, dist, estimate in found:
            ka, kb = sorted((keys[a], keys[b]))
            pairs.append(Pair(ka, kb, dist, estimate))
        pairs.sort(key=lambda p: (p.distance, p.key_a, p.key_b))
        return pairs

    def clusters(self, k: int | None = None, *, threshold: float | None = None) -> list[Cluster]:
        """Groups of near-duplicates (pairs as ``duplicates`` gives them), none
        chained: each document, in the order they were added, joins the
        cluster of the first canonical document it is a near-duplicate of,
        else starts its own; so every member is a near-duplicate of its
        cluster's canonical member (the one added first; replacing a key's
        text keeps its place). Clusters of one are left out. Clusters come
        largest first, then by canonical key.
        """
        found, keys = self._pairs(k, threshold)
        from simindex.pairs import leader_clusters

        groups = leader_clusters([(a, b) for a, b, _, _ in found])
        distance = {(a, b): d for a, b, d, _ in found}
        out = []
        for group in groups:
            canonical = group[0]
            members = [(keys[canonical], 0)]
            members += sorted(
                ((keys[i], distance[canonical, i]) for i in group[1:]), key=lambda m: (m[1], m[0])
            )
            out.append(Cluster(keys[canonical], members))
        out.sort(key=lambda c: (-len(c.members), c.canonical))
        return out

    # --- looking after it ------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Facts about the index, for people and scripts (see upkeep.stats)."""
        from simindex import upkeep

        return upkeep.stats(self._views)

    def check(self, *, repair: bool = False) -> CheckReport:
        """Look for damage: the database's integrity check, the schema against
        the stored layout and revision, and every row's block columns against
        its fingerprint. With ``repair``, fix what can be fixed safely
        (recompute block columns, recreate missing lookup indexes) in one
        transaction."""
        from simindex import upkeep

        return upkeep.check(self._views, repair=repair)

    def compact(self) -> dict[str, int]:
        """Reclaim free space (VACUUM) and fold the WAL into the file; returns the
        file's size before and after (bytes, WAL included)."""
        from simindex import upkeep

        return upkeep.compact(self._views)

    # --- closing ----------------------------------------------------------

    def close(self) -> None:
        """Release the database connections. The index stays on disk. Every
        later use raises ClosedIndexError; closing again does nothing."""
        with self._lock:
            if isinstance(self._views, _Closed):
                return
            views, backend = self._views, self._backend
            closed = cast(Any, _Closed(self.location, views.current.settings))
            self._views, self._backend, self._reader, self._accel = closed, closed, closed, closed
        views.close()
        backend.dispose()

    def __enter__(self) -> SimIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- explaining -------------------------------------------------------

    def explain(
        self,
        a: str | int | None = None,
        b: str | int | None = None,
        *,
        key_a: str | None = None,
        key_b: str | None = None,
        k: int | None = None,
        top: int = 10,
        threshold: float | None = None,
    ) -> Explanation:
        """Why two texts are, or are not, near-duplicates in this index.

        They are fingerprinted with the index's configuration and compared
        block by block through its layout, for distance k (default: the
        index's own), then by their verification signatures at ``threshold``
        (default: the index's); see simindex.explain. A fingerprint gives the
        distance, blocks and tables only; ``key_a`` / ``key_b`` for a stored
        document, those and the similarity of its stored signature: texts are
        not stored, so their features are unknown.
        """
        sides: list[str | int] = []
        signatures: list[bytes | None] = []
        for name, value, key in (("a", a, key_a), ("b", b, key_b)):
            if (value is None) == (key is None):
                raise InvalidArgumentError(f"give {name} or key_{name} (one of them)")
            if key is not None:
                check_key(key)
                with self._lock:
                    row = self._store.fetch_row(key)
                if row is None:
                    raise InvalidArgumentError(f"no document is stored under key {key!r}")
                sides.append(row[0] & ((1 << 64) - 1))
                signatures.append(row[1])
            else:
                assert value is not None
                sides.append(value)
                signatures.append(None)
        with self._lock:
            settings = self._views.refresh().settings
        from simindex.explain import explain

        return explain(
            *sides,
            k=settings.k if k is None else k,  # the index's k, which queries use (not the layout's)
            layout=settings.layout,
            config=settings.config,
            top=top,
            threshold=settings.threshold if threshold is None else threshold,
            signatures=(signatures[0], signatures[1]),
            set_keys=settings.marking,
        )


def _marked(
    pairs: Iterable[tuple[str, str]],
    config: FingerprintConfig,
    *,
    skip_empty: bool = False,
    batch_size: int | None = None,
) -> Iterator[tuple[str, int, bytes, str]]:
    """(key, fingerprint, signature, text) of each (key, text), the texts
    fingerprinted a chunk at a time in this process (ingest.fingerprint_docs:
    an error comes after the pairs before it), a chunk no larger than a
    ``batch_size`` (a batch is written once its last text is read, not a
    chunk later); a text with no words is an EmptyTextError that names its
    key, or left out with ``skip_empty``."""
    from simindex import ingest

    docs = (ingest.Doc(key, text, "", 0) for key, text in pairs)
    chunk = min(256, batch_size or 256)
    marked = ingest.fingerprint_docs(docs, config, workers=1, chunk_size=chunk, ahead=False)
    for doc, fingerprint, signature in marked:
        if fingerprint is None or signature is None:
            if skip_empty:
                continue
            raise _empty(doc.key)
        yield doc.key, fingerprint, signature, doc.text


def _empty(key: str) -> EmptyTextError:
    return EmptyTextError(
        f"the text of {key!r} has no word features (it is empty or only punctuation)", key=key
    )


def _fingerprinted(key: str, text: str, config: FingerprintConfig) -> tuple[int, bytes]:
    """A document's fingerprint and signature; a text with no words is an
    EmptyTextError that names its key."""
    try:
        return fingerprint_and_signature(text, config)
    except EmptyTextError as exc:
        raise _empty(key) from exc


class _Closed:
    """What a closed SimIndex holds in place of its views, backend, reader
    and accelerator: every use of them raises ClosedIndexError. The
    settings it was opened with stay (k, config, layout: a closed file
    still has its name and mode)."""

    def __init__(self, location: str, settings: storage.Settings) -> None:
        self._location = location
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        raise ClosedIndexError(self._location)


def _store_passages(
    found: list[tuple[list[str], list[np.ndarray]]],
    passages: storage.Passages,
    write: storage.Write,
    keep: bool,
) -> None:
    """Store the passages made so far (emptying ``found``)."""
    while found:
        keys, hashes = found.pop(0)
        passages.put(write.conn, keys, hashes, keep=keep)


def _storing(
    chunks: Iterator[storage.Chunk],
    found: list[tuple[list[str], list[np.ndarray]]],
    passages: storage.Passages,
    write: storage.Write,
    keep: bool,
) -> Iterator[storage.Chunk]:
    """The chunks, each one's passages stored as it is read (memory bounded by a chunk)."""
    for chunk in chunks:
        _store_passages(found, passages, write, keep)
        yield chunk


def _columns(
    batch: list[Item], first: int
) -> tuple[list[str], list[int], list[bytes | None], list[str | None]]:
    """A batch of items (the first of them item number `first`) as keys,
    fingerprints, signatures and texts (None where an item has none)."""
    for number, item in enumerate(batch, first):
        if not 2 <= len(item) <= 4:
            raise InvalidArgumentError(
                f"item {number} is not (key, fingerprint), (key, fingerprint, "
                f"signature) or (key, fingerprint, signature, text): {item!r:.80}"
            )
    sigs = [i[2] if len(i) > 2 else None for i in batch]
    texts = [i[3] if len(i) > 3 else None for i in batch]
    return [i[0] for i in batch], [i[1] for i in batch], sigs, texts
