"""Partial duplicates: a text inside a stored one, or a stored one inside it.

``SimIndex.overlaps(text)`` compares the text's passages (simindex.passages:
the winnowed hashes of its shingles) with the passages an index keeps
(storage/passages.py), in one read: the documents that share a hash, how
many each shares, and how many each has. The shares are the shared hashes
over the query's (``query_share``) and over the document's
(``stored_share``); a document is returned when either reaches the
threshold. What a winnowed share measures, against the exact share of
shingles: docs/decisions/overlaps.md.

The writes' side is here too: ``made`` makes the passages of a chunk of
texts, which SimIndex.add_fingerprints (add, add_many) and rebuild store in
the transaction that writes their rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simindex import storage
from simindex.errors import (
    EmptyTextError,
    InvalidArgumentError,
    PassagesNotKeptError,
    StalePassagesError,
)
from simindex.fingerprint import FingerprintConfig
from simindex.passages import passages
from simindex.results import Overlap
from simindex.storage.backend import expect
from simindex.view import View, Views

# The share of either text the other must hold, by default: the lowest at
# which no text came back holding under half of the asked one's shingles
# while the asked one held under half of its (bench/experiments/partial_edits.py:
# at 0.5 a few same-genre texts did, just under half); a quotation with 5% of
# its characters edited keeps a share of about 0.55-0.7 (Chinese: eight
# characters a shingle), of its words about 0.7-0.8 (English), so at 0.8 (the
# default before) 1-2% of Chinese and a quarter of English ones were found, at
# 0.53 93-96% of Chinese and all English ones (docs/decisions/overlaps.md).
DEFAULT_THRESHOLD = 0.53


def not_kept(where: object) -> PassagesNotKeptError:
    return PassagesNotKeptError(
        where,
        f"{where} keeps no passages, which overlaps needs: rebuild it from its texts with "
        f"them (simindex rebuild INDEX SOURCES --overlaps; SimIndex.rebuild(source, "
        f"overlaps=True)), or create indexes with --overlaps (overlaps=True)",
    )


def stale(where: object, stamp: str | None, changes: int) -> StalePassagesError:
    since = int(stamp) if stamp is not None and stamp.isdigit() else None
    return StalePassagesError(
        where,
        f"{where}: its rows were written by another program (or an older simindex) since "
        f"its passages were made ({changes - (since or 0)} changes counted since), so "
        f"overlaps cannot answer for them: rebuild it from its texts "
        f"(simindex rebuild INDEX SOURCES; SimIndex.rebuild(source))",
        stamp=since,
        changes=changes,
    )


def find(views: Views, text: str, threshold: float, limit: int | None) -> list[Overlap]:
    """SimIndex.overlaps (its arguments checked)."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")

    def read(view: View) -> tuple[int, dict[str, tuple[int, int]]]:
        if not view.settings.passages:
            raise not_kept(views.where)
        hashes = passages(text, view.settings.config)
        if not len(hashes):
            raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
        with views.backend.reading() as conn:
            expect(views.backend.generation(conn), view.generation)
            current, stamp, changes = views.passages.current(conn)
            if not current:
                raise stale(views.where, stamp, changes)
            found = views.passages.shared(conn, hashes)
            # (PostgreSQL reads READ COMMITTED: a write between shows here)
            if views.passages.current(conn)[1:] != (stamp, changes):
                raise storage.Changed()
        return len(hashes), found

    count, found = views.read(read)
    overlaps = []
    for key, (total, shared) in found.items():
        query_share, stored_share = shared / count, shared / total
        if max(query_share, stored_share) >= threshold:
            overlaps.append(Overlap(key, query_share, stored_share))
    overlaps.sort(key=lambda o: (-max(o.query_share, o.stored_share), o.key))
    return overlaps[:limit] if limit is not None else overlaps


def made(
    texts: Sequence[str | None], config: FingerprintConfig, first: int = 1
) -> list[np.ndarray]:
    """The passages of a chunk of texts to store with their rows, in a write
    of an index that keeps them (`first`: the chunk's first item's number,
    for the error that names an item with no text)."""
    found: list[np.ndarray] = []
    for number, text in enumerate(texts, first):
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"item {number} has no text: the index keeps passages (overlaps), "
                f"which are made from the texts: add texts (add, add_many), not "
                f"fingerprints alone"
            )
        found.append(passages(text, config))
    return found
