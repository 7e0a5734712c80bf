"""Where an index's fingerprints live: SQLite or PostgreSQL, behind one interface.

The rest of simindex sees only what this package exports: ``open_backend``
gives a ``Backend`` (engine, transactions, error translation, capabilities)
for a location, and ``Store`` the statements on an index's tables. Every
difference between the databases lives in ``dialects``; nothing outside this
package asks which database it is talking to.

    location.py   where an index is (path, :memory:, URL) and what a file allows
    dialects.py   SQLite and PostgreSQL: engines, capabilities, the SQL that differs
    backend.py    one index's database: read and write transactions, errors
    schema.py     the tables (SQLAlchemy MetaData; Alembic's migrations create them)
    migrate.py    the stored settings; Alembic upgrades
    rebuild.py    a rebuild's staging table and swap, in one transaction
    sql.py        statements compiled for the driver, kept read connections, block rows
    store.py      the fingerprint table: lookups, loads, writes
    stored.py     the stored snapshot (Store.snapshots)
    passages.py   the passages of an index that keeps them (overlaps), and their stamp
    checks.py     what check and repair ask of it (Store.checks)
    consistency.py  whether rows read hold together (else: a damaged file)
    copying.py    PostgreSQL's COPY loads and the server's join of a batch (Store.copying)
    backups.py    a SQLite index copied whole while in use (SQLite's backup API)
"""

from simindex.storage.backend import Backend, Changed, Versions, Write, db_error
from simindex.storage.backups import copy_file, holds_an_index
from simindex.storage.checks import Problem
from simindex.storage.dialects import BUSY_TIMEOUT_S, Capabilities
from simindex.storage.loading import FAST_LOAD_MIN
from simindex.storage.location import (
    HEADER_BYTES,
    FileAccess,
    Location,
    check_file,
    file_access,
    locate,
)
from simindex.storage.migrate import (
    FORMAT_VERSION,
    HEAD,
    REVISIONS,
    Settings,
    count_again,
    create,
    migrations_dir,
    open_settings,
    package_version,
    read_settings,
    settings_now,
    upgrade,
    write_settings,
)
from simindex.storage.passages import Passages
from simindex.storage.rebuild import stage, start_staging, swap_in
from simindex.storage.sql import Chunk
from simindex.storage.store import Store


def open_backend(
    where: Location,
    *,
    timeout: float = BUSY_TIMEOUT_S,
    readonly: bool = False,
    immutable: bool = False,
) -> Backend:
    """The backend of an index at `where` (a connection is made only when used)."""
    return Backend(where, timeout=timeout, readonly=readonly, immutable=immutable)


__all__ = [
    "HEADER_BYTES",
    "Chunk",
    "BUSY_TIMEOUT_S",
    "FAST_LOAD_MIN",
    "FORMAT_VERSION",
    "HEAD",
    "REVISIONS",
    "Backend",
    "Capabilities",
    "Changed",
    "FileAccess",
    "Location",
    "Passages",
    "Problem",
    "Settings",
    "Store",
    "Versions",
    "Write",
    "check_file",
    "copy_file",
    "count_again",
    "create",
    "db_error",
    "file_access",
    "holds_an_index",
    "locate",
    "migrations_dir",
    "open_backend",
    "open_settings",
    "package_version",
    "read_settings",
    "settings_now",
    "stage",
    "start_staging",
    "swap_in",
    "upgrade",
    "write_settings",
]
