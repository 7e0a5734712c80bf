"""Processes that tests/test_crash.py kills or starves of space.

Run with the checkout on PYTHONPATH (the tests do):

    python tests/crash_helper.py api-add INDEX CORPUS BATCH
        SimIndex(INDEX).add_many(<a generator over CORPUS>, batch_size=BATCH)
        ("none": one transaction). The test SIGKILLs it part-way.
    python tests/crash_helper.py page-limit PAGES ARGS...
        The simindex command (ARGS as after ``simindex``), with SQLite's
        ``PRAGMA max_page_count = PAGES`` set on every connection simindex
        takes from its pool: the database is "full" past PAGES pages.
    python tests/crash_helper.py enospc DIR CORPUS
        Run inside a small tmpfs mounted at DIR (a private mount namespace):
        fills the file system with a real file, makes adds fail for lack of
        space, frees the space, resumes. Prints what it saw as one JSON object.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_corpus(corpus: str) -> Iterator[tuple[str, str]]:
    with open(corpus, encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            yield doc["id"], doc["text"]


def api_add(index: str, corpus: str, batch: str) -> None:
    from simindex import SimIndex

    with SimIndex(index) as ix:
        ix.add_many(read_corpus(corpus), batch_size=None if batch == "none" else int(batch))


def page_limit(pages: str, argv: list[str]) -> None:
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA max_page_count = {int(pages)}")

    event.listen(Pool, "checkout", on_checkout)  # every pool, so every engine simindex makes
    from simindex.cli import main

    main(argv)


def integrity(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [r[0] for r in con.execute("PRAGMA integrity_check")]
    finally:
        con.close()


def enospc(folder: str, corpus: str) -> None:
    from simindex import SimIndex, SimIndexError

    here = Path(folder)
    path = here / "ix.db"
    docs = list(read_corpus(corpus))
    out: dict[str, Any] = {}
    with SimIndex(path) as ix:
        ix.add_many(docs[:1000])
    # Fill the file system with a real file, then give ~3 MB of it back (room
    # for a few batches of 1,000 short texts: rows, indexes and set keys).
    filler = here / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    size = 0
    try:
        while True:
            size += os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    os.ftruncate(fd, max(0, size - 3 * 1024 * 1024))
    os.close(fd)
    out["filler_bytes"] = size

    with SimIndex(path) as ix:
        for name, kwargs in (("batched", {"batch_size": 1000}), ("one_transaction", {})):
            before = dict(ix.items())
            try:
                ix.add_many(docs[1000:], **kwargs)
                out[name] = {"error": None}
            except SimIndexError as exc:
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            except Exception as exc:  # noqa: BLE001 - reported, the test fails on it
                out[name] = {"error": f"NOT A SimIndexError {type(exc).__name__}: {exc}"}
            stored = dict(ix.items())
            out[name]["count"] = len(stored)
            out[name]["prefix"] = set(stored) == {k for k, _ in docs[: len(stored)]}
            out[name]["unchanged"] = stored == before
            report = ix.check()
            out[name]["check"] = [bool(report.ok), list(report.problems)]
    out["integrity_full"] = integrity(path)
    filler.unlink()
    with SimIndex(path) as ix:
        ix.add_many(docs, batch_size=1000, skip_existing=True)
        out["after_freeing"] = {"count": len(ix)}
    out["integrity_after"] = integrity(path)
    print(json.dumps(out))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "api-add":
        api_add(*args)
    elif command == "page-limit":
        page_limit(args[0], args[1:])
    elif command == "enospc":
        enospc(*args)
    else:
        sys.exit(f"unknown command {command!r}")
