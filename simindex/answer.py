"""Answering queries: how SimIndex carries out the planner's way.

``Answers`` is the part of SimIndex that answers ``query`` and
``query_many`` (SimIndex inherits it): planner.py picks the way (HELD,
LOOKUP, JOIN, READ, SCAN), this carries it out through the store, the
server join or the accelerator's snapshot, and every way ends in
matching.py. A query that finds the index rebuilt under it (another process
re-laid it) asks again, in a loop.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from simindex import accelerator, storage
from simindex.accelerator import Accelerator
from simindex.blocks import MAX_INDEX_K, check_k
from simindex.errors import InvalidArgumentError, StorageError
from simindex.fingerprint import check_fingerprint
from simindex.matching import Verify, near, unverified, within, within_each
from simindex.planner import Way, plan_batch, plan_query
from simindex.results import FullScanWarning, Match
from simindex.signature import check_threshold, fingerprint_and_signature
from simindex.snapshot import Seed, Snapshot
from simindex.validate import check_limit

_ONE_BY_ONE = 16  # batches up to this size are matched query by query in memory


class Answers:
    """query and query_many, for SimIndex (which provides the attributes below)."""

    if TYPE_CHECKING:  # SimIndex's own
        _backend: storage.Backend
        _accel: Accelerator
        _lock: AbstractContextManager[Any] | threading.RLock
        _state: tuple[storage.Settings, storage.Store]

        @property
        def _store(self) -> storage.Store: ...
        def _refresh(self) -> bool: ...
        def _changed(self, version: int | None, used: storage.Store | None = None) -> bool: ...

    @staticmethod
    def _as_query(
        query: str | int, settings: storage.Settings, threshold: float | None
    ) -> tuple[int, Verify]:
        """A query's fingerprint, and how its candidates are verified (a text:
        by its signature; a fingerprint: by distance alone)."""
        at = settings.threshold if threshold is None else threshold
        if isinstance(query, str):
            fingerprint, signature = fingerprint_and_signature(query, settings.config)
            return fingerprint, Verify(signature, at)
        return check_fingerprint(query), Verify(None, at)

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
        index's threshold, 0.8 for a new index; 0: distance alone, as a query
        by fingerprint always is). ``Match.similarity`` gives the estimate.
        Sorted by distance, then key; at most ``limit`` of them. A k above
        the index's is answered exactly too: by
        probing the block indexes with every value within a few bits of the
        query's where that takes at most 1,024 lookups (k up to 11 with k = 3's
        four blocks, see blocks.probe_radius), else by reading every
        row, which says so with a FullScanWarning.

        Once probed queries (a k above the layout's, such as the default 8)
        have spent in the database about what reading the whole index would
        cost (~1 us a fingerprint), the index reads its fingerprints and
        signatures into memory (~70 bytes each, ~135 with signatures;
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
        with self._lock:
            matches = None
            while matches is None:  # None: rebuilt meanwhile, ask the new index
                matches = self._query_once(text_or_fingerprint, k, threshold)
        return matches[:limit] if limit is not None else matches

    def _query_once(
        self, text_or_fingerprint: str | int, k: int | None, threshold: float | None
    ) -> list[Match] | None:
        settings, used = self._state  # a pair that belongs together
        fingerprint, verify = self._as_query(text_or_fingerprint, settings, threshold)
        distance = settings.k if k is None else k
        probed = distance > settings.layout.k
        if probed and used.confirms_with_rows and used is self._store:
            # On a server, answered from memory first and confirmed current by
            # the statement that reads the matches' rows: one round trip.
            found = self._in_memory_confirmed(fingerprint, verify, distance)
            if found is not None:
                return found
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
            return self._match_in_memory([fingerprint], [verify], distance, held)[0]
        started = time.perf_counter()
        if way is Way.LOOKUP:
            try:
                matches, version = self._lookup(used, fingerprint, distance, verify)
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
                matches = within(self._store.everything(conn), fingerprint, distance, verify)
        if probed:
            self._spent(time.perf_counter() - started)
        return matches

    @staticmethod
    def _lookup(
        used: storage.Store, fingerprint: int, k: int, verify: Verify
    ) -> tuple[list[Match], int | None]:
        """The matches through the block indexes of `used`, and the schema
        cookie they were read under (see Store.lookup)."""
        if k <= used.layout.k and used.matches_on_server:
            found, version = used.lookup_matches(fingerprint, k)
            return within(found, fingerprint, k, verify), version
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
        # returns, in case a writer replaced a row in between (or it is damage).
        found = used.rows_by_id(ids)
        held = dict(rows)
        used.read_back(((i, held[i]) for i in ids), {r[0]: r for r in found})
        return within(found, fingerprint, k, verify), version

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
        with self._lock:
            results = None
            while results is None:  # None: rebuilt meanwhile, ask the new index
                results = self._query_many_once(queries, k, threshold)
        return [r[:limit] for r in results] if limit is not None else results

    def _query_many_once(
        self, queries: list[str | int], k: int | None, threshold: float | None
    ) -> list[list[Match]] | None:
        self._refresh()
        settings, used = self._state
        asked = [self._as_query(q, settings, threshold) for q in queries]
        fps = [fp for fp, _ in asked]
        checks = [verify for _, verify in asked]
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
            return self._match_in_memory(fps, checks, distance, held)
        if way is Way.JOIN:
            return self._match_on_server(used, fps, checks, distance)
        if way is Way.READ:
            if distance > MAX_INDEX_K:
                raise InvalidArgumentError(
                    f"query_many answers k up to {MAX_INDEX_K}; ask query() for k={distance}"
                )
            return self._match_in_memory(fps, checks, distance)
        started = time.perf_counter()
        try:
            answers = [
                self._lookup(used, fp, distance, v) for fp, v in zip(fps, checks, strict=True)
            ]
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
        versions = self._store.versions()  # one statement
        if versions is None:
            return None
        if self._changed(versions.generation):  # rebuilt elsewhere: settings adopted, snapshot gone
            return None
        return self._accel.current(versions)

    def _spent(self, seconds: float) -> None:
        """A probed query spent `seconds` in the database: charge the
        accelerator, and read the index into memory when it says so."""
        store = self._store
        if not self._accel.charge(seconds, store.estimated_size, store.stored_current):
            return
        if not self._store.holds:  # no way to tell it is current: never held
            self._accel.never()
            return
        started = time.perf_counter()
        try:
            snapshot, stamp = self._read_snapshot()
        except BaseException:
            self._accel.failed()
            raise
        self._accel.install(snapshot, stamp, time.perf_counter() - started)

    def _read_snapshot(self, *, store: bool = True) -> tuple[Snapshot, storage.Versions | None]:
        """The index's fingerprints, read in one snapshot (from the stored
        snapshot while it is current), and the stamp they were read under
        (None where nothing can tell that they are current). ``store``: what
        was read from the rows is stored for the next reader (a read to
        hold; a batch's own read is not: its tables may be another k's)."""
        self._refresh()
        used = self._store
        with self._backend.reading() as conn:
            # The count first (Backend.versions): a write between it and the
            # rows read (PostgreSQL's READ COMMITTED) shows as a count the
            # snapshot has not seen, and the snapshot is let go.
            versions = self._backend.versions(conn)
            stored = used.load_stored(conn, versions)
            if stored is None:
                ids, fps = used.load(conn)
                signatures = used.load_signatures(conn, ids)
                orders: dict[int, Seed] = {}
            else:
                ids, fps, signatures, orders = stored
        snapshot = Snapshot(ids, fps, None, signatures, orders)
        stamp = versions if used.holds else None
        if store and stored is None and stamp is not None and used.would_store(len(ids)):
            # For the next reader, with its tables for the index's k sorted
            # (sorting is most of a read's time once the rows come stored).
            k = self._state[0].k
            order = snapshot.order(k) if k <= MAX_INDEX_K else None
            orders = {} if order is None else {k: order}
            used.store_snapshot(ids, fps, signatures, stamp, orders)
        return snapshot, stamp

    def _match_on_server(
        self, used: storage.Store, fps: Sequence[int], checks: Sequence[Verify], k: int
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
        candidates = ((qid, (i, key, f, sig)) for qid, i, key, f, sig in rows)
        return within_each(candidates, fps, k, checks)

    def _in_memory_confirmed(self, fingerprint: int, verify: Verify, k: int) -> list[Match] | None:
        """One query answered from the held snapshot, its rows read in the
        statement that also reads the versions (Store.rows_and_versions); the
        answer stands only if those say the snapshot was still current then
        (no write but this object's since it was read, no rebuild): its
        candidates were then exactly the index's. Else None (the caller asks
        again the usual way, which lets a stale snapshot go)."""
        snapshot = self._accel.snapshot
        if snapshot is None or k > MAX_INDEX_K:
            return None
        found = self._match_in_memory([fingerprint], [verify], k, snapshot, confirm=True)
        return None if found is None else found[0]

    @overload
    def _match_in_memory(
        self,
        fps: Sequence[int],
        checks: Sequence[Verify],
        k: int,
        snapshot: Snapshot | None = None,
        confirm: Literal[False] = False,
    ) -> list[list[Match]]: ...

    @overload
    def _match_in_memory(
        self,
        fps: Sequence[int],
        checks: Sequence[Verify],
        k: int,
        snapshot: Snapshot | None,
        confirm: Literal[True],
    ) -> list[list[Match]] | None: ...

    def _match_in_memory(
        self,
        fps: Sequence[int],
        checks: Sequence[Verify],
        k: int,
        snapshot: Snapshot | None = None,
        confirm: bool = False,
    ) -> list[list[Match]] | None:
        if snapshot is None:  # a batch: the held snapshot if current, else read one
            snapshot = self._held(k)
            if snapshot is None:
                started = time.perf_counter()
                snapshot, stamp = self._read_snapshot(store=self._accel.hold is not False)
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
            s = snapshot.near(fps[0], k)
            q = np.zeros(len(s), dtype=np.intp)
            if not s.size and not snapshot.added_ids.size and not confirm:
                return [[]]
        elif len(fps) <= _ONE_BY_ONE:
            found = [snapshot.near(fp, k) for fp in fps]
            q = np.repeat(np.arange(len(fps)), [len(f) for f in found])
            s = np.concatenate(found)
        else:
            q, s, _ = snapshot.match(queries, k)
        if snapshot.signatures is not None and s.size:
            # Verified in memory first: only the rows that can still match are read.
            keep = unverified(q, s, checks, snapshot.signatures)
            q, s = q[keep], s[keep]
        qs, ids = q.tolist(), snapshot.ids[s].tolist()
        if snapshot.added_ids.size:  # rows written through this object since the read
            added_q, added_ids = snapshot.added_within(queries, k)
            if added_q.size:  # each (query, id) once: a row written again is held twice
                both = zip(qs + added_q.tolist(), ids + added_ids.tolist(), strict=True)
                pairs = dict.fromkeys(both)
                qs, ids = [qi for qi, _ in pairs], [i for _, i in pairs]
        # Keys for the matches, with their fingerprints rechecked (a writer may
        # have replaced a row since the snapshot).
        rows: dict[int, tuple[int, str, int, bytes | None]] = {}
        unique = list(dict.fromkeys(ids))
        if confirm:  # the rows and the versions in one statement
            if len(unique) > 500:
                return None
            read, versions = self._store.rows_and_versions(unique)
            if self._changed(versions.generation) or self._accel.current(versions) is not snapshot:
                return None
            rows.update((r[0], r) for r in read)
            unique = []
        for start in range(0, len(unique), 500):
            rows.update((r[0], r) for r in self._store.rows_by_id(unique[start : start + 500]))
        held = snapshot.ids[s].tolist(), snapshot.fps[s].view(np.int64).tolist()
        self._store.read_back(zip(*held, strict=True), rows)  # gone since, or damage
        snapshot.as_held(s, rows)  # judged by the signatures held
        candidates = ((qi, rows[i]) for qi, i in zip(qs, ids, strict=True) if i in rows)
        return within_each(candidates, fps, k, checks)
