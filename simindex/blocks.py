"""The block layout: how a 64-bit fingerprint is cut into indexed blocks.

Manku, Jain and Das Sarma (WWW 2007): cut the fingerprint into k + 1 blocks.
Two fingerprints that differ in at most k bits differ in at most k blocks, so
(pigeonhole) they agree exactly on at least one block. Looking up each block
of a query in its own database index therefore finds every fingerprint within
distance k; a Hamming filter then drops the candidates that are further away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simindex.errors import InvalidArgumentError
from simindex.fingerprint import BITS, to_signed

MAX_INDEX_K = 15  # blocks of at least 4 bits; past that a lookup is nearly a scan


def check_k(k: object, *, limit: int = BITS, what: str = "k") -> int:
    """Return k if it is a whole number in [0, limit], else raise InvalidArgumentError."""
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= limit:
        raise InvalidArgumentError(f"{what} must be a whole number from 0 to {limit}, not {k!r}")
    return k


@dataclass(frozen=True)
class BlockLayout:
    """Block widths from the most significant bit down; they add up to 64."""

    widths: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.widths or sum(self.widths) != BITS or min(self.widths) < 1:
            raise InvalidArgumentError(f"block widths must be positive and add up to {BITS}")

    @classmethod
    def for_k(cls, k: int) -> BlockLayout:
        """k + 1 blocks as even as possible, the wider ones first (k=3: 16/16/16/16)."""
        check_k(k, limit=MAX_INDEX_K, what="the index's k")
        n = k + 1
        base, extra = divmod(BITS, n)
        return cls(tuple(base + 1 if i < extra else base for i in range(n)))

    @classmethod
    def from_widths(cls, widths: Sequence[int]) -> BlockLayout:
        return cls(tuple(int(w) for w in widths))

    @property
    def k(self) -> int:
        """The largest distance the blocks answer exactly."""
        return len(self.widths) - 1

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
