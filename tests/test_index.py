"""The index: exactness against a brute-force oracle, the API, persistence."""

from __future__ import annotations

import dataclasses
import inspect
import random
import sqlite3
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simindex import (
    DEFAULT_CONFIG,
    BlockLayout,
    Cluster,
    ConfigMismatchError,
    EmptyTextError,
    FingerprintConfig,
    FullScanWarning,
    IndexVersionError,
    InvalidArgumentError,
    Match,
    SimIndex,
    StorageError,
    accelerator,
    simhash,
    storage,
)
from simindex.storage import store
from tests.helpers import brute_force, brute_force_pairs, flip

FP = st.integers(0, 2**64 - 1)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[dict[str, int], list[int]]:
    """Random fingerprints (half with the top bit set), planted neighbours at
    every distance 0..5, duplicate fingerprints under other keys, edge values."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    base = draw(st.lists(FP, min_size=1, max_size=30))
    stored: dict[str, int] = {}
    for i, fp in enumerate(base):
        stored[f"doc-{i}"] = fp
        for d in range(6):
            if draw(st.booleans()):
                stored[f"doc-{i}-d{d}"] = flip(fp, d, rng)
        if draw(st.booleans()):
            stored[f"dup-{i}"] = fp
    for edge in (0, 2**63 - 1, 2**63, 2**64 - 1):
        if draw(st.booleans()):
            stored[f"edge-{edge}"] = edge
    queries = [flip(rng.choice(base), rng.randrange(0, 6), rng) for _ in range(5)]
    queries += draw(st.lists(FP, max_size=3)) + [0, 2**64 - 1, 2**63]
    return stored, queries


def scans(index: SimIndex, k: int) -> bool:
    """Whether a query at k reads every row instead of looking it up through
    the block indexes (probes), as explain's verdict says it."""
    return "reads every row" in index.explain(0, 0, k=k).verdict()


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize(
    ("index_k", "blocks"),
    [(0, None), (1, None), (2, None), (3, None), (5, None), (3, 5), (2, 5), (1, 4)],
)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=corpora())
def test_query_equals_brute_force(
    index_k: int, blocks: int | None, held: bool, data: tuple[dict[str, int], list[int]]
) -> None:
    """Every query, through the database (held=False) or from the fingerprints
    held in memory after the first query (held=True): what brute force gives."""
    stored, queries = data
    with SimIndex(":memory:", k=index_k, blocks=blocks, hold=held) as index:
        index.add_fingerprints(stored.items())
        assert len(index) == len(stored)
        for query in queries:
            for k in range(index_k + 1):
                assert index.query(query, k=k) == brute_force(stored, query, k)
            # Larger than the index's k: still exact, by probing or a full scan (which warns).
            # (Once the index holds its fingerprints in memory, nothing is scanned.)
            for k in (index_k + 2, index_k + 9):
                in_memory = index.held
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    assert index.query(query, k=k) == brute_force(stored, query, k)
                assert bool(caught) == (scans(index, k) and not in_memory)
        assert index.held == held


def test_query_equals_brute_force_on_a_larger_random_set(file_index: SimIndex) -> None:
    rng = random.Random(7)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    for i in range(300):
        stored[f"near{i}"] = flip(stored[f"k{i}"], rng.randrange(0, 5), rng)
    file_index.add_fingerprints(stored.items())
    for i in range(200):
        query = flip(stored[f"k{i}"], rng.randrange(0, 5), rng)
        assert file_index.query(query) == brute_force(stored, query, file_index.k)
        assert file_index.query(query, k=3) == brute_force(stored, query, 3)


def test_block_layout_covers_all_bits() -> None:
    from simindex.blocks import DEFAULT_BLOCKS
    from simindex.costs import default_blocks

    for k in range(16):
        layout = BlockLayout.for_k(k)
        assert len(layout.widths) == default_blocks(k) and sum(layout.widths) == 64
        assert DEFAULT_BLOCKS[k] == default_blocks(k)  # the stored table, computed
        assert len(layout.widths) == k + 1 or layout.tables == tuple(
            (b,) for b in range(len(layout.widths))
        )
        assert max(layout.widths) - min(layout.widths) <= 1
        value = random.Random(k).getrandbits(64)
        rebuilt = 0
        for (shift, mask), block in zip(layout.spans(), layout.blocks(value), strict=True):
            rebuilt |= (block & mask) << shift
        assert rebuilt == value
    assert BlockLayout.for_k(3).widths == (16, 16, 16, 16)
    assert BlockLayout.for_k(0).blocks(2**64 - 1) == [-1]  # one 64-bit block, stored signed


@pytest.mark.parametrize("k", [-1, 16, 65, 2.5, True, "3"])
def test_bad_index_k_is_refused_before_anything_is_written(k: object, db_path: Path) -> None:
    with pytest.raises(InvalidArgumentError):
        SimIndex(db_path, k=k)  # type: ignore[arg-type]
    assert not db_path.exists()


@pytest.mark.parametrize("k", [-1, 65, 1.0, None.__class__])
def test_bad_query_k_is_refused(index: SimIndex, k: object) -> None:
    with pytest.raises(InvalidArgumentError):
        index.query(0, k=k)  # type: ignore[arg-type]


def test_api_round_trip(index: SimIndex) -> None:
    fp = index.add("doc-1", "The quick brown fox jumps over the lazy dog")
    assert fp == simhash("The quick brown fox jumps over the lazy dog")
    assert index.get("doc-1") == fp and "doc-1" in index and len(index) == 1
    # The same words: a signature of the same units, so an estimate of 1.0.
    assert index.query("the quick brown fox jumps over the lazy dog!") == [
        Match("doc-1", 0, fp, 1.0)
    ]
    assert index.add_many([("doc-2", "something else entirely here"), ("doc-3", "and more")]) == 2
    assert len(index) == 3
    assert index.remove("doc-1") is True and index.remove("doc-1") is False
    assert "doc-1" not in index and index.get("doc-1") is None
    assert sorted(k for k, _ in index.items()) == ["doc-2", "doc-3"]


def test_adding_an_existing_key_replaces_its_fingerprint(index: SimIndex) -> None:
    index.add_fingerprint("a", 1)
    index.add_fingerprint("a", 2**64 - 1)
    assert len(index) == 1 and index.get("a") == 2**64 - 1
    assert index.query(1, k=0) == []
    index.add_fingerprints([("b", 5), ("b", 6)])  # within one batch, the later one wins
    assert index.get("b") == 6


def test_add_many_is_all_or_nothing(index: SimIndex) -> None:
    index.add("keep", "a document that was there before")
    before = dict(index.items())
    with pytest.raises(EmptyTextError):
        index.add_many([("x", "fine text"), ("y", "...")])
    bad_batch = ((f"k{i}", i) for i in range(2500))
    with pytest.raises(InvalidArgumentError):
        index.add_fingerprints(list(bad_batch) + [("bad", 2**64)])
    assert dict(index.items()) == before


@pytest.mark.parametrize("key", ["", None, 3, b"k"])
def test_bad_keys_are_refused(index: SimIndex, key: object) -> None:
    with pytest.raises(InvalidArgumentError):
        index.add_fingerprint(key, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, 2**64, 1.5, "12", None])
def test_bad_fingerprints_are_refused(index: SimIndex, value: object) -> None:
    with pytest.raises(InvalidArgumentError):
        index.add_fingerprint("k", value)  # type: ignore[arg-type]
    if not isinstance(value, str):  # a str is a text to look for
        with pytest.raises(InvalidArgumentError):
            index.query(value)  # type: ignore[arg-type]


def test_empty_text_is_refused_and_nothing_is_stored(index: SimIndex) -> None:
    for text in ["", "   ", "?!"]:
        with pytest.raises(EmptyTextError):
            index.add("e", text)
        with pytest.raises(EmptyTextError):
            index.query(text)
    assert len(index) == 0


def test_limit(index: SimIndex) -> None:
    index.add_fingerprints([("a", 0), ("b", 1), ("c", 3)])
    assert [m.key for m in index.query(0, limit=2)] == ["a", "b"]
    with pytest.raises(InvalidArgumentError):
        index.query(0, limit=0)


def test_index_survives_reopening_with_its_settings(location: str) -> None:
    config = FingerprintConfig(ngram=2, weighting="sublinear")
    with SimIndex(location, k=4, config=config) as index:
        fp = index.add("a", "one two three four five six")
    with SimIndex(location) as index:
        assert index.k == 4 and index.config == config and index.layout.widths == (22, 21, 21)
        assert index.get("a") == fp == simhash("one two three four five six", config)
        assert index.query("one two three four five six")[0].key == "a"


def test_a_different_configuration_is_refused(location: str) -> None:
    SimIndex(location, k=3).close()
    with pytest.raises(ConfigMismatchError):
        SimIndex(location, k=2)
    with pytest.raises(ConfigMismatchError):
        SimIndex(location, config={"ngram": 2})
    with SimIndex(location, k=3, config=DEFAULT_CONFIG) as index:  # the same is fine
        assert index.k == 3


def test_sqlite_file_uses_wal_and_a_busy_timeout(file_index: SimIndex, db_path: Path) -> None:
    """WAL, and a write waits 30 s for another writer by default: the backend
    gives every connection the timeout it is opened with (test_backend.py),
    and SimIndex's timeout reaches it (test_ops.py)."""
    file_index.add_fingerprint("a", 1)
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    default = inspect.signature(SimIndex).parameters["timeout"].default
    assert default == storage.BUSY_TIMEOUT_S == 30


def test_a_reader_is_not_blocked_by_a_writer(db_path: Path) -> None:
    with SimIndex(db_path) as index:
        index.add_fingerprint("a", 42)
        writer = sqlite3.connect(db_path, timeout=0.1, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("DELETE FROM simindex_fingerprints")
        try:
            # The uncommitted delete is invisible, and reading does not wait for it.
            assert index.get("a") == 42 and len(index.query(42)) == 1
        finally:
            writer.execute("ROLLBACK")
            writer.close()


def test_one_index_shared_between_threads(index: SimIndex) -> None:
    def work(t: int) -> None:
        for i in range(50):
            index.add_fingerprint(f"t{t}-{i}", t * 1000 + i)
            assert index.query(t * 1000 + i, k=0)[0].key == f"t{t}-{i}"

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(index) == 200


@pytest.mark.parametrize(
    "url", ["mysql://user:secret@db.example/x", "oracle://db.example/x", "duckdb:///x.db"]
)
def test_other_databases_are_refused_clearly(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="SQLite or PostgreSQL") as caught:
        SimIndex(url)
    assert "secret" not in str(caught.value)


def test_repr_and_location_hide_passwords() -> None:
    from simindex.storage import locate

    where = locate("postgresql+psycopg://user:secret@db.example/simindex")
    assert "secret" not in str(where)
    with SimIndex(":memory:") as index:
        assert repr(index) == "SimIndex(':memory:', k=8)"


def test_stats(file_index: SimIndex) -> None:
    file_index.add_fingerprints((f"k{i}", i) for i in range(10))
    info = file_index.stats()
    assert info["count"] == 10 and info["k"] == 8 and info["blocks"] == [22, 21, 21]
    assert info["file_bytes"] > 0 and info["fingerprint"]["weighting"] == DEFAULT_CONFIG.weighting


def test_full_scan_warning_is_a_warning_not_an_error(index: SimIndex) -> None:
    index.add_fingerprint("a", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FullScanWarning):
            index.query(0, k=20)


def test_a_full_scan_warning_points_at_the_callers_line(index: SimIndex) -> None:
    """Not at a line inside simindex: the warning names the file and line
    that asked (where a warnings filter by module, or the "default" action's
    once per line, applies)."""
    index.add_fingerprint("a", 0)
    with pytest.warns(FullScanWarning) as caught:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        index.query(0, k=20)
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=corpora(), k=st.integers(0, 12))
def test_duplicates_equal_brute_force(data: tuple[dict[str, int], list[int]], k: int) -> None:
    stored, _ = data
    with SimIndex(":memory:") as index:
        index.add_fingerprints(stored.items())
        found = index.duplicates(k)
        assert [(p.key_a, p.key_b, p.distance) for p in found] == brute_force_pairs(stored, k)
        assert all(p.similarity is None for p in found)  # no signatures: distance alone


def test_duplicates_k_is_checked(index: SimIndex) -> None:
    with pytest.raises(InvalidArgumentError):
        index.duplicates(16)
    assert index.duplicates() == []


@pytest.mark.parametrize(("index_k", "blocks"), [(3, None), (3, 5), (1, None)])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=corpora(), k=st.integers(0, 12))
def test_query_many_equals_brute_force(
    index_k: int, blocks: int | None, data: tuple[dict[str, int], list[int]], k: int
) -> None:
    stored, queries = data
    with SimIndex(":memory:", k=index_k, blocks=blocks) as index:
        index.add_fingerprints(stored.items())
        expected = [brute_force(stored, q, k) for q in queries]
        if k <= index_k:  # a small batch: through the block indexes
            assert index.query_many(queries, k=k) == expected
        # a large batch (and any k up to 15): in memory, in one snapshot
        many = queries * (300 // len(queries) + 1)
        assert index.query_many(many, k=k) == [brute_force(stored, q, k) for q in many]


def test_query_many_takes_texts_and_limit(index: SimIndex) -> None:
    index.add("a", "the quick brown fox jumps over the lazy dog")
    index.add_fingerprint("z", 0)
    result = index.query_many(["The quick brown fox jumps over the lazy dog!", 0, 1], limit=1)
    assert [[m.key for m in r] for r in result] == [["a"], ["z"], ["z"]]
    assert index.query_many([]) == []
    with pytest.raises(InvalidArgumentError):
        index.query_many([0] * 300, k=16)


def test_clusters_follow_the_leader_and_name_the_first_added(index: SimIndex) -> None:
    a = 0
    b = a ^ 0b111  # 3 from a
    c = b ^ (0b111 << 10)  # 3 from b, 6 from a: a chain
    far = 2**64 - 1
    index.add_fingerprints([("z-first", a), ("m-second", b), ("c", c), ("lonely", far)])
    index.add_fingerprints([("z-first", a)])  # replacing keeps its place
    # At the index's k (8) everyone is within k of the first added: one cluster,
    # named by the first added (not the first key), distances to it.
    clusters = index.clusters()
    assert len(clusters) == 1
    cluster = clusters[0]
    assert cluster.canonical == "z-first"  # added first
    assert cluster.members == [("z-first", 0), ("m-second", 3), ("c", 6)]
    assert index.clusters(k=2) == []


def test_clusters_do_not_chain(index: SimIndex) -> None:
    """The leader rule: A~B and B~C with A far from C does not put C with A;
    C leads a cluster of its own only if something else is paired with it."""
    a = 0
    b = a ^ 0b111  # 3 from a
    c = b ^ (0b111 << 10)  # 3 from b, 6 from a
    d = c ^ (0b11 << 20)  # 2 from c, 5 from b, 8 from a
    index.add_fingerprints([("a", a), ("b", b), ("c", c)])
    # b joins a's cluster; c is paired only with b, a member, not a leader: left out.
    assert [(p.key_a, p.key_b) for p in index.duplicates(3)] == [("a", "b"), ("b", "c")]
    assert index.clusters(k=3) == [Cluster("a", [("a", 0), ("b", 3)])]
    index.add_fingerprint("d", d)
    # Now c has a partner of its own (d, added after it): c leads [c, d].
    assert index.clusters(k=3) == [
        Cluster("a", [("a", 0), ("b", 3)]),
        Cluster("c", [("c", 0), ("d", 2)]),
    ]
    # Within 8 of a, all of them: one cluster, every distance to a.
    assert index.clusters(k=8) == [Cluster("a", [("a", 0), ("b", 3), ("c", 6), ("d", 8)])]


def test_more_blocks_than_k_plus_one(location: str) -> None:
    with SimIndex(location, k=3, blocks=5) as index:
        assert index.layout.widths == (13, 13, 13, 13, 12) and len(index.layout.tables) == 10
        index.add_fingerprint("a", 2**64 - 1)
        assert index.query(2**64 - 1 - 7)[0] == Match("a", 3, 2**64 - 1)
    with SimIndex(location) as index:
        assert len(index.layout.tables) == 10
    with pytest.raises(ConfigMismatchError):
        SimIndex(location, blocks=4)
    for bad in (17, 0):
        with pytest.raises(InvalidArgumentError):
            SimIndex(":memory:", k=3, blocks=bad)
    with pytest.raises(InvalidArgumentError, match="lookups"):
        SimIndex(":memory:", k=15, blocks=2)


def test_query_many_sees_writes_made_after_its_snapshot(location: str) -> None:
    rng = random.Random(11)
    queries = [rng.getrandbits(64) for _ in range(300)]
    with SimIndex(location) as index, SimIndex(location) as other:
        index.add_fingerprints((f"k{i}", q) for i, q in enumerate(queries))
        assert all(r[0].key == f"k{i}" for i, r in enumerate(index.query_many(queries)))
        index.remove("k0")  # a write through this object
        assert index.query_many(queries)[0] == []
        other.add_fingerprint("new", queries[1] ^ 1)  # a write by another connection
        assert [m.key for m in index.query_many(queries)[1]] == ["k1", "new"]
        other.remove("k2")
        assert index.query_many(queries)[2] == []


def test_batches_commit_on_their_own_and_an_import_resumes(location: str) -> None:
    items = [(f"k{i}", i * 7919) for i in range(25)]

    def failing() -> Iterator[tuple[str, int]]:
        yield from items[:12]
        raise RuntimeError("the import was stopped")

    with SimIndex(location) as index:
        with pytest.raises(RuntimeError):
            index.add_fingerprints(failing(), batch_size=5)
        assert len(index) == 10  # two whole batches; the third never committed
        index.add_fingerprint("k0", 1)  # changed since: a resumed import keeps it
        # What was written is counted: the 15 keys not stored yet, not the 25 read.
        assert index.add_fingerprints(items, batch_size=5, skip_existing=True) == 15
        assert dict(index.items()) == dict(items) | {"k0": 1}
        assert index.add_fingerprints(items, batch_size=5, skip_existing=True) == 0
        assert index.add_fingerprints(items, skip_existing=True) == 0
        assert index.add_fingerprints([("x", 1), ("x", 2)], skip_existing=True) == 1
        assert index.get("x") == 1  # with skip_existing, the first wins
        assert index.add_fingerprints([("x", 3), ("y", 4)]) == 2  # replaced and new: written
        big = [(f"b{i}", i) for i in range(12_000)]  # past one chunk, and a bulk load
        assert index.add_fingerprints(big[:7000], skip_existing=True) == 7000
        assert index.add_fingerprints(big, skip_existing=True) == 5000
    with pytest.raises(InvalidArgumentError):
        SimIndex(":memory:").add_fingerprints([], batch_size=0)


def test_add_many_in_batches(index: SimIndex) -> None:
    texts = [(f"d{i}", f"document number {i} about topic {i % 7}") for i in range(12)]
    assert index.add_many(texts, batch_size=5) == 12
    assert len(index) == 12


@pytest.mark.parametrize("mode", ["never", "always"])
def test_add_many_writes_a_batch_before_it_asks_for_more(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is written once its last text is read: a source that yields as
    texts come (a log followed) never waits for a batch's texts to be
    written, with the compiled pass on or off (no chunk is read ahead)."""
    from simindex import compiling

    monkeypatch.setitem(compiling._state, "mode", mode)
    path = tmp_path / "ix.db"
    index = SimIndex(path)
    seen: list[int] = []

    def texts() -> Iterator[tuple[str, str]]:
        for i in range(40):
            if i and i % 5 == 0:
                with SimIndex(path, readonly=True) as other:
                    seen.append(len(other))
            yield f"d{i}", f"line {i} of a log about topic {i % 7}"

    assert index.add_many(texts(), batch_size=5) == 40
    assert seen == list(range(5, 40, 5))
    index.close()


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize(("index_k", "blocks"), [(3, None), (3, 5), (2, None), (1, None)])
def test_a_k_above_the_index_probes_and_equals_brute_force(
    location: str, index_k: int, blocks: int | None, held: bool
) -> None:
    """Past the layout's k a query probes each table with the values a few bits
    away (blocks.probe_radius): exact, and no full scan where it is cheap."""
    rng = random.Random(index_k * 10 + (blocks or 0))
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    for edge in (0, 1, 2**63 - 1, 2**63, 2**64 - 1):
        stored[f"edge{edge}"] = edge
    keys = list(stored)
    for i in range(400):  # neighbours at every distance up to 12, top bit set or not
        stored[f"near{i}"] = flip(stored[keys[i % 60]], i % 13, rng)
    with SimIndex(location, k=index_k, blocks=blocks, hold=held) as index:
        index.add_fingerprints(stored.items())
        queries = [flip(stored[keys[i]], rng.randrange(0, 6), rng) for i in range(40)]
        queries += [0, 2**63, 2**64 - 1]
        for k in range(index_k + 1, 13):
            scanned = scans(index, k)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for q in queries:
                    assert index.query(q, k=k) == brute_force(stored, q, k), (k, q)
            in_memory = index.held
            assert in_memory == held  # PostgreSQL too (by the writes counted)
            # A warning only for a full scan (none from memory).
            assert bool(caught) == (scanned and not in_memory), k
        assert not scans(index, index_k + 1)


def test_an_index_stored_before_cjk_keeps_its_fingerprints(db_path: Path) -> None:
    """An index whose stored configuration has no cjk (made before it existed) keeps
    segmenting Chinese with jieba and tf weights, whatever DEFAULT_CONFIG now is."""
    text = "你妈妈喊你回家吃饭哦，回家罗回家罗"
    with SimIndex(db_path) as index:
        index.add("new", text)
    old_json = '{"ngram": 1, "stopwords": true, "tokenizer": 1, "weighting": "tf"}'
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE simindex_meta SET value = ? WHERE name = 'fingerprint'", (old_json,))
    conn.close()
    with SimIndex(db_path) as index:
        assert index.config == FingerprintConfig() != DEFAULT_CONFIG
        assert index.add("old", text) == simhash(text, FingerprintConfig()) == 17944904788864136004
        assert index.fingerprint(text) == 17944904788864136004
        index.rebuild([("old", text)], config=DEFAULT_CONFIG)  # to move to the new default
        assert index.config == DEFAULT_CONFIG and index.get("old") == simhash(text)


def test_a_config_dict_fills_in_from_the_default() -> None:
    """config={"ngram": 2} changes ngram only, as `--ngram 2` does (stored settings
    without a field still load with the dataclass's own, older default)."""
    with SimIndex(":memory:", config={"ngram": 2}) as index:
        assert index.config == dataclasses.replace(DEFAULT_CONFIG, ngram=2)
    with pytest.raises(InvalidArgumentError, match="unknown"):
        SimIndex(":memory:", config={"colour": "blue"})


def test_an_index_for_a_larger_k_probes_its_fewer_blocks(location: str) -> None:
    """k = 8 gets three blocks, looked up within 2 bits each (costs.default_blocks):
    stored as format 2 with its k, reopened as such, and every path exact."""
    rng = random.Random(8)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(2000)}
    keys = list(stored)
    for i in range(300):
        stored[f"near{i}"] = flip(stored[keys[i % 50]], i % 11, rng)
    stored |= {"top": 2**64 - 1, "zero": 0, "sign": 2**63}
    with SimIndex(location, k=8) as index:
        assert index.layout.widths == (22, 21, 21) and index.stats()["probe_radius"] == 2
        index.add_fingerprints(stored.items())
        queries = [flip(stored[keys[i]], rng.randrange(0, 11), rng) for i in range(50)]
        queries += [0, 2**63, 2**64 - 1]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no full scan anywhere
            for q in queries:
                assert index.query(q) == brute_force(stored, q, 8)
            assert index.query_many(queries) == [brute_force(stored, q, 8) for q in queries]
        found = index.duplicates()
        assert [(p.key_a, p.key_b, p.distance) for p in found] == brute_force_pairs(stored, 8)
        assert all(p.similarity is None for p in found)  # no signatures: distance alone
        assert index.check().ok and index.stats()["format"] == 2
    with SimIndex(location) as index:
        assert index.k == 8 and index.layout.widths == (22, 21, 21)
        with pytest.raises(ConfigMismatchError):
            SimIndex(location, k=3)
        assert index.rebuild(k=3) == len(stored) and index.stats()["format"] == 1
        assert index.query(queries[0], k=8) == brute_force(stored, queries[0], 8)


def test_only_an_index_whose_database_counts_every_change_is_held(location: str) -> None:
    """Before revision 0005 nothing counted the changes of a writer that is
    not simindex: such an index is not read as it is (read-only, refused on
    either database; tests/test_staleness.py holds nothing where the
    triggers are gone); upgraded, it is held."""
    from sqlalchemy import create_engine

    stored = {f"k{i}": i * 0x9E3779B97F4A7C15 % 2**64 for i in range(200)}
    with SimIndex(location) as index:
        index.add_fingerprints(stored.items())
    from simindex.storage import locate

    where = locate(location)
    engine = create_engine(where.url) if where.path is None else None
    if engine is not None:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                f"UPDATE {where.schema}.simindex_alembic_version SET version_num = '0002'"
            )
        engine.dispose()
    else:
        with sqlite3.connect(location) as conn:
            conn.execute("UPDATE simindex_alembic_version SET version_num = '0002'")
        conn.close()
    q = stored["k7"] ^ 0b11
    with pytest.raises(IndexVersionError, match="schema revision 0002"):
        SimIndex(location, readonly=True, hold=True)
    with SimIndex(location, hold=True) as index:  # for writing: upgraded to 0005 and on
        assert index.stats()["schema_revision"] == storage.HEAD
        assert index.query(q) == brute_force(stored, q, 8)
        assert index.held


def test_a_held_query_on_a_server_reads_its_rows_and_versions_at_once(
    pg_url: str, hold: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: a held query is answered from memory and confirmed by the
    one statement that reads its matches' rows with the versions (no
    separate versions read); a write elsewhere shows in that statement and
    the query is asked again the usual way, with the same answers."""
    rng = random.Random(12)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    keys = list(stored)
    with SimIndex(pg_url, k=3) as index, SimIndex(pg_url) as other:
        index.add_fingerprints(stored.items())
        q = stored[keys[5]] ^ 0b1011
        assert index.query(q, k=8) == brute_force(stored, q, 8)  # reads it in
        assert index.held
        calls: list[str] = []
        for name in ("versions", "rows_by_id", "rows_and_versions"):
            real = getattr(store.Store, name)
            monkeypatch.setattr(
                store.Store,
                name,
                lambda self, *a, _n=name, _f=real: calls.append(_n) or _f(self, *a),
            )
        for query in (q, rng.getrandbits(64)):  # with matches, and without
            calls.clear()
            assert index.query(query, k=8) == brute_force(stored, query, 8)
            assert calls == ["rows_and_versions"], calls
        other.add_fingerprint("new", q ^ 1)  # elsewhere: the next query sees it
        stored["new"] = q ^ 1
        calls.clear()
        assert index.query(q, k=8) == brute_force(stored, q, 8)
        assert calls[0] == "rows_and_versions"  # which finds the change
        # The snapshot is let go: the query is asked again through the lookups
        # (rows read by id, which a query only does when nothing is held) ...
        assert "rows_by_id" in calls[1:], calls
        assert index.held  # ... and it is read again (the rent is 0)


def test_hold_says_when_queries_come_from_memory(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hold=True holds from the first probed query, whatever reading costs;
    hold=False never, even if reading cost nothing; the default once the
    database time spent reaches what reading would cost. The costs are made
    up (the accelerator's rents), so how fast the machine is decides nothing:
    three queries never reach an endless rent, and always a rent of 0."""
    rng = random.Random(3)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(500)}
    SimIndex(db_path).add_fingerprints(stored.items())
    q = stored["k7"] ^ 0b101
    endless = float("inf")
    for hold, rent, held in (
        (True, endless, True),
        (False, 0.0, False),
        (None, endless, False),
        (None, 0.0, True),
    ):
        for name in ("HOLD_FIRST_S", "HOLD_S_PER_ROW", "STORED_S_PER_ROW"):
            monkeypatch.setattr(accelerator, name, rent)
        with SimIndex(db_path, hold=hold) as index:
            for _ in range(3):
                assert index.query(q) == brute_force(stored, q, index.k)
            assert index.held == held, (hold, rent)
    with pytest.raises(InvalidArgumentError, match="hold"):
        SimIndex(db_path, hold="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["memory", "file"])
@pytest.mark.parametrize(
    ("added_max", "applied_max"),
    [(4096, 1 << 16), (3, 1 << 16), (4096, 2)],
    ids=["added", "merged", "too-many"],  # merged often; writes of 3+ rows let it go
)
def test_own_writes_keep_the_snapshot_exact(
    where: str,
    added_max: int,
    applied_max: int,
    tmp_path: Path,
    hold: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writes through the object that holds the snapshot are applied to it
    (added rows compared one by one, then merged): every answer equals brute
    force, and the index is never read again (unless a write was too large
    to apply)."""
    monkeypatch.setattr(accelerator, "ADDED_MAX", added_max)
    monkeypatch.setattr(accelerator, "APPLIED_MAX", applied_max)
    if applied_max == 2:  # rows read back after the write, not returned by it (see Store.put)
        monkeypatch.setattr(store, "_RETURNED_ROWS", 0)
    loads = []
    original_load = store.Store.load
    monkeypatch.setattr(
        store.Store, "load", lambda self, *a: loads.append(1) or original_load(self, *a)
    )
    rng = random.Random(21 + added_max)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(400)}
    stored["top"] = 2**64 - 1
    location = ":memory:" if where == "memory" else str(tmp_path / "x.db")
    with SimIndex(location, k=3) as index:
        index.add_fingerprints(stored.items())
        probe = rng.getrandbits(64)
        assert index.query(probe, k=8) == brute_force(stored, probe, 8)  # read into memory
        assert len(loads) == 1
        for step in range(60):
            op = step % 5
            base = rng.choice(list(stored.values()))
            if op == 0:  # a new key near a stored one
                key, fp = f"new{step}", flip(base, rng.randrange(0, 9), rng)
                index.add_fingerprint(key, fp)
                stored[key] = fp
            elif op == 1:  # a stored key replaced
                key = rng.choice(list(stored))
                stored[key] = flip(base, rng.randrange(0, 9), rng) | (1 << 63)
                index.add_fingerprint(key, stored[key])
            elif op == 2:  # removed, some of them
                gone = rng.sample(list(stored), 2) + ["never-stored"]
                assert index.remove_many(gone) == 2
                for key in gone[:2]:
                    del stored[key]
            elif op == 3:  # a batch, a key twice (the later wins), old keys left alone
                batch = [(f"b{step}-{j}", flip(base, j, rng)) for j in range(4)]
                batch.append((batch[0][0], flip(base, 7, rng)))
                index.add_fingerprints(batch)
                stored.update(batch)
                kept = rng.choice(list(stored))
                index.add_fingerprints([(kept, rng.getrandbits(64))], skip_existing=True)
            else:  # a write that fails half-way changes nothing
                with pytest.raises(InvalidArgumentError):
                    index.add_fingerprints([("fine", 1), ("bad", -1)])
            queries = [flip(rng.choice(list(stored.values())), rng.randrange(0, 6), rng)]
            queries += [rng.getrandbits(64), base]
            for q in queries:
                for k in (5, 8, 11):
                    assert index.query(q, k=k) == brute_force(stored, q, k), (step, k)
            batch_queries = queries * 10  # matched as a batch (added rows one by one or merged)
            assert index.query_many(batch_queries, k=8) == [
                brute_force(stored, q, 8) for q in batch_queries
            ]
        # Never read again where every write was applied; else reread after the large ones.
        assert (len(loads) == 1) == (applied_max > 2)


def test_a_connect_that_fails_is_a_storage_error_and_the_next_call_connects(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server restarting refuses new connections ("the database system is
    starting up", "Connection refused"): every call that must connect then
    raises StorageError with the driver's reason, never the driver's own
    exception (the pool's connect does not wrap it), and works once the
    database takes connections again."""
    index = SimIndex(location, hold=False)
    try:
        index.add_fingerprints([("a", 1), ("b", 3 | 1 << 63)])
        engine = index._backend.engine
        driver = engine.dialect.loaded_dbapi

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise driver.OperationalError("connection failed: the database system is starting up")

        calls = {
            "query": lambda: index.query(1, k=1),
            "get": lambda: index.get("a"),
            "query_many": lambda: index.query_many([1, 3]),
            "len": lambda: len(index),
            "add": lambda: index.add_fingerprint("c", 5),
            "add in batches": lambda: index.add_fingerprints([("d", 7), ("e", 9)], batch_size=1),
            "duplicates": lambda: index.duplicates(k=1),
        }
        for call in calls.values():
            index._views.current.store.close()  # the kept connections gone, as in a restart
            engine.dispose()
            monkeypatch.setattr(engine.dialect, "connect", refused)
            with pytest.raises(StorageError, match="starting up"):
                call()
            monkeypatch.undo()
            call()  # connects again
        assert index.get("e") == 9 and index.get("a") == 1
    finally:
        index.close()


def test_a_closed_index_raises_on_every_use_and_closes_twice(tmp_path: Path) -> None:
    """As a closed file does: every method and property that reads or
    writes the index raises ClosedIndexError (a ValueError), none answers
    or writes a row; close() again does nothing; the settings it was
    opened with stay readable."""
    from simindex import ClosedIndexError

    path = tmp_path / "ix.db"
    index = SimIndex(path, overlaps=True)
    index.add("a", "the quick brown fox jumps over the lazy dog")
    index.close()
    uses = {
        "query": lambda: index.query("the quick brown fox"),
        "query_many": lambda: index.query_many(["the quick brown fox"]),
        "add": lambda: index.add("b", "another text entirely"),
        "add_many": lambda: index.add_many([("b", "another text entirely")]),
        "add_fingerprint": lambda: index.add_fingerprint("b", 1),
        "add_fingerprints": lambda: index.add_fingerprints([("b", 1)]),
        "remove": lambda: index.remove("a"),
        "remove_many": lambda: index.remove_many(["a"]),
        "get": lambda: index.get("a"),
        "in": lambda: "a" in index,
        "len": lambda: len(index),
        "items": lambda: list(index.items()),
        "duplicates": lambda: index.duplicates(),
        "clusters": lambda: index.clusters(),
        "stats": lambda: index.stats(),
        "check": lambda: index.check(),
        "compact": lambda: index.compact(),
        "overlaps": lambda: index.overlaps("the quick brown fox jumps over the lazy dog"),
        "explain": lambda: index.explain("one text here", "another text here"),
        "rebuild": lambda: index.rebuild([("c", "a text to rebuild from")]),
        "held": lambda: index.held,
    }
    for name, use in uses.items():
        with pytest.raises(ClosedIndexError, match="is closed") as caught:
            use()
        assert isinstance(caught.value, ValueError), name
    index.close()
    assert "closed" in repr(index)
    # What it was opened with stays known, as a closed file's name does.
    assert (index.k, index.threshold, index.passages) == (8, 0.78, True)
    assert index.fingerprint("some text") == simhash("some text", index.config)
    with SimIndex(path) as again:
        assert dict(again.items()) == {"a": again.get("a")} and len(again) == 1


def test_an_empty_text_in_add_many_is_named_by_its_key_or_skipped() -> None:
    with SimIndex() as index:
        with pytest.raises(EmptyTextError, match="'doc-3'") as caught:
            index.add_many([("doc-2", "a text with words"), ("doc-3", " ... "), ("doc-4", "more")])
        assert caught.value.key == "doc-3"
        assert len(index) == 0  # one transaction: none written
        with pytest.raises(EmptyTextError, match="'lone'") as caught:
            index.add("lone", "!!!")
        assert caught.value.key == "lone"
        written = index.add_many(
            [("doc-2", "a text with words"), ("doc-3", " ... "), ("doc-4", "more words")],
            skip_empty=True,
        )
        assert written == 2 and sorted(k for k, _ in index.items()) == ["doc-2", "doc-4"]
        with pytest.raises(EmptyTextError) as caught:
            index.query("...")
        assert caught.value.key is None
