"""The verification signature: a copy-sensitive sketch stored beside each fingerprint.

The 64-bit fingerprint finds the candidates (the documents within k, through
the block indexes); the signature then says which of them are copies. It is
``minhash128x4/1``: 64 bytes, a b-bit one-permutation MinHash (128 bins of
4 bits; Li, Owen and Zhang 2012, with optimal densification, Shrivastava
2017; Li and Konig 2010 for the b bits) over the *set* of the text's units.
Two sets at Jaccard similarity J agree in a bin with probability about
J + (1 - J) / 16, so ``similarity`` estimates J from the bins that agree.

A short text's set is also kept exactly (``+set15``): a text of at most
SMALL = 15 distinct units has the 32-bit hashes of its units (the values its
sketch is built from), sorted, after the 64 bytes: 4 bytes a unit. Two such
texts are compared exactly, and one unit added, dropped or replaced between
two texts sharing at least two units counts as similar as ONE_UNIT = 15/17
at least, the Jaccard of one unit replaced in a text of 16 units (the fewest
whose similarity is estimated): at the default threshold, as short texts as
long ones, a one-word edit is a copy. The estimate is the wrong question for
three to eight units, where one unit replaced is a Jaccard of 0.5 to 0.78
(docs/decisions/short-texts.md). Two shared units, not one: "X11 utilities"
and "GNU utilities" (one word kept of two) are not copies, "Core Perl
modules" and "Extra Perl modules" (two of three) are, as five-word texts one
word apart always were. A text with an exact set compared with one
without (a longer text, or a row written before ``+set15``) is estimated.

A short text with CJK keeps its units in the text's order instead
(``+order``): distinct, in the order first seen, and one byte ORDERED
after them, so a signature tells which it holds (a row written before, or a
text without CJK: sorted, no byte). A Chinese character's meaning leans on
its place more than an English word's: 先保存再关闭 and 先关闭再保存 (save,
then close; close, then save) have the same characters. Two ordered sets
are compared as sequences: of the units they share, those in the same
order in both (their longest common subsequence) are kept, and each of
the others, moved, counts as two units changed (taken from one place, put
at another), so a Jaccard of ``kept = in order - out of order`` over the
units of both (a move costs what two replacements cost); and one unit
added, dropped or replaced in place (at most one edit between the two
sequences) among two kept or more counts as ONE_UNIT. So a character moved
or two words swapped is no copy of a short text, and a one-character edit
still is one. Where either side keeps its set sorted, the sets are
compared as sets (docs/decisions/short-texts.md). What the order of
distinct units cannot tell: a word moved whose characters the text has
before (the first places unchanged).

A longer text most of whose units are CJK characters says so (``+cjk``):
one byte CJK after its sketch. Two such texts are judged at a lower
threshold than the one asked (characters_threshold): the same share of
words edited changes a larger share of a text's units where a unit is a
character, not a word (docs/decisions/thresholds.md). A row written before
has the sketch alone and is judged at the threshold asked.

A text of more than SMALL and at most MIDDLE_UNITS = 256 distinct units
keeps its set too (``+set256``): the top 16 bits of its units' hashes,
sorted, once (2 bytes a unit), and one byte, MIDDLE, or MIDDLE_CJK where
most of its units are CJK characters (then judged as the byte CJK says).
Two such texts are compared by these sets: a Jaccard nearly exact (two
units share 16 bits one time in 65,536), where at these lengths the
sketch's 128 bins, 15 to 111 of them filled, estimate it within about
0.05 either side, so that a copy at 0.79 was missed at 0.78 about one time
in three (docs/decisions/middle-sets.md). A middle set against a sketch
without one (a longer text, or a row written before ``+set256``) is
estimated; its sketch gives it band keys as any longer text's.

A text's units are the tokens of ``tokenize.words(prepare(text), "chars")``
without the CJK bigrams: the words of spaced scripts (normalised,
punctuation dropped, stop words kept) and single CJK characters. Why these
and not shingles, and why this sketch, is measured in
docs/decisions/verification-signatures.md (bench/experiments/sketches.py
holds every variant tried). Each distinct unit is hashed with xxh64 (seed 0, UTF-8), the
fingerprint's feature hash, so ``fingerprint_and_signature`` hashes a token
once for both. Hashes and constants are fixed: a signature is the same in
every process, run and machine, which a stored one needs.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import xxhash

from simindex import fastmarks
from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import (
    FingerprintConfig,
    features_of_tokens,
    prepare,
    simhash_of_hashes,
    simhash_weighted,
    weighted,
)
from simindex.tables import run_positions
from simindex.tokenize import PIECE_CHARS, Shingling, count_cjk, has_cjk, pieces, words

# Stored in an index's settings: what its signatures are.
NAME = "minhash128x4/1+set15+order+cjk+set256"
# Earlier indexes' names: their signatures are the sketch alone, or the
# sketch and a short text's set sorted whatever its script, or a longer
# text's sketch alone whatever its script; opening one to write moves it to
# NAME (storage/migrate.py, the schema revisions 0006, 0010 and 0012: the
# rows stay as they are, each read as what it holds).
SKETCH_ONLY = "minhash128x4/1"
SORTED_SETS = "minhash128x4/1+set15"
ORDERED_SETS = "minhash128x4/1+set15+order"
CJK_SKETCHES = "minhash128x4/1+set15+order+cjk"
ORDERED = 1  # the byte after a short text's units kept in the text's order (CJK)
CJK = 2  # the byte after a longer text's sketch whose units are mostly CJK characters
MIDDLE = 3  # the byte after a middle-length text's set of 16-bit unit hashes
MIDDLE_CJK = 4  # ... of a text most of whose units are CJK characters
BINS = 128
BITS = 4
NBYTES = BINS * BITS // 8  # 64 bytes a document: the sketch
SMALL = 15  # texts of at most this many distinct units keep their set exactly
MIDDLE_UNITS = 256  # ... and up to this many, their 16-bit hashes (a Jaccard nearly exact)
ONE_UNIT = 15 / 17  # the least similarity of two small sets one unit apart
ONE_UNIT_SHARED = 2  # ... that share at least this many units
# The similarity a candidate needs, by default: chosen on bench/thresholds.py
# (copies edited with uniformly drawn words; negatives of every kind, each
# sharing under half of its 3-grams), where, when it was chosen (the sketch
# alone; middle sets have lowered both since: thresholds.txt), every
# negative kind stayed at or under 1% down to 0.72 (Chinese; English 0.71)
# and copies with 10% of their words edited gained 9-15 points over 0.82;
# 0.78 keeps a margin for English,
# whose false positives the independent evaluation reported in issue 39
# put at 0.6% there (docs/decisions/thresholds.md). Indexes made before keep
# their own.
DEFAULT_THRESHOLD = 0.78
# Two longer texts of CJK characters are judged at characters_threshold of
# the threshold asked: the same share of edits, counted in characters, an
# edited word taken to change CHARACTERS_AN_EDIT units. Chosen on
# bench/thresholds.py so that the default asks 0.7492 of them: there every
# Chinese negative kind stays under 1% down to 0.72, and copies with a
# sentence dropped or added gain about four points over 0.78
# (docs/decisions/thresholds.md).
CHARACTERS_AN_EDIT = 1.16


def check_threshold(value: object) -> float:
    """A threshold: a number from 0 (distance alone) to 1; else InvalidArgumentError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= float(value) <= 1.0  # NaN fails too
    ):
        raise InvalidArgumentError(f"threshold is a number from 0 to 1, not {value!r}")
    return float(value) + 0.0  # -0.0 is 0.0


def characters_threshold(threshold: float) -> float:
    """The threshold two longer texts of CJK characters are judged at, for a
    threshold asked: the same share of edits. A threshold t is reached by a
    text with a share e = (1 - t) / (1 + t) of its units replaced; where an
    edit changes CHARACTERS_AN_EDIT units, that share of edits replaces
    c * e of them, a Jaccard of (1 - c e) / (1 + c e). 1 stays 1 (equal
    sets), 0 stays 0 (distance alone), and so does every threshold up to
    (c - 1) / (c + 1), about 0.074; the default 0.78 gives 0.7492. (In
    Python floats: a query's candidates ask it one at a time; thresholds_for
    computes the same floats for arrays.)"""
    if threshold <= 0.0 or threshold >= 1.0:
        return threshold
    edited = CHARACTERS_AN_EDIT * (1.0 - threshold) / (1.0 + threshold)
    return max(0.0, (1.0 - edited) / (1.0 + edited))


def thresholds_for(threshold: np.ndarray | float, characters: np.ndarray | bool) -> np.ndarray:
    """The similarity pairs need (threshold_for of many): the threshold
    asked (one, or one a pair), or characters_threshold of it where
    ``characters`` (both sides longer texts of CJK characters): the same
    arithmetic, elementwise, so the same floats."""
    t = np.asarray(threshold, dtype=np.float64)
    edited = CHARACTERS_AN_EDIT * (1.0 - t) / (1.0 + t)
    lower = np.maximum(0.0, (1.0 - edited) / (1.0 + edited))
    lower = np.where((t <= 0.0) | (t >= 1.0), t, lower)
    return np.where(characters, lower, t)


# --- a signature's form ------------------------------------------------------------
#
# What a stored signature holds is told by its length and its last byte
# alone (is_signature checks the rest: the units' order and distinctness), by one
# table made here from the rule written once (_FORM_TABLE): every reader
# of a signature asks ``form`` or ``forms``.
NO_FORM = 0  # None, or bytes of no form
SKETCH = 1  # a longer text's sketch alone
SKETCH_CJK = 2  # ... and the byte CJK
EXACT = 3  # a short text's sketch and exact set, increasing
EXACT_ORDERED = 4  # ... in its text's order, and the byte ORDERED
MIDDLE_SET = 5  # a middle-length text's sketch and middle set, and the byte MIDDLE
MIDDLE_SET_CJK = 6  # ... and the byte MIDDLE_CJK
LONGER_FORMS = (SKETCH, SKETCH_CJK, MIDDLE_SET, MIDDLE_SET_CJK)  # band keys, no exact set
CJK_FORMS = (SKETCH_CJK, MIDDLE_SET_CJK)  # judged at characters_threshold
MIDDLE_FORMS = (MIDDLE_SET, MIDDLE_SET_CJK)
EXACT_FORMS = (EXACT, EXACT_ORDERED)
_MOST_EXTRA = max(4 * SMALL + 1, 2 * MIDDLE_UNITS + 1)  # bytes after the sketch, at most


def _among(group: tuple[int, ...]) -> np.ndarray:
    """Whether each form is in ``group``, by form: forms' arrays looked up in
    it (np.isin costs about 15 us a call, a query's one signature included)."""
    table = np.zeros(MIDDLE_SET_CJK + 1, dtype=bool)
    table[list(group)] = True
    return table


IS_LONGER, IS_CJK, IS_MIDDLE = map(_among, (LONGER_FORMS, CJK_FORMS, MIDDLE_FORMS))


def _form_table() -> bytes:
    """The form of every (bytes after the sketch, last byte), the first
    from 0 to _MOST_EXTRA: a byte at extra * 256 + last."""
    extra = np.arange(_MOST_EXTRA + 1)[:, None]
    last = np.arange(256)[None, :]
    odd = (extra >= 3) & (extra % 2 == 1)
    table = np.full((_MOST_EXTRA + 1, 256), NO_FORM, np.uint8)
    for rule, value in (
        ((extra == 0) & (last >= 0), SKETCH),
        ((extra == 1) & (last == CJK), SKETCH_CJK),
        ((extra >= 4) & (extra % 4 == 0) & (extra <= 4 * SMALL), EXACT),
        ((extra >= 5) & (extra % 4 == 1) & (extra <= 4 * SMALL + 1) & (last == ORDERED),
         EXACT_ORDERED),
        (odd & (extra <= 2 * MIDDLE_UNITS + 1) & (last == MIDDLE), MIDDLE_SET),
        (odd & (extra <= 2 * MIDDLE_UNITS + 1) & (last == MIDDLE_CJK), MIDDLE_SET_CJK),
    ):  # fmt: skip
        table[np.broadcast_to(rule, table.shape)] = value
    return table.tobytes()


_FORM_TABLE = _form_table()


def form(signature: object) -> int:
    """What a signature holds, by its length and last byte (see above): no
    form for anything but bytes (a value another program stored as text)."""
    if not isinstance(signature, (bytes, bytearray, memoryview)):
        return NO_FORM
    extra = len(signature) - NBYTES
    if extra == 0:
        return SKETCH
    if not 0 < extra <= _MOST_EXTRA:
        return NO_FORM
    return _FORM_TABLE[extra * 256 + signature[-1]]


def forms(signatures: Sequence[bytes | None]) -> np.ndarray:
    """``form`` of each signature, as a uint8 array."""
    return np.fromiter(map(form, signatures), np.uint8, count=len(signatures))


def of_characters(signature: object) -> bool:
    """Whether a signature is a longer text's of CJK characters (its sketch
    and the byte CJK, or its middle set and the byte MIDDLE_CJK)."""
    return form(signature) in CJK_FORMS


def longer(signature: object) -> bool:
    """Whether a signature is a longer text's (more than SMALL units: no
    short text's set, band keys instead): its sketch alone, or with the byte
    CJK, or with a middle set and its byte."""
    return form(signature) in LONGER_FORMS


def threshold_for(threshold: float, a: bytes | None, b: bytes | None) -> float:
    """The similarity a pair of signatures needs for a threshold asked: lower
    for two longer texts of CJK characters (characters_threshold)."""
    if of_characters(a) and of_characters(b):
        return characters_threshold(threshold)
    return threshold


def characters_many(signatures: Sequence[bytes | None]) -> np.ndarray:
    """of_characters of each signature, as a bool array."""
    return np.fromiter(map(of_characters, signatures), bool, count=len(signatures))


_xxh64 = xxhash.xxh64_intdigest
_U64 = np.uint64
_KEY_SALT = _U64(0x2545F4914F6CDD1D)  # set keys: a unit's 32 bits, salted, then mixed


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise over uint64 (wrapping arithmetic)."""
    x = x ^ (x >> _U64(30))
    x = x * _U64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> _U64(27))
    x = x * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


# --- units -----------------------------------------------------------------------------------


def _single(token: str) -> bool:
    """Whether a token of words(text, "chars") is a unit: anything but a CJK
    character bigram (a CJK run's tokens are all CJK, a word's none)."""
    return len(token) != 2 or not has_cjk(token)


def units_of(tokens: Sequence[str]) -> list[str]:
    """The units among ``words(text, cjk="chars")``'s tokens: its words and
    its single CJK characters (the CJK bigrams left out)."""
    if not has_cjk("".join(tokens)):
        return list(tokens)  # no CJK: every token is a word
    return [t for t in tokens if _single(t)]


def units(text: str) -> list[str]:
    """A text's units, in order (see units_of); the text is taken as it is
    (``prepare`` it first for an index's configuration)."""
    return units_of(words(text, "chars"))


def unit_hashes(keys: Sequence[str]) -> np.ndarray:
    """xxh64 (seed 0) of each unit's UTF-8 bytes, as simindex.fingerprint hashes a
    feature (lone surrogates passed through), in C loops."""
    try:
        return np.fromiter(map(_xxh64, map(str.encode, keys)), _U64, count=len(keys))
    except UnicodeEncodeError:
        return np.fromiter(
            (_xxh64(k.encode("utf-8", "surrogatepass")) for k in keys), _U64, count=len(keys)
        )


# --- b-bit one-permutation MinHash -----------------------------------------------------------

_PROBES = 32  # densification: bins tried for an empty bin before the nearest one to its right
_TABLES: dict[int, np.ndarray] = {}
_EMPTY = np.uint32(0xFFFFFFFF)


def _probes() -> np.ndarray:
    """The probe table of the sketch's BINS bins."""
    probes = _TABLES.get(BINS)
    if probes is None:
        probes = _TABLES[BINS] = _probe_table(BINS)
    return probes


def _probe_table(bins: int) -> np.ndarray:
    seeds = np.arange(bins * _PROBES, dtype=_U64) + _U64(0x5851F42D4C957F2D)
    return (mix(seeds) % _U64(bins)).astype(np.intp).reshape(bins, _PROBES)


def check_sketch(bins: int, bits: int) -> None:
    if bins < 8 or bins > 4096 or bins & (bins - 1):
        raise InvalidArgumentError(f"bins must be a power of two from 8 to 4096, not {bins!r}")
    if not 1 <= bits <= 16 or (bins * bits) % 8:
        raise InvalidArgumentError("bits must be 1-16 with bins * bits a whole byte count")


def minhash_values(h32: np.ndarray, bins: int = BINS, bits: int = BITS) -> np.ndarray:
    """The K = bins b-bit values of one-permutation MinHash over 32-bit
    hashes: bin = the top log2(K) bits, the bin's value = the low b bits of its
    smallest hash; an empty bin takes the value of the first non-empty bin on
    its probe sequence (optimal densification), else of the nearest non-empty
    bin to its right. (A hash of all ones counts as no hash: a 2**-32 chance;
    no hash at all gives every value 0.)"""
    if bins != BINS or bits != BITS:
        check_sketch(bins, bits)
    shift = np.uint32(32 - bins.bit_length() + 1)
    h32 = np.asarray(h32, dtype=np.uint32)
    mins = np.full(bins, _EMPTY, dtype=np.uint32)
    np.minimum.at(mins, h32 >> shift, h32)
    filled = mins != _EMPTY
    values = mins & np.uint32((1 << bits) - 1)
    if filled.all():
        return values
    if not filled.any():  # no hash, or only hashes of all ones (as the compiled pass)
        return np.zeros(bins, dtype=np.uint32)
    probes = _TABLES.get(bins)
    if probes is None:
        probes = _TABLES[bins] = _probe_table(bins)
    empty = np.flatnonzero(~filled)
    hit = filled[probes[empty]]
    first = hit.argmax(axis=1)
    source = probes[empty, first]
    lost = ~hit[np.arange(len(empty)), first]
    if lost.any():  # very sparse: the nearest non-empty bin to the right
        where = np.flatnonzero(filled)
        source[lost] = where[np.searchsorted(where, empty[lost]) % len(where)]
    values[empty] = values[source]
    return values


def pack(values: np.ndarray, bits: int) -> bytes:
    """b-bit values packed little-end first, 8 / b to a byte (or 2 bytes a value)."""
    if bits == 8:
        return values.astype(np.uint8).tobytes()
    if 8 % bits == 0:
        per = 8 // bits
        weights = np.uint32(1) << (np.arange(per, dtype=np.uint32) * np.uint32(bits))
        return (values.reshape(-1, per) @ weights).astype(np.uint8).tobytes()
    as_bits = (values[:, None] >> np.arange(bits, dtype=np.uint32)) & 1
    return np.packbits(as_bits.astype(np.uint8).ravel(), bitorder="little").tobytes()


def top32(hashes: np.ndarray) -> np.ndarray:
    """The top 32 bits of 64-bit unit hashes (what the sketch uses)."""
    return (hashes >> _U64(32)).astype(np.uint32)


def jaccard_from_agreement(agree: float, bits: int = BITS) -> float:
    """The Jaccard estimate from the fraction of bins that agree."""
    chance = 2.0**-bits
    return min(1.0, max(0.0, (agree - chance) / (1.0 - chance)))


_LOW_NIBBLES = int.from_bytes(b"\x11" * NBYTES, "little")
# The estimate for each number of differing bins (0..BINS): a table, so that
# every comparison gives exactly the same float for the same bins.
_ESTIMATES = tuple(jaccard_from_agreement((BINS - d) / BINS) for d in range(BINS + 1))


def _differing(x: int) -> int:
    """The 4-bit bins in which an XOR of two signatures (as an int) is not 0."""
    return ((x | x >> 1 | x >> 2 | x >> 3) & _LOW_NIBBLES).bit_count()


# What a signature is, as the errors about one say it.
SIGNATURE_FORM = (
    f"{NBYTES} bytes (a sketch), then nothing, the byte {CJK}, an exact set of 1 to "
    f"{SMALL} 32-bit hashes, increasing, or distinct and the byte {ORDERED}, or 1 to "
    f"{MIDDLE_UNITS} 16-bit hashes, increasing, and the byte {MIDDLE} or {MIDDLE_CJK}"
)


def is_signature(value: object) -> bool:
    """Whether a stored value is a signature: the sketch's NBYTES bytes,
    optionally followed by the byte CJK, by an exact set of 1 to SMALL
    32-bit unit hashes (little-endian): strictly increasing, or distinct and
    followed by the byte ORDERED (in the text's order), or by a middle set
    of 1 to MIDDLE_UNITS 16-bit ones, strictly increasing, and the byte
    MIDDLE or MIDDLE_CJK."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return False
    kind = form(value)
    if kind in (SKETCH, SKETCH_CJK):
        return True
    if kind in MIDDLE_FORMS:
        middle = _middle_values(value)
        assert middle is not None  # (of a middle form)
        return bool((middle[1:] > middle[:-1]).all())
    if kind not in EXACT_FORMS:
        return False
    hashes = struct.unpack_from(f"<{(len(value) - NBYTES) // 4}I", value, NBYTES)
    if kind == EXACT_ORDERED:
        return len(set(hashes)) == len(hashes)
    return all(a < b for a, b in zip(hashes, hashes[1:], strict=False))


# An exact set as read: its unit hashes in the order stored, and whether
# that is the text's order (see the module's text).
Exact = tuple[tuple[int, ...], bool]


def _exact(signature: bytes) -> Exact | None:
    """The exact set a signature keeps (a short text's), else None."""
    kind = form(signature)
    if kind not in EXACT_FORMS:
        return None
    units = (len(signature) - NBYTES) // 4
    return struct.unpack_from(f"<{units}I", signature, NBYTES), kind == EXACT_ORDERED


def exact_set(signature: bytes) -> frozenset[int] | None:
    """The unit hashes a signature keeps exactly (a short text's), else None."""
    found = _exact(signature)
    return None if found is None else frozenset(found[0])


def exact_many(signatures: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact sets of many signatures as arrays, for one_unit_many:
    (units: (n, SMALL) uint32 in the order stored, padded with 0; sizes: 0
    for none; ordered: kept in the text's order)."""
    kinds = [form(s) for s in signatures]
    pairs = zip(signatures, kinds, strict=True)
    sizes = np.array([(len(s) - NBYTES) // 4 if k in EXACT_FORMS else 0 for s, k in pairs], np.intp)
    ordered = np.array([k == EXACT_ORDERED for k in kinds], dtype=bool)
    sets = np.zeros((len(signatures), SMALL), dtype=np.uint32)
    if sizes.any():
        filled = np.arange(SMALL)[None, :] < sizes[:, None]
        ends = (NBYTES + 4 * sizes).tolist()
        blob = b"".join(s[NBYTES:end] for s, end in zip(signatures, ends, strict=True))
        sets[filled] = np.frombuffer(blob, dtype="<u4")
    return sets, sizes, ordered


# --- short texts: the one-unit rule and its keys ---------------------------------------------
#
# The rule, written here once and asked by every way of answering (queries,
# all pairs, streaming dedup, Spark, explain; tests/test_structure.py checks
# that no other module uses its numbers): two exact sets sharing at least
# ONE_UNIT_SHARED units, with one unit added, dropped or replaced (or none),
# count as at least ONE_UNIT similar (see the module's text).
#
# A one-word edit of a six-word text moves its 64-bit fingerprint by about a
# sixth of its bits, past any k the block indexes answer, so two short texts
# at most one unit apart are found another way: by a key of their sets. A
# set's key is the XOR of its units' mixed hashes; a set of n units is
# stored under its own key (from ONE_UNIT_SHARED units: two) and under the
# key of each of its n subsets one unit smaller (from ONE_UNIT_SHARED + 1). Two sets
# one unit apart then share a key: one added or dropped, the larger's
# subset is the smaller; one replaced, both have the set of their shared
# units among their subsets; the same set, its own key. A shared key is a
# candidate only (64-bit keys may collide): one_unit decides.
KEYED_BYTES = NBYTES + 4 * ONE_UNIT_SHARED  # the shortest signature with set keys


def _in_order(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many units two sequences of distinct units share in the same
    order: their longest common subsequence (the longest increasing run of
    b's positions of a's units, by patience sorting)."""
    where = {u: i for i, u in enumerate(b)}
    tails: list[int] = []
    for u in a:
        j = where.get(u)
        if j is not None:
            k = bisect_left(tails, j)
            if k == len(tails):
                tails.append(j)
            else:
                tails[k] = j
    return len(tails)


def _one_edit(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether two sequences are at most one unit added, dropped or
    replaced in place apart (an edit distance of at most 1)."""
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) <= 1
    if abs(len(a) - len(b)) != 1:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    p = 0
    while p < len(short) and short[p] == long[p]:
        p += 1
    return short[p:] == long[p + 1 :]


def _compare_sets(a: Exact, b: Exact) -> tuple[bool, float]:
    """Whether two exact sets are at most one unit apart among at least
    ONE_UNIT_SHARED shared units, and their similarity: their Jaccard, at
    least ONE_UNIT where they are. Two kept in the text's order: the units
    shared in order are the shared ones, less one for each shared unit out
    of order, and one apart is one edit apart (see the module's text)."""
    (ua, ordered_a), (ub, ordered_b) = a, b
    kept = len(set(ua).intersection(ub))
    close = kept >= ONE_UNIT_SHARED and max(len(ua), len(ub)) - kept <= 1
    if ordered_a and ordered_b and kept:
        in_order = _in_order(ua, ub)
        close = close and in_order >= ONE_UNIT_SHARED and _one_edit(ua, ub)
        kept = max(2 * in_order - kept, 0)  # each shared unit out of order: two changed
    jaccard = kept / (len(ua) + len(ub) - kept)
    return close, max(jaccard, ONE_UNIT) if close else jaccard


def one_unit_many(
    sets_a: np.ndarray,
    sizes_a: np.ndarray,
    ordered_a: np.ndarray,
    sets_b: np.ndarray,
    sizes_b: np.ndarray,
    ordered_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """_compare_sets of many pairs of exact sets at once (row i of the a
    arrays with row i of the b arrays, as exact_many gives them): (whether
    one unit apart, similarity), the same answers and floats
    (tests/test_signature.py compares every case)."""
    column = np.arange(SMALL)
    valid_a = column[None, :] < sizes_a[:, None]
    valid_b = column[None, :] < sizes_b[:, None]
    same = (sets_a[:, :, None] == sets_b[:, None, :]) & valid_a[:, :, None] & valid_b[:, None, :]
    kept = same.sum(axis=(1, 2))
    close = (kept >= ONE_UNIT_SHARED) & (np.maximum(sizes_a, sizes_b) - kept <= 1)
    both = np.flatnonzero(ordered_a & ordered_b & (kept > 0))
    if both.size:
        in_order = _in_order_many(same[both], int(sizes_a[both].max()))
        near = close[both]  # one unit apart as sets: are they one edit apart?
        if near.any():
            at = both[near]
            one_edit = _one_edit_many(sets_a[at], sizes_a[at], sets_b[at], sizes_b[at])
            close[at] = (in_order[near] >= ONE_UNIT_SHARED) & one_edit
        kept[both] = np.maximum(2 * in_order - kept[both], 0)
    jaccard = kept / (sizes_a + sizes_b - kept)
    return close, np.where(close, np.maximum(jaccard, ONE_UNIT), jaccard)


def _in_order_many(same: np.ndarray, largest: int) -> np.ndarray:
    """_in_order of many pairs from their (pairs, SMALL, SMALL) matches of
    units (a's units of at most ``largest``): the longest increasing run of
    b's positions, by dynamic programming over a's units."""
    has = np.asarray(same.any(axis=2))
    position = same.argmax(axis=2)
    best = np.zeros(has.shape, dtype=np.intp)
    for i in range(largest):
        here = has[:, i]
        if not here.any():
            continue
        if i:
            before = has[:, :i] & (position[:, :i] < position[:, i : i + 1])
            best[:, i] = np.where(here, np.where(before, best[:, :i], 0).max(axis=1) + 1, 0)
        else:
            best[:, 0] = here
    return best.max(axis=1)


def _one_edit_many(
    a: np.ndarray, size_a: np.ndarray, b: np.ndarray, size_b: np.ndarray
) -> np.ndarray:
    """_one_edit of many pairs of sequences (padded rows and their sizes)."""
    column = np.arange(SMALL)[None, :]
    equal = size_a == size_b
    replaced = ((a != b) & (column < size_a[:, None])).sum(axis=1) <= 1
    a_shorter = (size_a < size_b)[:, None]
    short, long = np.where(a_shorter, a, b), np.where(a_shorter, b, a)
    n = np.minimum(size_a, size_b)[:, None]
    # the first place the shorter differs from the longer, and whether the
    # rest of it is the longer's rest one unit on
    first = np.cumprod((short == long) & (column < n), axis=1).sum(axis=1)
    shifted = np.zeros_like(long)
    shifted[:, :-1] = long[:, 1:]
    rest = ~((short != shifted) & (column >= first[:, None]) & (column < n)).any(axis=1)
    return np.where(equal, replaced, (np.abs(size_a - size_b) == 1) & rest)


def one_unit(a: bytes | None, b: bytes | None) -> float | None:
    """The similarity of two signatures whose exact sets are at most one unit
    apart (one added, dropped or replaced, or none) among at least
    ONE_UNIT_SHARED shared units, the pairs found at any fingerprint distance
    (their set keys meet); None for any other pair (a side without a set)."""
    sa = None if a is None else _exact(a)
    sb = None if b is None else _exact(b)
    if sa is None or sb is None:
        return None
    close, value = _compare_sets(sa, sb)
    return value if close else None


def one_unit_apart(a: bytes, b: bytes) -> bool:
    """one_unit's question alone (the per-document reference dedup of
    tests/dedup_reference.py asks it; see one_unit)."""
    return one_unit(a, b) is not None


def one_unit_reaches(largest: int, threshold: float) -> bool:
    """Whether two different exact sets one unit apart, the larger of
    ``largest`` units, can be similar enough for ``threshold``: they count
    as at least ONE_UNIT similar, and their Jaccard is at most
    (largest - 1) / largest (one unit added; one replaced gives less). The
    readers skip the pairs of sets that cannot."""
    return threshold <= ONE_UNIT or (largest - 1) / largest >= threshold


def keys_of_sets(signatures: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """The set keys (signed 64-bit, as stored) of many signatures at once:
    (keys, owner), owner the position of the signature each key is of; a
    set's own key first, then one for each unit left out, in the set's
    order. None for a signature without a set, or of fewer than
    ONE_UNIT_SHARED units (see above)."""
    sizes = [(len(s) - NBYTES) // 4 if form(s) in EXACT_FORMS else 0 for s in signatures]  # type: ignore[arg-type]
    at = [i for i, size in enumerate(sizes) if size >= ONE_UNIT_SHARED]
    if not at:
        return np.zeros(0, np.int64), np.zeros(0, np.intp)
    blob = b"".join(
        bytes(signatures[i])[NBYTES : NBYTES + 4 * sizes[i]]  # type: ignore[arg-type]
        for i in at
    )
    mixed = mix(np.frombuffer(blob, dtype="<u4").astype(_U64) + _KEY_SALT).view(np.int64)
    if len(at) == 1:  # one set (a query's): the same keys without the grouping's calls
        own1 = np.bitwise_xor.reduce(mixed)
        keys1 = np.concatenate(([own1], mixed ^ own1)) if len(mixed) > ONE_UNIT_SHARED else [own1]
        return np.asarray(keys1, np.int64), np.full(len(keys1), at[0], np.intp)
    n = np.array([sizes[i] for i in at], dtype=np.intp)
    starts = np.cumsum(n) - n
    own = np.bitwise_xor.reduceat(mixed, starts)
    keys = np.insert(mixed ^ np.repeat(own, n), starts, own)
    owner = np.repeat(np.array(at, dtype=np.intp), n + 1)
    if n.min() == ONE_UNIT_SHARED:  # sets of ONE_UNIT_SHARED units: their own key alone
        keep = np.insert(np.repeat(n > ONE_UNIT_SHARED, n), starts, True)
        keys, owner = keys[keep], owner[keep]
    return keys, owner


def set_keys(signature: bytes) -> list[int]:
    """keys_of_sets of one signature, as a list."""
    return keys_of_sets([signature])[0].tolist()


# --- longer texts: bands of the sketch, a second way in ----------------------------------
#
# A copy with a tenth of its words edited moves its fingerprint past k = 8
# about one time in four, while its sketch still agrees in most bins. So a
# signature without an exact set (a text of more than SMALL units) is also
# stored under BANDS keys, one for each run of BAND_BYTES bytes (ten
# four-bit bins) of its sketch: the run's bytes and its place, salted, then
# mixed (the last eight bins are in no band). Two such texts share a key
# when one run is equal in both (MinHash LSH: Indyk and Motwani 1998;
# Broder 1997), and are then candidates at any distance, verified at the
# threshold like every other candidate. Measured in
# bench/experiments/bands.py (docs/decisions/signature-bands.md): of copies
# with up to 10% of their words edited, found 89% -> 97% (Chinese), 88% ->
# 99% (English); a random pair shares a band with probability about
# 12 p^10, p = J + (1 - J)/16 the chance that a bin agrees. Twelve bands of
# ten bins since schema revision 0013 (ten bands of twelve before: where a
# copy at a Jaccard of 0.8 has no band equal 42% of the time, these 20%).
BANDS = 12
BAND_BYTES = 5  # ten bins of four bits
_BAND_SALT = _U64(0x9E3779B97F4A7C15)  # band keys: the run's 40 bits and its place, salted, mixed


def keys_of_bands(signatures: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """The band keys (signed 64-bit, as stored) of many signatures at once:
    (keys, owner), owner the position of the signature each key is of, BANDS
    keys for each longer text's signature (``longer``: a middle set's too),
    in band order; none for a None or a short text's (those have set keys)."""
    at = [i for i, s in enumerate(signatures) if longer(s)]
    if not at:
        return np.zeros(0, np.int64), np.zeros(0, np.intp)
    blob = b"".join(bytes(signatures[i])[:NBYTES] for i in at)  # type: ignore[arg-type]
    keys = _band_keys(np.frombuffer(blob, np.uint8).reshape(len(at), NBYTES))
    return keys.ravel(), np.repeat(np.array(at, dtype=np.intp), BANDS)


def band_keys_of_words(words: np.ndarray) -> np.ndarray:
    """The band keys of sketches held as words (as_words' matrix): (n, BANDS)
    signed 64-bit keys, row by row, the keys keys_of_bands gives their bytes."""
    sketches = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
    return _band_keys(sketches.reshape(len(words), NBYTES))


def _band_keys(sketches: np.ndarray) -> np.ndarray:
    """(n, NBYTES) uint8 sketches -> their (n, BANDS) band keys: each run of
    BAND_BYTES with its place, salted and mixed."""
    n = len(sketches)
    runs = np.zeros((n, BANDS, 8), np.uint8)
    runs[:, :, :BAND_BYTES] = sketches[:, : BANDS * BAND_BYTES].reshape(n, BANDS, BAND_BYTES)
    place = np.arange(BANDS, dtype=_U64) << _U64(8 * BAND_BYTES)
    values = runs.view("<u8").reshape(n, BANDS) | place
    return mix(values + _BAND_SALT).view(np.int64)


def bands_meet(a: bytes, b: bytes) -> bool:
    """Whether two signatures without an exact set have one band equal
    (their band keys meet; see keys_of_bands)."""
    if not (longer(a) and longer(b)):
        return False
    step = BAND_BYTES
    return any(a[i : i + step] == b[i : i + step] for i in range(0, BANDS * step, step))


def bands_meet_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bands_meet of each row of a with the same row of b: (n, NBYTES) uint8
    sketches, each row of a signature without an exact set."""
    size = BANDS * BAND_BYTES
    same = a[:, :size] == b[:, :size]
    return same.reshape(len(a), BANDS, BAND_BYTES).all(axis=2).any(axis=1)


def keys_of(signatures: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """Every key of many signatures: a short text's set keys (keys_of_sets),
    a longer text's band keys (keys_of_bands); (keys, owner) as those give.
    Two signatures whose keys meet are candidates at any distance, which
    ``meets`` then judges."""
    sets, set_owner = keys_of_sets(signatures)
    bands, band_owner = keys_of_bands(signatures)
    if not len(bands):
        return sets, set_owner
    if not len(sets):
        return bands, band_owner
    return np.concatenate([sets, bands]), np.concatenate([set_owner, band_owner])


def keys_of_one(signature: bytes) -> list[int]:
    """keys_of of one signature, as a list."""
    return keys_of([signature])[0].tolist()


def meets(a: bytes | None, b: bytes | None) -> float | None:
    """The rule of the candidates found by keys, at any fingerprint distance,
    asked by every way of answering: the similarity of two signatures whose
    exact sets are at most one unit apart (one_unit), or, neither keeping a
    set, that have one band of their sketches equal (bands_meet); None for
    any other pair (whose keys met by chance, if they did)."""
    if a is None or b is None:
        return None
    if longer(a) and longer(b):
        return similarity(a, b) if bands_meet(a, b) else None
    return one_unit(a, b)


def similarity(a: bytes, b: bytes) -> float:
    """The Jaccard similarity (0 to 1) of the unit sets behind two
    signatures: exact where both keep their set (see the module's text),
    else estimated from the share of their 128 four-bit bins that agree,
    less chance agreement. Computed on Python ints (about a microsecond)."""
    if len(a) != NBYTES or len(b) != NBYTES:
        if not is_signature(a) or not is_signature(b):
            raise InvalidArgumentError(
                f"a signature is {SIGNATURE_FORM}; not {len(a)} and {len(b)} bytes"
            )
        sa, sb = _exact(a), _exact(b)
        if sa is not None and sb is not None:
            return _compare_sets(sa, sb)[1]
        ma, mb = _middle_values(a), _middle_values(b)
        if ma is not None and mb is not None:
            return _jaccard(ma, mb)
        a, b = a[:NBYTES], b[:NBYTES]
    return _ESTIMATES[_differing(int.from_bytes(a, "little") ^ int.from_bytes(b, "little"))]


def middle_set(signature: bytes) -> frozenset[int] | None:
    """The 16-bit unit hashes a middle-length text's signature keeps, else None."""
    values = _middle_values(signature)
    return None if values is None else frozenset(values.tolist())


def _middle_values(signature: bytes | bytearray | memoryview) -> np.ndarray | None:
    """The values of a middle set as stored (a view of the bytes), else None."""
    if form(signature) not in MIDDLE_FORMS:
        return None
    return np.frombuffer(signature, "<u2", (len(signature) - NBYTES) // 2, NBYTES)


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """The Jaccard of two middle sets' values (each distinct)."""
    shared = np.intersect1d(a, b, assume_unique=True).size
    return shared / (len(a) + len(b) - shared)


def similarity_to(signature: bytes) -> Callable[[bytes], float]:
    """similarity(signature, other) as a function of other, for comparing one
    query with many stored signatures (the query read into an int once)."""
    checked = check_signature(signature)
    assert checked is not None
    query = int.from_bytes(checked[:NBYTES], "little")
    mine = _exact(checked)
    middle = _middle_values(checked)
    estimates, low, from_bytes, size = _ESTIMATES, _LOW_NIBBLES, int.from_bytes, NBYTES

    def estimate(other: bytes) -> float:
        if len(other) != size:
            theirs = _exact(other)
            if mine is not None and theirs is not None:
                return _compare_sets(mine, theirs)[1]
            if middle is not None and (their_middle := _middle_values(other)) is not None:
                return _jaccard(middle, their_middle)
            other = other[:size]
        x = query ^ from_bytes(other, "little")
        return estimates[((x | x >> 1 | x >> 2 | x >> 3) & low).bit_count()]

    return estimate


# Held in memory (a snapshot's signatures): each as NBYTES // 8 little-endian
# 64-bit words, a row of a matrix, compared many at once.
WORDS = NBYTES // 8
_LOW_WORD = np.uint64(0x1111_1111_1111_1111)
_ESTIMATE_ARRAY = np.array(_ESTIMATES, dtype=np.float64)


class Sketches(NamedTuple):
    """Signatures held as words (as_words), row by row."""

    words: np.ndarray  # (n, WORDS) uint64: the sketches (zeros where absent)
    present: np.ndarray  # bool: whether the row is a longer text's (words held)
    characters: np.ndarray  # bool: whether it is a longer text's of CJK characters
    # bool: whether it keeps a middle set: two such rows are judged by their
    # sets (on their rows; in memory by a bound of them, middle_bounds), not
    # by the words; any other pair of present rows by the words alone
    middle: np.ndarray
    # (n, MAP_WORDS) uint64: a middle set's map (middle_maps; zeros where none)
    maps: np.ndarray


def as_words(signatures: Sequence[bytes | None]) -> Sketches:
    """The signatures as a (n, WORDS) matrix of uint64, which of them are a
    longer text's (``longer``: their sketches held), which of CJK
    characters (of_characters), and which keep a middle set: a None, a
    signature that keeps a short text's set (judged from its bytes, see
    similarity) or a blob of another length is a row of zeros marked absent
    (not judged in memory)."""
    kinds = forms(signatures)
    present = IS_LONGER[kinds]
    held = [s if p else None for s, p in zip(signatures, present.tolist(), strict=True)]
    characters = IS_CJK[kinds]
    middle = IS_MIDDLE[kinds]
    zero = bytes(NBYTES)
    blob = b"".join(zero if s is None else bytes(s[:NBYTES]) for s in held)
    words = np.frombuffer(blob, dtype="<u8").reshape(-1, WORDS).astype(np.uint64)
    return Sketches(words, present, characters, middle, middle_maps(middle_many(held)))


# A middle set held in memory as a map of MAP_BITS bits (a value v sets bit
# v mod MAP_BITS): a unit of one set whose bit the other's map lacks is not
# in the other, so the units of a query's set whose bits a held map has
# bound the units they share from above, and the bits set bound the held
# set's size from below: a bound on their Jaccard that never falls under
# it (middle_bounds). Held rows whose bound is under the threshold are not
# read (matching.unverified). A query's set is counted bit by bit in
# layers (middle_layers: layer k the bits at least k + 1 of its units
# set), so the units whose bits a map has are the layers' bits it has: a
# few popcounts a pair.
MAP_BITS = 512
MAP_WORDS = MAP_BITS // 64


_MAPS_AT_ONCE = 1 << 13  # middle_maps: rows mapped at once (their bits: 512 bytes a row)


def middle_maps(sets: Middle) -> np.ndarray:
    """The (n, MAP_WORDS) uint64 maps of middle sets (see MAP_BITS), made
    _MAPS_AT_ONCE rows at a time (memory beside the maps: bounded)."""
    n = len(sets.sizes)
    maps = np.zeros((n, MAP_WORDS), dtype=np.uint64)
    for start in range(0, n, _MAPS_AT_ONCE):
        sizes = sets.sizes[start : start + _MAPS_AT_ONCE]
        if not sizes.any():
            continue
        owner = np.repeat(np.arange(len(sizes)), sizes)
        values = sets.values[run_positions(sets.lo[start : start + len(sizes)], sizes)]
        bits = np.zeros((len(sizes), MAP_BITS), dtype=bool)
        bits[owner, values.astype(np.intp) & (MAP_BITS - 1)] = True
        maps[start : start + len(sizes)] = _packed(bits)
    return maps


def _bit_counts(sets: Middle) -> np.ndarray:
    """(n, MAP_BITS): how many of each set's values fall on each bit."""
    owner = np.repeat(np.arange(len(sets.sizes)), sets.sizes)
    at = owner * MAP_BITS + (sets.values.astype(np.int64) & (MAP_BITS - 1))
    counts = np.bincount(at, minlength=len(sets.sizes) * MAP_BITS)
    return counts.reshape(len(sets.sizes), MAP_BITS)


def _packed(bits: np.ndarray) -> np.ndarray:
    """(..., MAP_BITS) bools as (..., MAP_WORDS) uint64 words, bit b of word w
    the bool at w * 64 + b."""
    packed = np.packbits(bits, axis=-1, bitorder="little")  # (bit b of byte k: 8 k + b)
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64)


def middle_layers(sets: Middle) -> np.ndarray:
    """(n, layers, MAP_WORDS) uint64: layer k of each set, the bits at least
    k + 1 of its values set (see MAP_BITS; for a query's few sets: 4 KB a
    set while they are counted)."""
    counts = _bit_counts(sets)
    deepest = max(int(counts.max(initial=0)), 1)
    return _packed(counts[:, None, :] > np.arange(deepest)[None, :, None])


def middle_bounds(layers: np.ndarray, i: np.ndarray, maps: np.ndarray, j: np.ndarray) -> np.ndarray:
    """For each pair (the set behind layers[i[n]], the one behind
    maps[j[n]]), each keeping a middle set: a bound that their Jaccard
    never exceeds (see MAP_BITS)."""
    mine, theirs = layers[i], maps[j][:, None, :]
    shared = np.bitwise_count(mine & theirs).sum(axis=(1, 2), dtype=np.int64)
    size = np.bitwise_count(mine).sum(axis=(1, 2), dtype=np.int64)
    least = np.bitwise_count(theirs).sum(axis=(1, 2), dtype=np.int64)
    return shared / np.maximum(size + least - shared, 1)


def held_signature(sketches: Sketches, at: int) -> bytes:
    """The signature of row ``at`` of held sketches (present there, keeping
    no middle set): what as_words made it from."""
    held = sketches.words[at].astype("<u8").tobytes()
    return held + bytes((CJK,)) if sketches.characters[at] else held


class Middle(NamedTuple):
    """The middle sets of many signatures (middle_many): signature n's
    16-bit unit hashes are values[lo[n] : lo[n] + sizes[n]] (size 0: none)."""

    values: np.ndarray  # uint16
    lo: np.ndarray  # int64
    sizes: np.ndarray  # int64


def middle_many(signatures: Sequence[bytes | None]) -> Middle:
    """The middle sets of many signatures, in one array of values."""
    parts = [s[NBYTES:-1] if form(s) in MIDDLE_FORMS else b"" for s in signatures]  # type: ignore[index]
    sizes = np.array([len(p) // 2 for p in parts], dtype=np.int64)
    lo = np.cumsum(sizes) - sizes
    return Middle(np.frombuffer(b"".join(parts), dtype="<u2").astype(np.uint16), lo, sizes)


_MARKED_ROWS = 256  # middle_similarities: sets marked at once (64 KiB each: 16 MiB)
_LOOKED_UP = 1 << 22  # ... and the values looked up at once (memory)


def middle_similarities(a: Middle, i: np.ndarray, b: Middle, j: np.ndarray) -> np.ndarray:
    """The Jaccard of the middle sets of each pair (a's i[n], b's j[n]), each
    keeping one: the same floats as similarity. The pairs taken in order of
    a's set: a few hundred of those at a time marked in a table of the 16-bit
    values (each once for all its pairs), and each b set's values looked up
    in its a set's row; memory bounded however many pairs."""
    n = len(i)
    order = np.argsort(i, kind="stable")
    i, j = i[order], j[order]
    size_a, size_b = a.sizes[i], b.sizes[j]
    first = np.ones(n, dtype=bool)  # the first pair of its a set
    first[1:] = i[1:] != i[:-1]
    rank = np.cumsum(first) - 1
    looked = np.cumsum(size_b) - size_b  # b values before each pair
    marks = np.zeros((min(_MARKED_ROWS, n), 1 << 16), dtype=bool)
    shared = np.zeros(n, dtype=np.int64)
    start = 0
    while start < n:
        stop = min(
            int(np.searchsorted(rank, rank[start] + _MARKED_ROWS)),
            int(np.searchsorted(looked, looked[start] + _LOOKED_UP)),
        )
        stop = max(stop, start + 1)
        row = rank[start:stop] - rank[start]
        head = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])  # each a set once
        sets = i[start:stop][head]
        rows = np.repeat(row[head], a.sizes[sets])
        values = a.values[run_positions(a.lo[sets], a.sizes[sets])]
        marks[rows, values] = True
        sizes = size_b[start:stop]
        pair = np.repeat(np.arange(stop - start), sizes)
        found = marks[row[pair], b.values[run_positions(b.lo[j[start:stop]], sizes)]]
        shared[start:stop] = np.bincount(pair[found], minlength=stop - start)
        marks[rows, values] = False
        start = stop
    out = np.empty(n, dtype=np.float64)
    out[order] = shared / (size_a + size_b - shared)
    return out


def estimates(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """similarity() of each row of a with the same row of b (word matrices, see
    as_words), exactly the same floats: the bins that differ, counted at once."""
    x = a ^ b
    x = (x | x >> np.uint64(1) | x >> np.uint64(2) | x >> np.uint64(3)) & _LOW_WORD
    return _ESTIMATE_ARRAY[np.bitwise_count(x).sum(axis=1, dtype=np.intp)]


# --- many pairs judged at once (streaming dedup, all pairs) -----------------------------


class Marks(NamedTuple):
    """Many fingerprints and their signatures as arrays, for judging many
    pairs at once: the same answers and floats as ``meets``, ``similarity``
    and ``threshold_for`` give each pair (tests/test_signature.py)."""

    fps: np.ndarray  # uint64
    words: np.ndarray  # the signatures' sketches, (n, WORDS) uint64
    sets: np.ndarray  # their exact sets (short texts), (n, SMALL) uint32, padded with 0
    sizes: np.ndarray  # the sizes of those sets (0: none)
    ordered: np.ndarray  # whether each is in its text's order (exact_many)
    characters: np.ndarray  # whether each is a longer text's of CJK characters
    middle: Middle  # their middle sets (middle_many)


def marks_of(fps: Sequence[int] | np.ndarray, signatures: Sequence[bytes]) -> Marks:
    """The Marks of fingerprints (unsigned) and their signatures (each a
    signature: read back checked, or made here)."""
    sketches = b"".join(s[:NBYTES] for s in signatures)
    return Marks(
        np.asarray(fps, dtype=np.uint64),
        np.frombuffer(sketches, dtype="<u8").reshape(-1, WORDS).astype(np.uint64),
        *exact_many(signatures),
        characters_many(signatures),
        middle_many(signatures),
    )


def needed(threshold: float, a: Marks, i: np.ndarray, b: Marks, j: np.ndarray) -> np.ndarray:
    """threshold_for of each pair (a[i], b[j])."""
    return thresholds_for(threshold, a.characters[i] & b.characters[j])


def similarities(a: Marks, i: np.ndarray, b: Marks, j: np.ndarray) -> np.ndarray:
    """similarity of each pair (a[i], b[j]): the same floats."""
    out = estimates(a.words[i], b.words[j])
    both = (a.sizes[i] > 0) & (b.sizes[j] > 0)
    if both.any():
        out[both] = _one_unit_of(a, i[both], b, j[both])[1]
    middle = (a.middle.sizes[i] > 0) & (b.middle.sizes[j] > 0)
    if middle.any():
        out[middle] = middle_similarities(a.middle, i[middle], b.middle, j[middle])
    return out


def meets_many(a: Marks, i: np.ndarray, b: Marks, j: np.ndarray) -> np.ndarray:
    """Whether each pair (a[i], b[j]) found by their keys meets by the rule
    (``meets`` is not None): exact sets one unit apart where both keep one
    (one_unit_many), one band of the sketches equal where neither does
    (bands_meet_many); never one of each."""
    sets_a, sets_b = a.sizes[i] > 0, b.sizes[j] > 0
    out = np.zeros(len(i), dtype=bool)
    both = sets_a & sets_b
    if both.any():
        out[both] = _one_unit_of(a, i[both], b, j[both])[0]
    neither = ~(sets_a | sets_b)
    if neither.any():
        out[neither] = bands_meet_many(_sketches_of(a, i[neither]), _sketches_of(b, j[neither]))
    return out


def _sketches_of(a: Marks, i: np.ndarray) -> np.ndarray:
    """The sketches of a[i], their NBYTES bytes as (n, NBYTES) uint8 rows."""
    return np.ascontiguousarray(a.words[i], dtype="<u8").view(np.uint8)


def _one_unit_of(a: Marks, i: np.ndarray, b: Marks, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """one_unit_many of the exact sets of a[i] and b[j]: whether one unit
    apart, and their similarity."""
    return one_unit_many(a.sets[i], a.sizes[i], a.ordered[i], b.sets[j], b.sizes[j], b.ordered[j])


# --- a text's signature, with its fingerprint --------------------------------------------


def _distinct_units(text: str) -> list[str]:
    """The distinct units of a prepared text, in first-seen order; a long text
    piece by piece (memory that grows with its vocabulary, not its length)."""
    seen: dict[str, None] = {}
    for piece in pieces(text):  # (a text of at most PIECE_CHARS: itself, once)
        seen.update(dict.fromkeys(units(piece)))
    return list(seen)


def signature(text: str, config: FingerprintConfig) -> bytes:
    """The signature of a text read with an index's configuration (its
    normalisation: see fingerprint.prepare). Raises EmptyTextError for a text
    with no unit. With the fingerprint: fingerprint_and_signature, which
    reads the text once for both."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")
    found = _distinct_units(prepare(text, config))
    if not found:
        raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
    cjk = has_cjk("".join(found))
    return _signature_of(unit_hashes(found), cjk, _characters(found) if cjk else 0)


def _characters(units: Sequence[str]) -> int:
    """How many of a text's distinct units are CJK characters (its units
    of one character, scanned at once)."""
    return count_cjk("".join([u for u in units if len(u) == 1]))


def _signature_of(hashes: np.ndarray, ordered: bool, characters: int = 0) -> bytes:
    """The sketch of distinct units' 64-bit hashes, in the order first seen
    (NBYTES bytes: see minhash_values), and their exact set where there are
    at most SMALL (see the module's text): sorted, or (``ordered``, a text
    with CJK) in that order and the byte ORDERED; both from the same top 32
    bits (two units' top 32 bits alike: one value, the first). More than
    SMALL and at most MIDDLE_UNITS: the sketch, the top 16 bits of each,
    sorted, once, and the byte MIDDLE, or MIDDLE_CJK where more than half
    of them are CJK ``characters``. More units, more than half of them
    characters: the sketch and the byte CJK."""
    h32 = top32(hashes)
    made = pack(minhash_values(h32), BITS)
    if len(hashes) > MIDDLE_UNITS:
        return made + bytes((CJK,)) if 2 * characters > len(hashes) else made
    if len(hashes) > SMALL:
        middle = np.unique((h32 >> np.uint32(16)).astype("<u2")).tobytes()
        return made + middle + bytes((MIDDLE_CJK if 2 * characters > len(hashes) else MIDDLE,))
    if ordered:
        exact = list(dict.fromkeys(h32.tolist()))
        return made + struct.pack(f"<{len(exact)}I", *exact) + bytes((ORDERED,))
    exact = sorted(set(h32.tolist()))
    return made + struct.pack(f"<{len(exact)}I", *exact)


def _shared_tokens(config: FingerprintConfig) -> bool:
    """Whether the fingerprint's features are chosen among the signature's
    tokens (word unigrams, CJK as characters and bigrams: the default's), so
    that each distinct token is hashed once for both."""
    return config.ngram == 1 and config.cjk == "chars"


def fingerprint_and_signature(text: str, config: FingerprintConfig) -> tuple[int, bytes]:
    """simhash(text, config) and signature(text, config), the text read once
    for both: the one route from a text to what an index stores of it.

    The compiled pass (simindex.fastmarks) where it serves (numba installed,
    a configuration of word unigrams with CJK as characters and bigrams and
    tf or binary weights, a text of at most PIECE_CHARS characters, and the
    process's switch: see fastmarks); else one_pass, its Python
    implementation and the reference the tests hold it to: the same bits.
    Raises EmptyTextError for a text with no word. (marks_of_many of one
    text.)"""
    made = marks_of_many([text], config)[0]
    if made is None:
        raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
    return made


def marks_of_many(
    texts: Sequence[str], config: FingerprintConfig
) -> list[tuple[int, bytes] | None]:
    """fingerprint_and_signature of each text, None for a text with no word:
    where the compiled pass serves, all of them in one call of it (a call
    a text costs more than a short text's pass). Raises
    InvalidArgumentError for a text that is not a str."""
    for text in texts:
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")
    made: list[tuple[int, bytes] | None] = []
    for text, marks in zip(texts, fastmarks.marks_many(texts, config, _probes()), strict=True):
        if marks is None:
            try:
                marks = one_pass(text, config)
            except EmptyTextError:
                marks = (0, b"")
        made.append(marks if marks[1] else None)
    return made


def one_pass(text: str, config: FingerprintConfig) -> tuple[int, bytes]:
    """fingerprint_and_signature in Python, for every configuration and
    length: equal to (simhash(text, config), signature(text, config)).

    The text is prepared once and tokenised once as the signature reads it
    (tokenize.words with CJK as characters and bigrams; a long text piece by
    piece, as simhash and signature read it). Where the fingerprint's
    features are those tokens (word unigrams, cjk="chars": the default's),
    each distinct token is hashed once for both. Word n-grams are shingled
    from the same tokens; only a configuration that segments CJK otherwise
    (jieba's words) tokenises a piece with CJK characters a second time."""
    prepared = prepare(text, config)
    # A text of at most PIECE_CHARS characters in a configuration whose
    # fingerprint reads the signature's tokens is read whole, and its CJK
    # bigrams left out of its units where the prepared text has CJK (as the
    # compiled pass does); otherwise as signature() reads it: in pieces, the
    # bigrams left out where its tokens have CJK. The two differ only for
    # CJK that NFKC makes (a Kangxi radical, U+2F00-2FDF, in a configuration
    # that prepares nothing), kept apart so that no signature changes.
    whole = len(text) <= PIECE_CHARS and _shared_tokens(config)
    counts: Counter[str] = Counter()  # in the order tokens are first seen
    shingling = None  # word n-grams (ngram > 1), shingled as the pieces come
    if config.ngram > 1:
        shingling = Shingling(config.ngram, drop_stopwords=config.stopwords)
    own: Counter[str] | None = None  # the fingerprint's tokens, once a piece's differ
    for piece in (prepared,) if whole else pieces(prepared):
        tokens = words(piece, "chars")
        theirs = tokens
        if config.cjk != "chars" and not piece.isascii() and has_cjk("".join(tokens)):
            theirs = words(piece, config.cjk)
            if own is None and shingling is None:
                own = counts.copy()  # the pieces before this one: the same tokens
        counts.update(tokens)
        if shingling is not None:
            shingling.add(theirs)
        elif own is not None:
            own.update(theirs)
    if not counts:
        raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
    distinct = list(counts)
    hashes = unit_hashes(distinct)
    if shingling is not None:
        fingerprint = simhash_weighted(weighted(shingling.counts(), config))
    elif own is not None:
        fingerprint = simhash_weighted(features_of_tokens(own, config))
    else:  # the features are among the tokens: each hashed once for both
        chosen = features_of_tokens(counts, config)
        if len(chosen) == len(distinct):  # every token a feature (in the same order)
            weights = np.fromiter(chosen.values(), np.float64, count=len(distinct))
            fingerprint = simhash_of_hashes(hashes, weights)
        else:
            kept = np.fromiter(map(chosen.__contains__, distinct), bool, count=len(distinct))
            weights = np.fromiter(chosen.values(), np.float64, count=len(chosen))
            fingerprint = simhash_of_hashes(hashes[kept], weights)
    cjk = has_cjk(prepared) if whole else has_cjk("".join(distinct))
    if not prepared.isascii() and cjk:  # the units: no CJK bigrams
        single = np.fromiter(map(_single, distinct), bool, count=len(distinct))
        units = hashes[single]  # (a short text's: no count of its characters needed)
        characters = _characters(distinct) if len(units) > SMALL else 0
        return fingerprint, _signature_of(units, True, characters)
    return fingerprint, _signature_of(hashes, False)


def check_signature(value: object) -> bytes | None:
    """A stored signature (see is_signature) or None; else InvalidArgumentError."""
    if value is None:
        return None
    if not isinstance(value, (bytes, bytearray, memoryview)) or not is_signature(value):
        raise InvalidArgumentError(f"a signature is {SIGNATURE_FORM}; or None; not {value!r:.60}")
    return bytes(value)
