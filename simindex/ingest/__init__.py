"""Documents in, fingerprints out: reading a corpus of any size, fingerprinting it in parallel.

doc.py          Doc, a document read, and the errors reading raises
sources.py      read_docs: files, folders and standard input as a stream of Doc
opening.py      a file or stdin opened, decompressed, its errors named
compression.py  gzip, zstd, bzip2 and xz, known by name and by content
parquet.py      Parquet files' rows as documents, a record batch at a time
frames.py       as_pairs: a pyarrow Table or RecordBatch, or a pandas
                DataFrame, as the (key, text) pairs add_many and
                dedup_stream take
workers.py      fingerprint_docs: their fingerprints and signatures, computed
                in worker processes, yielded in input order
"""

from simindex.ingest.compression import MissingDependencyError
from simindex.ingest.frames import as_pairs
from simindex.ingest.sources import (
    FOLDER_KEYS,
    FORMATS,
    RECORD_FORMATS,
    STDIN,
    Doc,
    SourceError,
    SourceFormat,
    UnreadableFileError,
    check_paths,
    identity,
    json_object,
    missing,
    read_docs,
    read_lines,
    read_text,
    source_format,
    source_size,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from simindex.costs import usable_cpus
    from simindex.ingest.workers import fingerprint_docs


def __getattr__(name: str) -> object:
    """The worker pool's two names load with it (multiprocessing, and
    usable_cpus with numpy: simindex.costs): a command that reads one text
    never needs them."""
    if name in ("fingerprint_docs", "usable_cpus"):
        from simindex.ingest import workers

        return getattr(workers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FOLDER_KEYS",
    "FORMATS",
    "RECORD_FORMATS",
    "STDIN",
    "Doc",
    "MissingDependencyError",
    "SourceError",
    "SourceFormat",
    "UnreadableFileError",
    "as_pairs",
    "check_paths",
    "fingerprint_docs",
    "identity",
    "json_object",
    "missing",
    "read_docs",
    "read_lines",
    "read_text",
    "source_format",
    "source_size",
    "usable_cpus",
]
