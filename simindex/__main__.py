"""The ``simindex`` command's entry point (and ``python -m simindex``).

It imports nothing but the standard library before it can catch Ctrl-C:
importing simindex.cli takes a few tenths of a second (typer, SQLAlchemy,
numpy), and a Ctrl-C meanwhile would otherwise print a traceback from deep
inside an import. Every interrupt ends in one line on stderr and exit code
130. (Before this module runs, in the ~15 ms Python and the installed
script take to start, an interrupt is Python's own.)
"""

from __future__ import annotations

import contextlib
import signal
import sys

EXIT_INTERRUPTED = 130


def _raise_again(unraisable: sys.UnraisableHookArgs) -> None:
    """A Ctrl-C that lands in code Python cannot raise from (a weakref
    callback or __del__; importlib has some) is printed as "Exception
    ignored ..." and lost, and the command goes on. Deliver it again a few
    milliseconds later, from a thread, once this hook (which cannot raise
    either) has returned: the KeyboardInterrupt is raised where the command
    can stop."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        import _thread
        import threading

        again = threading.Timer(0.005, _thread.interrupt_main)
        again.daemon = True  # a command that has finished meanwhile just exits
        again.start()
    else:
        sys.__unraisablehook__(unraisable)


def main() -> None:
    sys.unraisablehook = _raise_again
    try:
        from simindex.cli import main as run

        run()
    except KeyboardInterrupt:
        # A second Ctrl-C while this one is reported stops the process at once.
        with contextlib.suppress(ValueError):  # not the main thread: leave it alone
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        sys.stderr.write("Interrupted.\n")
        sys.stderr.flush()
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
