"""How a command ends: exit codes, a mistake as one line ``Error: ...``, Ctrl-C as one line.

Exit codes: 0 success; 1 ``query`` found nothing (like grep) or ``check``
found a problem; 2 an error; 130 interrupted (143 by SIGTERM, 129 by
SIGHUP, which simindex.signals turns into a KeyboardInterrupt as Ctrl-C
is). Every command is wrapped in ``reported``, which turns the errors a
user can cause (``UserError``, the library's ``SimIndexError``, undecodable
input, a file that cannot be read or written) into that one line; anything
else is a bug and shown in full.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer

from simindex import signals, waits
from simindex.cli.output import escaped
from simindex.errors import SimIndexError

EXIT_OK, EXIT_NOT_FOUND, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A mistake in what the command was given, reported as one line."""


def fail(message: str) -> NoReturn:
    """End the command with one line ``Error: ...`` on stderr and exit code 2."""
    _settle_stdout()
    typer.echo(f"Error: {escaped(message, backslash=False)}", err=True)
    raise typer.Exit(EXIT_ERROR)


def _settle_stdout() -> None:
    """Flush what was printed before an error; if stdout cannot take it (a full
    disk, a closed pipe), drop it, so that exiting does not fail a second time."""
    try:
        sys.stdout.flush()
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def reported(func: F) -> F:
    """Turn expected failures into one line ``Error: ...`` and exit code 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        waits.listen(say_waiting)
        try:
            return func(*args, **kwargs)
        except (SimIndexError, UserError) as exc:
            fail(_as_option(str(exc)))
        except UnicodeDecodeError as exc:
            fail(f"input is not valid UTF-8 (byte {exc.start}): {exc.reason}")
        except UnicodeEncodeError:
            fail("an argument is not valid UTF-8 text")
        except BrokenPipeError:  # the reader went away (| head): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_OK) from None
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            fail(f"cannot read or write{where}: {exc.strerror or exc}")
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
            interrupted(exc, "nothing of the unfinished transaction was kept")
            raise typer.Exit(signals.exit_code(exc)) from None
        finally:
            waits.unlisten(say_waiting)

    return wrapper  # type: ignore[return-value]


# The library's arguments the commands take as options of the same name: a
# message about one names the option (the library says "ngram must be...").
_OPTIONS = ("blocks", "ngram", "cjk", "weighting", "format")


def _as_option(message: str) -> str:
    first = message.split(" ", 1)[0]
    return f"--{message}" if first in _OPTIONS and message.startswith(f"{first} must") else message


def say_waiting(where: str, timeout: float) -> None:
    """What a command says of a long wait for a write lock (simindex.waits:
    every write transaction, and a restore): one Note a wait, on stderr."""
    typer.echo(
        f"Note: waiting for another process's write lock on {where} (up to {timeout:g} s)...",
        err=True,
    )


_told = {"interrupted": False}  # whether this run has said it was interrupted


def interrupted(exc: KeyboardInterrupt | None = None, detail: str = "") -> None:
    """Say on stderr, in one line, that the command was interrupted, and by
    what if not by Ctrl-C (once a run, see main)."""
    said = "Interrupted" if exc is None else signals.interrupted_by(exc)
    typer.echo(f"{said}; {detail}." if detail else f"{said}.", err=True)
    _told["interrupted"] = True


def start_run() -> None:
    """Forget what an earlier run in this process said (main calls it first)."""
    _told["interrupted"] = False
    signals.forget_stopped()


def told_interrupted() -> bool:
    """Whether this run has said it was interrupted."""
    return _told["interrupted"]
