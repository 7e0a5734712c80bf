"""SimIndex: the facade over fingerprints, blocks and storage."""

from __future__ import annotations

import json
import os
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any

from sqlalchemy import URL

from simindex import store
from simindex.blocks import MAX_INDEX_K, BlockLayout, check_k
from simindex.errors import ConfigMismatchError, InvalidArgumentError, NotAnIndexError
from simindex.fingerprint import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    check_fingerprint,
    simhash,
    to_signed,
)
from simindex.query import Match, Pair, all_pairs, within

DEFAULT_K = 3
_BATCH = 1000  # rows per executemany in add_many


class FullScanWarning(UserWarning):
    """A query asked for a distance larger than the index's k and scanned every row."""


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidArgumentError(f"a key is a str, not {type(key).__name__}")
    if not key:
        raise InvalidArgumentError("a key cannot be empty")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"a key must be valid Unicode text; {key!r} has a lone surrogate "
            "(from bytes that were not UTF-8?)"
        ) from None
    return key


def _as_config(config: FingerprintConfig | Mapping[str, Any] | None) -> FingerprintConfig | None:
    if config is None or isinstance(config, FingerprintConfig):
        return config
    if isinstance(config, Mapping):
        return FingerprintConfig.from_dict(config)
    raise InvalidArgumentError(
        f"config is a FingerprintConfig or a dict, not {type(config).__name__}"
    )


class SimIndex:
    """A persistent near-duplicate index of texts, by 64-bit Simhash.

    ``SimIndex(location)`` opens the index at a file path, ``":memory:"`` or an
    SQLAlchemy URL, creating it when there is none (unless ``create=False``).
    ``k`` is the largest Hamming distance the index answers through its block
    columns (default 3, chosen at creation); ``config`` the fingerprint
    configuration. Both are stored in the index: opening an existing index
    without them uses its own, and asking for different ones raises
    ConfigMismatchError. ``with SimIndex(...) as index:`` closes it at the end.

    One SimIndex may be shared between threads: operations take turns.
    """

    def __init__(
        self,
        location: str | os.PathLike[str] | URL = ":memory:",
        *,
        k: int | None = None,
        config: FingerprintConfig | Mapping[str, Any] | None = None,
        create: bool = True,
    ) -> None:
        if k is not None:
            BlockLayout.for_k(k)  # validates k for an index before anything is opened
        wanted = _as_config(config)
        self._where = store.locate(location)
        store.check_file(self._where, create=create)
        self._engine = store.make_engine(self._where)
        self._lock = threading.RLock()
        try:
            self._settings = self._open(k, wanted, create=create)
            store.use_wal(self._engine, self._where)
        except BaseException:
            self._engine.dispose()
            raise
        self._statements = store.Statements(len(self._settings.layout.widths))

    def _open(
        self, k: int | None, wanted: FingerprintConfig | None, *, create: bool
    ) -> store.Settings:
        with store.reading(self._engine, self._where) as conn:
            found = store.read_settings(conn, self._where)
        if found is None or found[1] != store.HEAD:
            with store.writing(self._engine, self._where) as conn:
                found = store.read_settings(conn, self._where)  # again, under the lock
                if found is None:
                    if not create:
                        raise NotAnIndexError(f"no index at {self._where}")
                    settings = store.Settings(
                        layout=BlockLayout.for_k(DEFAULT_K if k is None else k),
                        config=wanted or DEFAULT_CONFIG,
                        created_by=f"simindex {store.package_version()}",
                    )
                    store.create(conn, settings)
                    return settings
                if found[1] != store.HEAD:
                    store.upgrade(conn, len(found[0].layout.widths))
        settings = found[0]
        if k is not None and k != settings.k:
            raise ConfigMismatchError(
                f"{self._where} was built for k={settings.k}, not k={k}: open it without k "
                f"(queries may still ask for any distance)"
            )
        if wanted is not None and wanted != settings.config:
            raise ConfigMismatchError(
                f"{self._where} fingerprints texts as {settings.config.describe()} "
                f"({settings.config.to_json()}), not as asked ({wanted.to_json()}): "
                f"open it without a configuration, or build a new index"
            )
        return settings

    # --- about the index --------------------------------------------------

    @property
    def k(self) -> int:
        """The largest distance answered through the block columns."""
        return self._settings.k

    @property
    def config(self) -> FingerprintConfig:
        """The fingerprint configuration every add and query on this index uses."""
        return self._settings.config

    @property
    def layout(self) -> BlockLayout:
        return self._settings.layout

    @property
    def location(self) -> str:
        """The file path, ":memory:" or the URL (password hidden)."""
        return str(self._where)

    def __repr__(self) -> str:
        return f"SimIndex({self.location!r}, k={self.k})"

    def stats(self) -> dict[str, Any]:
        """Facts about the index, for people and scripts."""
        count = len(self)
        info: dict[str, Any] = {
            "index": self.location,
            "count": count,
            "k": self.k,
            "blocks": list(self.layout.widths),
            "fingerprint": json.loads(self.config.to_json()),
            "format": self._settings.format,
            "schema_revision": store.HEAD,
            "created_by": self._settings.created_by,
        }
        path = self._where.path
        if path is not None:
            size = sum(
                p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()
            )
            info["file_bytes"] = size
            info["bytes_per_fingerprint"] = round(size / count, 1) if count else None
        return info

    def fingerprint(self, text: str) -> int:
        """The fingerprint this index gives a text (with its own configuration)."""
        return simhash(text, self._settings.config)

    # --- writing ----------------------------------------------------------

    def _row(self, key: str, fingerprint: int) -> store.Row:
        return (key, to_signed(fingerprint), self._settings.layout.blocks(fingerprint))

    def add(self, key: str, text: str) -> int:
        """Fingerprint a text and store it under key (replacing what key had).

        Returns the fingerprint. Raises EmptyTextError for a text with no words.
        """
        _check_key(key)
        fingerprint = self.fingerprint(text)
        self.add_fingerprint(key, fingerprint)
        return fingerprint

    def add_fingerprint(self, key: str, fingerprint: int) -> None:
        """Store a fingerprint computed elsewhere (an int in [0, 2**64))."""
        row = self._row(_check_key(key), check_fingerprint(fingerprint))
        with self._lock, store.writing(self._engine, self._where) as conn:
            self._statements.put(conn, [row])

    def add_many(self, items: Iterable[tuple[str, str]]) -> int:
        """Add (key, text) pairs in one transaction: all of them, or none on error.

        The input is consumed as a stream (bounded memory). When a key comes
        twice, the later text wins. Returns the number of pairs read.
        """
        return self._put_stream((key, self.fingerprint(text)) for key, text in items)

    def add_fingerprints(self, items: Iterable[tuple[str, int]]) -> int:
        """Add (key, fingerprint) pairs in one transaction, like add_many."""
        return self._put_stream(items)

    def _put_stream(self, items: Iterable[tuple[str, int]]) -> int:
        count = 0
        with self._lock, store.writing(self._engine, self._where) as conn:
            batch: dict[str, store.Row] = {}
            for key, fingerprint in items:
                batch[_check_key(key)] = self._row(key, check_fingerprint(fingerprint))
                count += 1
                if len(batch) >= _BATCH:
                    self._statements.put(conn, list(batch.values()))
                    batch.clear()
            self._statements.put(conn, list(batch.values()))
        return count

    def remove(self, key: str) -> bool:
        """Remove a key; True if it was there."""
        return self.remove_many([key]) > 0

    def remove_many(self, keys: Iterable[str]) -> int:
        """Remove keys in one transaction; returns how many were there."""
        unique = list(dict.fromkeys(_check_key(k) for k in keys))
        with self._lock, store.writing(self._engine, self._where) as conn:
            return self._statements.remove(conn, unique)

    # --- reading ----------------------------------------------------------

    def get(self, key: str) -> int | None:
        """The fingerprint stored under key, or None."""
        _check_key(key)
        with self._lock, store.reading(self._engine, self._where) as conn:
            value = self._statements.fetch(conn, key)
        return None if value is None else value & ((1 << 64) - 1)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and bool(key) and self.get(key) is not None

    def __len__(self) -> int:
        with self._lock, store.reading(self._engine, self._where) as conn:
            return self._statements.size(conn)

    def items(self) -> Iterator[tuple[str, int]]:
        """Every (key, fingerprint), in no particular order, read in one snapshot."""
        with self._lock, store.reading(self._engine, self._where) as conn:
            rows = list(self._statements.everything(conn))
        for key, value in rows:
            yield key, value & ((1 << 64) - 1)

    def query(
        self, text_or_fingerprint: str | int, *, k: int | None = None, limit: int | None = None
    ) -> list[Match]:
        """The stored documents within distance k of a text or a fingerprint.

        Sorted by distance, then key; at most ``limit`` of them. ``k`` defaults
        to the index's own. A k above the index's is answered exactly too, by
        reading every row, and says so with a FullScanWarning.
        """
        if isinstance(text_or_fingerprint, str):
            fingerprint = self.fingerprint(text_or_fingerprint)
        else:
            fingerprint = check_fingerprint(text_or_fingerprint)
        distance = self.k if k is None else check_k(k)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise InvalidArgumentError(f"limit must be a whole number of at least 1, not {limit!r}")
        with self._lock, store.reading(self._engine, self._where) as conn:
            if distance <= self.k:
                rows = self._statements.by_blocks(conn, self._settings.layout.blocks(fingerprint))
            else:
                warnings.warn(
                    f"k={distance} is above the index's k={self.k}: every fingerprint was "
                    f"compared (exact, but a full scan)",
                    FullScanWarning,
                    stacklevel=2,
                )
                rows = self._statements.everything(conn)
            matches = within(rows, fingerprint, distance)
        return matches[:limit] if limit is not None else matches

    def duplicates(self, k: int | None = None) -> list[Pair]:
        """Every pair of stored documents within distance k (default: the index's k).

        Reads the fingerprints in one snapshot and pairs them in memory by
        block (see query.all_pairs): exact for any k from 0 to 15.
        """
        distance = self.k if k is None else check_k(k, limit=MAX_INDEX_K)
        return all_pairs(list(self.items()), distance)

    # --- closing ----------------------------------------------------------

    def close(self) -> None:
        """Release the database connections. The index stays on disk."""
        self._engine.dispose()

    def __enter__(self) -> SimIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
