"""Every verification signature measured when one was chosen
(bench/experiments/quality_hard.py, copyright.py and signatures.py), beside the
one simindex keeps (simindex.signature, ``minhash128x4/1``; why:
docs/decisions/verification-signatures.md).

Pure functions, no database. A text is prepared as an index at DEFAULT_CONFIG
reads it (fingerprint.prepare) and read as *units* (simindex.signature.units:
words, and single CJK characters or, by mode, CJK bigrams); a shingle of
n > 1 units combines their xxh64 hashes in numpy (a text of fewer than n
units is one shingle).

Signatures over the set of shingle (or unit) hashes, each with the similarity
it estimates:

- ``minhash_signature`` (K bins of b bits): simindex.signature's sketch, at
  any K and b. Two sets at Jaccard J agree in a bin with probability about
  J + (1 - J) / 2**b.
- ``simhash_signature`` (B = 128 or 256 bits): a Simhash of the *set* of
  shingles (binary weights). Two sets at cosine c = |A & B| / sqrt(|A| |B|)
  differ in a bit with probability arccos(c) / pi, so cos(pi d / B) estimates
  their cosine.
- ``feature_simhash``: not over shingles but over the 64-bit fingerprint's own
  weighted features (``simindex.fingerprint.features``), 128 or 256 more bits:
  a sharper estimate of the weighted cosine the fingerprint estimates.
- ``hybrid_signature``: the exact set of (32-bit) hashes of a small text (up
  to SMALL_SET of them, 4 bytes each), else the MinHash sketch; a small text is
  compared with a large one through the sketch of its set.

SIGNATURES names the configurations the benchmarks compare. Hashes and
constants are fixed, so a signature is the same in every process, run and
machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import xxhash

from simindex import signature as production
from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, features, prepare, simhash
from simindex.signature import jaccard_from_agreement, minhash_values, top32
from simindex.tokenize import has_cjk, stopwords, words

SHINGLE = 3  # units a shingle: word 3-grams, CJK character 3-grams
SMALL_SET = 15  # hybrid: texts of up to this many distinct shingles keep them all

# How CJK becomes units: "chars" (the product's: words and single CJK
# characters), "bigrams" (words and CJK character bigrams), "content"
# ("chars" without the shipped stop words, all of them when nothing else is left).
UNITS = ("chars", "bigrams", "content")


def units_of(tokens: Sequence[str], mode: str = "chars") -> list[str]:
    """The units of ``words(text, cjk="chars")``'s tokens, by mode (see UNITS)."""
    if mode not in UNITS:
        raise InvalidArgumentError(f"units must be one of {', '.join(UNITS)}, not {mode!r}")
    if mode == "chars":
        return production.units_of(tokens)
    if mode == "content":
        stop = stopwords()
        kept = production.units_of(tokens)
        return [t for t in kept if t not in stop] or kept
    if not has_cjk("".join(tokens)):
        return list(tokens)
    return [t for t in tokens if len(t) != 1 or not has_cjk(t)]


def units(text: str, mode: str = "chars") -> list[str]:
    """A text's units, by mode (the text taken as it is)."""
    return units_of(words(text, "chars"), mode)


# Units are hashed as the fingerprint hashes its features (xxh64, seed 0, UTF-8), so
# one pass can hash each distinct token once for both (fingerprint_and_signature).
_xxh64 = xxhash.xxh64_intdigest
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


def shingle_hashes(unit_list: Sequence[str], n: int = SHINGLE) -> np.ndarray:
    """The 64-bit hashes of the runs of n consecutive units: for n = 1, of each
    distinct unit (its xxh64, as the fingerprint's feature hash), else of every
    run, in order (repeats kept). Fewer
    than n units make one shingle; none, none. Every signature here reads the
    hashes as a set."""
    if not 1 <= n <= len(_POSITION):
        raise InvalidArgumentError(f"n must be from 1 to {len(_POSITION)}, not {n!r}")
    if not unit_list:
        return np.zeros(0, dtype=_U64)
    distinct = list(dict.fromkeys(unit_list))
    table = production.unit_hashes(distinct)
    if n == 1:
        return table
    # Each distinct unit hashed once; positions looked up through a dict (in C).
    index = dict(zip(distinct, range(len(distinct)), strict=True))
    ids = np.fromiter(map(index.__getitem__, unit_list), np.intp, count=len(unit_list))
    h = table[ids]
    m = len(h) - n + 1
    if m <= 0:  # fewer than n units: one shingle of them all
        h, m = np.concatenate([h, np.zeros(n - len(h), _U64)]), 1
    acc = h[:m] * _POSITION[0]
    for j in range(1, n):
        acc = acc + h[j : j + m] * _POSITION[j]
    return production.mix(acc ^ _U64(n))


def text_hashes(text: str, n: int = SHINGLE, mode: str = "chars") -> np.ndarray:
    """shingle_hashes(units(text, mode), n); raises EmptyTextError for a text with no unit."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")
    u = units(prepare(text, DEFAULT_CONFIG), mode)
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


def _votes(h: np.ndarray, weights: np.ndarray | None, bits: int) -> bytes:
    """A bits-bit Simhash of distinct 64-bit hashes h (weights: each one's vote, else
    1): word w of a hash's bits is mix(hash ^ w's constant)."""
    words_ = bits // 64
    counts = np.zeros((bits // 8, 256), dtype=np.float64)
    rows = np.arange(bits // 8, dtype=np.intp) * 256
    for start in range(0, len(h), _CHUNK):
        part = h[start : start + _CHUNK]
        wide = np.empty((len(part), words_), dtype=_U64)
        for w in range(words_):
            wide[:, w] = production.mix(part ^ _POSITION[w])
        by = wide.view(np.uint8).reshape(len(part), bits // 8)  # little-endian bytes
        # How often (with what weight) each byte position holds each value; the bit
        # votes follow from the counts.
        wt = None if weights is None else np.repeat(weights[start : start + _CHUNK], bits // 8)
        counts += np.bincount(
            (by + rows[None, :]).ravel(), weights=wt, minlength=bits * 32
        ).reshape(bits // 8, 256)
    ones = counts @ _BYTE_BITS  # (bytes, 8): the weight of the hashes with each bit set
    total = float(len(h)) if weights is None else float(weights.sum())
    return np.packbits((2 * ones > total).ravel(), bitorder="little").tobytes()


def _check_bits(bits: int) -> None:
    if bits % 64 or not 64 <= bits <= 64 * len(_POSITION):
        raise InvalidArgumentError(f"bits must be a multiple of 64 up to 512, not {bits!r}")


def simhash_signature(hashes: np.ndarray, bits: int = 256) -> bytes:
    """A ``bits``-bit Simhash (a multiple of 64) of the set of shingles, every
    shingle weighing 1."""
    _check_bits(bits)
    return _votes(np.unique(hashes), None, bits)


def feature_simhash(weighted: Mapping[str, int], bits: int = 256) -> bytes:
    """A ``bits``-bit Simhash of weighted features (simindex.fingerprint.features:
    the very features and weights of the 64-bit fingerprint), word w of a
    feature's bits being mix(xxh64(feature) ^ w's constant), not the
    fingerprint's own bits: a longer, independent estimate of their weighted
    cosine."""
    _check_bits(bits)
    keys = list(weighted)
    h = np.fromiter((_xxh64(k.encode("utf-8", "surrogatepass")) for k in keys), _U64, len(keys))
    w = np.fromiter((weighted[k] for k in keys), np.float64, len(keys))
    return _votes(h, w, bits)


def simhash_similarity(a: bytes, b: bytes) -> float:
    """cos(pi * d / B): the estimated cosine of two texts' shingle sets."""
    if len(a) != len(b):
        raise InvalidArgumentError("signatures of different widths")
    d = (int.from_bytes(a, "little") ^ int.from_bytes(b, "little")).bit_count()
    return math.cos(math.pi * d / (8 * len(a)))


# --- b-bit one-permutation MinHash ---------------------------------------------------------


def unpack_values(sig: bytes, bins: int, bits: int) -> np.ndarray:
    """The b-bit values of a packed MinHash signature."""
    raw = np.frombuffer(sig, dtype=np.uint8)
    if bits == 8:
        return raw.astype(np.uint32)
    if 8 % bits == 0:
        per = 8 // bits
        shifts = np.arange(per, dtype=np.uint8) * np.uint8(bits)
        out = (raw[:, None] >> shifts) & np.uint8((1 << bits) - 1)
        return out.ravel()[:bins].astype(np.uint32)
    flat = np.unpackbits(raw, bitorder="little")
    weights = np.uint32(1) << np.arange(bits, dtype=np.uint32)
    return flat[: bins * bits].reshape(bins, bits).astype(np.uint32) @ weights


def minhash_signature(hashes: np.ndarray, bins: int = 128, bits: int = 4) -> bytes:
    """bins * bits / 8 bytes: see minhash_values (over the top 32 bits of each hash)."""
    return production.pack(minhash_values(top32(hashes), bins, bits), bits)


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
        return production.pack(minhash_values(np.frombuffer(x, "<u4"), bins, bits), bits)

    return minhash_similarity(sketch(a), sketch(b), bins, bits)


# --- the candidates, by name ---------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One verification signature: how it is made from shingle hashes, how two
    are compared, its size, and the exact similarity it estimates."""

    name: str
    n: int  # units a shingle
    nbytes: int  # bytes a document (the hybrid: at most)
    estimates: str  # "jaccard", "cosine" (of the shingle sets) or "tf-cosine" (features)
    make: Callable[[np.ndarray], bytes]
    similarity: Callable[[bytes, bytes], float]
    # Made from the fingerprint's weighted features (make_features) instead of shingles.
    make_features: Callable[[Mapping[str, int]], bytes] | None = None
    units: str = "chars"  # how CJK becomes units (see units_of)

    def of(self, text: str) -> bytes:
        """The signature of a text (raises EmptyTextError for a text with no unit)."""
        if self.make_features is not None:
            weighted = features(text, DEFAULT_CONFIG)
            if not weighted:
                raise EmptyTextError("the text has no word features")
            return self.make_features(weighted)
        return self.make(text_hashes(text, self.n, self.units))


def _simhash(bits: int, n: int) -> Signature:
    return Signature(
        f"simhash{bits}/{n}",
        n,
        bits // 8,
        "cosine",
        lambda h: simhash_signature(h, bits),
        simhash_similarity,
    )


def _tf_simhash(bits: int) -> Signature:
    def not_from_shingles(h: np.ndarray) -> bytes:
        raise InvalidArgumentError("made from weighted features: use make_features")

    return Signature(
        f"tf-simhash{bits}",
        1,
        bits // 8,
        "tf-cosine",
        not_from_shingles,
        simhash_similarity,
        lambda weighted: feature_simhash(weighted, bits),
    )


_SUFFIX = {"chars": "", "bigrams": "w", "content": "s"}


def _minhash(bins: int, bits: int, n: int, mode: str = "chars") -> Signature:
    return Signature(
        f"minhash{bins}x{bits}/{n}{_SUFFIX[mode]}",
        n,
        bins * bits // 8,
        "jaccard",
        lambda h: minhash_signature(h, bins, bits),
        lambda a, b: minhash_similarity(a, b, bins, bits),
        units=mode,
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


# What the benchmarks compare: name -> Signature. "/n": shingles of n units; "w":
# the units are words and CJK character bigrams, "s": words and CJK characters
# without stop words (else words and CJK characters, stop words kept).
SIGNATURES: dict[str, Signature] = {
    s.name: s
    for s in (
        _simhash(128, 3),
        _simhash(256, 3),
        _tf_simhash(128),
        _tf_simhash(256),
        _minhash(128, 4, 1),
        _minhash(256, 2, 1),
        _minhash(512, 1, 1),
        _minhash(256, 4, 1),
        _minhash(128, 4, 1, "content"),
        _minhash(128, 4, 1, "bigrams"),
        _minhash(256, 2, 1, "bigrams"),
        _minhash(512, 1, 1, "bigrams"),
        _minhash(256, 4, 1, "bigrams"),
        _minhash(128, 4, 2),
        _minhash(256, 2, 2),
        _minhash(64, 8, 3),
        _minhash(128, 4, 3),
        _minhash(256, 2, 3),
        _minhash(512, 1, 3),
        _minhash(256, 4, 3),
        _minhash(128, 4, 5),
        _hybrid(128, 4, 3),
        _hybrid(128, 4, 1),
    )
}


# --- the fingerprint and a signature in one pass -------------------------------------------


def fingerprint_and_signature(text: str, signature: Signature) -> tuple[int, bytes]:
    """simhash(text) and signature.of(text) at DEFAULT_CONFIG: the kept
    signature (minhash128x4/1) through simindex.signature's one pass, the
    others in two passes (what they would cost at best is their own hashing
    on top of the fingerprint)."""
    if signature.name == production.NAME:
        return production.fingerprint_and_signature(text, DEFAULT_CONFIG)
    return simhash(text, DEFAULT_CONFIG), signature.of(text)
