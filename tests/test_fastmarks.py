"""The compiled fingerprint and signature (simindex.fastmarks) give the Python
path's bits: on random texts of every script the tokeniser treats apart,
under each configuration the compiled pass serves. Each test turns the
compiled pass on (the switch at "always"), and skips where numba is not
installed or SIMINDEX_COMPILED=never forces the Python path for the run
(tests/helpers.py's compiled_or_skip)."""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from unittest.mock import patch

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from simindex import compiling, fastmarks
from simindex.errors import EmptyTextError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.signature import _probes, fingerprint_and_signature, marks_of_many, one_pass
from simindex.tokenize import PIECE_CHARS
from tests.helpers import compiled_or_skip

CONFIGS = [
    DEFAULT_CONFIG,
    FingerprintConfig(cjk="chars"),  # CJK gaps kept, script as-is
    FingerprintConfig(cjk="chars", weighting="binary", cjk_gaps="folded"),
    FingerprintConfig(cjk="chars", stopwords=False, script="simplified"),
]

# What the tokeniser treats apart: word characters, the apostrophe (ASCII and
# typographic) and underscore, CJK (Han, kana, the katakana middle dot, which
# is CJK but not a word character, extension B), compatibility forms NFKC
# changes (full-width letters, Kangxi radicals, half-width katakana, the fi
# ligature), characters whose case folding is longer (sharp s, dotted I),
# combining marks, whitespace of every kind, stop words, digits, emoji and
# lone surrogates.
PIECES = [
    "a", "B", "z", "0", "7", "é", "É", "ß", "İ", "ﬁ", "Ａ", "ｂ", "K", "ǅ", "σ", "Σ",
    "'", "\u2019", "_", "-", ".", ",", "，", "。", "！", "、", "・", "ー", "「", "」",
    " ", "  ", "\n", "\t", "\u3000", "\u00a0", "\u2028", "\x1c",
    "中", "文", "字", "們", "我", "的", "是", "國", "这", "一", "⼀", "あ", "ア", "ｱ", "𠀀", "丽",
    "\u0301", "\u3099", "٣", "Ⅻ", "²", "😀", "\ud800", "\udfff",
    "the", "and", "of", "我们", "don't", "naïve", "Straße", "ΟΔΥΣΣΕΥΣ", "Привет", "日本語",
    "hello", "world", "zebra", "quux", "data", "copyright", "license",
]  # fmt: skip


# Below U+3000, where no character is CJK (the Kangxi radical becomes one by
# NFKC): the texts whose case folding the compiled loop does itself.
BELOW_CJK = [p for p in PIECES if max(p) < "\u3000"]


def random_texts(seed: int, count: int, pieces: list[str] = PIECES) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        size = rng.choice([1, 2, 3, 5, 8, 15, 40, 200, 2000])
        pool = rng.sample(pieces, rng.randint(2, len(pieces)))
        yield "".join(rng.choice(pool) for _ in range(size))


@pytest.fixture(autouse=True)
def compiled_always() -> Iterator[None]:
    compiled_or_skip()
    was = compiling.mode()
    compiling.use("always")
    if not fastmarks.available():
        why = compiling.why("simindex._marks")
        pytest.fail(f"numba is installed, but the compiled pass did not compile: {why!r}")
    yield
    compiling.use(was)


def both(text: str, config: FingerprintConfig) -> tuple[object, object]:
    def python() -> object:
        try:
            return one_pass(text, config)
        except EmptyTextError:
            return "empty"

    compiled = fastmarks.marks(text, config, _probes())
    assert compiled is not None
    return python(), (compiled if compiled[1] else "empty")


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "kept", "binary", "all-words"])
def test_compiled_marks_equal_the_python_paths_on_random_texts(config: FingerprintConfig) -> None:
    checked = 0
    for text in random_texts(zlib.crc32(config.to_json().encode()), 400):
        python, compiled = both(text, config)
        assert compiled == python, repr(text)
        checked += python != "empty"
    assert checked > 300  # most texts have words


@pytest.mark.parametrize("config", CONFIGS[:2], ids=["default", "kept"])
def test_compiled_case_folding_equals_pythons(config: FingerprintConfig) -> None:
    texts = [t for t in random_texts(7, 400, BELOW_CJK) if not t.isascii()]
    assert len(texts) > 300
    for text in texts:
        python, compiled = both(text, config)
        assert compiled == python, repr(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=60))
def test_compiled_marks_equal_the_python_paths_on_any_code_points(text: str) -> None:
    python, compiled = both(text, DEFAULT_CONFIG)
    assert compiled == python


def test_fingerprint_and_signature_takes_the_compiled_pass_and_raises_alike() -> None:
    text = "The licence grants you the right to copy, don't it? 中文字 我们的"
    compiling.use("never")
    expected = fingerprint_and_signature(text, DEFAULT_CONFIG)
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) is None
    compiling.use("always")
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) == expected
    with patch("simindex.signature.one_pass", side_effect=AssertionError("the Python path")):
        assert fingerprint_and_signature(text, DEFAULT_CONFIG) == expected
    with pytest.raises(EmptyTextError):
        fingerprint_and_signature(" ,.!? _", DEFAULT_CONFIG)


def test_texts_of_stop_words_only_and_short_sets_alike() -> None:
    texts = ["the of and", "the the the", "我们 的", "a", "zebra " * 20, "one two three four five"]
    for text in texts:
        python, compiled = both(text, DEFAULT_CONFIG)
        assert compiled == python, text


def test_what_the_pass_does_not_serve_takes_the_python_path() -> None:
    for config in [
        FingerprintConfig(cjk="chars", weighting="sublinear"),
        FingerprintConfig(cjk="chars", ngram=2),
        FingerprintConfig(cjk="words"),
    ]:
        assert fastmarks.marks("some words here", config, _probes()) is None
    assert fastmarks.marks("word " * (PIECE_CHARS // 5 + 1), DEFAULT_CONFIG, _probes()) is None


@pytest.mark.parametrize("config", CONFIGS[:2], ids=["default", "kept"])
def test_many_texts_in_one_call_equal_each_alone(config: FingerprintConfig) -> None:
    long = "word " * (PIECE_CHARS // 5 + 1)  # not served: None, and the Python path
    texts = [*random_texts(11, 300), long, " ,.!? _", "中文 文本 我们", "Straße ǅ"]
    random.Random(3).shuffle(texts)
    made = fastmarks.marks_many(texts, config, _probes())
    assert made == [fastmarks.marks(text, config, _probes()) for text in texts]
    assert made[texts.index(long)] is None
    assert made[texts.index(" ,.!? _")] == (0, b"")

    def python(text: str) -> tuple[int, bytes] | None:
        try:
            return one_pass(text, config)
        except EmptyTextError:
            return None

    expected = [python(text) for text in texts]
    assert marks_of_many(texts, config) == expected
    compiling.use("never")
    assert fastmarks.marks_many(texts, config, _probes()) == [None] * len(texts)
    assert marks_of_many(texts, config) == expected
    assert fastmarks.marks_many([], config, _probes()) == []


def test_auto_turns_on_after_the_characters_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(compiling._loaded, "simindex._marks")
    monkeypatch.setitem(fastmarks._auto, "seen", 0)
    monkeypatch.setitem(compiling._state, "expected", 0)  # (a command run in this process says it)
    monkeypatch.setattr(fastmarks, "SWITCH_CHARS", 100)
    compiling.use("auto")
    text = "forty characters of text, or about that."
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) is None  # 41 seen
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) is None  # 82
    made = fastmarks.marks(text, DEFAULT_CONFIG, _probes())  # 123: compiled from here
    assert made == one_pass(text, DEFAULT_CONFIG)


def test_auto_turns_on_at_once_for_a_job_said_to_be_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(compiling._loaded, "simindex._marks")
    monkeypatch.setitem(fastmarks._auto, "seen", 0)
    monkeypatch.setitem(compiling._state, "expected", 0)
    monkeypatch.setattr(fastmarks, "SWITCH_CHARS", 100)
    compiling.use("auto")
    text = "forty characters of text, or about that."
    compiling.expect(99)
    assert not fastmarks.due(0) and fastmarks.due(100)
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) is None  # a small job waits
    compiling.expect(100)
    assert fastmarks.due(0)
    assert fastmarks.marks(text, DEFAULT_CONFIG, _probes()) == one_pass(text, DEFAULT_CONFIG)


def test_xxh64_equals_xxhash_at_every_length() -> None:
    from simindex import _marks

    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, 300, dtype=np.uint8)
    for start in (0, 3):
        for length in range(0, 100):
            chunk = data[start : start + length]
            assert int(_marks.xxh64(data, start, length)) == xxhash.xxh64_intdigest(chunk.tobytes())


def test_the_loops_sizes_are_the_signatures() -> None:
    """_marks.py writes signature.py's sizes as its own (numba's cache
    keeps a global's value): they must stay the same numbers."""
    from simindex import _marks, signature

    assert 1 << (32 - int(_marks.BIN_SHIFT)) == signature.BINS
    assert (_marks.SMALL, _marks.MIDDLE_UNITS) == (signature.SMALL, signature.MIDDLE_UNITS)
    assert fastmarks._OUT_BYTES == signature.NBYTES + 2 * signature.MIDDLE_UNITS + 1


# --- numba compiling, told (simindex.compiling) ---------------------------------------


def test_the_first_compile_is_told_while_it_runs_and_a_cached_one_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simindex import _marks, compiled, compiling

    told: list[tuple[str, bool]] = []
    during: list[list[tuple[str, bool]]] = []
    real = _marks.marks_many

    def compile_step(*args: object) -> object:  # numba compiling: what was told by then
        during.append(list(told))
        return real(*args)

    def listener(event: compiling.Compiling, begun: bool) -> None:
        told.append((event.note(), begun))

    monkeypatch.setattr(_marks, "marks_many", compile_step)
    monkeypatch.delitem(compiling._loaded, "simindex._marks")
    compiling.listen(listener)
    try:
        monkeypatch.setattr(compiling, "cached", lambda function: True)  # in numba's cache
        assert fastmarks.available()
        assert told == [] and len(during) == 1  # (one call: a text case-folded, one not)
        del compiling._loaded["simindex._marks"]
        monkeypatch.setattr(compiling, "cached", lambda function: False)  # a first compile
        during.clear()
        assert fastmarks.available()
        note = "compiling the fast path (once, about 15 s)"
        assert during == [[(note, True)]]
        assert told == [(note, True), (note, False)]
        compiled.kernels()  # (loaded once, so that the monkeypatch puts it back)
        monkeypatch.delitem(compiling._loaded, "simindex._loops")
        told.clear()
        assert compiled.kernels() is not None
        note = f"compiling the fast pairing (once, about {compiled.COMPILING.seconds} s)"
        assert told == [(note, True), (note, False)]
    finally:
        compiling.unlisten(listener)


def test_numbas_cache_is_read_for_what_it_holds() -> None:
    from simindex import _marks, compiling

    assert fastmarks.available()  # compiled, so in numba's cache
    assert compiling.cached(_marks.marks_many)
    assert not compiling.cached(lambda: None)  # not a numba function: as if not cached
