"""A text's fingerprint and signature in one compiled pass, where numba is installed.

An optional accelerator (``pip install 'simindex[fast]'``) of
signature.fingerprint_and_signature, the step every document of a corpus
job, an ``add``, a ``dedup`` and a query goes through: the same fingerprint
and signature, bit for bit, several times as fast (6-7x on English text,
4x on Chinese: bench/results/fingerprinting.txt). What is left in Python
is what runs in C already: ``prepare`` (NFKC, the CJK gaps folded,
Traditional made Simplified) for a text with CJK characters, and NFKC
(``lower`` for ASCII). The rest, case folding (for a text without CJK;
``str.casefold`` with one) and tokenising, counting the distinct tokens,
hashing them (xxh64), dropping stop words, the Simhash vote, the MinHash
sketch and the exact set of a short text, is the loop in
simindex/_marks.py.

It serves the configurations whose signature and fingerprint read the same
tokens (signature._shared_tokens: word unigrams, CJK as characters and bigrams;
the default's), with ``tf`` or ``binary`` weights, and texts of at most
tokenize.PIECE_CHARS characters; ``marks`` returns None for the others,
and the caller takes the Python path (signature.one_pass, the reference the
tests hold this pass to).

When: numba's import and the tables here cost a process about a second
(compiling the loop, once a machine, about 15 s more), so a process turns
it on only once it has fingerprinted SWITCH_CHARS characters the Python
way (about a second of English, several of Chinese): a short-lived process
or a small ``add`` never pays for it, a corpus job pays it once a process,
and in a long-lived one the call that crosses the line waits for it,
told so (simindex.compiling: the simindex command says it on its bar).
The process's switch (simindex.compiling.use, or SIMINDEX_COMPILED in its
environment) overrides that: "always" turns it on at the first text,
"never" leaves every text to the Python path (the benchmarks and tests set
it). The loop is loaded by simindex.compiling's loader, as the all-pairs
loops are.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import numpy as np

from simindex import compiling
from simindex.compiling import Compiling
from simindex.fingerprint import FingerprintConfig, prepare
from simindex.tokenize import _CJK, PIECE_CHARS, has_cjk, nfkc, normalize, stopwords

SWITCH_CHARS = 4 << 20  # characters fingerprinted the Python way before the switch
_OUT_BYTES = 64 + 4 * 15 + 1  # the sketch, the largest exact set and its order byte
# What the listeners of simindex.compiling are told while numba compiles the
# loop, the first time on a machine: 14.2 s on 2 busy cores with numba's cache
# empty (NUMBA_CACHE_DIR=$(mktemp -d) python -c "from simindex import
# fastmarks; fastmarks.available()"), 0.35 s from the cache; each of two
# workers compiling at once took longer.
COMPILING = Compiling("the fast path", 15)

_LOOP = "simindex._marks"  # the loop's module, as simindex.compiling loads it
_auto = {"seen": 0}  # characters fingerprinted the Python way while "auto" waits


def available() -> bool:
    """Whether the compiled pass can run here (numba installed, the loop
    compiled, and the switch not at "never")."""
    return _loaded() is not None


def marks(text: str, config: FingerprintConfig, probes: np.ndarray) -> tuple[int, bytes] | None:
    """(fingerprint, signature) of a text, as fingerprint_and_signature gives
    them, or None where this pass does not serve (see the module's text):
    the caller computes them the Python way. ``probes``: the sketch's probe
    table (signature._probe_table). Raises nothing of its own: a text with no
    word gives (0, b"") and the caller raises EmptyTextError."""
    mode = compiling.mode()
    if (
        mode == "never"
        or config.ngram != 1
        or config.cjk != "chars"
        or config.weighting == "sublinear"
        or len(text) > PIECE_CHARS
    ):
        return None
    if mode == "auto" and not compiling.tried(_LOOP):
        _auto["seen"] += len(text)
        if _auto["seen"] < SWITCH_CHARS:
            return None
    run = _loaded()
    if run is None:
        return None
    fold = False
    if text.isascii():  # prepared as it is, normalised by lower()
        buf = np.frombuffer(text.lower().encode("ascii"), np.uint8)
        cjk_units = False
    else:
        buf = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
        if buf.max() < 0xE3 or not has_cjk(text):
            # No CJK (no code point from U+3000, or none found): prepare()
            # gives the text as it is, and normalize()'s NFKC is done here
            # (the same object when the text is NFKC already), its case
            # folding in the loop.
            normal = nfkc(text)
            if normal is not text:
                buf = np.frombuffer(normal.encode("utf-8", "surrogatepass"), np.uint8)
            fold, cjk_units = True, False
        else:
            prepared = prepare(text, config)
            buf = np.frombuffer(normalize(prepared).encode("utf-8", "surrogatepass"), np.uint8)
            cjk_units = not prepared.isascii() and has_cjk(prepared)
    slots, words, starts = _stop_table()
    out = np.empty(_OUT_BYTES, np.uint8)
    fingerprint, size = run(
        buf, classes(), slots, words, starts, probes, config.stopwords,
        config.weighting == "binary", cjk_units, fold, *_fold_table(), out,
    )  # fmt: skip
    if size < 0:
        return 0, b""
    return int(fingerprint), out[:size].tobytes()


def _loaded() -> Any:
    return compiling.load(_LOOP, ["marks"], COMPILING, _warmed)


def _warmed(loop: Any) -> Any:
    """The loop of simindex/_marks.py, run once on a short text (with case
    folding and without)."""
    slots, words, starts = _stop_table()
    probes = np.zeros((128, 32), np.int64)
    out = np.empty(_OUT_BYTES, np.uint8)
    for fold in (False, True):
        loop.marks(
            np.frombuffer(b"a b", np.uint8), classes(), slots, words, starts, probes, True,
            False, False, fold, *_fold_table(), out,
        )  # fmt: skip
    return loop.marks


@cache
def classes() -> np.ndarray:
    """A byte a code point: its classes (_marks.WORD, CJK, SPACE) as Python's
    re module reads [^\\W_], tokenize._CJK and \\s; built from those patterns."""
    from simindex import _marks

    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(0x110000, np.uint8)
    patterns = (("[^\\W_]", _marks.WORD), (f"[{_CJK}]", _marks.CJK), ("\\s", _marks.SPACE))
    for pattern, bit in patterns:
        found = "".join(re.findall(pattern, every))
        points = np.frombuffer(found.encode("utf-32-le", "surrogatepass"), np.uint32)
        table[points] |= bit
    return table


@cache
def _fold_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """str.casefold as _marks.casefold reads it: for each code point up to the
    last that folds, the index of its fold (-1: none), where each fold's code
    points begin, and the code points end to end. Built a block of 256 code
    points at a time, each folded by str.casefold (most fold to themselves)."""
    changed: list[tuple[int, str]] = []
    for block in range(0, 0x110000, 256):
        chars = "".join(map(chr, range(block, block + 256)))
        if chars.casefold() != chars:
            changed.extend((ord(c), f) for c in chars if (f := c.casefold()) != c)
    index = np.full(changed[-1][0] + 1, -1, np.int32)
    starts = np.zeros(len(changed) + 1, np.int64)
    points: list[int] = []
    for i, (code, folded) in enumerate(changed):
        index[code] = i
        points.extend(map(ord, folded))
        starts[i + 1] = len(points)
    return index, starts, np.array(points, np.int32)


@cache
def _stop_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stop words for _marks.is_stop: slots by xxh64 (linear probing),
    their UTF-8 bytes end to end, and where each begins."""
    import xxhash

    encoded = [w.encode("utf-8", "surrogatepass") for w in sorted(stopwords())]
    size = 16
    while size < 2 * len(encoded):
        size <<= 1
    slots = np.full(size, -1, np.int64)
    for index, word in enumerate(encoded):
        j = xxhash.xxh64_intdigest(word) & (size - 1)
        while slots[j] >= 0:
            j = (j + 1) & (size - 1)
        slots[j] = index
    starts = np.zeros(len(encoded) + 1, np.int64)
    starts[1:] = np.cumsum([len(w) for w in encoded])
    return slots, np.frombuffer(b"".join(encoded), np.uint8), starts
