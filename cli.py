"""Run the simindex command from a checkout: ``python cli.py ...`` is ``simindex ...``.

It goes through simindex.__main__, as the installed command does, so that a
Ctrl-C while simindex.cli is still being imported ends in one line too.
"""

from simindex.__main__ import main

if __name__ == "__main__":
    main()
