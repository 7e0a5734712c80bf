"""Text to features: normalisation, segmentation, stop words, shingles.

Pure functions, no database. jieba is imported (and its dictionary loaded)
only the first time a text with CJK characters is segmented into words
(cjk="words"), so other work never pays its start-up.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from importlib.resources import files
from typing import NamedTuple

# Han ideographs (with extensions and compatibility forms) and Japanese kana:
# scripts written without spaces, read as characters and character bigrams
# (cjk="chars", new indexes' default) or segmented with jieba (cjk="words").
_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B-G
)
# A run of CJK characters, or a run of other word characters (letters, digits,
# marks; underscore counts as punctuation; an apostrophe inside a word, as in
# "don't", is kept). Everything else separates tokens.
_WORD = f"[^\\W_{_CJK}]+"
_OTHER = re.compile(r"[^\W_]+(?:'[^\W_]+)*")  # the same, for text without CJK
_WORDLIKE = re.compile(r"[^\W_]")


class _CjkPatterns(NamedTuple):
    runs: re.Pattern[str]  # a CJK run, or a run of other word characters
    any: re.Pattern[str]  # one CJK character
    gap: re.Pattern[str]  # whitespace between two CJK characters
    # A run of anything but letters, digits and marks (punctuation, ASCII or
    # full-width, symbols, any Unicode whitespace) between two CJK characters.
    punct_gap: re.Pattern[str]


@cache
def _cjk() -> _CjkPatterns:
    """The patterns that name CJK characters, compiled on first use (about
    12 ms: ASCII text, and a command that reads none, never pays it)."""
    return _CjkPatterns(
        re.compile(f"([{_CJK}]+)|({_WORD}(?:'{_WORD})*)"),
        re.compile(f"[{_CJK}]"),
        re.compile(f"(?<=[{_CJK}])\\s+(?=[{_CJK}])"),
        re.compile(f"(?<=[{_CJK}])[\\W_]+(?=[{_CJK}])"),
    )


_segment: Callable[[str], list[str]] | None = None


# The compatibility forms common in real text (full-width ASCII, as in
# Chinese "，", "１", "（"; the ideographic and no-break spaces; "…"; the
# Latin-1 superscript digits): each mapped to its own NFKC form (see nfkc).
_COMMON_COMPAT_FORMS = {
    cp: unicodedata.normalize("NFKC", chr(cp))
    for cp in (*range(0xFF01, 0xFF5F), 0x3000, 0x00A0, 0x2026, 0x00B2, 0x00B3, 0x00B9)
}
_COMMON_COMPAT = re.compile(f"[{re.escape(''.join(map(chr, _COMMON_COMPAT_FORMS)))}]+")


def nfkc(text: str) -> str:
    """unicodedata.normalize("NFKC", text), the same string (the text itself
    when it is NFKC already), faster on text whose only compatibility forms
    are the common ones (_COMMON_COMPAT): CPython's NFKC of a text its quick
    check does not pass decomposes and recomposes every character, about
    125 ns a character, and one full-width comma makes a Chinese text so.

    A text the check passes is given as it is (most non-ASCII text: a regex
    pass over it would cost more than the check; on a text of combining
    marks not in NFKC the check is itself a full normalisation, so such a
    text costs about 1.5 times unicodedata's). Otherwise the common forms
    are replaced by their own NFKC forms, in one regex pass, so that
    normalize()'s own quick check passes where they were all that stopped
    it. Exact: NFKC(t) is the canonical composition of NFKD(t), the
    characters' full compatibility decompositions put in canonical order,
    and a character's NFKC form has the same full decomposition as the
    character (NFKC(c) is canonically equivalent to NFKD(c)), so the
    replaced text has the same NFKD, and so the same NFKC."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    forms = _COMMON_COMPAT_FORMS
    return unicodedata.normalize(
        "NFKC", _COMMON_COMPAT.sub(lambda m: m.group().translate(forms), text)
    )


def normalize(text: str) -> str:
    """NFKC-normalise and case-fold a text (full-width forms become half-width).

    The typographic apostrophe becomes a plain one, so "don’t" and "don't" agree.
    ASCII text is its own NFKC form, and case-folds as it lowers.
    """
    if text.isascii():
        return text.lower()
    return nfkc(text).casefold().replace("\u2019", "'")


def _jieba_segment(run: str) -> list[str]:
    global _segment
    if _segment is None:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()

        def segment(s: str) -> list[str]:
            return list(tokenizer.cut(s, HMM=True))

        _segment = segment
    return _segment(run)


CJK_MODES = ("words", "chars")


def has_cjk(text: str) -> bool:
    """Whether a text has a CJK character (see _CJK): one scan in C."""
    return not text.isascii() and _cjk().any.search(text) is not None


def count_cjk(text: str) -> int:
    """How many CJK characters a text has (see _CJK): one scan in C."""
    return 0 if text.isascii() else len(_cjk().any.findall(text))


def fold_cjk_gaps(text: str) -> str:
    """The text with every run of punctuation, symbols and whitespace between
    two CJK characters dropped ("你好，世界！　呼噜" -> "你好世界呼噜"), so the
    characters on either side make a bigram as they would without it. It reads
    raw text: full-width punctuation and the ideographic space are folded as
    their ASCII forms are. Letters and digits between two CJK characters stay."""
    if text.isascii():
        return text
    return _cjk().punct_gap.sub("", text)


def char_grams(run: str) -> list[str]:
    """A CJK run as its characters and character bigrams, in order: each character
    followed by the bigram it starts ("中文字" -> 中, 中文, 文, 文字, 字)."""
    out: list[str] = []
    for i, c in enumerate(run):
        out.append(c)
        if i + 1 < len(run):
            out.append(run[i : i + 2])
    return out


def words(text: str, cjk: str = "words") -> list[str]:
    """Split a text into word tokens, in order: normalised, punctuation dropped.

    CJK runs (whitespace between two CJK characters is dropped first) are
    segmented with jieba when ``cjk`` is ``"words"``, and read as their
    characters and character bigrams (see char_grams) when it is ``"chars"``,
    which needs no dictionary and is several times faster. Other scripts are
    split on anything that is not a letter, digit or combining mark.
    """
    text = normalize(text)
    if not has_cjk(text):  # the common case, all in C
        return _OTHER.findall(text)
    # Chinese and Japanese are written without spaces: whitespace between two
    # of their characters is layout (a line wrapped at a fixed width), so it
    # must not cut a word in two.
    cjk_patterns = _cjk()
    text = cjk_patterns.gap.sub("", text)
    out: list[str] = []
    for match in cjk_patterns.runs.finditer(text):
        run, other = match.groups()
        if other is not None:
            out.append(other)
        elif cjk == "chars":
            out.extend(char_grams(run))
        else:
            out.extend(t for t in _jieba_segment(run) if _WORDLIKE.search(t))
    return out


@cache
def stopwords() -> frozenset[str]:
    """The shipped English and Chinese stop words (already normalised)."""
    found: set[str] = set()
    for name in ("stopwords_en.txt", "stopwords_zh.txt"):
        text = files("simindex").joinpath("data").joinpath(name).read_text(encoding="utf-8")
        for line in text.splitlines():
            if not line.startswith("#"):
                found.update(normalize(w) for w in line.split())
    return frozenset(found)


def content_words(text: str, *, drop_stopwords: bool = True, cjk: str = "words") -> list[str]:
    """Word tokens (see words) with stop words dropped.

    A text made only of stop words ("to be or not to be") keeps them all, so
    it still gets a fingerprint of its own rather than none.
    """
    tokens = words(text, cjk)
    if not drop_stopwords:
        return tokens
    stop = stopwords()
    kept = [t for t in tokens if t not in stop]
    return kept if kept else tokens


def shingles(tokens: list[str], n: int) -> list[str]:
    """Word n-grams joined by a space; a text shorter than n gives one shingle."""
    if n <= 1:
        return tokens
    if len(tokens) <= n:
        return [" ".join(tokens)] if tokens else []
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


PIECE_CHARS = 1 << 20  # a long text is read in pieces of about this many characters


def pieces(text: str, size: int | None = None) -> Iterator[str]:
    """A text in consecutive pieces of about ``size`` characters (default
    PIECE_CHARS), each cut at whitespace where there is some in its last
    tenth (so words stay whole)."""
    size = size or PIECE_CHARS
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(c, end - size // 10, end) for c in " \n\t\r")
        if cut > start:
            end = cut + 1
        yield text[start:end]
        start = end
    yield text[start:]


def shingle_counts(
    text: str, n: int, *, drop_stopwords: bool = True, cjk: str = "words"
) -> Counter[str]:
    """Counter(shingles(content_words(text), n)), in memory that grows with the
    text's vocabulary, not its length: a long text is tokenised piece by piece."""
    counting = Shingling(n, drop_stopwords=drop_stopwords)
    for piece in pieces(text):
        counting.add(words(piece, cjk))
    return counting.counts()


class Shingling:
    """shingle_counts of a text given its tokens a piece at a time (words of
    each of its pieces, in order): the n-grams that span two pieces counted
    too, stop words dropped unless the whole text is stop words."""

    def __init__(self, n: int, *, drop_stopwords: bool = True) -> None:
        self.n = n
        self.stop = stopwords() if drop_stopwords else frozenset()
        self.kept, self.kept_tail = Counter[str](), list[str]()
        self.every, self.every_tail = Counter[str](), list[str]()  # in case all are stop words

    def add(self, tokens: list[str]) -> None:
        content = [t for t in tokens if t not in self.stop] if self.stop else tokens
        self.kept_tail = _shingle_into(self.kept, self.kept_tail + content, self.n)
        if not self.kept and not self.kept_tail:
            self.every_tail = _shingle_into(self.every, self.every_tail + tokens, self.n)

    def counts(self) -> Counter[str]:
        if self.kept or self.kept_tail:
            return _finish(self.kept, self.kept_tail, self.n)
        return _finish(self.every, self.every_tail, self.n)


def _shingle_into(counts: Counter[str], tokens: list[str], n: int) -> list[str]:
    """Count the whole n-grams of tokens; return the n - 1 tokens left over
    (all of them while there are fewer than n)."""
    if len(tokens) < n:
        return tokens
    counts.update(shingles(tokens, n))
    return tokens[len(tokens) - n + 1 :] if n > 1 else []


def _finish(counts: Counter[str], tail: list[str], n: int) -> Counter[str]:
    if not counts and tail:  # fewer than n tokens in all: one shingle of them
        counts[" ".join(tail)] += 1
    return counts
