"""The in-memory paths against brute force: a held snapshot's single and
batch queries (snapshot.py), all pairs (pairs.py) and streaming dedup's
kept fingerprints (dedup._Kept), on random fingerprints with planted
neighbours and the top bit set, for every plan each of them can pick."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from simindex import BlockLayout, compiling, dedup, hamming, pairs, signature, snapshot
from simindex import tables as tables_module
from simindex.blocks import even_widths, probe_radius, probes, table_flips
from simindex.snapshot import Snapshot
from simindex.tables import Chained, Sorted, plan_for
from tests.helpers import bands_equal, compiled_or_skip, flip


@pytest.mark.parametrize("k", [0, 1, 3, 5, 7, 9, 12])
def test_in_memory_probing_equals_brute_force_for_every_block_count(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch queries and all pairs in memory, with every plan of m blocks that
    probes (radius > 0 for m <= k) or not: the same as brute force. All pairs
    both ways (offsets where the blocks allow, binary search), a flip at a
    time and many at once. (Batch queries here take the sorted tables of
    plan_for: no lookups by offset, see the test below.)"""

    monkeypatch.setattr(snapshot, "_OFFSETS_PER_ROW", 0)

    rng = random.Random(k)
    fps = [rng.getrandbits(64) for _ in range(300)]
    fps += [flip(fps[i % 40], i % 14, rng) for i in range(300)] + [0, 2**63, 2**64 - 1]
    queries = [flip(rng.choice(fps), rng.randrange(0, 10), rng) for _ in range(60)] + [2**63]
    want_pairs = sorted(
        (i, j, hamming(fps[i], fps[j]))
        for i in range(len(fps))
        for j in range(i + 1, len(fps))
        if hamming(fps[i], fps[j]) <= k
    )
    plans = []  # (m, the plan for queries, the plan for all pairs)
    for m in range(1, min(k + 1, 16) + 1):
        layout = BlockLayout(even_widths(m), tuple((b,) for b in range(m)))
        radius = probe_radius(layout, k)
        if sum(math.comb(w, i) for w in layout.widths for i in range(radius + 1)) <= 20_000:
            plans.append(
                (m, plan_for(len(fps), k, blocks=m), pairs.pairs_plan(len(fps), k, blocks=m))
            )
    assert len(plans) >= min(k + 1, 3)
    for m, plan, pair_plan in plans:
        monkeypatch.setattr(snapshot, "plan_for", lambda n, k_, plan=plan, **_: plan)
        monkeypatch.setattr(pairs, "pairs_plan", lambda n, k_, plan=pair_plan, **_: plan)
        held = Snapshot(np.arange(len(fps)), np.array(fps, dtype=np.uint64), None)
        q, s, d = held.match(np.array(queries, dtype=np.uint64), k)
        got = sorted(zip(q.tolist(), s.tolist(), d.tolist(), strict=True))
        want = sorted(
            (qi, si, hamming(fp, qv))
            for qi, qv in enumerate(queries)
            for si, fp in enumerate(fps)
            if hamming(fp, qv) <= k
        )
        assert got == want, (k, m, plan.radius)
        for offsets, chunk in [(True, 1 << 18), (False, 1 << 18), (True, 1), (False, 1)]:
            monkeypatch.setattr(pairs, "pairs_by_offsets", lambda n, w, p, o=offsets: o and w <= 22)
            monkeypatch.setattr(tables_module, "_PAIRED", chunk)
            a, b, d = pairs.pairs_within(np.array(fps, dtype=np.uint64), k)
            got_pairs = sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True))
            assert got_pairs == want_pairs, (k, m, plan.radius, offsets, chunk)


def test_pairs_within_long_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs of more rows than a byte counts (300 equal fingerprints, the top
    bit set) paired with runs a bit apart in every block, so that the first
    table finds them by a probe: every pair once, probed or not."""

    pairs_plan = pairs.pairs_plan  # before it is patched below
    x = 2**63 + 12345
    y = x ^ 1 << 5 ^ 1 << 30 ^ 1 << 50
    z = y ^ 1 << 6 ^ 1 << 31 ^ 1 << 51
    fps = np.array([x] * 300 + [y] * 300 + [z] * 2, dtype=np.uint64)
    distance = np.bitwise_count(fps[:, None] ^ fps[None, :])
    for blocks, offsets in [(3, False), (3, True), (9, False)]:
        plan = pairs_plan(len(fps), 8, blocks=blocks)
        monkeypatch.setattr(pairs, "pairs_plan", lambda n, k_, plan=plan, **_: plan)
        monkeypatch.setattr(pairs, "pairs_by_offsets", lambda n, w, p, o=offsets: o)
        a, b, d = pairs.pairs_within(fps, 8)
        assert len(set(zip(a.tolist(), b.tolist(), strict=True))) == len(a)
        want_a, want_b = np.nonzero(np.triu(distance <= 8, 1))
        assert sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True)) == sorted(
            zip(want_a.tolist(), want_b.tolist(), distance[want_a, want_b].tolist(), strict=True)
        )


@pytest.mark.parametrize("k", [9, 10, 15])
def test_pairs_within_default_plan_equals_brute_force(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 fingerprints (random, planted neighbours, the top bit set):
    the plan pairs_plan picks probes, and finds what brute force does
    (numpy's: as a process that has not loaded the compiled loops pairs
    so few, whatever an earlier test loaded)."""
    monkeypatch.setattr(pairs, "tried", lambda module: False)
    rng = np.random.default_rng(k)
    base = rng.integers(0, 2**64, 9_000, dtype=np.uint64)
    bits = np.uint64(1) << rng.integers(0, 64, (1_000, k)).astype(np.uint64)
    near = base[:1_000] ^ np.bitwise_or.reduce(bits, axis=1)
    fps = np.concatenate([base, near, [2**63, 2**64 - 1]]).astype(np.uint64)
    assert pairs.pairs_plan(len(fps), k).radius > 0
    want = []
    for i in range(len(fps)):
        distance = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        (j,) = np.nonzero(distance <= k)
        want += zip([i] * len(j), (j + i + 1).tolist(), distance[j].tolist(), strict=True)
    a, b, d = pairs.pairs_within(fps, k)
    assert sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True)) == sorted(want)
    assert len(want) >= 1_000


@pytest.mark.parametrize(
    ("widths", "per_table", "k"),
    [((64,), 1, 0), ((22, 21, 21), 1, 8), ((16,) * 4, 2, 3), ((13, 13, 13, 13, 12), 2, 4)],
)
def test_a_layout_s_lookups_are_every_value_within_its_radius(
    widths: tuple[int, ...], per_table: int, k: int
) -> None:
    """blocks.table_flips (what the in-memory tables look up) against the
    rule written out: every XOR of at most probe_radius bits inside a
    table's mask, each once; and the database's probes, block by block,
    are the same lookups."""
    layout = BlockLayout(widths, tuple(itertools.combinations(range(len(widths)), per_table)))
    radius = probe_radius(layout, k)
    found = table_flips(layout, k)
    asked = probes(layout, k)
    assert asked is not None
    spans = layout.spans()
    for t, mask in enumerate(layout.table_masks()):
        bits = [1 << b for b in range(64) if mask >> b & 1]
        want = {sum(c) for r in range(radius + 1) for c in itertools.combinations(bits, r)}
        assert len(found[t]) == len(set(found[t])) and set(found[t]) == want
        by_probe = [
            sum(f << spans[b][0] for b, f in zip(layout.tables[t], p.flips, strict=True))
            for p in asked
            if p.table == t
        ]
        assert by_probe == found[t]


@pytest.mark.usefixtures("reference_costs")
def test_pairs_plan_probes_only_where_it_pays() -> None:
    """By the reference costs, k <= 3 keeps k + 1 blocks (no probes, one
    pass a table) up to a few million fingerprints, and k <= 2 at ten
    million; there k = 3 takes two 32-bit blocks probed within 1 bit rather
    than the equal runs of four 16-bit blocks (150 rows a key); a million
    at k = 8 take three blocks probed within 2 bits (a few hundred passes)
    rather than narrow blocks' billions of candidates."""

    for n in (0, 1, 1_000, 100_000, 1_000_000, 10_000_000):
        for k in range(4 if n < 10_000_000 else 3):
            plan = pairs.pairs_plan(n, k)
            assert (len(plan.masks), plan.radius) == (k + 1, 0), (n, k)
    plan = pairs.pairs_plan(10_000_000, 3)
    assert (len(plan.masks), plan.radius) == (2, 1)
    plan = pairs.pairs_plan(1_000_000, 8)
    assert (len(plan.masks), plan.radius) == (3, 2)


def test_a_sorted_table_of_keys_given_holds_their_low_bits() -> None:
    """Keys given when a table is made, with ``occupied``, are found as
    those added later are."""
    table = Sorted(np.int64, np.array([5, 9]), np.array([0, 1]), occupied=4)
    table.add(np.array([21]), np.array([2]))
    at, positions = table.find(np.array([9, 5, 21, 37]))
    assert sorted(zip(at.tolist(), positions.tolist(), strict=True)) == [(0, 1), (1, 0), (2, 2)]


@pytest.mark.parametrize("dtype", [np.uint64, np.int64])
@pytest.mark.parametrize("occupied", [None, 4, 12])
def test_a_growing_sorted_table_finds_every_equal_key(
    dtype: type, occupied: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tables.Sorted grown batch by batch (runs merged as they grow) finds
    every (wanted index, position) with equal keys, each once, as a scan of
    everything added does, in pieces of at most tables._FOUND positions
    but for one longer run; with a table of the keys' low bits held
    (``occupied``: 4 bits, nearly every slot taken; 12, most empty) too."""
    monkeypatch.setattr(tables_module, "_FOUND", 16)
    rng = np.random.default_rng(3)
    table = Sorted(dtype, occupied=occupied)
    keys: list[int] = []
    for size in [1, 5, 0, 40, 3, 200, 7, 7, 7, 1000, 2, 90, 600]:
        low = -(1 << 63) if dtype is np.int64 else 0
        values = rng.integers(low, low + 50, size, dtype=dtype)  # many equal keys
        values[::3] = rng.integers(low, -low - 1 if low else (1 << 63), size, dtype=dtype)[::3]
        table.add(values, np.arange(len(keys), len(keys) + size, dtype=np.int64))
        keys += values.tolist()
        wanted = np.concatenate([rng.integers(low, low + 60, 80, dtype=dtype), values[:5]])
        at, positions = table.find(wanted)
        longest = max(Counter(keys).values(), default=0)  # (a run is never split)
        assert all(len(a) <= max(16, longest) for a, _ in table.pieces(wanted))
        want = [
            (w, p)
            for w, value in enumerate(wanted.tolist())
            for p, key in enumerate(keys)
            if key == value
        ]
        assert sorted(zip(at.tolist(), positions.tolist(), strict=True)) == want
    assert len(table._runs) <= 6  # (each run under half the one before)


@pytest.mark.parametrize("k", [0, 3, 5, 8, 11])
@pytest.mark.parametrize("compiled", [False, True])
def test_streaming_dedup_finds_every_kept_within_k_as_brute_force(
    k: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What streaming dedup kept (simindex dedup CORPUS), looked up a batch at
    a time: k + 1 exact blocks up to 3 (tables.Sorted's runs, merged as they
    grow), probes through chains of keys above, by numpy's gathers and by
    the compiled loop (Chained.visits); and a batch's own pairs both ways."""
    loops = None
    if compiled:
        compiled_or_skip()
        from simindex.compiled import kernels

        loops = kernels()
        assert loops is not None
    monkeypatch.setattr(tables_module, "_LOOKUPS", 1000)  # (a few queries a chunk)
    rng = random.Random(k)
    tables = dedup._Kept(k, 0.0)
    assert any(isinstance(t.lookup, Chained) for t in tables._tables) == (k > 3)
    kept: list[int] = []
    none = np.zeros(0, np.int64)
    for _ in range(25):
        queries = [
            flip(rng.choice(kept), rng.randrange(0, k + 3), rng)
            if kept and i % 3
            else rng.getrandbits(64) | (1 << 63) * (i % 2)
            for i in range(60)
        ]
        marks = signature.Marks(
            np.array(queries, dtype=np.uint64),
            np.zeros((60, signature.WORDS), np.uint64),
            np.zeros((60, signature.SMALL), np.uint32),
            np.zeros(60, np.intp),
            np.zeros(60, bool),
            np.zeros(60, bool),
            signature.middle_many([None] * 60),
        )
        i, p = tables._near_kept(marks, loops)
        assert len(set(zip(i.tolist(), p.tolist(), strict=True))) == len(i)  # each once
        want = {
            (q, position)
            for q, fp in enumerate(queries)
            for position, other in enumerate(kept)
            if hamming(fp, other) <= k
        }
        assert set(zip(i.tolist(), p.tolist(), strict=True)) == want
        i, j = tables._near_in_batch(marks, none, none, None, loops)
        among = {
            (a, b) for a in range(60) for b in range(a) if hamming(queries[a], queries[b]) <= k
        }
        assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == sorted(among)
        keep = np.arange(60) % 2 == 0
        rank = np.cumsum(keep) - 1 + len(kept)
        tables._keep(marks, keep, rank, none, none, [f"q{q}" for q in range(60)])
        kept += queries[::2]


@pytest.mark.parametrize("k", range(16))
@pytest.mark.parametrize("offsets", [True, False])
def test_one_query_in_memory_equals_brute_force(
    k: int, offsets: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshot.near (what a held snapshot answers single queries with), with
    its tables found by offset and by binary search: the same as brute force."""

    monkeypatch.setattr(snapshot, "_OFFSETS_PER_ROW", 2**40 if offsets else 0)
    rng = random.Random(100 + k)
    fps = [rng.getrandbits(64) for _ in range(400)]
    fps += [flip(fps[i % 50], i % 17, rng) for i in range(400)]
    fps += [0, 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64 - 1]
    queries = [flip(rng.choice(fps), rng.randrange(0, 12), rng) for _ in range(40)]
    queries += [0, 2**63, 2**64 - 1, rng.getrandbits(64)]
    want = {q: [i for i, fp in enumerate(fps) if hamming(fp, q) <= k] for q in queries}
    held = Snapshot(np.arange(len(fps)), np.array(fps, dtype=np.uint64), None)
    for q in queries:  # the layout single_layout picks
        assert held.near(q, k).tolist() == want[q], (k, q)
    # Every layout of one-block tables that probes within MAX_PROBES.
    original, tried, joined = snapshot.single_layout, 0, 0
    for m in range(1, k + 2):
        layout = BlockLayout(even_widths(m), tuple((b,) for b in range(m)))
        found = probes(layout, k) if m <= k else None
        if m <= k and (found is None or m == 1):  # as single_layout
            continue
        tried += 1
        monkeypatch.setattr(snapshot, "single_layout", lambda n, k_, c=(layout, found): c)
        held = Snapshot(np.arange(len(fps)), np.array(fps, dtype=np.uint64), None)
        for q in queries:
            assert held.near(q, k).tolist() == want[q], (k, m, q)
        tables = held._probed[k] or []
        by_offset = len(tables) > 1 and all(t.lookup.by_offset for t in tables)
        assert (held._joined[k] is not None) == by_offset  # all probes in one lookup
        joined += by_offset
        # A batch: by offset through the same tables where they have offsets.
        monkeypatch.setattr(tables_module, "_LOOKUPS", 64)  # several chunks
        monkeypatch.setattr(tables_module, "_FOUND", 5)  # several pieces
        qs, ss, ds = held.match(np.array(queries, dtype=np.uint64), k)
        got = sorted(zip(qs.tolist(), ss.tolist(), ds.tolist(), strict=True))
        expected = sorted(
            (qi, si, hamming(fps[si], qv)) for qi, qv in enumerate(queries) for si in want[qv]
        )
        assert got == expected, (k, m)
    monkeypatch.setattr(snapshot, "single_layout", original)
    assert tried >= (1 if k <= 1 else 2)
    assert joined >= (1 if offsets and k >= 2 else 0)


def test_a_snapshot_meets_every_held_sketch_a_band_of_a_query_equals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Snapshot.meeting against brute force: every (query, row) whose
    sketches have one band equal (tests.helpers.bands_equal, from the rule's
    words), once for each band equal; never a row held without a signature;
    its keys made a few sketches at a time; and it says it no longer knows
    every row once rows are added or merged."""
    monkeypatch.setattr(snapshot, "_BANDS_AT_ONCE", 7)
    rng = np.random.default_rng(3)
    n = 400
    sketches = rng.integers(0, 256, (n, signature.NBYTES), dtype=np.uint8)
    for i in range(100, n):  # copies: one band of an earlier row, or several
        for band in rng.choice(12, size=1 + i % 3, replace=False).tolist():
            at = slice(5 * band, 5 * band + 5)
            sketches[i, at] = sketches[i % 100, at]
    words = sketches.view("<u8").astype(np.uint64)
    present = rng.random(n) > 0.1
    queries = [bytes(sketches[i]) for i in rng.choice(n, 30).tolist()]
    queries += [bytes(rng.integers(0, 256, signature.NBYTES, dtype=np.uint8)) for _ in range(5)]
    keys, owner = signature.keys_of_bands(queries)
    held_as = signature.Sketches(
        words, present, np.zeros(n, bool), np.zeros(n, bool), np.zeros((n, 8), np.uint64)
    )
    held = Snapshot(np.arange(n) * 7, np.zeros(n, np.uint64), None, held_as)
    assert held.holds_bands
    q, s = held.meeting(keys, owner)
    got = sorted(zip(q.tolist(), s.tolist(), strict=True))
    want = sorted(
        (qi, si)
        for qi, query in enumerate(queries)
        for si in range(n)
        for band in range(12)
        if present[si] and query[5 * band : 5 * band + 5] == bytes(sketches[si, 5 * band :][:5])
    )
    assert got == want and len(set(want)) > 2 * len(queries)
    assert set(want) == {
        (qi, si)
        for qi, query in enumerate(queries)
        for si in range(n)
        if present[si] and bands_equal(query, bytes(sketches[si]))
    }
    held.add([5], [1])
    assert not held.holds_bands and not held.merged().holds_bands


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 2, 5_000])
def test_stable_order_is_numpys_stable_argsort(dtype: type, n: int) -> None:
    """The radix order the sorted tables are built with: the same positions as
    np.argsort(kind="stable"), ties (many) in their first order, keys up to
    the top bit of the type and none above the lowest digit."""
    from simindex.tables import stable_order

    rng = np.random.default_rng(n)
    bits = np.dtype(dtype).itemsize * 8
    wide = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) << np.uint64(1)
    wide |= rng.integers(0, 2, n).astype(np.uint64)
    cases = [
        (wide >> np.uint64(64 - bits)).astype(dtype),  # the top bit set in about half
        (wide >> np.uint64(64 - bits)).astype(dtype) % dtype(7),  # ties, one digit
        (wide & np.uint64(0xFFFF_0000)).astype(dtype) if bits > 16 else wide.astype(dtype),
    ]
    for keys in cases:
        keys[: n // 3] = keys[n // 3 : 2 * (n // 3)]
        assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    with pytest.raises(TypeError):
        stable_order(np.arange(3, dtype=np.int64))


def _sent(fps: np.ndarray, plan: pairs.Plan, t: int, prefix: int) -> dict[int, list[int]]:
    """The positions each group of table t receives, as the Spark path sends
    them: every row to its own group, and to its prefix XOR each visit flip
    whose highest bit its prefix has clear."""
    groups: dict[int, list[int]] = {}
    flips = pairs.visit_flips(plan, t, prefix)
    for i, fp in enumerate(fps.tolist()):
        own = fp & prefix
        groups.setdefault(own, []).append(i)
        for f in flips:
            if not own & (1 << (f.bit_length() - 1)):
                groups.setdefault(own ^ f, []).append(i)
    return groups


@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize(("k", "blocks"), [(8, 3), (8, None), (6, 4), (3, 2), (3, None), (0, None)])
def test_group_pairs_over_every_group_equal_brute_force(
    k: int, blocks: int | None, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Spark path's task (pairs.group_pairs): over the groups of every
    table, for groups of 0 bits (one group a table) to a whole block (no
    rest), every pair within k is found once, as brute force finds it, on
    random fingerprints with planted neighbours, 100 identical copies and
    the top bit set; probed plans (radius 1 and 2) and plain pigeonhole;
    paired by numpy and by the compiled loops (where a group's keys are
    narrow enough for them: checked that some are)."""
    ran: list[int] = []
    real_rule, real_chunks = pairs.pairs_by_offsets, tables_module._PAIRED
    if compiled:
        compiled_or_skip()
        real = pairs._compiled_group

        def spying(*args: object) -> object:
            ran.append(1)
            return real(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(pairs, "_compiled_group", spying)
        # every group whose keys the loops take, however sparse (here, at
        # 1,600 rows, most would pair with numpy)
        monkeypatch.setattr(pairs, "_KEYS_A_ROW", 1 << 40)

    rng = np.random.default_rng(k * 10 + (blocks or 0))
    base = rng.integers(0, 2**64, 1_200, dtype=np.uint64)
    bits = np.uint64(1) << rng.integers(0, 64, (300, k + 1)).astype(np.uint64)
    keep = rng.random((300, k + 1)) < 0.6
    near = base[:300] ^ np.bitwise_or.reduce(np.where(keep, bits, np.uint64(0)), axis=1)
    edges = np.array([2**63, 2**64 - 1, 0], dtype=np.uint64)
    fps = np.concatenate([base, near, np.full(100, base[7], dtype=np.uint64), edges])
    want = set()
    for i in range(len(fps)):
        distance = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        (j,) = np.nonzero(distance <= k)
        want |= set(zip([i] * len(j), (j + i + 1).tolist(), distance[j].tolist(), strict=True))
    plan = pairs.pairs_plan(len(fps), k, blocks=blocks)
    assert (plan.radius > 0) == (blocks is not None)
    # numpy: its lookups by offset and searched, in chunks of a flip (a large
    # group) and whole
    # and by the real rule (on groups of 3 bits)
    ways = [(None, None)] if compiled else [(True, 64), (False, 1 << 18), (None, None)]
    for (offsets, chunk), group_bits in itertools.product(ways, (0, 3, 64)):
        if offsets is False and group_bits == 64:
            continue  # (the whole table a prefix: no flips, both ways look up alike)
        if not compiled and offsets is None and group_bits != 3:
            continue
        if offsets is not None:
            monkeypatch.setattr(pairs, "pairs_by_offsets", lambda n, w, p, o=offsets: o and w <= 22)
            monkeypatch.setattr(tables_module, "_PAIRED", chunk)
        elif not compiled:
            monkeypatch.setattr(pairs, "pairs_by_offsets", real_rule)
            monkeypatch.setattr(tables_module, "_PAIRED", real_chunks)
        got = []
        for t, mask in enumerate(plan.masks):
            prefix = pairs.prefix_mask(mask, min(group_bits, mask.bit_count()))
            assert prefix & mask == prefix and prefix.bit_count() == min(
                group_bits, mask.bit_count()
            )
            for group, members in _sent(fps, plan, t, prefix).items():
                at = np.array(members)
                a, b, d = pairs.group_pairs(fps[at], k, plan, t, prefix, group, compiled=compiled)
                got += zip(
                    np.minimum(at[a], at[b]).tolist(),
                    np.maximum(at[a], at[b]).tolist(),
                    d.tolist(),
                    strict=True,
                )
        assert len(got) == len(set(got)), "a pair found twice"
        assert set(got) == want
    assert len(want) > 5_000
    assert len(ran) > (30 if compiled else -1) and bool(ran) == compiled


@pytest.mark.parametrize("cpus", [2, 3])
def test_pairs_within_in_threads_equals_one_thread(
    cpus: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paired by threads (the tables' runs and slices of their flips), the
    pairs are the same as in one thread, and brute force's."""

    rng = np.random.default_rng(cpus)
    base = rng.integers(0, 2**64, 6_000, dtype=np.uint64)
    bits = np.uint64(1) << rng.integers(0, 64, (600, 8)).astype(np.uint64)
    near = base[:600] ^ np.bitwise_or.reduce(bits[:, : rng.integers(1, 9)], axis=1)
    fps = np.concatenate([base, near, np.full(30, base[3], dtype=np.uint64)])
    monkeypatch.setattr(pairs, "pairs_plan", lambda n, k, **_: plan_for(n, k, blocks=3))
    monkeypatch.setattr(pairs, "usable_cpus", lambda: 1)
    one = pairs.pairs_within(fps, 8, compiled=False)  # (numpy's threads, whatever was loaded)
    monkeypatch.setattr(pairs, "_THREADED_MIN", 0)
    monkeypatch.setattr(pairs, "usable_cpus", lambda: cpus)
    threaded = pairs.pairs_within(fps, 8, compiled=False)
    assert sorted(zip(*(x.tolist() for x in one), strict=True)) == sorted(
        zip(*(x.tolist() for x in threaded), strict=True)
    )
    want = set()
    for i in range(len(fps)):
        distance = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        (j,) = np.nonzero(distance <= 8)
        want |= set(zip([i] * len(j), (j + i + 1).tolist(), distance[j].tolist(), strict=True))
    a, b, d = threaded
    assert sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True)) == sorted(want)
    assert len(want) > 600


def test_the_spark_groups_are_sized_by_their_largest() -> None:
    """simindex.spark sizes a table's groups from a histogram of its block's
    highest bits (no Spark needed): largest_group gives the rows of the
    largest group, visitors included, as the rows sent make it; on
    fingerprints whose highest 6 bits are all clear (no bucket big, every
    group skewed) group_bits takes more bits than for uniform ones, and the
    largest group it leaves fits GROUP_ROWS."""
    from simindex.spark import _pairs

    rng = np.random.default_rng(4)
    fps = rng.integers(0, 2**58, 6_000, dtype=np.uint64)  # the highest 6 bits clear
    fps[:3] = [0, 2**58 - 1, 2**57]
    plan = plan_for(len(fps), 8, blocks=3)
    for t, mask in enumerate(plan.masks):
        high = min(_pairs.HISTOGRAM_BITS, mask.bit_count())
        top = pairs.prefix_mask(mask, high)
        shift = (top & -top).bit_length() - 1
        counts = np.bincount(
            ((fps & np.uint64(top)) >> np.uint64(shift)).astype(np.int64), minlength=1 << high
        )
        for bits in (0, 2, 5, 9):
            prefix = pairs.prefix_mask(mask, bits)
            sent = _sent(fps, plan, t, prefix)
            want = max(len(members) for members in sent.values())
            assert _pairs.largest_group(counts, plan, t, bits) == want
    mask = plan.masks[0]  # the block of the highest bits
    high = min(_pairs.HISTOGRAM_BITS, mask.bit_count())
    top = pairs.prefix_mask(mask, high)
    shift = (top & -top).bit_length() - 1
    counts = np.bincount(
        ((fps & np.uint64(top)) >> np.uint64(shift)).astype(np.int64), minlength=1 << high
    )
    uniform = np.full(1 << high, len(fps) >> high, dtype=np.int64)
    old = _pairs.GROUP_ROWS
    try:
        _pairs.GROUP_ROWS = 400
        skewed = _pairs.group_bits(len(fps), plan, 0, 1, counts)
        assert skewed > _pairs.group_bits(len(fps), plan, 0, 1, uniform) + 3
        assert _pairs.largest_group(counts, plan, 0, skewed) <= 400
    finally:
        _pairs.GROUP_ROWS = old


def _brute_pairs(fps: np.ndarray, k: int) -> list[tuple[int, int, int]]:
    want = []
    for i in range(len(fps)):
        distance = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        (j,) = np.nonzero(distance <= k)
        want += zip([i] * len(j), (j + i + 1).tolist(), distance[j].tolist(), strict=True)
    return sorted(want)


@pytest.mark.parametrize(
    ("k", "blocks", "per_table"),
    [(8, 5, 2), (3, 5, 2), (3, 6, 3), (5, 6, 2), (4, 6, 3), (2, 4, 3)]
    + [pytest.param(8, 4, 2, marks=pytest.mark.slow)],  # 6 tables of 32 bits, radius 4
)
def test_pairs_within_tables_of_several_blocks_equal_brute_force(
    k: int, blocks: int, per_table: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plans whose tables are combinations of several blocks (Manku's, keys
    packed from blocks that are not side by side), probed or not, each way of
    looking up (offsets, a table of the keys there, binary search), a flip at
    a time and many at once: every pair within k once, as brute force finds
    them, on random fingerprints, planted neighbours, copies and the top bit set."""

    rng = np.random.default_rng(k * 100 + blocks * 10 + per_table)
    base = rng.integers(0, 2**64, 700, dtype=np.uint64)
    bits = np.uint64(1) << rng.integers(0, 64, (400, k + 1)).astype(np.uint64)
    keep = rng.random((400, k + 1)) < 0.7
    near = base[rng.integers(0, 700, 400)] ^ np.bitwise_or.reduce(
        np.where(keep, bits, np.uint64(0)), axis=1
    )
    top = base[:50] | np.uint64(2**63)
    edges = np.array([0, 2**63, 2**64 - 1, 2**63 + 1], dtype=np.uint64)
    fps = np.concatenate([base, near, top, np.full(20, base[3], dtype=np.uint64), edges])
    want = _brute_pairs(fps, k)
    plan = pairs.pairs_plan(len(fps), k, blocks=blocks, per_table=per_table)
    assert len(plan.masks) == math.comb(blocks, per_table)
    assert all(m.bit_count() > 64 // blocks + 1 for m in plan.masks)
    widest = {"offsets": 22, "occupied": 28, "search": 64}  # (else by binary search)
    for how, chunk in [("offsets", 1 << 18), ("occupied", 1 << 18), ("search", 1 << 18)] + [
        ("occupied", 7),
        ("search", 7),
    ]:
        monkeypatch.setattr(
            pairs, "pairs_lookup", lambda n, w, p, h=how: h if w <= widest[h] else "search"
        )
        monkeypatch.setattr(tables_module, "_PAIRED", chunk)
        counts: dict[str, int] = {}
        a, b, d = pairs.pairs_within(fps, k, plan=plan, counts=counts)
        got = sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True))
        assert got == want, (how, chunk)
        assert counts["compared"] >= len(want)
    assert len(want) > 300


@pytest.mark.usefixtures("reference_costs")
def test_pairs_plan_widens_its_tables_as_n_grows() -> None:
    """The plan priced by N (per_table=None) is the one-block plan while the
    fingerprints are few (k = 8 at a million: three blocks probed within 2
    bits; k <= 3: k + 1 blocks) and has tables of two blocks, wider keys,
    once the rows a probe finds would dominate; per_table=1 (pairs_within's
    and simindex.spark's, until the crossover is measured)
    keeps one block a table at every size."""

    for n in (1_000, 1_000_000):
        for k in (0, 1, 3, 8):
            assert pairs.pairs_plan(n, k, per_table=None) == pairs.pairs_plan(n, k), (n, k)
    wide = pairs.pairs_plan(300_000_000, 8, per_table=None)
    assert (len(wide.masks), wide.radius) == (10, 2)
    assert min(m.bit_count() for m in wide.masks) == 25
    assert len(pairs.pairs_plan(300_000_000, 8).masks) == 3
    exact = pairs.pairs_plan(100_000_000, 3, per_table=None)
    assert exact.radius == 0 and len(exact.masks) > 4


def test_pairs_within_pairs_with_numpy_where_its_plan_is_cheaper() -> None:
    """Where numba is there, pairs_within still pairs k <= 1 with numpy's
    plan (one or two keys of 32 bits and more, which the compiled loops do
    not take, are cheaper than their narrower tables), and k = 8 compiled,
    by the compiled costs' plan."""
    from simindex import compiled

    compiled_or_skip()
    n = 3_000_000
    cpus = pairs.usable_cpus()  # (the threads a table's probes are shared by)
    for k in (0, 1):
        plan, fast = pairs._chosen(n, k, None, None)
        assert fast is None and plan == pairs.pairs_plan(n, k, cpus=cpus)
        assert max(m.bit_count() for m in plan.masks) > compiled.MAX_WIDTH
    plan, fast = pairs._chosen(n, 8, None, None)
    wanted = pairs.pairs_plan(n, 8, per_table=None, compiled=True, cpus=cpus)
    assert fast is not None and plan == wanted
    plan, fast = pairs._chosen(n, 8, None, False)
    assert fast is None and plan == pairs.pairs_plan(n, 8, cpus=cpus)


@pytest.mark.usefixtures("reference_costs")
def test_compiled_pairs_plan_is_priced_by_the_compiled_costs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Priced by the compiled loops' costs (a lookup costs more than a row
    found there), pairs_plan keeps one block a table longer, to 100M at k =
    8, widens past it, and never gives a table wider than compiled.MAX_WIDTH;
    pairs_within pairs by that plan when it pairs compiled."""
    from simindex import compiled

    for n in (1_000_000, 10_000_000, 100_000_000):
        assert pairs.pairs_plan(n, 8, per_table=None, compiled=True) == pairs.pairs_plan(n, 8)
    for n in (300_000_000, 1_000_000_000):
        for k in (3, 8, 11):
            plan = pairs.pairs_plan(n, k, per_table=None, compiled=True)
            assert max(m.bit_count() for m in plan.masks) <= compiled.MAX_WIDTH
    wide = pairs.pairs_plan(1_000_000_000, 8, per_table=None, compiled=True)
    assert len(wide.masks) == 10 and wide.radius == 2
    # numpy's costs (a lookup about as dear as a row) widen sooner
    numpy_plan = pairs.pairs_plan(100_000_000, 8, per_table=None)
    assert len(numpy_plan.masks) == 10

    chosen: list[tuple[int, bool]] = []
    real = pairs.pairs_plan

    def spying(n: int, k: int, **kwargs: object) -> object:
        chosen.append((n, bool(kwargs.get("compiled"))))
        return real(n, k, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pairs, "pairs_plan", spying)
    fps = np.arange(100, dtype=np.uint64)
    want = pairs.pairs_within(fps, 8, compiled=False)
    assert chosen == [(100, False)]
    compiled_or_skip()
    got = pairs.pairs_within(fps, 8, compiled=True)
    assert chosen[1:] == [(100, False), (100, True)]  # numpy's plan, then the compiled one
    assert sorted(zip(*got, strict=True)) == sorted(zip(*want, strict=True))


def test_packed_key_keeps_the_bits_in_order() -> None:
    """packed_key: the masked bits side by side, lowest first, for masks of
    one run of bits or several, and the narrowest type that holds them."""
    from simindex.tables import packed_key

    rng = np.random.default_rng(1)
    values = np.concatenate(
        [rng.integers(0, 2**64, 300, dtype=np.uint64), np.array([0, 2**63, 2**64 - 1], np.uint64)]
    )
    for mask, dtype in [
        (0xFFFF, np.uint16),
        (0xFFF << 50 | 0xFF << 3, np.uint32),
        ((1 << 63) | 1, np.uint16),
        (2**64 - 1, np.uint64),
        (0, np.uint16),
    ]:
        got = packed_key(values, mask)
        assert got.dtype == dtype
        bits = [b for b in range(64) if mask >> b & 1]
        want = [sum((x >> b & 1) << i for i, b in enumerate(bits)) for x in values.tolist()]
        assert got.tolist() == want, hex(mask)


@pytest.mark.parametrize(
    ("k", "blocks", "per_table"),
    [(8, None, 1), (3, None, 1), (11, None, 1), (8, 9, 1), (8, 2, 1), (8, 5, 2), (3, 8, 3)],
)
def test_compiled_pairs_equal_brute_force(k: int, blocks: int | None, per_table: int) -> None:
    """simindex.compiled's loops (pairs_within(compiled=True)) find exactly
    what brute force and the numpy passes find: random fingerprints with the
    top bit set half the time, planted neighbours, a run of 300 equal ones
    and runs a few bits from it, every shape of plan (probed or not, one
    block a table or several, keys of up to 26 bits)."""
    from simindex import compiled

    compiled_or_skip()
    assert compiled.kernels() is not None  # numba compiles here: no silent numpy
    rng = np.random.default_rng(k * 10 + (blocks or 0))
    base = rng.integers(0, 2**64, 5_000, dtype=np.uint64)
    bits = np.uint64(1) << rng.integers(0, 64, (800, k + 1)).astype(np.uint64)
    near = base[:800] ^ np.bitwise_or.reduce(bits[:, : rng.integers(0, k + 2)], axis=1)
    x = np.uint64(2**63 + 12345)
    runs = [x] * 300 + [x ^ np.uint64(1 << 5 | 1 << 30 | 1 << 50)] * 40
    fps = np.concatenate([base, near, np.array(runs, np.uint64), [2**63, 2**64 - 1]])
    fps = fps.astype(np.uint64)
    plan = None
    if blocks is not None:
        plan = pairs.pairs_plan(len(fps), k, blocks=blocks, per_table=per_table)
    full = plan or pairs.pairs_plan(len(fps), k)
    widest = max(m.bit_count() for m in full.masks)
    assert (pairs._chosen(len(fps), k, full, True)[1] is not None) == (widest <= compiled.MAX_WIDTH)
    want = []
    for i in range(len(fps)):
        distance = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        (j,) = np.nonzero(distance <= k)
        want += zip([i] * len(j), (j + i + 1).tolist(), distance[j].tolist(), strict=True)
    a, b, d = pairs.pairs_within(fps, k, plan=plan, compiled=True)
    got = list(zip(a.tolist(), b.tolist(), d.tolist(), strict=True))
    assert len(got) == len(set(got))  # each pair once
    assert sorted(got) == sorted(want)
    a, b, d = pairs.pairs_within(fps, k, plan=plan, compiled=False)
    assert sorted(zip(a.tolist(), b.tolist(), d.tolist(), strict=True)) == sorted(want)


def test_compiled_pairs_are_used_where_they_pay_for_loading_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """By default the compiled loops pair where numba is installed and their
    price, with loading them where this process has not yet, is below
    numpy's (pairs._chosen); numpy else, and never a table wider than
    compiled.MAX_WIDTH bits."""
    from simindex import compiled

    compiled_or_skip()
    used: list[int] = []
    table = pairs._compiled_table

    def spying(*args: object, **kwargs: object) -> object:
        used.append(len(args[1]))  # type: ignore[arg-type]
        return table(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pairs, "_compiled_table", spying)
    monkeypatch.setitem(compiling._state, "mode", "auto")  # (whatever the environment says)
    monkeypatch.setattr(pairs, "pairs_table_ns", lambda *args: 1e6)  # a millisecond a table
    monkeypatch.setattr(pairs, "compiled_table_ns", lambda *args: 0.0)
    monkeypatch.setattr(pairs, "compiled_load_ns", lambda: 1e12)
    fps = np.random.default_rng(1).integers(0, 2**64, 3_000, dtype=np.uint64)
    monkeypatch.setattr(pairs, "tried", lambda module: False)  # not loaded: the load priced
    pairs.pairs_within(fps, 8)
    assert not used
    monkeypatch.setattr(pairs, "compiled_load_ns", lambda: 0.0)
    pairs.pairs_within(fps, 8)
    assert used and set(used) == {3_000}  # every table
    used.clear()
    monkeypatch.setattr(pairs, "compiled_load_ns", lambda: 1e12)
    monkeypatch.setattr(pairs, "tried", lambda module: module == compiled.LOOPS)  # loaded
    pairs.pairs_within(fps, 8)
    assert used and set(used) == {3_000}
    used.clear()
    wide = pairs.pairs_plan(3_000, 8, per_table=2, blocks=4)  # 32-bit keys
    assert max(m.bit_count() for m in wide.masks) > compiled.MAX_WIDTH
    pairs.pairs_within(fps, 8, plan=wide)
    assert not used


@pytest.mark.parametrize("k", [3, 8])
@pytest.mark.parametrize("offsets", [True, False])
def test_a_snapshot_counts_the_memory_its_tables_hold(
    k: int, offsets: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshot.nbytes (what stats() reports held) is the memory its tables
    hold, traced as numpy allocates it: no array kept alive unseen (a view
    of an array keeps all of it)."""
    import tracemalloc

    monkeypatch.setattr(snapshot, "_OFFSETS_PER_ROW", 8 if offsets else 0)
    rng = np.random.default_rng(k)
    fps = rng.integers(0, 2**64, 200_000, dtype=np.uint64)
    ids = np.arange(len(fps))
    tracemalloc.start()
    try:
        held = Snapshot(ids, fps, None)
        held.near(int(fps[0]), k)  # the single-query tables
        held.match(fps[:50], k)  # and the batch's, where they are others
        arrays = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
        )
    finally:
        tracemalloc.stop()
    traced = sum(stat.size for stat in arrays.statistics("filename"))  # numpy's data alone
    counted = held.nbytes - ids.nbytes - fps.nbytes  # (made before tracing)
    assert counted <= traced <= 1.02 * counted + (1 << 16), (traced, counted)
