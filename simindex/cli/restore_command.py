"""restore: a backup put in place of a SQLite index, safely while it is in use.

Copying a file over an index that a process has open (it has a ``-wal``)
damages the index; this copies through SQLite's backup API instead
(storage/backups.py), after checking that the backup is a sound index and
that what it replaces is an index (or nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simindex import storage
from simindex.cli.errors import UserError, reported
from simindex.cli.options import JsonOpt, TimeoutOpt, lock_note, lock_wait, open_index
from simindex.cli.output import emit_json
from simindex.errors import DamagedIndexError, SimIndexError

PG_RESTORE = "a PostgreSQL index is restored with pg_restore (docs/operating.md, Restore)"


@reported
def restore(
    backup: Annotated[
        str,
        typer.Argument(metavar="BACKUP", help="A copy of an index file (checked before use)."),
    ],
    index: Annotated[
        str,
        typer.Argument(
            metavar="INDEX",
            help="The index file to replace (in use or not), or a new file to make.",
        ),
    ],
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Replace an index file with a backup, safely while in use.

    The backup must pass simindex check. INDEX is replaced in one
    transaction (SQLite's backup API): processes that have it open read
    the restored index from their next call; writers wait meanwhile.
    """
    where = storage.locate(index)
    if where.path is None:
        raise UserError(f"restore replaces an index file, not {where}: {PG_RESTORE}")
    source, target = Path(backup), where.path
    if not source.is_file():
        raise UserError(f"no such file: {backup}")
    if target.exists() and source.samefile(target):
        raise UserError(f"{backup} is the index itself")
    try:
        with open_index(str(source), readonly=True) as copy:
            report = copy.check()
            rows = len(copy)
    except DamagedIndexError:
        report = None
    except SimIndexError as exc:
        raise UserError(f"backup: {exc} (nothing was restored)") from exc
    if report is None or not report.ok:
        raise UserError(
            f"backup {backup} is not sound (simindex check {backup} lists the problems); "
            f"nothing was restored"
        )
    storage.check_file(where, create=True, timeout=lock_wait())  # SQLite's file
    if target.exists() and not storage.holds_an_index(target):
        raise UserError(
            f"{index} is a SQLite database but not a simindex index: restore replaces an "
            f"index only; left untouched"
        )
    with lock_note(str(target)):
        storage.copy_file(source, target, timeout=lock_wait())
    shown = source.absolute()  # (as every command names an index file: absolute)
    if as_json:
        emit_json({"index": str(target), "backup": str(shown), "fingerprints": rows})
    else:
        typer.echo(f"restored {target} from {shown}: {rows:,} fingerprints")
