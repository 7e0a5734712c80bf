"""Whether what a read brought back holds together; where it does not, the file is damaged.

SQLite finds most damage itself (a page that is no b-tree page: "database
disk image is malformed", a DamagedIndexError through backend.db_error), but
not bytes overwritten inside a record: a lookup index then gives ids that no
row has, one id twice, or fingerprints that are not the rows'; a row gives a
key that is no text, or a blob that is no signature. The reads that answer
from many rows at once (duplicates, clusters, a batch's snapshot) check
what they have read, at little cost beside reading it:

- ``checked_id``, ``fingerprints``: each (id, fingerprint) is read from a
  lookup index with the check that its block columns there are the
  fingerprint's own bits (the id is 0 where they are not); ids are positive
  and none comes twice.
- ``signature_words``, ``all_known``: every signature is a signature
  (signature.is_signature), and every row that has one is among the ids read.
- ``rows``: every id asked for by id has a row, with a text key, the
  fingerprint it was paired under and a signature or none.
- ``formed``: the rows a query reads by id, by set key or with the
  versions, and all pairs' keyed rows, each with a signature of a form
  (signature.form) or none; the units' order is checked by whole reads
  and ``check``.

Nothing here reads the database; each check raises DamagedIndexError, naming
the file and what did not hold, the error ``check`` and the CLI report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any

import numpy as np
from sqlalchemy import Table, and_, case, literal_column

from simindex.blocks import BlockLayout
from simindex.errors import DamagedIndexError
from simindex.signature import NO_FORM, SIGNATURE_FORM, Sketches, as_words, form, is_signature
from simindex.storage import schema
from simindex.storage.location import Location


def damaged(where: Location, detail: str) -> DamagedIndexError:
    """The error for a read of the index at ``where`` that did not hold together."""
    return DamagedIndexError(where.path if where.path is not None else where, f"{where}: {detail}")


def table(where: Location, rows: Sequence[Sequence[Any]], width: int) -> np.ndarray:
    """Rows of ``width`` integers as an (n, width) int64 array; a value of
    another kind (a damaged record's) is damage."""
    try:
        flat = np.fromiter(chain.from_iterable(rows), np.int64, count=width * len(rows))
    except (TypeError, ValueError, OverflowError) as exc:
        raise damaged(where, f"a stored number is not an integer ({exc})") from exc
    return flat.reshape(-1, width)


def checked_id(fingerprints: Table, layout: BlockLayout) -> Any:
    """The id as a read of every row selects it with the fingerprint: the id
    where the row's block columns of the layout's last table are its
    fingerprint's bits, else 0, which ``fingerprints`` refuses. Computed by
    the database as it reads that table's lookup index (a third column read
    into Python would cost a third more)."""
    t = fingerprints
    spans = layout.spans()
    agree = []
    for b in layout.tables[-1]:
        name, (shift, mask) = schema.block_column(b), spans[b]
        if mask == (1 << 64) - 1:  # one block of all 64 bits: stored as the fingerprint is
            agree.append(t.c[name] == t.c.fingerprint)
            continue
        bits = t.c.fingerprint.op(">>")(literal_column(str(shift)))
        agree.append(t.c[name] == bits.op("&")(literal_column(str(mask))))
    return case((and_(*agree), t.c.id), else_=literal_column("0"))


def fingerprints(where: Location, read: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ids, unsigned fingerprints) of every row, read as (checked_id, signed
    fingerprint): no id 0 (block columns that disagree), none twice."""
    ids = read[:, 0].copy()
    wrong = int(np.count_nonzero(ids == 0))
    if wrong:
        raise damaged(where, f"{wrong} fingerprints read disagree with their block columns")
    unique(where, ids)
    return ids, read[:, 1].view(np.uint64).copy()


def blocks_agree(where: Location, read: np.ndarray, spans: Sequence[tuple[int, int]]) -> None:
    """Rows read as (id, signed fingerprint, every block column): each
    row's blocks (shift, mask in ``spans``) are its fingerprint's bits."""
    fps = read[:, 1].view(np.uint64)
    for i, (shift, mask) in enumerate(spans):
        expected = ((fps >> np.uint64(shift)) & np.uint64(mask)).view(np.int64)
        wrong = np.flatnonzero(read[:, 2 + i] != expected)
        if wrong.size:
            shown = int(read[wrong[0], 0])
            raise damaged(where, f"id {shown} has block columns that disagree with its fingerprint")


def unique(where: Location, ids: np.ndarray) -> None:
    """No id below 1 and none twice among the ids of the rows read."""
    if not ids.size:
        return
    ordered = np.sort(ids)
    if ordered[0] < 1:
        raise damaged(where, f"a row read has id {int(ordered[0])}")
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    if twice.size:
        raise damaged(where, f"id {int(ordered[twice[0]])} was read twice")


def signature_words(where: Location, blobs: Sequence[Any]) -> Sketches:
    """Signatures read (none of them NULL) as held sketches
    (signature.as_words): each must be a signature."""
    if not all(map(is_signature, blobs)):
        raise damaged(where, f"a stored value is not a signature ({SIGNATURE_FORM})")
    return as_words(blobs)


def formed(where: Location, rows: list[Any]) -> list[Any]:
    """Rows read as (id, key, signed fingerprint, signature, ...), each
    signature of a form or none: a query judges them by their bytes' form
    (signature.form: a length and a last byte, about 0.2 us a row, where
    is_signature's check of the units' order took 2.3 on a query's rows)."""
    for row in rows:
        if row[3] is not None and form(row[3]) == NO_FORM:
            raise damaged(
                where, f"id {row[0]} has a stored value that is not a signature ({SIGNATURE_FORM})"
            )
    return rows


def all_known(where: Location, ids: np.ndarray, known: np.ndarray) -> None:
    """Every row read with a signature (``ids``) is one whose fingerprint was
    read in the same transaction (``known``)."""
    if where.path is not None and not known.all():
        shown = int(ids[~known][0])
        raise damaged(where, f"id {shown} has a signature but no fingerprint was read for it")


def rows(
    where: Location, found: Iterable[Sequence[Any]], wanted: dict[int, int]
) -> dict[int, tuple[str, bytes | None]]:
    """id -> (key, signature) of rows read by id as (id, key, signed
    fingerprint, signature), checked against ``wanted`` (id -> the signed
    fingerprint it was found under): its key text, its signature one or
    none; and in a file, each id there with that fingerprint. (SQLite's
    read transaction is one snapshot, so a difference is damage; on
    PostgreSQL a write may commit between two statements of one read.)"""
    same = where.path is not None
    out: dict[int, tuple[str, bytes | None]] = {}
    for row_id, key, fingerprint, signature in found:
        expected = wanted.get(row_id)
        if expected is None or row_id in out:
            raise damaged(where, f"a read by id gave id {row_id!r}, not one asked for")
        if same and fingerprint != expected:
            raise damaged(
                where, f"id {row_id} reads back with another fingerprint than it was found under"
            )
        if not isinstance(key, str) or not key:
            raise damaged(where, f"id {row_id} has a key that is not text")
        if signature is not None and not is_signature(signature):
            raise damaged(
                where, f"id {row_id} has a stored value that is not a signature ({SIGNATURE_FORM})"
            )
        out[row_id] = (key, None if signature is None else bytes(signature))
    if same and len(out) != len(wanted):
        missing = next(i for i in wanted if i not in out)
        raise damaged(where, f"no row has id {missing}, found among the fingerprints read")
    return out
