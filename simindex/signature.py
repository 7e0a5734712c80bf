"""Verification signatures: a second, copy-sensitive sketch of a text, to check
the candidates the 64-bit fingerprint finds. Measured, not wired into the index
(bench/quality.py --hard, bench/copyright.py, bench/signatures.py;
docs/decisions/verification-signatures.md).

Pure functions, no database. A text is read as *units*: the tokens of
``simindex.tokenize.words(text, cjk="chars")`` with the CJK bigrams left out,
so a unit is a word of a spaced script (normalised, punctuation dropped, stop
words kept) or one CJK character. The shingles are the runs of ``n``
consecutive units (word n-grams, CJK character n-grams; a text of fewer than n
units is one shingle), each hashed to 64 bits: every unit once with xxh3
(seed 0, UTF-8), then the n unit hashes of a run combined and mixed in numpy.
Punctuation and the whitespace between CJK characters never reach the units,
so "你好　世界！" and "你好，世界" have the same shingles.

Three signatures over those shingle hashes, each with the similarity it
estimates:

- ``simhash_signature`` (B = 128 or 256 bits): a Simhash of the *set* of
  shingles (binary weights). Two sets at cosine c = |A & B| / sqrt(|A| |B|)
  differ in a bit with probability arccos(c) / pi, so cos(pi d / B) estimates
  their cosine.
- ``minhash_signature`` (K bins of b bits): one-permutation MinHash with
  optimal densification (Li, Owen and Zhang 2012; Shrivastava 2017), keeping
  the lowest b bits of each bin's minimum (Li and Konig 2010). Two sets at
  Jaccard J agree in a bin with probability about J + (1 - J) / 2**b.
- ``hybrid_signature``: the exact set of (32-bit) shingle hashes of a small
  text (up to SMALL_SET of them, 4 bytes each), else the MinHash sketch; a
  small text is compared with a large one through the sketch of its set.

Hashes are fixed (xxh3, fixed constants), so a signature is the same in every
process, run and machine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.tokenize import words

SHINGLE = 3  # units a shingle: word 3-grams, CJK character 3-grams
SMALL_SET = 15  # hybrid: texts of up to this many distinct shingles keep them all

_CJK1 = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_xxh3 = xxhash.xxh3_64_intdigest
_U64 = np.uint64
# Odd 64-bit multipliers, one per position in a shingle (a shingle is ordered).
_POSITION = np.array(
    [
        0x9E3779B97F4A7C15,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0xD6E8FEB86659FD93,
        0xFF51AFD7ED558CCD,
        0xC4CEB9FE1A85EC53,
        0x94D049BB133111EB,
        0xBF58476D1CE4E5B9,
    ],
    dtype=_U64,
)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise over uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U64(30))
    x = x * _U64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U64(27))
    x = x * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def units_of(tokens: Sequence[str]) -> list[str]:
    """The units of ``words(text, cjk="chars")``'s tokens: the CJK bigrams left out."""
    return [t for t in tokens if len(t) != 2 or not _CJK1.match(t)]


def units(text: str) -> list[str]:
    """A text's units: normalised words of spaced scripts, single CJK characters."""
    return units_of(words(text, "chars"))


def shingle_hashes(unit_list: Sequence[str], n: int = SHINGLE) -> np.ndarray:
    """The 64-bit hash of every run of n consecutive units, in order (one per
    position; repeats kept). Fewer than n units make one shingle; none, none."""
    if not 1 <= n <= len(_POSITION):
        raise InvalidArgumentError(f"n must be from 1 to {len(_POSITION)}, not {n!r}")
    if not unit_list:
        return np.zeros(0, dtype=_U64)
    # Each distinct unit hashed once; positions looked up through a dict (in C).
    index = {u: i for i, u in enumerate(dict.fromkeys(unit_list))}
    table = np.fromiter((_xxh3(u.encode("utf-8", "surrogatepass")) for u in index), _U64)
    ids = np.fromiter(map(index.__getitem__, unit_list), np.intp, count=len(unit_list))
    h = table[ids]
    m = len(h) - n + 1
    if m <= 0:  # fewer than n units: one shingle of them all
        h, m = np.concatenate([h, np.zeros(n - len(h), _U64)]), 1
    acc = h[:m] * _POSITION[0]
    for j in range(1, n):
        acc = acc + h[j : j + m] * _POSITION[j]
    return _mix(acc ^ _U64(n))


def text_hashes(text: str, n: int = SHINGLE) -> np.ndarray:
    """shingle_hashes(units(text), n); raises EmptyTextError for a text with no unit."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")
    u = units(text)
    if not u:
        raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
    return shingle_hashes(u, n)


# --- exact similarities (what the signatures estimate) -------------------------------------


def shingle_set(hashes: np.ndarray) -> np.ndarray:
    """The distinct shingle hashes, sorted."""
    return np.unique(hashes)


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|A & B| / |A | B| of two texts' shingle hashes (repeats ignored)."""
    sa, sb = np.unique(a), np.unique(b)
    if not len(sa) and not len(sb):
        return 1.0
    inter = len(np.intersect1d(sa, sb, assume_unique=True))
    return inter / (len(sa) + len(sb) - inter)


def exact_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """|A & B| / sqrt(|A| |B|): the cosine of the binary shingle vectors."""
    sa, sb = np.unique(a), np.unique(b)
    if not len(sa) or not len(sb):
        return 1.0 if len(sa) == len(sb) else 0.0
    inter = len(np.intersect1d(sa, sb, assume_unique=True))
    return inter / math.sqrt(len(sa) * len(sb))


def exact_containment(a: np.ndarray, b: np.ndarray) -> float:
    """|A & B| / min(|A|, |B|): how much of the smaller text the larger holds."""
    sa, sb = np.unique(a), np.unique(b)
    if not len(sa) or not len(sb):
        return 1.0 if len(sa) == len(sb) else 0.0
    inter = len(np.intersect1d(sa, sb, assume_unique=True))
    return inter / min(len(sa), len(sb))


# --- a wider Simhash over the shingle set --------------------------------------------------

_CHUNK = 1 << 15  # shingles voted per step: bounds memory for huge texts
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")


def simhash_signature(hashes: np.ndarray, bits: int = 256) -> bytes:
    """A ``bits``-bit Simhash (a multiple of 64) of the set of shingles, every
    shingle weighing 1: word w of a shingle's hash is mix(hash ^ w's constant)."""
    if bits % 64 or not 64 <= bits <= 64 * len(_POSITION):
        raise InvalidArgumentError(f"bits must be a multiple of 64 up to 512, not {bits!r}")
    s = np.unique(hashes)
    words_ = bits // 64
    counts = np.zeros((bits // 8, 256), dtype=np.int64)
    rows = np.arange(bits // 8, dtype=np.intp) * 256
    for start in range(0, len(s), _CHUNK):
        part = s[start : start + _CHUNK]
        wide = np.empty((len(part), words_), dtype=_U64)
        for w in range(words_):
            wide[:, w] = _mix(part ^ _POSITION[w])
        by = wide.view(np.uint8).reshape(len(part), bits // 8)  # little-endian bytes
        # How often each byte position holds each value; the bit votes follow.
        counts += np.bincount((by + rows[None, :]).ravel(), minlength=bits * 32).reshape(
            bits // 8, 256
        )
    ones = counts @ _BYTE_BITS  # (bytes, 8): shingles with each bit set
    return np.packbits((2 * ones > len(s)).ravel(), bitorder="little").tobytes()


def simhash_similarity(a: bytes, b: bytes) -> float:
    """cos(pi * d / B): the estimated cosine of two texts' shingle sets."""
    if len(a) != len(b):
        raise InvalidArgumentError("signatures of different widths")
    d = (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).bit_count()
    return math.cos(math.pi * d / (8 * len(a)))


# --- b-bit one-permutation MinHash ---------------------------------------------------------

_PROBES = 32  # densification: bins tried for an empty bin before the nearest one to its right


def _probe_table(bins: int) -> np.ndarray:
    seeds = np.arange(bins * _PROBES, dtype=_U64) + _U64(0x5851F42D4C957F2D)
    return (_mix(seeds) % _U64(bins)).astype(np.intp).reshape(bins, _PROBES)


_TABLES: dict[int, np.ndarray] = {}


def _check_sketch(bins: int, bits: int) -> None:
    if bins < 8 or bins > 4096 or bins & (bins - 1):
        raise InvalidArgumentError(f"bins must be a power of two from 8 to 4096, not {bins!r}")
    if not 1 <= bits <= 16 or (bins * bits) % 8:
        raise InvalidArgumentError("bits must be 1-16 with bins * bits a whole byte count")


def minhash_values(h32: np.ndarray, bins: int = 128, bits: int = 4) -> np.ndarray:
    """The K = bins b-bit values of one-permutation MinHash over 32-bit shingle
    hashes: bin = the top log2(K) bits, the bin's value = the low b bits of its
    smallest hash; an empty bin takes the value of the first non-empty bin on
    its probe sequence (optimal densification), else of the nearest non-empty
    bin to its right."""
    _check_sketch(bins, bits)
    shift = 32 - bins.bit_length() + 1
    s = np.sort(h32.astype(np.uint32))
    lo = np.arange(bins, dtype=np.uint64) << np.uint64(shift)
    at = np.searchsorted(s, lo)
    filled = at < len(s)
    filled[filled] = (s[at[filled]] >> np.uint32(shift)) == np.arange(bins)[filled]
    values = np.zeros(bins, dtype=np.uint32)
    values[filled] = s[at[filled]] & np.uint32((1 << bits) - 1)
    if filled.all() or not filled.any():
        return values
    probes = _TABLES.get(bins)
    if probes is None:
        probes = _TABLES[bins] = _probe_table(bins)
    empty = np.flatnonzero(~filled)
    hit = filled[probes[empty]]
    found = hit.any(axis=1)
    source = probes[empty, hit.argmax(axis=1)]
    if not found.all():  # very sparse: the nearest non-empty bin to the right
        where = np.flatnonzero(filled)
        right = where[np.searchsorted(where, empty[~found]) % len(where)]
        source[~found] = right
    values[empty] = values[source]
    return values


def _pack(values: np.ndarray, bits: int) -> bytes:
    as_bits = (values[:, None] >> np.arange(bits, dtype=np.uint32)) & 1
    return np.packbits(as_bits.astype(np.uint8).ravel(), bitorder="little").tobytes()


def unpack_values(sig: bytes, bins: int, bits: int) -> np.ndarray:
    """The b-bit values of a packed MinHash signature."""
    flat = np.unpackbits(np.frombuffer(sig, dtype=np.uint8), bitorder="little")
    weights = np.uint32(1) << np.arange(bits, dtype=np.uint32)
    return flat[: bins * bits].reshape(bins, bits).astype(np.uint32) @ weights


def top32(hashes: np.ndarray) -> np.ndarray:
    """The top 32 bits of 64-bit shingle hashes (what the MinHash sketches use)."""
    return (hashes >> _U64(32)).astype(np.uint32)


def minhash_signature(hashes: np.ndarray, bins: int = 128, bits: int = 4) -> bytes:
    """bins * bits / 8 bytes: see minhash_values (over the top 32 bits of each hash)."""
    return _pack(minhash_values(top32(hashes), bins, bits), bits)


def jaccard_from_agreement(agree: float, bits: int) -> float:
    """The Jaccard estimate from the fraction of bins that agree."""
    chance = 2.0**-bits
    return min(1.0, max(0.0, (agree - chance) / (1.0 - chance)))


def minhash_similarity(a: bytes, b: bytes, bins: int = 128, bits: int = 4) -> float:
    """The estimated Jaccard similarity of two texts' shingle sets."""
    if len(a) != len(b):
        raise InvalidArgumentError("signatures of different sizes")
    va, vb = unpack_values(a, bins, bits), unpack_values(b, bins, bits)
    return jaccard_from_agreement(float(np.mean(va == vb)), bits)


# --- exact shingle sets for small texts, else the MinHash sketch ---------------------------


def hybrid_signature(hashes: np.ndarray, bins: int = 128, bits: int = 4) -> bytes:
    """Up to SMALL_SET distinct shingles: their sorted 32-bit hashes (4 bytes
    each, under bins * bits / 8 bytes); more: minhash_signature."""
    small = np.unique(top32(hashes))
    if len(small) <= SMALL_SET and 4 * len(small) < bins * bits // 8:
        return small.astype("<u4").tobytes()
    return minhash_signature(hashes, bins, bits)


def hybrid_similarity(a: bytes, b: bytes, bins: int = 128, bits: int = 4) -> float:
    """Exact Jaccard of two small sets; else the sketches' estimate (a small set
    sketched on the spot)."""
    size = bins * bits // 8
    if len(a) < size and len(b) < size:
        sa, sb = np.frombuffer(a, "<u4"), np.frombuffer(b, "<u4")
        inter = len(np.intersect1d(sa, sb, assume_unique=True))
        union = len(sa) + len(sb) - inter
        return inter / union if union else 1.0

    def sketch(x: bytes) -> bytes:
        if len(x) == size:
            return x
        return _pack(minhash_values(np.frombuffer(x, "<u4"), bins, bits), bits)

    return minhash_similarity(sketch(a), sketch(b), bins, bits)


# --- the candidates, by name ---------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One verification signature: how it is made from shingle hashes, how two
    are compared, its size, and the exact similarity it estimates."""

    name: str
    n: int  # units a shingle
    nbytes: int  # bytes a document (the hybrid: at most)
    estimates: str  # "jaccard" or "cosine"
    make: Callable[[np.ndarray], bytes]
    similarity: Callable[[bytes, bytes], float]

    def of(self, text: str) -> bytes:
        """The signature of a text (raises EmptyTextError for a text with no unit)."""
        return self.make(text_hashes(text, self.n))


def _simhash(bits: int, n: int) -> Signature:
    return Signature(
        f"simhash{bits}/{n}",
        n,
        bits // 8,
        "cosine",
        lambda h: simhash_signature(h, bits),
        simhash_similarity,
    )


def _minhash(bins: int, bits: int, n: int) -> Signature:
    return Signature(
        f"minhash{bins}x{bits}/{n}",
        n,
        bins * bits // 8,
        "jaccard",
        lambda h: minhash_signature(h, bins, bits),
        lambda a, b: minhash_similarity(a, b, bins, bits),
    )


def _hybrid(bins: int, bits: int, n: int) -> Signature:
    return Signature(
        f"hybrid{bins}x{bits}/{n}",
        n,
        bins * bits // 8,
        "jaccard",
        lambda h: hybrid_signature(h, bins, bits),
        lambda a, b: hybrid_similarity(a, b, bins, bits),
    )


# What the benchmarks compare: name -> Signature.
SIGNATURES: dict[str, Signature] = {
    s.name: s
    for s in (
        _simhash(128, 3),
        _simhash(256, 3),
        _minhash(64, 8, 3),
        _minhash(128, 4, 3),
        _minhash(256, 2, 3),
        _minhash(512, 1, 3),
        _minhash(256, 4, 3),
        _minhash(128, 4, 5),
        _hybrid(128, 4, 3),
    )
}
