"""Fingerprints: tokenisation, Simhash, Hamming distance, the signed mapping."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simindex import (
    DEFAULT_CONFIG,
    EmptyTextError,
    FingerprintConfig,
    InvalidArgumentError,
    hamming,
    simhash,
    to_signed,
    to_unsigned,
)
from simindex.fingerprint import features, simhash_weighted
from simindex.tokenize import content_words, shingles, stopwords, words

from .conftest import ROOT

SAMPLES = [
    "The quick brown fox jumps over the lazy dog.",
    "你妈妈喊你回家吃饭哦，回家罗回家罗",
    "Mixed 中文 and English, Кириллица, العربية, emoji 😀 and numbers 42.",
]


def test_words_normalise_case_width_and_punctuation() -> None:
    assert words("Hello, WORLD! Ｆｕｌｌ-ｗｉｄｔｈ １２３") == [
        "hello",
        "world",
        "full",
        "width",
        "123",
    ]
    assert words("don’t stop") == ["don't", "stop"]
    assert words("snake_case") == ["snake", "case"]


def test_cjk_runs_are_segmented_other_scripts_split_on_words() -> None:
    tokens = words("我们在北京吃饭 and Москва")
    assert "北京" in tokens and "吃饭" in tokens
    assert tokens[-2:] == ["and", "москва"]


def test_stop_words_dropped_unless_that_leaves_nothing() -> None:
    assert content_words("The cat sat on the mat") == ["cat", "sat", "mat"]
    assert content_words("我的书") == ["书"]
    assert content_words("to be or not to be") == ["to", "be", "or", "not", "to", "be"]
    assert content_words("The cat", drop_stopwords=False) == ["the", "cat"]


def test_shingles() -> None:
    assert shingles(["a", "b", "c"], 1) == ["a", "b", "c"]
    assert shingles(["a", "b", "c"], 2) == ["a b", "b c"]
    assert shingles(["a", "b"], 3) == ["a b"]
    assert shingles([], 3) == []


@pytest.mark.parametrize("text", ["", "   \n\t", "!!! ... ---", "，。！？", "___"])
def test_text_without_words_is_an_error_not_a_shared_fingerprint(text: str) -> None:
    with pytest.raises(EmptyTextError):
        simhash(text)


def test_stop_words_only_text_gets_its_own_fingerprint() -> None:
    assert simhash("to be or not to be") != simhash("the and of")


def test_weighting_options_change_fingerprints_as_documented() -> None:
    text = "apple apple apple apple apple banana cherry date elderberry fig grape"
    assert features(text, FingerprintConfig())["apple"] == 5  # tf: the first default
    assert features(text)["apple"] == 5  # DEFAULT_CONFIG: tf again
    assert features(text, FingerprintConfig(weighting="binary"))["apple"] == 1
    assert features(text, FingerprintConfig(weighting="sublinear"))["apple"] == round(
        256 * (1 + __import__("math").log(5))
    )
    assert "apple banana" in features(text, FingerprintConfig(ngram=2))


def test_simhash_matches_a_plain_per_bit_reference() -> None:
    """The numpy vote sum gives the same bits as the textbook per-bit loop."""
    from simindex.fingerprint import feature_hash

    for text in SAMPLES + ["apple apple banana " * 50]:
        weighted = features(text)
        votes = [0] * 64
        for feature, weight in weighted.items():
            h = feature_hash(feature)
            for bit in range(64):
                votes[bit] += weight if h >> bit & 1 else -weight
        expected = sum(1 << bit for bit in range(64) if votes[bit] > 0)
        assert simhash(text) == expected


def test_many_features_are_summed_in_chunks_exactly() -> None:
    weighted = {f"feature-{i}": (i % 7) + 1 for i in range(70_000)}
    from simindex.fingerprint import feature_hash

    votes = [0] * 64
    for feature, weight in weighted.items():
        h = feature_hash(feature)
        for bit in range(64):
            votes[bit] += weight if h >> bit & 1 else -weight
    assert simhash_weighted(weighted) == sum(1 << b for b in range(64) if votes[b] > 0)


def test_fingerprints_are_stable_across_processes() -> None:
    """Same value in a fresh interpreter with a different hash seed (never built-in hash())."""
    here = [simhash(t) for t in SAMPLES]
    code = (
        "import json, sys; from simindex import simhash; "
        "print(json.dumps([simhash(t) for t in json.loads(sys.argv[1])]))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(SAMPLES)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        )
        assert json.loads(out.stdout) == here


def test_known_values_do_not_drift() -> None:
    """Fingerprints stored in indexes must not change between versions of simindex."""
    assert simhash("The quick brown fox jumps over the lazy dog.") == 1814951767899022472
    assert simhash("hello") == 2794345569481354659
    for config in (FingerprintConfig(), DEFAULT_CONFIG):  # English does not depend on cjk
        assert simhash("hello", config) == 2794345569481354659


OLD_JSON = '{"ngram": 1, "stopwords": true, "tokenizer": 1, "weighting": "tf"}'  # before cjk


def test_known_cjk_values_do_not_drift() -> None:
    """Chinese and Japanese: jieba words (cjk="words", the first release's only way,
    and what a configuration stored without cjk means) and characters and bigrams
    (cjk="chars"), as written (cjk_gaps="kept", script="as-is", what a configuration
    stored without them means) and as new indexes read it (gaps folded, t2s)."""
    old = FingerprintConfig.from_json(OLD_JSON)
    assert old == FingerprintConfig() and old.cjk == "words"
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", old) == 17944904788864136004
    assert simhash("東京は日本の首都です。Tokyo is big.", old) == 9966035804881380949
    chars = FingerprintConfig(cjk="chars")
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", chars) == 16242569899395068736
    assert simhash("東京は日本の首都です。Tokyo is big.", chars) == 9788705737160000597
    assert FingerprintConfig.from_json(OLD_JSON.replace("{", '{"cjk": "chars", ')) == chars
    assert (chars.cjk_gaps, chars.script) == ("kept", "as-is")
    assert (
        FingerprintConfig(weighting="tf", cjk="chars", cjk_gaps="folded", script="simplified")
        == DEFAULT_CONFIG
    )
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗") == 16231310900326380288
    assert simhash("東京は日本の首都です。Tokyo is big.") == 9662519185687774247
    assert simhash("簡體中文") == simhash("简体中文") == 11614783448887803972
    sublinear = FingerprintConfig(weighting="sublinear", cjk="chars")  # the default before
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", sublinear) == 16231293454186263360


def test_cjk_as_characters_and_bigrams() -> None:
    assert words("中文字 abc 的", "chars") == ["中", "中文", "文", "文字", "字", "abc", "的"]
    assert words("中文\n字") == words("中文字")  # the line break is layout, in both modes
    assert words("中文\n字", "chars") == words("中文字", "chars")
    every = {"你": 2, "你好": 2, "好": 2, "好你": 1}
    assert features("你好你好", FingerprintConfig(cjk="chars", stopwords=False)) == every
    assert "你" in stopwords() and "你" not in features("你好你好", DEFAULT_CONFIG)
    with pytest.raises(InvalidArgumentError):
        FingerprintConfig(cjk="jieba")
    assert json.loads(DEFAULT_CONFIG.to_json())["cjk"] == "chars"
    assert FingerprintConfig.from_json(DEFAULT_CONFIG.to_json()) == DEFAULT_CONFIG


def test_english_text_does_not_load_jieba() -> None:
    code = (
        "import sys; from simindex import SimIndex, simhash; simhash('plain English text'); "
        "ix = SimIndex(':memory:'); ix.add('a', 'more English'); ix.query('English'); "
        "print('jieba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"


def test_chinese_small_change_is_a_near_duplicate() -> None:
    old = FingerprintConfig(cjk="words")
    a = simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", old)
    b = simhash("你妈妈叫你回家吃饭啦，回家罗回家罗", old)  # 叫, 啦 and 哦 are stop words
    assert hamming(a, b) <= 3
    unrelated = "今天北京的天气很好，我们去公园散步，看见很多人在放风筝。"
    assert hamming(a, simhash(unrelated, old)) > 3
    # Characters and bigrams: one character of 17 changed (a stop word, so as a
    # character it is dropped) changes 2 bigrams of 28 features once the comma
    # after it is folded (1 of 27 as written; the pair above, with two changed,
    # lands at 12). bench/quality.py measures edits over many texts.
    a = simhash("你妈妈喊你回家吃饭哦，回家罗回家罗")
    b = simhash("你妈妈喊你回家吃饭啦，回家罗回家罗")
    assert hamming(a, b) <= 5
    assert hamming(a, simhash(unrelated)) > 3


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, 2**64 - 1) == 64
    assert hamming(0b1011, 0b0001) == 2


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_hamming_is_symmetric_and_matches_bit_strings(a: int, b: int) -> None:
    assert hamming(a, b) == hamming(b, a)
    assert hamming(a, b) == sum(x != y for x, y in zip(f"{a:064b}", f"{b:064b}", strict=True))


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [(0, 0), (2**63 - 1, 2**63 - 1), (2**63, -(2**63)), (2**64 - 1, -1)],
)
def test_signed_mapping_at_the_edges(unsigned: int, signed: int) -> None:
    assert to_signed(unsigned) == signed
    assert to_unsigned(signed) == unsigned


@given(st.integers(0, 2**64 - 1))
def test_signed_mapping_round_trips(value: int) -> None:
    assert -(2**63) <= to_signed(value) < 2**63
    assert to_unsigned(to_signed(value)) == value


@given(st.text(max_size=200))
def test_simhash_is_total_and_in_range(text: str) -> None:
    try:
        value = simhash(text)
    except EmptyTextError:
        assert not words(text)
    else:
        assert 0 <= value < 2**64
        assert simhash(text) == value


@pytest.mark.parametrize(
    "bad",
    [{"ngram": 0}, {"ngram": "2"}, {"weighting": "idf?"}, {"stopwords": "yes"}, {"colour": 1}],
)
def test_bad_configuration_is_a_clear_error(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        FingerprintConfig.from_dict(bad)


def test_configuration_round_trips_through_json() -> None:
    config = FingerprintConfig(ngram=3, weighting="sublinear", stopwords=False)
    assert FingerprintConfig.from_json(config.to_json()) == config


def test_simhash_rejects_non_text() -> None:
    with pytest.raises(InvalidArgumentError):
        simhash(b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize("ngram", [1, 2, 3])
@pytest.mark.parametrize("drop", [True, False])
def test_long_texts_are_counted_piece_by_piece_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch, ngram: int, drop: bool
) -> None:
    """Texts longer than PIECE_CHARS are tokenised in pieces (memory grows with
    the vocabulary, not the text); cut at whitespace, the counts are the same."""
    from collections import Counter

    from simindex import tokenize

    monkeypatch.setattr(tokenize, "PIECE_CHARS", 500)
    rng = random.Random(ngram)
    vocab = [f"w{i}" for i in range(50)] + ["the", "and", "don't", "café"]
    text = " ".join(rng.choice(vocab) for _ in range(3000))
    only_stop = " ".join(rng.choice(["the", "and", "of"]) for _ in range(800))
    for sample in (text, only_stop, "a b", "lonely"):
        expected = Counter(shingles(content_words(sample, drop_stopwords=drop), ngram))
        assert tokenize.shingle_counts(sample, ngram, drop_stopwords=drop) == expected


def test_whitespace_inside_chinese_text_is_layout() -> None:
    """A Chinese text wrapped at a fixed width is the same text."""
    text = "今天北京的天气很好，我们去公园散步，看见很多人在放风筝。"
    wrapped = "今天北京的天\n气很好，我们去公园散\r\n步，看见很多人在放风 筝。"
    assert words(wrapped) == words(text)
    assert simhash(wrapped) == simhash(text)
    assert words("北京 and 上海") == ["北京", "and", "上海"]


def test_ascii_text_takes_a_short_way_to_the_same_words() -> None:
    """normalize and words take a short way for ASCII text (its own NFKC
    form; casefold is lower; no CJK to look for): the same strings as the
    general way, on random ASCII of every character class."""
    import unicodedata

    from simindex import tokenize

    rng = random.Random(3)
    alphabet = [chr(c) for c in range(128)]
    for _ in range(2_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        general = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
        assert tokenize.normalize(text) == general
        assert tokenize.words(text) == tokenize._OTHER.findall(general)
        assert tokenize.words(text, "chars") == tokenize._OTHER.findall(general)
