"""The ``simindex`` command's entry point (and ``python -m simindex``).

It imports nothing but the standard library before it can catch Ctrl-C:
importing simindex.cli takes a few tenths of a second (typer, SQLAlchemy,
numpy), and a Ctrl-C meanwhile would otherwise print a traceback from deep
inside an import. Every interrupt ends in one line on stderr and exit code
130. (Before this module runs, while Python itself starts, an interrupt is
Python's: the process is stopped by the signal.)
"""

from __future__ import annotations

import contextlib
import signal
import sys

EXIT_INTERRUPTED = 130


def main() -> None:
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
