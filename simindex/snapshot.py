"""A snapshot of an index's fingerprints held in memory, and how it answers.

Snapshot holds the ids and fingerprints read at one moment, per k the tables
that answer a single query (single_layout: one-block tables found by offset
or binary search, the layout cheapest by costs.held_query_us) or a batch
(tables.plan_for), and the rows written since, compared one by one until
they are merged. The accelerator (accelerator.py) decides when to read one
and whether it is current; this module only answers from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from simindex.blocks import MAX_INDEX_K, BlockLayout, Probe, cheapest, probes, table_flips
from simindex.costs import held_query_us
from simindex.signature import (
    NBYTES,
    Sketches,
    band_keys_of_words,
    held_signature,
    middle_set,
    of_characters,
)
from simindex.tables import (
    Keyed,
    Plan,
    Sorted,
    keyed,
    packed_key,
    plan_for,
    probe_batch,
    run_positions,
    shared_radius,
    stable_order,
)

# A single-query table finds a block value's rows by offset (one array entry
# per possible value) when there are at most this many entries a row, else by
# binary search; and never past blocks of _OFFSETS_MAX_BITS.
_OFFSETS_PER_ROW = 8
_OFFSETS_MAX_BITS = 26
_ADDED_COMPARED = 1 << 20  # Snapshot.added_within: comparisons made at once (bounds memory)
_BANDS_AT_ONCE = 1 << 18  # Snapshot.meeting: sketches keyed at once (bounds memory)
_HALF = np.uint64(32)
_LOW = np.uint64(0xFFFF_FFFF)


class _Joined(NamedTuple):
    """The single-query tables of one k laid end to end, when every one is
    found by offset: one lookup for all their probes, not one a table.
    Each table's starts index the one order array (its own part of it)."""

    spans: tuple[tuple[int, int], ...]  # per table: (its lowest bit, its bits shifted down)
    table_of: np.ndarray  # per probe: its table
    flips: np.ndarray  # per probe: the value XORed into its table's block value
    base: np.ndarray  # per probe: where its table's starts begin in starts
    starts: np.ndarray  # every table's starts, end to end
    order: np.ndarray  # every table's positions, end to end


def _offsets_fit(width: int, n: int) -> bool:
    """Whether a single-query table of a width-bit block finds its rows by
    offset (one entry a possible value), not by binary search."""
    return width <= _OFFSETS_MAX_BITS and 1 << width <= _OFFSETS_PER_ROW * n


def single_layout(n: int, k: int) -> tuple[BlockLayout, list[Probe] | None] | None:
    """The layout of one-block tables that answers one query within k among n
    fingerprints in memory soonest (costs.held_query_us), and its probes
    (None: exact lookups, m > k); None past MAX_INDEX_K."""
    if k > MAX_INDEX_K:
        return None

    def cost(layout: BlockLayout) -> float | None:
        m = len(layout.widths)
        found = probes(layout, k) if m <= k else None
        if m <= k and (found is None or m == 1):  # (a probed 64-bit block: not in int64)
            return None
        counts = None if found is None else [sum(p.table == t for p in found) for t in range(m)]
        offsets = [_offsets_fit(width, n) for width in layout.widths]
        return held_query_us(layout.widths, n, counts, offsets)

    layout = cheapest(k, cost)
    assert layout is not None  # m = k + 1 always qualifies
    return layout, (probes(layout, k) if len(layout.widths) <= k else None)


# A stored order of the single-query tables for one k (Snapshot.order): the
# (shift, span) of each table's block, and the joined order array.
Seed = tuple[tuple[tuple[int, int], ...], np.ndarray]


def _probed_tables(
    fps: np.ndarray, k: int, seed: Seed | None = None
) -> tuple[list[Keyed], _Joined | None] | None:
    """The tables that answer one query within k (see single_layout: one
    block each, found by offset where it is narrow beside the snapshot, else
    by binary search), and their joined lookup where every one is found by
    offset (their starts and orders then built end to end, each table's
    starts a view of the one array shifted to its part of the one order
    array); None past MAX_INDEX_K. ``seed``: the order read with the
    snapshot (Snapshot.order; its bytes checked by their digest,
    storage/stored.py), used in place of sorting where it is of these very
    tables: the same blocks, the same size."""
    chosen = single_layout(len(fps), k)
    if chosen is None:
        return None
    layout, _ = chosen
    spans = tuple(layout.spans())
    xors = table_flips(layout, k)
    n = len(fps)
    joined = len(spans) > 1 and all(_offsets_fit(span.bit_length(), n) for _, span in spans)
    index_type = np.int32 if (len(spans) if joined else 1) * n < 2**31 else np.int64
    all_starts = np.empty(sum(span + 2 for _, span in spans) if joined else 0, index_type)
    size = len(spans) * n if joined else 0
    tables = []
    bases = [sum(b + 2 for _, b in spans[:t]) for t in range(len(spans))]  # in all_starts
    given = None
    if joined and seed is not None and seed[0] == spans:
        order_seed = seed[1]
        if order_seed.shape == (size,) and order_seed.dtype == index_type:
            given = order_seed  # the joined order itself: taken as it is, not copied
    all_order = given if given is not None else np.empty(size, index_type)
    for t, (shift, span) in enumerate(spans):
        keys = packed_key(fps, span << shift)  # (one block: its bits shifted down)
        if joined:
            if given is None:
                all_order[t * n : (t + 1) * n] = stable_order(keys)
            # Where each block value's rows begin: the counts summed, from
            # the table's own part of the joined order (its first count
            # carries that offset, so one pass makes both).
            starts = all_starts[bases[t] : bases[t] + span + 2]
            counts = np.bincount(keys, minlength=span + 1).astype(index_type)
            counts[0] += t * n
            starts[0] = t * n
            np.cumsum(counts, out=starts[1:])
            table = Sorted(keys.dtype.type, np.empty(0, keys.dtype), all_order, starts)
        else:
            by_offset = _offsets_fit(span.bit_length(), n)
            table = Sorted.of(keys, key_count=span + 1 if by_offset else None)
        flips = [x >> shift for x in xors[t]]  # (one block a table: its bits shifted down)
        tables.append(Keyed(span << shift, np.array(flips, keys.dtype), table))
    if not joined:
        return tables, None
    sizes = [len(t.flips) for t in tables]
    lookup = _Joined(
        spans,
        np.repeat(np.arange(len(tables)), sizes),
        np.concatenate([t.flips.astype(np.int64) for t in tables]),
        np.repeat(np.array(bases, np.int64), sizes),
        all_starts,
        all_order,
    )
    return tables, lookup


class Snapshot:
    """The fingerprints of an index at one moment, held in memory for batch
    queries: the ids and fingerprints, and per k the tables sorted by their bits
    (built on first use, kept for the next batch).

    Rows written since (by the holder, which knows them: see add) are kept
    apart, ``added_ids`` / ``added_fps``, and compared one by one (added_within)
    until there are many of them (merged). Threads may share a snapshot: the
    two added arrays are replaced together, in one assignment, so a reader
    always sees a pair that belongs together, and tables built on first use
    by two threads at once are built twice, never half."""

    def __init__(
        self,
        ids: np.ndarray,
        fps: np.ndarray,
        version: object,
        signatures: Sketches | None = None,
        orders: dict[int, Seed] | None = None,
        *,
        every_signature: bool = True,
    ) -> None:
        self.ids = ids
        self.fps = fps.astype(np.uint64, copy=False)
        # The versions it was read at (backend.Versions; None: made otherwise),
        # which the caller compares (Reader: a row read back not as held).
        self.version = version
        # The rows' signatures as words (signature.as_words) and which rows
        # have one, position by position, or None (not held): what lets a
        # query drop candidates that fail verification before reading them.
        self.signatures = signatures
        # Whether those are every held row's (a row without one has none):
        # not after a merge, whose added rows' signatures are not held.
        self._every_signature = every_signature
        self._bands: np.ndarray | None = None  # see meeting
        self._tables: dict[int, tuple[Plan, list[Keyed]]] = {}
        self._probed: dict[int, list[Keyed] | None] = {}
        self._joined: dict[int, _Joined | None] = {}
        self._seeds: dict[int, Seed] = dict(orders or {})
        self._added = (np.zeros(0, np.int64), np.zeros(0, np.uint64))

    @property
    def added_ids(self) -> np.ndarray:
        return self._added[0]

    @property
    def added_fps(self) -> np.ndarray:
        return self._added[1]

    def add(self, ids: Sequence[int], fps: Sequence[int]) -> None:
        """Rows written since it was read: (id, unsigned fingerprint). A row
        written again is found by both entries; the caller rechecks each
        candidate's stored fingerprint, so the older one finds nothing."""
        added_ids, added_fps = self._added
        self._added = (
            np.concatenate([added_ids, np.array(ids, dtype=np.int64)]),
            np.concatenate([added_fps, np.array(fps, dtype=np.uint64)]),
        )

    def merged(self) -> Snapshot:
        """The same rows with the added ones among the others (tables rebuilt
        on first use): the ids added replace the held rows of those ids."""
        added_ids, added_fps = self._added
        keep = ~np.isin(self.ids, added_ids)
        # The last entry of an id added twice is its newest fingerprint.
        last = len(added_ids) - 1 - np.unique(added_ids[::-1], return_index=True)[1]
        ids = np.concatenate([self.ids[keep], added_ids[last]])
        fps = np.concatenate([self.fps[keep], added_fps[last]])
        signatures = None
        if self.signatures is not None:  # the added rows' signatures are not held
            signatures = Sketches(
                *(  # (the added rows: none held)
                    np.concatenate([held[keep], np.zeros((len(last), *held.shape[1:]), held.dtype)])
                    for held in self.signatures
                )
            )
        return Snapshot(ids, fps, self.version, signatures, every_signature=False)

    @property
    def holds_bands(self) -> bool:
        """Whether ``meeting`` finds every row whose band keys meet a query's:
        every row's signature held (a row without one has no band keys), and
        no row written since the snapshot was read."""
        return self._every_signature and not self.added_ids.size

    def meeting(self, keys: np.ndarray, owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(owner, position) of the held rows that have one of the band keys
        (signature.band_keys_of_words; ``owner``: whose each key is), a pair
        once for each key it meets by: a superset (keys are compared by their
        top 32 bits), which the caller judges by signature.meets on the rows
        it reads. Every held sketch's keys are sorted on first use and kept:
        one array of 64-bit entries, a key's top 32 bits above its row's
        position (96 bytes a row), made _BANDS_AT_ONCE sketches at a time."""
        empty = np.zeros(0, np.intp)
        if self.signatures is None or not len(keys):
            return empty, empty
        bands = self._bands
        if bands is None:
            words, present, *_ = self.signatures
            at = np.flatnonzero(present)
            parts = [np.zeros(0, np.uint64)]
            for start in range(0, len(at), _BANDS_AT_ONCE):
                rows = at[start : start + _BANDS_AT_ONCE]
                top = band_keys_of_words(words[rows]).view(np.uint64) >> _HALF
                parts.append(((top << _HALF) | rows.astype(np.uint64)[:, None]).ravel())
            bands = np.concatenate(parts)
            bands.sort()
            self._bands = bands
        wanted = np.asarray(keys, np.int64).view(np.uint64) >> _HALF << _HALF
        lo = np.searchsorted(bands, wanted, side="left")
        n = np.searchsorted(bands, wanted | _LOW, side="right") - lo
        total = int(n.sum())
        if not total:
            return empty, empty
        offsets = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(total)
        positions = (bands[offsets] & _LOW).astype(np.intp)
        return np.repeat(np.asarray(owner, np.intp), n), positions

    def added_within(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(query position, id) of every added row within distance k of each
        unsigned fingerprint: compared one by one (in chunks bounding memory)."""
        out_q, out_ids = [], []
        added_ids, added_fps = self._added
        if added_ids.size:
            per = max(1, _ADDED_COMPARED // len(added_ids))
            for start in range(0, len(queries), per):
                chunk = queries[start : start + per]
                near = np.bitwise_count(chunk[:, None] ^ added_fps[None, :]) <= k
                q, a = np.nonzero(near)
                out_q.append(q + start)
                out_ids.append(added_ids[a])
        if not out_q:
            empty = np.zeros(0, np.int64)
            return empty, empty
        return np.concatenate(out_q), np.concatenate(out_ids)

    def as_held(self, positions: np.ndarray, rows: dict[int, Any]) -> bool:
        """Rows read back by id (id -> (id, key, signed fingerprint,
        signature)) for the held rows at ``positions``: where a row still has
        the fingerprint held and was not written since by the holder (an
        added row), its signature becomes the one held, which is what the
        index held when the snapshot was found current. A row that kept a
        middle set (not held: its sketch is) keeps its own where it is a
        middle set's of the sketch held; where it is not, the row was
        written since and what it held cannot be made again: False (the
        caller asks again where the index has changed since; where it has
        not, the bytes were overwritten uncounted, damage no read notices,
        and the row is judged as read)."""
        if self.signatures is None or not positions.size:
            return True
        held = self.signatures
        fps = self.fps[positions].view(np.int64).tolist()
        added = set(self.added_ids.tolist())
        made = True
        for at, row_id, fingerprint in zip(
            positions.tolist(), self.ids[positions].tolist(), fps, strict=True
        ):
            row = rows.get(row_id)
            if row is None or row[2] != fingerprint or row_id in added or not held.present[at]:
                continue
            signature = held_signature(held, at)
            if held.middle[at]:
                mine = row[3]
                if (
                    mine is None
                    or mine[:NBYTES] != signature[:NBYTES]
                    or middle_set(mine) is None
                    or of_characters(mine) != held.characters[at]
                ):
                    made = False  # (written since: its middle set as held is not known)
                continue
            if row[3] != signature:
                rows[row_id] = (*row[:3], signature)
        return made

    @property
    def nbytes(self) -> int:
        """The memory its arrays take, the tables built so far included."""
        arrays = [self.ids, self.fps, *self._added, *(self.signatures or ())]
        arrays += [] if self._bands is None else [self._bands]
        for _plan, tables in self._tables.values():
            arrays += [a for table in tables for a in [table.flips, *table.lookup.arrays]]
        for probed in self._probed.values():
            arrays += [a for table in probed or () for a in [table.flips, *table.lookup.arrays]]
        for joined in self._joined.values():
            if joined is not None:  # (its starts and order: the tables' own, counted above)
                arrays += [joined.table_of, joined.flips, joined.base]
        arrays += [order for _, order in self._seeds.values()]  # stored orders not used yet
        # Each array once: joined tables share one order array, their starts
        # are views of one array (counted as their own parts).
        unique = {id(a): a for a in arrays}
        return sum(a.nbytes for a in unique.values())

    def _tables_for(self, k: int) -> tuple[Plan, list[Keyed]]:
        """A batch's tables for k where the single-query ones are searched
        (plan_for), built on first use."""
        found = self._tables.get(k)
        if found is None:
            plan = plan_for(len(self.fps), k)
            tables = [keyed(self.fps, m, f) for m, f in zip(plan.masks, plan.flips, strict=True)]
            found = self._tables[k] = (plan, tables)
        return found

    def order(self, k: int) -> Seed | None:
        """The single-query tables' blocks and joined order array for k
        (built now if not yet), or None where they are not joined: what a
        stored snapshot keeps so that the next reader need not sort
        (``orders``)."""
        _, joined = self._probed_for(k)
        return None if joined is None else (joined.spans, joined.order)

    def _probed_for(self, k: int) -> tuple[list[Keyed] | None, _Joined | None]:
        """The single-query tables for k (built on first use), and their
        joined lookup where every one is found by offset."""
        if k not in self._probed:
            built = _probed_tables(self.fps, k, self._seeds.pop(k, None))
            tables, joined = (None, None) if built is None else built
            self._joined[k] = joined  # (before the tables: see the class's docstring)
            self._probed[k] = tables
        return self._probed[k], self._joined.get(k)

    def near(self, fingerprint: int, k: int) -> np.ndarray:
        """The positions of the fingerprints within distance k of one unsigned
        fingerprint, each once: per table of the layout for k, the rows whose
        block equals the query's or one of its probes (one lookup for all
        the tables where they are joined, else one a table)."""
        tables, joined = self._probed_for(k)
        if tables is None:
            _, s, _ = self.match(np.array([fingerprint], dtype=np.uint64), k)
            return np.unique(s)
        if joined is not None:  # every table by offset: all their probes at once
            keys = np.array([(fingerprint >> a) & b for a, b in joined.spans], np.int64)
            wanted = (joined.flips ^ keys[joined.table_of]) + joined.base
            lo = joined.starts[wanted]
            counts = joined.starts[wanted + 1] - lo
            candidates = joined.order[run_positions(lo, counts)]
            distance = np.bitwise_count(self.fps[candidates] ^ np.uint64(fingerprint))
            return np.unique(candidates[distance <= k])
        found = []
        for table in tables:
            shift = (table.mask & -table.mask).bit_length() - 1
            key = (fingerprint >> shift) & (table.mask >> shift)  # (one block: packed)
            lookup = table.lookup
            assert isinstance(lookup, Sorted)  # (sorted once: _probed_tables)
            if len(table.flips) == 1:  # no probes: one slice (cheaper than find's arrays)
                found.append(lookup.run_of(key))
            else:
                found.append(lookup.find(table.flips ^ table.flips.dtype.type(key))[1])
        candidates = np.concatenate(found) if found else np.zeros(0, np.int64)
        distance = np.bitwise_count(self.fps[candidates] ^ np.uint64(fingerprint))
        return np.unique(candidates[distance <= k])

    def match(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (query position, stored position, distance) within distance k,
        each once, for an array of unsigned fingerprints.

        Where the single-query tables (see near) find their rows by offset,
        a batch uses them too; else the tables of the batch plan (plan_for),
        searched. Either way tables.probe_batch: each query's probes looked
        up at once, a table at a time."""
        queries = queries.astype(np.uint64, copy=False)
        probed, _ = self._probed_for(k)
        if probed is not None and all(t.lookup.by_offset for t in probed):
            radius = shared_radius(probed)
            assert radius is not None  # (single_layout's probes: every flip within one radius)
            return probe_batch(probed, queries, self.fps, k, radius)
        plan, tables = self._tables_for(k)
        return probe_batch(tables, queries, self.fps, k, plan.radius)
