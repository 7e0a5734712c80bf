"""The command: ``python -m simindex.spark dedup INPUT --out OUT`` (or through spark-submit).

It reads JSON Lines or Parquet with a key and a text column, fingerprints
every document on the executors, pairs them (near_duplicates), clusters the
pairs (clusters) and writes three datasets under OUT, a new folder:

- ``kept``: the input rows (every column) of the documents kept: all but the
  members of a cluster that are not its canonical document, and but the
  documents with no words (as ``simindex dedup`` drops them);
- ``pairs``: key_a, key_b, distance, similarity;
- ``clusters``: key, canonical, distance.

Mistakes (a missing column, an OUT that exists or lies inside the input, no
pyspark or no Java) end with one line ``Error: ...`` and exit code 2, before
anything is written; nothing is ever written over. So does a failure of Spark
itself (workers that cannot import simindex, memory, its Java process), the
line saying what to do. When the command starts Spark itself, Spark's own
log stays off the terminal unless ``--verbose`` (simindex/spark/_session.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer

from simindex.blocks import MAX_INDEX_K, check_k
from simindex.cli.errors import EXIT_INTERRUPTED, UserError, fail
from simindex.errors import InvalidArgumentError, SimIndexError
from simindex.signature import DEFAULT_THRESHOLD, check_threshold
from simindex.spark import _session
from simindex.spark._pairs import DRIVER_ROWS, PAIR_ON

HOW = "pip install 'simindex[spark]'"
JAVA = (
    "Spark needs a Java 17 (or later) runtime and none was found: install one "
    "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
)
_FORMATS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".ndjson": "json"}

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="simindex on Apache Spark: near-duplicates of a corpus too large for one machine.",
)


@app.callback()
def _root() -> None:
    """simindex on Apache Spark (see docs/scaling.md)."""


def input_format(path: Path, named: str | None) -> str:
    """ "json" or "parquet": as named, else by the file's (or a folder's files') suffix."""
    if named is not None:
        if named not in ("jsonl", "parquet"):
            raise UserError(f"--input-format is jsonl or parquet, not {named!r}")
        return "json" if named == "jsonl" else "parquet"
    suffixes = (
        {path.suffix.lower()}
        if path.is_file()
        else {
            p.suffix.lower()
            for p in path.iterdir()
            if p.is_file() and not p.name.startswith((".", "_"))
        }
    )
    found = {_FORMATS[s] for s in suffixes if s in _FORMATS}
    if len(found) != 1:
        raise UserError(
            f"cannot tell whether {path} is JSON Lines or Parquet (by its "
            f"{'suffix' if path.is_file() else 'files'}): give --input-format jsonl or parquet"
        )
    return found.pop()


def check_paths(source: Path, out: Path) -> None:
    """Refuse an input that is not there and an OUT that exists or is the input's."""
    if not source.exists():
        raise UserError(f"{source}: no such file or folder")
    here, there = source.resolve(), out.resolve()
    if there == here or here in there.parents:
        raise UserError(f"--out {out} is inside the input {source}: choose a folder elsewhere")
    if out.exists() or out.is_symlink():
        raise UserError(
            f"--out {out} already exists: the command writes a new folder and never over "
            f"anything (remove it or choose another)"
        )


def parse_conf(pairs: list[str]) -> dict[str, str]:
    """--conf KEY=VALUE options as a dict (a later KEY wins)."""
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--conf takes KEY=VALUE (e.g. spark.driver.memory=8g), not {pair!r}")
        conf[key.strip()] = value
    return conf


def check_runtime() -> None:
    """Refuse early, in one line, when pyspark or Java is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise UserError(
            f"the Spark path needs pyspark and pyarrow ({exc.name} is missing): {HOW}"
        ) from None
    home = os.environ.get("JAVA_HOME")
    if not (home and Path(home, "bin", "java").exists()) and shutil.which("java") is None:
        raise UserError(JAVA)


@app.command()
def dedup(
    source: Annotated[
        Path, typer.Argument(metavar="INPUT", help="JSON Lines or Parquet: a file or a folder.")
    ],
    out: Annotated[
        Path, typer.Option("--out", help="A new folder for kept/, pairs/ and clusters/.")
    ],
    k: Annotated[
        int | None, typer.Option("--k", help=f"Hamming distance, 0 to {MAX_INDEX_K} (default 8).")
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help=f"Similarity a pair needs (default {DEFAULT_THRESHOLD}; 0: distance alone).",
        ),
    ] = None,
    master: Annotated[
        str | None,
        typer.Option("--master", help="Spark master, e.g. local[2] (under spark-submit: its own)."),
    ] = None,
    key_col: Annotated[str, typer.Option("--key-col", help="The key column.")] = "id",
    text_col: Annotated[str, typer.Option("--text-col", help="The text column.")] = "text",
    order_col: Annotated[
        str | None,
        typer.Option(
            "--order-col",
            help="A column giving the order documents count as added in (default: read order).",
        ),
    ] = None,
    output_format: Annotated[
        str, typer.Option("--format", help="Output format: parquet or jsonl.")
    ] = "parquet",
    named_format: Annotated[
        str | None,
        typer.Option("--input-format", help="jsonl or parquet (default: by the suffix)."),
    ] = None,
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf",
            metavar="KEY=VALUE",
            help="A Spark setting, e.g. spark.driver.memory=8g (repeatable).",
        ),
    ] = None,
    pair_on: Annotated[
        str,
        typer.Option(
            "--pair-on",
            help="Where fingerprints are paired: driver (in its memory), executors (a shuffle), "
            f"or auto (the driver up to {DRIVER_ROWS:,} documents).",
        ),
    ] = "auto",
    verbose: Annotated[
        bool,
        typer.Option("--verbose", help="Show Spark's own log as it runs, and a failure in full."),
    ] = False,
) -> None:
    """Find the near-duplicates of a corpus and write the documents kept, the
    pairs and the clusters (as SimIndex.duplicates() and clusters() would)."""
    try:
        if k is not None:
            check_k(k, limit=MAX_INDEX_K)
        if threshold is not None:
            check_threshold(threshold)
        if output_format not in ("parquet", "jsonl"):
            raise UserError(f"--format is parquet or jsonl, not {output_format!r}")
        if pair_on not in PAIR_ON:
            raise UserError(f"--pair-on is one of {', '.join(PAIR_ON)}, not {pair_on!r}")
        settings = parse_conf(conf or [])
        check_paths(source, out)
        fmt = input_format(source, named_format)
        check_runtime()
    except (UserError, SimIndexError) as exc:
        fail(str(exc))
    log = None if verbose else _SparkLog()
    try:
        session = _session.start(master, settings, log=log.file if log else None)
        summary = _run(
            session,
            source,
            fmt,
            out,
            (k, threshold, pair_on),
            (key_col, text_col, order_col),
            output_format,
        )
    except (UserError, SimIndexError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("Interrupted.", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        if not _session.is_spark_error(exc):
            raise  # a bug: shown in full
        if verbose:
            traceback.print_exception(exc)
        fail(_session.describe(exc) + (log.keep() if log else ""))
    finally:
        if log:
            log.close()
    typer.echo(summary)


class _SparkLog:
    """A file for the stderr of the JVM the command starts: removed when the
    command ends, unless Spark failed (then the Error line names it)."""

    def __init__(self) -> None:
        self.file = tempfile.NamedTemporaryFile(  # noqa: SIM115 (open till the JVM ends)
            prefix="simindex-spark-", suffix=".log", delete=False
        )
        self.kept = False

    def keep(self) -> str:
        """Keep the file if Spark wrote to it; the hint the Error line ends with."""
        self.file.flush()
        with contextlib.suppress(OSError):
            self.kept = os.path.getsize(self.file.name) > 0
        if self.kept:
            return f" (Spark's log: {self.file.name}; --verbose shows it as it runs)"
        return " (--verbose shows Spark's log as it runs)"

    def close(self) -> None:
        self.file.close()
        if not self.kept:
            with contextlib.suppress(OSError):
                os.unlink(self.file.name)


def _run(
    spark: Any,
    source: Path,
    fmt: str,
    out: Path,
    pairing: tuple[int | None, float | None, str],
    columns: tuple[str, str, str | None],
    output_format: str,
) -> str:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from simindex.spark import clusters, fingerprints, near_duplicates

    key_col, text_col, order_col = columns
    docs = _read(spark, source, fmt, columns)
    fps = fingerprints(docs, key_col=key_col, text_col=text_col, order_col=order_col).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        k, threshold, pair_on = pairing
        pairs = near_duplicates(fps, k=k, threshold=threshold, pair_on=pair_on)
        groups = clusters(pairs, fps)
        dropped = groups.where(F.col("key") != F.col("canonical")).select("key")
        kept = (
            fps.where(F.col("fingerprint").isNotNull())
            .join(dropped, "key", "left_anti")
            .select(F.col("key").alias(key_col), "position")
        )
        rows = docs.withColumn(key_col, F.col(key_col).cast("string")).join(kept, key_col)
        writer = "json" if output_format == "jsonl" else "parquet"
        total = fps.count()
        no_words = fps.where(F.col("fingerprint").isNull()).count()
        rows.orderBy("position").drop("position").write.format(writer).save(str(out / "kept"))
        pairs.orderBy("distance", "key_a", "key_b").write.format(writer).save(str(out / "pairs"))
        groups.orderBy("canonical", "distance", "key").write.format(writer).save(
            str(out / "clusters")
        )
        found, members = pairs.count(), dropped.count()
        heads = groups.where(F.col("key") == F.col("canonical")).count()
    finally:
        with contextlib.suppress(Exception):  # not over the failure, if Spark is gone
            fps.unpersist()
    return (
        f"{total} documents: {total - members - no_words} kept, {members} near-duplicates "
        f"of a kept one, {no_words} with no words; {found} pairs in {heads} clusters; "
        f"written under {out} (kept, pairs, clusters: {output_format})"
    )


def _read(spark: Any, source: Path, fmt: str, columns: tuple[str, str, str | None]) -> Any:
    """The input, its columns and keys checked (a mistake is a UserError)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    from simindex.spark._fingerprints import check_order

    key_col, text_col, order_col = columns
    named = [(key_col, "--key-col"), (text_col, "--text-col")]
    if order_col is not None:
        named.append((order_col, "--order-col"))
    try:
        reader = spark.read.option("mode", "FAILFAST")
        docs = reader.json(str(source)) if fmt == "json" else reader.parquet(str(source))
        for name, option in named:
            if name not in docs.columns:
                raise UserError(
                    f"{source} has no column {name!r} (it has: {', '.join(docs.columns) or 'none'})"
                    f": name it with {option}"
                )
        key = F.col(key_col).cast("string")
        empty = docs.where(key.isNull() | (key == "")).limit(1).count()
        if empty:
            raise UserError(f"{source} has a document with no key (column {key_col!r})")
        twice = docs.groupBy(key.alias("key")).count().where(F.col("count") > 1).limit(1).collect()
        if twice:
            raise UserError(
                f"key {twice[0]['key']!r} names {twice[0]['count']} documents in {source}: "
                f"keys must be unique"
            )
        if order_col is not None:
            try:
                check_order(docs, order_col)
            except InvalidArgumentError as exc:
                raise UserError(f"{source}: {exc} (--order-col)") from exc
    except PySparkException as exc:
        if _session.known(exc):  # Spark's failure, not the input's
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"cannot read {source} as {fmt}: {first}") from exc
    except Exception as exc:  # a JVM error from a read (Py4JJavaError)
        if type(exc).__name__ != "Py4JJavaError" or _session.known(exc):
            raise
        raise UserError(f"cannot read {source} as {fmt}: {_java_reason(exc)}") from exc
    return docs


def _java_reason(exc: Exception) -> str:
    """The first line of a JVM error's deepest cause."""
    text = str(getattr(exc, "java_exception", exc))
    return text.strip().splitlines()[0][:300] if text.strip() else "unreadable input"


def main() -> None:
    """The command's entry point (python -m simindex.spark, spark-submit)."""
    try:
        app(prog_name="python -m simindex.spark")
    except KeyboardInterrupt:  # before a command's own handler (while starting)
        raise SystemExit(EXIT_INTERRUPTED) from None
