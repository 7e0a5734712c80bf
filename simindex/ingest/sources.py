"""Reading a corpus of any size: files, folders and standard input as a stream of ``Doc``.

Line formats (lines, JSON Lines, CSV) are read a line at a time, so memory
holds one document, never a whole file; a "text" file, and each file of a
folder, is one document and is read whole. A file whose name ends in .gz is
read through gzip, as the text it holds.
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import itertools
import json
import os
import sys
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import BinaryIO, NamedTuple, cast

from simindex.errors import InvalidArgumentError, SimIndexError

FORMATS = ("auto", "text", "lines", "jsonl", "csv")
FOLDER_KEYS = ("parent", "path")  # how read_docs keys a file found in a folder
STDIN = "-"
_STDIN_NAME = "stdin"
_CSV_FIELD_LIMIT = 2**31 - 1  # csv's default (128 KiB) would refuse a long text
_SNIFF = 8192  # bytes of a file in a folder looked at before any of it is read as lines


class SourceError(SimIndexError):
    """A source of documents cannot be read: missing, not UTF-8, or malformed."""


class UnreadableFileError(SourceError):
    """A file cannot be read as text: it cannot be opened or read (a broken
    symbolic link, a loop, no permission, gzip data that is not or is
    damaged), it holds NUL bytes (binary; checked in folders), or it is not
    valid UTF-8. ``path`` names it (as in messages), ``reason`` says why in
    a few words ("binary", "not valid UTF-8 at line 3"). Met in a folder,
    read_docs can skip such a file instead (``on_unreadable``)."""

    def __init__(self, message: str, path: str, reason: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


class Doc(NamedTuple):
    """A document read from a source."""

    key: str
    text: str
    where: str  # for messages: "docs.jsonl line 7", "notes/a.txt", "stdin line 3"
    size: int  # bytes of the source consumed for it (for a progress bar)


# --- reading ------------------------------------------------------------------


def check_paths(paths: Sequence[str]) -> None:
    """Raise SourceError if a path does not exist or '-' (stdin) is given twice.

    Call it before creating or locking anything: ``read_docs`` checks again.
    """
    paths = _as_paths(paths)
    if paths.count(STDIN) > 1:
        raise SourceError("standard input ('-') can be read only once")
    for path in paths:
        if path != STDIN and not os.path.exists(path):
            raise SourceError(missing(path)[0])


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


def read_docs(
    paths: Sequence[str],
    *,
    fmt: str = "auto",
    key_field: str = "id",
    text_field: str = "text",
    stdin_key: str | None = None,
    folder_keys: str = "path",
    skip: Collection[str] = (),
    on_skip: Callable[[str], None] | None = None,
    on_unreadable: Callable[[str, str], None] | None = None,
) -> Iterator[Doc]:
    """The documents of files, folders and stdin ('-'), one at a time, in order.

    ``fmt``: "text" (a file is one document keyed by its path as given),
    "lines" (a non-blank line is one, keyed "PATH:LINENO"), "jsonl" (one JSON
    object a line; ``key_field`` and ``text_field`` name its fields), "csv" (a
    header row, then a record per document; fields may hold newlines) or
    "auto": .jsonl/.ndjson files are JSON Lines, .csv files CSV, others text.
    A folder is read recursively, hidden files and folders skipped, names
    sorted; each file is one document, or with an explicit line format, read
    in it. ``folder_keys`` says how such a file is named (its key, and its
    name in "lines" keys and in messages): "path" (the default, the CLI's
    rule), the path that opens it: the folder as given joined with the path
    inside it ("data/corpus/a/b.txt"), as a file given directly is keyed by
    its path as given; "parent", its path from the folder's parent
    ("corpus/a/b.txt" for "data/corpus": the rule of earlier builds). The
    text read from stdin in text form is keyed ``stdin_key``.

    ``skip``: files not to read when met in a folder, compared by identity
    (st_dev and st_ino, so links to them are skipped too), such as the index
    being added to and its -wal and -shm files; ``on_skip`` is called with
    the path of each one skipped. Files given directly are not compared.

    A file whose name ends in .gz (any case) is read through gzip: its key
    and name keep the .gz, and its format (with "auto") is the one of its
    name without it (notes.jsonl.gz is JSON Lines).

    A file met in a folder that cannot be read as text (UnreadableFileError:
    it cannot be opened or read, holds a NUL byte, or is not valid UTF-8; in
    a line format, judged by its first 8 KiB) raises, or, with
    ``on_unreadable``, is skipped: it is called with the file's name and the
    reason in a few words. (An error later in a file read as lines, once
    some of its documents were read, still raises.) A file given by name is
    read whatever bytes it holds, and raises if it is not UTF-8.

    Arguments are checked now; the files are read as the result is iterated.
    Errors in a source (invalid UTF-8, a broken JSON line) raise SourceError
    naming the file and line.
    """
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if folder_keys not in FOLDER_KEYS:
        raise InvalidArgumentError(
            f"folder_keys must be one of {', '.join(FOLDER_KEYS)}, not {folder_keys!r}"
        )
    paths = _as_paths(paths)
    check_paths(paths)
    if STDIN in paths and fmt in ("auto", "text") and not stdin_key:
        raise InvalidArgumentError("the document read from standard input needs a key")
    walk = _Walk(folder_keys, _as_paths(skip), on_skip)
    return _read_all(paths, fmt, key_field, text_field, stdin_key or "", walk, on_unreadable)


def source_size(paths: Sequence[str], *, skip: Collection[str] = ()) -> int:
    """Bytes the sources hold (files, and folders' files as read_docs reads them).

    The total of the ``size`` of the documents read from them, for a progress
    bar; stdin and pipes count 0. ``skip`` as for read_docs.
    """
    total = 0
    walk = _Walk("parent", _as_paths(skip), None)
    for path in _as_paths(paths):
        if path == STDIN:
            continue
        if os.path.isdir(path):
            total += sum(_text_size(file) for file, _ in walk(path))
        elif os.path.isfile(path):
            total += _text_size(path)
    return total


def _text_size(path: str) -> int:
    """Bytes a file holds; for a .gz file, of the text it holds (gzip's
    record of it: modulo 4 GiB, the last member's); 0 if it cannot be read."""
    try:
        size = os.path.getsize(path)
        if not _gzipped(path) or size < 18:  # (a header and a trailer)
            return size
        with open(path, "rb") as f:
            f.seek(-4, os.SEEK_END)
            return int.from_bytes(f.read(4), "little")
    except OSError:
        return 0


def identity(path: str) -> tuple[int, int] | None:
    """The (st_dev, st_ino) of the file a path names (links followed), or None
    if there is none (or it cannot be looked at)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _as_paths(paths: Iterable[str]) -> list[str]:
    if isinstance(paths, (str, bytes)):
        raise InvalidArgumentError("paths is a list of paths, not one string")
    return [os.fspath(p) for p in paths]


def _read_all(
    paths: list[str],
    fmt: str,
    key_field: str,
    text_field: str,
    stdin_key: str,
    walk: _Walk,
    on_unreadable: Callable[[str, str], None] | None,
) -> Iterator[Doc]:
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            kind = "text" if fmt == "auto" else fmt
            for file, name in walk(path):
                docs = _read_source(file, name, kind, key_field, text_field, name, in_folder=True)
                if on_unreadable is None:
                    yield from docs
                else:
                    yield from _unless_unreadable(docs, on_unreadable)
        else:
            kind = fmt if fmt != "auto" else _kind_of(path)
            name = _STDIN_NAME if path == STDIN else path
            key = stdin_key if path == STDIN else path
            yield from _read_source(path, name, kind, key_field, text_field, key)


def _unless_unreadable(
    docs: Iterator[Doc], on_unreadable: Callable[[str, str], None]
) -> Iterator[Doc]:
    """A folder's file's documents; if it cannot be read as text before any
    of them is read, none, and on_unreadable is told."""
    started = False
    try:
        for doc in docs:
            started = True
            yield doc
    except UnreadableFileError as exc:
        if started:  # part of it is read already: an error in the file
            raise
        on_unreadable(exc.path, exc.reason)


def _gzipped(path: str) -> bool:
    return path.lower().endswith(".gz")


def _kind_of(path: str) -> str:
    lower = path.lower().removesuffix(".gz")
    if lower.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    return "text"


def _read_source(
    path: str,
    name: str,
    kind: str,
    key_field: str,
    text_field: str,
    key: str,
    *,
    in_folder: bool = False,
) -> Iterator[Doc]:
    if kind == "text":
        yield _text_doc(path, name, key, in_folder=in_folder)
    elif kind == "lines":
        yield from _line_docs(path, name, in_folder)
    elif kind == "jsonl":
        yield from _jsonl_docs(path, name, key_field, text_field, in_folder)
    else:
        yield from _csv_docs(path, name, key_field, text_field, in_folder)


class _Walk:
    """Lists the files of folders for read_docs: (path to open, name) of each
    regular, non-hidden file under a folder, not one of ``skip``.

    Depth first, names sorted in each folder. The name is the path from the
    folder's parent, with '/' ("parent"), or the path that opens it ("path").
    Symbolic links to files are read; links to folders are not followed (no
    loops); a broken link or a link loop is listed, for reading it to fail
    (and be skipped or reported). Memory: one folder listing a level. The
    files to skip are looked at again for each folder listed (an index's
    -wal appears when it is opened), and a file is compared with them only
    when there are some.
    """

    def __init__(self, keys: str, skip: list[str], on_skip: Callable[[str], None] | None) -> None:
        self.keys = keys
        self.skip = skip
        self.on_skip = on_skip

    def __call__(self, folder: str) -> Iterator[tuple[str, str]]:
        if self.keys == "path":
            return self._visit(folder, None)
        top = os.path.basename(os.path.normpath(folder))
        if top in ("", ".", ".."):
            top = os.path.basename(os.path.abspath(folder))
        return self._visit(folder, f"{top}/" if top else "")

    def _visit(self, directory: str, prefix: str | None) -> Iterator[tuple[str, str]]:
        try:
            with os.scandir(directory) as scan:
                entries = sorted((e for e in scan if not e.name.startswith(".")), key=_name)
        except OSError as exc:
            raise SourceError(f"cannot read folder {directory}: {exc.strerror or exc}") from exc
        skipped = {i for i in map(identity, self.skip) if i is not None}
        for entry in entries:
            # entry.path is the folder as given joined with the name: the path that opens it
            key = entry.path if prefix is None else f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from self._visit(entry.path, None if prefix is None else key + "/")
            elif _is_file(entry):
                if skipped and identity(entry.path) in skipped:
                    if self.on_skip is not None:
                        self.on_skip(entry.path)
                    continue
                yield entry.path, key


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_file(entry: os.DirEntry[str]) -> bool:
    """A regular file (through a link too), or a link that leads nowhere (a
    broken link, a loop): reading it fails, and says why."""
    try:
        return entry.is_file() or (entry.is_symlink() and not os.path.exists(entry.path))
    except OSError:  # a loop (ELOOP), or no permission to look
        return True


@contextmanager
def _open(path: str, name: str, sniff: bool = False) -> Iterator[BinaryIO]:
    """The bytes of a file (of the text a .gz file holds) or stdin. With
    ``sniff``, its first 8 KiB must be text: no NUL byte, valid UTF-8."""
    if path == STDIN:
        yield sys.stdin.buffer
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
        unpacked = gzip.GzipFile(fileobj=f, mode="rb") if _gzipped(path) else nullcontext(f)
        with unpacked as data:
            if sniff:
                with _reading(name):
                    head = data.peek(_SNIFF)[:_SNIFF]
                _sniff(head, name)
            yield cast(BinaryIO, data)


def _sniff(head: bytes, name: str) -> None:
    """A file in a folder, about to be read as lines: is it text, as far as its head shows?"""
    if b"\0" in head:
        raise _binary(name)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError as exc:
        line = head.count(b"\n", 0, exc.start) + 1
        raise UnreadableFileError(
            f"{name} line {line} is not valid UTF-8 (byte {exc.start})",
            name,
            f"not valid UTF-8 at line {line}",
        ) from None


def _binary(name: str) -> UnreadableFileError:
    return UnreadableFileError(f"{name} is binary (it holds NUL bytes), not text", name, "binary")


@contextmanager
def _reading(name: str) -> Iterator[None]:
    """Errors while a file is read (a disk error; gzip data that is not, or is
    cut short or damaged) as UnreadableFileError."""
    try:
        yield
    except gzip.BadGzipFile as exc:
        raise UnreadableFileError(
            f"{name} is not gzip data ({exc})", name, "not gzip data"
        ) from None
    except (EOFError, zlib.error) as exc:
        raise UnreadableFileError(
            f"{name} holds damaged gzip data ({exc})", name, "damaged gzip data"
        ) from None
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise UnreadableFileError(
            f"cannot read {name}: {why}", name, f"cannot read: {why}"
        ) from exc


def _text_doc(path: str, name: str, key: str, *, in_folder: bool = False) -> Doc:
    with _open(path, name) as f, _reading(name):
        data = f.read()
    if in_folder and b"\0" in data:
        raise _binary(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        of = "of its text" if _gzipped(path) else "of the file"
        raise UnreadableFileError(
            f"{name} is not valid UTF-8 (line {line}, byte {exc.start} {of})",
            name,
            f"not valid UTF-8 at line {line}",
        ) from None
    return Doc(key, text.removeprefix("\ufeff"), name, len(data))


def _lines(f: BinaryIO, name: str) -> Iterator[tuple[int, str, int]]:
    """(line number, text with its line ending, bytes) of each line; BOM dropped."""
    offset = 0
    raws = iter(f)
    for number in itertools.count(1):
        with _reading(name):
            raw = next(raws, None)
        if raw is None:
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(
                f"{name} line {number} is not valid UTF-8 (byte {offset + exc.start} of the file)",
                name,
                f"not valid UTF-8 at line {number}",
            ) from None
        if number == 1:
            line = line.removeprefix("\ufeff")
        offset += len(raw)
        yield number, line, len(raw)


def read_lines(path: str) -> Iterator[tuple[int, str, int]]:
    """(line number, text without its line ending, bytes) of each line of a
    UTF-8 file or stdin ('-'), one at a time; errors as SourceError."""
    name = _STDIN_NAME if path == STDIN else path
    with _open(path, name) as f:
        for number, line, size in _lines(f, name):
            yield number, _strip_eol(line), size


def _strip_eol(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def _line_docs(path: str, name: str, in_folder: bool = False) -> Iterator[Doc]:
    with _open(path, name, sniff=in_folder) as f:
        skipped = 0  # bytes of blank lines, counted with the next document
        for number, line, size in _lines(f, name):
            text = _strip_eol(line)
            if not text.strip():
                skipped += size
                continue
            yield Doc(f"{name}:{number}", text, f"{name} line {number}", skipped + size)
            skipped = 0


def json_object(line: str, where: str) -> dict[str, object]:
    """One JSON Lines record, which must be an object; errors name `where`."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where} is not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise SourceError(f"{where} is nested too deeply to read") from None
    except ValueError as exc:  # e.g. a number with thousands of digits
        raise SourceError(f"{where} cannot be read as JSON ({exc})") from None
    if not isinstance(record, dict):
        raise SourceError(f"{where} is not a JSON object")
    return record


def _jsonl_docs(
    path: str, name: str, key_field: str, text_field: str, in_folder: bool = False
) -> Iterator[Doc]:
    with _open(path, name, sniff=in_folder) as f:
        skipped = 0
        for number, line, size in _lines(f, name):
            if not line.strip():
                skipped += size
                continue
            where = f"{name} line {number}"
            record = json_object(line, where)
            key = _key(record.get(key_field), where, key_field)
            text = record.get(text_field)
            if not isinstance(text, str):
                raise SourceError(f"{where} has no string field {text_field!r} for the text")
            yield Doc(key, text, where, skipped + size)
            skipped = 0


def _key(value: object, where: str, field: str) -> str:
    if type(value) is int:  # not bool
        return str(value)
    if not isinstance(value, str):
        raise SourceError(f"{where} has no string or integer field {field!r} for the key")
    if not value:
        raise SourceError(f"{where} has an empty key (field {field!r})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(
            f"{where} has a key that is not valid Unicode (a lone surrogate, field {field!r})"
        ) from None
    return value


class _Counted:
    """The lines of a file for csv.reader, counting their bytes and numbers."""

    def __init__(self, lines: Iterator[tuple[int, str, int]]) -> None:
        self.lines = lines
        self.number = 0
        self.size = 0

    def __iter__(self) -> Iterator[str]:
        for number, line, size in self.lines:
            self.number = number
            self.size += size
            yield line


def _csv_docs(
    path: str, name: str, key_field: str, text_field: str, in_folder: bool = False
) -> Iterator[Doc]:
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)  # only ever raised, for every csv user
    with _open(path, name, sniff=in_folder) as f:
        lines = _Counted(_lines(f, name))
        reader = csv.reader(iter(lines))
        header: list[str] | None = None
        columns = (0, 0)
        used = 0  # bytes already given to documents
        while True:
            start = lines.number + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise SourceError(f"{name} line {lines.number} is not valid CSV ({exc})") from None
            if not any(field.strip() for field in row):
                continue
            if header is None:
                header = row
                columns = (
                    _column(header, key_field, name, "key"),
                    _column(header, text_field, name, "text"),
                )
                continue
            where = f"{name} line {start}"
            if max(columns) >= len(row):
                raise SourceError(
                    f"{where} has {len(row)} field{'s' * (len(row) != 1)}; the header has "
                    f"{len(header)}"
                )
            key = _key(row[columns[0]], where, key_field)
            yield Doc(key, row[columns[1]], where, lines.size - used)
            used = lines.size


def _column(header: list[str], field: str, name: str, role: str) -> int:
    try:
        return header.index(field)
    except ValueError:
        shown = ", ".join(repr(h) for h in header)
        raise SourceError(
            f"{name} has no column {field!r} for the {role} (its header: {shown})"
        ) from None
