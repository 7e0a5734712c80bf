"""Reading a corpus of any size: files, folders and standard input as a stream of ``Doc``.

Line formats (lines, JSON Lines, CSV) are read a line at a time, so memory
holds one document, never a whole file; a "text" file, and each file of a
folder, is one document and is read whole. Parquet is read a record batch at
a time (simindex.ingest.parquet). A compressed file (gzip, zstd, bzip2, xz:
by its name, or by its first bytes when its name says none) is read as the
text it holds (simindex.ingest.opening, simindex.ingest.compression).
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import NamedTuple

from simindex.errors import InvalidArgumentError
from simindex.ingest import compression
from simindex.ingest.doc import STDIN, Doc, SourceError, UnreadableFileError, key_of
from simindex.ingest.opening import (
    STDIN_NAME,
    Source,
    binary,
    first_bytes,
    missing,
    not_utf8,
    open_source,
    packing_of,
    reading,
)

__all__ = [  # (Doc, the errors and missing: defined beside, read from here too)
    "FOLDER_KEYS",
    "FORMATS",
    "RECORD_FORMATS",
    "STDIN",
    "Doc",
    "SourceError",
    "SourceFormat",
    "UnreadableFileError",
    "check_paths",
    "identity",
    "json_object",
    "missing",
    "read_docs",
    "read_lines",
    "read_text",
    "source_format",
    "source_size",
]

FORMATS = ("auto", "text", "lines", "jsonl", "csv", "parquet")
RECORD_FORMATS = ("jsonl", "csv", "parquet")  # a document is a record, with fields
FOLDER_KEYS = ("parent", "path")  # how read_docs keys a file found in a folder
_CSV_FIELD_LIMIT = 2**31 - 1  # csv's default (128 KiB) would refuse a long text


class SourceFormat(NamedTuple):
    """How read_docs reads a path: its format ("text", "lines", "jsonl",
    "csv", "parquet"; "folder" for a folder) and the compression it is read
    through ("gzip", "zstd", "bzip2", "xz" or None)."""

    kind: str
    compression: str | None


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
    on_empty_folder: Callable[[str], None] | None = None,
    records: bool = False,
) -> Iterator[Doc]:
    """The documents of files, folders and stdin ('-'), one at a time, in order.

    ``fmt``: "text" (a file is one document keyed by its path as given),
    "lines" (a non-blank line is one, keyed "PATH:LINENO"), "jsonl" (one JSON
    object a line; ``key_field`` and ``text_field`` name its fields), "csv" (a
    header row, then a record per document; fields may hold newlines),
    "parquet" (a row per document, the key and text in columns ``key_field``
    and ``text_field``; read a record batch at a time; needs pyarrow) or
    "auto": .jsonl/.ndjson files are JSON Lines, .csv files CSV,
    .parquet/.pq files and files that begin as Parquet does Parquet, others
    text.
    A folder is read recursively, hidden files and folders skipped, names
    sorted; each of its files is read as a file given by name is (with
    "auto", by its name, or as Parquet by its content; a text file is one
    document, marked ``Doc.in_folder``), or with an explicit format, in
    that format. ``on_empty_folder`` is called with each folder given in
    which no file is found to read. ``folder_keys`` says how such a file is named (its key, and its
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

    A compressed file is read as the text it holds: one whose name ends in
    .gz, .zst, .bz2 or .xz (any case) through gzip, zstd, bzip2 or xz (an
    error if it is not such data), and one whose name says none, stdin too,
    through the one its first bytes say, if any. Its key and name keep the
    suffix, and its format (with "auto") is the one of its name without it
    (notes.jsonl.zst is JSON Lines). zstd needs the zstandard package.

    ``records``: each Doc of a record format (JSON Lines, CSV, Parquet)
    carries its record as read (``Doc.record``), to be written out again.

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
    if STDIN in paths and fmt == "parquet":
        raise InvalidArgumentError("Parquet cannot be read from standard input; give its file")
    walk = _Walk(folder_keys, _as_paths(skip), on_skip)
    fields = _Fields(key_field, text_field, records)
    return _read_all(paths, fmt, fields, stdin_key or "", walk, on_unreadable, on_empty_folder)


def source_format(path: str, fmt: str = "auto") -> SourceFormat:
    """How read_docs with ``fmt`` reads a path (a file, a folder, or '-',
    whose first bytes are looked at without being taken)."""
    if path != STDIN and os.path.isdir(path):
        return SourceFormat("folder", None)
    head = first_bytes(path)
    kind = fmt if fmt != "auto" else _kind_of(path, head)
    return SourceFormat(kind, packing_of(path, head))


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
    """Bytes a file holds; for a gzip file, of the text it holds (gzip's
    record of it: modulo 4 GiB, the last member's); 0 if it cannot be read.
    (Files compressed otherwise count their compressed bytes, and so do
    their documents' sizes.)"""
    try:
        size = os.path.getsize(path)
        if packing_of(path, first_bytes(path)) != "gzip" or size < 18:  # (a header and a trailer)
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


class _Fields(NamedTuple):
    """What to take from a record: the key's and the text's fields; the record too?"""

    key: str
    text: str
    records: bool


def _read_all(
    paths: list[str],
    fmt: str,
    fields: _Fields,
    stdin_key: str,
    walk: _Walk,
    on_unreadable: Callable[[str, str], None] | None,
    on_empty_folder: Callable[[str], None] | None,
) -> Iterator[Doc]:
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            found = False
            for file, name in walk(path):
                found = True
                # By the rule of a file given by name (its first bytes are read
                # only here, after the walk has left out the command's own files).
                kind = fmt if fmt != "auto" else _kind_of(file, first_bytes(file))
                docs = _read_source(file, name, kind, fields, name, in_folder=True)
                if on_unreadable is None:
                    yield from docs
                else:
                    yield from _unless_unreadable(docs, on_unreadable)
            if not found and on_empty_folder is not None:
                on_empty_folder(path)
        else:
            kind = (
                fmt
                if fmt != "auto"
                else _kind_of(path, b"" if path == STDIN else first_bytes(path))
            )
            name = STDIN_NAME if path == STDIN else path
            key = stdin_key if path == STDIN else path
            yield from _read_source(path, name, kind, fields, key)


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


def _kind_of(path: str, head: bytes = b"") -> str:
    """The format "auto" reads a file (or stdin) as: by its name (a
    compression suffix left out), else Parquet if it begins as Parquet does."""
    lower = compression.strip_suffix(path.lower())
    if lower.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith((".parquet", ".pq")) or (
        path != STDIN and head.startswith(compression.PARQUET_MAGIC) and _ends_as_parquet(path)
    ):
        return "parquet"
    return "text"


def _ends_as_parquet(path: str) -> bool:
    """Whether a file ends as a Parquet file does (its footer's magic)."""
    try:
        with open(path, "rb") as f:
            f.seek(-len(compression.PARQUET_MAGIC), os.SEEK_END)
            return f.read() == compression.PARQUET_MAGIC
    except OSError:
        return False


def _read_source(
    path: str,
    name: str,
    kind: str,
    fields: _Fields,
    key: str,
    *,
    in_folder: bool = False,
) -> Iterator[Doc]:
    if kind == "text":
        yield _text_doc(path, name, key, in_folder=in_folder)
    elif kind == "lines":
        yield from _line_docs(path, name, in_folder)
    elif kind == "jsonl":
        yield from _jsonl_docs(path, name, fields, in_folder)
    elif kind == "csv":
        yield from _csv_docs(path, name, fields, in_folder)
    else:
        from simindex.ingest.parquet import parquet_docs  # (pyarrow, when it is needed)

        yield from parquet_docs(path, name, fields.key, fields.text, records=fields.records)


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


def _text_doc(path: str, name: str, key: str, *, in_folder: bool = False) -> Doc:
    with open_source(path, name) as source, reading(name, source.packing):
        data = source.data.read()
        size = len(data) if source.consumed is None else source.consumed()
    if in_folder and b"\0" in data:
        raise binary(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise not_utf8(name, line, exc.start, source.packing) from None
    return Doc(key, text.removeprefix("\ufeff"), name, size, in_folder=in_folder)


def read_text(path: str) -> str:
    """The whole text of a file or stdin ('-'), as ``add`` reads a file given
    by name: through the decompressor its name or its first bytes say, a
    byte-order mark dropped; errors as SourceError naming it."""
    name = STDIN_NAME if path == STDIN else path
    return _text_doc(path, name, name).text


def _lines(source: Source, name: str) -> Iterator[tuple[int, str, int]]:
    """(line number, text with its line ending, bytes) of each line; BOM
    dropped. The bytes are the line's, or the compressed bytes read for it."""
    offset = 0
    raws = _read(source, name)
    consumed, counted = source.consumed, 0
    for number in itertools.count(1):
        raw = next(raws, None)
        if raw is None:
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise not_utf8(name, number, offset + exc.start, source.packing) from None
        if number == 1:
            line = line.removeprefix("\ufeff")
        offset += len(raw)
        if consumed is None:
            yield number, line, len(raw)
        else:
            now = consumed()
            yield number, line, now - counted
            counted = now


def _read(source: Source, name: str) -> Iterator[bytes]:
    """The raw lines of a source, errors in reading them as ``reading`` says
    (one context for all of them: what this generator's consumer does runs
    outside it). Not ``yield from``: closing this generator would close
    the stream, and standard input's is kept open (opening.stdin)."""
    with reading(name, source.packing):
        for raw in source.data:  # noqa: UP028 (see above)
            yield raw


def read_lines(path: str) -> Iterator[tuple[int, str, int]]:
    """(line number, text without its line ending, bytes) of each line of a
    UTF-8 file or stdin ('-'), one at a time; errors as SourceError."""
    name = STDIN_NAME if path == STDIN else path
    with open_source(path, name) as source:
        for number, line, size in _lines(source, name):
            yield number, _strip_eol(line), size


def _strip_eol(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line.removesuffix("\n")


def _line_docs(path: str, name: str, in_folder: bool = False) -> Iterator[Doc]:
    with open_source(path, name, sniff=in_folder) as source:
        skipped = 0  # bytes of blank lines, counted with the next document
        for number, line, size in _lines(source, name):
            text = _strip_eol(line)
            if not text or text.isspace():  # (as strip() would say, without a copy)
                skipped += size
                continue
            yield Doc(f"{name}:{number}", text, f"{name} line {number}", skipped + size)
            skipped = 0


def json_object(line: str, where: str) -> dict[str, object]:
    """One JSON Lines record, which must be an object; errors name `where`."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        # (exc.msg leaves the position out, and some end "... starting at")
        at = "" if exc.msg.endswith(" at") else " at"
        raise SourceError(f"{where} is not valid JSON ({exc.msg}{at} column {exc.colno})") from None
    except RecursionError:
        raise SourceError(f"{where} is nested too deeply to read") from None
    except ValueError as exc:  # e.g. a number with thousands of digits
        raise SourceError(f"{where} cannot be read as JSON ({exc})") from None
    if not isinstance(record, dict):
        raise SourceError(f"{where} is not a JSON object")
    return record


def _jsonl_docs(path: str, name: str, fields: _Fields, in_folder: bool = False) -> Iterator[Doc]:
    key_field, text_field = fields.key, fields.text
    with open_source(path, name, sniff=in_folder) as source:
        skipped = 0
        for number, line, size in _lines(source, name):
            if not line or line.isspace():  # (as strip() would say, without a copy)
                skipped += size
                continue
            where = f"{name} line {number}"
            line = _strip_eol(line)
            record = json_object(line, where)
            key = key_of(record.get(key_field), where, key_field)
            text = record.get(text_field)
            if not isinstance(text, str):
                raise SourceError(f"{where} has no string field {text_field!r} for the text")
            yield Doc(key, text, where, skipped + size, line if fields.records else None)
            skipped = 0


class _Counted:
    """The lines of a file for csv.reader, counting their bytes and numbers,
    and whether the reader has asked past the last one (``ended``)."""

    def __init__(self, lines: Iterator[tuple[int, str, int]]) -> None:
        self.lines = lines
        self.number = 0
        self.size = 0
        self.ended = False

    def __iter__(self) -> Iterator[str]:
        for number, line, size in self.lines:
            self.number = number
            self.size += size
            yield line
        self.ended = True


def _csv_docs(path: str, name: str, fields: _Fields, in_folder: bool = False) -> Iterator[Doc]:
    key_field, text_field = fields.key, fields.text
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)  # only ever raised, for every csv user
    with open_source(path, name, sniff=in_folder) as source:
        lines = _Counted(_lines(source, name))
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
            if lines.ended:
                # csv.reader ends a record at its line's end, unless a quoted
                # field is open: one it ended at the end of the file never closed
                # its quote (csv, not strict, would keep the rest of the file as
                # the field's text).
                raise SourceError(
                    f"{name} line {start} is not valid CSV (a quote opened in the record "
                    f"there is never closed)"
                )
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
            # Fewer fields than the header's are read (the key's and the text's
            # there); more are refused unless empty (a trailing comma some
            # exporters write): an unquoted comma in a text would otherwise
            # cut it short, unsaid.
            longer = len(row) > len(header) and any(row[len(header) :])
            if max(columns) >= len(row) or longer:
                extra = " (quote a field that holds a comma)" * longer
                raise SourceError(
                    f"{where} has {len(row)} field{'s' * (len(row) != 1)}; the header has "
                    f"{len(header)}{extra}"
                )
            key = key_of(row[columns[0]], where, key_field)
            record = (header, row) if fields.records else None
            yield Doc(key, row[columns[1]], where, lines.size - used, record)
            used = lines.size


def _column(header: list[str], field: str, name: str, role: str) -> int:
    try:
        return header.index(field)
    except ValueError:
        shown = ", ".join(repr(h) for h in header)
        raise SourceError(
            f"{name} has no column {field!r} for the {role} (its header: {shown})"
        ) from None
