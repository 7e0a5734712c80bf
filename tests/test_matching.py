"""simindex.matching on its own: the rows every query path ends with, turned
into matches. Checked against a brute-force oracle over rows as SQLite and
PostgreSQL keep them (signed 64-bit: fingerprints with the top bit set are
negative), with and without verification signatures
(simindex.signature.similarity is the oracle's estimate)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simindex import InvalidArgumentError, Match
from simindex.fingerprint import to_signed
from simindex.matching import Verify, near, unverified, within, within_each
from simindex.signature import (
    CJK,
    NBYTES,
    as_words,
    longer,
    similarity,
    threshold_for,
)

# The edges of both forms: 0, the largest signed, the smallest signed
# (2**63 unsigned), -1 signed (2**64 - 1 unsigned).
EDGES = [0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1]
FP = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**64 - 1))


def signature(rng: random.Random) -> bytes:
    return rng.randbytes(NBYTES)


def changed(sig: bytes, nibbles: int, rng: random.Random) -> bytes:
    """sig with `nibbles` distinct 4-bit bins changed: similarity falls as they grow."""
    value = int.from_bytes(sig, "little")
    for bin_ in rng.sample(range(NBYTES * 2), nibbles):
        value ^= rng.randrange(1, 16) << (4 * bin_)
    return value.to_bytes(NBYTES, "little")


def rows_near(rng: random.Random, query: int, n: int) -> list[tuple[int, str, int, bytes | None]]:
    """n rows (id, key, signed fingerprint, signature or None) at distances 0..10 of query."""
    base = signature(rng)
    rows = []
    for i in range(n):
        fp = query
        for position in rng.sample(range(64), rng.randrange(0, 11)):
            fp ^= 1 << position
        sig = changed(base, rng.randrange(0, 60), rng) if rng.random() < 0.7 else None
        rows.append((i + 1, f"key-{rng.randrange(10**6):06d}", to_signed(fp), sig))
    return rows


def oracle(
    rows: list[tuple[int, str, int, bytes | None]],
    fingerprint: int,
    k: int,
    verify: Verify | None = None,
) -> list[Match]:
    """Every row checked on its own: the unsigned fingerprint, its distance,
    the estimate where both sides have a signature; a row (id) found twice, once."""
    by_id = {}
    for row_id, key, stored, sig in rows:
        unsigned = stored % 2**64
        distance = bin(unsigned ^ fingerprint).count("1")
        estimate = None
        if verify is not None and verify.signature is not None and sig is not None:
            estimate = similarity(verify.signature, sig)
        by_id[row_id] = (key, distance, unsigned, estimate)
    found = [
        Match(*m)
        for m in by_id.values()
        if m[1] <= k and (m[3] is None or verify is None or m[3] >= verify.threshold)
    ]
    return sorted(found, key=lambda m: (m.distance, m.key))


# --- near ----------------------------------------------------------------------------------------


@given(
    stored=st.lists(st.tuples(st.integers(1, 40), FP), max_size=60),
    query=FP,
    k=st.integers(0, 64),
)
def test_near_is_every_id_within_k_once_in_the_order_first_seen(
    stored: list[tuple[int, int]], query: int, k: int
) -> None:
    rows = [(row_id, to_signed(fp)) for row_id, fp in stored]
    expected: list[int] = []
    for row_id, fp in stored:
        if bin(fp ^ query).count("1") <= k and row_id not in expected:
            expected.append(row_id)
    assert near(rows, query, k) == expected


def test_near_reads_the_top_bit_of_signed_rows() -> None:
    rows = [(1, -1), (2, -(2**63)), (3, 2**63 - 1), (4, 0)]
    assert near(rows, 2**64 - 1, 0) == [1]  # -1 signed is all ones
    assert near(rows, 2**63, 0) == [2]  # the smallest signed is the top bit alone
    assert near(rows, 2**63, 1) == [2, 4]  # and 0, one bit from the top bit alone
    assert near(rows, 2**63 - 1, 1) == [1, 3]  # all ones but the top: one from -1
    assert near(rows, 0, 64) == [1, 2, 3, 4]
    assert near([], 5, 64) == []


# --- within --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("query", [0, 2**63 - 1, 2**63, 2**64 - 1, None])
def test_within_equals_brute_force(seed: int, query: int | None) -> None:
    rng = random.Random(seed)
    fingerprint = rng.getrandbits(64) if query is None else query
    rows = rows_near(rng, fingerprint, 80)
    rows += rng.sample(rows, 10)  # the same row found twice (two blocks agreed)
    probe = rows[0][3] or signature(rng)
    for k in (0, 3, 6, 10):
        assert within(rows, fingerprint, k) == oracle(rows, fingerprint, k)
        for threshold in (0.0, 0.5, 0.8, 1.0):
            verify = Verify(probe, threshold)
            assert within(rows, fingerprint, k, verify) == oracle(rows, fingerprint, k, verify)
        unsigned = Verify(None, 0.9)  # a query by fingerprint: distance alone
        assert within(rows, fingerprint, k, unsigned) == oracle(rows, fingerprint, k)


def test_within_gives_unsigned_fingerprints_sorted_by_distance_then_key() -> None:
    rows = [
        (1, "b", -1, None),
        (2, "a", -1, None),
        (3, "c", to_signed(2**64 - 2), None),
        (4, "d", -(2**63), None),
        (5, "e", 0, None),
    ]
    assert within(rows, 2**64 - 1, 64) == [
        Match("a", 0, 2**64 - 1),
        Match("b", 0, 2**64 - 1),
        Match("c", 1, 2**64 - 2),
        Match("d", 63, 2**63),
        Match("e", 64, 0),
    ]
    assert within(rows, 2**64 - 1, 0) == [Match("a", 0, 2**64 - 1), Match("b", 0, 2**64 - 1)]


def test_within_counts_a_row_found_twice_once() -> None:
    """Two blocks that agree find one row twice: one match."""
    rows = [(7, "x", -1, None), (8, "y", 6, None), (7, "x", -1, None)]
    assert within(rows, 2**64 - 1, 64) == [Match("x", 0, 2**64 - 1), Match("y", 62, 6)]
    rows = [(7, "x", 5, None), (9, "x", 5, None)]  # two rows: two matches, whatever their keys
    assert within(rows, 5, 0) == [Match("x", 0, 5), Match("x", 0, 5)]


def test_within_verifies_only_where_both_sides_have_a_signature() -> None:
    rng = random.Random(3)
    query = signature(rng)
    alike, unlike = changed(query, 4, rng), changed(query, 100, rng)
    rows = [(1, "alike", 9, alike), (2, "unlike", 9, unlike), (3, "bare", 9, None)]
    high = similarity(query, alike)
    assert high > 0.8 > similarity(query, unlike)
    got = within(rows, 9, 0, Verify(query, 0.8))
    assert got == [Match("alike", 0, 9, high), Match("bare", 0, 9, None)]
    # Threshold 0: nothing is dropped, but every estimate is given.
    assert [m.similarity is None for m in within(rows, 9, 0, Verify(query, 0.0))] == [
        False,
        True,
        False,
    ]
    # The threshold is inclusive: a row exactly at it stays.
    assert [m.key for m in within(rows, 9, 0, Verify(query, high))] == ["alike", "bare"]
    # No verification (or a query without a signature): no estimate at all.
    assert all(m.similarity is None for m in within(rows, 9, 0))
    assert all(m.similarity is None for m in within(rows, 9, 0, Verify(None, 1.0)))
    assert within(rows, 9, 0, Verify(query, 1.0)) == [Match("bare", 0, 9, None)]


@pytest.mark.parametrize("bad", [b"short", bytes(NBYTES + 1), "x" * NBYTES, 5])
def test_within_refuses_a_query_signature_that_is_not_one(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match=f"a signature is {NBYTES} bytes"):
        within([(1, "a", 0, None)], 0, 0, Verify(bad, 0.5))  # type: ignore[arg-type]


# --- within_each ---------------------------------------------------------------------------------


def test_within_each_is_within_for_each_query() -> None:
    rng = random.Random(11)
    queries = [0, 2**64 - 1, 2**63, rng.getrandbits(64)]
    per_query = [rows_near(rng, q, 30) for q in queries]
    candidates = [(position, row) for position, rows in enumerate(per_query) for row in rows]
    rng.shuffle(candidates)  # candidates come in any order
    checks = [None, Verify(None, 0.5), Verify(per_query[2][0][3] or signature(rng), 0.6), None]
    got = within_each(candidates, queries, 5, checks)
    expected = zip(per_query, queries, checks, strict=True)
    assert got == [oracle(rows, q, 5, v) for rows, q, v in expected]
    assert within_each(candidates, queries, 5) == [
        oracle(rows, q, 5) for rows, q in zip(per_query, queries, strict=True)
    ]
    assert within_each([], queries, 64) == [[], [], [], []]
    assert within_each([], [], 3) == []


def test_within_each_needs_one_check_per_query() -> None:
    with pytest.raises(ValueError):
        within_each([], [1, 2], 3, [None])


# --- unverified ----------------------------------------------------------------------------------


def test_unverified_drops_only_a_pair_within_would_drop() -> None:
    """A pair is dropped only where the query and the held row both have a
    signature and their similarity is under the query's threshold: the
    same answer as within on that row, pair by pair; two longer texts of CJK
    characters (the byte CJK on both sides) at the lower threshold."""
    rng = random.Random(5)
    base = signature(rng)
    cjk = bytes((CJK,))
    held_sigs: list[bytes | None] = [
        changed(base, rng.randrange(0, 80), rng) + cjk * (i % 3 == 0) if i % 4 else None
        for i in range(40)
    ]
    held_sigs[5] = b"\x01" * 3  # a stored blob of another length: no signature
    query_sigs = [changed(base, rng.randrange(0, 40), rng) + cjk * (q != 2) for q in range(5)]
    checks: list[Verify | None] = [
        Verify(query_sigs[0], 0.8),
        Verify(query_sigs[1], 0.0),  # threshold 0: nothing dropped
        None,  # no verification
        Verify(None, 0.9),  # a query by fingerprint
        Verify(query_sigs[4], 0.5),
    ]
    pairs = [(q, s) for q in range(5) for s in range(40)]
    rng.shuffle(pairs)
    queries = np.array([q for q, _ in pairs], dtype=np.intp)
    stored = np.array([s for _, s in pairs], dtype=np.intp)
    keep = unverified(queries, stored, checks, as_words(held_sigs))
    assert keep.dtype == bool and keep.shape == (len(pairs),)
    lowered = 0
    for (q, s), kept in zip(pairs, keep.tolist(), strict=True):
        check, sig = checks[q], held_sigs[s]
        if check is None or check.signature is None or sig is None or not longer(sig):
            assert kept, (q, s)
            continue
        needed = threshold_for(check.threshold, check.signature, sig)
        assert kept == (similarity(check.signature, sig) >= needed), (q, s)
        row = (s, f"k{s}", 0, sig)
        assert kept == bool(within([row], 0, 0, check)), (q, s)
        if needed <= similarity(check.signature, sig) < check.threshold:
            lowered += 1  # kept only by the lower threshold
    assert not keep.all() and keep.any()  # both answers were given
    assert lowered  # (and the lower threshold decided some)


def test_unverified_keeps_everything_where_nothing_is_judged() -> None:
    sigs: list[bytes | None] = [bytes(NBYTES), None]
    held = as_words(sigs)
    none = np.array([], dtype=np.intp)
    assert unverified(none, none, [Verify(bytes(NBYTES), 1.0)], held).tolist() == []
    queries, stored = np.array([0, 0]), np.array([0, 1])
    assert unverified(queries, stored, [None], held).tolist() == [True, True]
    assert unverified(queries, stored, [Verify(None, 1.0)], held).tolist() == [True, True]
    assert unverified(queries, stored, [Verify(b"\xff" * NBYTES, 0.0)], held).tolist() == [
        True,
        True,
    ]
    # The one judged pair: all bins differ, under any threshold above 0.
    unlike = unverified(queries, stored, [Verify(b"\xff" * NBYTES, 0.1)], held)
    assert unlike.tolist() == [False, True]
