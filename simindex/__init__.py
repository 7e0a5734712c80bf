"""simindex: a persistent near-duplicate index for text.

>>> from simindex import SimIndex
>>> with SimIndex(":memory:") as index:
...     _ = index.add("doc-1", "the quick brown fox jumps over the lazy dog")
...     [m.key for m in index.query("The quick brown fox jumps over the lazy dog!")]
['doc-1']
"""

from simindex.blocks import BlockLayout
from simindex.errors import (
    ConfigMismatchError,
    DamagedIndexError,
    EmptyTextError,
    IndexVersionError,
    InvalidArgumentError,
    NotAnIndexError,
    SimIndexError,
    StorageError,
)
from simindex.fingerprint import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    hamming,
    simhash,
    to_signed,
    to_unsigned,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from simindex.index import FullScanWarning, SimIndex
    from simindex.query import Match


def __getattr__(name: str) -> object:
    # The database side (SQLAlchemy, Alembic) loads on first use, so processes
    # that only fingerprint (ingest's workers) never pay for it.
    if name in ("SimIndex", "FullScanWarning"):
        from simindex import index

        return getattr(index, name)
    if name == "Match":
        from simindex.query import Match

        return Match
    raise AttributeError(f"module 'simindex' has no attribute {name!r}")


__all__ = [
    "BlockLayout",
    "DEFAULT_CONFIG",
    "ConfigMismatchError",
    "DamagedIndexError",
    "EmptyTextError",
    "FingerprintConfig",
    "FullScanWarning",
    "IndexVersionError",
    "InvalidArgumentError",
    "Match",
    "NotAnIndexError",
    "SimIndex",
    "SimIndexError",
    "StorageError",
    "hamming",
    "simhash",
    "to_signed",
    "to_unsigned",
]
