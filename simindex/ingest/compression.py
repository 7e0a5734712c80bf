"""Compressed files, in and out: gzip, zstd, bzip2 and xz, known by name and by content.

A file is read through the decompressor its name says (``notes.jsonl.zst``)
or, when its name says none, the one its first bytes say (``data.jsonl``
that is really gzip; standard input). What a name says wins: a ``.gz`` file
that is not gzip data is an error, not text. zstd needs the zstandard
package (``pip install 'simindex[formats]'``); the others are the standard
library's.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import io
import lzma
import sys
from typing import IO, Any, cast

from simindex.errors import SimIndexError

EXTRA = "formats"  # the optional dependencies' extra: pip install 'simindex[formats]'

# name, suffix, first bytes, what its data is called in messages. (bzip2's
# "BZh" could begin a text: by_content wants its block size and a block's
# magic number after it too.)
_KINDS = (
    ("gzip", ".gz", b"\x1f\x8b", "gzip"),
    ("zstd", ".zst", b"\x28\xb5\x2f\xfd", "zstd"),
    ("bzip2", ".bz2", b"BZh", "bzip2"),
    ("xz", ".xz", b"\xfd7zXZ\x00", "xz"),
)
_BZIP2_BLOCKS = (b"1AY&SY", b"\x17rE8P\x90")  # a block's magic, or the end of an empty stream
SUFFIXES = {suffix: name for name, suffix, _, _ in _KINDS}
MAGIC_BYTES = 10  # enough of a file's head to tell them all apart
PARQUET_MAGIC = b"PAR1"  # a Parquet file begins and ends with it


class MissingDependencyError(SimIndexError, ImportError):
    """An optional package a file format needs is not installed. ``module``
    names it; the message says what to install."""

    def __init__(self, what: str, module: str) -> None:
        super().__init__(f"{what} needs {module}: pip install 'simindex[{EXTRA}]'")
        self.module = module
        self.what = what


def optional(module: str, what: str) -> Any:
    """Import an optional dependency, or raise MissingDependencyError
    (``what``: "reading .parquet", "writing .zst")."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(what, module.partition(".")[0]) from None


def by_name(path: str) -> str | None:
    """The compression a file's name says (by its last suffix, any case), or None."""
    lower = path.lower()
    for suffix, name in SUFFIXES.items():
        if lower.endswith(suffix):
            return name
    return None


def strip_suffix(path: str) -> str:
    """A name without the compression suffix it ends in, if any."""
    kind = by_name(path)
    return path[: -len(suffix_of(kind))] if kind else path


def suffix_of(kind: str) -> str:
    return next(suffix for name, suffix, _, _ in _KINDS if name == kind)


def by_content(head: bytes) -> str | None:
    """The compression a file's first bytes say, or None."""
    for name, _, magic, _ in _KINDS:
        if head.startswith(magic):
            if name == "bzip2" and not (head[3:4].isdigit() and head[4:10] in _BZIP2_BLOCKS):
                continue
            return name
    return None


def reader(kind: str, raw: Any) -> Any:
    """The decompressed bytes of a binary stream, as a buffered stream (it
    has peek); closing it leaves ``raw`` open."""
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if kind == "bzip2":
        return bz2.BZ2File(raw, mode="rb")
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb")
    zstandard = optional("zstandard", "reading .zst")
    stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=False)
    return io.BufferedReader(stream)


def writer(kind: str, raw: IO[bytes]) -> IO[bytes]:
    """A binary stream that compresses into ``raw``; closing it ends the
    compressed data and leaves ``raw`` open."""
    if kind == "gzip":
        return cast(IO[bytes], gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0))
    if kind == "bzip2":
        return cast(IO[bytes], bz2.BZ2File(raw, mode="wb"))
    if kind == "xz":
        return cast(IO[bytes], lzma.LZMAFile(raw, mode="wb"))
    zstandard = optional("zstandard", "writing .zst")
    return cast(IO[bytes], zstandard.ZstdCompressor().stream_writer(raw, closefd=False))


def data_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a decompressor raises for data that is not, or is
    damaged (beside EOFError, zlib.error and gzip.BadGzipFile)."""
    errors: list[type[BaseException]] = [lzma.LZMAError]
    zstandard = sys.modules.get("zstandard")
    if zstandard is not None:
        errors.append(zstandard.ZstdError)
    return tuple(errors)


def described(kind: str) -> str:
    return next(words for name, _, _, words in _KINDS if name == kind)
