"""The keys of signatures: how a text finds the texts its fingerprint moved past k.

A one-word edit of a six-word text moves its fingerprint past any k the
block indexes answer, and a tenth of a longer text's words edited moves it
past k = 8 one time in four; so a row with a signature is also stored under
its keys (signature.keys_of: a short text's set keys, a longer text's band
keys) in ``simindex_set_keys`` (key, row id), and a verified query looks
its own keys up there (signature.meets holds the rule that decides).

Every writer keeps the table right, simindex or not: triggers on the
fingerprint table (each database's own, made by its Dialect: dialects.py)
put the id of every row written with a signature (or whose signature or id
changed) in ``simindex_set_keys_due``, and drop the keys of a row deleted.
simindex makes the keys of the rows due at the end of each of its write
transactions (``drain``, Backend's before_commit), and a reader takes every
row still due as a candidate of every short query (rows another program
wrote since simindex last wrote: few, and read by id), so a row is found
by its keys or by being due, never missed.

Where writers run side by side (PostgreSQL), ``drain`` locks the rows it
makes keys for (Dialect.lock_rows: FOR UPDATE, skipping rows another
transaction holds: that one makes them, or leaves them due), so a row's
keys are never made from a signature that another transaction is replacing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Connection, bindparam, text

from simindex.signature import NBYTES, is_signature, keys_of
from simindex.storage import schema
from simindex.storage.dialects import dialect_of
from simindex.storage.sql import Sql

KEYS = schema.SET_KEYS_TABLE
DUE = schema.SET_KEYS_DUE_TABLE
_FP = schema.FINGERPRINT_TABLE
_CHUNK = 2000  # due rows made at once


def mark_changes(conn: Connection) -> None:
    """Make the triggers that put the rows written in the due table (where
    missing: after a rebuild, in a migration, or dropped by hand): row
    triggers on SQLite, statement triggers on PostgreSQL (dialects.py)."""
    dialect_of(conn).mark_short_sets(conn)


def marking(conn: Connection) -> bool:
    """Whether every trigger mark_changes makes is there (and enabled)."""
    return dialect_of(conn).marking_short_sets(conn)


def marking_aside(conn: Connection) -> int | None:
    """Inside a large load: set the triggers that mark inserted and updated
    rows aside where they cost it per row (SQLite's, Dialect.short_sets_aside).
    Returns the largest id before the load, for mark_updated and
    mark_loaded, or None when nothing was set aside."""
    return dialect_of(conn).short_sets_aside(conn)


def mark_updated(conn: Connection, keys: Sequence[str], before: int) -> None:
    """After a chunk of the load is written: the rows of these keys that were
    there before the load (ids up to ``before``, marking_aside's) are due,
    as the update trigger would have marked them (their keys are made again
    from what they hold now). Nothing to do after an empty table."""
    if before <= 0:
        return
    for start in range(0, len(keys), _IN_KEYS):
        conn.execute(
            _MARK_UPDATED, {"keys": list(keys[start : start + _IN_KEYS]), "before": before}
        )


_IN_KEYS = 900  # keys a statement of mark_updated names (SQLite before 3.32 takes 999 values)
_MARK_UPDATED = text(
    f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} f "
    'WHERE "key" IN :keys AND id <= :before '
    f"AND NOT EXISTS (SELECT 1 FROM {DUE} d WHERE d.id = f.id)"
).bindparams(bindparam("keys", expanding=True))


def mark_loaded(conn: Connection, before: int) -> None:
    """At the end of the load: the rows it inserted (ids above ``before``)
    with a signature are due, as the insert trigger would have marked them,
    and the triggers are made again."""
    length = dialect_of(conn).byte_length
    conn.execute(
        text(
            f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} f WHERE id > :before "
            f"AND {length}(signature) >= {NBYTES} "
            f"AND NOT EXISTS (SELECT 1 FROM {DUE} d WHERE d.id = f.id)"
        ),
        {"before": before},
    )
    mark_changes(conn)


def mark_all(conn: Connection) -> None:
    """Every row with a signature due again (its keys remade at the next
    drain): after a rebuild, or where the triggers were missing."""
    conn.exec_driver_sql(f"DELETE FROM {KEYS}")
    conn.exec_driver_sql(f"DELETE FROM {DUE}")
    length = dialect_of(conn).byte_length
    conn.exec_driver_sql(
        f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} WHERE {length}(signature) >= {NBYTES}"
    )


def make_all(conn: Connection) -> None:
    """Every row's keys made again from its signature, now (mark_all, then
    drain): check --repair, and triggers made again where they were missing."""
    mark_all(conn)
    drain(conn)


# One table object a process: a statement's compiled form is cached by its
# tables' identity (storage/sql.py), so a new one each drain compiled again.
_KEY_TABLE = schema.set_key_tables()[0]
_DUE_IDS = text(f"SELECT id FROM {DUE} WHERE id > :after ORDER BY id LIMIT {_CHUNK}")
_FORGET = text(f"DELETE FROM {KEYS} WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))
_DONE = text(f"DELETE FROM {DUE} WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))


def drain(conn: Connection) -> int:
    """Make the keys of the rows due (in the caller's write transaction),
    and take them off the due table; returns the rows made."""
    dialect = dialect_of(conn)
    rows_sql = dialect.lock_rows(f"SELECT id, signature FROM {_FP} WHERE id IN :ids")
    rows = text(rows_sql).bindparams(bindparam("ids", expanding=True))
    insert: Any = None
    after, made = -(1 << 63), 0
    # Where writers take turns (SQLite), a row due and not found is gone (an
    # INSERT OR REPLACE deletes without the delete trigger), and its mark
    # and keys go too. Else (PostgreSQL) it may be a row another
    # transaction holds (lock_rows skipped it): left due, for that one or
    # the next.
    alone = dialect.one_writer
    while due := [int(r[0]) for r in conn.execute(_DUE_IDS, {"after": after})]:
        after = due[-1]
        found = conn.execute(rows, {"ids": due}).fetchall()
        ids = [int(r[0]) for r in found]
        done = due if alone else ids
        if not done:
            continue
        signatures = [bytes(r[1]) if is_signature(r[1]) else None for r in found]
        keys, owner = keys_of(signatures)
        conn.execute(_FORGET, {"ids": done})
        if keys.size:
            if insert is None:  # (the driver's executemany: twelve keys a longer text)
                statement = dialect.insert(_KEY_TABLE).on_conflict_do_nothing()
                insert = Sql(statement, conn.dialect, ["set_key", "id"])
            owners = np.asarray(ids, dtype=np.int64)[owner]
            made_keys = list(zip(keys.tolist(), owners.tolist(), strict=True))
            conn.exec_driver_sql(insert.text, insert.many(made_keys))
        conn.execute(_DONE, {"ids": done})
        made += len(ids)
    return made


_SIGNED_AFTER = text(
    f"SELECT id, signature FROM {_FP} WHERE id > :after AND signature IS NOT NULL "
    f"ORDER BY id LIMIT {_CHUNK}"
)
_KEYS_BETWEEN = text(f"SELECT set_key, id FROM {KEYS} WHERE id >= :low AND id <= :high")


def lacking(conn: Connection) -> tuple[int, int, list[int]]:
    """How many rows with a signature, none of them due, lack one of their
    keys (what ``check`` reports: a query of the database would miss them
    by that key; every whole read pairs from the signatures instead); and
    how many rows, due or not, hold a stored value that is not a signature
    (damage), with the first ten of their ids. Keys
    of rows gone or changed may stay until a drain: they find a candidate
    that the rule then judges, never a wrong answer, and are not counted.
    Read a chunk of rows at a time (memory bounded)."""
    due = {int(r[0]) for r in conn.exec_driver_sql(f"SELECT id FROM {DUE}")}
    after, count, unsigned = -(1 << 63), 0, 0
    first: list[int] = []
    while found := conn.execute(_SIGNED_AFTER, {"after": after}).fetchall():
        ids = [int(r[0]) for r in found]
        after = ids[-1]
        signatures = [bytes(r[1]) if is_signature(r[1]) else None for r in found]
        damaged = [i for i, s in zip(ids, signatures, strict=True) if s is None]
        unsigned += len(damaged)
        first += damaged[: 10 - len(first)]
        keys, owner = keys_of(signatures)
        have = conn.execute(_KEYS_BETWEEN, {"low": ids[0], "high": after}).fetchall()
        held = np.array([tuple(row) for row in have], dtype=np.int64).reshape(-1, 2)
        lack = _absent(keys, np.asarray(ids, dtype=np.int64)[owner], held[:, 0], held[:, 1])
        count += len(set(lack.tolist()) - due)
    return count, unsigned, first


def _absent(
    keys: np.ndarray, ids: np.ndarray, held_keys: np.ndarray, held_ids: np.ndarray
) -> np.ndarray:
    """The ids of the (key, id) pairs wanted that are not among those held:
    both sorted together by key, id and side, a pair present where its
    group of equal (key, id) holds a held one."""
    k = np.concatenate([keys.astype(np.int64), held_keys])
    i = np.concatenate([ids, held_ids])
    side = np.concatenate([np.zeros(len(keys), np.int8), np.ones(len(held_keys), np.int8)])
    order = np.lexsort((side, i, k))
    k, i, side = k[order], i[order], side[order]
    if not len(k):
        return i
    new = np.r_[True, (k[1:] != k[:-1]) | (i[1:] != i[:-1])]  # a group of equal pairs begins
    present = np.maximum.reduceat(side, np.flatnonzero(new))
    return np.unique(i[(side == 0) & (present[np.cumsum(new) - 1] == 0)])
