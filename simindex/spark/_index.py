"""Fingerprint rows into a SimIndex: SQLite from the driver, PostgreSQL from the executors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlalchemy import URL

from simindex import storage
from simindex.fingerprint import FingerprintConfig, to_unsigned
from simindex.spark._fingerprints import check_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

_BATCH = 5000  # rows a transaction from an executor: under storage.FAST_LOAD_MIN, so
# concurrent writers never set the lookup indexes aside under each other


def to_index(
    fps: DataFrame,
    location: str | os.PathLike[str] | URL,
    *,
    k: int | None = None,
    blocks: int | None = None,
    config: FingerprintConfig | dict[str, Any] | None = None,
    threshold: float | None = None,
) -> int:
    """Write the rows of ``fps`` (key, fingerprint long[, signature][,
    position]; rows without a fingerprint left out) into the SimIndex at
    ``location``, created with ``k``, ``blocks``, ``config`` and
    ``threshold`` when new (an existing index checks them, as SimIndex
    does). ``config`` must be the one ``fingerprints`` used (default: both
    DEFAULT_CONFIG). Returns the rows written.

    - A file (SQLite) is written from the driver: the rows come in order of
      ``position`` (so ids follow it and the index's clusters are the ones
      ``clusters`` gives) through ``toLocalIterator``, one partition at a time,
      and go in as one transaction (all or nothing; large loads set the
      lookup indexes aside and rebuild them at the end).
    - A PostgreSQL URL (a server every executor can write) is written by
      the executors, each partition opening ``SimIndex(url)`` and adding its
      rows in transactions of 5,000 (the index is created first, from the
      driver). Every executor needs simindex with the PostgreSQL driver (its
      extra) and must reach the server. Add order (and so
      ``SimIndex.clusters()``) then follows the partitions, not ``position``;
      a failed task's retry writes its rows again, which replaces them (a
      key names one document).
    """
    check_columns(fps, "key", "fingerprint")
    from pyspark.sql import functions as F

    from simindex.index import SimIndex

    signature = F.col("signature") if "signature" in fps.columns else F.lit(None)
    rows = fps.where(F.col("fingerprint").isNotNull())
    if "position" in fps.columns:
        rows = rows.orderBy("position")
    rows = rows.select("key", "fingerprint", signature.cast("binary").alias("signature"))
    options: dict[str, Any] = {"k": k, "blocks": blocks, "config": config, "threshold": threshold}
    if not storage.locate(location).on_server:
        with SimIndex(location, **options) as index:
            return index.add_fingerprints(_items(rows.toLocalIterator(prefetchPartitions=True)))
    with SimIndex(location, **options):
        pass  # created (or checked) once, before the executors open it
    url = str(location) if not isinstance(location, URL) else location
    written = fps.sparkSession.sparkContext.accumulator(0)

    def write(partition: Iterator[Row]) -> None:
        with SimIndex(url) as index:
            written.add(index.add_fingerprints(_items(partition), batch_size=_BATCH))

    rows.foreachPartition(write)
    return int(written.value)


def _items(rows: Iterator[Row]) -> Iterator[tuple[str, int, bytes | None]]:
    for row in rows:
        signature = row["signature"]
        yield (
            row["key"],
            to_unsigned(row["fingerprint"]),
            None if signature is None else bytes(signature),
        )
