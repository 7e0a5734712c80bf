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

A command's module is imported, and its typer command built, only when that
command runs (or shows its help): ``simindex -h`` and ``simindex --version``
load typer and nothing of the library's (no SQLAlchemy, no numpy), and
``simindex query`` loads what a query needs, not what ``add`` or ``dedup``
do. The command list that ``simindex -h`` prints is COMMANDS' summaries,
which a test holds equal to each command's docstring.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

# The names imported "as" themselves (and _parse_fingerprint) are re-exported:
# the tests import them from here, as when the CLI was one module.
from simindex import signals
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
from simindex.cli.output import listen_for_compiling
from simindex.errors import InvalidArgumentError

# The commands, in the order ``simindex -h`` lists them: name, module (in
# simindex.cli), function, and the summary the list shows (the first line of
# the function's docstring: a test checks that they agree).
COMMANDS: tuple[tuple[str, str, str, str], ...] = (
    ("init", "index_commands", "init", "Create an index, or check an existing one's settings."),
    ("add", "index_commands", "add", "Add documents, creating the index if needed."),
    ("query", "index_commands", "query", "Print the stored near-duplicates of a text."),
    (
        "overlaps",
        "overlaps_command",
        "overlaps",
        "Print the documents that share passages with a text.",
    ),
    ("remove", "index_commands", "remove", "Remove documents by key (in one transaction)."),
    ("stats", "index_commands", "stats", "Describe an index: size, k, layout, buckets."),
    (
        "rebuild",
        "index_commands",
        "rebuild",
        "Lay an index out anew, or rebuild it from its texts.",
    ),
    (
        "check",
        "index_commands",
        "check",
        "Check an index for damage; --repair fixes what it safely can.",
    ),
    (
        "compact",
        "index_commands",
        "compact",
        "Reclaim free space and fold the write-ahead log into the file.",
    ),
    (
        "restore",
        "restore_command",
        "restore",
        "Replace an index file with a backup, safely while in use.",
    ),
    (
        "dedup",
        "dedup_command",
        "dedup",
        "Find near-duplicates in an index, or drop them from a corpus.",
    ),
    ("advise", "tools", "advise", "Compare block layouts for an index of n fingerprints."),
    ("fingerprint", "tools", "fingerprint_cmd", "Print a text's 64-bit fingerprint."),
    (
        "distance",
        "tools",
        "distance",
        "Print the Hamming distance between two fingerprints or texts.",
    ),
    ("explain", "tools", "explain_cmd", "Explain why two texts are, or are not, near-duplicates."),
)
_BY_NAME = {name: (module, function) for name, module, function, _ in COMMANDS}


class _Plain:
    """How a value given for an option becomes the type the command declares,
    for the types simindex's commands have (str, int, float, bool, list[str]):
    recent typer builds a pydantic TypeAdapter for every parameter instead,
    and importing pydantic costs each command about 50 ms."""

    def __init__(self, kind: type) -> None:
        self.kind = kind

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        if isinstance(value, (list, tuple)):
            return [self._one(v, param, ctx) for v in value]
        return self._one(value, param, ctx)

    def _one(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, self.kind) and not (self.kind is int and isinstance(value, bool)):
            return value
        if self.kind is bool:  # a flag is given no value to convert
            raise typer.BadParameter(f"{value!r} is not a flag's value", ctx=ctx, param=param)
        try:
            return self.kind(value)
        except (TypeError, ValueError):
            what = {int: "a whole number", float: "a number"}.get(self.kind, self.kind.__name__)
            raise typer.BadParameter(f"{value!r} is not {what}", ctx=ctx, param=param) from None


_PLAIN = {kind: _Plain(kind) for kind in (str, int, float, bool)}


def _plainly_coerced(params: list[Any]) -> None:
    """Recent typer's coercion replaced by _Plain where it is enough (older
    typer coerces through click, without pydantic, and is left alone)."""
    for param in params:
        kind = getattr(getattr(param, "type_descriptor", None), "annotation", None)
        if kind in _PLAIN and getattr(param, "_runtime_param", 0) is None:
            param._runtime_param = _PLAIN[kind]


class _Command(TyperCommand):
    """A command's help written one way: arguments by their upper-case names
    (INDEX, [TEXT], INPUTS...), no types shown (an option's metavar says what
    it takes), and a default only where the option's own help says it."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _plainly_coerced(params)  # the help option's too
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                arguments.append((argument_name(param), getattr(param, "help", None) or ""))
            elif (record := param.get_help_record(ctx)) is not None:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def argument_name(param: Any) -> str:
    """An argument as help and usage name it: its metavar, or its name in
    capitals; with "..." when it takes several."""
    name = param.metavar or param.name.upper()
    return name if param.nargs == 1 else f"{name}..."


_once_loaded: list[Callable[[], None]] = []  # see once_loaded


def once_loaded(then: Callable[[], None]) -> None:
    """Have ``then`` called once, when the first command built has its
    module loaded (simindex.__main__ resumes the garbage collector it
    paused while the modules loaded)."""
    _once_loaded.append(then)


def command(name: str) -> Any:
    """The click command for one of COMMANDS, its module imported now."""
    module, function = _BY_NAME[name]
    listen_for_compiling()  # numba compiling while it runs is said (on its bar)
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    one.command(name, cls=_Command)(getattr(import_module(f"simindex.cli.{module}"), function))
    built: Any = typer.main.get_command(one)
    for param in built.params:
        param.show_default = False  # where a default matters, the help says it
    while _once_loaded:
        _once_loaded.pop(0)()
    return built


def commands() -> dict[str, Any]:
    """Every command's click command by name, in COMMANDS' order (for the
    tests and docs checks: running one builds only that one)."""
    return {name: command(name) for name, *_ in COMMANDS}


class _Commands(TyperGroup):
    """The simindex group: COMMANDS, each built when it is first asked for."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _plainly_coerced(params)  # the help option's too
        return params

    def list_commands(self, ctx: Any) -> list[str]:
        return [name for name, *_ in COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in _BY_NAME:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = command(cmd_name)
        return self.commands[cmd_name]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):  # the summaries whole, wrapped, never cut
            formatter.write_dl([(name, summary) for name, _, _, summary in COMMANDS])


def version_line() -> str:
    """``simindex X.Y.Z``: the installed distribution's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"simindex {version('simindex')}"
    except PackageNotFoundError:
        return "simindex (version unknown: not installed)"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(EXIT_OK)


app = typer.Typer(
    name="simindex",
    cls=_Commands,
    help="A persistent near-duplicate index for text (64-bit Simhash, SQLite).\n\n"
    "Exit codes: 0 success, 1 query found nothing or check found a problem, 2 error, "
    "130 interrupted (143 SIGTERM, 129 SIGHUP).",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _simindex(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print simindex's version and exit.",
        is_eager=True,
        callback=_show_version,
    ),
) -> None:
    # The app's own options (--version); its help is the Typer's above.
    pass


def main(argv: list[str] | None = None) -> None:
    """Run the command (the ``simindex`` command, ``python -m simindex`` and
    ``python cli.py`` run it through simindex.__main__, which also catches a
    Ctrl-C while this package is still being imported).

    Usage mistakes (an unknown option, a missing argument) become one line
    ``Error: ...`` and exit code 2, like every other error; Ctrl-C, one line
    and exit code 130.
    """
    start_run()
    group = typer.main.get_command(app)
    try:
        code = group.main(args=argv, prog_name="simindex", standalone_mode=False)
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
            path = ctx.command_path if ctx is not None else _command_path(group, argv)
            hint = f" (see: {path} -h)" if path else ""
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


def _command_path(group: Any, argv: list[str] | None) -> str | None:
    """The command a usage error was raised for where click gave no context
    (an option missing its value is refused while parsing): "simindex" and
    the first argument naming one of its commands, if any."""
    words = sys.argv[1:] if argv is None else argv
    name = next((w for w in words if w in getattr(group, "commands", {})), None)
    return f"simindex {name}" if name else None


__all__ = ["app", "main", "InvalidArgumentError"]
