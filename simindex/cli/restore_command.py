"""restore: a backup put in place of a SQLite index, safely while it is in use.

Copying a file over an index that a process has open (it has a ``-wal``)
damages the index; the library's restore (simindex.index_files) copies
through SQLite's backup API instead, after checking that the backup is a
sound index and that what it replaces is an index (or nothing).
"""

from __future__ import annotations

from typing import Annotated

import typer

from simindex import waits
from simindex.cli.errors import reported
from simindex.cli.options import JsonOpt, TimeoutOpt, lock_wait
from simindex.cli.output import counted, emit_json


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
    from simindex.index_files import prepare_restore

    ready = prepare_restore(backup, index, timeout=lock_wait())
    source, target, rows = ready.source, ready.target, ready.fingerprints
    with waits.noted(target, lock_wait()):  # (SQLite's backup API waits inside one call)
        ready.run()
    shown = source.absolute()  # (as every command names an index file: absolute)
    if as_json:
        emit_json({"index": str(target), "backup": str(shown), "fingerprints": rows})
    else:
        typer.echo(f"restored {target} from {shown}: {counted(rows, 'fingerprint', grouped=True)}")
