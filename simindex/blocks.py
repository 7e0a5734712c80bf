"""The block layout: how a 64-bit fingerprint is cut into indexed blocks.

Manku, Jain and Das Sarma (WWW 2007): cut the fingerprint into m >= k + 1
blocks. Two fingerprints that differ in at most k bits differ in at most k
blocks, so they agree exactly on at least m - k of them: on all the blocks of
at least one of the C(m, m - k) combinations of m - k blocks (pigeonhole).
One database index per combination (a "table" in the paper) therefore finds
every fingerprint within distance k; a Hamming filter drops the candidates
that are further away.

- m = k + 1 (the default up to k = 3): one index per block (k = 3: four
  16-bit blocks). Above k = 3 a new index gets k or fewer blocks, probed (see
  probe_radius and DEFAULT_BLOCKS; the default k = 8: three blocks).
- m > k + 1: more indexes, each over m - k blocks, so each lookup matches
  more bits and returns fewer false candidates (k = 3, m = 5: ten indexes over
  pairs of 13-bit blocks, about 26 bits matched per lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from math import comb
from typing import NamedTuple

from simindex.errors import InvalidArgumentError
from simindex.fingerprint import BITS, to_signed

DEFAULT_K = 8  # a new index's k (docs/quality.md: what each k finds)
MAX_INDEX_K = 15  # blocks of at least 4 bits; past that a lookup is nearly a scan
MAX_TABLES = 35  # database indexes per layout (k = 3 with 7 blocks)
# Blocks of a new index for each k from 0 to MAX_INDEX_K: k + 1 up to k = 3,
# past that the cheapest lookup at a million fingerprints of the layouts with
# at most six database indexes (costs.default_blocks, which computes these;
# a test keeps the two equal).
DEFAULT_BLOCKS = (1, 2, 3, 4, 3, 3, 4, 4, 3, 4, 4, 4, 5, 5, 5, 6)


def check_k(k: object, *, limit: int = BITS, what: str = "k") -> int:
    """Return k if it is a whole number in [0, limit], else raise InvalidArgumentError."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= limit:
        raise InvalidArgumentError(f"{what} must be a whole number from 0 to {limit}, not {k!r}")
    return k


def even_widths(n: int) -> tuple[int, ...]:
    """n block widths adding up to 64, as even as possible, the wider ones first."""
    base, extra = divmod(BITS, n)
    return tuple(base + 1 if i < extra else base for i in range(n))


@dataclass(frozen=True)
class BlockLayout:
    """Block widths (from the most significant bit down) and the combinations
    of blocks ("tables") that each get a database index."""

    widths: tuple[int, ...]
    tables: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if not self.widths or sum(self.widths) != BITS or min(self.widths) < 1:
            raise InvalidArgumentError(f"block widths must be positive and add up to {BITS}")
        sizes = {len(t) for t in self.tables}
        if len(sizes) != 1 or not self.tables:
            raise InvalidArgumentError("every table of a layout covers the same number of blocks")
        expected = tuple(combinations(range(len(self.widths)), sizes.pop()))
        if self.tables != expected:
            raise InvalidArgumentError("a layout's tables are every combination of m - k blocks")

    @classmethod
    def for_k(cls, k: int, blocks: int | None = None) -> BlockLayout:
        """The layout of an index for distance k with `blocks` blocks (default:
        DEFAULT_BLOCKS[k]). With more than k blocks, one table per combination
        of m - k of them (every lookup exact by pigeonhole); with k or fewer,
        one table per block, looked up with probes (see probe_radius)."""
        check_k(k, limit=MAX_INDEX_K, what="the index's k")
        m = DEFAULT_BLOCKS[k] if blocks is None else blocks
        if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= BITS // 4:
            raise InvalidArgumentError(
                f"blocks must be a whole number from 1 to {BITS // 4}, not {m!r}"
            )
        if m <= k:
            layout = cls(even_widths(m), tuple((b,) for b in range(m)))
            if _probe_count(layout, k) > MAX_PROBES:
                raise InvalidArgumentError(
                    f"{m} blocks for k={k} would take more than {MAX_PROBES} lookups a query: "
                    f"use more blocks (see simindex advise)"
                )
            return layout
        if comb(m, k) > MAX_TABLES:
            raise InvalidArgumentError(
                f"{m} blocks for k={k} need {comb(m, k)} database indexes (at most {MAX_TABLES})"
            )
        return cls(even_widths(m), tuple(combinations(range(m), m - k)))

    @classmethod
    def from_stored(cls, widths: Sequence[int], tables: Sequence[Sequence[int]]) -> BlockLayout:
        return cls(tuple(int(w) for w in widths), tuple(tuple(int(b) for b in t) for t in tables))

    @property
    def k(self) -> int:
        """The largest distance the tables answer by exact lookups alone
        (pigeonhole); a larger one takes probes (probe_radius)."""
        return len(self.widths) - len(self.tables[0])

    def spans(self) -> list[tuple[int, int]]:
        """(shift, mask) of each block."""
        out, top = [], BITS
        for width in self.widths:
            top -= width
            out.append((top, (1 << width) - 1))
        return out

    def blocks(self, fingerprint: int) -> list[int]:
        """The value of each block of an unsigned fingerprint, as stored (signed 64-bit)."""
        return [to_signed((fingerprint >> shift) & mask) for shift, mask in self.spans()]

    def table_masks(self) -> list[int]:
        """For each table, the mask of the fingerprint bits its blocks cover:
        two fingerprints agree on a table's blocks iff (a ^ b) & mask == 0."""
        spans = self.spans()
        return [sum(spans[b][1] << spans[b][0] for b in table) for table in self.tables]

    def describe(self) -> str:
        """The layout in words ("3 blocks (22/21/21 bits), 3 indexes over 1
        block each"; k = 0: "1 block (64 bits), 1 index over 1 block each")."""
        widths = "/".join(map(str, self.widths))
        blocks, tables, per = len(self.widths), len(self.tables), len(self.tables[0])
        return (
            f"{blocks} block{'s' * (blocks > 1)} ({widths} bits), "
            f"{tables} index{'es' * (tables > 1)} over {per} block{'s' * (per > 1)} each"
        )


MAX_PROBES = 1024  # probes per query past which a wider query reads every row instead


def probe_radius(layout: BlockLayout, k: int) -> int:
    """How many bits a table may differ in, for a query at distance k.

    Two fingerprints within k differ in blocks whose differing bits add up to
    at most k. The t blocks of a table with the fewest of them differ in at
    most as many bits as the t smallest of m numbers adding up to k can: with
    k = q*m + s, that is t*q + max(0, t - (m - s)). Some table of t blocks
    has exactly those blocks, so looking up every value within that many
    bits of the query's, in every table, finds everything within k. For
    k <= the layout's own k it is 0: the plain pigeonhole lookup.
    """
    m, t = len(layout.widths), len(layout.tables[0])
    q, s = divmod(k, m)
    return t * q + max(0, t - (m - s))


class Probe(NamedTuple):
    """One value to look up in one table: per block of the table, the bits to flip."""

    table: int
    flips: tuple[int, ...]


MAX_PROBE_K = 32  # probing past this is never cheaper than reading every row


def can_probe(layout: BlockLayout, k: int) -> bool:
    """Whether the block indexes answer k by probing (a few probes a table),
    rather than by reading every row: the one rule the store and explain share."""
    return k <= MAX_PROBE_K and _probe_count(layout, k) <= MAX_PROBES


def _probe_count(layout: BlockLayout, k: int) -> int:
    radius = probe_radius(layout, k)
    widths = layout.widths
    return sum(
        sum(comb(sum(widths[b] for b in table), i) for i in range(radius + 1))
        for table in layout.tables
    )


def probes(layout: BlockLayout, k: int) -> list[Probe] | None:
    """The lookups that find every fingerprint within k (see probe_radius),
    or None when there would be more than MAX_PROBES of them."""
    if _probe_count(layout, k) > MAX_PROBES:
        return None
    return list(_probes(layout, k))


# Made once a process for each layout and k (opening an index and its first
# query asked for a default layout's 718 probes five times, 0.65 ms each).
@lru_cache(maxsize=64)
def _probes(layout: BlockLayout, k: int) -> tuple[Probe, ...]:
    radius = probe_radius(layout, k)
    widths = layout.widths
    out = []
    for j, table in enumerate(layout.tables):
        # Bit positions of the table, as (block within the table, bit within the block).
        bits = [(i, bit) for i, b in enumerate(table) for bit in range(widths[b])]
        for r in range(radius + 1):
            for chosen in combinations(bits, r):
                flips = [0] * len(table)
                for i, bit in chosen:
                    flips[i] |= 1 << bit
                out.append(Probe(j, tuple(flips)))
    return tuple(out)


def table_flips(layout: BlockLayout, k: int) -> list[list[int]]:
    """For each table of the layout, the lookups for k as XORs in the
    fingerprint's own bits (within the table's mask): the probes (every
    value within probe_radius bits of a fingerprint's; [0] alone at radius
    0), however many, each block's flips shifted to its place. What the
    in-memory tables look up; the database asks the same as ``probes``."""
    spans = layout.spans()
    out: list[list[int]] = [[] for _ in layout.tables]
    for probe in _probes(layout, k):
        blocks = zip(layout.tables[probe.table], probe.flips, strict=True)
        out[probe.table].append(sum(f << spans[b][0] for b, f in blocks))
    return out


def even_layout(m: int, per_table: int = 1) -> BlockLayout:
    """m even blocks, a table for every combination of ``per_table`` of them."""
    return BlockLayout(even_widths(m), tuple(combinations(range(m), per_table)))


def cheapest(
    k: int,
    cost: Callable[[BlockLayout], float | None],
    *,
    grouped: Callable[[int], Iterable[int]] | None = None,
) -> BlockLayout | None:
    """The one plan search of the in-memory paths: of the layouts of m even
    blocks (1 <= m <= 16), tables of one block each (m <= k + 1: more would
    only be narrower) and of every number of blocks ``grouped(m)`` gives,
    the one whose ``cost`` is least (the first of equal costs; ``cost``
    returns None for a layout it rules out), or None if it rules out all.
    What a plan costs is each path's own (costs.py): a new index's lookups
    (costs.default_blocks), a single held query's tables
    (snapshot.single_layout), a batch's (tables.plan_for), all pairs'
    (pairs.pairs_plan)."""
    best: tuple[float, BlockLayout] | None = None
    for m in range(1, BITS // 4 + 1):
        shapes = [1] if m <= k + 1 else []
        shapes += list(grouped(m)) if grouped is not None else []
        for per_table in shapes:
            layout = even_layout(m, per_table)
            price = cost(layout)
            if price is not None and (best is None or price < best[0]):
                best = (price, layout)
    return None if best is None else best[1]
