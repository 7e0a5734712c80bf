"""python -m simindex.spark dedup INPUT --out OUT; spark-submit runs this file as it is:

MAIN=$(python -c 'import simindex.spark.__main__ as m; print(m.__file__)')
spark-submit --master yarn "$MAIN" dedup INPUT --out OUT
"""

from simindex.spark._command import main

if __name__ == "__main__":
    main()
