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
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from simindex import compiling
from simindex.compiling import Compiling
from simindex.fingerprint import FingerprintConfig, prepare
from simindex.tokenize import _CJK, PIECE_CHARS, has_cjk, nfkc, normalize, stopwords

# Characters fingerprinted the Python way before the switch: about what the
# switch costs a process (importing numba, loading the loop from numba's
# cache and building the tables: 1.0-1.3 s), as the Python path reads short
# English documents at about 0.7 us a character (bench/dedup.py's corpus), so
# a process that switches spends at most about twice what it would have
# with the compiled pass from the start.
SWITCH_CHARS = 3 << 19
_OUT_BYTES = 64 + 2 * 256 + 1  # the sketch, the largest middle set and its byte
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


def running(config: FingerprintConfig) -> bool:
    """Whether ``marks_many`` runs the compiled loop for this configuration
    now (loaded, and serving it), without loading it: the loop lets go of
    the GIL, so another thread may fingerprint while this one works."""
    return (
        _serves(config)
        and compiling.mode() != "never"
        and compiling.tried(_LOOP)
        and _loaded() is not None
    )


def _serves(config: FingerprintConfig) -> bool:
    """Whether the loop serves a configuration (see the module's text)."""
    return config.ngram == 1 and config.cjk == "chars" and config.weighting != "sublinear"


def due(chars: int) -> bool:
    """Whether "auto" turns the pass on after ``chars`` characters read the
    Python way (in this process, or sent to its workers), or for a job said
    to be that large (simindex.compiling.expect)."""
    return max(chars, compiling.expected()) >= SWITCH_CHARS


def marks(text: str, config: FingerprintConfig, probes: np.ndarray) -> tuple[int, bytes] | None:
    """(fingerprint, signature) of a text, as fingerprint_and_signature gives
    them, or None where this pass does not serve (see the module's text):
    the caller computes them the Python way. ``probes``: the sketch's probe
    table (signature._probe_table). Raises nothing of its own: a text with no
    word gives (0, b"") and the caller raises EmptyTextError."""
    return marks_many([text], config, probes)[0]


def marks_many(
    texts: Sequence[str], config: FingerprintConfig, probes: np.ndarray
) -> list[tuple[int, bytes] | None]:
    """``marks`` of each text, in one call of the compiled loop (a call a
    text costs more than a short text's marks): None for each text this
    pass does not serve, and for all of them while "auto" waits (it counts
    the characters of the texts it would serve)."""
    made: list[tuple[int, bytes] | None] = [None] * len(texts)
    mode = compiling.mode()
    if mode == "never" or not _serves(config):
        return made
    served = [i for i, text in enumerate(texts) if len(text) <= PIECE_CHARS]
    if not served:
        return made
    if mode == "auto" and not compiling.tried(_LOOP):
        _auto["seen"] += sum(len(texts[i]) for i in served)
        if not due(_auto["seen"]):
            return made
    run = _loaded()
    if run is None:
        return made
    n = len(served)
    data: list[bytes] = []
    cjk_units = np.empty(n, np.bool_)
    fold = np.empty(n, np.bool_)
    for j, i in enumerate(served):
        bytes_of, cjk_units[j], fold[j] = _normalised(texts[i], config)
        data.append(bytes_of)
    bounds = np.zeros(n + 1, np.int64)
    np.cumsum([len(b) for b in data], out=bounds[1:])
    buf = np.frombuffer(bytearray(b"".join(data)), np.uint8)  # (writable: as casefold's)
    binary = config.weighting == "binary"
    fingerprints, sizes, out = _run(
        run, buf, bounds, cjk_units, fold, probes, config.stopwords, binary
    )
    for j, i in enumerate(served):
        size = int(sizes[j])
        made[i] = (0, b"") if size < 0 else (int(fingerprints[j]), out[j, :size].tobytes())
    return made


def _normalised(text: str, config: FingerprintConfig) -> tuple[bytes, bool, bool]:
    """A text's UTF-8 bytes as the loop reads them, whether its CJK bigrams
    are left out of its units (``cjk_units``), and whether the loop folds
    its case (``fold``)."""
    if text.isascii():  # prepared as it is, normalised by lower()
        return text.lower().encode("ascii"), False, False
    data = text.encode("utf-8", "surrogatepass")
    if max(data) < 0xE3 or not has_cjk(text):
        # No CJK (no code point from U+3000, or none found): prepare() gives
        # the text as it is, and normalize()'s NFKC is done here (the same
        # object when the text is NFKC already), its case folding in the loop.
        normal = nfkc(text)
        if normal is not text:
            data = normal.encode("utf-8", "surrogatepass")
        return data, False, True
    prepared = prepare(text, config)
    data = normalize(prepared).encode("utf-8", "surrogatepass")
    return data, not prepared.isascii() and has_cjk(prepared), False


def _loaded() -> Any:
    return compiling.load(_LOOP, ["marks_many"], COMPILING, _warmed)


def _run(
    run: Any,
    buf: np.ndarray,
    bounds: np.ndarray,
    cjk_units: np.ndarray,
    fold: np.ndarray,
    probes: np.ndarray,
    stopwords: bool,
    binary: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loop's (fingerprints, signatures' sizes, signatures' bytes) of
    the texts whose UTF-8 bytes are buf[bounds[j] : bounds[j + 1]]: the one
    call of it, with the tables it reads (a size below 0: no word)."""
    n = len(bounds) - 1
    fingerprints, sizes = np.empty(n, np.uint64), np.empty(n, np.int64)
    out = np.empty((n, _OUT_BYTES), np.uint8)
    slots, words, starts = _stop_table()
    run(
        buf, bounds, cjk_units, fold, classes(), slots, words, starts, probes, stopwords, binary,
        *_fold_table(), fingerprints, sizes, out,
    )  # fmt: skip
    return fingerprints, sizes, out


def _warmed(loop: Any) -> Any:
    """The loop of simindex/_marks.py, run once on two short texts (with
    case folding and without), with the types the calls above give it."""
    text = np.frombuffer(bytearray(b"a bc d"), np.uint8)
    bounds, cjk_units, fold = np.array([0, 3, 6]), np.zeros(2, np.bool_), np.array([False, True])
    probes = np.zeros((128, 32), np.int64)  # (a table of the sketch's 128 bins: the loop's own)
    _run(loop.marks_many, text, bounds, cjk_units, fold, probes, True, False)
    return loop.marks_many


def _every() -> str:
    """Every code point, in order, as one string (surrogates included; 4 MB,
    made for each table: 14 ms)."""
    return np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")


@cache
def classes() -> np.ndarray:
    """A byte a code point: its classes (_marks.WORD, CJK, SPACE) as Python's
    re module reads [^\\W_], tokenize._CJK and \\s; built from those patterns,
    a run of code points matching one at a time."""
    from simindex import _marks

    every = _every()
    table = np.zeros(0x110000, np.uint8)
    patterns = (("[^\\W_]+", _marks.WORD), (f"[{_CJK}]+", _marks.CJK), ("\\s+", _marks.SPACE))
    for pattern, bit in patterns:
        for run in re.finditer(pattern, every):
            table[run.start() : run.end()] |= bit
    return table


@cache
def _fold_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """str.casefold as _marks.casefold reads it: for each code point up to the
    last that folds, the index of its fold (-1: none), where each fold's code
    points begin, and the code points end to end. Built from blocks of code
    points folded by str.casefold: most fold to themselves, and only a block
    of 256 in a block of 4,096 that does not is folded a code point at a time."""
    every = _every()
    changed: list[tuple[int, str]] = []
    for large in range(0, 0x110000, 4096):
        if every[large : large + 4096].casefold() == every[large : large + 4096]:
            continue
        for block in range(large, large + 4096, 256):
            chars = every[block : block + 256]
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
