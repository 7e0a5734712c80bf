"""Opening a source: a file or standard input, through the decompressor its
name or its first bytes say, with errors that name it."""

from __future__ import annotations

import codecs
import errno
import gzip
import io
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO, NamedTuple, Protocol

from simindex.ingest import compression
from simindex.ingest.doc import STDIN, SourceError, UnreadableFileError

SNIFF = 8192  # bytes of a file in a folder looked at before any of it is read as lines
STDIN_NAME = "stdin"  # standard input, as messages name it


def missing(path: str) -> tuple[str, str]:
    """Why a path that os.path.exists says is not there cannot be opened:
    (a message, a few words) for "no such file", a symbolic link loop, a
    broken symbolic link, or a folder on the way that cannot be searched."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            if os.path.islink(path):
                return f"{path} is a symbolic link loop", "a symbolic link loop"
            return f"{path} goes through a symbolic link loop", "a symbolic link loop"
        if os.path.islink(path) and exc.errno in (errno.ENOENT, errno.ENOTDIR):
            target = os.readlink(path)
            return (
                f"{path} is a broken symbolic link (to {target}, which does not exist)",
                "a broken symbolic link",
            )
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            reason = f"cannot read: {exc.strerror or exc}"
            return f"cannot read {path}: {exc.strerror or exc}", reason
    except ValueError:  # a NUL in the path
        pass
    return f"no such file: {path}", "no such file"


def first_bytes(path: str) -> bytes:
    """The first bytes of a file or stdin (b"" if it cannot be read)."""
    try:
        if path == STDIN:
            return stdin().peek(compression.MAGIC_BYTES)[: compression.MAGIC_BYTES]
        with open(path, "rb") as f:
            return f.read(compression.MAGIC_BYTES)
    except (OSError, ValueError):
        return b""


def packing_of(path: str, head: bytes) -> str | None:
    """The compression a file is read through: its name's, else its head's."""
    if path != STDIN:
        named = compression.by_name(path)
        if named is not None:
            return named
    return compression.by_content(head)


class Buffered(Protocol):
    """A buffered binary stream: bytes read, looked at ahead, or by lines."""

    def read(self, size: int = -1, /) -> bytes: ...
    def peek(self, size: int = 0, /) -> bytes: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class Source(NamedTuple):
    """An opened source: its bytes (decompressed), the compression they came
    through, and, where documents' sizes count the compressed bytes (zstd,
    bzip2, xz files), how many of those were read so far."""

    data: Buffered
    packing: str | None
    consumed: Callable[[], int] | None


class _Raw(io.RawIOBase):
    """A binary stream that cannot peek (a test's stdin), for a BufferedReader
    to read from; closing it leaves the stream open."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = getattr(self.stream, "read1", self.stream.read)(len(buffer))
        buffer[: len(data)] = data
        return len(data)


_stdin_peekable: list[tuple[object, Buffered]] = []  # (sys.stdin, its bytes, peekable)


def stdin() -> Buffered:
    """Standard input's bytes, as a stream whose head can be looked at
    without taking it (made once for each sys.stdin; never closed)."""
    if _stdin_peekable and _stdin_peekable[0][0] is sys.stdin:
        return _stdin_peekable[0][1]
    raw = sys.stdin.buffer
    stream: Buffered = raw if hasattr(raw, "peek") else io.BufferedReader(_Raw(raw))
    _stdin_peekable[:] = [(sys.stdin, stream)]
    return stream


@contextmanager
def open_source(path: str, name: str, sniff: bool = False) -> Iterator[Source]:
    """The bytes of a file (of the text a compressed file holds) or stdin,
    through the decompressor its name (a file's), else its first bytes say.
    With ``sniff``, its first 8 KiB must be text: no NUL byte, valid UTF-8."""
    if path == STDIN:
        f = stdin()
        packing = compression.by_content(f.peek(compression.MAGIC_BYTES))
        if packing is None:
            yield Source(f, None, None)
            return
        with reading(name, packing):
            unpacked = compression.reader(packing, f)
        with unpacked:
            yield Source(unpacked, packing, None)
        return
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below; stdin must not be)
    except IsADirectoryError:
        raise SourceError(f"{name} is a folder, not a file") from None
    except OSError as exc:
        if isinstance(exc, FileNotFoundError) or exc.errno == errno.ELOOP:
            message, reason = missing(path)
            message = message.replace(path, name, 1)
        else:
            message = f"cannot read {name}: {exc.strerror or exc}"
            reason = f"cannot read: {exc.strerror or exc}"
        raise UnreadableFileError(message, name, reason) from exc
    with f:
        with reading(name):
            packing = packing_of(path, f.peek(compression.MAGIC_BYTES))
        if packing is None:
            source = Source(f, None, None)
        else:
            with reading(name, packing):
                unpacked = compression.reader(packing, f)
            source = Source(unpacked, packing, None if packing == "gzip" else f.tell)
        try:
            if sniff:
                with reading(name, packing):
                    head = source.data.peek(SNIFF)[:SNIFF]
                check_text(head, name, packing)
            yield source
        finally:
            if source.data is not f:
                source.data.close()


def check_text(head: bytes, name: str, packing: str | None = None) -> None:
    """A file in a folder, about to be read as lines: is it text, as far as its head shows?"""
    if b"\0" in head:
        raise binary(name)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        line = head.count(b"\n", 0, exc.start) + 1
        raise not_utf8(name, line, exc.start, packing) from None


def not_utf8(name: str, line: int, byte: int, packing: str | None) -> UnreadableFileError:
    """The error for bytes that are not UTF-8, said one way wherever text is
    read: the line, and the byte's offset in the file, in the text a
    compressed file holds, or in standard input."""
    whole = "its text" if packing else "the input" if name == STDIN_NAME else "the file"
    return UnreadableFileError(
        f"{name} line {line} is not valid UTF-8 (byte {byte} of {whole})",
        name,
        f"not valid UTF-8 at line {line}",
    )


def binary(name: str) -> UnreadableFileError:
    return UnreadableFileError(f"{name} is binary (it holds NUL bytes), not text", name, "binary")


@contextmanager
def reading(name: str, packing: str | None = None) -> Iterator[None]:
    """Errors while a file is read (a disk error; compressed data that is
    not, or is cut short or damaged) as UnreadableFileError."""
    what = compression.described(packing or "gzip")
    try:
        yield
    except gzip.BadGzipFile as exc:
        raise UnreadableFileError(
            f"{name} is not gzip data ({exc})", name, "not gzip data"
        ) from None
    except (EOFError, zlib.error) as exc:
        raise UnreadableFileError(
            f"{name} holds damaged {what} data ({exc})", name, f"damaged {what} data"
        ) from None
    except compression.data_errors() as exc:
        raise not_data(name, what, exc) from None
    except OSError as exc:
        if packing == "bzip2":  # (bz2 says "Invalid data stream" as an OSError)
            raise not_data(name, what, exc) from None
        why = exc.strerror or str(exc)
        raise UnreadableFileError(
            f"cannot read {name}: {why}", name, f"cannot read: {why}"
        ) from exc


def not_data(name: str, what: str, exc: BaseException) -> UnreadableFileError:
    return UnreadableFileError(
        f"{name} is not {what} data, or it is damaged ({exc})", name, f"not {what} data"
    )
