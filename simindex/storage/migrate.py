"""What an index stores about itself, and bringing its schema up to date.

``Settings`` (layout, fingerprint configuration, k) live in simindex_meta;
Alembic (migrations/) owns every change of the schema, and ``upgrade`` runs
it on the caller's connection, so the library, the CLI and the tests upgrade
the same way. No schema is created outside a migration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect

from simindex.blocks import MAX_INDEX_K, BlockLayout, probes
from simindex.errors import (
    ConfigMismatchError,
    IndexVersionError,
    InvalidArgumentError,
    NoIndexError,
    NotAnIndexError,
    StorageError,
)
from simindex.fingerprint import BITS, FingerprintConfig
from simindex.signature import (
    CJK_SKETCHES,
    DEFAULT_THRESHOLD,
    NAME,
    ORDERED_SETS,
    SKETCH_ONLY,
    SORTED_SETS,
    check_threshold,
)
from simindex.storage import schema, short_sets
from simindex.storage.dialects import COUNT_SQL, dialect_of
from simindex.storage.location import Location

if TYPE_CHECKING:
    from simindex.storage.backend import Backend

FORMAT_VERSION = 2  # the newest format this simindex reads (see Settings.format)
# The Alembic revisions this simindex knows, oldest first (tests check them
# against migrations/versions). Kept here so opening an index needs no Alembic.
REVISIONS = (
    "0001",
    "0002",
    "0003",
    "0004",
    "0005",
    "0006",
    "0007",
    "0008",
    "0009",
    "0010",
    "0011",
    "0012",
    "0013",
    "0014",
)
HEAD = REVISIONS[-1]
EXACT_SETS_FROM = "0006"  # the first whose signatures may keep a short text's set
ORDERED_FROM = "0010"  # the first whose short CJK texts keep their units in order
CHARACTERS_FROM = "0012"  # the first whose longer texts of CJK characters say so
MIDDLE_FROM = "0014"  # the first whose texts of 16-256 units keep their middle set (NAME)
PASSAGES_FROM = "0008"  # the first with the tables of passages (storage/passages.py)
# simindex_meta's rows that are not settings: a rebuild's new settings leave them.
KEPT_ROWS = ("changes", "passages_at")
FIRST_THRESHOLD = 0.8  # what revision 0002 records for an index made before it


def remake_keys(conn: Connection, *, table: bool = False) -> None:
    """A migration's keys of every row made again from its stored signature
    (short_sets.make_all: no text needed; ``table``: the key table made
    again first, Dialect.remake_set_keys), and the generation moved, so that
    a process of an older simindex that holds the index reads its settings
    again and refuses it (it would write keys of the older rule). Nothing
    where the tables are not there yet (an empty database: they are made
    with the index)."""
    if not inspect(conn).has_table(schema.FINGERPRINT_TABLE):
        return
    dialect = dialect_of(conn)
    if table:
        dialect.remake_set_keys(conn)
    short_sets.make_all(conn)
    dialect.move_generation(conn)


def rename_signatures(conn: Connection, before: str, after: str, *, move: bool = True) -> None:
    """A migration's new name for the kind of signature the rows hold
    (nothing rewritten: each row is read as what it holds), and (``move``,
    an upgrade) the generation moved, so that a process of an older
    simindex that holds the index reads its settings again and refuses it."""
    conn.exec_driver_sql(
        f"UPDATE {schema.META_TABLE} SET value = '{after}' "
        f"WHERE name = 'signature' AND value = '{before}'"
    )
    if move:
        dialect_of(conn).move_generation(conn)


def _mine() -> str:
    """This simindex, as an error about an index it cannot read names it."""
    return f"simindex {package_version()} (format {FORMAT_VERSION}, schema revision {HEAD})"


@cache  # (the installed metadata read once a process: a few ms)
def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simindex")
    except PackageNotFoundError:
        return "0+checkout"


def migrations_dir() -> Path:
    """Where the Alembic scripts are: inside the installed package, or the checkout's."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise StorageError(f"simindex's migrations are missing (looked in {here})")


@dataclass(frozen=True)
class Settings:
    """What an index stores about itself in simindex_meta.

    ``distance`` is the index's k, the distance queries use by default; the
    layout's tables answer up to ``layout.k`` by exact lookups and beyond it
    by probes (a layout of k or fewer blocks). None means ``layout.k``.
    ``threshold``: the verified similarity a candidate within k needs to be
    a near-duplicate, by default (0: distance alone; see simindex.signature).
    ``passages``: whether the index keeps its documents' passages, which
    ``overlaps`` asks (storage/passages.py; chosen at creation, changed by
    a rebuild from the texts).
    ``revision``: the schema revision of the file (not stored in the meta
    table; HEAD once an index is open: an older one is upgraded by an open
    for writing, and refused by a read-only one, see open_settings).
    ``counting`` and ``marking``: whether the triggers that count every
    change of the fingerprint table (revision 0005) and those that mark
    short sets (0007) are there and enabled (not stored; False only for an
    index opened read-only after they were dropped by hand). What a
    snapshot read (held or stored) is checked against needs ``counting``;
    short texts are found by their set keys (matching.Verify.keys) only
    with ``marking``.
    """

    layout: BlockLayout
    config: FingerprintConfig
    created_by: str = ""
    distance: int | None = None
    threshold: float = DEFAULT_THRESHOLD
    revision: str = HEAD
    passages: bool = False
    counting: bool = field(default=True, compare=False)
    marking: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if self.distance is None:
            object.__setattr__(self, "distance", self.layout.k)

    @property
    def k(self) -> int:
        assert self.distance is not None  # set in __post_init__
        return self.distance

    @property
    def format(self) -> int:
        """2 for an index whose k is above its layout's (probed lookups), which
        a simindex of format 1 would misread; 1 for the others."""
        return 1 if self.k == self.layout.k else 2

    def rows(self) -> dict[str, str]:
        return {
            "format": str(self.format),
            "bits": str(BITS),
            "k": str(self.k),
            "blocks": json.dumps(list(self.layout.widths)),
            "tables": json.dumps([list(t) for t in self.layout.tables]),
            "fingerprint": self.config.to_json(),
            "created_by": self.created_by,
            "threshold": repr(self.threshold),
            "signature": NAME,
        } | ({"passages": "1"} if self.passages else {})


def read_settings(conn: Connection, where: Location) -> tuple[Settings, str] | None:
    """(settings, Alembic revision) of an index, None for an empty database.

    Raises NotAnIndexError for a database that holds something else and
    IndexVersionError for an index written by a newer simindex.
    """
    tables = set(inspect(conn).get_table_names())
    if not tables:
        return None
    if schema.VERSION_TABLE not in tables or schema.META_TABLE not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise NotAnIndexError(
            f"{where} is a database but not a simindex index (its tables: {shown}); left untouched"
        )
    revision = conn.exec_driver_sql(f"SELECT version_num FROM {schema.VERSION_TABLE}").scalar()
    rows: dict[str, str] = dict(
        conn.exec_driver_sql(f"SELECT name, value FROM {schema.META_TABLE}").all()
    )
    fmt = int(rows.get("format", "0") or 0)
    if fmt > FORMAT_VERSION or revision not in REVISIONS:
        theirs = rows.get("created_by") or "a newer simindex"
        raise IndexVersionError(
            f"{where} was written by {theirs} (format {fmt}, schema revision {revision}); "
            f"this is {_mine()}: upgrade simindex to open it"
        )
    # Before revision 0006 the signatures were the sketch alone (SKETCH_ONLY),
    # before 0010 a short text's set was sorted whatever its script
    # (SORTED_SETS), before 0012 a longer text's sketch was alone whatever
    # its script (ORDERED_SETS), before 0014 a text of 16-256 units kept no
    # set (CJK_SKETCHES): the upgrades rename them (the rows read as they
    # are: a 64-byte signature is a sketch without an exact set, a sorted
    # set is compared as a set).
    kind = rows.get("signature", NAME)
    until = {
        SKETCH_ONLY: EXACT_SETS_FROM,
        SORTED_SETS: ORDERED_FROM,
        ORDERED_SETS: CHARACTERS_FROM,
        CJK_SKETCHES: MIDDLE_FROM,
    }.get(kind)
    if kind != NAME and not (
        until is not None and REVISIONS.index(revision) < REVISIONS.index(until)
    ):
        raise IndexVersionError(
            f"{where} stores signatures of another kind ({rows['signature']!r}); this is "
            f"{_mine()}, which makes {NAME!r}: upgrade simindex to open it"
        )
    try:
        layout = BlockLayout.from_stored(json.loads(rows["blocks"]), json.loads(rows["tables"]))
        settings = Settings(
            layout=layout,
            config=FingerprintConfig.from_json(rows["fingerprint"]),
            created_by=rows.get("created_by", ""),
            distance=int(rows.get("k", layout.k)),
            # An index made before signatures (read as it is): the threshold
            # revision 0002 records, which its rows (no signature) do not
            # feel: they are matched by distance alone.
            threshold=check_threshold(float(rows.get("threshold", FIRST_THRESHOLD))),
            revision=str(revision),
            passages=rows.get("passages") == "1",
        )
    except (KeyError, ValueError, TypeError, InvalidArgumentError) as exc:
        raise NotAnIndexError(f"{where}: the index's settings are damaged ({exc})") from exc
    k = settings.k
    if (
        not layout.k <= k <= MAX_INDEX_K
        or (k > layout.k and probes(layout, k) is None)
        or settings.format != fmt
        or int(rows.get("bits", BITS)) != BITS
    ):
        raise NotAnIndexError(f"{where}: the index's settings disagree with each other")
    return settings, str(revision)


def upgrade(conn: Connection, layout: BlockLayout) -> None:
    """Bring the schema to the newest revision, inside the caller's transaction."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = conn
    config.attributes["simindex.layout"] = {
        "widths": list(layout.widths),
        "tables": [list(t) for t in layout.tables],
    }
    command.upgrade(config, "head")


def create(conn: Connection, settings: Settings) -> Settings:
    """Create an index's tables and record its settings (one transaction);
    returns them, named as made by this simindex where they name no maker
    (``created_by``: the installed version is read only here, for a new
    index, not at every open)."""
    if not settings.created_by:
        settings = replace(settings, created_by=f"simindex {package_version()}")
    upgrade(conn, settings.layout)
    tables = schema.build(settings.layout)
    conn.execute(
        tables.meta.insert(), [{"name": n, "value": v} for n, v in settings.rows().items()]
    )
    if settings.passages:
        from simindex.storage.passages import begin_passages

        begin_passages(conn)
    return settings


def write_settings(conn: Connection, settings: Settings) -> None:
    """Replace the stored settings (inside the caller's transaction); the
    changes counted stay (the count never goes back: see dialects.CHANGES),
    and so does the passages' stamp (storage/passages.py)."""
    meta = schema.build(settings.layout).meta
    conn.execute(meta.delete().where(meta.c.name.not_in(KEPT_ROWS)))
    conn.execute(meta.insert(), [{"name": n, "value": v} for n, v in settings.rows().items()])


def count_again(conn: Connection) -> None:
    """Make the triggers that count changes again where they are missing
    (dropped by hand, or a restore that left them out): what was stored
    while nothing counted is not trusted (the stored snapshot is emptied,
    the count moved on)."""
    dialect_of(conn).count_changes(conn)
    conn.exec_driver_sql(f"DELETE FROM {schema.SNAPSHOT_TABLE}")
    conn.exec_driver_sql(COUNT_SQL)
    short_sets.mark_changes(conn)  # (nor were the rows with short sets marked)
    short_sets.make_all(conn)


def _triggers(backend: Backend, conn: Connection) -> tuple[bool, bool]:
    """(counting, marking): whether the triggers that count changes (0005)
    and those that mark short sets (0007) are there and enabled."""
    return backend.dialect.counting(conn), short_sets.marking(conn)


def older(where: Location, revision: str) -> IndexVersionError:
    """The error of an index of an older schema revision met where it is
    not upgraded: opened read-only, or put in place under an open index."""
    return IndexVersionError(
        f"{where} was written by an older simindex (schema revision {revision}; this is "
        f"{_mine()}): open it once for writing to upgrade it in place "
        f"(`simindex check INDEX --repair`, or SimIndex(path)); a file this user may not "
        f"write is copied first"
    )


def settings_now(backend: Backend, conn: Connection) -> Settings | None:
    """The index's settings as ``conn`` reads them now, with whether its
    triggers are there and enabled (``counting``, ``marking``): what a
    view is made of (None: an empty database)."""
    found = read_settings(conn, backend.where)
    if found is None:
        return None
    if found[1] != HEAD:
        raise older(backend.where, found[1])
    counting, marking = _triggers(backend, conn)
    return replace(found[0], counting=counting, marking=marking)


def open_settings(
    backend: Backend,
    new: Settings,
    *,
    may_create: bool,
    k: int | None = None,
    blocks: int | None = None,
    config: FingerprintConfig | None = None,
    threshold: float | None = None,
    passages: bool | None = None,
) -> Settings:
    """The settings of the index behind `backend`: created as `new` where there
    is none (if ``may_create``), upgraded to the newest schema revision where it is
    older (under the write lock, alone; an index opened read-only must be at
    the newest revision already, else IndexVersionError: see ``older``), and
    checked against the k, blocks, configuration and threshold the
    caller asked for, and whether it keeps passages (ConfigMismatchError
    if they differ)."""
    where = backend.where
    backend.ensure_schema(create=may_create)
    with backend.reading() as conn:
        found = read_settings(conn, where)
        counting, marking = (True, True) if found is None else _triggers(backend, conn)
    if found is not None and found[1] != HEAD and backend.readonly:
        raise older(where, found[1])
    if found is None and backend.readonly:  # (an empty file, say: nothing to read, none made)
        raise NoIndexError(f"no index at {where}")
    whole = counting and marking
    if found is None or (not backend.readonly and (found[1] != HEAD or not whole)):
        with backend.writing(alone=True) as conn:
            found = read_settings(conn, where)  # again, under the lock
            if found is None:
                if not may_create:
                    raise NoIndexError(f"no index at {where}")
                return create(conn, new)
            if found[1] != HEAD:
                upgrade(conn, found[0].layout)
                found = read_settings(conn, where)
                assert found is not None
            if not all(_triggers(backend, conn)):
                count_again(conn)
        counting = marking = True
    settings = replace(found[0], counting=counting, marking=marking)
    if k is not None and k != settings.k:
        raise ConfigMismatchError(
            f"{where} was built for k={settings.k}, not k={k}: open it without k "
            f"(queries may still ask for any distance)"
        )
    if blocks is not None and blocks != len(settings.layout.widths):
        raise ConfigMismatchError(
            f"{where} has {len(settings.layout.widths)} blocks, not {blocks}: "
            f"open it without blocks"
        )
    if config is not None and config != settings.config:
        raise ConfigMismatchError(
            f"{where} fingerprints texts as {settings.config.describe()} "
            f"({settings.config.to_json()}), not as asked ({config.to_json()}): "
            f"open it without a configuration, or build a new index"
        )
    if threshold is not None and threshold != settings.threshold:
        raise ConfigMismatchError(
            f"{where} verifies candidates at threshold {settings.threshold}, not {threshold}: "
            f"open it without a threshold (queries may still ask for any), or change it by "
            f"rebuilding it (simindex rebuild INDEX --threshold T)"
        )
    if passages is not None and passages != settings.passages:
        kept = "keeps" if settings.passages else "does not keep"
        raise ConfigMismatchError(
            f"{where} {kept} passages (overlaps): open it without asking, or rebuild it "
            f"from its texts with or without them (simindex rebuild INDEX SOURCES "
            f"--{'no-' * settings.passages}overlaps)"
        )
    return settings
