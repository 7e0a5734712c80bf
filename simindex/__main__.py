"""The ``simindex`` command's entry point (and ``python -m simindex``).

It imports nothing but the standard library before it can catch Ctrl-C:
importing simindex.cli takes a few tenths of a second (typer, SQLAlchemy,
numpy), and a Ctrl-C meanwhile would otherwise print a traceback from deep
inside an import. Every interrupt ends in one line on stderr and exit code
130. (Before this module runs, in the ~15 ms Python and the installed
script take to start, an interrupt is Python's own.) SIGTERM and SIGHUP are
treated as Ctrl-C from here on (simindex.signals): one line, and exit code
143 or 129.

Python's cyclic garbage collector is paused while the command's modules
load (typer, then the command's own module with SQLAlchemy and numpy when
it needs them), and what they made is frozen before it resumes
(``gc.freeze``: those objects live as long as the process, and no
collection looks at them again, nor the one as the interpreter ends). A
collection while modules load finds next to nothing to free, yet each
walks every object loaded so far: the collections a ``simindex query``
made while loading, and the one at exit, were about 100 ms of its 0.5 s.
The command itself runs with the collector as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys

from simindex import signals

EXIT_INTERRUPTED = 130


def _raise_again(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in code Python cannot raise from (a weakref
    callback or __del__; importlib has some) is printed as "Exception
    ignored ..." and lost, and the command goes on. Deliver it again a few
    milliseconds later, from a thread, once this hook (which cannot raise
    either) has returned: the KeyboardInterrupt is raised where the command
    can stop."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        import threading

        signum = signals.signal_number(unraisable.exc_value)
        main_thread = threading.main_thread().ident
        again = threading.Timer(0.005, signals.deliver_again, (signum, main_thread))
        again.daemon = True  # a command that has finished meanwhile just exits
        again.start()
    else:
        sys.__unraisablehook__(unraisable)


_printed: list[KeyboardInterrupt] = []  # Ctrl-Cs C code printed and cleared (_keep_printed)


def _keep_printed(kind: type[BaseException], value: BaseException, tb: object) -> None:
    """sys.excepthook while the command runs. C code that meets an error it
    cannot pass on prints it (PyErr_Print, through this hook) and raises
    another: numpy's extension modules, when an import they make is
    interrupted, raise ImportError("numpy._core.multiarray failed to
    import") after printing the KeyboardInterrupt. A KeyboardInterrupt is
    kept here, unprinted, for main to report as the interrupt it was; any
    other exception is printed as Python prints it."""
    if isinstance(value, KeyboardInterrupt):
        _printed.append(value)
        return
    sys.__excepthook__(kind, value, tb)  # type: ignore[arg-type]


_ending: dict[str, object] = {"code": None}  # the exit code main is ending with
_INTERRUPTED = {signals.EXIT_BASE + signum for signum in signals.HELD}  # 130, 143, 129


def _keep_exit_code() -> None:
    """Run last as the interpreter ends (atexit runs it last: main registers
    it first). A KeyboardInterrupt that passes through C code running Python
    source (PyRun_String, which some extension modules' imports call) marks
    the interpreter as ended by Ctrl-C even when the command catches it, and
    once finalized Python kills the process with SIGINT, whatever exit code
    the command chose: a Ctrl-C while the command's modules loaded ended
    about 1 run in 10 that way ("Interrupted.", then -2, not 130). So a
    command that was interrupted, its clean-up done (the index closed, files
    removed, worker processes ended, other exit functions run), ends here
    with its own code, once its output is flushed."""
    code = _ending["code"]
    if isinstance(code, int) and code in _INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _collect_again() -> None:
    """Resume the garbage collector, paused while the command's modules
    loaded, with what they made frozen: kept, and never walked again."""
    gc.freeze()
    gc.enable()


def _interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt an exception was raised from, if any (its
    causes and contexts, followed a bounded way)."""
    seen: BaseException | None = exc
    for _ in range(16):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return None
        if isinstance(seen, KeyboardInterrupt):
            return seen
    return None


def _interrupted(exc: KeyboardInterrupt) -> None:
    # Another Ctrl-C (SIGTERM, SIGHUP) while this one is reported stops it at once.
    signals.stop_at_once()
    sys.stderr.write(f"{signals.interrupted_by(exc)}.\n")
    sys.stderr.flush()
    sys.exit(signals.exit_code(exc))


def main() -> None:
    try:
        try:
            # (Inside the try: a Ctrl-C may land while the handlers are set.)
            atexit.register(_keep_exit_code)
            sys.unraisablehook = _raise_again
            sys.excepthook = _keep_printed
            signals.stop_on_signals()
            gc.disable()  # while the command's modules load (see the docstring)
            from simindex import cli

            cli.once_loaded(_collect_again)
            from simindex.cli import main as run

            run()
        except KeyboardInterrupt as exc:
            _interrupted(exc)
        except Exception as exc:
            # A Ctrl-C inside some of Python's own machinery comes out wrapped:
            # importing a class whose __set_name__ it interrupts raises
            # RuntimeError("Error calling __set_name__ ...") from it; C code
            # may print it and raise another in its place (_keep_printed).
            interrupt = _interrupt_in(exc) or (_printed[0] if _printed else None)
            if interrupt is None:
                raise
            _interrupted(interrupt)
    except SystemExit as done:
        _ending["code"] = done.code
        raise


if __name__ == "__main__":
    main()
