"""Streaming corpus dedup (simindex.dedup): the decisions against a brute-force
oracle, the counts, the input read as a stream, and the arguments checked.

The oracle keeps a document unless it is within k of an earlier kept one (or
at any distance, their keys meet: short texts one unit apart, longer texts
with a band of their sketches equal) and at least the threshold similar to it
by their verification signatures (of the kept ones that are, the nearest, the
earliest of equals). The corpora are
random texts over a small vocabulary (so that some land within k by chance)
and near-copies of earlier documents with a few words changed.
"""

from __future__ import annotations

import doctest
import itertools
import json
import random
import struct
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simindex.dedup
from simindex import (
    DEFAULT_CONFIG,
    Decision,
    DedupStream,
    EmptyTextError,
    FingerprintConfig,
    InvalidArgumentError,
    SimIndex,
    dedup_stream,
    hamming,
    ingest,
    simhash,
)
from simindex.dedup import DedupCounts, _Kept
from simindex.ingest import Doc
from simindex.signature import (
    DEFAULT_THRESHOLD,
    NBYTES,
    SMALL,
    bands_meet,
    longer,
    signature,
    similarity,
)
from tests.dedup_reference import decide_each
from tests.helpers import compiled_or_skip, flip, keys_meet

VOCABULARY = [f"w{i}" for i in range(60)]
NO_WORDS = ["", "!!!", "  \n "]
# key, fingerprint, duplicate_of, distance, similarity
Expected = tuple[str, int | None, str | None, int | None, float | None]


def random_text(rng: random.Random, words: int = 25) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


def near_copy(rng: random.Random, text: str, changes: int) -> str:
    words = text.split()
    for _ in range(changes):
        words[rng.randrange(len(words))] = rng.choice(VOCABULARY)
    return " ".join(words)


def corpus(seed: int, n: int, planted: float) -> list[tuple[str, str]]:
    """n (key, text) pairs: a share `planted` of them near-copies of earlier
    ones (0 to 5 words changed), a few with no words, the rest random."""
    rng = random.Random(seed)
    docs: list[tuple[str, str]] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.03:
            text = rng.choice(NO_WORDS)
        elif docs and roll < 0.03 + planted:
            base = rng.choice([t for _, t in docs if t.strip(" !\n")] or [random_text(rng)])
            text = near_copy(rng, base, rng.randint(0, 5))
        else:
            text = random_text(rng)
        docs.append((f"d{i}", text))
    return docs


def oracle(
    docs: list[tuple[str, str]],
    k: int,
    config: FingerprintConfig = DEFAULT_CONFIG,
    threshold: float = DEFAULT_THRESHOLD,
) -> list[Expected]:
    """Brute force: compare each document with every document kept before it
    (within k, or their keys meet, and at least `threshold` similar; 0:
    distance alone)."""
    kept: list[tuple[str, int, bytes]] = []
    decisions: list[Expected] = []
    for key, text in docs:
        try:
            fp = simhash(text, config)
        except EmptyTextError:
            decisions.append((key, None, None, None, None))
            continue
        sig = signature(text, config)
        near = [
            (distance, position, estimate)
            for position, (_, other, other_sig) in enumerate(kept)
            if (
                (distance := hamming(fp, other)) <= k
                or (threshold > 0 and keys_meet(sig, other_sig))
            )
            and (estimate := similarity(sig, other_sig)) >= threshold
        ]
        if near:
            distance, position, estimate = min(near)
            decisions.append((key, fp, kept[position][0], distance, estimate))
        else:
            kept.append((key, fp, sig))
            decisions.append((key, fp, None, None, None))
    return decisions


def as_expected(decisions: list[Decision]) -> list[Expected]:
    return [(d.key, d.fingerprint, d.duplicate_of, d.distance, d.similarity) for d in decisions]


def tally(expected: list[Expected]) -> DedupCounts:
    no_words = sum(fp is None for _, fp, _, _, _ in expected)
    dropped = sum(dup is not None for _, _, dup, _, _ in expected)
    return DedupCounts(len(expected), len(expected) - no_words - dropped, dropped, no_words)


# --- the decisions ---------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    k=st.integers(0, 15),
    planted=st.sampled_from([0.0, 0.3, 0.7]),
    threshold=st.sampled_from([0.0, 0.5, DEFAULT_THRESHOLD, 0.95]),
)
def test_decisions_are_the_brute_force_ones(
    seed: int, k: int, planted: float, threshold: float
) -> None:
    docs = corpus(seed, 150, planted)
    run = dedup_stream(docs, k=k, threshold=threshold, workers=1)
    decisions = list(run)
    expected = oracle(docs, k, threshold=threshold)
    assert as_expected(decisions) == expected
    assert [d.doc.text for d in decisions] == [text for _, text in docs]
    assert run.counts == tally(expected)
    assert run.k == k and run.threshold == threshold


@pytest.mark.parametrize("k", [0, 4, 8, 15])
def test_the_compiled_loops_decide_as_brute_force_from_where_they_load(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past _COMPILED_AFTER documents (here 130: batches of 64, so the
    fourth, with 192 decided before it, is the first) the kept chains and a
    batch's own pairs are looked up by compiled loops: the decisions are
    still the brute-force ones, before and after. (The switch as "auto"
    with the loops not loaded before, whatever other tests loaded.)"""
    compiled_or_skip()
    monkeypatch.setattr(simindex.dedup, "_BATCH", 64)
    monkeypatch.setattr(simindex.dedup, "_COMPILED_AFTER", 130)
    monkeypatch.setattr(simindex.dedup, "mode", lambda: "auto")
    monkeypatch.setattr(simindex.dedup, "tried", lambda module: False)
    ways: list[tuple[bool, bool]] = []  # per batch: (the kept looked up, the batch's pairs)
    probe, near_in_batch = simindex.dedup.probe_batch, _Kept._near_in_batch

    def probed(*args: Any) -> Any:
        ways.append((args[-1] is not None, False))
        return probe(*args)

    def paired(self: _Kept, *args: Any) -> Any:
        ways[-1] = (ways[-1][0], args[-1] is not None)
        return near_in_batch(self, *args)

    monkeypatch.setattr(simindex.dedup, "probe_batch", probed)
    monkeypatch.setattr(_Kept, "_near_in_batch", paired)
    docs = corpus(11 + k, 400, planted=0.6)
    decisions = list(dedup_stream(docs, k=k, workers=1))
    assert as_expected(decisions) == oracle(docs, k)
    assert ways == [(False, False)] * 3 + [(True, True)] * (len(ways) - 3)
    assert len(ways) > 4


@pytest.mark.parametrize("k", [0, 3, 4, 8, 15])
def test_planted_near_duplicates_are_dropped_as_copies_of_the_kept_ones(k: int) -> None:
    docs = corpus(7, 600, planted=0.6)
    decisions = list(dedup_stream(docs, k=k, workers=1))
    assert as_expected(decisions) == oracle(docs, k)
    dropped = [d for d in decisions if not d.kept and not d.no_words]
    assert dropped, "the planted copies should drop some documents"
    kept_keys = {d.key for d in decisions if d.kept}
    texts = dict(docs)
    for d in dropped:
        assert d.duplicate_of in kept_keys
        assert d.distance is not None and d.distance >= 0
        # Beyond k only a short text one unit apart from the one it copies,
        # or a longer one with a band of its sketch equal.
        original = signature(texts[d.duplicate_of], DEFAULT_CONFIG)
        close = keys_meet(signature(d.doc.text, DEFAULT_CONFIG), original)
        assert d.distance <= k or close
        assert d.similarity is not None and DEFAULT_THRESHOLD <= d.similarity <= 1.0
    assert all(d.similarity is None for d in decisions if d.kept or d.no_words)
    if k >= 3:  # some candidates within k are not verified: kept, within k of a kept one
        fps = [fp for d in decisions if d.kept and (fp := d.fingerprint) is not None]
        assert any(hamming(a, b) <= k for n, a in enumerate(fps) for b in fps[:n])
    # A copy with no word changed is never kept (it is at 0 from its original).
    first_of: dict[str, str] = {}
    for d in decisions:
        if d.doc.text in first_of:
            assert not d.kept, (d, first_of[d.doc.text])
        elif not d.no_words:
            first_of[d.doc.text] = d.key
    assert len(first_of) < len(docs) - sum(d.no_words for d in decisions)


def test_a_document_near_only_a_dropped_one_is_kept() -> None:
    base = random_text(random.Random(3), 40)
    rng = random.Random(4)
    # A copy of the base within k of it (dropped, as its copy), and a copy of
    # that copy within k of it, both verified, yet beyond k of the base and
    # not found from it by its keys and verified (kept: compared with the base).
    k = 4
    a, sa = simhash(base), signature(base, DEFAULT_CONFIG)

    def copy_of(text: str, fp: int, sig: bytes, changes: int) -> tuple[str, int, bytes] | None:
        other = near_copy(rng, text, rng.randint(1, changes))
        o_fp, o_sig = simhash(other), signature(other, DEFAULT_CONFIG)
        ok = hamming(fp, o_fp) <= k and similarity(sig, o_sig) >= DEFAULT_THRESHOLD
        return (other, o_fp, o_sig) if ok else None

    for _ in range(10_000):
        near = copy_of(base, a, sa, 3)
        far = None if near is None else copy_of(*near, 6)
        if near is None or far is None or hamming(a, far[1]) <= k:
            continue
        if not (keys_meet(sa, far[2]) and similarity(sa, far[2]) >= DEFAULT_THRESHOLD):
            break
    else:
        pytest.fail("no chain base - near - far found")
    docs = [("base", base), ("near", near[0]), ("far", far[0])]
    decisions = list(dedup_stream(docs, k=k, workers=1))
    assert [d.kept for d in decisions] == [True, False, True]
    assert decisions[1].duplicate_of == "base"
    assert as_expected(decisions) == oracle(docs, k)


def test_the_nearest_kept_document_is_named_and_the_earliest_of_equals() -> None:
    text = random_text(random.Random(5), 30)
    docs = [("a", text), ("b", text + " w1 w2 w3 w4 w5 w6 w7 w8"), ("c", text), ("d", text)]
    decisions = list(dedup_stream(docs, k=15, workers=1))
    assert as_expected(decisions) == oracle(docs, 15)
    assert [d.duplicate_of for d in decisions[2:]] == ["a", "a"]
    assert all(d.distance == 0 for d in decisions[2:])


def far_copy_with_a_band_equal(k: int = 8) -> tuple[str, str]:
    """A longer text (60 words of 400, more than SMALL distinct) and a copy
    with words replaced one at a time until its fingerprint is more than k
    from the text's, while a band of their sketches stays equal and they
    stay similar enough: the first seed that gets there."""
    vocabulary = [f"v{i}" for i in range(400)]
    for seed in itertools.count():
        rng = random.Random(seed)
        words = [rng.choice(vocabulary) for _ in range(60)]
        text, copy = " ".join(words), list(words)
        fp, sig = simhash(text), signature(text, DEFAULT_CONFIG)
        for _ in range(12):
            copy[rng.randrange(len(copy))] = rng.choice(vocabulary)
            other = " ".join(copy)
            other_sig = signature(other, DEFAULT_CONFIG)
            if not bands_meet(sig, other_sig) or similarity(sig, other_sig) < DEFAULT_THRESHOLD:
                break
            if hamming(fp, simhash(other)) > k:
                return text, other
    raise AssertionError("unreachable")  # pragma: no cover


def test_a_longer_copy_beyond_k_with_a_band_equal_is_dropped() -> None:
    """Found by its band keys (signature.keys_of_bands) at any distance, as a
    query of an index finds it: against a kept document, within a batch and
    across batches, by the batch path and the reference alike."""
    text, copy = far_copy_with_a_band_equal()
    sig, copy_sig = signature(text, DEFAULT_CONFIG), signature(copy, DEFAULT_CONFIG)
    assert longer(sig) and longer(copy_sig)  # (no short set: longer texts)
    docs = [("a", text), ("b", copy)]
    decisions = list(dedup_stream(docs, k=8, workers=1))
    assert as_expected(decisions) == oracle(docs, 8)
    assert [d.duplicate_of for d in decisions] == [None, "a"]
    assert decisions[1].distance is not None and decisions[1].distance > 8
    assert decisions[1].similarity == similarity(sig, copy_sig) >= DEFAULT_THRESHOLD
    # Threshold 0 (distance alone): no keys, so beyond k it is kept.
    assert [d.kept for d in dedup_stream(docs, k=8, threshold=0, workers=1)] == [True, True]
    items = list(ingest.fingerprint_docs(simindex.dedup._as_docs(docs), DEFAULT_CONFIG, workers=1))
    reference = as_expected(list(decide_each(items, 8, DEFAULT_THRESHOLD)))
    assert reference == as_expected(decisions)
    for sizes in ([2], [1, 1]):  # within one batch, then across two
        kept, counts, at = _Kept(8, DEFAULT_THRESHOLD), DedupCounts(), 0
        batched: list[Decision] = []
        for size in sizes:
            batched += kept.decide(items[at : at + size], counts)
            at += size
        assert as_expected(batched) == reference


def test_a_longer_copy_beyond_k_is_paired_by_duplicates_as_dedup_drops_it() -> None:
    """dedup and an index's duplicates() and query() ask the same rule."""
    text, copy = far_copy_with_a_band_equal()
    docs = [("a", text), ("b", copy), ("c", random_text(random.Random(8), 40))]
    decisions = list(dedup_stream(docs, workers=1))
    assert [d.duplicate_of for d in decisions] == [None, "a", None]
    b = decisions[1]
    with SimIndex() as index:
        index.add_many(docs[::2])
        assert [(m.key, m.distance) for m in index.query(copy)] == [("a", b.distance)]
        index.add("b", copy)
        pairs = [tuple(p) for p in index.duplicates()]
    assert pairs == [("a", "b", b.distance, b.similarity)]


def test_documents_with_no_words_are_dropped_as_such() -> None:
    docs = [("a", "one two three"), ("empty", ""), ("marks", "?!"), ("b", "one two three")]
    run = dedup_stream(docs, k=3, workers=1)
    decisions = list(run)
    assert [(d.key, d.kept, d.no_words) for d in decisions] == [
        ("a", True, False),
        ("empty", False, True),
        ("marks", False, True),
        ("b", False, False),
    ]
    assert decisions[1].duplicate_of is None and decisions[1].fingerprint is None
    assert asdict(run.counts) == {"read": 4, "kept": 1, "dropped": 1, "no_words": 2}


def test_the_configuration_is_the_one_given() -> None:
    config = FingerprintConfig(ngram=2)
    docs = corpus(11, 200, planted=0.5)
    decisions = list(dedup_stream(docs, k=6, config=config, workers=1))
    assert as_expected(decisions) == oracle(docs, 6, config)


def test_worker_processes_decide_the_same() -> None:
    docs = corpus(13, 1500, planted=0.4)  # several chunks: a pool of two workers
    serial = as_expected(list(dedup_stream(docs, k=5, workers=1)))
    assert as_expected(list(dedup_stream(docs, k=5, workers=2))) == serial == oracle(docs, 5)
    assert any(similarity is not None for *_, similarity in serial)


def test_docs_read_from_files_keep_where_they_came_from(tmp_path: Path) -> None:
    source = tmp_path / "c.jsonl"
    rows = [
        {"id": "x", "text": "alpha beta gamma delta"},
        {"id": "y", "text": "alpha beta gamma delta"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    decisions = list(dedup_stream(ingest.read_docs([str(source)]), k=3, workers=1))
    assert [(d.key, d.kept, d.doc.where) for d in decisions] == [
        ("x", True, f"{source} line 1"),
        ("y", False, f"{source} line 2"),
    ]
    assert sum(d.doc.size for d in decisions) == source.stat().st_size


# --- a stream ----------------------------------------------------------------------------


class Reader:
    """A corpus as a generator that fails if it is read more than `ahead`
    documents ahead of the decisions taken from the stream."""

    def __init__(self, ahead: int, n: int | None = None) -> None:
        self.ahead = ahead
        self.n = n
        self.read = 0
        self.decided = 0
        self.most_ahead = 0

    def __iter__(self) -> Iterator[tuple[str, str]]:
        rng = random.Random(17)
        for i in itertools.count() if self.n is None else range(self.n):
            if i - self.decided > self.ahead:
                raise AssertionError(f"document {i} read with {self.decided} decided")
            self.most_ahead = max(self.most_ahead, i - self.decided)
            self.read += 1
            yield f"d{i}", random_text(rng, 10)


@pytest.mark.parametrize(("workers", "ahead"), [(1, 2 * 256 - 1), (2, 6 * 256)])
def test_the_input_is_read_as_a_stream(workers: int, ahead: int) -> None:
    # Decided a batch of 256 at a time: in this process a batch is read when
    # the decision of its first document is asked for, and one more while
    # the compiled pass fingerprints it in a thread; two workers also hold
    # at most two chunks (of 256 documents) each in flight: 5 * 256
    # documents ahead at most, and a chunk to spare.
    reader = Reader(ahead, n=6_000)
    run = dedup_stream(reader, k=3, workers=workers)
    for decision in run:
        reader.decided += 1
        assert decision.key == f"d{reader.decided - 1}"
    assert reader.decided == reader.read == 6_000 == run.counts.read
    assert reader.most_ahead <= ahead


@pytest.mark.parametrize("workers", [1, 2])
def test_an_endless_input_is_decided_as_it_comes_and_closing_stops_it(workers: int) -> None:
    reader = Reader(ahead=2_000)
    with dedup_stream(reader, k=3, workers=workers) as run:
        for decision in itertools.islice(run, 700):
            reader.decided += 1
            assert decision.key == f"d{reader.decided - 1}"
    read = reader.read
    assert run.counts.read == 700 and read < 700 + 2_000
    assert list(run) == []  # closed: nothing more is read
    assert reader.read == read


# --- the arguments ------------------------------------------------------------------------


@pytest.mark.parametrize("k", [-1, 16, 64, True, 2.0, "3", None])
def test_k_must_be_from_0_to_15(k: object) -> None:
    with pytest.raises(InvalidArgumentError, match="k must be a whole number from 0 to 15"):
        dedup_stream([("a", "one two")], k=k)  # type: ignore[arg-type]


def test_the_arguments_are_checked_before_anything_is_read() -> None:
    def never() -> Iterator[tuple[str, str]]:
        raise AssertionError("read")
        yield  # pragma: no cover

    with pytest.raises(InvalidArgumentError, match="FingerprintConfig"):
        dedup_stream(never(), k=3, config="default")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="workers"):
        dedup_stream(never(), k=3, workers="2")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="not one string"):
        dedup_stream("a text", k=3)  # type: ignore[arg-type]
    assert isinstance(dedup_stream(never(), k=3), DedupStream)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (("k", "text", "extra"), "document 2 is not a"),
        ("just a text", "document 2 is not a"),
        ((1, "text"), "document 2: the key and the text must be strings, not int and str"),
        (("k", None), "document 2: the key and the text must be strings, not str and NoneType"),
    ],
)
def test_a_bad_document_is_an_error_after_the_ones_before_it(item: object, message: str) -> None:
    run = dedup_stream([("a", "one two three"), item, ("c", "four five")], k=3, workers=1)  # type: ignore[list-item]
    assert next(run).key == "a"
    with pytest.raises(InvalidArgumentError, match=message):
        next(run)


def test_the_module_examples_run() -> None:
    failed, tried = doctest.testmod(simindex.dedup)
    assert tried > 0 and failed == 0


# --- the batch decisions against the per-document reference ------------------------------


def marked(
    items: list[tuple[str, int | None, bytes | None]],
) -> list[tuple[Doc, int | None, bytes | None]]:
    return [(Doc(key, "", key, 0), fp, sig) for key, fp, sig in items]


def both_ways(
    items: list[tuple[Doc, int | None, bytes | None]], k: int, threshold: float
) -> tuple[list[Expected], list[Expected]]:
    """The decisions of the batch path and of the reference, one document at a time."""
    counts = DedupCounts()
    kept = _Kept(k, threshold)
    batched: list[Decision] = []
    at = 0
    rng = random.Random(len(items) + k)
    while at < len(items):  # batches of every size, one document to several hundred
        size = rng.choice([1, 2, 7, 64, 256, 700])
        batched += kept.decide(items[at : at + size], counts)
        at += size
    reference_counts = DedupCounts()
    reference = list(decide_each(items, k, threshold, reference_counts))
    assert counts == reference_counts
    return as_expected(batched), as_expected(reference)


def short_signature(units: list[int], rng: random.Random) -> bytes:
    """A signature keeping an exact set: a random sketch and the sorted units."""
    distinct = sorted(set(units))
    return rng.randbytes(NBYTES) + struct.pack(f"<{len(distinct)}I", *distinct)


def marks_corpus(seed: int, n: int) -> list[tuple[Doc, int | None, bytes | None]]:
    """Fingerprints and signatures made to land near each other: copies of
    earlier ones a few bits and sketch bins away (chains a ~ b ~ c), or at a
    random distance (found by their keys alone: sets one unit apart, or
    sketches with a band equal), the top bit set, short texts' exact sets one
    unit apart, repeats within a batch, and documents with no words."""
    rng = random.Random(seed)
    out: list[tuple[str, int | None, bytes | None]] = []
    for i in range(n):
        roll = rng.random()
        earlier = [x for x in out if x[1] is not None]
        if roll < 0.03:
            out.append((f"d{i}", None, None))
            continue
        if earlier and roll < 0.6:
            _, fp, sig = rng.choice(earlier[-300:] if rng.random() < 0.7 else earlier)
            assert fp is not None and sig is not None
            fp = flip(fp, rng.randrange(0, 12), rng) if rng.random() < 0.8 else rng.getrandbits(64)
            sketch = bytearray(sig[:NBYTES])
            for _ in range(rng.choice([0, 1, 4, 12, 30])):
                sketch[rng.randrange(NBYTES)] = rng.randrange(256)
            units = list(struct.unpack(f"<{(len(sig) - NBYTES) // 4}I", sig[NBYTES:]))
            if units and rng.random() < 0.8:  # a unit added, dropped or replaced
                edit = rng.randrange(3)
                if edit == 0 and len(units) < SMALL:
                    units.append(rng.randrange(50))
                elif edit == 1 and len(units) > 1:
                    units.pop(rng.randrange(len(units)))
                else:
                    units[rng.randrange(len(units))] = rng.randrange(50)
            distinct = sorted(set(units))
            sig = bytes(sketch) + struct.pack(f"<{len(distinct)}I", *distinct)
        else:
            fp = rng.getrandbits(64) | (1 << 63 if rng.random() < 0.5 else 0)
            if rng.random() < 0.5:
                units = [rng.randrange(50) for _ in range(rng.randint(1, SMALL))]
                sig = short_signature(units, rng)
            else:
                sig = rng.randbytes(NBYTES)
        out.append((f"d{i}", fp, sig))
    return marked(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    k=st.integers(0, 15),
    threshold=st.sampled_from([0.0, 0.3, 0.5, DEFAULT_THRESHOLD, 0.9, 0.95, 1.0]),
)
def test_a_batch_decides_as_one_document_at_a_time(seed: int, k: int, threshold: float) -> None:
    """Near-duplicates within one batch and across batches, chains, top-bit
    fingerprints, short texts with exact sets and longer ones found by a band
    at any distance: the batch path's decisions are the reference's
    (simindex's per-document path before batches)."""
    batched, reference = both_ways(marks_corpus(seed, 900), k, threshold)
    assert batched == reference
    assert any(dup is not None for _, _, dup, _, _ in reference)


@pytest.mark.parametrize("k", [0, 3, 4, 8, 12, 15])
@pytest.mark.parametrize("threshold", [0.0, DEFAULT_THRESHOLD])
def test_real_texts_in_batches_decide_as_one_at_a_time(k: int, threshold: float) -> None:
    docs = corpus(19, 1200, planted=0.6) + [
        (f"s{i}", t) for i, t in enumerate(["a b c d e", "a b c d f", "a b c d", "a b c d e f"])
    ]
    items = list(ingest.fingerprint_docs(simindex.dedup._as_docs(docs), DEFAULT_CONFIG, workers=1))
    batched, reference = both_ways(items, k, threshold)
    assert batched == reference
    assert batched == as_expected(list(dedup_stream(docs, k=k, threshold=threshold, workers=1)))


def test_a_chain_within_one_batch_is_decided_in_order() -> None:
    """a ~ b ~ c in one batch, a and c apart: b is dropped as a's copy, so c is kept."""
    a = 0
    b = flip(a, 3, random.Random(1))
    c = flip(b, 3, random.Random(2))
    while hamming(a, c) <= 3:
        c = flip(b, 3, random.Random(c))
    # Sketches a bin apart in every band (no band equal: no keys meet).
    sketches = [bytearray(NBYTES) for _ in range(3)]
    for band in range(0, 60, 5):
        sketches[1][band] = sketches[2][band] = sketches[2][band + 1] = 1
    a_sig, b_sig, c_sig = map(bytes, sketches)
    assert not bands_meet(a_sig, b_sig) and not bands_meet(b_sig, c_sig)
    assert not bands_meet(a_sig, c_sig)
    items = marked([("a", a, a_sig), ("b", b, b_sig), ("c", c, c_sig)])
    batched, reference = both_ways(items, 3, 0.5)
    assert batched == reference
    assert [dup for _, _, dup, _, _ in batched] == [None, "a", None]
