"""The compiled pass simindex.fastmarks runs (numba): a normalised text's
UTF-8 bytes to its fingerprint and signature. Imported only by fastmarks,
and only where numba is installed. Module-level functions, so numba keeps
their machine code in __pycache__ (or its user cache) and a later process
loads it instead of compiling again.

Each step is the Python path's, read off simindex/tokenize.py (words, with
cjk="chars"), fingerprint.py (features_of_tokens, simhash_of_hashes) and
signature.py (unit_hashes, minhash_values, pack, _signature_of); the tests
hold the two paths to the same bits (tests/test_fastmarks.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

# Code point classes (fastmarks.classes): [^\W_], the CJK class of
# tokenize._CJK, and \s, as Python's re module reads them.
WORD = 1
CJK = 2
SPACE = 4

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)
_V1 = np.uint64((11400714785074694791 + 14029467366897019727) % (1 << 64))
_V4 = np.uint64((-11400714785074694791) % (1 << 64))
_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_EMPTY = np.uint32(0xFFFFFFFF)
_LOW = np.uint32(15)  # a bin's value: the low 4 bits of its smallest hash
# signature.py's sizes, written here (numba keeps a global's value in its
# cache, which a change of another module's would not renew;
# tests/test_fastmarks.py holds them equal): a bin is a unit's top 7 of 32
# bits (BINS = 128), a short text keeps up to SMALL units, a middle one up
# to MIDDLE_UNITS.
BIN_SHIFT = np.uint32(32 - 7)
SMALL = 15
MIDDLE_UNITS = 256


@njit(nogil=True, cache=True, inline="always")
def _rotl(x: Any, r: int) -> Any:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(nogil=True, cache=True, inline="always")
def _read(b: Any, i: int, width: int) -> Any:
    v = _ZERO
    for k in range(width):
        v |= np.uint64(b[i + k]) << np.uint64(8 * k)
    return v


@njit(nogil=True, cache=True, inline="always")
def _round(acc: Any, lane: Any) -> Any:
    return _rotl(acc + lane * _P2, 31) * _P1


@njit(nogil=True, cache=True)
def xxh64(b: Any, start: int, length: int) -> Any:
    """xxh64 with seed 0 of b[start:start + length] (XXH64's reference algorithm)."""
    i = start
    end = start + length
    if length >= 32:
        v1, v2, v3, v4 = _V1, _P2, _ZERO, _V4
        while i + 32 <= end:
            v1 = _round(v1, _read(b, i, 8))
            v2 = _round(v2, _read(b, i + 8, 8))
            v3 = _round(v3, _read(b, i + 16, 8))
            v4 = _round(v4, _read(b, i + 24, 8))
            i += 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            h = (h ^ _round(_ZERO, v)) * _P1 + _P4
    else:
        h = _P5
    h += np.uint64(length)
    while i + 8 <= end:
        h = _rotl(h ^ _round(_ZERO, _read(b, i, 8)), 27) * _P1 + _P4
        i += 8
    if i + 4 <= end:
        h = _rotl(h ^ (_read(b, i, 4) * _P1), 23) * _P2 + _P3
        i += 4
    while i < end:
        h = _rotl(h ^ (np.uint64(b[i]) * _P5), 11) * _P1
        i += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(nogil=True, cache=True, inline="always")
def _same(a: Any, sa: int, b: Any, sb: int, length: int) -> bool:
    """Whether a[sa:sa + length] and b[sb:sb + length] are the same bytes."""
    for k in range(length):  # noqa: SIM110 (a loop numba compiles)
        if a[sa + k] != b[sb + k]:
            return False
    return True


@njit(nogil=True, cache=True)
def is_stop(h: Any, b: Any, s: int, length: int, slots: Any, words: Any, starts: Any) -> bool:
    """Whether b[s:s + length] (its hash h) is a stop word: ``slots`` (a
    power of two long, -1 empty) holds each stop word's index at its hash
    by linear probing; word i is words[starts[i]:starts[i + 1]]."""
    mask = len(slots) - 1
    j = np.int64(h & np.uint64(mask))
    while slots[j] >= 0:
        w = slots[j]
        ws = starts[w]
        if starts[w + 1] - ws == length and _same(words, ws, b, s, length):
            return True
        j = (j + 1) & mask
    return False


@njit(nogil=True, cache=True)
def _decode(buf: Any, classes: Any) -> Any:
    """The code points of UTF-8 bytes (lone surrogates as encoded by
    surrogatepass), where each begins, and whether one is CJK."""
    n = len(buf)
    cps = np.empty(n, np.int32)
    at = np.empty(n + 1, np.int64)
    m = 0
    i = 0
    cjk = False
    while i < n:
        c = np.int64(buf[i])
        if c < 0x80:
            cp, w = c, 1
        elif c < 0xE0:
            cp, w = ((c & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F), 2
        elif c < 0xF0:
            cp = ((c & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6)
            cp |= np.int64(buf[i + 2]) & 0x3F
            w = 3
        else:
            cp = ((c & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12)
            cp |= ((np.int64(buf[i + 2]) & 0x3F) << 6) | (np.int64(buf[i + 3]) & 0x3F)
            w = 4
        if classes[cp] & CJK:
            cjk = True
        cps[m] = cp
        at[m] = i
        m += 1
        i += w
    at[m] = n
    return cps[:m], at[: m + 1], cjk


@njit(nogil=True, cache=True)
def _fold_gaps(buf: Any, cps: Any, at: Any, classes: Any) -> Any:
    """tokenize.words' whitespace between two CJK characters dropped
    (tokenize._cjk().gap): the bytes and code points left, and where each begins."""
    m = len(cps)
    out = np.empty(len(buf), np.uint8)
    kept = np.empty(m, np.int32)
    pos = np.empty(m + 1, np.int64)
    n = 0
    k = 0
    i = 0
    while i < m:
        cp = cps[i]
        if classes[cp] & SPACE and i > 0 and classes[cps[i - 1]] & CJK:
            j = i + 1
            while j < m and classes[cps[j]] & SPACE:
                j += 1
            if j < m and classes[cps[j]] & CJK:
                i = j
                continue
        kept[k] = cp
        pos[k] = n
        for q in range(at[i], at[i + 1]):
            out[n] = buf[q]
            n += 1
        k += 1
        i += 1
    pos[k] = n
    return out[:n], kept[:k], pos[: k + 1]


@njit(nogil=True, cache=True, inline="always")
def _add(
    b: Any,
    s: int,
    e: int,
    is_unit: bool,
    slots: Any,
    hs: Any,
    starts: Any,
    lens: Any,
    counts: Any,
    unit: Any,
    nd: int,
) -> int:
    """Count the token b[s:e]: one more of a distinct token already seen (the
    same hash and the same bytes), else a new one. Returns the distinct count."""
    length = e - s
    h = xxh64(b, s, length)
    mask = len(slots) - 1
    k = np.int64(h & np.uint64(mask))
    while True:
        d = slots[k]
        if d < 0:
            slots[k] = nd
            hs[nd] = h
            starts[nd] = s
            lens[nd] = length
            counts[nd] = 1
            unit[nd] = is_unit
            return nd + 1
        if hs[d] == h and lens[d] == length and _same(b, starts[d], b, s, length):
            counts[d] += 1
            return nd
        k = (k + 1) & mask


@njit(nogil=True, cache=True)
def _grown(slots: Any, hs: Any, nd: int) -> Any:
    """Slots twice as many, the nd distinct tokens placed again by their hashes."""
    size = 2 * len(slots)
    mask = size - 1
    grown = np.full(size, -1, np.int32)
    for d in range(nd):
        k = np.int64(hs[d] & np.uint64(mask))
        while grown[k] >= 0:
            k = (k + 1) & mask
        grown[k] = d
    return grown


@njit(nogil=True, cache=True, inline="always")
def _put(out: Any, n: int, cp: int) -> int:
    """Write code point cp as UTF-8 at out[n:]; returns where it ends."""
    if cp < 0x80:
        out[n] = cp
        return n + 1
    if cp < 0x800:
        out[n] = 0xC0 | (cp >> 6)
        out[n + 1] = 0x80 | (cp & 0x3F)
        return n + 2
    if cp < 0x10000:
        out[n] = 0xE0 | (cp >> 12)
        out[n + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[n + 2] = 0x80 | (cp & 0x3F)
        return n + 3
    out[n] = 0xF0 | (cp >> 18)
    out[n + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[n + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[n + 3] = 0x80 | (cp & 0x3F)
    return n + 4


@njit(nogil=True, cache=True)
def casefold(buf: Any, classes: Any, fold_index: Any, fold_starts: Any, fold_points: Any) -> Any:
    """tokenize.normalize's str.casefold() and typographic apostrophe made
    plain, over UTF-8 bytes: code point c becomes fold_points[fold_starts[i]:
    fold_starts[i + 1]] where i = fold_index[c] >= 0 (up to three code
    points), else itself."""
    cps, at, _ = _decode(buf, classes)
    out = np.empty(3 * len(buf) + 4, np.uint8)  # a fold is at most 3 code points of 4 bytes
    n = 0
    limit = len(fold_index)
    for cp in cps:
        i = fold_index[cp] if cp < limit else -1
        if i < 0:
            n = _put(out, n, 39 if cp == 0x2019 else cp)
        else:
            for q in range(fold_starts[i], fold_starts[i + 1]):
                folded = fold_points[q]
                n = _put(out, n, 39 if folded == 0x2019 else folded)
    return out[:n]


@njit(nogil=True, cache=True)
def marks_many(
    buf: Any,
    bounds: Any,
    cjk_units: Any,
    fold: Any,
    classes: Any,
    stop_slots: Any,
    stop_words: Any,
    stop_starts: Any,
    probes: Any,
    drop_stopwords: bool,
    binary: bool,
    fold_index: Any,
    fold_starts: Any,
    fold_points: Any,
    fingerprints: Any,
    sizes: Any,
    out: Any,
) -> None:
    """The fingerprints and signatures of many texts in one call (a call
    from Python a text costs more than a short text's pass). Text d is the
    normalised UTF-8 bytes ``buf[bounds[d]:bounds[d + 1]]``; its
    fingerprint goes to ``fingerprints[d]``, its signature to ``out[d]``
    (64 bytes of sketch, then the exact set's 4 bytes a unit where there
    are at most 15 units, or the middle set's 2 bytes a unit and its byte
    where there are at most 256) and the signature's length to
    ``sizes[d]`` (-1 for a text with no word).

    Tokens are tokenize.words(text, "chars")'s: a CJK run's characters and
    character bigrams, else runs of [^\\W_] joined by an apostrophe between
    two of them. Distinct tokens are counted by their bytes (xxh64 finds
    them; equal hashes are compared byte by byte). ``cjk_units[d]``: the CJK
    bigrams are not units (signature._single; fingerprint_and_signature's
    test on the prepared text). ``fold[d]``: the bytes are NFKC but not yet
    case-folded (see casefold)."""
    for d in range(len(bounds) - 1):
        text = buf[bounds[d] : bounds[d + 1]]
        if fold[d]:
            text = casefold(text, classes, fold_index, fold_starts, fold_points)
        fingerprint, size = _marks_of(
            text,
            classes,
            stop_slots,
            stop_words,
            stop_starts,
            probes,
            drop_stopwords,
            binary,
            cjk_units[d],
            out[d],
        )
        fingerprints[d] = fingerprint
        sizes[d] = size


@njit(nogil=True, cache=True)
def _marks_of(
    buf: Any,
    classes: Any,
    stop_slots: Any,
    stop_words: Any,
    stop_starts: Any,
    probes: Any,
    drop_stopwords: bool,
    binary: bool,
    cjk_units: bool,
    out: Any,
) -> Any:
    """A text's fingerprint and signature (see marks_many), of bytes
    normalised and case-folded."""
    cps, at, cjk = _decode(buf, classes)
    b = buf
    if cjk:
        b, cps, at = _fold_gaps(buf, cps, at, classes)
    m = len(cps)
    # Tokens: at most one a word and its separator, two a CJK character.
    bound = (m + 1) // 2 + 1
    for i in range(m):
        if classes[cps[i]] & CJK:
            bound += 2
    # Slots for distinct tokens, kept at most half full, grown as they come
    # (the size of the vocabulary, in the cache); the tokens' arrays are
    # sized by the text (about 50 bytes a character with the code points,
    # as much as the Python path's token lists: texts are at most
    # PIECE_CHARS characters here).
    slots = np.full(1024, -1, np.int32)
    hs = np.empty(bound, np.uint64)
    starts = np.empty(bound, np.int64)
    lens = np.empty(bound, np.int64)
    counts = np.empty(bound, np.int64)
    unit = np.empty(bound, np.bool_)
    nd = 0
    characters = 0  # distinct CJK characters (units)
    i = 0
    while i < m:
        c = classes[cps[i]]
        if c & CJK:  # a run of CJK: each character, and the bigram it starts
            j = i
            while j < m and classes[cps[j]] & CJK:
                j += 1
            for t in range(i, j):
                if 2 * nd + 4 > len(slots):
                    slots = _grown(slots, hs, nd)
                seen = nd
                nd = _add(b, at[t], at[t + 1], True, slots, hs, starts, lens, counts, unit, nd)
                characters += nd - seen
                if t + 1 < j:
                    nd = _add(
                        b,
                        at[t],
                        at[t + 2],
                        not cjk_units,
                        slots,
                        hs,
                        starts,
                        lens,
                        counts,
                        unit,
                        nd,
                    )
            i = j
        elif c & WORD:  # a word: [^\W_]+ (not CJK), joined by an apostrophe
            j = i + 1
            while True:
                while j < m and classes[cps[j]] & (WORD | CJK) == WORD:
                    j += 1
                if j + 1 < m and cps[j] == 39 and classes[cps[j + 1]] & (WORD | CJK) == WORD:
                    j += 2
                else:
                    break
            if 2 * nd + 4 > len(slots):
                slots = _grown(slots, hs, nd)
            nd = _add(b, at[i], at[j], True, slots, hs, starts, lens, counts, unit, nd)
            i = j
        else:
            i += 1
    if nd == 0:
        return _ZERO, -1
    return _finish(
        b,
        hs,
        starts,
        lens,
        counts,
        unit,
        nd,
        stop_slots,
        stop_words,
        stop_starts,
        probes,
        drop_stopwords,
        binary,
        cjk_units,
        characters,
        out,
    )


@njit(nogil=True, cache=True)
def _finish(
    b: Any,
    hs: Any,
    starts: Any,
    lens: Any,
    counts: Any,
    unit: Any,
    nd: int,
    stop_slots: Any,
    stop_words: Any,
    stop_starts: Any,
    probes: Any,
    drop_stopwords: bool,
    binary: bool,
    ordered: bool,
    characters: int,
    out: Any,
) -> Any:
    """The vote of the features (fingerprint.features_of_tokens: the tokens
    but stop words, or all when every one is a stop word or they are kept;
    simhash_of_hashes) and the sketch and exact set of the units
    (signature._signature_of: ``ordered``, in the order first seen and the
    byte ORDERED, else sorted; 16 to 256 units, their top 16 bits sorted,
    once, and the byte MIDDLE, or MIDDLE_CJK where more than half of them
    are CJK ``characters`` of an ``ordered`` text; more units, such a text's:
    the byte CJK)."""
    stop = np.zeros(nd, np.bool_)
    content = nd
    if drop_stopwords:
        for d in range(nd):
            if is_stop(hs[d], b, starts[d], lens[d], stop_slots, stop_words, stop_starts):
                stop[d] = True
                content -= 1
    skip = content > 0
    votes = np.zeros(64, np.int64)
    total = 0
    for d in range(nd):
        if skip and stop[d]:
            continue
        w = 1 if binary else counts[d]
        h = hs[d]
        for bit in range(64):
            votes[bit] += w * np.int64((h >> np.uint64(bit)) & _ONE)
        total += w
    fingerprint = _ZERO
    for bit in range(64):
        if 2 * votes[bit] > total:
            fingerprint |= _ONE << np.uint64(bit)
    # The sketch: 128 bins by the top 7 bits of a unit's top 32; a bin's
    # smallest hash's low 4 bits; an empty bin densified (minhash_values).
    bins = len(probes)
    mins = np.full(bins, _EMPTY, np.uint32)
    units = 0
    for d in range(nd):
        if unit[d]:
            h32 = np.uint32(hs[d] >> np.uint64(32))
            bin_ = np.int64(h32 >> BIN_SHIFT)
            if h32 < mins[bin_]:
                mins[bin_] = h32
            units += 1
    values = np.empty(bins, np.uint32)
    for v in range(bins):
        values[v] = mins[v] & _LOW
    first_filled = -1
    for v in range(bins):
        if mins[v] != _EMPTY:
            first_filled = v
            break
    if first_filled < 0:
        values[:] = 0
    else:
        for v in range(bins):
            if mins[v] != _EMPTY:
                continue
            source = -1
            for p in range(probes.shape[1]):
                if mins[probes[v, p]] != _EMPTY:
                    source = probes[v, p]
                    break
            if source < 0:  # the nearest filled bin to its right, round the end
                source = first_filled
                for q in range(v + 1, bins):
                    if mins[q] != _EMPTY:
                        source = q
                        break
            values[v] = mins[source] & _LOW
    for q in range(bins // 2):
        out[q] = np.uint8(values[2 * q] | (values[2 * q + 1] << np.uint32(4)))
    size = bins // 2
    if units <= SMALL:
        small = np.empty(units, np.uint32)
        u = 0
        for d in range(nd):
            if unit[d]:
                small[u] = np.uint32(hs[d] >> np.uint64(32))
                u += 1
        if not ordered:
            small.sort()
        previous = -1
        for u in range(units):
            value = np.int64(small[u])
            if ordered:  # (two units' top 32 bits alike: the first one)
                again = False
                for v in range(u):
                    if small[v] == small[u]:
                        again = True
                if again:
                    continue
            elif value == previous:
                continue
            previous = value
            for k in range(4):
                out[size] = np.uint8((value >> (8 * k)) & 0xFF)
                size += 1
        if ordered:
            out[size] = np.uint8(1)  # signature.ORDERED
            size += 1
    elif units <= MIDDLE_UNITS:  # the top 16 bits of each, sorted, once
        middle = np.empty(units, np.uint16)
        u = 0
        for d in range(nd):
            if unit[d]:
                middle[u] = np.uint16(hs[d] >> np.uint64(48))
                u += 1
        middle.sort()
        previous = -1
        for u in range(units):
            value = np.int64(middle[u])
            if value == previous:
                continue
            previous = value
            out[size] = np.uint8(value & 0xFF)
            out[size + 1] = np.uint8(value >> 8)
            size += 2
        # signature.MIDDLE_CJK or MIDDLE
        out[size] = np.uint8(4) if ordered and 2 * characters > units else np.uint8(3)
        size += 1
    elif ordered and 2 * characters > units:
        out[size] = np.uint8(2)  # signature.CJK
        size += 1
    return fingerprint, size
