"""What check and repair ask of the fingerprint table (``Store.checks``):
the database's own integrity check, the schema against the layout, block
columns against their fingerprints, the key table against the signatures,
and the most crowded buckets; and
whether rows a query expected and did not read back are gone or damaged."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from sqlalchemy import Connection, and_, bindparam, func, inspect, select, union_all

from simindex.storage import consistency, schema, short_sets
from simindex.storage.backend import expect
from simindex.storage.sql import Sql, block_rows

if TYPE_CHECKING:
    from simindex.blocks import BlockLayout
    from simindex.storage.backend import Backend

_CHUNK = 500  # ids per IN (...) list, well under every database's parameter limit


class Problem(NamedTuple):
    """Something check found wrong: its kind (what repair looks at: "column",
    "missing index", "index", "integrity", "settings", "blocks", "read",
    "passages", "keys") and
    the sentence a person reads."""

    kind: str
    text: str


class Checks:
    """check and repair's questions about one index's tables (``Store.checks``)."""

    def __init__(self, backend: Backend, layout: BlockLayout, tables: schema.Schema) -> None:
        self.backend = backend
        self.engine = backend.engine
        self.where = backend.where
        self.layout = layout
        self.tables = tables

    def integrity(self, conn: Connection) -> list[Problem]:
        """What the database's own integrity check finds wrong (nothing: [])."""
        return [Problem("integrity", text) for text in self.backend.dialect.integrity(conn)]

    def schema_problems(self, conn: Connection) -> list[Problem]:
        """Differences between the tables the layout needs and the ones there."""
        problems = []
        found = inspect(conn)
        t = self.tables.fingerprints
        columns = {c["name"] for c in found.get_columns(t.name)}
        for column in t.columns:
            if column.name not in columns:
                problems.append(Problem("column", f"column {column.name} is missing"))
        extra = sorted(c for c in columns if c.startswith("block_") and c not in t.columns)
        if extra:
            text = f"block columns the layout does not have: {', '.join(extra)}"
            problems.append(Problem("column", text))
        have = {ix["name"]: ix["column_names"] for ix in found.get_indexes(t.name)}
        for index in self.tables.lookups:
            wanted = [c.name for c in index.columns]
            if index.name not in have:
                text = f"index {index.name} on ({', '.join(wanted)}) is missing"
                problems.append(Problem("missing index", text))
            elif have[index.name] != wanted:
                problems.append(Problem("index", f"index {index.name} is on the wrong columns"))
        return problems

    def missing_lookups(self, conn: Connection) -> list[Any]:
        have = {ix["name"] for ix in inspect(conn).get_indexes(self.tables.fingerprints.name)}
        return [index for index in self.tables.lookups if index.name not in have]

    def bad_blocks(self, conn: Connection) -> list[int]:
        """Ids of the rows whose block columns disagree with their fingerprint."""
        t = self.tables.fingerprints
        blocks = [t.c[schema.block_column(i)] for i in range(len(self.layout.widths))]
        sql = Sql(select(t.c.id, t.c.fingerprint, *blocks), self.engine.dialect, [])
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        cursor = dbapi.cursor()
        bad: list[int] = []
        try:
            cursor.execute(sql.text, sql.params([]))
            while rows := cursor.fetchmany(100_000):
                width = 2 + len(blocks)
                flat = np.fromiter(chain.from_iterable(rows), np.int64, count=width * len(rows))
                table = flat.reshape(-1, width)
                fps = table[:, 1].view(np.uint64)
                wrong = np.zeros(len(rows), dtype=bool)
                for i, (shift, mask) in enumerate(self.layout.spans()):
                    expected = ((fps >> np.uint64(shift)) & np.uint64(mask)).view(np.int64)
                    wrong |= table[:, 2 + i] != expected
                bad.extend(table[wrong, 0].tolist())
        finally:
            cursor.close()
        return bad

    def repair_blocks(self, conn: Connection, ids: Sequence[int]) -> None:
        """Recompute the block columns of these rows from their fingerprints."""
        t = self.tables.fingerprints
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            rows = conn.execute(
                select(t.c.id, t.c.key, t.c.fingerprint).where(t.c.id.in_(chunk))
            ).all()
            fps = np.array([r[2] for r in rows], dtype=np.int64).view(np.uint64)
            fixed = block_rows([r[1] for r in rows], fps, self.layout)
            names = [schema.block_column(i) for i in range(len(self.layout.widths))]
            conn.execute(
                t.update()
                .where(t.c.id == bindparam("row_id"))
                .values({name: bindparam(name) for name in names}),
                [
                    {"row_id": r[0]} | dict(zip(names, f[2:], strict=True))
                    for r, f in zip(rows, fixed, strict=True)
                ],
            )

    def lacking_keys(self, conn: Connection) -> tuple[int, int, list[int]]:
        """How many rows lack some of their keys; how many hold a stored
        value that is not a signature, and the first ten of their ids
        (short_sets.lacking)."""
        return short_sets.lacking(conn)

    def make_keys_again(self, conn: Connection) -> None:
        """Every row's keys made again from its signature, in the caller's
        write transaction."""
        short_sets.make_all(conn)

    def largest_buckets(self, conn: Connection) -> list[tuple[int, int]]:
        """For each table, (its most common block values' row count, table number)."""
        t = self.tables.fingerprints
        out = []
        for j, table in enumerate(self.layout.tables):
            columns = [t.c[schema.block_column(b)] for b in table]
            statement = (
                select(func.count())
                .select_from(t)
                .group_by(*columns)
                .order_by(func.count().desc())
                .limit(1)
            )
            out.append((int(conn.execute(statement).scalar() or 0), j))
        return out

    def read_back(
        self,
        held: Iterable[tuple[int, int]],
        rows: Mapping[int, Sequence[Any]],
        generation: int | None,
    ) -> None:
        """Rows a query found as (id, signed fingerprint), in a snapshot or a
        lookup index, then read by id (``rows``: id -> (id, key, signed
        fingerprint, signature)). One that is missing, or has another
        fingerprint, was removed or replaced since, or the file is damaged:
        in a file, those few are read again in one snapshot under
        ``generation`` (``_gone``; rebuilt meanwhile: Changed)."""
        if self.where.path is None:  # (damage is a file's; and see consistency.rows)
            return
        suspects = {}
        for row_id, fingerprint in held:
            row = rows.get(row_id)
            if row is None or row[2] != fingerprint:
                suspects[row_id] = fingerprint
        if suspects:
            self._gone(suspects, generation)

    def _gone(self, suspects: dict[int, int], generation: int | None) -> None:
        """Raise DamagedIndexError unless each row (id -> the signed
        fingerprint it was found under) is gone, or holds another
        fingerprint, in the table and the lookup indexes alike: read in one
        transaction, the table's row (its block columns must be its
        fingerprint's) and the lookup indexes' entries for the old one."""
        t = self.tables.fingerprints
        names = [schema.block_column(i) for i in range(len(self.layout.widths))]
        by_id = select(t.c.id, t.c.fingerprint, *(t.c[n] for n in names)).where(
            t.c.id.in_(bindparam("ids", expanding=True))
        )
        # "id + 0": the id is compared in the index's entry, not looked up in
        # the table (which is the one in question).
        entries = union_all(
            *(
                select(t.c.id).where(
                    (t.c.id + 0) == bindparam("id"),
                    t.c.fingerprint == bindparam("fp"),
                    and_(*(t.c[names[b]] == bindparam(f"b{b}") for b in table)),
                )
                for table in self.layout.tables
            )
        )
        with self.backend.reading() as conn:
            # Rebuilt elsewhere: other rows, another layout; asked again.
            expect(self.backend.generation(conn), generation)
            read = consistency.table(
                self.where,
                conn.execute(by_id, {"ids": list(suspects)}).all(),
                2 + len(names),
            )
            consistency.blocks_agree(self.where, read, self.layout.spans())
            consistency.unique(self.where, read[:, 0])
            found = dict(zip(read[:, 0].tolist(), read[:, 1].tolist(), strict=True))
            for row_id, fingerprint in suspects.items():
                if found.get(row_id) == fingerprint:
                    continue  # (written back meanwhile)
                unsigned = fingerprint & ((1 << 64) - 1)
                blocks = {f"b{b}": v for b, v in enumerate(self.layout.blocks(unsigned))}
                params = {"id": row_id, "fp": fingerprint, **blocks}
                if conn.execute(entries, params).first() is not None:
                    state = "has no row" if row_id not in found else "has another fingerprint"
                    raise consistency.damaged(
                        self.where,
                        f"id {row_id} {state} in the table, but its lookup index holds it",
                    )
