"""Texts to (key, fingerprint, signature, position) rows, on the executors.

Each task reads its rows as Arrow batches (``mapInArrow``) and runs
simindex's own fingerprinting on them: ``signature.fingerprint_and_signature``
(or ``fingerprint.simhash`` alone with ``signatures=False``), so a
fingerprint is bit for bit the one ``SimIndex.add`` stores. The
configuration is a frozen dataclass: it is pickled into the function's
closure and travels with the job, so every executor uses the driver's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig, simhash, to_signed
from simindex.signature import marks_of_many
from simindex.validate import as_config

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

# The rows fingerprints() gives: the fingerprint as Spark's signed long (the
# two's complement of the unsigned value, as an index stores it); NULL
# fingerprint and signature for a text with no words (or no text).
SCHEMA = "key string, fingerprint long, signature binary, position long"


def check_columns(df: DataFrame, *names: str) -> None:
    """Raise InvalidArgumentError naming a column the DataFrame lacks."""
    have = df.columns
    for name in names:
        if name not in have:
            raise InvalidArgumentError(
                f"the DataFrame has no column {name!r} (it has: {', '.join(have) or 'none'})"
            )


def check_order(df: DataFrame, column: str) -> None:
    """Raise InvalidArgumentError unless every row has its own value in
    ``column`` (it stands for an index's add order, which has no ties)."""
    from pyspark.sql import functions as F

    tied = (
        df.groupBy(F.col(column).alias("value"))
        .count()
        .where((F.col("count") > 1) | F.col("value").isNull())
        .limit(1)
        .collect()
    )
    if tied:
        value, count = tied[0]["value"], tied[0]["count"]
        what = "is empty" if value is None else f"is {value!r}"
        raise InvalidArgumentError(
            f"column {column!r} orders the documents as an index's add order does, so each "
            f"needs its own value: it {what} for {count} of them"
        )


def fingerprints(
    df: DataFrame,
    *,
    text_col: str = "text",
    key_col: str = "id",
    config: FingerprintConfig | dict[str, Any] | None = None,
    signatures: bool = True,
    order_col: str | None = None,
) -> DataFrame:
    """A DataFrame of (key string, fingerprint long, signature binary,
    position long), one row per input row, computed on the executors.

    - ``fingerprint``: ``simhash(text, config)`` as a signed 64-bit long
      (``simindex.to_unsigned`` gives the library's int back); NULL, with the
      signature, for a text with no words (or a NULL text).
    - ``signature``: the verification signature (simindex.signature)
      (``fingerprint_and_signature``), or NULL with ``signatures=False``
      (then such rows are matched by distance alone, as in an index).
    - ``position``: the row's place in the input, the order ``clusters``
      uses as an index's add order: ``monotonically_increasing_id()`` (the
      input partition, then the row within it, so increasing in the order
      a file is read), or the long value of ``order_col`` when given.

    ``config`` (default DEFAULT_CONFIG) must be the one the rows will be
    compared or indexed with. Keys are cast to strings.
    """
    cfg = as_config(config) or DEFAULT_CONFIG
    if not isinstance(signatures, bool):
        raise InvalidArgumentError(f"signatures is True or False, not {signatures!r}")
    check_columns(df, key_col, text_col, *([order_col] if order_col else []))
    from pyspark.sql import functions as F

    order = F.monotonically_increasing_id() if order_col is None else F.col(order_col)
    source = df.select(
        F.col(key_col).cast("string").alias("key"),
        F.col(text_col).cast("string").alias("text"),
        order.cast("long").alias("position"),
    )
    return source.mapInArrow(_fingerprinter(cfg, signatures), SCHEMA)


def _fingerprinter(
    config: FingerprintConfig, signatures: bool
) -> Any:  # the closure Spark pickles: config and flag only
    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = pa.schema(
            [
                ("key", pa.string()),
                ("fingerprint", pa.int64()),
                ("signature", pa.binary()),
                ("position", pa.int64()),
            ]
        )
        for batch in batches:
            texts = batch.column("text").to_pylist()
            fps: list[int | None] = [None] * len(texts)
            sigs: list[bytes | None] = [None] * len(texts)
            present = [i for i, text in enumerate(texts) if text is not None]
            if signatures:  # the batch's texts in one call of the compiled pass
                made = marks_of_many([texts[i] for i in present], config)
                for i, marks in zip(present, made, strict=True):
                    if marks is not None:
                        fps[i], sigs[i] = to_signed(marks[0]), marks[1]
            else:
                for i in present:
                    with contextlib.suppress(EmptyTextError):
                        fps[i] = to_signed(simhash(texts[i], config))
            yield pa.RecordBatch.from_arrays(
                [
                    batch.column("key"),
                    pa.array(fps, pa.int64()),
                    pa.array(sigs, pa.binary()),
                    batch.column("position"),
                ],
                schema=schema,
            )

    return compute
