"""An index's files as a caller meets them outside an open SimIndex: the
files a SQLite index is, whether a file is a SQLite database, and an index
file restored from a backup while processes use it.

Nothing here opens an index but through SimIndex; what knows the files
(where a location points, SQLite's header, SQLite's backup API) is in
simindex.storage, which the command line does not import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from simindex import storage
from simindex.errors import DamagedIndexError, InvalidArgumentError, NotAnIndexError, SimIndexError

BUSY_TIMEOUT_S = storage.BUSY_TIMEOUT_S  # SimIndex's default wait for another writer's lock
PG_RESTORE = "a PostgreSQL index is restored with pg_restore (docs/operating.md, Restore)"


def shown(location: str | os.PathLike[str]) -> str:
    """A location as SimIndex.location names it: a file's absolute path, or
    a URL with its password hidden (nothing is opened)."""
    return str(storage.locate(location))


def files_of(location: str | os.PathLike[str]) -> list[str]:
    """A SQLite index's file and the files SQLite keeps beside it (-wal,
    -shm, -journal); [] for ``:memory:`` and PostgreSQL (nothing is opened)."""
    path = storage.locate(location).path
    if path is None:
        return []
    return [str(path), *(f"{path}{suffix}" for suffix in ("-wal", "-shm", "-journal"))]


def is_sqlite(path: Path) -> bool:
    """Whether an existing regular file is a SQLite database (an index?).

    SQLite reads the header (storage.check_file), never Python's open():
    closing any descriptor of a file drops every POSIX lock the process
    holds on it, and this process may hold the file (a program that runs
    the CLI in-process). A file shorter than SQLite's 100-byte header is
    none (SQLite would read an empty file as an empty database); one that
    cannot be read is left to the caller to report."""
    try:
        if path.stat().st_size < storage.HEADER_BYTES:  # (SQLite reads an empty one as empty)
            return False
        storage.check_file(storage.locate(path), create=False, timeout=0)
    except (OSError, SimIndexError):
        return False
    return True


def not_sqlite(path: Path) -> bool:
    """Whether an existing file is surely no SQLite database: shorter than
    its header but not empty, or SQLite read its header and said so (as
    is_sqlite reads it). One that cannot be read now (locked, or no
    permission) is not: opening it says why."""
    try:
        size = path.stat().st_size
        if size == 0:
            return False
        if size < storage.HEADER_BYTES:
            return True
        storage.check_file(storage.locate(path), create=False, timeout=0)
    except NotAnIndexError:
        return True
    except (OSError, SimIndexError):
        return False
    return False


class Restore(NamedTuple):
    """A restore checked and ready: ``run`` copies ``source`` into ``target``."""

    source: Path  # the backup
    target: Path  # the index file replaced (or made)
    fingerprints: int  # the backup's
    timeout: float  # seconds to wait for another writer's lock

    def run(self) -> None:
        """Copy the backup into the index in one transaction of the index
        (SQLite's backup API): processes that have it open read the restored
        index from their next call; writers wait meanwhile. Raises
        StorageError when a writer keeps the lock for ``timeout`` seconds."""
        storage.copy_file(self.source, self.target, timeout=self.timeout)


def restore(
    backup: str | os.PathLike[str],
    index: str | os.PathLike[str],
    *,
    timeout: float = BUSY_TIMEOUT_S,
) -> int:
    """Replace the index file ``index`` with ``backup``, safely while in use
    (``prepare_restore``, then its ``run``); the fingerprints restored."""
    ready = prepare_restore(backup, index, timeout=timeout)
    ready.run()
    return ready.fingerprints


def prepare_restore(
    backup: str | os.PathLike[str],
    index: str | os.PathLike[str],
    *,
    timeout: float = BUSY_TIMEOUT_S,
) -> Restore:
    """Check that ``backup`` is a sound index file (SimIndex.check) and that
    ``index`` is a SQLite index file, or one to make, that the backup may
    replace; nothing is written. ``.run()`` then puts the backup in place.

    Raises InvalidArgumentError for a backup that is missing, is the index,
    is not sound or cannot be opened, and for an index that is not a file
    (PostgreSQL: pg_restore) or cannot be made; NotAnIndexError for an index
    that is another SQLite database or no database at all. Copying a file
    over an index a process has open (it has a -wal) would damage it: the
    copy goes through SQLite (storage/backups.py)."""
    from simindex.index import SimIndex

    where = storage.locate(index)
    if where.path is None:
        raise InvalidArgumentError(f"restore replaces an index file, not {where}: {PG_RESTORE}")
    source, target = Path(backup), where.path
    if source.is_dir():
        raise InvalidArgumentError(f"{backup} is a folder, not a backup of an index")
    if not source.is_file():
        raise InvalidArgumentError(f"no such file: {backup}")
    if target.exists() and source.samefile(target):
        raise InvalidArgumentError(f"{backup} is the index itself")
    try:
        with SimIndex(source, readonly=True, timeout=timeout) as copy:
            report = copy.check()
            rows = len(copy)
    except DamagedIndexError:
        report = None
    except SimIndexError as exc:
        raise InvalidArgumentError(f"backup: {exc} (nothing was restored)") from exc
    if report is None or not report.ok:
        raise InvalidArgumentError(
            f"backup {backup} is not sound (simindex check {backup} lists the problems); "
            f"nothing was restored"
        )
    storage.check_file(where, create=True, timeout=timeout)  # SQLite's file
    if target.exists() and not storage.holds_an_index(target):
        what = "an empty file, not" if target.stat().st_size == 0 else "a SQLite database but not"
        raise NotAnIndexError(
            f"{index} is {what} a simindex index: restore replaces an index only "
            f"(or makes a new file); left untouched"
        )
    return Restore(source, target, rows, timeout)
