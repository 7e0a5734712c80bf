"""Run the simindex command from a checkout: ``python cli.py ...`` is ``simindex ...``."""

from simindex.cli import main

if __name__ == "__main__":
    main()
