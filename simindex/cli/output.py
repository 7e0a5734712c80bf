"""What the commands print: keys escaped for text output, JSON lines, the progress bar.

Data goes to stdout, progress (and, from simindex.cli.errors, errors) to
stderr. Nothing here knows about an index or a file a command writes.
"""

from __future__ import annotations

import functools
import json
import threading
from typing import Any

import typer

# --- keys in text output ----------------------------------------------------------

# Control characters: C0, DEL and C1. A terminal acts on some of them (ESC
# starts a colour or cursor sequence), so none is printed as it is.
_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
_MESSAGE_ESCAPES = {c: f"\\x{c:02x}" for c in _CONTROLS} | {
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    0: "\\0",
}
_FIELD_ESCAPES = _MESSAGE_ESCAPES | {ord("\\"): "\\\\"}


def escaped(text: str, *, backslash: bool = True) -> str:
    """A key (or any text) as one field of a tab-separated line, byte for byte.

    Backslash, tab, newline, carriage return and NUL become \\\\, \\t, \\n, \\r
    and \\0 (as in PostgreSQL's text COPY format); every other control
    character (C0, DEL, C1: what a terminal may act on, ESC included) becomes
    \\xNN, the character U+00NN. Nothing is dropped, so the field reads back
    exactly. Every command that prints keys in text form prints them through
    this (--json prints them as JSON strings). ``backslash=False``, for
    messages: control characters only, so a message stays one line.
    """
    if text.isprintable() and (not backslash or "\\" not in text):
        return text
    return text.translate(_FIELD_ESCAPES if backslash else _MESSAGE_ESCAPES)


# --- counts in text output --------------------------------------------------------


def counted(count: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """A count and its noun, plural unless the count is one: "1 fingerprint",
    "0 fingerprints", "3 indexes" (``plural``, where an s will not do).
    ``grouped``: the count with thousands separated (1,000). For people:
    --json output gives counts as numbers."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun if count == 1 else plural or noun + 's'}"


# --- JSON -----------------------------------------------------------------------


def emit_json(value: Any) -> None:
    """Print a value to stdout as one JSON line."""
    typer.echo(json_line(value), nl=False)


def json_line(value: Any) -> str:
    """One JSON line; text that is not valid Unicode (a lone surrogate read
    from a JSON escape) is written escaped, so the output stays valid UTF-8."""
    line = json.dumps(value, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(value)
    return line + "\n"


# --- the progress bar -------------------------------------------------------------

SETTLE_S = 1.0  # the progress bar shows a rate and time left once its readings span this long


@functools.cache
def _settled_columns() -> tuple[type[Any], type[Any]]:
    """The rate and time-left columns of the progress bar, which show nothing
    until the readings rich measures the rate from span SETTLE_S. rich's rate
    is the progress between its first and last readings over the time
    between them: input arrives in chunks, so the first two readings of an
    add came a fraction of a millisecond apart, a second or more after the
    bar started (the first frame once showed 4.7 GB/s and a second left,
    then 17 s). Made on first use, so rich loads only when a bar is drawn."""
    from rich.progress import Task, TimeRemainingColumn, TransferSpeedColumn
    from rich.text import Text

    def settled(task: Task) -> bool:
        readings = getattr(task, "_progress", None)  # rich's own (timestamp, advance) readings
        if readings is None:  # (a rich that keeps them otherwise: the time since the start)
            return task.elapsed is not None and task.elapsed >= SETTLE_S
        with task._lock:
            return len(readings) > 1 and readings[-1].timestamp - readings[0].timestamp >= SETTLE_S

    class Rate(TransferSpeedColumn):
        def render(self, task: Task) -> Text:
            return super().render(task) if settled(task) else Text("")

    class TimeLeft(TimeRemainingColumn):
        def render(self, task: Task) -> Text:
            if settled(task):
                return super().render(task)
            return Text("-:--:--", style="progress.remaining")

    return Rate, TimeLeft


def progress(total: int | None, quiet: bool, *, unit: str = "docs", console: Any = None) -> Any:
    """A rich progress bar on stderr for `total` bytes of input (None: not
    known), counting `unit` (docs, queries), drawn only on a terminal and
    not with --quiet. While numba compiles (simindex.compiling) its
    description says so. ``console``: where to draw it (the tests' own)."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, TextColumn

    rate, time_left = _settled_columns()
    console = Console(stderr=True) if console is None else console
    return _bar_class()(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        rate(),
        TextColumn(f"{{task.fields[docs]:,}} {unit}"),
        time_left(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )


@functools.cache
def _bar_class() -> type[Any]:
    """rich's Progress, telling _WAITS while it is in use; made on first use."""
    from rich.progress import Progress, TaskID

    class Bar(Progress):
        _told: dict[TaskID, str]  # each task's own description, while a note replaces it

        def __enter__(self) -> Bar:
            self._told = {}
            super().__enter__()
            _WAITS.shown(self, True)
            return self

        def __exit__(self, *exc: object) -> None:
            _WAITS.shown(self, False)
            super().__exit__(*exc)  # type: ignore[arg-type]

        def update(self, task_id: TaskID, **changes: Any) -> None:
            """A task's progress, passed on only where the bar is drawn (a
            call a document: rich's own costs a few microseconds)."""
            if not self.disable:
                super().update(task_id, **changes)

        def say(self, note: str | None) -> None:
            """Show `note` in place of each task's description (None: theirs again)."""
            if note is None:
                for task_id, description in self._told.items():
                    self.update(task_id, description=description)
                self._told.clear()
                return
            for task in self.tasks:
                self._told.setdefault(task.id, task.description)
                self.update(task.id, description=note)

    return Bar


# --- what a command waits for -----------------------------------------------------


class _Waits:
    """What numba compiles now (simindex.compiling tells it, from whichever
    thread compiles or relays a worker's compile) and the bars in use: the
    bars drawn show it; where none is, a Note says it once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bars: list[Any] = []
        self.now: list[Any] = []  # the compiles under way (two workers: two)
        self.noted = False

    def shown(self, bar: Any, shown: bool) -> None:
        with self.lock:
            if shown:
                self.bars.append(bar)
                if self.now:
                    bar.say(self.now[-1].note())
            elif bar in self.bars:
                self.bars.remove(bar)

    def told(self, event: Any, begun: bool) -> None:
        with self.lock:
            if begun:
                self.now.append(event)
            elif event in self.now:
                self.now.remove(event)
            note = self.now[-1].note() if self.now else None
            drawn = [bar for bar in self.bars if not bar.disable]
            for bar in drawn:
                bar.say(note)
            if note is not None and begun and not drawn and not self.noted:
                self.noted = True
                typer.echo(f"Note: {note}", err=True)


_WAITS = _Waits()


def listen_for_compiling() -> None:
    """Have what numba compiles from now on shown (on a bar, or in a Note):
    once a command, before it runs."""
    from simindex import compiling

    with _WAITS.lock:
        _WAITS.now.clear()
        _WAITS.noted = False
    compiling.listen(_WAITS.told)
    compiling.expect(0)  # (what an earlier command in this process said of its input)
