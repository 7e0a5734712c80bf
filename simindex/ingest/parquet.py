"""Parquet in: a file's rows as documents, read a record batch at a time.

A row is a document: its key and text are in the columns read_docs is given
(``key_field``, ``text_field``). The file is read with
``ParquetFile.iter_batches``, ``BATCH_ROWS`` rows at a time, never whole; each
batch's two columns become Python strings a column at a time, not a row
dict at a time. Needs pyarrow (``pip install 'simindex[formats]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from simindex.ingest import compression
from simindex.ingest.compression import optional
from simindex.ingest.doc import Doc, SourceError, UnreadableFileError, key_of

BATCH_ROWS = 1024  # rows a record batch read holds


def parquet_file(path: str, name: str) -> Any:
    """The pyarrow ParquetFile of a path; errors name it."""
    pq = optional("pyarrow.parquet", "reading .parquet")
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # (pyarrow's ArrowInvalid is a ValueError)
        raise UnreadableFileError(
            f"{name} cannot be read as Parquet ({exc})", name, "not Parquet"
        ) from None


def parquet_docs(
    path: str, name: str, key_field: str, text_field: str, *, records: bool = False
) -> Iterator[Doc]:
    """The rows of a Parquet file as documents, in order. ``records``: each
    carries (its record batch, its row in it), and the batches hold every
    column; else only the key's and the text's columns are read."""
    pa = optional("pyarrow", "reading .parquet")
    with open(path, "rb") as head:
        packing = compression.by_content(head.read(compression.MAGIC_BYTES))
    if packing is not None:
        raise SourceError(
            f"{name} is {compression.described(packing)} data: Parquet is read uncompressed "
            f"(it is compressed inside); decompress it first"
        )
    file = parquet_file(path, name)
    schema = file.schema_arrow
    for field, role in ((key_field, "key"), (text_field, "text")):
        if schema.get_field_index(field) < 0:
            shown = ", ".join(repr(n) for n in schema.names)
            raise SourceError(
                f"{name} has no column {field!r} for the {role} (its columns: {shown})"
            )
    text_type = schema.field(text_field).type
    if pa.types.is_dictionary(text_type):  # (a pandas category column)
        text_type = text_type.value_type
    if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)) and not (
        hasattr(pa.types, "is_string_view") and pa.types.is_string_view(text_type)
    ):
        raise SourceError(
            f"{name} column {text_field!r} holds {text_type}, not strings: it cannot be the text"
        )
    size, rows = os.path.getsize(path), file.metadata.num_rows
    columns = None if records else [key_field, text_field]
    row = 0
    for batch in _batches(file, name, columns, pa):
        keys = batch.column(key_field).to_pylist()
        texts = batch.column(text_field).to_pylist()
        for index, (key, text) in enumerate(zip(keys, texts, strict=True)):
            where = f"{name} row {row + 1}"
            if text is None:
                raise SourceError(f"{where} has no text (column {text_field!r} is null)")
            # the file's bytes spread over its rows: they add up to its size
            share = (row + 1) * size // rows - row * size // rows
            yield Doc(
                key_of(key, where, key_field),
                text,
                where,
                share,
                (batch, index) if records else None,
            )
            row += 1


def _batches(file: Any, name: str, columns: list[str] | None, pa: Any) -> Iterator[Any]:
    """The file's record batches; damaged data (a page that does not
    decompress) as UnreadableFileError naming the file."""
    batches = file.iter_batches(batch_size=BATCH_ROWS, columns=columns)
    while True:
        try:
            batch = next(batches, None)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise UnreadableFileError(
                f"{name} holds damaged Parquet data ({exc})", name, "damaged Parquet data"
            ) from None
        if batch is None:
            return
        yield batch
