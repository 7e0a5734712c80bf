"""The error tree: every error simindex raises on purpose is a SimIndexError."""

from __future__ import annotations


class SimIndexError(Exception):
    """Base class of every error simindex raises on purpose."""


class InvalidArgumentError(SimIndexError, ValueError):
    """A parameter is out of range or of the wrong type (k, key, fingerprint, option)."""


class EmptyTextError(SimIndexError, ValueError):
    """A text has no word features at all (empty, whitespace or punctuation
    only). ``key``: the document's, where the text was given with one (add,
    add_many), else None."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        self.key = key
        super().__init__(message)


class ConfigMismatchError(SimIndexError, ValueError):
    """The caller asked for a k or fingerprint configuration other than the index's own."""


class NotAnIndexError(SimIndexError):
    """The file or database exists but is not a simindex index; it was left untouched."""


class NoIndexError(NotAnIndexError):
    """There is no index there at all (and it was not to be created)."""


class IndexVersionError(SimIndexError):
    """The index was written by a newer simindex, or needs a migration first."""


class StorageError(SimIndexError):
    """The database could not be opened, read or written."""


class ClosedIndexError(SimIndexError, ValueError):
    """A SimIndex used after ``close()`` (a ValueError, as a closed file's).
    ``location`` is the index's."""

    def __init__(self, location: str) -> None:
        self.location = location
        super().__init__(f"{location} is closed: open it again (SimIndex(...)) to use it")


class DamagedIndexError(StorageError):
    """SQLite reports the index file damaged (truncated, overwritten, or no
    database at all past its header). ``path`` is the file. ``check`` reports
    it as a problem; nothing can be repaired in place."""

    def __init__(self, path: object, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"{detail}: the file is damaged; restore it from a backup, or rebuild it from "
            f"its texts into a new file (simindex add NEW.db SOURCES...)"
        )


class PassagesError(SimIndexError):
    """``overlaps`` cannot answer from this index's passages: it keeps none
    (``PassagesNotKeptError``), or they are not the index's now
    (``StalePassagesError``). ``where`` is the index."""

    def __init__(self, where: object, message: str) -> None:
        self.where = where
        super().__init__(message)


class PassagesNotKeptError(PassagesError):
    """The index was made without passages (``overlaps=False``, the default)."""


class StalePassagesError(PassagesError):
    """Another program wrote the index's rows (plain SQL, an older simindex):
    the passages are not theirs. ``stamp`` and ``changes``: the changes
    counted when the passages were last the index's (None: never), and now."""

    def __init__(self, where: object, message: str, *, stamp: int | None, changes: int) -> None:
        self.stamp = stamp
        self.changes = changes
        super().__init__(where, message)
