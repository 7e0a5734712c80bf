"""simindex on Apache Spark: fingerprints, near-duplicate pairs and clusters
of a corpus too large for one machine, the same answers as a SimIndex gives::

    from simindex import spark as sx

    fps = sx.fingerprints(df, key_col="id", text_col="text").cache()
    pairs = sx.near_duplicates(fps)      # == SimIndex.duplicates() on the same rows
    groups = sx.clusters(pairs, fps)     # == SimIndex.clusters(), in position order
    sx.to_index(fps, "corpus.db")        # the index an application then queries

It runs in local mode (``local[2]``) and unchanged on a cluster. It needs
pyspark 4 and pyarrow (``pip install 'simindex[spark]'``) and a Java 17
runtime; every executor needs simindex installed. Nothing here imports
pyspark until it is called, so ``python -m simindex.spark`` can say what is
missing. ``python -m simindex.spark dedup`` is the command
(docs/scaling.md). How pairs are found (on the driver while they fit
there, else by a shuffle that splits skewed buckets):
simindex/spark/_pairs.py; how clusters are decided in rounds:
simindex/spark/_clusters.py and docs/decisions/spark-clusters.md.
"""

from __future__ import annotations

from simindex.spark._clusters import clusters
from simindex.spark._fingerprints import fingerprints
from simindex.spark._index import to_index
from simindex.spark._pairs import BUCKET_LIMIT, near_duplicates

__all__ = ["BUCKET_LIMIT", "clusters", "fingerprints", "near_duplicates", "to_index"]
