"""Tables in: the (key, text) pairs of a pyarrow Table, RecordBatch or
stream of record batches, or of a pandas DataFrame.

``as_pairs`` is what SimIndex.add_many and dedup_stream do with what they
are given: a table becomes its rows' (key, text) pairs, read a chunk of
``CHUNK_ROWS`` rows at a time, each chunk's two columns turned into Python
values a column at a time (no row dicts); anything else is passed on as it
is. Neither pyarrow nor pandas is imported here: a table's kind is told by
its type, which the caller's own import made.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from simindex.errors import InvalidArgumentError

CHUNK_ROWS = 4096  # rows a chunk of a table turned into Python values holds
KEY_FIELDS = ("id", "key")  # the key's column when none is named: the first there


def as_pairs(
    items: Any, *, key_field: str | None = None, text_field: str = "text"
) -> Iterable[Any]:
    """The (key, text) pairs of a pyarrow Table or RecordBatch, a stream of
    them (a RecordBatchReader, any iterable whose first item is one), or a
    pandas DataFrame; any other iterable as it is (its items unchecked here).

    ``text_field`` names the text's column (default "text"), ``key_field``
    the key's (default: "id", else "key"). A key is a string or an integer
    (made a string); a missing key or text (null, NaN) is an error naming
    its row (``InvalidArgumentError``). Columns are checked now for a table
    or DataFrame, at the first batch for a stream."""
    if _is_dataframe(items):
        key = _key_column(list(map(str, items.columns)), key_field, text_field)
        return _dataframe_pairs(items, key, text_field)
    pa = sys.modules.get("pyarrow")
    if pa is not None and isinstance(items, (pa.Table, pa.RecordBatch)):
        key = _key_column(items.schema.names, key_field, text_field)
        batches = [items] if isinstance(items, pa.RecordBatch) else items.to_batches()
        return _batch_pairs(batches, key, key_field, text_field)
    if isinstance(items, (str, bytes)):
        return items  # (the caller says what it thinks of it)
    return _maybe_batches(items, key_field, text_field)


def _is_dataframe(items: object) -> bool:
    kind = type(items)
    return kind.__module__.split(".")[0] == "pandas" and kind.__name__ == "DataFrame"


def _is_batch(item: object) -> bool:
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(item, (pa.Table, pa.RecordBatch))


def _key_column(columns: list[str], key_field: str | None, text_field: str) -> str:
    shown = ", ".join(repr(c) for c in columns)
    if text_field not in columns:
        raise InvalidArgumentError(f"no column {text_field!r} for the text (columns: {shown})")
    if key_field is None:
        for name in KEY_FIELDS:
            if name in columns:
                return name
        raise InvalidArgumentError(
            f"no column 'id' or 'key' for the keys: name it with key_field (columns: {shown})"
        )
    if key_field not in columns:
        raise InvalidArgumentError(f"no column {key_field!r} for the key (columns: {shown})")
    return key_field


def _maybe_batches(items: Iterable[Any], key_field: str | None, text_field: str) -> Iterator[Any]:
    """The items; if the first is a record batch or table, the pairs of all
    of them. (Looked at when iterated, not before.)"""
    rest = iter(items)
    for first in rest:
        if not _is_batch(first):
            yield first
            yield from rest
            return
        key = _key_column(first.schema.names, key_field, text_field)
        yield from _batch_pairs(itertools.chain((first,), rest), key, key_field, text_field)


def _batch_pairs(
    batches: Iterable[Any], key: str, key_field: str | None, text_field: str
) -> Iterator[tuple[str, str]]:
    row = 0
    for batch in batches:
        if not _is_batch(batch):
            raise InvalidArgumentError(
                f"after record batches, {type(batch).__name__} (row {row + 1} on)"
            )
        if key_field is not None or key not in batch.schema.names:
            key = _key_column(batch.schema.names, key_field, text_field)
        for start in range(0, batch.num_rows, CHUNK_ROWS):
            part = batch.slice(start, CHUNK_ROWS)
            keys = part.column(key).to_pylist()
            texts = part.column(text_field).to_pylist()
            yield from _checked(keys, texts, row, key, text_field)
            row += len(keys)


def _dataframe_pairs(frame: Any, key: str, text_field: str) -> Iterator[tuple[str, str]]:
    for start in range(0, len(frame), CHUNK_ROWS):
        part = frame.iloc[start : start + CHUNK_ROWS]
        keys = part[key].tolist()
        texts = part[text_field].tolist()
        yield from _checked(keys, texts, start, key, text_field)


def _checked(
    keys: list[Any], texts: list[Any], row: int, key_field: str, text_field: str
) -> Iterator[tuple[str, str]]:
    for number, (key, text) in enumerate(zip(keys, texts, strict=True), row + 1):
        if type(key) is int:  # (not bool)
            key = str(key)
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(
                f"row {number}: the key (column {key_field!r}) is {key!r}, not a string "
                f"or an integer"
            )
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"row {number}: the text (column {text_field!r}) is {text!r}, not a string"
            )
        yield key, text
