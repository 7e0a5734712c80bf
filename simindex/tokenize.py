"""Text to features: normalisation, segmentation, stop words, shingles.

Pure functions, no database. jieba is imported (and its dictionary loaded)
only the first time a text contains CJK characters, so English-only work never
pays its start-up.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import cache
from importlib.resources import files

# Han ideographs (with extensions and compatibility forms) and Japanese kana:
# scripts written without spaces, segmented with jieba.
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
_RUNS = re.compile(f"([{_CJK}]+)|({_WORD}(?:'{_WORD})*)")
_OTHER = re.compile(r"[^\W_]+(?:'[^\W_]+)*")  # the same, for text without CJK
_HAS_CJK = re.compile(f"[{_CJK}]")
_WORDLIKE = re.compile(r"[^\W_]")

_segment: Callable[[str], list[str]] | None = None


def normalize(text: str) -> str:
    """NFKC-normalise and case-fold a text (full-width forms become half-width).

    The typographic apostrophe becomes a plain one, so "don’t" and "don't" agree.
    """
    return unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")


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


def words(text: str) -> list[str]:
    """Split a text into word tokens, in order: normalised, punctuation dropped.

    CJK runs are segmented with jieba; other scripts are split on anything that
    is not a letter, digit or combining mark.
    """
    text = normalize(text)
    if not _HAS_CJK.search(text):  # the common case, all in C
        return _OTHER.findall(text)
    out: list[str] = []
    for match in _RUNS.finditer(text):
        cjk, other = match.groups()
        if other is not None:
            out.append(other)
        else:
            out.extend(t for t in _jieba_segment(cjk) if _WORDLIKE.search(t))
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


def content_words(text: str, *, drop_stopwords: bool = True) -> list[str]:
    """Word tokens with stop words dropped.

    A text made only of stop words ("to be or not to be") keeps them all, so
    it still gets a fingerprint of its own rather than none.
    """
    tokens = words(text)
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
