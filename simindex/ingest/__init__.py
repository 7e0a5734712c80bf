"""Documents in, fingerprints out: reading a corpus of any size, fingerprinting it in parallel.

sources.py   read_docs: files, folders and standard input as a stream of Doc
workers.py   fingerprint_docs: their fingerprints and signatures, computed
             in worker processes, yielded in input order
"""

from simindex.ingest.sources import (
    FOLDER_KEYS,
    FORMATS,
    STDIN,
    Doc,
    SourceError,
    UnreadableFileError,
    check_paths,
    identity,
    json_object,
    missing,
    read_docs,
    read_lines,
    source_size,
)
from simindex.ingest.workers import fingerprint_docs, usable_cpus

__all__ = [
    "FOLDER_KEYS",
    "FORMATS",
    "STDIN",
    "Doc",
    "SourceError",
    "UnreadableFileError",
    "check_paths",
    "fingerprint_docs",
    "identity",
    "json_object",
    "missing",
    "read_docs",
    "read_lines",
    "source_size",
    "usable_cpus",
]
