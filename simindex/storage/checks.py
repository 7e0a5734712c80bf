"""What check and repair ask of the fingerprint table (the Store inherits them):
the database's own integrity check, the schema against the layout, block
columns against their fingerprints, and the most crowded buckets."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from sqlalchemy import Connection, bindparam, func, inspect, select

from simindex.storage import schema
from simindex.storage.sql import Sql, block_rows

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from simindex.blocks import BlockLayout
    from simindex.storage.backend import Backend

_CHUNK = 500  # ids per IN (...) list, well under every database's parameter limit


class Problem(NamedTuple):
    """Something check found wrong: its kind (what repair looks at: "column",
    "missing index", "index", "integrity", "settings", "blocks", "read") and
    the sentence a person reads."""

    kind: str
    text: str


class Checks:
    """check and repair's questions about one index's tables (a part of Store)."""

    backend: Backend
    engine: Engine
    layout: BlockLayout
    tables: schema.Schema

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
