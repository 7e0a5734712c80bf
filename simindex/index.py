"""SimIndex: the facade over fingerprints, blocks and storage."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from types import TracebackType
from typing import Any

import numpy as np
from sqlalchemy import URL, Connection

from simindex import accelerator, storage
from simindex.accelerator import Accelerator, Stamp
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, BlockLayout, check_k
from simindex.errors import (
    InvalidArgumentError,
    NotAnIndexError,
    StorageError,
)
from simindex.explain import Explanation, explain
from simindex.fingerprint import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    check_fingerprint,
    simhash,
)
from simindex.matching import near, within, within_each
from simindex.planner import Way, plan_batch, plan_query
from simindex.query import Snapshot, clusters_from_pairs, pairs_within
from simindex.results import Cluster, FullScanWarning, Match, Pair
from simindex.upkeep import Upkeep
from simindex.validate import as_config, check_key, check_limit, checked_chunk

_BATCH = 5000  # rows per write in add_many / add_fingerprints
_ONE_BY_ONE = 16  # batches up to this size are matched query by query in memory


class SimIndex(Upkeep):
    """A persistent near-duplicate index of texts, by 64-bit Simhash.

    ``SimIndex(location)`` opens the index at a file path, ``":memory:"`` or an
    SQLAlchemy URL, creating it when there is none (unless ``create=False``).
    ``k`` is the Hamming distance queries use by default (8: about 90% of
    lightly edited copies found, see the README's Quality section for what
    each k finds), ``blocks`` the number of
    blocks (default: k + 1 up to k = 3, above it the cheapest probed layout,
    see blocks.default_blocks; more blocks mean more database indexes and
    fewer false candidates per query, k or fewer are looked up with probes,
    see ``simindex advise``), ``config`` the fingerprint configuration. All are
    chosen at creation and stored in the index: opening an existing index
    without them uses its own, and asking for different ones raises
    ConfigMismatchError. ``with SimIndex(...) as index:`` closes it at the end.

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

    One SimIndex may be shared between threads.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | URL = ":memory:",
        *,
        k: int | None = None,
        blocks: int | None = None,
        config: FingerprintConfig | Mapping[str, Any] | None = None,
        create: bool = True,
        readonly: bool = False,
        timeout: float = storage.BUSY_TIMEOUT_S,
        hold: bool | None = None,
    ) -> None:
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
        self._where = storage.locate(location)
        storage.check_file(self._where, create=create and not readonly)
        # A file or folder this process may not write: read-only, by itself.
        access = storage.file_access(self._where)
        self.readonly = readonly = self.readonly or access.readonly
        self._backend = storage.open_backend(
            self._where, timeout=self._timeout, readonly=readonly, immutable=access.immutable
        )
        # An in-memory database is one connection: its users take turns.
        self._lock: Any = (
            threading.RLock() if self._backend.shared_connection else contextlib.nullcontext()
        )
        try:
            new = storage.Settings(  # what a new index gets
                layout=wanted_layout or BlockLayout.for_k(DEFAULT_K),
                config=wanted or DEFAULT_CONFIG,
                created_by=f"simindex {storage.package_version()}",
                distance=DEFAULT_K if k is None else k,
            )
            settings = storage.open_settings(
                self._backend,
                new,
                may_create=create and not readonly,
                k=k,
                blocks=blocks,
                config=wanted,
            )
            if not readonly:
                self._backend.use_wal()
        except BaseException:
            self._backend.dispose()
            raise
        self._accel = Accelerator(hold)  # shared by this object's threads
        self._adopt(settings, None)
        self._store.valid_for = self._store.schema_version()

    # --- about the index --------------------------------------------------

    @property
    def k(self) -> int:
        """The largest distance answered through the block indexes."""
        return self._settings.k

    @property
    def config(self) -> FingerprintConfig:
        """The fingerprint configuration every add and query on this index uses."""
        return self._settings.config

    @property
    def layout(self) -> BlockLayout:
        return self._settings.layout

    @property
    def location(self) -> str:
        """The file path, ":memory:" or the URL (password hidden)."""
        return str(self._where)

    def __repr__(self) -> str:
        return f"SimIndex({self.location!r}, k={self.k})"

    def fingerprint(self, text: str) -> int:
        """The fingerprint this index gives a text (with its own configuration)."""
        return simhash(text, self._settings.config)

    # --- noticing a rebuild made elsewhere ----------------------------------

    @property
    def _settings(self) -> storage.Settings:
        return self._state[0]

    @property
    def _store(self) -> storage.Store:
        return self._state[1]

    def _changed(self, version: int | None, used: storage.Store | None = None) -> bool:
        """After a read under schema cookie `version` through the Store `used`
        (default: the current one): adopt the file's settings if a rebuild
        elsewhere changed them. True if the read must be done again."""
        used = used or self._store
        if version is None or version == used.valid_for:
            return False
        with self._backend.reading() as conn:
            found = storage.read_settings(conn, self._where)
            cookie = self._backend.schema_version(conn)
        if found is None:
            raise NotAnIndexError(f"{self._where} is no longer an index")
        settings, current = self._state
        if found[0] != settings:
            self._adopt(found[0], cookie)
            return True
        current.valid_for = cookie  # the same layout: only the schema cookie moved
        return used is not current  # read through a Store another thread replaced

    def _refresh(self) -> bool:
        """Adopt the file's settings if a rebuild elsewhere changed them."""
        return self._changed(self._store.schema_version())

    def _adopt(self, settings: storage.Settings, cookie: int | None) -> None:
        # One assignment, so a thread reads a settings and Store that belong
        # together. The old Store is not closed here: another thread may be
        # reading through it this moment; its connections close when it goes.
        fresh = storage.Store(self._backend, settings.layout)
        fresh.valid_for = cookie
        self._state = (settings, fresh)
        self._accel.drop()  # held under the old layout

    def _fresh_in(self, conn: Connection) -> None:
        """Inside a write transaction: make sure the settings are the file's."""
        self._changed(self._backend.schema_version(conn))

    @contextlib.contextmanager
    def _writing(self, *, alone: bool = False, fresh: bool = True) -> Iterator[storage.Write]:
        """Every write transaction of this index goes through here: it holds the
        write lock from its start (``alone``: on PostgreSQL, no other writer
        either), adopts a rebuild made elsewhere first (``fresh``), counts the
        write as its last statement (SQLite; see storage.Backend.write), and
        once it has committed tells the accelerator what it wrote (``rows``)."""
        with self._lock:
            with self._backend.write(alone=alone) as write:
                if fresh:
                    self._fresh_in(write.conn)  # a rebuild elsewhere may have changed the layout
                yield write
            self._accel.committed(write.writes, write.rows)

    def rebuild(
        self,
        source: Iterable[tuple[str, str]] | None = None,
        *,
        fingerprints: Iterable[tuple[str, int]] | None = None,
        k: int | None = None,
        blocks: int | None = None,
        config: FingerprintConfig | Mapping[str, Any] | None = None,
        batch_size: int = 10_000,
    ) -> int:
        """Re-lay the index (new k or blocks), or re-fingerprint it from a source.

        Without a source, the stored fingerprints are laid out anew (a new
        fingerprint configuration needs the texts). With a ``source`` of (key,
        text) pairs, the index becomes exactly that source, fingerprinted with
        ``config`` (default: the index's own): keys not in it are gone, and a
        key that comes twice keeps its later text. ``fingerprints`` instead of
        a source: (key, fingerprint) pairs already computed with ``config``.

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
        if source is not None:
            fingerprints = ((key, simhash(text, wanted)) for key, text in source)
        settings = storage.Settings(
            layout=layout,
            config=wanted,
            created_by=self._settings.created_by,
            distance=self.k if k is None else k,
        )
        with self._lock:
            # One transaction: readers go on seeing the old index until it
            # commits; writers wait for it (up to their timeout); a failure
            # rolls everything back, staging table included.
            with self._writing(alone=True, fresh=False) as write:
                conn = write.conn
                if fingerprints is not None:
                    storage.start_staging(conn)
                    items = iter(fingerprints)
                    while batch := list(islice(items, batch_size)):
                        keys, fps = checked_chunk(
                            [key for key, _ in batch], [fp for _, fp in batch]
                        )
                        storage.stage(conn, keys, fps)
                # (swap_in rewrites simindex_meta: the count restarts with this write)
                rows = storage.swap_in(conn, settings, from_staging=fingerprints is not None)
            self._adopt(settings, None)
            self._store.valid_for = self._store.schema_version()
        return rows

    # --- writing ----------------------------------------------------------

    def add(self, key: str, text: str) -> int:
        """Fingerprint a text and store it under key (replacing what key had).

        Returns the fingerprint. Raises EmptyTextError for a text with no words.
        """
        check_key(key)
        fingerprint = self.fingerprint(text)
        self.add_fingerprint(key, fingerprint)
        return fingerprint

    def add_fingerprint(self, key: str, fingerprint: int) -> None:
        """Store a fingerprint computed elsewhere (an int in [0, 2**64))."""
        self.add_fingerprints([(key, fingerprint)])

    def add_many(
        self,
        items: Iterable[tuple[str, str]],
        *,
        batch_size: int | None = None,
        skip_existing: bool = False,
    ) -> int:
        """Add (key, text) pairs; the input is consumed as a stream (bounded memory).

        By default in one transaction: all of them, or none on error. With
        ``batch_size``, every batch of that many pairs is committed on its own,
        so an import that stops half-way keeps the batches before it, and can
        be resumed with ``skip_existing=True``, which leaves keys that are
        already stored as they are. When a key comes twice, the later text
        wins (the first, with skip_existing). Returns the number of documents
        written: every pair read, or with skip_existing only the new keys.
        """
        return self.add_fingerprints(
            ((key, self.fingerprint(text)) for key, text in items),
            batch_size=batch_size,
            skip_existing=skip_existing,
        )

    def add_fingerprints(
        self,
        items: Iterable[tuple[str, int]],
        *,
        batch_size: int | None = None,
        skip_existing: bool = False,
    ) -> int:
        """Add (key, fingerprint) pairs, like add_many.

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
            source: Iterator[tuple[str, int]], limit: int | None, listed: list[str] | None
        ) -> Iterator[tuple[list[str], np.ndarray]]:
            keys: list[str] = []
            fps: list[int] = []
            for taken, (key, fingerprint) in enumerate(source, 1):
                keys.append(key)
                fps.append(fingerprint)
                if len(keys) >= chunk_size or taken == limit:
                    yield checked_chunk(keys, fps)
                    if listed is not None and len(listed) <= accelerator.APPLIED_MAX:  # bounded
                        listed += keys
                    keys, fps = [], []
                    if taken == limit:
                        return
            if keys:
                yield checked_chunk(keys, fps)
                if listed is not None and len(listed) <= accelerator.APPLIED_MAX:
                    listed += keys

        source = iter(items)
        written = 0
        while True:
            # The keys written, for a held snapshot (see Accelerator.committed).
            held = self._accel.wants_rows
            keys: list[str] | None = [] if held else None
            with self._writing() as write:
                rows: list[tuple[int, int]] = []
                count, stored = self._store.put_stream(
                    write.conn,
                    chunks(source, batch_size, keys),
                    keep=skip_existing,
                    returned=rows if held else None,
                )
                if keys is not None:
                    if len(rows) == count:  # put returned every row it wrote
                        write.rows = rows
                    elif (
                        len(keys) <= accelerator.APPLIED_MAX
                    ):  # else too many to apply: the snapshot goes
                        write.rows = self._store.rows_by_key(write.conn, keys)
            if count >= storage.FAST_LOAD_MIN:
                self._store.tidy_after_load()
            written += stored
            if batch_size is None or count < batch_size:
                return written

    def remove(self, key: str) -> bool:
        """Remove a key; True if it was there."""
        return self.remove_many([key]) > 0

    def remove_many(self, keys: Iterable[str]) -> int:
        """Remove keys in one transaction; returns how many were there."""
        unique = list(dict.fromkeys(check_key(k) for k in keys))
        with self._writing() as write:
            removed = self._store.remove(write.conn, unique)
            write.rows = []  # removed rows stay in a held snapshot: their ids find no row
        return removed

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
            rows = [(key, value) for _, key, value in self._store.everything(conn)]
        for key, value in rows:
            yield key, value & ((1 << 64) - 1)

    @staticmethod
    def _as_fingerprint(query: str | int, config: FingerprintConfig) -> int:
        return simhash(query, config) if isinstance(query, str) else check_fingerprint(query)

    def query(
        self, text_or_fingerprint: str | int, *, k: int | None = None, limit: int | None = None
    ) -> list[Match]:
        """The stored documents within distance k of a text or a fingerprint.

        Sorted by distance, then key; at most ``limit`` of them. ``k`` defaults
        to the index's own. A k above the index's is answered exactly too: by
        probing the block indexes with every value within a few bits of the
        query's where that takes at most 1,024 lookups (k up to 11 with k = 3's
        four blocks, see blocks.probe_radius), else by reading every
        row, which says so with a FullScanWarning.

        On SQLite, once a thread's probed queries (a k above the layout's,
        such as the default 8) have spent in the database about what reading
        the whole index would cost (~1 us a fingerprint), the index reads its
        fingerprints into memory (~70 bytes each, indexes of up to 20M; see
        ``hold``) and answers those from there, with the thread's own writes
        applied, until anyone else writes to it: the same answers, several
        times sooner.
        """
        if k is not None:
            check_k(k)
        if limit is not None:
            check_limit(limit)
        with self._lock:
            matches = None
            while matches is None:  # None: rebuilt meanwhile, ask the new index
                matches = self._query_once(text_or_fingerprint, k)
        return matches[:limit] if limit is not None else matches

    def _query_once(self, text_or_fingerprint: str | int, k: int | None) -> list[Match] | None:
        settings, used = self._state  # a pair that belongs together
        fingerprint = self._as_fingerprint(text_or_fingerprint, settings.config)
        distance = settings.k if k is None else k
        probed = distance > settings.layout.k
        # Exact lookups (k up to the layout's) cost a few seeks: always the
        # database. Probes cost hundreds: memory, once that pays (_spent).
        held = self._held(distance) if probed else None
        way = plan_query(
            settings.layout,
            distance,
            held=held is not None and self._state[1] is used,
            can_probe=not probed or used.can_probe(distance),
        )
        if way is Way.HELD:
            assert held is not None
            return self._match_in_memory([fingerprint], distance, held)[0]
        started = time.perf_counter()
        if way is Way.LOOKUP:
            try:
                matches, version = self._lookup(used, fingerprint, distance)
            except StorageError:  # e.g. "no such column": the layout changed under it
                if not self._changed(self._store.schema_version(), used):
                    raise
                return None
            if self._changed(version, used):
                return None
        else:
            warnings.warn(
                f"k={distance} is past what the index's block lookups answer: every "
                f"fingerprint was compared (exact, but a full scan)",
                FullScanWarning,
                stacklevel=3,
            )
            with self._backend.reading() as conn:
                matches = within(self._store.everything(conn), fingerprint, distance)
        if probed:
            self._spent(time.perf_counter() - started)
        return matches

    @staticmethod
    def _lookup(used: storage.Store, fingerprint: int, k: int) -> tuple[list[Match], int | None]:
        """The matches through the block indexes of `used`, and the schema
        cookie they were read under (see Store.lookup)."""
        if k <= used.layout.k and used.matches_on_server:
            found, version = used.lookup_matches(fingerprint, k)
            return within(found, fingerprint, k), version
        if k <= used.layout.k:
            rows, version = used.lookup(fingerprint)
        else:  # probed: every value within a few bits of the query's, per table
            probed = used.probe_lookup(fingerprint, k)
            assert probed is not None  # the caller asked can_probe
            rows, version = probed
        ids = near(rows, fingerprint, k)
        if not ids:
            return [], version
        # The keys come from a second read: recheck the distance on what it
        # returns, in case a writer replaced a row in between.
        return within(used.rows_by_id(ids), fingerprint, k), version

    def query_many(
        self,
        queries: Iterable[str | int],
        *,
        k: int | None = None,
        limit: int | None = None,
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
        if not queries:
            return []
        with self._lock:
            results = None
            while results is None:  # None: rebuilt meanwhile, ask the new index
                results = self._query_many_once(queries, k)
        return [r[:limit] for r in results] if limit is not None else results

    def _query_many_once(self, queries: list[str | int], k: int | None) -> list[list[Match]] | None:
        self._refresh()
        settings, used = self._state
        fps = [self._as_fingerprint(q, settings.config) for q in queries]
        distance = settings.k if k is None else k
        probed = distance > settings.layout.k
        held = self._held(distance) if probed and self._state[1] is used else None
        way = plan_batch(
            settings.layout,
            distance,
            len(fps),
            held=held is not None,
            can_probe=not probed or used.can_probe(distance),
            server_join=self._backend.caps.server_join,
            snapshot=self._accel.snapshot is not None,
            size=used.estimated_size,
        )
        if way is Way.HELD:
            assert held is not None
            return self._match_in_memory(fps, distance, held)
        if way is Way.JOIN:
            return self._match_on_server(used, fps, distance)
        if way is Way.READ:
            if distance > MAX_INDEX_K:
                raise InvalidArgumentError(
                    f"query_many answers k up to {MAX_INDEX_K}; ask query() for k={distance}"
                )
            return self._match_in_memory(fps, distance)
        started = time.perf_counter()
        try:
            answers = [self._lookup(used, fp, distance) for fp in fps]
        except StorageError:  # the layout changed under it?
            if not self._changed(self._store.schema_version(), used):
                raise
            return None
        versions = {v for _, v in answers if v is not None}
        if any(self._changed(v, used) for v in versions):
            return None
        if probed:
            self._spent(time.perf_counter() - started)
        return [matches for matches, _ in answers]

    def _held(self, k: int) -> Snapshot | None:
        """The held snapshot, if it is still what the index holds (no write
        since it was read but this object's own, applied) and answers k; else
        None (and a stale one is let go: see Accelerator.current)."""
        if k > MAX_INDEX_K or self._accel.snapshot is None:
            return None
        versions = self._store.versions()  # one read for all three
        if versions is None:
            return None
        if self._changed(versions[1]):  # a rebuild elsewhere: settings adopted, snapshot gone
            return None
        return self._accel.current(versions)

    def _spent(self, seconds: float) -> None:
        """A probed query spent `seconds` in the database: charge the
        accelerator, and read the index into memory when it says so (SQLite
        only: other databases give no cheap way to know nothing changed)."""
        if not self._accel.charge(seconds, self._store.estimated_size):
            return
        if not self._backend.caps.can_hold:  # no data_version: never held
            self._accel.never()
            return
        started = time.perf_counter()
        try:
            snapshot, stamp = self._read_snapshot()
        except BaseException:
            self._accel.failed()
            raise
        self._accel.install(snapshot, stamp, time.perf_counter() - started)

    def _read_snapshot(self) -> tuple[Snapshot, Stamp | None]:
        """The index's fingerprints, read in one snapshot, and the stamp they
        were read under (None where nothing can tell that they are current)."""
        self._refresh()
        versions = self._store.versions()  # before the read: a write between shows later
        with self._backend.reading() as conn:
            ids, fps = self._store.load(conn)
            writes = self._backend.writes_counted(conn)
        stamp = None if versions is None or writes is None else Stamp(versions[0], writes)
        return Snapshot(ids, fps, None), stamp

    def _match_on_server(
        self, used: storage.Store, fps: Sequence[int], k: int
    ) -> list[list[Match]] | None:
        """PostgreSQL: the batch joined with the index by the server, in one
        snapshot; None if a rebuild elsewhere changed the layout meanwhile."""
        with self._backend.reading() as conn:
            self._backend.no_rebuild_meanwhile(conn)  # waits for one that is running
            version = self._backend.schema_version(conn)
            rows = [] if version != used.valid_for else used.join_lookup(conn, fps, k)
        if version != used.valid_for:
            self._changed(version, used)
            return None
        return within_each(((qid, (i, key, f)) for qid, i, key, f in rows), fps, k)

    def _match_in_memory(
        self, fps: Sequence[int], k: int, snapshot: Snapshot | None = None
    ) -> list[list[Match]]:
        if snapshot is None:  # a batch: the held snapshot if current, else read one
            snapshot = self._held(k)
            if snapshot is None:
                started = time.perf_counter()
                snapshot, stamp = self._read_snapshot()
                # Kept for later queries, unless hold=False (then it serves this batch only).
                self._accel.install(snapshot, stamp, time.perf_counter() - started)
        if (
            len(fps) * len(snapshot.added_ids) > 64 * accelerator.ADDED_MAX
        ):  # a batch: merge them first
            merged = snapshot.merged()
            self._accel.replace(snapshot, merged)
            snapshot = merged
        queries = np.array(fps, dtype=np.uint64)
        if len(fps) == 1:  # a single query (the held path): no batch bookkeeping
            ids = snapshot.ids[snapshot.near(fps[0], k)].tolist()
            qs = [0] * len(ids)
            if not ids and not snapshot.added_ids.size:
                return [[]]
        elif len(fps) <= _ONE_BY_ONE:
            found = [snapshot.near(fp, k) for fp in fps]
            q = np.repeat(np.arange(len(fps)), [len(f) for f in found])
            qs, ids = q.tolist(), snapshot.ids[np.concatenate(found)].tolist()
        else:
            q, s, _ = snapshot.match(queries, k)
            qs, ids = q.tolist(), snapshot.ids[s].tolist()
        if snapshot.added_ids.size:  # rows written through this object since the read
            added_q, added_ids = snapshot.added_within(queries, k)
            if added_q.size:  # each (query, id) once: a row written again is held twice
                both = zip(qs + added_q.tolist(), ids + added_ids.tolist(), strict=True)
                pairs = dict.fromkeys(both)
                qs, ids = [qi for qi, _ in pairs], [i for _, i in pairs]
        # Keys for the matches, with their fingerprints rechecked (a writer may
        # have replaced a row since the snapshot).
        rows: dict[int, tuple[int, str, int]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            rows.update((r[0], r) for r in self._store.rows_by_id(unique[start : start + 500]))
        candidates = ((qi, rows[i]) for qi, i in zip(qs, ids, strict=True) if i in rows)
        return within_each(candidates, fps, k)

    def _pairs(self, k: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str]]:
        """Positions (in id order) of every pair within k, their distances, and keys."""
        distance = self.k if k is None else check_k(k, limit=MAX_INDEX_K)
        with self._lock, self._backend.reading() as conn:
            ids, fps = self._store.load(conn)
            order = np.argsort(ids, kind="stable")
            ids, fps = ids[order], fps[order]
            a, b, d = pairs_within(fps, distance)
            keys = self._store.keys_for(conn, np.concatenate([ids[a], ids[b]]).tolist())
        return ids[a], ids[b], d, keys

    def duplicates(self, k: int | None = None) -> list[Pair]:
        """Every pair of stored documents within distance k (default: the index's k).

        Reads the fingerprints in one snapshot and pairs them in memory (see
        query.pairs_within): exact for any k from 0 to 15. Sorted by distance,
        then keys.
        """
        ia, ib, d, keys = self._pairs(k)
        pairs = []
        for a, b, dist in zip(ia.tolist(), ib.tolist(), d.tolist(), strict=True):
            ka, kb = sorted((keys[a], keys[b]))
            pairs.append(Pair(ka, kb, dist))
        pairs.sort(key=lambda p: (p.distance, p.key_a, p.key_b))
        return pairs

    def clusters(self, k: int | None = None) -> list[Cluster]:
        """Groups of near-duplicates: documents linked by chains of pairs within k.

        Single linkage: if A~B and B~C, A, B and C form one cluster even when
        A and C are further apart than k. The canonical member is the one
        added first (replacing a key's text keeps its place). Clusters come
        largest first, then by canonical key.
        """
        ia, ib, _, keys = self._pairs(k)
        fingerprints = dict(self.items()) if len(ia) else {}
        groups = clusters_from_pairs(
            zip(ia.tolist(), ib.tolist(), strict=True), {i: i for i in keys}
        )
        out = []
        for group in groups:
            canonical = keys[group[0]]
            base = fingerprints[canonical]
            members = [(keys[i], (fingerprints[keys[i]] ^ base).bit_count()) for i in group]
            members[1:] = sorted(members[1:], key=lambda m: (m[1], m[0]))
            out.append(Cluster(canonical, members))
        out.sort(key=lambda c: (-len(c.members), c.canonical))
        return out

    # --- closing ----------------------------------------------------------

    def close(self) -> None:
        """Release the database connections. The index stays on disk."""
        self._store.close()
        self._backend.dispose()

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
    ) -> Explanation:
        """Why two texts are, or are not, near-duplicates in this index.

        They are fingerprinted with the index's configuration and compared
        block by block through its layout, for distance k (default: the
        index's own); see simindex.explain. A fingerprint, or ``key_a`` /
        ``key_b`` for a stored document, gives the distance, blocks and
        tables only: texts are not stored, so their features are unknown.
        """
        sides: list[str | int] = []
        for name, value, key in (("a", a, key_a), ("b", b, key_b)):
            if (value is None) == (key is None):
                raise InvalidArgumentError(f"give {name} or key_{name} (one of them)")
            stored = value if key is None else self.get(key)
            if stored is None:
                raise InvalidArgumentError(f"no document is stored under key {key!r}")
            sides.append(stored)
        with self._lock:
            self._refresh()
            settings = self._settings
        return explain(
            *sides,
            k=settings.k if k is None else k,  # the index's k, which queries use (not the layout's)
            layout=settings.layout,
            config=settings.config,
            top=top,
        )
