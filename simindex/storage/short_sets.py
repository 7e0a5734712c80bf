"""The keys of short texts' sets: how a short text finds the texts one unit apart.

A one-word edit of a six-word text moves its fingerprint past any k the
block indexes answer, so a row whose signature keeps a set of at least
four units is also stored under its set keys (signature.set_keys) in
``simindex_set_keys`` (set key, row id), and a short query looks its own
keys up there (matching.py holds the rule that decides).

Every writer keeps the table right, simindex or not: triggers on the
fingerprint table put the id of every row written with a short set (or
whose signature or id changed) in ``simindex_set_keys_due``, and drop the
keys of a row deleted. simindex makes the keys of the rows due at the end
of each of its write transactions (``drain``, Backend's before_commit), and
a reader takes every row still due as a candidate of every short query
(rows another program wrote since simindex last wrote: few, and read by id),
so a row is found by its keys or by being due, never missed.

On PostgreSQL, where writers run side by side, ``drain`` locks the rows it
makes keys for (FOR UPDATE, skipping rows another transaction holds: that
one makes them, or leaves them due), so a row's keys are never made from a
signature that another transaction is replacing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, text

from simindex.signature import NBYTES, is_signature, keys_of_sets
from simindex.storage import schema

KEYS = schema.SET_KEYS_TABLE
DUE = schema.SET_KEYS_DUE_TABLE
_FP = schema.FINGERPRINT_TABLE
_CHUNK = 2000  # due rows made at once

# SQLite: a trigger per kind of change, per row. Its statements must not
# conflict: the conflict policy of the statement that fires a trigger
# overrides theirs (an upsert's would make INSERT OR IGNORE fail), so a row
# already due is not inserted again rather than ignored.
_MARK_NEW = (
    f"INSERT INTO {DUE} (id) SELECT NEW.id WHERE NOT EXISTS (SELECT 1 FROM {DUE} WHERE id = NEW.id)"
)
_SQLITE_TRIGGERS = {
    "simindex_set_keys_inserted": (
        f"AFTER INSERT ON {_FP} WHEN length(NEW.signature) > {NBYTES} BEGIN {_MARK_NEW}; END"
    ),
    "simindex_set_keys_updated": (
        f"AFTER UPDATE OF id, signature ON {_FP} "
        f"WHEN length(NEW.signature) > {NBYTES} OR length(OLD.signature) > {NBYTES} "
        f"OR NEW.id IS NOT OLD.id BEGIN {_MARK_NEW}; END"
    ),
    "simindex_set_keys_deleted": (
        f"AFTER DELETE ON {_FP} "
        f"BEGIN DELETE FROM {KEYS} WHERE id = OLD.id; DELETE FROM {DUE} WHERE id = OLD.id; END"
    ),
}

# PostgreSQL: statement triggers with transition tables (a COPY of a million
# rows runs one statement, not a million), one function for all.
_PG_FUNCTION = "simindex_set_keys_mark"
_PG_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {_PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s text := quote_ident(TG_TABLE_SCHEMA);
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE 'INSERT INTO ' || s || '.{DUE} (id) SELECT id FROM simindex_new '
      'WHERE octet_length(signature) > {NBYTES} ON CONFLICT DO NOTHING';
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE 'INSERT INTO ' || s || '.{DUE} (id) SELECT n.id FROM simindex_new n '
      'LEFT JOIN simindex_old o ON o.id = n.id WHERE o.id IS NULL '
      'OR octet_length(n.signature) > {NBYTES} OR octet_length(o.signature) > {NBYTES} '
      'ON CONFLICT DO NOTHING';
  ELSIF TG_OP = 'DELETE' THEN
    EXECUTE 'DELETE FROM ' || s || '.{KEYS} k USING simindex_old o WHERE k.id = o.id';
    EXECUTE 'DELETE FROM ' || s || '.{DUE} d USING simindex_old o WHERE d.id = o.id';
  ELSE
    EXECUTE 'DELETE FROM ' || s || '.{KEYS}';
    EXECUTE 'DELETE FROM ' || s || '.{DUE}';
  END IF;
  RETURN NULL;
END
$$"""
_PG_TRIGGERS = {
    "simindex_set_keys_inserted": "AFTER INSERT ON {t} REFERENCING NEW TABLE AS simindex_new",
    "simindex_set_keys_updated": (
        "AFTER UPDATE ON {t} REFERENCING OLD TABLE AS simindex_old NEW TABLE AS simindex_new"
    ),
    "simindex_set_keys_deleted": "AFTER DELETE ON {t} REFERENCING OLD TABLE AS simindex_old",
    "simindex_set_keys_truncated": "AFTER TRUNCATE ON {t}",
}
TRIGGERS = tuple(_PG_TRIGGERS)  # (SQLite's are the first three)


def mark_changes(conn: Connection) -> None:
    """Make the triggers that put the rows written in the due table (where
    missing: after a rebuild, in a migration, or dropped by hand)."""
    if conn.dialect.name == "sqlite":
        for name, body in _SQLITE_TRIGGERS.items():
            conn.exec_driver_sql(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")
        return
    conn.exec_driver_sql(_PG_FUNCTION_SQL)
    for name, body in _PG_TRIGGERS.items():
        conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {_FP}")
        conn.exec_driver_sql(
            f"CREATE TRIGGER {name} {body.format(t=_FP)} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_PG_FUNCTION}()"
        )


def marking(conn: Connection) -> bool:
    """Whether every trigger mark_changes makes is there (and enabled)."""
    if conn.dialect.name == "sqlite":
        names = ", ".join(f"'{n}'" for n in _SQLITE_TRIGGERS)
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
            f"AND tbl_name = '{_FP}' AND name IN ({names})"
        ).scalar_one()
        return int(found) == len(_SQLITE_TRIGGERS)
    names = ", ".join(f"'{n}'" for n in _PG_TRIGGERS)
    found = conn.exec_driver_sql(
        f"SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('{_FP}') "
        f"AND tgname IN ({names}) AND tgenabled <> 'D'"
    ).scalar_one()
    return int(found) == len(_PG_TRIGGERS)


# SQLite runs a row trigger's program for every row an insert or update
# writes, its WHEN clause false or not: an insert costs about twice as much
# with one. A large load sets these two aside (marking_aside) and marks what
# they would have (mark_updated, mark_loaded); the delete trigger costs an
# insert nothing and stays.
_ASIDE = ("simindex_set_keys_inserted", "simindex_set_keys_updated")
_ASIDE_MAX_ID = 1 << 62  # past it, SQLite may give a new row an id below the largest


def marking_aside(conn: Connection) -> int | None:
    """Inside a large SQLite load (the write lock held, so nobody else writes
    until it commits, and readers never see the table without the
    triggers): set the triggers that mark inserted and updated rows aside.
    Returns the largest id before the load, for mark_updated and
    mark_loaded, or None when nothing was set aside (PostgreSQL, whose
    statement triggers cost a load little; an index without the triggers)."""
    if conn.dialect.name != "sqlite" or not marking(conn):
        return None
    before = int(conn.exec_driver_sql(f"SELECT COALESCE(MAX(id), 0) FROM {_FP}").scalar_one())
    if before >= _ASIDE_MAX_ID:
        return None
    for name in _ASIDE:
        conn.exec_driver_sql(f"DROP TRIGGER {name}")
    return before


def mark_updated(conn: Connection, keys: Sequence[str], before: int) -> None:
    """After a chunk of the load is written: the rows of these keys that were
    there before the load (ids up to ``before``, marking_aside's) are due,
    as the update trigger would have marked them (their keys are made again
    from what they hold now). Nothing to do after an empty table."""
    if before <= 0:
        return
    for start in range(0, len(keys), _IN_KEYS):
        some = list(keys[start : start + _IN_KEYS])
        marks = ", ".join("?" * len(some))
        conn.exec_driver_sql(
            f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} f "
            f'WHERE "key" IN ({marks}) AND id <= ? '
            f"AND NOT EXISTS (SELECT 1 FROM {DUE} d WHERE d.id = f.id)",
            (*some, before),
        )


_IN_KEYS = 900  # keys a statement of mark_updated names (SQLite before 3.32 takes 999 values)


def mark_loaded(conn: Connection, before: int) -> None:
    """At the end of the load: the rows it inserted (ids above ``before``)
    with a short set are due, as the insert trigger would have marked them,
    and the triggers are made again."""
    conn.exec_driver_sql(
        f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} f WHERE id > ? "
        f"AND length(signature) > {NBYTES} "
        f"AND NOT EXISTS (SELECT 1 FROM {DUE} d WHERE d.id = f.id)",
        (before,),
    )
    mark_changes(conn)


def mark_all(conn: Connection) -> None:
    """Every row with a short set due again (its keys remade at the next
    drain): after a rebuild, or where the triggers were missing."""
    conn.exec_driver_sql(f"DELETE FROM {KEYS}")
    conn.exec_driver_sql(f"DELETE FROM {DUE}")
    length = "length" if conn.dialect.name == "sqlite" else "octet_length"
    conn.exec_driver_sql(
        f"INSERT INTO {DUE} (id) SELECT id FROM {_FP} WHERE {length}(signature) > {NBYTES}"
    )


_DUE_IDS = text(f"SELECT id FROM {DUE} WHERE id > :after ORDER BY id LIMIT {_CHUNK}")
_FORGET = text(f"DELETE FROM {KEYS} WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))
_DONE = text(f"DELETE FROM {DUE} WHERE id IN :ids").bindparams(bindparam("ids", expanding=True))


def drain(conn: Connection) -> int:
    """Make the set keys of the rows due (in the caller's write transaction),
    and take them off the due table; returns the rows made."""
    rows_sql = f"SELECT id, signature FROM {_FP} WHERE id IN :ids"
    if conn.dialect.name != "sqlite":
        rows_sql += " FOR UPDATE SKIP LOCKED"
    rows = text(rows_sql).bindparams(bindparam("ids", expanding=True))
    insert: Any = None
    after, made = -(1 << 63), 0
    # SQLite writes one transaction at a time: a row due and not found is
    # gone (an INSERT OR REPLACE deletes without the delete trigger), and its
    # mark and keys go too. On PostgreSQL it may be a row another
    # transaction holds: left due, for that one or the next.
    alone = conn.dialect.name == "sqlite"
    while due := [int(r[0]) for r in conn.execute(_DUE_IDS, {"after": after})]:
        after = due[-1]
        found = conn.execute(rows, {"ids": due}).fetchall()
        ids = [int(r[0]) for r in found]
        done = due if alone else ids
        if not done:
            continue
        signatures = [bytes(r[1]) if is_signature(r[1]) else None for r in found]
        keys, owner = keys_of_sets(signatures)
        conn.execute(_FORGET, {"ids": done})
        if keys.size:
            if insert is None:
                insert = _insert(conn)
            made_keys = zip(keys.tolist(), owner.tolist(), strict=True)
            conn.execute(insert, [{"set_key": k, "id": ids[i]} for k, i in made_keys])
        conn.execute(_DONE, {"ids": done})
        made += len(ids)
    return made


def _insert(conn: Connection) -> Any:
    table = schema.set_key_tables()[0]
    if conn.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert  # type: ignore[assignment]
    return insert(table).on_conflict_do_nothing()
