"""A document read from a source, and the errors reading one raises."""

from __future__ import annotations

from typing import NamedTuple

from simindex.errors import SimIndexError

STDIN = "-"


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
    # The record as read, with read_docs(records=True), to be written out again
    # whole: a JSON line (str, without its line end), a CSV (header, row), a
    # Parquet (record batch, row). None otherwise.
    record: object = None
    # A file found in a folder and read whole as one document: the CLI skips
    # it when it has no words, as it skips a folder's files that are not text.
    in_folder: bool = False


def key_of(value: object, where: str, field: str) -> str:
    """A record's key: a non-empty string, or an integer (made one)."""
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
