"""What dedup --out writes: the documents kept, in the format its name or the input says.

The output's format is its name's (``.jsonl``/``.ndjson``, ``.csv``,
``.parquet``/``.pq``, each but Parquet with ``.gz``, ``.zst``, ``.bz2`` or
``.xz`` after it for a compression); a name that says none (``-``, or
another suffix) gets the input's format and compression, when every input
has the same one (else JSON Lines, uncompressed). When the output's format
is the input's (JSON Lines, CSV or Parquet), each kept record is written as
it was read, every field or column of it (a Parquet output has the input's
schema and column compression); otherwise as ``{key_field: key,
text_field: text}``.

Written as a stream: a JSON line or CSV row at a time, Parquet as row
groups of up to ``PARQUET_GROUP_ROWS`` kept rows, taken from the record
batches read (``RecordBatch.take``), never row by row in Python.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, NoReturn, cast

from simindex import ingest
from simindex.cli.errors import UserError
from simindex.cli.files import Outputs
from simindex.cli.output import json_line
from simindex.ingest import Doc, compression

KINDS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PARQUET_GROUP_ROWS = 65_536  # kept rows gathered into one row group (at most)
PARQUET_GROUP_BYTES = 64 << 20  # ... or this many bytes of them
_PARQUET_CODECS = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}  # read name -> writer's


@dataclass(frozen=True)
class Plan:
    """How an output is written: its format, its compression, and whether
    records are written as read (all their fields) or as key and text."""

    kind: str  # "jsonl", "csv", "parquet"
    packing: str | None  # "gzip", "zstd", "bzip2", "xz", or None
    as_read: bool
    first: str | None = None  # the first input file (a Parquet output's schema when none is kept)


def report_plan(report: str) -> Plan:
    """A --report's: JSON Lines, compressed if its name says so."""
    return Plan("jsonl", None if report == "-" else compression.by_name(report), as_read=False)


def plan(out: str, sources: list[str], fmt: str) -> Plan:
    """The format an output is written in, by its name, else the inputs'."""
    named_packing = None if out == "-" else compression.by_name(out)
    base = compression.strip_suffix(out.lower()) if out != "-" else ""
    named = next((kind for suffix, kind in KINDS.items() if base.endswith(suffix)), None)
    read = [ingest.source_format(source, fmt) for source in sources]
    kinds = {f.kind for f in read}
    common = kinds.pop() if len(kinds) == 1 else None
    if common not in ingest.RECORD_FORMATS:
        common = None
    kind = named or common or "jsonl"
    if named is not None or named_packing is not None:
        packing = named_packing
    else:
        packings = {f.compression for f in read}
        packing = packings.pop() if len(packings) == 1 else None
    if kind == "parquet" and packing is not None:
        if named_packing is not None:
            raise UserError(
                f"--out {out}: a Parquet file is compressed inside; name it without "
                f"{compression.suffix_of(named_packing)}"
            )
        packing = None  # (a compressed input is not Parquet: a new Parquet file is)
    first = next((s for s in sources if s != ingest.STDIN), None)
    return Plan(kind, packing, as_read=kind == common, first=first)


class Sink:
    """An output of kept documents in a Plan's format, opened among a run's
    outputs (``Outputs``: text, or bytes when compressed or Parquet).
    ``take`` each decision's document in order; ``finish`` at the end
    (before the outputs are committed), or ``abandon`` when the run fails."""

    def __init__(
        self, outputs: Outputs, name: str, plan: Plan, key_field: str, text_field: str
    ) -> None:
        self.name = name
        self.plan = plan
        self.fields = (key_field, text_field)
        self._raw: IO[bytes] | None = None
        self._packed: IO[bytes] | None = None
        self._text: Any = None  # a Writer (plain text), or a TextIOWrapper (compressed)
        self._csv: Any = None
        self._header: list[str] | None = None
        self._parquet: _ParquetOut | None = None
        if plan.kind != "parquet" and plan.packing is None:
            self._text = outputs.open(name)  # (as every text output is written)
        else:
            self._raw = outputs.open_bytes(name)
        with self._writing():
            if self._raw is None:
                pass
            elif plan.kind == "parquet":
                self._parquet = _ParquetOut(self._raw, plan, key_field, text_field)
            else:
                assert plan.packing is not None
                self._packed = compression.writer(plan.packing, self._raw)
                self._text = io.TextIOWrapper(self._packed, encoding="utf-8", newline="")
            if plan.kind == "csv":
                assert self._text is not None
                self._csv = csv.writer(self._text, lineterminator="\n")
                if not plan.as_read:
                    self._csv.writerow(self.fields)

    def take(self, doc: Doc, kept: bool) -> None:
        """A document decided on: written if kept."""
        try:  # (as _writing, without a context a document)
            self._take(doc, kept)
        except OSError as exc:
            self._failed(exc)

    def _take(self, doc: Doc, kept: bool) -> None:
        if self._parquet is not None:
            self._parquet.take(doc, kept)
        elif not kept:
            return
        elif self.plan.kind == "jsonl":
            assert self._text is not None
            if self.plan.as_read:
                self._text.write(f"{doc.record}\n")
            else:
                key_field, text_field = self.fields
                self._text.write(json_line({key_field: doc.key, text_field: doc.text}))
        elif self.plan.as_read:
            header, row = cast(tuple[list[str], list[str]], doc.record)
            if self._header is None:
                self._header = header
                self._csv.writerow(header)
            elif header != self._header:
                raise UserError(
                    f"{doc.where}: its file's header differs from the first CSV file's; "
                    f"a CSV output has one (--out NAME.jsonl writes key and text only)"
                )
            self._csv.writerow(row)
        else:
            self._csv.writerow((doc.key, doc.text))

    def write(self, line: str) -> None:
        """A line of text as it is (a --report line), compressed as the plan says."""
        with self._writing():
            self._text.write(line)

    def finish(self) -> None:
        """Write what is held and end the format and the compression (the
        binary stream stays open: the outputs close and rename it)."""
        with self._writing():
            if self._parquet is not None:
                self._parquet.finish()
            if isinstance(self._text, io.TextIOWrapper):
                self._text.flush()
                self._text.detach()
            self._text = None
            if self._packed is not None:
                self._packed.close()  # (leaves the stream under it open)
                self._packed = None

    def abandon(self) -> None:
        """Let go of a failed output (its file is removed), quietly."""
        with contextlib.suppress(Exception):
            if self._parquet is not None:
                self._parquet.abandon()
        with contextlib.suppress(Exception):
            if isinstance(self._text, io.TextIOWrapper):
                self._text.detach()
        with contextlib.suppress(Exception):
            if self._packed is not None:
                self._packed.close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            self._failed(exc)

    def _failed(self, exc: OSError) -> NoReturn:
        """Raise a write's OSError as a UserError naming the file, or as
        itself on standard output (the CLI reports a closed pipe)."""
        if self._raw is None or self._raw is sys.stdout.buffer:
            raise exc
        raise UserError(f"cannot write {self.name}: {exc.strerror or exc}") from exc


class _ParquetOut:
    """Kept rows into a Parquet file: with the input's schema (rows taken
    from the batches read), or two string columns, key and text."""

    def __init__(self, raw: IO[bytes], plan: Plan, key_field: str, text_field: str) -> None:
        self.pa = compression.optional("pyarrow", "writing .parquet")
        self.pq = compression.optional("pyarrow.parquet", "writing .parquet")
        self.raw = raw
        self.plan = plan
        self.fields = (key_field, text_field)
        self.writer: Any = None
        self.schema: Any = None
        self.codec = "snappy"  # pyarrow's default
        self.batch: Any = None  # the batch being read, and its rows kept so far
        self.rows: list[int] = []
        self.keys: list[str] = []  # key and text of kept rows (not as_read)
        self.texts: list[str] = []
        self.held: list[Any] = []  # kept rows not yet written: tables
        self.held_rows = 0
        self.held_bytes = 0
        self.where = ""
        if not plan.as_read:
            string = self.pa.string()
            self.schema = self.pa.schema([(key_field, string), (text_field, string)])

    def take(self, doc: Doc, kept: bool) -> None:
        if not self.plan.as_read:
            if kept:
                self.keys.append(doc.key)
                self.texts.append(doc.text)
                if len(self.keys) >= 1024:
                    self._hold_pairs()
            return
        batch, row = cast(tuple[Any, int], doc.record)
        if batch is not self.batch:
            self._hold_taken()
            self.batch, self.where = batch, doc.where
            if self.schema is None:
                self.schema = batch.schema
                self.codec = _codec(self.pq, self.plan.first)
            elif not batch.schema.equals(self.schema):
                raise UserError(
                    f"{doc.where}: its file's columns differ from the first Parquet file's; "
                    f"a Parquet output has one schema (--out NAME.jsonl writes key and text only)"
                )
        if kept:
            self.rows.append(row)

    def _hold_taken(self) -> None:
        if self.batch is not None and self.rows:
            taken = self.batch.take(self.pa.array(self.rows, self.pa.int64()))
            self._hold(self.pa.Table.from_batches([taken]))
        self.batch, self.rows = None, []

    def _hold_pairs(self) -> None:
        if self.keys:
            arrays = [self.pa.array(self.keys, self.pa.string()), self.pa.array(self.texts)]
            self._hold(self.pa.Table.from_arrays(arrays, schema=self.schema))
        self.keys, self.texts = [], []

    def _hold(self, table: Any) -> None:
        self.held.append(table)
        self.held_rows += table.num_rows
        self.held_bytes += table.nbytes
        if self.held_rows >= PARQUET_GROUP_ROWS or self.held_bytes >= PARQUET_GROUP_BYTES:
            self._write()

    def _write(self) -> None:
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(self.raw, self.schema, compression=self.codec)
        if self.held:
            table = self.pa.concat_tables(self.held)
            self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.held, self.held_rows, self.held_bytes = [], 0, 0

    def finish(self) -> None:
        self._hold_taken()
        self._hold_pairs()
        if self.schema is None:  # nothing was read: the first input's schema
            self.schema = self.pq.ParquetFile(self.plan.first).schema_arrow
            self.codec = _codec(self.pq, self.plan.first)
        self._write()
        self.writer.close()

    def abandon(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _codec(pq: Any, path: str | None) -> str:
    """The column compression of a Parquet file's first column (pyarrow's
    default, snappy, if it has no rows)."""
    if path is None:
        return "snappy"
    metadata = pq.ParquetFile(path).metadata
    if metadata.num_row_groups == 0 or metadata.num_columns == 0:
        return "snappy"
    name = str(metadata.row_group(0).column(0).compression).upper()
    return _PARQUET_CODECS.get(name, name.lower())
