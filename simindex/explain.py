"""Why two texts are, or are not, near-duplicates: an explained distance.

Pure functions, no database. The features are ``fingerprint.features``, the
ones the fingerprint is made of, so an explanation and a fingerprint cannot
disagree.

How the features are scored. Each bit of a fingerprint is the sign of a vote:
every feature adds its weight where its hash has a 1 and subtracts it where
its hash has a 0 (see ``fingerprint``). So on every bit each feature pushes
text a's vote and text b's vote:

- **apart**: on each bit where the fingerprints differ, the features whose
  weight difference (weight in a minus weight in b) pushed the two votes
  apart share that bit in proportion to their push. A feature's score is its
  sum over those bits, so the scores of all features add up to the distance.
- **together**: on each bit where the fingerprints agree, the features both
  texts have, whose common weight (the smaller of the two) voted for the
  agreed value, share that bit in proportion to that weight. A feature's
  score is its sum over those bits; a bit that no shared feature voted for
  agrees by chance and is credited to none.

Beside the distance stands what the features predict: Simhash estimates the
angle between the two weighted feature vectors (Charikar 2002), about
64 * angle / pi differing bits, so a distance far from that expectation is
the luck of a few close votes rather than the texts.

The second stage: a pair within k is a near-duplicate only when its
verification signatures (simindex.signature) estimate a similarity of at
least the threshold. For two texts the explanation gives that estimate, the
exact Jaccard similarity of their unit sets (what it estimates) and the
units only one of them has; for stored documents, the estimate from their
stored signatures.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from simindex.blocks import MAX_INDEX_K, BlockLayout, can_probe, check_k, probe_radius
from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import (
    BITS,
    DEFAULT_CONFIG,
    FingerprintConfig,
    check_fingerprint,
    feature_hash,
    features,
    prepare,
    simhash_weighted,
)
from simindex.signature import (
    DEFAULT_THRESHOLD,
    bands_meet,
    check_signature,
    check_threshold,
    one_unit,
    signature,
    similarity,
    threshold_for,
    units,
)

_CHUNK = 1 << 13  # features scored per step: bounds memory for huge texts


def _as_given(value: float) -> str:
    """A threshold as it was given: the shortest decimals that are it."""
    return f"{value:.2f}" if float(f"{value:.2f}") == value else repr(value)


@dataclass(frozen=True)
class BlockAgreement:
    """One block of the layout: its width and the bits of it that differ."""

    width: int
    differing: int

    @property
    def agrees(self) -> bool:
        return self.differing == 0


@dataclass(frozen=True)
class FeatureEffect:
    """A feature, its weight in each text (0 where it is absent) and its score
    (bits credited to it: see the module's docstring)."""

    feature: str
    weight_a: int
    weight_b: int
    score: float


@dataclass(frozen=True)
class Explanation:
    """Two fingerprints compared bit by bit, block by block and feature by feature.

    ``blocks`` are the layout's blocks from the most significant bit down;
    ``matching_tables`` the positions in ``tables`` (the layout's combinations
    of blocks, one database index each) on whose blocks the fingerprints agree
    exactly: a lookup through any of them fetches one fingerprint from the
    other. The feature fields are None (and the lists empty) when a side was
    given as a fingerprint, since its features are unknown.
    """

    fingerprint_a: int
    fingerprint_b: int
    distance: int
    k: int
    blocks: tuple[BlockAgreement, ...]
    tables: tuple[tuple[int, ...], ...]
    matching_tables: tuple[int, ...]
    features_a: int | None = None  # distinct features of each text
    features_b: int | None = None
    shared_features: int | None = None
    cosine: float | None = None  # of the two weighted feature vectors
    weighted_jaccard: float | None = None  # sum of min weights / sum of max weights
    expected_distance: float | None = None  # 64 * angle / pi
    together: tuple[FeatureEffect, ...] = ()  # in both texts, most credited first
    apart: tuple[FeatureEffect, ...] = ()  # weighed differently, most credited first
    # The second stage (see the module's docstring): None where a side has no signature.
    threshold: float = DEFAULT_THRESHOLD  # the threshold asked
    # The similarity the pair needs where it is not the threshold asked: two
    # longer texts of CJK characters need a lower one (signature.threshold_for).
    needed: float | None = None
    similarity: float | None = None  # the signatures' (from their sets where both keep one)
    unit_jaccard: float | None = None  # the exact Jaccard of the unit sets (texts only)
    units_a: int | None = None  # distinct units of each text
    units_b: int | None = None
    shared_units: int | None = None
    only_a: tuple[str, ...] = ()  # units of a that b lacks (up to top of them)
    only_b: tuple[str, ...] = ()
    # Both signatures keep short sets at most one unit apart, and the
    # threshold is above 0: found by their set keys at any distance.
    sets_one_unit_apart: bool = False
    # Neither keeps a short set, one band of their sketches is equal, and the
    # threshold is above 0: found by their band keys at any distance.
    bands_equal: bool = False

    @property
    def threshold_needed(self) -> float:
        """The similarity the pair needs (signature.threshold_for)."""
        return self.threshold if self.needed is None else self.needed

    def judged(self, places: int = 2) -> str:
        """The similarity and the threshold the pair needs: "similarity S >=
        threshold T" (or <), S with as many decimals as tell it from T
        (``places`` at least), T as asked (the shortest decimals that are
        it), or where the pair needs a lower one (two texts of CJK
        characters) that one to four decimals and the one asked."""
        if self.similarity is None:
            return "no similarity (a side has no signature)"
        similarity, needed = self.similarity, self.threshold_needed
        while places < 17 and similarity != needed:
            if f"{similarity:.{places}f}" != f"{needed:.{places}f}":
                break
            places += 1
        sign = ">=" if similarity >= needed else "<"
        shown = f"similarity {similarity:.{places}f} {sign} threshold"
        if self.needed is None:
            return f"{shown} {_as_given(self.threshold)}"
        return (
            f"{shown} {needed:.{max(places, 4)}f} (for two texts of CJK characters; "
            f"{_as_given(self.threshold)} asked)"
        )

    @property
    def within_k(self) -> bool:
        return self.distance <= self.k

    @property
    def verified(self) -> bool | None:
        """Whether the signatures' similarity reaches the threshold (None: no
        signature on a side, so distance alone decides)."""
        return None if self.similarity is None else self.similarity >= self.threshold_needed

    @property
    def near_duplicates(self) -> bool:
        """What a query answers: within k (or found by keys: short texts one
        unit apart, a band equal), and verified where it can be."""
        keyed = self.sets_one_unit_apart or self.bands_equal
        return (self.within_k or keyed) and self.verified is not False

    @property
    def layout_k(self) -> int:
        """The largest distance the layout's tables answer exactly."""
        return len(self.blocks) - len(self.tables[0])

    def _lookup(self) -> tuple[bool, int, int | None]:
        """(whether lookups answer k, the probe radius, the first table that
        fetches one text from the other) for this k and layout."""
        layout = BlockLayout(tuple(b.width for b in self.blocks), tuple(self.tables))
        answered = self.k <= self.layout_k or can_probe(layout, self.k)
        radius = probe_radius(layout, self.k) if self.k > self.layout_k else 0
        off = [sum(self.blocks[b].differing for b in table) for table in self.tables]
        reached = [j for j, bits in enumerate(off) if bits <= radius]
        if not reached:
            return answered, radius, None
        return answered, radius, min(reached, key=lambda j: (off[j], j))  # exact ones first

    def verdict(self) -> str:
        """One line: near-duplicates or not, and how a query would find them."""
        answered, _, table = self._lookup()
        off = 0 if table is None else sum(self.blocks[b].differing for b in self.tables[table])
        how = f"table {table}" + (f" (a probe {off} bit{'s' * (off > 1)} off)" if off else "")
        if not self.within_k and (self.sets_one_unit_apart or self.bands_equal):
            head = (
                f"distance {self.distance} > k={self.k}, but short texts one unit apart: "
                "a query finds one from the other by their set keys"
                if self.sets_one_unit_apart
                else f"distance {self.distance} > k={self.k}, but one band of their sketches "
                "is equal: a query finds one from the other by their band keys"
            )
            if self.verified:
                return f"near-duplicates: {head}, and {self.judged()}"
            return f"not near-duplicates: {head}, but {self.judged()}"
        if not self.within_k:
            head = f"not near-duplicates: distance {self.distance} > k={self.k}"
            if not answered:
                return (
                    f"{head}; a query reads every row (k is past the layout's probes) and drops it"
                )
            if table is not None:
                return f"{head}; {how} fetches it, the distance check drops it"
            return f"{head}; no table matches: a lookup does not even fetch it"
        found = (
            f"the index finds one from the other through {how}"
            if answered and table is not None  # always, by pigeonhole (or its probed form)
            else "k is past what the layout's lookups answer, so a query reads every row"
        )
        if self.similarity is None:
            return (
                f"near-duplicates: distance {self.distance} <= k={self.k}; {found}; "
                f"no signature on a side: distance alone decides"
            )
        if not self.verified:
            return (
                f"not near-duplicates: distance {self.distance} <= k={self.k} ({found}), "
                f"but {self.judged()}"
            )
        head = f"near-duplicates: distance {self.distance} <= k={self.k}"
        return f"{head} and {self.judged()}; {found}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (fingerprints also as 0x-hex)."""

        def effects(items: tuple[FeatureEffect, ...]) -> list[dict[str, Any]]:
            return [
                {"feature": e.feature, "a": e.weight_a, "b": e.weight_b, "score": round(e.score, 3)}
                for e in items
            ]

        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "a": self.fingerprint_a,
            "b": self.fingerprint_b,
            "a_hex": f"0x{self.fingerprint_a:016x}",
            "b_hex": f"0x{self.fingerprint_b:016x}",
            "distance": self.distance,
            "k": self.k,
            "within_k": self.within_k,
            "threshold": self.threshold,
            "threshold_needed": self.threshold_needed,
            "similarity": rounded(self.similarity),
            "verified": self.verified,
            "near_duplicates": self.near_duplicates,
            "sets_one_unit_apart": self.sets_one_unit_apart,
            "bands_equal": self.bands_equal,
            "verdict": self.verdict(),
            "blocks": [
                {"width": b.width, "differing": b.differing, "agrees": b.agrees}
                for b in self.blocks
            ],
            "tables": [list(t) for t in self.tables],
            "matching_tables": list(self.matching_tables),
            "features_a": self.features_a,
            "features_b": self.features_b,
            "shared_features": self.shared_features,
            "cosine": rounded(self.cosine),
            "weighted_jaccard": rounded(self.weighted_jaccard),
            "expected_distance": rounded(self.expected_distance),
            "together": effects(self.together),
            "apart": effects(self.apart),
            "unit_jaccard": rounded(self.unit_jaccard),
            "units_a": self.units_a,
            "units_b": self.units_b,
            "shared_units": self.shared_units,
            "only_a": list(self.only_a),
            "only_b": list(self.only_b),
        }


def explain(
    a: str | int,
    b: str | int,
    *,
    k: int,
    layout: BlockLayout | None = None,
    config: FingerprintConfig = DEFAULT_CONFIG,
    top: int = 10,
    threshold: float = DEFAULT_THRESHOLD,
    signatures: tuple[bytes | None, bytes | None] = (None, None),
    set_keys: bool = True,
) -> Explanation:
    """Explain the distance between two texts (or fingerprints) for distance k,
    and their verification at ``threshold``.

    ``layout`` defaults to the one a new index for k would have. Texts are
    fingerprinted with ``config``; the ``top`` features most credited with
    pulling them together and apart are listed (see the module's docstring
    for the scores), and the units only one of them has. A fingerprint (an
    int) for either side gives the distance, blocks and tables only, and
    the similarity where ``signatures`` gives that side's stored signature.
    ``set_keys``: whether texts found by keys (short texts one unit apart,
    longer ones with a band equal) are found at any distance (an index that
    keeps keys; see matching.py).
    Raises EmptyTextError for a text with no word features.
    """
    check_k(k)
    threshold = check_threshold(threshold)
    given = [check_signature(x) for x in signatures]
    if layout is None:
        if k > MAX_INDEX_K:
            raise InvalidArgumentError(
                f"no layout answers k={k} (at most {MAX_INDEX_K}): pass the index's layout"
            )
        layout = BlockLayout.for_k(k)
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise InvalidArgumentError(f"top must be a whole number of at least 0, not {top!r}")
    weighted = []
    prints = []
    for name, side in (("a", a), ("b", b)):
        if isinstance(side, str):
            found = features(side, config)
            if not found:
                raise EmptyTextError(
                    f"text {name} has no word features (it is empty or only punctuation)"
                )
            weighted.append(found)
            prints.append(simhash_weighted(found))
        elif isinstance(side, int) and not isinstance(side, bool):
            prints.append(check_fingerprint(side))
        else:
            raise InvalidArgumentError(
                f"{name} is a text or a fingerprint, not {type(side).__name__}"
            )
    fa, fb = prints
    base = replace(_compare(fa, fb, layout, k), threshold=threshold)
    unit_sets = [
        list(dict.fromkeys(units(prepare(side, config)))) if isinstance(side, str) else None
        for side in (a, b)
    ]
    sigs = [  # a text's as an index makes it; a fingerprint's as given
        signature(side, config) if isinstance(side, str) else given[i]
        for i, side in enumerate((a, b))
    ]
    if sigs[0] is not None and sigs[1] is not None:
        base = replace(base, similarity=similarity(sigs[0], sigs[1]))
        needed = threshold_for(threshold, sigs[0], sigs[1])
        if needed != threshold:
            base = replace(base, needed=needed)
        close = one_unit(sigs[0], sigs[1]) is not None
        banded = bands_meet(sigs[0], sigs[1])
        keyed = threshold > 0 and set_keys
        base = replace(base, sets_one_unit_apart=close and keyed, bands_equal=banded and keyed)
    ua, ub = unit_sets
    if ua is not None and ub is not None:
        sa, sb = set(ua), set(ub)
        shared = len(sa & sb)
        base = replace(
            base,
            unit_jaccard=shared / len(sa | sb),
            units_a=len(sa),
            units_b=len(sb),
            shared_units=shared,
            only_a=tuple(u for u in ua if u not in sb)[:top],
            only_b=tuple(u for u in ub if u not in sa)[:top],
        )
    if len(weighted) < 2:
        return base
    wa, wb = weighted
    together, apart = _effects(wa, wb, fa, fb, top)
    cosine, jaccard = _similarities(wa, wb)
    return replace(
        base,
        features_a=len(wa),
        features_b=len(wb),
        shared_features=len(wa.keys() & wb.keys()),
        cosine=cosine,
        weighted_jaccard=jaccard,
        expected_distance=BITS * math.acos(cosine) / math.pi,
        together=together,
        apart=apart,
    )


def _compare(fa: int, fb: int, layout: BlockLayout, k: int) -> Explanation:
    """The fingerprint-level part: distance, blocks, tables."""
    diff = fa ^ fb
    blocks = tuple(
        BlockAgreement(width, ((diff >> shift) & mask).bit_count())
        for width, (shift, mask) in zip(layout.widths, layout.spans(), strict=True)
    )
    matching = tuple(i for i, mask in enumerate(layout.table_masks()) if diff & mask == 0)
    return Explanation(
        fingerprint_a=fa,
        fingerprint_b=fb,
        distance=diff.bit_count(),
        k=k,
        blocks=blocks,
        tables=layout.tables,
        matching_tables=matching,
    )


def _similarities(wa: Mapping[str, int], wb: Mapping[str, int]) -> tuple[float, float]:
    """Cosine and weighted Jaccard similarity of two weighted feature sets."""
    dot = float(sum(w * wb[f] for f, w in wa.items() if f in wb))
    norm = math.sqrt(float(sum(w * w for w in wa.values()))) * math.sqrt(
        float(sum(w * w for w in wb.values()))
    )
    smaller = sum(min(w, wb[f]) for f, w in wa.items() if f in wb)
    larger = sum(wa.values()) + sum(wb.values()) - smaller
    return min(1.0, dot / norm), smaller / larger


def _signs(hashes: np.ndarray) -> np.ndarray:
    """+1 where a feature's hash has a 1 bit, -1 where 0; column j is bit j."""
    bits = np.unpackbits(hashes.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
    return bits.astype(np.int64) * 2 - 1


def _effects(
    wa_map: Mapping[str, int], wb_map: Mapping[str, int], fa: int, fb: int, top: int
) -> tuple[tuple[FeatureEffect, ...], tuple[FeatureEffect, ...]]:
    """The top features credited with pulling the fingerprints together and apart."""
    keys = sorted(wa_map.keys() | wb_map.keys())  # sorted: ties break by feature
    wa = np.array([wa_map.get(f, 0) for f in keys], dtype=np.int64)
    wb = np.array([wb_map.get(f, 0) for f in keys], dtype=np.int64)
    hashes = np.array([feature_hash(f) for f in keys], dtype="<u8")
    position = np.arange(BITS, dtype=np.uint64)
    bit_a = (np.uint64(fa) >> position) & np.uint64(1)
    differ = (bit_a != ((np.uint64(fb) >> position) & np.uint64(1)))[np.newaxis, :]
    toward = np.where(bit_a == 1, 1, -1)[np.newaxis, :]  # the direction of a's bit
    # The push on bit j of each feature, toward a's bit: its weight difference
    # where the bits differ, its common weight where they agree.
    difference = (wa - wb)[:, np.newaxis]
    common = np.minimum(wa, wb)[:, np.newaxis]

    def pushes() -> Iterator[tuple[slice, np.ndarray]]:
        for start in range(0, len(keys), _CHUNK):
            part = slice(start, start + _CHUNK)
            weights = np.where(differ, difference[part], common[part])
            yield part, np.maximum(weights * _signs(hashes[part]) * toward, 0)

    totals = np.zeros(BITS, dtype=np.float64)
    for _, push in pushes():
        totals += push.sum(axis=0)
    share = np.divide(1.0, totals, out=np.zeros(BITS), where=totals > 0)
    apart = np.zeros(len(keys))
    together = np.zeros(len(keys))
    for part, push in pushes():
        credited = push * share
        apart[part] = np.where(differ, credited, 0.0).sum(axis=1)
        together[part] = np.where(differ, 0.0, credited).sum(axis=1)

    def best(
        scores: np.ndarray, weight: np.ndarray, eligible: np.ndarray
    ) -> tuple[FeatureEffect, ...]:
        chosen = np.flatnonzero(eligible)
        # Highest score, then heaviest weight; np.lexsort is stable, so then by feature.
        order = chosen[np.lexsort((-weight[chosen], -scores[chosen]))][:top]
        return tuple(
            FeatureEffect(keys[i], int(wa[i]), int(wb[i]), float(scores[i])) for i in order
        )

    gap = np.abs(wa - wb)
    return best(together, common[:, 0], common[:, 0] > 0), best(apart, gap, gap > 0)
