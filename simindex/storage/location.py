"""Where an index is: a SQLite file, ``:memory:``, or a PostgreSQL URL.

``locate`` resolves what a user gives (a path, ":memory:", an SQLAlchemy URL)
without opening anything; ``check_file`` refuses, before anything is written
to it, a file that cannot be or hold an index (SQLite reads its header), or
cannot be made (its folder does not
exist or cannot be written, a symbolic link loop), saying why;
``file_access`` says whether a file must be opened read-only, from what its
file and folder allow.
"""

from __future__ import annotations

import errno
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError

from simindex.errors import InvalidArgumentError, NoIndexError, NotAnIndexError, StorageError

KINDS = ("sqlite", "postgresql", "postgres")  # the databases simindex stores an index in
HEADER_BYTES = 100  # SQLite's file header: a database is empty or longer

# SQLite's primary result codes simindex tells apart (sqlite3 names them from
# Python 3.11): another connection holds the lock; the file is read-only; it
# is damaged (a value larger than SQLite returns, TOOBIG: simindex writes
# none, its largest being a stored snapshot's part of at most 32 MB, so in a
# file it is a damaged record's length); it is no database.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY = 5, 6, 8
SQLITE_CORRUPT, SQLITE_TOOBIG, SQLITE_NOTADB = 11, 18, 26


def sqlite_code(exc: BaseException) -> int | None:
    """SQLite's primary result code of a driver's or SQLAlchemy's error
    (Python 3.11+), else None."""
    code = getattr(getattr(exc, "orig", None) or exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


# A PostgreSQL schema name simindex accepts for ?schema= (no quoting needed).
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Location:
    url: URL  # what SQLAlchemy connects to (without simindex's own ?schema=)
    path: Path | None  # the file, for a SQLite file database
    schema: str | None = None  # the PostgreSQL schema holding the index

    @property
    def postgres(self) -> bool:
        return self.url.drivername.split("+")[0] in ("postgresql", "postgres")

    @property
    def on_server(self) -> bool:
        """Whether the index lives on a database server that processes on
        other machines can reach and write at once (not a file of this one)."""
        return self.postgres

    def __str__(self) -> str:
        if self.path is not None:
            return str(self.path)
        if self.url.drivername.startswith("sqlite") and not self.url.database:
            return ":memory:"
        url = self.url
        if self.schema is not None:
            url = url.update_query_dict({"schema": self.schema})
        return url.render_as_string(hide_password=True)


def locate(location: str | os.PathLike[str] | URL) -> Location:
    """A path, ":memory:" or an SQLAlchemy URL, resolved (nothing is opened)."""
    if isinstance(location, URL):
        url = location
    else:
        if not isinstance(location, (str, os.PathLike)):
            raise InvalidArgumentError(
                f"an index location is a path or a URL, not {type(location).__name__}"
            )
        text = os.fspath(location)
        if text in ("", ":memory:"):
            return Location(make_url("sqlite://"), None)
        if "://" in text:
            try:
                url = make_url(text)
            except ArgumentError as exc:
                raise InvalidArgumentError(f"not a database URL: {text!r}") from exc
        else:
            path = Path(text).expanduser().absolute()
            return Location(URL.create("sqlite", database=str(path)), path)
    kind = url.drivername.split("+")[0]
    if kind not in KINDS:
        shown = url.render_as_string(hide_password=True)
        raise InvalidArgumentError(
            f"simindex stores an index in SQLite or PostgreSQL, not {kind}: {shown} "
            f"(give a file path, ':memory:', sqlite:///PATH or postgresql://...)"
        )
    if kind == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database).expanduser().absolute()
        return Location(url.set(database=str(path)), path)
    schema_name = url.query.get("schema")
    if schema_name is not None:
        shown = url.render_as_string(hide_password=True)
        if kind not in ("postgresql", "postgres"):
            raise InvalidArgumentError(f"?schema= is for PostgreSQL URLs only, not {shown}")
        if not isinstance(schema_name, str) or not _SCHEMA_NAME.fullmatch(schema_name):
            raise InvalidArgumentError(
                f"?schema= takes one name of lowercase letters, digits and _ "
                f"(at most 63, not starting with a digit), not {schema_name!r}"
            )
        url = url.difference_update_query(["schema"])
    if kind in ("postgresql", "postgres") and url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")  # the driver simindex[postgres] installs
    return Location(url, None, schema_name)


def check_file(where: Location, *, create: bool, timeout: float) -> None:
    """Refuse a file that cannot be or hold an index, before anything is
    written to it (``timeout``: seconds to wait for a writer's lock)."""
    path = where.path
    if path is None:
        return
    if path.is_dir():
        raise InvalidArgumentError(f"{path} is a folder, not an index file")
    if not path.exists():
        if _loops(path):
            raise InvalidArgumentError(f"{path} is a symbolic link loop")
        if not create:
            raise NoIndexError(f"no index at {path}")
        if path.is_symlink():  # a link to a file to be made: SQLite makes it, where it says
            return
        folder = path.parent
        if not folder.is_dir():
            there = "is not a folder" if folder.exists() else "does not exist"
            raise InvalidArgumentError(f"cannot create {path}: folder {folder} {there}")
        if not os.access(folder, os.W_OK | os.X_OK):  # (SQLite: "unable to open database file")
            raise StorageError(f"cannot create {path}: folder {folder} is not writable")
        return
    said = _sqlite_reads(path, timeout=timeout)
    if said is not None:
        raise NotAnIndexError(f"{path} is not a simindex index ({said}); left untouched")


def _sqlite_reads(path: Path, *, timeout: float) -> str | None:
    """None where SQLite reads ``path`` as a database (an empty file is
    one), else why not. SQLite itself reads the header, never Python's
    ``open()``: on POSIX, closing any descriptor of a file drops every lock
    the process holds on it, so a second SimIndex on a file this process
    has open would cost the first its locks (and another process would
    then take its -wal for abandoned). SQLite shares one lock table for
    each file among its connections in a process and keeps a descriptor
    open while another connection holds a lock. Nothing is written: a
    read of page 1 fails on a header that is not SQLite's, and a WAL file
    this connection opened is taken away again as it closes (it opens the
    file read-write where it may, so that as the last user it can)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not os.access(path, os.R_OK):
        raise StorageError(f"cannot read {path}: {os.strerror(errno.EACCES)}")
    if 0 < size < HEADER_BYTES:  # (SQLite reads a file of one byte as an empty database)
        return "not a SQLite database"
    access = path_access(path)
    mode = "ro&immutable=1" if access.immutable else "ro" if access.readonly else "rw"
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode={mode}", uri=True, timeout=timeout)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    try:
        conn.execute("PRAGMA schema_version").fetchone()  # reads page 1's header
    except sqlite3.DatabaseError as exc:
        code = sqlite_code(exc)
        if code == SQLITE_NOTADB or (code is None and "not a database" in str(exc)):
            return "not a SQLite database"
        if code in (SQLITE_CORRUPT, SQLITE_TOOBIG):
            return None  # SQLite's file, damaged: opening it says so (DamagedIndexError)
        raise StorageError(f"cannot read {path}: {exc}") from exc
    finally:
        conn.close()
    return None


def _loops(path: Path) -> bool:
    """Whether a path is (or goes through) a symbolic link loop."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


class FileAccess(NamedTuple):
    """How a SQLite index file can be opened, from what its file and folder
    allow this process (checked with os.access, so root's override counts)."""

    readonly: bool  # the file, or the folder that keeps its -wal/-shm, is not writable
    immutable: bool  # no -wal/-shm can be kept beside it: read it as a file nobody changes


def file_access(where: Location) -> FileAccess:
    """Whether an existing SQLite index file must be opened read-only, and how.

    In WAL mode SQLite reads through a -shm file beside the database (and
    writes through a -wal). Where the folder is not writable and neither file
    is there, they cannot be made: the file is read as it is, unchanging
    (``immutable``), which is right as long as nobody writes it meanwhile (a
    writer would need to make those files, which a folder nobody may write
    stops). Where they are there (a writer has the index open), SQLite reads
    through them read-only. A file that is not writable itself is opened
    read-only. Anything else opens as asked."""
    return path_access(where.path)


def path_access(path: Path | None) -> FileAccess:
    """file_access of a SQLite file by its path (None: no file)."""
    if path is None or not path.is_file():
        return FileAccess(False, False)
    folder_writable = os.access(path.parent, os.W_OK | os.X_OK)
    file_writable = os.access(path, os.W_OK)
    if folder_writable and file_writable:
        return FileAccess(False, False)
    beside = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    immutable = not folder_writable and not any(p.exists() for p in beside)
    return FileAccess(True, immutable)
