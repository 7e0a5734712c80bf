"""A SQLite index copied whole while it is in use: SQLite's online backup API.

A SQLite index in use is its file plus the ``-wal`` and ``-shm`` beside it.
A copy of the file alone misses the commits still in the ``-wal``; a file
copied over one a process has open is read through that process's ``-wal``
and ``-shm``, which belong to the file replaced: pages of both mix, and the
index is damaged. SQLite's backup API copies every page of one database
into another in one transaction of the target, under SQLite's own locks:
the target's readers read what they read until it commits, and the
restored index from their next transaction; its writers wait, and the copy
waits for one that holds the lock (up to ``timeout``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from simindex.errors import StorageError
from simindex.storage.backend import is_damage
from simindex.storage.location import SQLITE_BUSY, SQLITE_LOCKED, path_access
from simindex.storage.schema import META_TABLE

_SLEEP_S = 0.05  # between tries while the target's writer holds the lock


def copy_file(source: Path, target: Path, *, timeout: float) -> None:
    """Copy the SQLite database ``source`` (read as of one moment, writers
    of it going on) into ``target``, made or replaced whole, in one
    transaction of the target. Raises StorageError when the target stays
    locked by a writer for ``timeout`` seconds or either cannot be used."""
    deadline = time.monotonic() + timeout

    def waited(status: int, remaining: int, total: int) -> None:
        if status in (SQLITE_BUSY, SQLITE_LOCKED) and time.monotonic() > deadline:
            raise StorageError(f"{target} is locked by another writer: gave up after {timeout:g} s")

    try:
        with (
            contextlib.closing(_connect(source, readonly=True)) as src,
            contextlib.closing(sqlite3.connect(target, timeout=timeout)) as dst,
        ):
            src.backup(dst, progress=waited, sleep=_SLEEP_S)
    except sqlite3.Error as exc:
        if is_damage(exc):  # a target cut short: SQLite will not write into it
            raise StorageError(
                f"{target} is too damaged for SQLite to write into ({exc}): with every "
                f"process using it stopped, remove it and its -wal and -shm, then restore "
                f"into its name again"
            ) from exc
        raise StorageError(f"cannot copy {source} into {target}: {exc}") from exc


def holds_an_index(path: Path) -> bool:
    """Whether the SQLite file ``path`` holds simindex's tables, so that a
    restore may replace it. A file SQLite reports damaged counts as one (a
    damaged index is what a restore is for); location.check_file has refused
    a file that is not SQLite's at all, by its header."""
    try:
        with contextlib.closing(_connect(path, readonly=True)) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (META_TABLE,)
            ).fetchone()
    except sqlite3.DatabaseError as exc:
        if is_damage(exc):
            return True
        raise StorageError(f"cannot read {path}: {exc}") from exc
    return found is not None


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    """A connection to an existing file; ``readonly``: one that refuses
    writes, opened read-write where the file and its folder may be written
    (query_only), so that as the last to close it still removes the -wal
    and -shm its read made: the folder is left as it was."""
    path = Path(os.path.abspath(path))
    ro = readonly and path_access(path).readonly
    conn = sqlite3.connect(f"{path.as_uri()}?mode={'ro' if ro else 'rw'}", uri=True)
    if readonly and not ro:
        conn.execute("PRAGMA query_only = ON")
    return conn
