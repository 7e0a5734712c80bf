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
    EmptyTextError,
    IndexVersionError,
    InvalidArgumentError,
    NotAnIndexError,
    SimIndexError,
    StorageError,
)
from simindex.fingerprint import FingerprintConfig, hamming, simhash, to_signed, to_unsigned
from simindex.index import FullScanWarning, SimIndex
from simindex.query import Match

__all__ = [
    "BlockLayout",
    "ConfigMismatchError",
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
