"""Explaining a match: simindex.explain, SimIndex.explain and `simindex explain`."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simindex import (
    BlockLayout,
    EmptyTextError,
    FingerprintConfig,
    InvalidArgumentError,
    SimIndex,
    hamming,
    simhash,
)
from simindex.blocks import DEFAULT_K
from simindex.explain import Explanation, explain
from simindex.fingerprint import feature_hash, features
from simindex.signature import DEFAULT_THRESHOLD
from tests.helpers import T1, T2, banded_pair, error, ok, ok_json

EDITED = T1.replace("nine", "eight").replace("first", "second")
TF = FingerprintConfig()  # term-frequency weights: weights are counts in these examples


def reference_scores(
    a: Counter[str], b: Counter[str], fa: int, fb: int
) -> tuple[dict[str, float], dict[str, float]]:
    """The scores as the module's docstring defines them, bit by bit in plain Python."""
    keys = a.keys() | b.keys()
    together = dict.fromkeys(keys, 0.0)
    apart = dict.fromkeys(keys, 0.0)
    for j in range(64):
        toward = 1 if fa >> j & 1 else -1  # the direction of a's bit
        differs = (fa ^ fb) >> j & 1
        pushes = {}
        for f in keys:
            sign = 1 if feature_hash(f) >> j & 1 else -1
            weight = a[f] - b[f] if differs else min(a[f], b[f])
            pushes[f] = max(0, weight * sign * toward)
        total = sum(pushes.values())
        for f, push in pushes.items():
            if total:
                (apart if differs else together)[f] += push / total
    return together, apart


# --- the pure function ------------------------------------------------------------


def test_identical_texts_agree_everywhere() -> None:
    e = explain(T1, T1, k=3)
    assert e.fingerprint_a == e.fingerprint_b == simhash(T1)
    assert e.distance == 0 and e.within_k
    assert [b.width for b in e.blocks] == [16, 16, 16, 16]
    assert all(b.agrees and b.differing == 0 for b in e.blocks)
    assert e.matching_tables == (0, 1, 2, 3)
    assert e.apart == ()
    assert e.features_a == e.features_b == e.shared_features == len(features(T1))
    assert e.cosine == pytest.approx(1.0) and e.weighted_jaccard == 1.0
    assert e.expected_distance == pytest.approx(0.0, abs=1e-3)
    assert sum(x.score for x in explain(T1, T1, k=3, top=1000).together) == pytest.approx(64)
    assert e.verdict().startswith("near-duplicates: distance 0 <= k=3")


@pytest.mark.parametrize(
    "config",
    [FingerprintConfig(), FingerprintConfig(ngram=2), FingerprintConfig(weighting="sublinear")],
)
def test_the_fingerprints_are_simhash(config: FingerprintConfig) -> None:
    e = explain(T1, EDITED, k=3, config=config)
    assert (e.fingerprint_a, e.fingerprint_b) == (simhash(T1, config), simhash(EDITED, config))
    assert e.distance == hamming(simhash(T1, config), simhash(EDITED, config))


def test_an_edited_pair() -> None:
    layout = BlockLayout.for_k(3)
    e = explain(T1, EDITED, k=3, top=100, config=TF)
    diff = e.fingerprint_a ^ e.fingerprint_b
    assert e.distance == diff.bit_count() > 0
    assert sum(b.differing for b in e.blocks) == e.distance
    for block, (shift, mask) in zip(e.blocks, layout.spans(), strict=True):
        assert block.differing == (diff >> shift & mask).bit_count()
    assert e.matching_tables == tuple(
        i for i, mask in enumerate(layout.table_masks()) if diff & mask == 0
    )
    assert e.within_k == (e.distance <= 3)
    # The four changed words, and only they, are weighed differently.
    assert {(x.feature, x.weight_a, x.weight_b) for x in e.apart} == {
        ("nine", 1, 0),
        ("first", 1, 0),
        ("eight", 0, 1),
        ("second", 0, 1),
    }
    assert sum(x.score for x in e.apart) == pytest.approx(e.distance)
    assert {x.feature for x in e.together} == set(features(T1, TF)) - {"nine", "first"}


def test_shared_and_unshared_features_on_a_hand_made_example() -> None:
    a, b = "apple apple banana cherry", "apple banana banana date"
    e = explain(a, b, k=3, config=TF)
    assert (e.features_a, e.features_b, e.shared_features) == (3, 3, 2)
    assert {(x.feature, x.weight_a, x.weight_b) for x in e.together} == {
        ("apple", 2, 1),
        ("banana", 1, 2),
    }
    assert {(x.feature, x.weight_a, x.weight_b) for x in e.apart} == {
        ("apple", 2, 1),
        ("banana", 1, 2),
        ("cherry", 1, 0),
        ("date", 0, 1),
    }
    assert e.cosine == pytest.approx(4 / 6)  # (2*1 + 1*2) / (sqrt(6) * sqrt(6))
    assert e.weighted_jaccard == pytest.approx(2 / 6)  # (1 + 1) / (2 + 2 + 1 + 1)
    assert e.expected_distance == pytest.approx(64 * math.acos(4 / 6) / math.pi)
    together, apart = reference_scores(
        features(a, TF), features(b, TF), e.fingerprint_a, e.fingerprint_b
    )
    for x in e.together:
        assert x.score == pytest.approx(together[x.feature])
    for x in e.apart:
        assert x.score == pytest.approx(apart[x.feature])
    scores = [x.score for x in e.apart]
    assert scores == sorted(scores, reverse=True)


WORDS = st.sampled_from(
    ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(WORDS, min_size=1, max_size=12),
    st.lists(WORDS, min_size=1, max_size=12),
    st.sampled_from([FingerprintConfig(), FingerprintConfig(weighting="sublinear")]),
)
def test_scores_are_what_the_docstring_says(
    words_a: list[str], words_b: list[str], config: FingerprintConfig
) -> None:
    a, b = " ".join(words_a), " ".join(words_b)
    e = explain(a, b, k=3, config=config, top=100)
    assert (e.fingerprint_a, e.fingerprint_b) == (simhash(a, config), simhash(b, config))
    assert sum(x.score for x in e.apart) == pytest.approx(e.distance)
    assert sum(x.score for x in e.together) <= 64 - e.distance + 1e-9
    together, apart = reference_scores(
        features(a, config), features(b, config), e.fingerprint_a, e.fingerprint_b
    )
    assert {x.feature: x.score for x in e.apart} == pytest.approx(
        {f: s for f, s in apart.items() if features(a, config)[f] != features(b, config)[f]}
    )
    assert {x.feature: x.score for x in e.together} == pytest.approx(
        {f: s for f, s in together.items() if min(features(a, config)[f], features(b, config)[f])}
    )


def test_top_limits_the_lists() -> None:
    e = explain(T1, T2, k=3, top=2)
    assert len(e.together) <= 2 and len(e.apart) == 2
    assert explain(T1, T2, k=3, top=0).apart == ()


def test_fingerprints_give_the_blocks_only() -> None:
    e = explain(0, 0b111, k=3)
    assert e.distance == 3 and e.blocks[-1].differing == 3 and e.matching_tables == (0, 1, 2)
    assert e.features_a is None and e.cosine is None and e.together == e.apart == ()
    mixed = explain(T1, simhash(T1), k=3)
    assert mixed.distance == 0 and mixed.features_a is None


def test_more_blocks_and_a_k_above_the_layout() -> None:
    layout = BlockLayout.for_k(3, 5)
    e = explain(0, (1 << 63) | 1, k=3, layout=layout)  # a bit in the first and the last block
    assert [b.width for b in e.blocks] == [13, 13, 13, 13, 12]
    assert [b.differing for b in e.blocks] == [1, 0, 0, 0, 1]
    assert [e.tables[i] for i in e.matching_tables] == [(1, 2), (1, 3), (2, 3)]
    assert "table" in e.verdict() and e.within_k
    far = explain(0, 0b1111, k=4, layout=BlockLayout.for_k(3))
    assert far.within_k and far.matching_tables == (0, 1, 2)
    assert "through table 0" in far.verdict() and "probed" not in far.verdict()
    spread3 = explain(0, sum(1 << (16 * i) for i in range(4)), k=5, layout=BlockLayout.for_k(3))
    assert spread3.matching_tables == () and spread3.within_k
    assert "through table 0 (a probe 1 bit off)" in spread3.verdict()
    assert "finds one from the other through table 0" in explain(0, 1, k=3).verdict()
    assert "table 3 fetches it" in explain(0, (1 << 64) - (1 << 16), k=3).verdict()
    assert "does not even fetch it" in explain(0, (1 << 64) - 1, k=3).verdict()
    scanned = explain(0, (1 << 13) - 1, k=12, layout=BlockLayout.for_k(3))
    assert "reads every row" in scanned.verdict() and "drops it" in scanned.verdict()


def test_short_texts_one_unit_apart_beyond_k_are_near_duplicates() -> None:
    """As a query answers them: found by their set keys at any distance when
    verified (matching.within's rule), not at threshold 0 or two words apart."""
    a = "the quick brown fox jumps over the lazy dog"
    b = "the quick brown fox leaps over the lazy dog"
    e = explain(a, b, k=8)
    assert e.distance > 8 and e.sets_one_unit_apart and e.near_duplicates
    assert e.verdict().startswith("near-duplicates: distance") and "set keys" in e.verdict()
    with SimIndex() as index:
        index.add("a", a)
        assert [m.key for m in index.query(b)] == ["a"]
        assert index.explain(a, b).near_duplicates
    strict = explain(a, b, k=8, threshold=0.95)
    assert strict.sets_one_unit_apart and not strict.near_duplicates
    assert strict.verdict().startswith("not near-duplicates")
    bare = explain(a, b, k=8, threshold=0.0)
    assert not bare.sets_one_unit_apart and not bare.near_duplicates
    two = explain(a, "the quick brown cat leaps over the lazy dog", k=8)
    assert not two.sets_one_unit_apart


def test_longer_texts_with_a_band_equal_beyond_k_are_near_duplicates() -> None:
    """Found by their band keys at any distance when verified, as a query
    answers them; not at threshold 0, nor by a strict threshold."""
    a, b = banded_pair(3)
    e = explain(a, b, k=8)
    assert e.distance > 8 and e.bands_equal and not e.sets_one_unit_apart and e.near_duplicates
    assert e.verdict().startswith("near-duplicates: distance") and "band keys" in e.verdict()
    with SimIndex() as index:
        index.add("a", a)
        assert [m.key for m in index.query(b)] == ["a"]
        assert index.explain(a, b).near_duplicates
    assert not explain(a, b, k=8, threshold=0.99).near_duplicates
    assert not explain(a, b, k=8, threshold=0.0).bands_equal


def test_errors() -> None:
    with pytest.raises(EmptyTextError, match="text b"):
        explain(T1, " ... ", k=3)
    with pytest.raises(InvalidArgumentError):
        explain(T1, T2, k=-1)
    with pytest.raises(InvalidArgumentError):
        explain(T1, T2, k=16)  # no default layout answers it
    with pytest.raises(InvalidArgumentError):
        explain(T1, T2, k=3, top=-1)
    with pytest.raises(InvalidArgumentError):
        explain(T1, b"bytes", k=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        explain(T1, 1 << 64, k=3)


def test_to_dict_is_json() -> None:
    data = json.loads(json.dumps(explain(T1, EDITED, k=3).to_dict()))
    assert data["distance"] == hamming(simhash(T1), simhash(EDITED))
    assert data["a_hex"] == f"0x{simhash(T1):016x}"


# --- SimIndex.explain -----------------------------------------------------------


def test_the_index_uses_its_configuration_layout_and_k() -> None:
    config = FingerprintConfig(ngram=2)
    with SimIndex(":memory:", k=2, blocks=4, config=config) as ix:
        e = ix.explain(T1, EDITED)
        assert isinstance(e, Explanation)
        assert (e.fingerprint_a, e.fingerprint_b) == (simhash(T1, config), simhash(EDITED, config))
        assert e.k == 2 and e.tables == ix.layout.tables and len(e.tables[0]) == 2
        assert all(" " in x.feature for x in e.together + e.apart)  # word bigrams
        assert ix.explain(T1, EDITED, k=10).k == 10
        assert len(ix.explain(T1, T2, top=1).apart) == 1


@pytest.mark.parametrize("blocks", [None, 5])
def test_the_index_explains_at_its_own_k_not_its_layouts(blocks: int | None) -> None:
    # A k = 8 index's layout answers k = 2 (three blocks) or 4 (five) exactly
    # and probes above; explain must judge at 8, as query does.
    with SimIndex(":memory:", k=8, blocks=blocks) as ix:
        assert ix.layout.k < ix.k == 8
        fp = simhash(T1)
        near = fp ^ 0b11111  # distance 5: past the layout's k, within the index's
        ix.add_fingerprint("near", near)
        assert [(m.key, m.distance) for m in ix.query(fp)] == [("near", 5)]
        e = ix.explain(fp, key_b="near")
        assert e.k == 8 and e.distance == 5 and e.within_k
        assert e.verdict().startswith("near-duplicates: distance 5 <= k=8")
        assert ix.explain(fp, key_b="near", k=4).k == 4


def test_cli_explains_at_the_index_k(files: tuple[Path, Path], tmp_path: Path) -> None:
    path = tmp_path / "k8.db"
    ok("init", path, "--blocks", "5")
    out = ok_json("explain", *files, "--index", path)
    assert out["k"] == DEFAULT_K and len(out["blocks"]) == 5


def test_the_index_explains_stored_keys_by_fingerprint() -> None:
    with SimIndex(":memory:") as ix:
        ix.add("one", T1)
        e = ix.explain(key_a="one", b=EDITED)
        assert e.fingerprint_a == simhash(T1) and e.fingerprint_b == simhash(EDITED)
        assert e.features_a is None and e.apart == ()
        assert ix.explain(key_a="one", key_b="one").distance == 0
        with pytest.raises(InvalidArgumentError, match="no document"):
            ix.explain(T1, key_b="two")
        with pytest.raises(InvalidArgumentError, match="key_a"):
            ix.explain(T1, T2, key_a="one")
        with pytest.raises(InvalidArgumentError, match="key_b"):
            ix.explain(T1)


# --- simindex explain -----------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(T1, encoding="utf-8")
    b.write_text(EDITED, encoding="utf-8")
    return a, b


def test_cli_identical_files(files: tuple[Path, Path]) -> None:
    out = ok("explain", files[0], files[0]).stdout
    assert out.startswith(f"near-duplicates: distance 0 <= k={DEFAULT_K}")
    assert "blocks: 22 ✓  21 ✓  21 ✓\n" in out  # the default layout for k = 8
    assert "tables: 3 of 3 match" in out
    assert "pulled together" in out and "pulled apart" not in out


def test_cli_edited_pair(files: tuple[Path, Path]) -> None:
    e = explain(T1, EDITED, k=DEFAULT_K)
    out = ok("explain", *files, "--top", "3").stdout  # DEFAULT_CONFIG, as explain()
    assert f"distance {e.distance} " in out.splitlines()[0]
    blocks = next(line for line in out.splitlines() if line.startswith("blocks:"))
    assert re.fullmatch(r"blocks: (2[12] (✓|✗\(\d+\))(  |$)){3}", blocks)
    assert "pulled apart" in out
    for x in e.apart[:3]:
        assert re.search(rf"\n  {x.feature} +{x.weight_a} +{x.weight_b} +{x.score:.2f}\n", out)


def test_cli_says_how_short_texts_are_compared() -> None:
    """Two short texts' similarity is exact, not an estimate: one word apart
    it counts as 15/17, above their Jaccard, and the explanation says why."""
    a = "How are you? I Am fine. blar blar blar blar blar Thanks."
    out = ok("explain", "--text", a, "How are you i am fine. blar blar blar blar blar thank").stdout
    assert out.startswith("near-duplicates: distance 0")
    assert "signatures: similarity 0.882 >= threshold 0.78" in out
    assert "exact Jaccard 0.778 (both sets kept exactly in the signatures; one unit" in out
    long = ok("explain", "--text", T1, EDITED).stdout
    assert "(what the signatures estimate)" in long


def test_the_verdict_says_a_scan_exactly_when_a_query_scans() -> None:
    """explain's "reads every row" and the store's probing follow one rule
    (blocks.can_probe), for every k a layout of many blocks is asked."""
    from simindex.blocks import BlockLayout, can_probe, even_widths

    layout = BlockLayout(even_widths(16), tuple((b,) for b in range(16)))  # k = 15
    scans = []
    for k in range(0, 40):
        verdict = explain(0, 1, k=k, layout=layout).verdict()
        scanned = "reads every row" in verdict
        assert scanned == (k > layout.k and not can_probe(layout, k)), (k, verdict)
        scans.append(scanned)
    assert not scans[20] and scans[33]  # probed past MAX_INDEX_K; a scan past MAX_PROBE_K


def test_cli_texts_and_stdin(files: tuple[Path, Path]) -> None:
    by_text = ok_json("explain", "--text", T1, EDITED)
    assert by_text == ok_json("explain", files[0], "-", input=EDITED)
    assert by_text == ok_json("explain", "-", files[1], input=T1)
    # Without an index the command verifies at the default threshold (explain()'s is 0).
    assert by_text == explain(T1, EDITED, k=DEFAULT_K, threshold=DEFAULT_THRESHOLD).to_dict()
    assert by_text["threshold"] == DEFAULT_THRESHOLD


def test_cli_json_schema(files: tuple[Path, Path]) -> None:
    out = ok_json("explain", *files, "--top", "2")
    assert set(out) == {
        "a", "b", "a_hex", "b_hex", "distance", "k", "within_k", "verdict", "blocks", "tables",
        "matching_tables", "features_a", "features_b", "shared_features", "cosine",
        "weighted_jaccard", "expected_distance", "together", "apart",
        "threshold", "threshold_needed", "similarity", "verified", "near_duplicates",
        "sets_one_unit_apart",
        "bands_equal", "unit_jaccard", "units_a",
        "units_b", "shared_units", "only_a", "only_b",
    }  # fmt: skip
    assert (out["a"], out["b"]) == (simhash(T1), simhash(EDITED))
    assert out["k"] == DEFAULT_K and out["tables"] == [[0], [1], [2]]
    assert [set(b) for b in out["blocks"]] == [{"width", "differing", "agrees"}] * 3
    assert len(out["apart"]) == 2
    assert all(set(x) == {"feature", "a", "b", "score"} for x in out["together"] + out["apart"])
    # Two texts: both signatures, and their unit sets, are there.
    assert out["verified"] is (out["similarity"] >= out["threshold"])
    keyed = out["sets_one_unit_apart"] or out["bands_equal"]
    assert out["near_duplicates"] is ((out["within_k"] or keyed) and out["verified"])
    shared, ua, ub = out["shared_units"], out["units_a"], out["units_b"]
    assert 0 < shared <= min(ua, ub) and out["unit_jaccard"] == round(
        shared / (ua + ub - shared), 4
    )


def test_cli_options_without_an_index(files: tuple[Path, Path]) -> None:
    out = ok_json("explain", *files, "--k", "2", "--blocks", "5", "--ngram", "2")
    assert out["k"] == 2 and len(out["blocks"]) == 5 and len(out["tables"]) == 10
    assert out["a"] == simhash(T1, FingerprintConfig(ngram=2))


def test_cli_with_an_index(files: tuple[Path, Path], tmp_path: Path) -> None:
    path = tmp_path / "bi.db"
    ok("init", path, "--k", "2", "--blocks", "4", "--ngram", "2")
    out = ok_json("explain", *files, "--index", path)
    bigrams = FingerprintConfig(ngram=2)
    assert (out["a"], out["b"]) == (simhash(T1, bigrams), simhash(EDITED, bigrams))
    assert out["k"] == 2 and len(out["tables"]) == 6
    assert ok_json("explain", *files, "--index", path, "--k", "9")["k"] == 9
    error("explain", *files, "--index", path, "--ngram", "3", contains=("fingerprints texts",))
    error("explain", *files, "--index", path, "--blocks", "5", contains=("--blocks",))
    error("explain", *files, "--index", tmp_path / "none.db", contains=("no index",))


@pytest.mark.parametrize(
    "args",
    [
        ["explain", "{tmp}/nope.txt", "{a}"],
        ["explain", "--text", T1, " ... "],
        ["explain", "--text", T1, T2, "--k", "65"],
        ["explain", "--text", T1, T2, "--k", "16"],
        ["explain", "--text", T1, T2, "--top", "-1"],
        ["explain", "-", "-"],
    ],
)
def test_cli_errors(args: list[str], files: tuple[Path, Path]) -> None:
    tmp = files[0].parent
    error(*(x.format(tmp=tmp, a=files[0]) for x in args), input="")


def test_the_verdict_names_a_table_that_matches_exactly_before_a_probe() -> None:
    """Blocks 0 and 1 differ by a bit each, block 2 agrees: table 2 fetches
    one from the other exactly, which the verdict says (not table 0, a probe
    1 bit off)."""
    from simindex.blocks import BlockLayout
    from simindex.explain import explain

    layout = BlockLayout.for_k(8)
    e = explain(0, (1 << 63) | (1 << 40), k=8, layout=layout)
    assert [b.differing for b in e.blocks] == [1, 1, 0]
    assert "through table 2;" in e.verdict() and "probe" not in e.verdict()
