"""Signals: the command stops alike on Ctrl-C, SIGTERM and SIGHUP; processes start whole.

The ``simindex`` command raises ``Stopped`` (a KeyboardInterrupt) on SIGTERM
and SIGHUP where Ctrl-C raises KeyboardInterrupt, so whatever it undoes on
Ctrl-C (a new index removed, a transaction rolled back, outputs discarded,
worker processes stopped) it undoes when ``timeout``, ``kill``, systemd or a
closed terminal stops it; it exits 128 + the signal's number (130, 143, 129).
A signal that is ignored when the command starts (``nohup``) stays ignored.

``starting_processes`` holds these signals while worker processes are
started (see simindex.ingest.workers). Standard library only: the command's
entry point (simindex/__main__.py) imports it before anything heavy.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

EXIT_BASE = 128  # a shell reports a command a signal stopped as 128 + its number


def _signals(*names: str) -> tuple[int, ...]:
    return tuple(getattr(signal, name) for name in names if hasattr(signal, name))


STOPPING = _signals("SIGTERM", "SIGHUP")  # what the command treats as Ctrl-C
HELD = _signals("SIGINT", "SIGTERM", "SIGHUP")  # held by starting_processes


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the command is, as Ctrl-C raises
    KeyboardInterrupt (``except KeyboardInterrupt`` catches both)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def signal_number(exc: KeyboardInterrupt) -> int:
    """The signal an interrupt came from: SIGINT for Ctrl-C."""
    return exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)


def exit_code(exc: KeyboardInterrupt) -> int:
    """128 + the signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
    return EXIT_BASE + signal_number(exc)


def interrupted_by(exc: KeyboardInterrupt) -> str:
    """ "Interrupted" for Ctrl-C, "Interrupted by SIGTERM" for the others."""
    if isinstance(exc, Stopped):
        return f"Interrupted by {signal.Signals(exc.signum).name}"
    return "Interrupted"


_stopped: list[int] = []  # the signals that raised Stopped in this process, in order


def _stop(signum: int, frame: FrameType | None) -> None:
    _stopped.append(signum)
    raise Stopped(signum)


def last_stopped() -> Stopped | None:
    """The last Stopped raised since ``forget_stopped`` (code that turns a
    KeyboardInterrupt into an exit code, as typer does outside a command's
    own code, loses which signal it was)."""
    return Stopped(_stopped[-1]) if _stopped else None


def forget_stopped() -> None:
    _stopped.clear()


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP raise Stopped from now on (main thread only), unless
    they are ignored (``nohup`` ignores SIGHUP) or handled by someone else."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOPPING:
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _stop)


# Held while a signal is sent again (deliver_again) and while stop_at_once
# hands the signals back to the system, so one is never sent again to a
# process that now dies of it.
_handing_over = threading.Lock()


def stop_at_once() -> None:
    """Once the command is stopping: another Ctrl-C, SIGTERM or SIGHUP ends
    the process at once (main thread only; ignored signals stay ignored)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with _handing_over:
        for signum in HELD:
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                signal.signal(signum, signal.SIG_DFL)


def deliver_again(signum: int, thread: int | None) -> None:
    """Send a signal Python lost (see simindex.__main__._raise_again) again,
    to the main thread ``thread``, as a signal: one that waits in a system
    call (reading a pipe nobody writes yet) is woken by it, where
    _thread.interrupt_main only marks the interrupt for the next line of
    Python the thread runs, which a blocked read never reaches. Only while
    the command still handles that signal in Python: not once it stops at
    once (a signal the system then handles would kill it) or ignores it."""
    with _handing_over:
        if not callable(signal.getsignal(signum)):
            return
        if hasattr(signal, "pthread_kill") and thread is not None:
            # Sent with the lock held: the kernel delivers it before the main
            # thread runs another instruction, so before stop_at_once can
            # hand the signal to the system.
            signal.pthread_kill(thread, signum)
        else:  # (Windows)
            import _thread

            _thread.interrupt_main(signal.Signals(signum))


@contextlib.contextmanager
def starting_processes() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP while processes are started; deliver them after.

    A KeyboardInterrupt raised in the middle of starting a process leaves a
    process its parent does not know of: nothing stops it or waits for it,
    and after the parent exits it fails to read what the parent was sending
    it (multiprocessing's forkserver then printed a FileNotFoundError
    traceback). Here, in the main thread (where Python runs signal handlers),
    a signal that arrives is noted and delivered, to the handler that was in
    place, when the block ends, with every process started and known.

    The processes started in the block also begin with SIGINT blocked (a
    signal mask is kept through fork and exec), and keep it: Ctrl-C, which a
    terminal sends to every process of the foreground group, never raises a
    KeyboardInterrupt in them, not even while they import before they could
    ignore it. Their parent stops them. SIGTERM still ends them, silently.
    """
    arrived: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    saved: dict[int, Any] = {}  # the handlers replaced
    if threading.current_thread() is threading.main_thread():
        for signum in HELD:
            handler = signal.getsignal(signum)
            if handler is not None and handler != signal.SIG_IGN:
                saved[signum] = signal.signal(signum, note)
    mask = None
    if hasattr(signal, "pthread_sigmask"):
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for signum in dict.fromkeys(arrived):
            signal.raise_signal(signum)
