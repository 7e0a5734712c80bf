"""simindex: a persistent near-duplicate index for text.

>>> from simindex import SimIndex
>>> with SimIndex(":memory:") as index:
...     _ = index.add("doc-1", "the quick brown fox jumps over the lazy dog")
...     [m.key for m in index.query("The quick brown fox jumps over the lazy dog!")]
['doc-1']
"""

from simindex.errors import (
    ClosedIndexError,
    ConfigMismatchError,
    DamagedIndexError,
    EmptyTextError,
    IndexVersionError,
    InvalidArgumentError,
    NoIndexError,
    NotAnIndexError,
    PassagesError,
    PassagesNotKeptError,
    SimIndexError,
    StalePassagesError,
    StorageError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from simindex.blocks import BlockLayout
    from simindex.dedup import Decision, DedupStream, dedup_stream
    from simindex.fingerprint import (
        DEFAULT_CONFIG,
        FingerprintConfig,
        hamming,
        simhash,
        to_signed,
        to_unsigned,
    )
    from simindex.index import SimIndex
    from simindex.results import CheckReport, Cluster, FullScanWarning, Match, Overlap, Pair

# Everything but the errors loads on first use: the database side (SQLAlchemy,
# Alembic) never in processes that only fingerprint (ingest's workers), and
# nothing heavy (numpy, xxhash) before the simindex command can catch Ctrl-C
# (simindex/__main__.py).
_LAZY = {
    "BlockLayout": "simindex.blocks",
    "Decision": "simindex.dedup",
    "DedupStream": "simindex.dedup",
    "dedup_stream": "simindex.dedup",
    "DEFAULT_CONFIG": "simindex.fingerprint",
    "FingerprintConfig": "simindex.fingerprint",
    "hamming": "simindex.fingerprint",
    "simhash": "simindex.fingerprint",
    "to_signed": "simindex.fingerprint",
    "to_unsigned": "simindex.fingerprint",
    "SimIndex": "simindex.index",
    "CheckReport": "simindex.results",
    "Cluster": "simindex.results",
    "FullScanWarning": "simindex.results",
    "Match": "simindex.results",
    "Overlap": "simindex.results",
    "Pair": "simindex.results",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simindex' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "BlockLayout",
    "DEFAULT_CONFIG",
    "CheckReport",
    "Cluster",
    "ClosedIndexError",
    "ConfigMismatchError",
    "DamagedIndexError",
    "Decision",
    "DedupStream",
    "EmptyTextError",
    "FingerprintConfig",
    "FullScanWarning",
    "IndexVersionError",
    "InvalidArgumentError",
    "Match",
    "NoIndexError",
    "NotAnIndexError",
    "Overlap",
    "Pair",
    "PassagesError",
    "PassagesNotKeptError",
    "SimIndex",
    "SimIndexError",
    "StalePassagesError",
    "StorageError",
    "dedup_stream",
    "hamming",
    "simhash",
    "to_signed",
    "to_unsigned",
]
