"""The simindex command: a thin shell over SimIndex.

Data goes to stdout, progress and errors to stderr. Exit codes: 0 success;
1 ``query`` found nothing (like grep) or ``check`` found a problem; 2 an
error (one line ``Error: ...``); 130 interrupted (Ctrl-C; one line too),
143 and 129 the same for SIGTERM and SIGHUP.

The package, one module a concern; each depends only on those above it::

    output.py          what is printed: keys escaped, JSON lines, the progress bar
    errors.py          how a command ends: exit codes, UserError, ``reported``
    options.py         the shared options, and what arguments become
    files.py           what a command may read and write; outputs all or nothing
    index_commands.py  init, add, query, remove, stats, rebuild, check, compact
    overlaps_command.py overlaps: a text inside stored documents, or they inside it
    restore_command.py restore: a backup put in place of an index file in use
    dedup_command.py   dedup: pairs or clusters in an index, or a corpus deduplicated
    tools.py           advise, fingerprint, distance, explain
    __init__.py        the typer app, its commands in order, and ``main``
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import typer

# The names imported "as" themselves (and _parse_fingerprint) are re-exported:
# the tests import them from here, as when the CLI was one module.
from simindex import signals
from simindex.cli import (
    dedup_command,
    index_commands,
    overlaps_command,
    restore_command,
    tools,
)
from simindex.cli.errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    interrupted,
    start_run,
    told_interrupted,
)
from simindex.cli.errors import EXIT_NOT_FOUND as EXIT_NOT_FOUND
from simindex.cli.errors import UserError as UserError
from simindex.cli.options import parse_fingerprint as _parse_fingerprint  # noqa: F401
from simindex.cli.output import SETTLE_S as SETTLE_S
from simindex.cli.output import _settled_columns as _settled_columns
from simindex.cli.output import escaped as escaped
from simindex.errors import InvalidArgumentError

app = typer.Typer(
    name="simindex",
    help="A persistent near-duplicate index for text (64-bit Simhash, SQLite).\n\n"
    "Exit codes: 0 success, 1 query found nothing or check found a problem, 2 error.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# The commands, in the order ``simindex -h`` lists them.
COMMANDS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("init", index_commands.init),
    ("add", index_commands.add),
    ("query", index_commands.query),
    ("overlaps", overlaps_command.overlaps),
    ("remove", index_commands.remove),
    ("stats", index_commands.stats),
    ("rebuild", index_commands.rebuild),
    ("check", index_commands.check),
    ("compact", index_commands.compact),
    ("restore", restore_command.restore),
    ("dedup", dedup_command.dedup),
    ("advise", tools.advise),
    ("fingerprint", tools.fingerprint_cmd),
    ("distance", tools.distance),
    ("explain", tools.explain_cmd),
)
for _name, _command in COMMANDS:
    app.command(_name)(_command)


def main(argv: list[str] | None = None) -> None:
    """Run the command (the ``simindex`` command, ``python -m simindex`` and
    ``python cli.py`` run it through simindex.__main__, which also catches a
    Ctrl-C while this package is still being imported).

    Usage mistakes (an unknown option, a missing argument) become one line
    ``Error: ...`` and exit code 2, like every other error; Ctrl-C, one line
    and exit code 130.
    """
    start_run()
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="simindex", standalone_mode=False)
    except KeyboardInterrupt as exc:
        interrupted(exc)
        sys.exit(signals.exit_code(exc))
    except Exception as exc:
        message = getattr(exc, "format_message", None)
        if not callable(message) or not isinstance(getattr(exc, "exit_code", None), int):
            raise  # not a usage error: a bug, shown in full
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare "simindex": the help
            typer.echo(message(), err=True)
        else:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} -h)" if ctx is not None else ""
            typer.echo(f"Error: {message()}{hint}", err=True)
        sys.exit(EXIT_ERROR)
    if code == EXIT_INTERRUPTED and not told_interrupted():
        # typer turns a Ctrl-C outside the command's own code (parsing the
        # arguments, entering or leaving its context) into exit 130, silently,
        # and a SIGTERM or SIGHUP too (a KeyboardInterrupt as well).
        stopped = signals.last_stopped()
        interrupted(stopped)
        code = EXIT_INTERRUPTED if stopped is None else signals.exit_code(stopped)
    sys.exit(code if isinstance(code, int) else EXIT_OK)


__all__ = ["app", "main", "InvalidArgumentError"]
