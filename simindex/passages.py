"""A text's passages: the winnowed hashes of its shingles, what ``overlaps`` compares.

Two texts compared whole (the fingerprint, the signature) cannot see one
inside the other: a licence pasted into a long copyright file is a small
part of it. ``passages(text, config)`` gives a text's fingerprints in the
sense of winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003; MOSS):

- the text's units, as the signature reads them (``signature.units`` of
  the text prepared for the index's configuration: words, stop words kept,
  and single CJK characters);
- its shingles: from each unit on, the fewest units that weigh at least
  SHINGLE_WEIGHT, a word weighing WORD_WEIGHT and a CJK character
  CJK_WEIGHT: five words, or eight CJK characters (about five Chinese
  words), or a mix. The weights depend only on the units themselves, so a
  passage is shingled alike in whatever text it stands. A text lighter than
  one shingle is one shingle of all its units;
- each shingle hashed to 64 bits (a polynomial over its units' xxh64
  hashes, then splitmix64's finaliser), computed for every shingle at once;
- the minimum of every WINDOW consecutive shingle hashes kept: any passage
  the two texts share that is at least WINDOW shingles long (WINDOW + 4
  words) shares at least one kept hash, and a passage shares about as large
  a part of its kept hashes as of its shingles.

The result is the set of kept hashes, sorted, as signed 64-bit integers
(what a database column holds). Hashes and constants are fixed: a text's
passages are the same in every process and on every machine, which stored
ones need. Pure: no database, no state.
"""

from __future__ import annotations

import numpy as np

from simindex.fingerprint import FingerprintConfig, prepare
from simindex.signature import mix, unit_hashes, units
from simindex.tokenize import has_cjk

WORD_WEIGHT = 8
CJK_WEIGHT = 5
SHINGLE_WEIGHT = 40  # five words, eight CJK characters
# Kept: the least hash of every WINDOW shingles in a row. Measured on the
# copyright files and licences (bench/overlaps.py, docs/decisions/overlaps.md).
WINDOW = 4

_U64 = np.uint64
_P = 0x9E3779B97F4A7C15  # odd, so it has an inverse modulo 2**64
_P_INVERSE = pow(_P, -1, 1 << 64)
_SEED = _U64(0x243F6A8885A308D3)


def _powers(base: int, count: int) -> np.ndarray:
    """base**0 .. base**(count-1) modulo 2**64."""
    steps = np.full(count, base, dtype=_U64)
    steps[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(steps, dtype=_U64)


def shingle_bounds(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of a text's shingles from its units' weights: from each
    unit on, the fewest units weighing SHINGLE_WEIGHT; units [start, end).
    One shingle of every unit where they weigh less in all."""
    total = np.concatenate(([0], np.cumsum(weights, dtype=np.int64)))
    n = len(weights)
    starts = np.arange(n)
    ends = np.searchsorted(total, total[:n] + SHINGLE_WEIGHT, side="left")
    whole = ends <= n
    if not whole.any():
        return np.zeros(1, np.intp), np.full(1, n, np.intp)
    return starts[whole], ends[whole]


def shingle_hashes(hashes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The 64-bit hash of each shingle (shingle_bounds) of units with these
    hashes (uint64) and weights, in order: sum of hash[start + j] * P**j
    modulo 2**64 over the shingle's units, mixed."""
    n = len(hashes)
    starts, ends = shingle_bounds(weights)
    with np.errstate(over="ignore"):
        prefix = np.concatenate(([_U64(0)], np.cumsum(hashes * _powers(_P, n), dtype=_U64)))
        inner = (prefix[ends] - prefix[starts]) * _powers(_P_INVERSE, n)[starts]
        return mix(inner ^ _SEED)


def winnow(shingles: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """The distinct least values of every `window` consecutive shingle hashes
    (of all of them, where there are fewer), sorted as signed 64-bit integers."""
    if len(shingles) == 0:
        return np.zeros(0, np.int64)
    if len(shingles) <= window:
        kept = shingles[[int(np.argmin(shingles))]]
    else:
        kept = np.lib.stride_tricks.sliding_window_view(shingles, window).min(axis=1)
    return np.unique(kept.view(np.int64))


def unit_weights(found: list[str]) -> np.ndarray:
    """Each unit's weight: CJK_WEIGHT for a CJK character, else WORD_WEIGHT."""
    weights = np.full(len(found), WORD_WEIGHT, dtype=np.int64)
    if has_cjk("".join(found)):
        cjk = np.fromiter((len(u) == 1 and has_cjk(u) for u in found), bool, count=len(found))
        weights[cjk] = CJK_WEIGHT
    return weights


def passages(text: str, config: FingerprintConfig, *, window: int = WINDOW) -> np.ndarray:
    """A text's passages (see the module's text) read with an index's
    configuration: sorted distinct signed 64-bit hashes; none for a text
    with no unit."""
    found = units(prepare(text, config))
    if not found:
        return np.zeros(0, np.int64)
    return winnow(shingle_hashes(unit_hashes(found), unit_weights(found)), window)
