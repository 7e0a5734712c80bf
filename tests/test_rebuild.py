"""Rebuild: a new layout or fingerprint configuration, while the index stays usable."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from simindex import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    InvalidArgumentError,
    SimIndex,
    simhash,
    storage,
)
from simindex.storage import schema
from tests.helpers import brute_force

TEXTS = [
    (f"doc-{i}", f"document {i} about {w} and {i % 13} other things {w} {w}")
    for i, w in enumerate(["tea", "cake", "rain", "bus", "fox", "dog", "sun", "sea"] * 5)
]


def tables(location: str) -> set[str]:
    engine = storage.open_backend(storage.locate(location)).engine
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_relayout_keeps_every_fingerprint_and_answers_exactly(location: str) -> None:
    rng = random.Random(5)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    with SimIndex(location) as index:
        index.add_fingerprints(stored.items())
        first = index.clusters(k=15)  # canonical members are the first added
        assert index.rebuild(blocks=5) == 3000
        assert index.layout.widths == (13, 13, 13, 13, 12) and dict(index.items()) == stored
        for _ in range(50):
            q = rng.choice(list(stored.values())) ^ (1 << rng.randrange(64))
            assert index.query(q) == brute_force(stored, q, 3)
        assert index.clusters(k=15) == first
        assert index.check().ok
        assert index.rebuild(k=2) == 3000 and index.k == 2 and len(index.layout.tables) == 3
    with SimIndex(location) as index:  # the new layout is what the file says now
        assert index.k == 2 and index.check().ok
    engine = storage.open_backend(storage.locate(location)).engine
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": schema.VERSION_TABLE})
        assert compare_metadata(context, schema.build(index.layout).metadata) == []
    engine.dispose()


def test_rebuild_from_a_source_with_a_new_configuration(location: str) -> None:
    with SimIndex(location) as index:
        index.add_many(TEXTS)
        index.add("gone", "a document the source no longer has")
        bigrams = FingerprintConfig(ngram=2)
        assert index.rebuild(iter(TEXTS), config=bigrams, batch_size=7) == len(TEXTS)
        assert index.config == bigrams and "gone" not in index
        assert dict(index.items()) == {key: simhash(text, bigrams) for key, text in TEXTS}
        before = dict(index.items())
        index.rebuild(iter(TEXTS))  # from an unchanged source: the same fingerprints
        assert dict(index.items()) == before
        assert index.query(TEXTS[3][1])[0].key == TEXTS[3][0]
    assert tables(location) == {
        "simindex_meta",
        "simindex_fingerprints",
        "simindex_snapshot",
        "simindex_passage_docs",
        "simindex_passage_hashes",
        "simindex_passages",
        "simindex_alembic_version",
        "simindex_set_keys",
        "simindex_set_keys_due",
    }


def test_a_new_configuration_needs_the_texts(index: SimIndex) -> None:
    with pytest.raises(InvalidArgumentError, match="source"):
        index.rebuild(config={"ngram": 2})
    with pytest.raises(InvalidArgumentError):
        index.rebuild(k=16)


def test_a_failed_rebuild_leaves_the_old_index_and_no_debris(location: str) -> None:
    def broken() -> Iterator[tuple[str, str]]:
        yield from TEXTS[:20]
        raise RuntimeError("the source went away")

    with SimIndex(location) as index:
        index.add_many(TEXTS)
        before = dict(index.items())
        with pytest.raises(RuntimeError):
            index.rebuild(broken(), config={"ngram": 3}, batch_size=5)
        assert dict(index.items()) == before and index.config == DEFAULT_CONFIG
        assert index.check().ok
    assert "simindex_rebuild_staging" not in tables(location)
    with SimIndex(location) as index:
        assert dict(index.items()) == before


def test_another_open_index_follows_a_rebuild(location: str) -> None:
    with SimIndex(location) as writer, SimIndex(location) as reader:
        writer.add_many(TEXTS)
        assert reader.query(TEXTS[0][1])[0].key == TEXTS[0][0]
        writer.rebuild(iter(TEXTS), config={"ngram": 2, "weighting": "binary"}, blocks=5)
        # The reader notices: its text queries use the new configuration.
        # (its own text: the same units, so a similarity of 1.0)
        assert reader.query(TEXTS[0][1])[0] == (TEXTS[0][0], 0, writer.get(TEXTS[0][0]), 1.0)
        assert reader.config == writer.config and reader.layout == writer.layout
        assert [r[0].key for r in reader.query_many([t for _, t in TEXTS])] == [k for k, _ in TEXTS]
        reader.add("late", "a write through the reader after the rebuild")  # uses the new layout
        assert writer.query("a write through the reader after the rebuild")[0].key == "late"
        assert writer.check().ok


def test_readers_see_the_old_or_the_new_index_during_rebuilds(location: str) -> None:
    errors = rebuilds_under_readers(location, 9, None, (5, 4, 6, 4))
    assert not errors, errors[0]


def test_writes_during_a_rebuild_wait_for_it_and_none_is_lost(location: str) -> None:
    """Writers are blocked (bounded wait) while a rebuild runs; every write that
    returned is in the index afterwards, and every failure was reported."""
    with SimIndex(location) as index:
        index.add_many(TEXTS)
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    stop = threading.Event()
    # Each writer has written once before the rebuilds start: however late
    # the threads get the processor, the rebuilds run beside writers.
    wrote = [threading.Event() for _ in range(2)]

    def write(n: int) -> None:
        with SimIndex(location, timeout=20) as writer:
            i = 0
            while not stop.is_set():
                key = f"w{n}-{i}"
                try:
                    writer.add_fingerprint(key, (n << 32) | i)
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failures.append(exc)
                    wrote[n].set()
                    return
                acknowledged.append(key)
                wrote[n].set()
                i += 1

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    assert all(event.wait(60) for event in wrote)
    with SimIndex(location) as index:
        for blocks in (5, 4, 6):
            index.rebuild(blocks=blocks)  # the content stays: every write must survive
    stop.set()
    for t in threads:
        t.join()
    assert not failures, failures[0]
    with SimIndex(location) as index:
        stored = dict(index.items())
        assert len(acknowledged) > 0 and all(key in stored for key in acknowledged)
        assert index.check().ok


def test_stats_and_check_follow_a_rebuild_made_elsewhere(location: str) -> None:
    with SimIndex(location) as first, SimIndex(location) as second:
        first.add_many(TEXTS)
        second.rebuild(blocks=6)
        assert first.stats()["blocks"] == list(second.layout.widths)
        assert first.check().ok


def test_threads_sharing_one_index_through_a_rebuild_elsewhere(location: str) -> None:
    with SimIndex(location) as shared:
        errors = rebuilds_under_readers(location, 4, shared, (5, 4, 6, 5))
    assert not errors, errors[0]


def rebuilds_under_readers(
    location: str, seed: int, reader: SimIndex | None, layouts: tuple[int, ...]
) -> list[BaseException]:
    """Re-lay the index at location (one block count after another) while three
    threads query it, through `reader` or each through a SimIndex of its own;
    returns what the readers raised, or a wrong answer they saw."""
    rng = random.Random(seed)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(1500)}
    with SimIndex(location) as index:
        index.add_fingerprints(stored.items())
    queries = [rng.choice(list(stored.values())) ^ (1 << rng.randrange(64)) for _ in range(40)]
    expected = {q: brute_force(stored, q, 3) for q in queries}
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        with contextlib.ExitStack() as stack:
            index = reader or stack.enter_context(SimIndex(location))
            while not stop.is_set():
                try:
                    for q in queries:
                        assert index.query(q) == expected[q]
                except BaseException as exc:  # noqa: BLE001 - returned to the test
                    errors.append(exc)
                    return

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    with SimIndex(location) as other:
        for blocks in layouts:
            other.rebuild(blocks=blocks)
    stop.set()
    for t in threads:
        t.join()
    return errors
