"""Answering queries: the planner's way carried out under one View.

``Reader`` answers ``query``, ``query_many`` and the pairs behind
``duplicates``/``clusters`` for a SimIndex. Each answer is one function of
a View (view.py), run by ``Views.read``, which asks again whenever the
index changed under it; planner.py picks the way, and every way ends in
matching.py:

- LOOKUP / MATCH / PROBE: the block indexes (``Store.lookup``; PostgreSQL
  keeps the rows within k on the server, ``Store.lookup_matches``; probes
  a few bits away for a k above the layout's, ``Store.probe_lookup``),
  then the rows' keys by id;
- HELD: the accelerator's snapshot in memory, its rows read by id in the
  statement that also reads the versions (so the answer stands only if the
  snapshot was current then);
- JOIN: the batch joined with the index on the server (PostgreSQL);
- READ: every fingerprint read once (or the held snapshot, if current),
  the batch matched in memory;
- SCAN: every row compared (a k past what lookups answer).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Sequence

import numpy as np

from simindex import accelerator, storage
from simindex.blocks import MAX_INDEX_K
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import check_fingerprint
from simindex.matching import Row, Verify, near, unverified, within, within_each
from simindex.pairs import pairs_within
from simindex.planner import Way, plan_batch, plan_query
from simindex.results import FullScanWarning, Match
from simindex.signature import (
    KEYED_BYTES,
    NBYTES,
    fingerprint_and_signature,
    is_signature,
    keys_of,
    keys_of_bands,
    keys_of_one,
    keys_of_sets,
    longer,
    marks_of,
    meets_many,
    needed,
    similarities,
)
from simindex.snapshot import Seed, Snapshot
from simindex.storage.backend import expect
from simindex.tables import run_pieces
from simindex.view import View, Views

_MASK64 = (1 << 64) - 1
_ONE_BY_ONE = 16  # batches up to this size are matched query by query in memory
_ROWS_AT_ONCE = 500  # rows read by id in one statement

# (id a, id b, distance, similarity) of a pair, a < b in id order; and the keys.
Pairs = tuple[list[tuple[int, int, int, float | None]], dict[int, str]]


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # simindex/


def _callers_level() -> int:
    """The ``stacklevel`` that makes a warning raised by the function calling
    this one point at the first line outside simindex: the user's, however
    many of simindex's frames (a retry, a lambda) lie between."""
    frame = sys._getframe(1)  # the caller's: level 1
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


def as_query(
    query: str | int, settings: storage.Settings, threshold: float | None
) -> tuple[int, Verify]:
    """A query's fingerprint, and how its candidates are verified (a text:
    by its signature; a fingerprint: by distance alone)."""
    at = settings.threshold if threshold is None else threshold
    if isinstance(query, str):
        fingerprint, signature = fingerprint_and_signature(query, settings.config)
        keys = tuple(keys_of_one(signature)) if settings.marking and at > 0 else ()
        return fingerprint, Verify(signature, at, keys)
    return check_fingerprint(query), Verify(None, at)


def _keyed_pairs(
    rows: Sequence[Row], k: int, threshold: float
) -> list[tuple[int, int, int, float | None]]:
    """(id a, id b, distance, similarity), a < b, of the pairs of rows
    farther apart than k whose signatures meet by the rule (signature.meets)
    and are similar enough (the pairs within k come from the fingerprints).
    Short rows of one set are paired among themselves; distinct sets are
    paired through their set keys (two sets one unit apart share one), and
    longer rows through their band keys: each pair judged once, all at once
    (signature.Marks). Rows of one set are judged as a group (by its first
    row), rows of one fingerprint are found as a group (each row judged)."""
    found: list[tuple[int, int, int, float | None]] = []
    _set_pairs([r for r in rows if _keyed_set(r[3])], k, threshold, found)
    _band_pairs([r for r in rows if longer(r[3])], k, threshold, found)
    return found


def _keyed_set(signature: bytes | None) -> bool:
    return (
        signature is not None
        and len(signature) >= KEYED_BYTES
        and not longer(signature)
        and is_signature(signature)
    )


def _set_pairs(
    rows: Sequence[Row], k: int, threshold: float, found: list[tuple[int, int, int, float | None]]
) -> None:
    groups: dict[bytes, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(bytes(row[3][NBYTES:]), []).append(i)  # type: ignore[index]
    members = list(groups.values())
    fps = [row[2] & _MASK64 for row in rows]

    def pair(a: list[int], b: list[int] | None, estimate: float) -> None:
        for x, i in enumerate(a):
            for j in a[x + 1 :] if b is None else b:
                distance = (fps[i] ^ fps[j]).bit_count()
                if distance > k:
                    low, high = sorted((rows[i][0], rows[j][0]))
                    found.append((low, high, distance, estimate))

    for group in members:  # one set: similarity 1
        if len(group) > 1:
            pair(group, None, 1.0)
    heads: list[bytes] = [rows[group[0]][3] for group in members]  # type: ignore[misc]
    a, b = _sharing(*keys_of_sets(heads), len(heads))
    marks = marks_of(np.zeros(len(heads), np.uint64), heads)
    # (every pair judged: two sets of the same units, one kept in its text's
    # order, the other sorted, are as similar as 1 whatever their size)
    met = meets_many(marks, a, marks, b)
    a, b = a[met], b[met]
    estimate = similarities(marks, a, marks, b)
    ok = estimate >= threshold
    for x, y, value in zip(a[ok].tolist(), b[ok].tolist(), estimate[ok].tolist(), strict=True):
        pair(members[x], members[y], value)


def _band_pairs(
    rows: Sequence[Row], k: int, threshold: float, found: list[tuple[int, int, int, float | None]]
) -> None:
    # Rows of one fingerprint are within k of each other (paired by the
    # fingerprints): each fingerprint's rows are one group, and two groups
    # beyond k whose keys meet pair all their rows, judged at once.
    groups: dict[int, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(row[2] & _MASK64, []).append(i)
    members = list(groups.values())
    sizes = np.array([len(g) for g in members], dtype=np.intp)
    flat = np.array([i for g in members for i in g], dtype=np.intp)  # rows, group by group
    starts = np.cumsum(sizes) - sizes
    signatures: list[bytes] = [rows[i][3] for i in flat.tolist()]
    keys, owner = keys_of_bands(signatures)
    a, b = _sharing(keys, np.repeat(np.arange(len(members)), sizes)[owner], len(members))
    heads = np.array(list(groups), dtype=np.uint64)
    distance = np.bitwise_count(heads[a] ^ heads[b])
    far = distance > k
    a, b, distance = a[far], b[far], distance[far]
    marks = marks_of(np.zeros(len(flat), np.uint64), signatures)
    ids = np.array([row[0] for row in rows], dtype=np.int64)[flat]
    # Every row of group a with every row of group b (most groups: one row),
    # _JUDGED_AT_ONCE of those pairs at a time (memory: tables.run_pieces).
    count = sizes[a] * sizes[b]
    for pair, t in run_pieces(np.arange(len(a)), np.zeros(len(a), np.intp), count, _JUDGED_AT_ONCE):
        i = starts[a[pair]] + t // sizes[b[pair]]
        j = starts[b[pair]] + t % sizes[b[pair]]
        met = meets_many(marks, i, marks, j)
        i, j, pair = i[met], j[met], pair[met]
        estimate = similarities(marks, i, marks, j)
        ok = estimate >= needed(threshold, marks, i, marks, j)
        first, second = ids[i[ok]], ids[j[ok]]
        low, high = np.minimum(first, second).tolist(), np.maximum(first, second).tolist()
        near = distance[pair[ok]].tolist()
        found.extend(zip(low, high, near, estimate[ok].tolist(), strict=True))


_JUDGED_AT_ONCE = 1 << 18  # _band_pairs: pairs of rows judged at once (memory)
# Pairs _sharing gathers before it drops those found twice (two groups may
# share several keys): again whenever what it holds has doubled, so each
# pair is sorted about twice in all.
_SHARED_AT_ONCE = 1 << 22


def _sharing(keys: np.ndarray, owner: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (a, b), a < b, of the n owners that share one of their
    keys or more, each once, in order."""
    order = np.lexsort((owner, keys))
    keys, owner = keys[order], owner[order].astype(np.int64)
    once = np.ones(len(keys), dtype=bool)  # (an owner under a key once)
    once[1:] = (keys[1:] != keys[:-1]) | (owner[1:] != owner[:-1])
    keys, owner = keys[once], owner[once]
    found: list[np.ndarray] = [np.zeros(0, np.int64)]
    held, limit = 0, _SHARED_AT_ONCE
    step = 1
    alive = np.flatnonzero(keys[1:] == keys[:-1]) if len(keys) > 1 else np.zeros(0, np.intp)
    while alive.size:  # each owner with the ones 1, 2, 3... places on under its key
        found.append(owner[alive] * n + owner[alive + step])
        held += alive.size
        if held > limit:
            found = [_distinct(np.concatenate(found))]
            held = len(found[0])
            limit = max(_SHARED_AT_ONCE, 2 * held)
        step += 1
        alive = alive[alive + step < len(keys)]
        alive = alive[keys[alive + step] == keys[alive]]
    codes = _distinct(np.concatenate(found))
    return codes // max(n, 1), codes % max(n, 1)


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: by a sort (np.unique's hash table took
    4.6 s for 4.5 million pairs' codes, a sort 0.5)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _verified(
    rows: dict[int, tuple[str, bytes | None]],
    first: np.ndarray,
    second: np.ndarray,
    distance: np.ndarray,
    threshold: float,
) -> list[tuple[int, int, int, float | None]]:
    """(id a, id b, distance, similarity) of the pairs within k (ids first
    and second, rows: id -> (key, signature)) that verify: where both have a
    signature, at least as similar as the pair needs (signature.needed),
    all judged at once; else with no similarity. A pair with a row not
    read is left out (PostgreSQL: removed meanwhile)."""
    ids = np.fromiter(rows, np.int64, len(rows))
    signatures = [signature for _, signature in rows.values()]
    order = np.argsort(ids)
    known = ids[order]
    at_a, at_b = (np.minimum(np.searchsorted(known, x), len(ids) - 1) for x in (first, second))
    read = (known[at_a] == first) & (known[at_b] == second) if len(ids) else first < 0
    a, b, distance = order[at_a[read]], order[at_b[read]], distance[read]
    has = np.array([s is not None for s in signatures], dtype=bool)
    place = np.cumsum(has) - 1  # a row's place among those with a signature
    marks = marks_of(np.zeros(int(has.sum()), np.uint64), [s for s in signatures if s is not None])
    both = has[a] & has[b]
    estimate = np.full(len(a), np.nan)
    i, j = place[a[both]], place[b[both]]
    estimate[both] = similarities(marks, i, marks, j)
    ok = ~both
    ok[both] = estimate[both] >= needed(threshold, marks, i, marks, j)
    return [
        (int(ids[x]), int(ids[y]), int(dist), float(value) if judged else None)
        for x, y, dist, judged, value in zip(
            a[ok].tolist(), b[ok].tolist(), distance[ok].tolist(), both[ok].tolist(),
            estimate[ok].tolist(), strict=True,
        )
    ]  # fmt: skip


def _short_rows(view: View, checks: Sequence[Verify | None]) -> tuple[list[list[Row]], int | None]:
    """Per query, the rows its signature's keys find (Verify.keys), among
    the stored keys and the keys of the rows still due (storage/short_sets.py,
    made here): candidates at any distance, which matching.within judges by
    its rule; and the changes counted when they were read (None: nothing
    read, no query keyed). A statement a batch (a few for thousands
    of keys)."""
    wanted = [() if v is None else v.keys for v in checks]
    if not any(wanted):
        return [[] for _ in wanted], None
    keys = [key for found in wanted for key in found]
    by_key, due, changes = view.store.set_rows(keys, view.generation)
    if due:  # a row due shares a key with every query it can match
        made, owner = keys_of([r[3] if is_signature(r[3]) else None for r in due])
        for key, at in zip(made.tolist(), owner.tolist(), strict=True):
            by_key.setdefault(key, []).append(due[at])
    # (each row once a query: a copy shares all its keys with it)
    return [
        list({row[0]: row for key in found for row in by_key.get(key, ())}.values())
        for found in wanted
    ], changes


_NONE = (np.zeros(0, np.intp), np.zeros(0, np.intp))


def _bands_asked(checks: Sequence[Verify | None]) -> tuple[np.ndarray, np.ndarray]:
    """The band keys of the queries that have them (a longer text's, see
    signature.keys_of_bands), and the query each is of."""
    keys: list[int] = []
    owner: list[int] = []
    for at, verify in enumerate(checks):
        if verify is not None and verify.keys and _banded(verify):
            keys += verify.keys
            owner += [at] * len(verify.keys)
    return np.array(keys, np.int64), np.array(owner, np.intp)


def _sets_only(checks: Sequence[Verify | None]) -> list[Verify | None]:
    """The queries with their band keys left out (a snapshot found those)."""
    return [v._replace(keys=()) if v is not None and _banded(v) else v for v in checks]


def _banded(verify: Verify) -> bool:
    """Whether a query's keys are band keys: a signature without an exact set."""
    return longer(verify.signature)


class Reader:
    """The queries of one index (checked arguments: SimIndex checks them)."""

    def __init__(self, views: Views) -> None:
        self.views = views
        self.backend = views.backend
        self.accel = views.accel

    # --- the questions -------------------------------------------------------

    def query(self, query: str | int, k: int | None, threshold: float | None) -> list[Match]:
        return self.views.read(lambda view: self._query(view, query, k, threshold))

    def query_many(
        self, queries: list[str | int], k: int | None, threshold: float | None
    ) -> list[list[Match]]:
        return self.views.read(lambda view: self._query_many(view, queries, k, threshold))

    def pairs(self, k: int | None, threshold: float | None) -> Pairs:
        """Every pair within k (or found by keys) that verifies at the
        threshold, and the keys of their rows."""
        return self.views.read(lambda view: self._pairs(view, k, threshold))

    # --- one query -----------------------------------------------------------

    def _query(
        self, view: View, query: str | int, k: int | None, threshold: float | None
    ) -> list[Match]:
        settings, store = view.settings, view.store
        fingerprint, verify = as_query(query, settings, threshold)
        distance = settings.k if k is None else k
        snapshot = self.accel.snapshot
        way = plan_query(
            settings.layout,
            distance,
            held=snapshot is not None and store.holds and distance <= MAX_INDEX_K,
            can_probe=distance <= settings.layout.k or store.can_probe(distance),
            server_matches=store.matches_on_server,
        )
        if way is Way.HELD:
            assert snapshot is not None
            found = self._in_memory(view, [fingerprint], [verify], distance, snapshot, confirm=True)
            return found[0]
        started = time.perf_counter()
        if way is Way.SCAN:
            warnings.warn(
                f"k={distance} is past what the index's block lookups answer: every "
                f"fingerprint was compared (exact, but a full scan)",
                FullScanWarning,
                stacklevel=_callers_level(),
            )
            with self.backend.reading() as conn:
                expect(self.backend.generation(conn), view.generation)
                matches = within(view.store.everything(conn), fingerprint, distance, verify)
        else:
            matches = self._lookup(way, view, fingerprint, distance, verify)
        if distance > settings.layout.k:  # probes cost hundreds of seeks: memory, once that pays
            self._spent(view, time.perf_counter() - started)
        return matches

    def _lookup(
        self, way: Way, view: View, fingerprint: int, k: int, verify: Verify
    ) -> list[Match]:
        """The matches through the block indexes, the way the planner chose."""
        store, generation = view.store, view.generation
        short = _short_rows(view, [verify])[0][0]  # (read first: a row read again after wins)
        if way is Way.MATCH:
            matched = store.lookup_matches(fingerprint, k, generation)
            return within(short + matched, fingerprint, k, verify)
        if way is Way.LOOKUP:
            rows = store.lookup(fingerprint, generation)
        else:
            probed = store.probe_lookup(fingerprint, k, generation)
            assert probed is not None  # the planner asked can_probe
            rows = probed
        ids = near(rows, fingerprint, k)
        if not ids:
            return within(short, fingerprint, k, verify)
        # The keys come from a second read: recheck the distance on what it
        # returns, in case a writer replaced a row in between (or it is damage).
        found = store.rows_by_id(ids)
        looked_up = dict(rows)  # id -> the fingerprint the lookup read
        store.checks.read_back(
            ((i, looked_up[i]) for i in ids), {r[0]: r for r in found}, generation
        )
        return within(short + found, fingerprint, k, verify)

    # --- a batch -------------------------------------------------------------

    def _query_many(
        self, view: View, queries: list[str | int], k: int | None, threshold: float | None
    ) -> list[list[Match]]:
        settings, store = view.settings, view.store
        asked = [as_query(q, settings, threshold) for q in queries]
        fps = [fp for fp, _ in asked]
        checks = [verify for _, verify in asked]
        distance = settings.k if k is None else k
        probed = distance > settings.layout.k
        held = self._held(view, distance) if probed else None
        way = plan_batch(
            settings.layout,
            distance,
            len(fps),
            held=held is not None,
            can_probe=not probed or store.can_probe(distance),
            server_join=self.backend.caps.server_join,
            server_matches=store.matches_on_server,
            snapshot=self.accel.snapshot is not None,
            size=store.estimated_size,
        )
        if way is Way.HELD:
            assert held is not None
            return self._in_memory(view, fps, checks, distance, held)
        if way is Way.JOIN:
            return self._joined(view, fps, checks, distance)
        if way is Way.READ:
            if distance > MAX_INDEX_K:
                raise InvalidArgumentError(
                    f"query_many answers k up to {MAX_INDEX_K}; ask query() for k={distance}"
                )
            return self._in_memory(view, fps, checks, distance, self._snapshot(view, distance))
        started = time.perf_counter()
        answers = [
            self._lookup(way, view, fp, distance, v) for fp, v in zip(fps, checks, strict=True)
        ]
        if way is Way.PROBE:
            self._spent(view, time.perf_counter() - started)
        return answers

    def _joined(
        self, view: View, fps: Sequence[int], checks: Sequence[Verify], k: int
    ) -> list[list[Match]]:
        """PostgreSQL: the batch joined with the index by the server, in one snapshot."""
        with self.backend.reading() as conn:
            self.backend.no_rebuild_meanwhile(conn)  # waits for one that is running
            expect(self.backend.generation(conn), view.generation)
            rows = view.store.copying.join_lookup(conn, fps, k)
        candidates = [(qid, (i, key, f, sig)) for qid, i, key, f, sig in rows]
        short, _ = _short_rows(view, checks)  # (read after the join: wins where both have a row)
        candidates += [(q, row) for q, found in enumerate(short) for row in found]
        return within_each(candidates, fps, k, checks)

    # --- the snapshot in memory ----------------------------------------------

    def _held(self, view: View, k: int) -> Snapshot | None:
        """The held snapshot, if it is still what the index holds (no write
        since it was read but this object's own, applied) and answers k; else
        None (and a stale one is let go: see Accelerator.current)."""
        if k > MAX_INDEX_K or self.accel.snapshot is None:
            return None
        versions = view.store.versions()  # one statement
        if versions is None:
            return None
        expect(versions.generation, view.generation)
        return self.accel.current(versions)

    def _snapshot(self, view: View, k: int) -> Snapshot:
        """For a batch read in memory: the held snapshot if current, else one read now
        (kept for later queries, unless hold=False: then it serves this batch only)."""
        held = self._held(view, k)
        if held is not None:
            return held
        started = time.perf_counter()
        snapshot, stamp = self._read_snapshot(view, store=self.accel.hold is not False)
        self.accel.install(snapshot, stamp, time.perf_counter() - started)
        return snapshot

    def _spent(self, view: View, seconds: float) -> None:
        """A probed query spent `seconds` in the database: charge the
        accelerator, and read the index into memory when it says so."""
        store = view.store
        if not self.accel.charge(seconds, store.estimated_size, store.snapshots.current):
            return
        if not store.holds:  # no way to tell it is current: never held
            self.accel.never()
            return
        started = time.perf_counter()
        try:
            snapshot, stamp = self._read_snapshot(view)
        except BaseException:  # (changed meanwhile too: the query is asked again)
            self.accel.failed()
            raise
        self.accel.install(snapshot, stamp, time.perf_counter() - started)

    def _read_snapshot(
        self, view: View, *, store: bool = True
    ) -> tuple[Snapshot, storage.Versions | None]:
        """The index's fingerprints, read in one snapshot (from the stored
        snapshot while it is current), and the versions they were read at
        (None where nothing can tell that they are current). ``store``: what
        was read from the rows is stored for the next reader (a read to
        hold; a batch's own read is not: its tables may be another k's)."""
        used = view.store
        with self.backend.reading() as conn:
            # The count first (Backend.versions): a write between it and the
            # rows read (PostgreSQL's READ COMMITTED) shows as a count the
            # snapshot has not seen, and the snapshot is let go.
            versions = self.backend.versions(conn)
            expect(versions.generation, view.generation)
            stored = used.snapshots.load(conn, versions)
            if stored is None:
                ids, fps = used.load(conn, view.generation)
                signatures = used.load_signatures(conn, ids)
                orders: dict[int, Seed] = {}
            else:
                ids, fps, signatures, orders = stored
        snapshot = Snapshot(ids, fps, versions, signatures, orders)
        stamp = versions if used.holds else None
        if store and stored is None and stamp is not None and used.snapshots.would_store(len(ids)):
            # For the next reader, with its tables for the index's k sorted
            # (sorting is most of a read's time once the rows come stored).
            k = view.settings.k
            order = snapshot.order(k) if k <= MAX_INDEX_K else None
            orders = {} if order is None else {k: order}
            used.snapshots.store(ids, fps, signatures, stamp, orders)
        return snapshot, stamp

    def _in_memory(
        self,
        view: View,
        fps: Sequence[int],
        checks: Sequence[Verify],
        k: int,
        snapshot: Snapshot,
        *,
        confirm: bool = False,
    ) -> list[list[Match]]:
        """The queries matched in the snapshot, their rows read by id. With
        ``confirm`` (a held single query), the snapshot's currentness is read
        with its rows (Store.rows_and_versions): a stale one is let go and
        the query asked again (storage.Changed)."""
        store = view.store
        if len(fps) * len(snapshot.added_ids) > 64 * accelerator.ADDED_MAX:
            merged = snapshot.merged()  # a batch: merge the rows added first
            self.accel.replace(snapshot, merged)
            snapshot = merged
        queries = np.array(fps, dtype=np.uint64)
        # Rows found by keys (matching.Verify.keys): a longer text's by its
        # band keys among the signatures held, when the snapshot holds every
        # row's (what a whole read read, so no page of the key table it did
        # not read can lose one); the rest (short texts' set keys, rows
        # written since) from the key table, read before the versions are
        # confirmed, with the changes counted then: a held query stands only
        # if they are the changes it confirms (a write between, this object's
        # own included, asks it again).
        banded = snapshot.holds_bands
        band_q, band_s = snapshot.meeting(*_bands_asked(checks)) if banded else _NONE
        short, short_changes = _short_rows(view, _sets_only(checks) if banded else checks)
        if len(fps) == 1:  # a single query (the held path): no batch bookkeeping
            s = snapshot.near(fps[0], k)
            q = np.zeros(len(s), dtype=np.intp)
            if (
                not s.size
                and not band_s.size
                and not snapshot.added_ids.size
                and not confirm
                and not short[0]
            ):
                return [[]]
        elif len(fps) <= _ONE_BY_ONE:
            found = [snapshot.near(fp, k) for fp in fps]
            q = np.repeat(np.arange(len(fps)), [len(f) for f in found])
            s = np.concatenate(found)
        else:
            q, s, _ = snapshot.match(queries, k)
        if band_s.size:  # (within k a pair is found by distance; beyond, once a band shared)
            beyond = np.bitwise_count(snapshot.fps[band_s] ^ queries[band_q]) > k
            q = np.concatenate([q, band_q[beyond]])
            s = np.concatenate([s, band_s[beyond]])
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
        if confirm:
            if len(unique) <= _ROWS_AT_ONCE:  # the rows and the versions in one statement
                read, versions = store.rows_and_versions(unique)
                rows.update((r[0], r) for r in read)
                unique = []
            else:
                counted = store.versions()
                assert counted is not None  # (held: the store holds)
                versions = counted
            expect(versions.generation, view.generation)
            if self.accel.current(versions) is not snapshot:
                raise storage.Changed()  # stale (let go): asked again the usual way
            if short_changes is not None and short_changes != versions.changes:
                raise storage.Changed()  # written between: asked again
        for start in range(0, len(unique), _ROWS_AT_ONCE):
            rows.update((r[0], r) for r in store.rows_by_id(unique[start : start + _ROWS_AT_ONCE]))
        held = snapshot.ids[s].tolist(), snapshot.fps[s].view(np.int64).tolist()
        # Gone since, or damage:
        store.checks.read_back(zip(*held, strict=True), rows, view.generation)
        if not snapshot.as_held(s, rows):  # judged by the signatures held
            counted = store.versions()  # a row held was written since: when?
            if counted is None or (
                counted != snapshot.version and self.accel.current(counted) is not snapshot
            ):
                raise storage.Changed()  # since the snapshot: asked again
        candidates = [(qi, row) for qi, found in enumerate(short) for row in found]
        candidates += [(qi, rows[i]) for qi, i in zip(qs, ids, strict=True) if i in rows]
        return within_each(candidates, fps, k, checks)

    # --- all pairs -----------------------------------------------------------

    def _pairs(self, view: View, k: int | None, threshold: float | None) -> Pairs:
        """(id a, id b, distance, similarity) with a < b in id order (a added
        first) of every pair within k, or found by keys (signature.meets),
        that verifies at the threshold."""
        distance = view.settings.k if k is None else k
        at = view.settings.threshold if threshold is None else threshold
        store = view.store
        with self.backend.reading() as conn:
            # From the stored snapshot while it is current, else from the rows.
            versions = self.backend.versions(conn)
            expect(versions.generation, view.generation)
            found = store.snapshots.load(conn, versions, fingerprints_only=True)
            ids, fps = store.load(conn, view.generation) if found is None else found[:2]
            a, b, d = pairs_within(fps, distance)  # ids not in id order when stored
            first, second = np.minimum(ids[a], ids[b]), np.maximum(ids[a], ids[b])
            paired = np.unique(np.concatenate([a, b]))  # checked against what was paired
            signed = fps[paired].view(np.int64).tolist()
            wanted = dict(zip(ids[paired].tolist(), signed, strict=True))
            rows = store.keys_for(conn, wanted)
            short = store.keyed_signatures(conn) if view.settings.marking and at > 0 else []
        keyed = _keyed_pairs(short, distance, at)
        rows.update((r[0], (r[1], r[3])) for r in short)
        # (PostgreSQL reads each statement at its own moment: a row whose
        # fingerprint moved between them is paired once, within k)
        near = set(zip(first.tolist(), second.tolist(), strict=True))
        pairs = [p for p in keyed if (p[0], p[1]) not in near]
        pairs += _verified(rows, first, second, d, at)
        return pairs, {i: key for i, (key, _) in rows.items()}
