"""The Spark path (simindex.spark) against the library, in local[2] mode.

near_duplicates must give exactly SimIndex.duplicates() (and a brute-force
oracle) for the same rows, clusters exactly SimIndex.clusters(), fingerprints
exactly fingerprint_and_signature / simhash; to_index round-trips; the
command works end to end and refuses mistakes in one line.

Needs pyspark, pyarrow and a Java 17 runtime (pip install '.[spark]');
without them these tests skip saying so, and with SIMINDEX_REQUIRE_SPARK=1
(CI) a skip is a failure. One SparkSession serves the module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simindex import SimIndex
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig, simhash, to_signed, to_unsigned
from simindex.pairs import leader_clusters
from simindex.signature import (
    DEFAULT_THRESHOLD,
    NBYTES,
    bands_meet,
    fingerprint_and_signature,
    meets,
    similarity,
)
from tests.helpers import longer_text

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
HOW = "pyspark, pyarrow or Java missing: pip install '.[spark]' and a Java 17 runtime to run them"

Row = tuple[str, int, "bytes | None"]  # key, unsigned fingerprint, signature


def _spark_missing() -> str | None:
    for module in ("pyspark", "pyarrow", "pandas"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    home = os.environ.get("JAVA_HOME")
    if not (home and Path(home, "bin", "java").exists()) and shutil.which("java") is None:
        return "no java on PATH or in JAVA_HOME"
    return None


@pytest.fixture(scope="module")
def runtime() -> None:
    """Skips (or with SIMINDEX_REQUIRE_SPARK=1 fails) without pyspark or Java;
    for the tests that run the command in its own process only."""
    missing = _spark_missing()
    if missing:
        if os.environ.get("SIMINDEX_REQUIRE_SPARK") == "1":
            pytest.fail(f"SIMINDEX_REQUIRE_SPARK=1 but {missing} ({HOW})")
        pytest.skip(f"{HOW} ({missing})")


@pytest.fixture(scope="module")
def spark(runtime: None) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("simindex tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# --- rows -----------------------------------------------------------------------------------


def _near(rng: random.Random, fp: int, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        fp ^= 1 << bit
    return fp


def _sig_near(rng: random.Random, sig: bytes, bins: int) -> bytes:
    """A signature differing from sig in about `bins` of its 4-bit bins."""
    out = bytearray(sig)
    for b in rng.sample(range(2 * NBYTES), bins):
        out[b // 2] ^= (rng.randrange(1, 16)) << (4 * (b % 2))
    return bytes(out)


def corpus(seed: int, n: int = 1200, planted: int = 400) -> list[Row]:
    """Random fingerprints, about half with the top bit set (negative as
    Spark's signed longs: every shift and mask on them must not care),
    0, 2**63 and 2**64 - 1 among them, and planted near-duplicates (copies of
    copies too: chains) at 0-10 bits, across the sign bit too, with
    signatures 0-40 bins apart (around the default threshold) or none (one
    row in eight)."""
    rng = random.Random(seed)
    rows: list[Row] = []
    for i in range(n):
        sig = rng.randbytes(NBYTES) if rng.random() > 0.125 else None
        fp = (0, 1 << 63, (1 << 64) - 1)[i] if i < 3 else rng.getrandbits(64)
        rows.append(("", fp, sig))
    for _ in range(planted):
        _, fp, sig = rng.choice(rows)
        copy = None if sig is None or rng.random() < 0.1 else _sig_near(rng, sig, rng.randrange(41))
        rows.append(("", _near(rng, fp, rng.randrange(11)), copy))
    # keys in no relation to the order (so order and key order differ)
    return [(f"d{rng.getrandbits(40):010x}-{i}", fp, sig) for i, (_, fp, sig) in enumerate(rows)]


def skewed(seed: int, n: int = 2000, same: int = 2500) -> list[Row]:
    """`same` rows sharing their top 32 bits (thousands of identical block
    values in every plan's first tables) among n random ones."""
    rng = random.Random(seed)
    top = rng.getrandbits(32) << 32 | 1 << 63
    rows = [rng.getrandbits(64) for _ in range(n)]
    rows += [top | rng.getrandbits(32) for _ in range(same)]
    rng.shuffle(rows)
    return [(f"s{i:05d}", fp, None) for i, fp in enumerate(rows)]


def frame(spark: Any, rows: list[Row]) -> Any:
    data = [(key, to_signed(fp), sig, i) for i, (key, fp, sig) in enumerate(rows)]
    schema = "key string, fingerprint long, signature binary, position long"
    return spark.createDataFrame(data, schema).cache()


def indexed(rows: list[Row]) -> SimIndex:
    index = SimIndex(":memory:")
    index.add_fingerprints(rows)  # in order: ids follow the positions
    return index


def brute(rows: list[Row], k: int, threshold: float) -> set[tuple[Any, ...]]:
    """Every pair within k, or (threshold above 0) at any distance whose
    signatures meet (signature.meets), verified at the threshold. meets is
    asked of the pairs that can meet: both keeping a set, or neither with a
    run of five bytes (a band) equal, which numpy finds here."""
    fps = np.array([fp for _, fp, _ in rows], dtype=np.uint64)
    sigs = [sig for _, _, sig in rows]
    sketch = np.array([sig is not None and longer_text(sig) for sig in sigs])
    runs = np.zeros((len(rows), 12, 5), np.uint8)
    for i in np.flatnonzero(sketch).tolist():
        runs[i] = np.frombuffer(sigs[i][:60], np.uint8).reshape(12, 5)
    kept = np.array([sig is not None and not longer_text(sig) for sig in sigs])
    out = set()
    for i in range(len(rows)):
        d = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        near = d <= k
        if threshold > 0 and sketch[i]:
            near |= (runs[i] == runs[i + 1 :]).all(axis=2).any(axis=1) & sketch[i + 1 :]
        if threshold > 0 and kept[i]:
            near |= kept[i + 1 :]
        for j in (np.flatnonzero(near) + i + 1).tolist():
            sa, sb = sigs[i], sigs[j]
            if d[j - i - 1] > k and meets(sa, sb) is None:
                continue
            estimate = None if sa is None or sb is None else similarity(sa, sb)
            if estimate is None or estimate >= threshold:
                ka, kb = sorted((rows[i][0], rows[j][0]))
                out.add((ka, kb, int(d[j - i - 1]), estimate))
    return out


def got_pairs(df: Any) -> list[tuple[Any, ...]]:
    return sorted(
        ((r.key_a, r.key_b, r.distance, r.similarity) for r in df.collect()),
        key=lambda p: (p[2], p[0], p[1]),
    )


def want_pairs(index: SimIndex, k: int, threshold: float | None = None) -> list[tuple[Any, ...]]:
    return [tuple(p) for p in index.duplicates(k, threshold=threshold)]


def cluster_rows(index: SimIndex, k: int, threshold: float | None = None) -> set[tuple[Any, ...]]:
    return {
        (key, c.canonical, d)
        for c in index.clusters(k, threshold=threshold)
        for key, d in c.members
    }


# --- near_duplicates ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def random_rows() -> list[Row]:
    return corpus(1)


@pytest.fixture(scope="module")
def random_df(spark: Any, random_rows: list[Row]) -> Any:
    return frame(spark, random_rows)


@pytest.mark.parametrize("pair_on", ["executors", "driver"])
@pytest.mark.parametrize("k", range(9))
def test_pairs_equal_the_index_and_brute_force(
    spark: Any, random_rows: list[Row], random_df: Any, k: int, pair_on: str
) -> None:
    from simindex.spark import near_duplicates

    with indexed(random_rows) as index:
        want = want_pairs(index, k)
    assert want, "the planted copies make pairs at every k"
    got = got_pairs(near_duplicates(random_df, k=k, pair_on=pair_on))
    assert got == want
    assert set(got) == brute(random_rows, k, DEFAULT_THRESHOLD)


@pytest.mark.parametrize(
    ("k", "blocks", "group_rows", "pair_on"),
    [
        (8, 3, None, "executors"),
        (6, 4, None, "executors"),
        (3, 2, None, "executors"),
        (8, 3, 40, "executors"),
        (8, 3, None, "driver"),
    ],
)
def test_probed_plans_equal_the_index(
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    random_rows: list[Row],
    random_df: Any,
    k: int,
    blocks: int,
    group_rows: int | None,
    pair_on: str,
) -> None:
    """Plans with probes (radius > 0), as pairs_plan picks at larger n; with
    groups of at most 40 expected rows, most rows visit other groups."""
    from simindex.spark import _pairs, near_duplicates

    if group_rows is not None:
        monkeypatch.setattr(_pairs, "GROUP_ROWS", group_rows)
        plan = _pairs.pairs_plan(len(random_rows), k, blocks=blocks)
        assert _pairs.group_bits(len(random_rows), plan, 0, 2) >= 6
    with indexed(random_rows) as index:
        want = want_pairs(index, k, 0.0)
    got = near_duplicates(random_df, k=k, threshold=0, blocks=blocks, pair_on=pair_on)
    assert got_pairs(got) == want


def test_auto_pairs_on_the_driver_up_to_driver_rows(
    spark: Any, monkeypatch: pytest.MonkeyPatch, random_rows: list[Row], random_df: Any
) -> None:
    from simindex.errors import InvalidArgumentError
    from simindex.spark import _pairs, near_duplicates

    collected: list[int] = []
    driver_pairs = _pairs._driver_pairs

    def counted(slim: Any, k: int, plan: Any) -> Any:
        collected.append(k)
        return driver_pairs(slim, k, plan)

    monkeypatch.setattr(_pairs, "_driver_pairs", counted)
    with indexed(random_rows) as index:
        random_want = want_pairs(index, 8)
    assert got_pairs(near_duplicates(random_df)) == random_want
    assert collected == [8]
    # (every row of random_rows has a fingerprint: n is len(random_rows))
    monkeypatch.setattr(_pairs, "DRIVER_ROWS", len(random_rows) - 1)
    assert got_pairs(near_duplicates(random_df)) == random_want
    assert collected == [8]  # past DRIVER_ROWS: the shuffle
    monkeypatch.setattr(_pairs, "DRIVER_ROWS", 1 << 25)
    # A skewed corpus: in a sample of about 500 of its 4,500 rows, the 2,500
    # sharing their top 32 bits share a block, priced at millions of pairs,
    # past 1,000 / 8, so auto takes the shuffle; with DRIVER_PAIRS at 2**30,
    # the sample's pairs (about ten thousand, scaled) fit: the driver
    rows = skewed(3)
    df = frame(spark, rows)
    monkeypatch.setattr(_pairs, "SAMPLE_ROWS", 500)
    monkeypatch.setattr(_pairs, "DRIVER_PAIRS", 1000)
    with indexed(rows) as index:
        want = want_pairs(index, 8)
    assert len(want) > 5000
    assert got_pairs(near_duplicates(df)) == want
    assert collected == [8]
    monkeypatch.setattr(_pairs, "DRIVER_PAIRS", 1 << 30)
    assert got_pairs(near_duplicates(df)) == want
    assert collected == [8, 8]
    # More candidates than BROADCAST_PAIRS: verified by sort-merge joins
    monkeypatch.setattr(_pairs, "BROADCAST_PAIRS", 0)
    assert got_pairs(near_duplicates(random_df, pair_on="driver")) == random_want
    with pytest.raises(InvalidArgumentError, match="pair_on"):
        near_duplicates(random_df, pair_on="gpu")
    empty = random_df.limit(0)
    assert got_pairs(near_duplicates(empty, pair_on="driver")) == []


def test_threshold_and_defaults(spark: Any, random_rows: list[Row], random_df: Any) -> None:
    from simindex.spark import near_duplicates

    with indexed(random_rows) as index:
        assert got_pairs(near_duplicates(random_df)) == want_pairs(index, 8)
        strict = got_pairs(near_duplicates(random_df, threshold=0.95))
        assert strict == want_pairs(index, 8, 0.95)
        assert len(strict) < len(want_pairs(index, 8, 0.0))


def test_short_texts_one_unit_apart_equal_the_index(spark: Any) -> None:
    """Short texts one word apart are pairs at any distance (their set keys
    joined), exactly as SimIndex.duplicates() finds them; not at threshold 0."""
    from simindex.spark import near_duplicates

    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(40)]
    docs: list[tuple[str, str]] = []
    for i in range(50):
        words = rng.sample(vocab, rng.randint(4, 12))
        docs.append((f"s{i}", " ".join(words)))
        edited = list(words)
        edited[rng.randrange(len(edited))] = rng.choice(vocab)
        docs.append((f"s{i}-r", " ".join(edited)))
        docs.append((f"s{i}-i", " ".join([*words, rng.choice(vocab)])))
    rows = [(key, *fingerprint_and_signature(text, DEFAULT_CONFIG)) for key, text in docs]
    with SimIndex(":memory:") as index:
        index.add_many(docs)
        for at in (None, 0.0, 0.95):
            want = want_pairs(index, 8, threshold=at)
            assert got_pairs(near_duplicates(frame(spark, rows), k=8, threshold=at)) == want
            if at is None:
                assert any(p[2] > 8 for p in want)  # (the case is there)


def test_short_texts_a_popular_set_key_is_joined_as_groups(spark: Any) -> None:
    """Hundreds of equal short texts share their set keys: the keys' join is
    of groups (set key, fingerprint), not of rows (before, 400 texts of two
    sets made some 80,000 joined rows), and the pairs still equal the index's."""
    from simindex.spark import near_duplicates
    from simindex.spark._pairs import _keyed_candidates, _numbered

    text = "your parcel has shipped today thanks for ordering"
    docs = [(f"a{i}", text) for i in range(200)]
    docs += [(f"b{i}", text.replace("today", "monday")) for i in range(200)]
    docs += [("c", "parcel parcel parcel " + text), ("d", text + " ordering ordering")]
    rows = [(key, *fingerprint_and_signature(t, DEFAULT_CONFIG)) for key, t in docs]
    assert len({fp for _, fp, _ in rows}) == 4
    df = frame(spark, rows)
    candidates = _keyed_candidates(_numbered(df), 8).collect()
    assert 0 < len(candidates) <= 6 * 8  # pairs of the 4 fingerprints, a few keys each
    with SimIndex(":memory:") as index:
        index.add_many(docs)
        want = want_pairs(index, 8)
    assert any(p[2] > 8 for p in want)  # (the case is there)
    assert got_pairs(near_duplicates(df, k=8)) == want


def _edited_copies(kind: str, wanted: int) -> list[tuple[str, str, str]]:
    """(key, text, copy's text) of ``wanted`` texts of 40 distinct words and
    copies with a few of them replaced, searched seed by seed: ``"pair"``,
    fingerprints more than 8 apart, one band of the sketch equal
    (signature.bands_meet) and similarity at least DEFAULT_THRESHOLD;
    ``"below"``, the same but similarity under it."""
    vocab = [f"w{i}" for i in range(400)]
    found: list[tuple[str, str, str]] = []
    for seed in range(2000):
        rng = random.Random(seed)
        words = rng.sample(vocab, 40)
        edited = list(words)
        for i in rng.sample(range(40), rng.randint(2, 12)):
            edited[i] = rng.choice(vocab)
        text, copy = " ".join(words), " ".join(edited)
        (fa, sa), (fb, sb) = (fingerprint_and_signature(t, DEFAULT_CONFIG) for t in (text, copy))
        if not (longer_text(sa) and longer_text(sb)) or (fa ^ fb).bit_count() <= 8:
            continue
        if bands_meet(sa, sb) and (similarity(sa, sb) >= DEFAULT_THRESHOLD) == (kind == "pair"):
            found.append((f"{kind}{seed}", text, copy))
            if len(found) == wanted:
                return found
    raise AssertionError(f"fewer than {wanted} {kind} copies")


def test_longer_texts_with_a_band_equal_are_pairs_beyond_k(spark: Any) -> None:
    """Longer texts (more than 15 distinct units: no short text's set) whose copies,
    a few words edited, moved their fingerprints more than k away but keep
    one band of the sketch equal: paired at any distance (their band keys
    joined), verified at the threshold (the "below" copies are not), exactly
    as the brute force and SimIndex.duplicates() pair them; not at threshold 0."""
    from simindex.spark import near_duplicates

    paired = _edited_copies("pair", 4)
    edited = paired + _edited_copies("below", 2)
    docs = [doc for key, text, copy in edited for doc in ((key, text), (f"{key}-copy", copy))]
    rows: list[Row] = [
        (key, *fingerprint_and_signature(text, DEFAULT_CONFIG)) for key, text in docs
    ]
    df = frame(spark, rows)
    got = got_pairs(near_duplicates(df, k=8))
    assert {(a, b) for a, b, d, _ in got if d > 8} == {(key, f"{key}-copy") for key, _, _ in paired}
    assert set(got) == brute(rows, 8, DEFAULT_THRESHOLD)
    with SimIndex(":memory:") as index:
        index.add_many(docs)
        assert got == want_pairs(index, 8)
    at_zero = got_pairs(near_duplicates(df, k=8, threshold=0))
    assert all(d <= 8 for _, _, d, _ in at_zero)
    assert set(at_zero) == brute(rows, 8, 0.0)


@pytest.mark.parametrize(
    ("limit", "blocks", "k", "pair_on"),
    [(None, None, 8, "executors"), (300, None, 8, "executors"), (50, 3, 8, "executors"),
     (None, None, 8, "driver")],
)  # fmt: skip
def test_skewed_buckets_are_split(
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
    limit: int | None,
    blocks: int | None,
    k: int,
    pair_on: str,
) -> None:
    """2,500 rows share their top 32 bits: split into sub-buckets (the
    default limit, a small one, and a probed plan with many big buckets,
    capped at 40 so the limit rises)."""
    from simindex.spark import _pairs, near_duplicates

    if blocks is not None:
        monkeypatch.setattr(_pairs, "_MAX_BIG", 40)
    rows = skewed(2)
    df = frame(spark, rows)
    with indexed(rows) as index:
        want = want_pairs(index, k)
    got = got_pairs(near_duplicates(df, k=k, bucket_limit=limit, blocks=blocks, pair_on=pair_on))
    assert len(got) > 1000
    assert got == want
    assert set(got) == brute(rows, k, DEFAULT_THRESHOLD)


def test_rows_without_a_fingerprint_or_position(spark: Any) -> None:
    from simindex.spark import near_duplicates

    data = [("a", to_signed(1 << 63), None), ("b", to_signed(1 << 63 | 3), None), ("c", None, None)]
    df = spark.createDataFrame(data, "key string, fingerprint long, signature binary")
    assert got_pairs(near_duplicates(df.drop("signature"), k=2)) == [("a", "b", 2, None)]
    with pytest.raises(ValueError, match="no column 'fingerprint'"):
        near_duplicates(df.drop("fingerprint"))
    with pytest.raises(ValueError, match="k must be"):
        near_duplicates(df, k=16)


# --- clusters -------------------------------------------------------------------------------


@pytest.mark.parametrize("local_limit", [None, 0])
def test_clusters_equal_the_index(
    spark: Any, random_rows: list[Row], random_df: Any, local_limit: int | None
) -> None:
    """On the driver at the end (default) and in rounds alone (local_limit=0)."""
    from simindex.spark import clusters, near_duplicates

    pairs = near_duplicates(random_df, k=8, threshold=0.7)
    options = {} if local_limit is None else {"local_limit": local_limit}
    got = {
        (r.key, r.canonical, r.distance) for r in clusters(pairs, random_df, **options).collect()
    }
    with indexed(random_rows) as index:
        want = cluster_rows(index, 8, 0.7)
    assert len(want) > 200
    assert got == want


def chain(spark: Any, n: int) -> tuple[Any, Any, list[tuple[int, int]]]:
    """A chain of n documents, each paired with the one before, and the
    first with every third (so leaders are not simply every other one)."""
    links = [(i - 1, i) for i in range(1, n)] + [(0, i) for i in range(3, n, 3)]
    keys = [f"c{(i * 7919) % n:06d}" for i in range(n)]  # key order is not the order
    pairs = spark.createDataFrame(
        [(keys[a], keys[b], 1 + (a + b) % 5) for a, b in links],
        "key_a string, key_b string, distance int",
    )
    fps = spark.createDataFrame([(keys[i], i) for i in range(n)], "key string, position long")
    return pairs, fps, links


def _chain_want(n: int, links: list[tuple[int, int]]) -> set[tuple[str, str, int]]:
    keys = [f"c{(i * 7919) % n:06d}" for i in range(n)]
    distance = {(a, b): 1 + (a + b) % 5 for a, b in links}
    out = set()
    for group in leader_clusters(links):
        out.add((keys[group[0]], keys[group[0]], 0))
        out |= {
            (keys[m], keys[group[0]], distance[min(m, group[0]), max(m, group[0])])
            for m in group[1:]
        }
    return out


def test_a_long_chain(spark: Any) -> None:
    """5,000 links decided on the driver; 40 documents decided in rounds
    (local_limit=0), and in rounds then on the driver (local_limit=12)."""
    from simindex.spark import clusters

    pairs, fps, links = chain(spark, 5000)
    assert {tuple(r) for r in clusters(pairs, fps).collect()} == _chain_want(5000, links)
    pairs, fps, links = chain(spark, 40)
    want = _chain_want(40, links)
    assert {tuple(r) for r in clusters(pairs, fps, local_limit=0).collect()} == want
    assert {tuple(r) for r in clusters(pairs, fps, local_limit=12).collect()} == want
    with pytest.raises(ValueError, match="after 2 rounds"):
        clusters(pairs, fps, local_limit=0, max_rounds=2)


# --- fingerprints ---------------------------------------------------------------------------

CHINESE = [
    "市图书馆将从下个月第一个星期一起调整开放时间，工作日上午九点开门，晚上八点闭馆。",
    "市圖書館將從下個月第一個星期一起調整開放時間，工作日上午九點開門，晚上八點閉館。",
    "受桥梁维修影响，十四路公交车将临时改道六周，北行车辆改从国王大街发车。",
    "今天下午有雷阵雨，气温二十度到二十六度，请市民出门携带雨具。",
    "新开的面包店每天早上六点开始营业，招牌是全麦面包和红豆包。",
]


def texts() -> list[str]:
    """Paragraphs of this machine's licence files (English) and Chinese
    sentences (Simplified and Traditional), and texts with no words."""
    out: list[str] = []
    for name in ("GPL-3", "Apache-2.0", "MPL-2.0", "Artistic"):
        path = Path("/usr/share/common-licenses", name)
        if path.exists():
            paragraphs = path.read_text(encoding="utf-8").split("\n\n")
            out += [p for p in paragraphs if p.strip()][:60]
    out += CHINESE + [a + b for a, b in zip(CHINESE, CHINESE[1:], strict=False)]
    return out + ["", "!!! ...", "   "]


@pytest.mark.parametrize(
    ("config", "signatures"),
    [(None, True), (None, False), (FingerprintConfig(ngram=2, weighting="sublinear"), True)],
)
def test_fingerprints_equal_the_library(spark: Any, config: Any, signatures: bool) -> None:
    from simindex.spark import fingerprints

    items = texts()
    assert len(items) > 100
    docs = spark.createDataFrame(
        [(f"t{i}", t) for i, t in enumerate(items)] + [("none", None)], "id string, text string"
    ).repartition(3)  # several tasks, each with its own copy of the configuration
    got = {
        r.key: (r.fingerprint, r.signature, r.position)
        for r in fingerprints(docs, config=config, signatures=signatures).collect()
    }
    cfg = config or DEFAULT_CONFIG
    assert len(got) == len(items) + 1
    assert got["none"][:2] == (None, None)
    for i, text in enumerate(items):
        fp, sig, _ = got[f"t{i}"]
        if not text.strip(" !."):
            assert (fp, sig) == (None, None)
            continue
        want_fp, want_sig = fingerprint_and_signature(text, cfg)
        assert to_unsigned(fp) == want_fp == simhash(text, cfg)
        assert (bytes(sig) if sig is not None else None) == (want_sig if signatures else None)
    assert len({p for _, _, p in got.values()}) == len(got)


def test_fingerprints_order_and_columns(spark: Any) -> None:
    from simindex.spark import fingerprints

    docs = spark.createDataFrame(
        [("b", "two words", 7), ("a", "one more", 3)], "k string, body string, n long"
    )
    rows = fingerprints(docs, key_col="k", text_col="body", order_col="n").collect()
    assert sorted((r.key, r.position) for r in rows) == [("a", 3), ("b", 7)]
    with pytest.raises(ValueError, match="no column 'text'"):
        fingerprints(docs, key_col="k")


def test_an_order_with_ties_is_refused(spark: Any) -> None:
    """An add order has no ties: two documents at one position would share
    a row in the pairs and a node in the clusters, so both refuse it."""
    from simindex.spark import clusters, fingerprints, near_duplicates

    docs = spark.createDataFrame(
        [("d0", "the same words here", 5), ("d1", "the same words here", 5)],
        "id string, text string, ts long",
    )
    fps = fingerprints(docs, order_col="ts")
    with pytest.raises(ValueError, match="each needs its own value: it is 5 for 2"):
        near_duplicates(fps)
    pairs = near_duplicates(fingerprints(docs))  # the input's order: no ties
    assert [tuple(r) for r in pairs.collect()] == [("d0", "d1", 0, 1.0)]
    with pytest.raises(ValueError, match="its own value"):
        clusters(pairs, fps)


# --- to_index -------------------------------------------------------------------------------


def _round_trip(spark: Any, location: str, rows: list[Row], *, ordered: bool) -> None:
    from simindex.spark import clusters, near_duplicates, to_index

    df = frame(spark, rows).repartition(3)
    assert to_index(df, location) == len(rows)
    with SimIndex(location) as index:
        assert sorted(index.items()) == sorted((key, fp) for key, fp, _ in rows)
        pairs = near_duplicates(df)
        assert want_pairs(index, 8) == got_pairs(pairs)  # signatures stored too
        if ordered:
            got = {(r.key, r.canonical, r.distance) for r in clusters(pairs, df).collect()}
            assert got == cluster_rows(index, 8)


def test_to_index_sqlite(spark: Any, tmp_path: Path) -> None:
    _round_trip(spark, str(tmp_path / "spark.db"), corpus(3, 600, 200), ordered=True)


def test_to_index_postgres(spark: Any, pg_url: str) -> None:
    _round_trip(spark, pg_url, corpus(4, 600, 200), ordered=False)


# --- the command ----------------------------------------------------------------------------


def run_command(*args: str) -> Any:
    """The command in this process, on the module's SparkSession."""
    from typer.testing import CliRunner

    from simindex.spark._command import app

    return CliRunner().invoke(app, ["dedup", *args])


def read_out(spark: Any, out: Path, fmt: str = "parquet") -> dict[str, list[Any]]:
    reader = spark.read.parquet if fmt == "parquet" else spark.read.json
    return {name: reader(str(out / name)).collect() for name in ("kept", "pairs", "clusters")}


def test_command_on_the_examples(spark: Any, tmp_path: Path) -> None:
    """Same pairs and clusters as an index of the same texts; kept: everything
    but the clusters' other members, in input order, every column."""
    news = ROOT / "examples" / "news.jsonl"
    docs = [json.loads(line) for line in news.read_text(encoding="utf-8").splitlines()]
    with SimIndex(":memory:") as index:
        index.add_many((d["id"], d["text"]) for d in docs)
        want = want_pairs(index, 8)
        groups = cluster_rows(index, 8)
    out = tmp_path / "out"
    result = run_command(str(news), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "36 documents" in result.output
    found = read_out(spark, out)
    assert got_pairs_rows(found["pairs"]) == want
    assert {(r.key, r.canonical, r.distance) for r in found["clusters"]} == groups
    dropped = {key for key, canonical, _ in groups if key != canonical}
    assert [r.id for r in found["kept"]] == [d["id"] for d in docs if d["id"] not in dropped]
    assert found["kept"][0].asDict() == docs[0]


def got_pairs_rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        ((r.key_a, r.key_b, r.distance, r.similarity) for r in rows),
        key=lambda p: (p[2], p[0], p[1]),
    )


def test_command_parquet_in_jsonl_out(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    data = [
        ("x2", "the same few words here!", 2),
        ("x1", "the same few words here", 1),
        ("x3", "", 3),
    ]
    # Several files: Spark reads them in its own order, so the order is a column
    spark.createDataFrame(data, "doc string, body string, n long").repartition(3).write.parquet(
        str(source)
    )
    out = tmp_path / "out"
    result = run_command(
        str(source),
        "--out",
        str(out),
        "--key-col",
        "doc",
        "--text-col",
        "body",
        "--format",
        "jsonl",
        "--k",
        "3",
        "--threshold",
        "0",
        "--order-col",
        "n",
        "--pair-on",
        "executors",
    )
    assert result.exit_code == 0, result.output
    assert "3 documents: 1 kept, 1 near-duplicates of a kept one, 1 with no words" in result.output
    found = read_out(spark, out, "jsonl")
    assert [r.doc for r in found["kept"]] == ["x1"]
    assert [(r.key_a, r.key_b, r.distance) for r in found["pairs"]] == [("x1", "x2", 0)]


def _error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def test_command_refusals(spark: Any, tmp_path: Path) -> None:
    news = ROOT / "examples" / "news.jsonl"
    (tmp_path / "exists").mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\nnot json\n', encoding="utf-8")
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    tied = tmp_path / "tied.jsonl"
    tied.write_text(
        '{"id": "a", "text": "x", "ts": 1}\n{"id": "b", "text": "y", "ts": 1}\n', encoding="utf-8"
    )
    odd = tmp_path / "odd.txt"
    odd.write_text("x", encoding="utf-8")
    cases = {
        "no column 'body'": [str(news), "--out", str(tmp_path / "o1"), "--text-col", "body"],
        "already exists": [str(news), "--out", str(tmp_path / "exists")],
        "inside the input": [str(folder), "--out", str(folder / "out")],
        "no such file": [str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o2")],
        "k must be": [str(news), "--out", str(tmp_path / "o3"), "--k", "16"],
        "threshold is": [str(news), "--out", str(tmp_path / "o4"), "--threshold", "2"],
        "cannot read": [str(bad), "--out", str(tmp_path / "o5")],
        "keys must be unique": [str(twice), "--out", str(tmp_path / "o6")],
        "JSON Lines or Parquet": [str(odd), "--out", str(tmp_path / "o7")],
        "its own value: it is 1 for 2": [
            str(tied),
            "--out",
            str(tmp_path / "o8"),
            "--order-col",
            "ts",
        ],
        "--conf takes KEY=VALUE": [str(news), "--out", str(tmp_path / "o9"), "--conf", "x"],
        "--pair-on is one of": [str(news), "--out", str(tmp_path / "o10"), "--pair-on", "gpu"],
    }
    for message, args in cases.items():
        assert message in _error(run_command(*args)), args
    assert not any((tmp_path / f"o{i}").exists() for i in range(1, 11))
    assert news.read_bytes().count(b"\n") == 36  # the input untouched


def _subprocess(
    args: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simindex.spark", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )


def test_command_without_java_or_pyspark(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java there
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "simindex.spark", "dedup", "examples/news.jsonl", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 2 and result.stderr.startswith("Error: Spark needs a Java 17")
    assert "openjdk-17-jre-headless" in result.stderr and len(result.stderr.splitlines()) == 1
    blocked = (
        "import sys; sys.modules['pyspark'] = None; "
        "from simindex.spark.__main__ import main; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocked, "dedup", "examples/news.jsonl", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "Error: the Spark path needs pyspark and pyarrow (pyspark is missing): "
        "pip install 'simindex[spark]'"
    )
    assert not out.exists()


def test_command_in_its_own_process(spark: Any, tmp_path: Path) -> None:
    """python -m simindex.spark with --master, as a user runs it (its own JVM)."""
    out = tmp_path / "out"
    result = _subprocess(
        ["dedup", "examples/news.jsonl", "--out", str(out), "--master", "local[2]"]
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("36 documents: 24 kept, 12 near-duplicates")
    assert "Traceback" not in result.stderr
    assert len(spark.read.parquet(str(out / "pairs")).collect()) == 12


def _python3_without_simindex(folder: Path) -> Path:
    """A ``python3`` in ``folder``/bin that cannot import simindex, as PATH's
    python3 outside a venv cannot; otherwise this Python with its packages
    (so it fails on simindex, not on pyspark or pyarrow)."""
    hidden = folder / "hidden" / "simindex"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'simindex'\", name='simindex')\n",
        encoding="utf-8",
    )
    shim = folder / "bin" / "python3"
    shim.parent.mkdir()
    shim.write_text(
        f'#!/bin/sh\nPYTHONPATH="{hidden.parent}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec "{sys.executable}" "$@"\n',
        encoding="utf-8",
    )
    shim.chmod(0o755)
    return shim


def test_workers_run_the_drivers_python(runtime: None, tmp_path: Path) -> None:
    """A venv's python run without activating the venv, PATH's python3 unable
    to import simindex: in local mode the workers run the driver's Python, so
    the command works (and says nothing on stderr). A Python the user names in
    PYSPARK_PYTHON is used as named: when it cannot import simindex, the
    command ends in one line saying what to do and where Spark's log is."""
    shim = _python3_without_simindex(tmp_path / "shim")
    unable = subprocess.run([shim, "-c", "import simindex"], cwd=tmp_path, capture_output=True)
    assert unable.returncode != 0 and b"No module named 'simindex'" in unable.stderr
    temp = tmp_path / "temp"  # where the command's Spark log goes
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = f"{shim.parent}{os.pathsep}{env.get('PATH', '')}"
    env["TMPDIR"] = str(temp)
    news = ROOT / "examples" / "news.jsonl"

    def run(out: str, **extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "simindex.spark", "dedup", str(news), "--out", out]
        return subprocess.run(
            [*command, "--master", "local[1]"],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # not the checkout, whose simindex any python3 there would import
            env={**env, **extra},
            timeout=600,
        )

    result = run("out")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("36 documents: 24 kept, 12 near-duplicates")
    assert result.stderr == ""
    assert not list(temp.glob("simindex-spark-*"))  # the log goes when the command ends
    result = run("named", PYSPARK_PYTHON=str(shim))
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith(f"Error: Spark's Python workers ({shim}) cannot import simindex: ")
    assert "PYSPARK_PYTHON" in lines[0]
    (log,) = temp.glob("simindex-spark-*.log")  # kept, and named
    assert f"(Spark's log: {log}; --verbose shows it" in lines[0]
    assert "ModuleNotFoundError" in log.read_text(encoding="utf-8")
    assert not (tmp_path / "named").exists()


def test_bad_input_is_one_line_in_its_own_process(runtime: None, tmp_path: Path) -> None:
    """As a user runs it: Spark's own log stays off stderr, which holds the one line."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\nnot json\n', encoding="utf-8")
    out, temp = tmp_path / "out", tmp_path / "temp"
    temp.mkdir()
    result = _subprocess(
        ["dedup", str(bad), "--out", str(out), "--master", "local[1]"],
        env={**os.environ, "TMPDIR": str(temp)},
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert len(result.stderr.splitlines()) == 1, result.stderr[-3000:]
    assert result.stderr.startswith(f"Error: cannot read {bad} as json: ")
    assert not out.exists() and not list(temp.iterdir())  # the input's fault: no log kept


class _Java:
    """A stand-in for a JVM exception as py4j hands it over (toString, getCause)."""

    _target_id = "o7"  # which str() of the Py4JJavaError would ask the JVM about

    def __init__(self, text: str, cause: _Java | None = None) -> None:
        self.text, self.cause = text, cause

    def toString(self) -> str:  # noqa: N802 (Java's name)
        return self.text

    def getCause(self) -> _Java | None:  # noqa: N802
        return self.cause


def test_spark_failures_say_what_to_do(runtime: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of Spark failure is one line naming its cause and the remedy."""
    from py4j.protocol import Py4JJavaError, Py4JNetworkError
    from pyspark.errors import PySparkRuntimeError, PythonException

    from simindex.spark._session import describe, known

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)

    def java(*chain: str) -> Py4JJavaError:
        cause = None
        for text in reversed(chain):
            cause = _Java(text, cause)
        return Py4JJavaError("An error occurred while calling o42.count.\n", cause)

    heap = java("org.apache.spark.SparkException: Job aborted", "java.lang.OutOfMemoryError: x")
    assert describe(heap) == (
        "Spark ran out of memory (java.lang.OutOfMemoryError: x): give it more "
        "(--conf spark.driver.memory=8g; on a cluster, spark.executor.memory too)"
    )
    disk = java("org.apache.spark.SparkException: Job aborted", "java.io.IOException: No space")
    assert known(disk) is None
    assert describe(disk) == "Spark failed: java.io.IOException: No space"
    worker = PythonException(
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n"
        "ModuleNotFoundError: No module named 'simindex.spark'\n"
    )
    said = describe(worker)  # the workers' Python: the live context's, else PYSPARK_PYTHON
    assert said.startswith("Spark's Python workers (") and "PYSPARK_PYTHON" in said
    assert ") cannot import simindex: install 'simindex[spark]' for the Python every" in said
    lost = Py4JNetworkError("Error while sending or receiving")
    assert describe(lost).startswith(
        "a Spark process ended before the job did (killed, or out of memory?)"
    )
    jvm = describe(PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={}))
    assert jvm.startswith("Spark's Java process did not start: check that `java -version`")
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # under spark-submit
    assert "(spark-submit --driver-memory 8g --executor-memory 8g)" in describe(heap)
    assert not any("\n" in describe(e) for e in (heap, disk, worker, lost))
