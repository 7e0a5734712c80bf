"""Chinese normalisation, the stored options ``cjk_gaps`` and ``script``:
punctuation between two CJK characters folded, Traditional read as Simplified
(OpenCC t2s), both applied by ``fingerprint.prepare`` before tokenising."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simindex import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    InvalidArgumentError,
    fingerprint,
    hamming,
    simhash,
)
from simindex.fingerprint import prepare, to_simplified
from simindex.tokenize import fold_cjk_gaps, nfkc

from .conftest import ROOT

# The pair: the same words, punctuated and spaced differently.
SPACED = "你好　世界！　　呼噜。"
PUNCTUATED = "你好，世界　呼噜"

SIMPLIFIED = (
    "中华人民共和国国务院今天发表白皮书，介绍了过去十年来经济发展的主要成就。白皮书说，"
    "这些年来，国家坚持改革开放，积极推进现代化建设，人民生活水平显著提高，"
    "城乡居民收入持续增长，教育、医疗和社会保障体系不断完善。与此同时，"
    "环境保护和生态建设取得了明显进展，许多城市的空气质量得到改善。"
)
TRADITIONAL = (  # the same passage in Traditional characters (OpenCC s2t)
    "中華人民共和國國務院今天發表白皮書，介紹了過去十年來經濟發展的主要成就。白皮書說，"
    "這些年來，國家堅持改革開放，積極推進現代化建設，人民生活水平顯著提高，"
    "城鄉居民收入持續增長，教育、醫療和社會保障體系不斷完善。與此同時，"
    "環境保護和生態建設取得了明顯進展，許多城市的空氣質量得到改善。"
)

# How the configurations of earlier builds were stored: without the new keys.
FIRST_JSON = '{"ngram": 1, "stopwords": true, "tokenizer": 1, "weighting": "tf"}'
CHARS_JSON = '{"cjk": "chars", "ngram": 1, "stopwords": true, "tokenizer": 1, "weighting": "tf"}'
OLD_CHARS = FingerprintConfig(cjk="chars", cjk_gaps="kept", script="as-is")


def test_the_default_folds_both() -> None:
    assert (
        FingerprintConfig(weighting="tf", cjk="chars", cjk_gaps="folded", script="simplified")
        == DEFAULT_CONFIG
    )
    assert json.loads(DEFAULT_CONFIG.to_json()) == {
        "cjk": "chars",
        "cjk_gaps": "folded",
        "ngram": 1,
        "script": "simplified",
        "stopwords": True,
        "tokenizer": 1,
        "weighting": "tf",
    }
    assert FingerprintConfig.from_json(DEFAULT_CONFIG.to_json()) == DEFAULT_CONFIG
    described = DEFAULT_CONFIG.describe()
    assert "punctuation between CJK characters dropped" in described
    assert "Traditional Chinese read as Simplified" in described


def test_punctuation_and_spacing_only_is_distance_0() -> None:
    assert prepare(SPACED, DEFAULT_CONFIG) == "你好世界呼噜。"
    assert prepare(PUNCTUATED, DEFAULT_CONFIG) == "你好世界呼噜"
    assert hamming(simhash(SPACED), simhash(PUNCTUATED)) == 0
    # Without folding, the punctuation splits the bigrams (the 11 bits).
    assert hamming(simhash(SPACED, OLD_CHARS), simhash(PUNCTUATED, OLD_CHARS)) > 3


def test_fold_reads_ascii_and_full_width_punctuation_and_any_space() -> None:
    assert fold_cjk_gaps("中,文.字") == fold_cjk_gaps("中，文。字") == "中文字"
    assert fold_cjk_gaps("中\u3000文\u00a0字 \t\n——「词」") == "中文字词」"
    assert fold_cjk_gaps("中_文") == "中文"  # underscore is punctuation here, as in words()
    assert fold_cjk_gaps("中 1 文, a b") == "中 1 文, a b"  # only between two CJK characters
    assert fold_cjk_gaps("東京、大阪。") == "東京大阪。"  # Japanese too


def test_traditional_reads_as_simplified() -> None:
    assert prepare("簡體中文", DEFAULT_CONFIG) == "简体中文"
    assert hamming(simhash("简体中文"), simhash("簡體中文")) == 0
    assert hamming(simhash(SIMPLIFIED), simhash(TRADITIONAL)) <= 3
    # As written, the two scripts are far apart.
    assert hamming(simhash(SIMPLIFIED, OLD_CHARS), simhash(TRADITIONAL, OLD_CHARS)) > 8


def test_each_option_alone() -> None:
    gaps = FingerprintConfig(cjk="chars", cjk_gaps="folded")
    script = FingerprintConfig(cjk="chars", script="simplified")
    assert prepare("簡體，中文", gaps) == "簡體中文"
    assert prepare("簡體，中文", script) == "简体,中文"  # NFKC-normalised, as words() reads it
    assert prepare("簡體，中文", OLD_CHARS) == "簡體，中文"


def test_a_stored_configuration_without_the_keys_reads_as_it_was_built() -> None:
    first = FingerprintConfig.from_json(FIRST_JSON)
    assert (first.cjk, first.cjk_gaps, first.script) == ("words", "kept", "as-is")
    chars = FingerprintConfig.from_json(CHARS_JSON)
    assert chars == OLD_CHARS != DEFAULT_CONFIG
    # The values stored by those builds (tests/test_fingerprint.py keeps them too).
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", first) == 17944904788864136004
    assert simhash("你妈妈喊你回家吃饭哦，回家罗回家罗", chars) == 16242569899395068736
    for text in (SPACED, PUNCTUATED, TRADITIONAL, "Plain English."):
        assert prepare(text, chars) is text
        assert simhash(text, chars) == simhash(text, OLD_CHARS)
    assert FingerprintConfig().describe() == (
        "word unigrams, tf weights, stop words dropped, CJK as jieba words"
    )


def test_english_is_not_touched() -> None:
    for text in ("The quick brown fox.", "naïve café — “quoted”, Кириллица", ""):
        assert prepare(text, DEFAULT_CONFIG) is text
        assert simhash(text or "x") == simhash(text or "x", OLD_CHARS)


def test_english_does_not_load_opencc() -> None:
    code = (
        "import sys; from simindex import simhash; simhash('plain English, “quoted”'); "
        "print('opencc' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "bad",
    [
        {"cjk_gaps": "dropped"},
        {"cjk_gaps": None},
        {"script": "traditional"},
        {"script": True},
    ],
)
def test_bad_values_are_a_clear_error(bad: dict[str, object]) -> None:
    name = next(iter(bad))
    with pytest.raises(InvalidArgumentError, match=name):
        FingerprintConfig.from_dict(bad)
    with pytest.raises(InvalidArgumentError, match=name):
        FingerprintConfig.from_json(json.dumps(bad))


def test_compatibility_forms_are_kept_as_characters() -> None:
    # A Kangxi radical (as PDFs give) is a symbol until NFKC makes it a character:
    # preparing normalises first, so it is not folded away as punctuation.
    assert prepare("中\u2f00文", DEFAULT_CONFIG) == "中一文"
    assert prepare("中，\uf900", DEFAULT_CONFIG) == "中岂"  # a compatibility ideograph


def test_lone_surrogates_are_kept() -> None:
    assert to_simplified("國\ud800a語") == "国\ud800a语"
    assert prepare("a\udfff簡體", DEFAULT_CONFIG) == "a\udfff简体"
    assert isinstance(simhash("a\udfff簡體"), int)


def test_t2s_is_taken_to_its_fixed_point() -> None:
    # t2s keeps 乾 in the name 蕭乾 but not in 萧乾, its own output.
    assert to_simplified("蕭乾") == to_simplified("萧乾") == to_simplified(to_simplified("蕭乾"))


ALPHABET = st.sampled_from(
    list("簡體中文简体国國语語乾蕭萧頭髮发干東京はの")
    + list(",.!? ，。！？、「」《》——")
    + [" ", "\u3000", "\n", "\u00a0", "a", "Z", "1", "１", "_", "\u2f00", "\uf900"]
)


@given(st.text(ALPHABET, max_size=40) | st.text(max_size=40))
def test_prepare_is_idempotent(text: str) -> None:
    once = prepare(text, DEFAULT_CONFIG)
    assert prepare(once, DEFAULT_CONFIG) == once


def test_prepare_is_idempotent_on_the_passages() -> None:
    for text in (SPACED, PUNCTUATED, SIMPLIFIED, TRADITIONAL):
        once = prepare(text, DEFAULT_CONFIG)
        assert prepare(once, DEFAULT_CONFIG) == once


def test_missing_opencc_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opencc", None)  # import opencc raises ImportError
    fingerprint._t2s.cache_clear()
    try:
        with pytest.raises(ImportError, match="opencc"):
            prepare("簡體", DEFAULT_CONFIG)
        assert prepare("簡體，中文", FingerprintConfig(cjk_gaps="folded")) == "簡體中文"
    finally:
        fingerprint._t2s.cache_clear()


def test_cli_fingerprint_options_keep_the_default_normalisation() -> None:
    """An option given on the command line changes that option only: the rest,
    the CJK folding included, are DEFAULT_CONFIG's (else `add --cjk chars` on
    a default index would be refused as another configuration)."""
    from simindex.cli.options import config_from

    assert config_from(None, None, False, "chars") == DEFAULT_CONFIG
    changed = config_from(2, None, True, None)
    assert changed is not None
    assert (changed.cjk_gaps, changed.script) == (DEFAULT_CONFIG.cjk_gaps, DEFAULT_CONFIG.script)
    assert (changed.ngram, changed.stopwords) == (2, False)


# Characters NFKC treats in every way: the common compatibility forms
# nfkc() replaces itself, other compatibility forms (half-width katakana and
# its voicing marks, ligatures, circled and Kangxi forms), combining marks
# that compose with or reorder after a replaced form, Hangul jamo, and plain
# text, in runs so that neighbours interact.
_NFKC_ALPHABET = (
    "，（）：；！？％１２３ＡＢａｚ～　\u00a0…²³¹"
    "ｶﾞｷﾟﾊﾟ\uff9e\uff9f\u3099\u309a"
    "ﬁ①⼀⺟㍿"
    "\u0301\u0308\u0323\u0327\u0345"
    "\u1100\u1161\u11a8가"
    "aAeE中文,. 一\ud800"
)


@given(st.lists(st.text(alphabet=_NFKC_ALPHABET, min_size=1, max_size=6), max_size=12))
def test_nfkc_is_unicodedata_nfkc(runs: list[str]) -> None:
    text = "".join(runs)
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_nfkc_gives_the_text_itself_when_it_is_nfkc_already() -> None:
    text = "中文，已经是".replace("，", ",") + "\u00e9"
    assert nfkc(text) is text
    assert nfkc(SPACED) == unicodedata.normalize("NFKC", SPACED)
