"""The commands on an index: init, add, query, remove, stats, rebuild, check, compact.

Each parses its options, opens the index (simindex.cli.options.open_index)
and calls SimIndex; add and rebuild read their documents with simindex.ingest
(files, folders, JSON Lines, CSV, stdin) and fingerprint them in worker
processes, behind a progress bar.

simindex.cli registers the commands on its app (COMMANDS, in the order of
``simindex -h``); each is wrapped in ``reported``.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from simindex import signals
from simindex.blocks import MAX_INDEX_K, probe_radius
from simindex.cli.errors import EXIT_NOT_FOUND, EXIT_OK, UserError, interrupted, reported
from simindex.cli.options import (
    KEYS_HELP,
    BlocksOpt,
    CjkOpt,
    FormatOpt,
    IndexArg,
    JsonOpt,
    KeyFieldOpt,
    KOpt,
    NewThresholdOpt,
    NgramOpt,
    OverlapsOpt,
    QuietOpt,
    StopOpt,
    StrictOpt,
    TextFieldOpt,
    ThresholdOpt,
    TimeoutOpt,
    WeightingOpt,
    WorkersOpt,
    check_fields,
    check_k,
    check_threshold_option,
    config_from,
    has_words,
    open_index,
    parse_fingerprint,
    read_text_file,
    workers_option,
)
from simindex.cli.output import counted, emit_json, escaped, progress
from simindex.errors import ConfigMismatchError, DamagedIndexError
from simindex.fingerprint import FingerprintConfig
from simindex.index import SimIndex
from simindex.results import CheckReport, FullScanWarning

if TYPE_CHECKING:
    from simindex import ingest
    from simindex.cli.files import NotText

# What reads documents and files (simindex.ingest, simindex.cli.files) loads
# with the commands that read them (add, rebuild, query --batch): a query of
# one text starts without it.

# --- what the commands share ----------------------------------------------------------


def utf8_size(text: str) -> int:
    """Bytes of a text in UTF-8 (lone surrogates from undecodable arguments count too)."""
    return len(text.encode("utf-8", "surrogatepass"))


def layout_text(ix: SimIndex) -> str:
    """The layout in words, with how a query at the index's k looks it up."""
    radius = probe_radius(ix.layout, ix.k) if ix.k > ix.layout.k else 0
    probed = f", probed within {counted(radius, 'bit')}" if radius else ""
    return ix.layout.describe() + probed


@dataclass
class _Fingerprinting:
    """How add and rebuild fingerprint their documents, by worker processes,
    advancing the progress bar (``bar``'s ``task``): with ``texts``, each
    text kept too (for an index that keeps passages). A document with no
    words is an error, or, with ``skip_empty``, its key goes to ``skipped``;
    a file found in a folder with none goes to ``not_text``, as a folder's
    files that are not text do (None: with --strict, it is an error too)."""

    config: FingerprintConfig
    workers: int | None
    bar: Any
    task: Any
    skip_empty: bool
    not_text: NotText | None
    skipped: list[str]
    texts: bool = False

    def __call__(
        self, docs: Iterable[ingest.Doc]
    ) -> Iterator[tuple[str, int, bytes] | tuple[str, int, bytes, str]]:
        """(key, fingerprint, signature[, text]) of each document."""
        from simindex import ingest

        stream = ingest.fingerprint_docs(docs, self.config, workers=self.workers)
        for n, (doc, fp, signature) in enumerate(stream, 1):
            self.bar.update(self.task, advance=doc.size, docs=n)
            if fp is not None and signature is not None:
                yield (doc.key, fp, signature, doc.text) if self.texts else (doc.key, fp, signature)
            elif doc.in_folder and self.not_text is not None:
                self.not_text.no_words(doc)
            elif self.skip_empty:
                self.skipped.append(doc.key)
            else:
                named = doc.where if doc.where == doc.key else f"{doc.where} ({doc.key})"
                raise UserError(
                    f"{named} has no words to fingerprint; the index was left as it was "
                    f"(--skip-empty skips such documents)"
                )


def _made(
    index: str,
    k: int | None,
    blocks: int | None,
    config: FingerprintConfig | None,
    threshold: float | None,
    overlaps: bool,
) -> SimIndex:
    """The index, made with these settings if it is not there (init and add;
    an existing one must have them: open_index checks). An existing index
    that does not keep passages, asked for them, says what to do."""
    check_k(k, MAX_INDEX_K)
    try:
        return open_index(
            index,
            create=True,
            k=k,
            blocks=blocks,
            config=config,
            threshold=threshold,
            overlaps=overlaps or None,
        )
    except ConfigMismatchError:
        if not overlaps:
            raise
        # Which setting differs: opened without asking for passages, another
        # one raises its own error here; else the passages are what differ.
        with open_index(index, k=k, blocks=blocks, config=config, threshold=threshold) as ix:
            shown = ix.location
    raise UserError(
        f"{shown} does not keep passages: --overlaps is for a new index (leave it out to add "
        f"to this one; rebuild it from its texts to keep them: simindex rebuild {shown} "
        f"SOURCES --overlaps)"
    )


# --- the commands -------------------------------------------------------------------


@reported
def init(
    index: IndexArg,
    k: KOpt = None,
    blocks: BlocksOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    threshold: NewThresholdOpt = None,
    overlaps: OverlapsOpt = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Create an index, or check an existing one's settings."""
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    with _made(index, k, blocks, config, threshold, overlaps) as ix:
        if as_json:
            emit_json(
                {
                    "index": ix.location,
                    "k": ix.k,
                    "threshold": ix.threshold,
                    "blocks": list(ix.layout.widths),
                    "tables": [list(t) for t in ix.layout.tables],
                    "fingerprint": json.loads(ix.config.to_json()),
                    "overlaps": ix.passages,
                    "count": len(ix),
                }
            )
        else:
            typer.echo(
                f"{ix.location}: k={ix.k}, threshold {ix.threshold}, {layout_text(ix)}, "
                f"{ix.config.describe()}, {'passages kept, ' * ix.passages}"
                f"{counted(len(ix), 'fingerprint')}"
            )


@reported
def add(
    index: IndexArg,
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files and folders to add ('-' for stdin). "
            + KEYS_HELP
            + " .jsonl/.ndjson files hold one JSON object per line, .csv files a record a "
            "row, .parquet files a document a row (keyed by --key-field). The index's own "
            "files are skipped in folders."
        ),
    ] = None,
    text: Annotated[
        str | None,
        typer.Option("--text", "-t", metavar="TEXT", help="Add this text (needs --key)."),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option("--key", metavar="KEY", help="Key for --text or for a document on stdin."),
    ] = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    skip_empty: Annotated[
        bool, typer.Option("--skip-empty", help="Skip documents with no words instead of failing.")
    ] = False,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            metavar="N",
            help="Commit every N documents: an import that stops keeps the batches "
            "before it (resume it with --skip-existing). Default: one transaction.",
        ),
    ] = None,
    skip_existing: Annotated[
        bool,
        typer.Option("--skip-existing", help="Leave keys that are already stored as they are."),
    ] = False,
    strict: StrictOpt = False,
    workers: WorkersOpt = None,
    k: KOpt = None,
    blocks: BlocksOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    threshold: NewThresholdOpt = None,
    overlaps: OverlapsOpt = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Add documents, creating the index if needed.

    Files, folders (every file in them), JSON Lines, CSV or stdin, read as a
    stream and fingerprinted in parallel. All or nothing: on any error the
    index is left as it was (with --batch-size, the batches committed before
    the error stay). A key that is already there gets the new text, unless
    --skip-existing.
    """
    from simindex import ingest
    from simindex.cli.files import (
        NotText,
        Skipped,
        check_sources,
        folders_without_files,
        input_size,
    )

    if batch_size is not None and batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, not {batch_size}")
    paths = list(inputs or [])
    if text is None and not paths:
        raise UserError("nothing to add: give files, '-' for stdin, or --text with --key")
    if text is not None and not key:
        raise UserError("--text needs a --key")
    if "-" in paths and fmt in ("auto", "text") and text is None and not key:
        raise UserError(
            "standard input is read as one text, which needs a key: give it with --key, "
            "or read records with --format lines, jsonl or csv"
        )
    if key and text is None and not ("-" in paths and fmt in ("auto", "text")):
        raise UserError(
            "--key names the document of --text or of standard input ('-'); files are keyed "
            "by their paths, records by --key-field"
        )
    check_fields(fmt, key_field, text_field)
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    workers = workers_option(workers)
    # Check the sources before the index is created or locked.
    own = check_sources(index, paths)
    own_skipped = Skipped("the index's own files")
    not_text = NotText()
    empty_folders = folders_without_files()
    docs: list[Iterable[ingest.Doc]] = []
    if text is not None:
        assert key is not None
        docs.append([ingest.Doc(key, text, "--text", utf8_size(text))])
    if paths:
        stdin_key = key if text is None else None
        docs.append(
            ingest.read_docs(
                paths,
                fmt=fmt,
                key_field=key_field,
                text_field=text_field,
                stdin_key=stdin_key,
                folder_keys="path",
                skip=own,
                on_skip=own_skipped,
                on_unreadable=None if strict else not_text,
                on_empty_folder=empty_folders,
            )
        )
    total = input_size(paths, own)
    skipped: list[str] = []
    new_file = _new_index_file(index)
    try:
        with _made(index, k, blocks, config, threshold, overlaps) as ix:
            with progress(total, quiet) as bar:
                task = bar.add_task("adding", total=total, docs=0)

                fingerprinting = _Fingerprinting(
                    config=ix.config,
                    workers=workers,
                    bar=bar,
                    task=task,
                    skip_empty=skip_empty,
                    not_text=None if strict else not_text,
                    skipped=skipped,
                    texts=ix.passages,
                )
                stream = fingerprinting(chain.from_iterable(docs))
                added = ix.add_fingerprints(
                    stream, batch_size=batch_size, skip_existing=skip_existing
                )
            count, location = len(ix), ix.location
    except BaseException as exc:
        if new_file is not None:
            _remove_if_empty(new_file)
        if isinstance(exc, KeyboardInterrupt) and batch_size is not None:
            interrupted(
                exc,
                "the batches committed before it are kept, the unfinished one is not "
                "(add again with --skip-existing to go on)",
            )
            raise typer.Exit(signals.exit_code(exc)) from None
        raise
    own_skipped.tell()
    not_text.tell()
    empty_folders.tell()
    if count == 0 and not skipped and text is None:
        typer.echo(f"Note: {location} is empty: no document was found to add", err=True)
    if as_json:
        emit_json(
            {
                "index": location,
                "added": added,
                "skipped": skipped,
                "count": count,
                "skipped_files": not_text.as_json(),
            }
        )
    else:
        typer.echo(
            f"added {counted(added, 'document')} to {location} ({count} in all)"
            + (f"; skipped {len(skipped)} with no words" if skipped else "")
        )


def _remove_if_empty(path: Path) -> None:
    """After a failed or interrupted add that made ``path``: no new, empty
    index left behind (one batch committed, or anyone else's rows, keep it)."""
    from simindex.errors import NotAnIndexError, SimIndexError
    from simindex.index import SimIndex

    try:
        with SimIndex(path, create=False, hold=False) as left:
            if len(left):
                return
    except NotAnIndexError:
        pass  # (made, but no index in it yet)
    except SimIndexError:
        return  # locked, or unreadable: leave it as it is
    for leftover in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm"))):
        leftover.unlink(missing_ok=True)


def _new_index_file(index: str) -> Path | None:
    """The file an index path would create, or None if it exists or is no file path."""
    if index == ":memory:" or "://" in index:
        return None
    path = Path(index)
    return None if path.exists() else path


def _query_input(
    index: str, text: str | None, file: str | None, fingerprint: str | None
) -> str | int:
    given = [x for x in (text, file, fingerprint) if x is not None]
    if len(given) != 1:
        raise UserError("give exactly one of: TEXT, --file FILE ('-' for stdin), --fingerprint FP")
    if fingerprint is not None:
        return parse_fingerprint(fingerprint)
    if file is not None or text == "-":  # ('-' as a text has no word: stdin, as --file -)
        return read_text_file("-" if file is None else file, index)
    assert text is not None
    if os.path.isfile(text):
        typer.echo(
            f"Warning: looking for the text {text!r}, not the file of that name "
            "(give --file to read it)",
            err=True,
        )
    return text


@reported
def query(
    index: IndexArg,
    text: Annotated[
        str | None, typer.Argument(help="The text to look for ('-': read from stdin).")
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file", "-f", metavar="FILE", help="Read the text from a file ('-' for stdin)."
        ),
    ] = None,
    fingerprint: Annotated[
        str | None,
        typer.Option(
            "--fingerprint", metavar="FP", help="Look for a fingerprint (decimal or 0x-hex)."
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            "-k",
            metavar="K",
            help="Largest fingerprint distance, 0-64 (default: the index's k); a text whose "
            "signature's keys meet a stored one's is found at any distance (--threshold 0: "
            "distance alone).",
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", metavar="N", help="At most this many matches.")
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            metavar="FILE",
            help="Answer many queries: a JSON Lines file ('-' for stdin) of "
            '{"id": ..., "text": ...} or {"id": ..., "fingerprint": N}; prints one JSON '
            'line per query: {"id": ..., "matches": [...]}.',
        ),
    ] = None,
    key_field: Annotated[
        str,
        typer.Option(
            "--key-field",
            metavar="FIELD",
            help="--batch: the field echoed back as id (default id).",
        ),
    ] = "id",
    text_field: Annotated[
        str,
        typer.Option(
            "--text-field", metavar="FIELD", help="--batch: the field of the text (default text)."
        ),
    ] = "text",
    threshold: ThresholdOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Print the stored near-duplicates of a text.

    One line each: its distance and key, nearest first.

    A near-duplicate is within k and, where it and the query have signatures
    (a query by text, a document added by text), at least --threshold similar
    (lower for two longer texts of CJK characters; --json gives each match's
    similarity).

    Exits 1 when there are none (with --batch: when no query found any), like grep.
    """
    check_k(k, 64)
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, not {limit}")
    if batch is not None:
        if text is not None or file is not None or fingerprint is not None:
            raise UserError(
                "--batch reads its queries from the file; give no TEXT, --file or --fingerprint"
            )
        found = _query_batch(index, batch, k, limit, key_field, text_field, threshold, quiet)
        raise typer.Exit(EXIT_OK if found else EXIT_NOT_FOUND)
    check_threshold_option(threshold)
    what = _query_input(index, text, file, fingerprint)
    if isinstance(what, int) and threshold is not None:
        typer.echo(
            "Note: a query by fingerprint has no signature: it is matched by distance "
            "alone, whatever --threshold says",
            err=True,
        )
    with open_index(index) as ix:
        fp = what if isinstance(what, int) else ix.fingerprint(what)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FullScanWarning)
            matches = ix.query(what, k=k, limit=limit, threshold=threshold)
        used_k = ix.k if k is None else k
        used_threshold = ix.threshold if threshold is None else threshold
    for w in caught:
        if issubclass(w.category, FullScanWarning):
            typer.echo(f"Warning: {w.message}", err=True)
    if as_json:
        emit_json(
            {
                "fingerprint": fp,
                "k": used_k,
                "threshold": used_threshold,
                "matches": [m._asdict() for m in matches],
            }
        )
    else:
        for m in matches:
            typer.echo(f"{m.distance}\t{escaped(m.key)}")
    if not matches:
        raise typer.Exit(EXIT_NOT_FOUND)


_BATCH_QUERIES = 50_000  # queries answered per pass of query --batch (bounds memory)
# With a progress bar drawn, a pass also ends after this many bytes of queries,
# so the bar moves (100 MB of queries took 29 s in one pass). Smaller passes
# cost a little: 1,940 queries of 15 KB against 16,517 documents took 8.7 s
# in one pass, 8.5 s in passes of 1,000 and 9.5 s in passes of 200 (a MB is
# about 66 of them); most of it is fingerprinting the queries.
_BAR_PASS_BYTES = 1 << 20


def _query_batch(
    index: str,
    source: str,
    k: int | None,
    limit: int | None,
    key_field: str,
    text_field: str,
    threshold: float | None,
    quiet: bool,
) -> bool:
    """Stream JSON Lines of queries through query_many, behind a progress
    bar; True if any matched."""
    from simindex import ingest
    from simindex.cli.files import check_sources, input_size

    ingest.check_paths([source])
    check_sources(index, [source])
    any_found = False
    total = input_size([source])
    with open_index(index) as ix, progress(total, quiet, unit="queries") as bar:
        task = bar.add_task("querying", total=total, docs=0)
        pass_bytes = _BAR_PASS_BYTES if not bar.disable else None
        read = answered = 0  # bytes of the lines read, queries answered

        def answer(ids: list[Any], queries: list[str | int]) -> None:
            nonlocal any_found, answered
            found = ix.query_many(queries, k=k, limit=limit, threshold=threshold)
            for qid, matches in zip(ids, found, strict=True):
                any_found = any_found or bool(matches)
                emit_json({"id": qid, "matches": [m._asdict() for m in matches]})
            answered += len(queries)
            bar.update(task, completed=read, docs=answered)

        ids: list[Any] = []
        queries: list[str | int] = []
        name = "standard input" if source == "-" else source
        passed = 0  # bytes read when the last pass was answered
        for number, line, size in ingest.read_lines(source):
            read += size
            if not line.strip():
                continue
            where = f"{name} line {number}"
            record = ingest.json_object(line, where)
            if "fingerprint" in record:
                value = record["fingerprint"]
                try:
                    query = parse_fingerprint(value) if isinstance(value, str) else value
                except UserError as exc:
                    raise UserError(f"{where}: {exc}") from None
                if type(query) is not int or not 0 <= query < 1 << 64:
                    raise UserError(f"{where}: fingerprint must be in [0, 2**64), not {value!r}")
            elif isinstance(text := record.get(text_field), str):
                if not has_words(text, ix.config):
                    raise UserError(f"{where} has no words to look for")
                query = text
            else:
                raise UserError(
                    f"{where} has no string field {text_field!r} for the text, nor a 'fingerprint'"
                )
            ids.append(record.get(key_field, number))
            queries.append(query)
            if len(queries) >= _BATCH_QUERIES or (
                pass_bytes is not None and read - passed >= pass_bytes
            ):
                answer(ids, queries)
                ids, queries, passed = [], [], read
        if queries:
            answer(ids, queries)
        bar.update(task, completed=read)  # (blank lines after the last query)
    return any_found


@reported
def remove(
    index: IndexArg,
    keys: Annotated[list[str], typer.Argument(help="Keys to remove.")],
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Remove documents by key (in one transaction)."""
    with open_index(index) as ix:
        removed = ix.remove_many(keys)
    if as_json:
        emit_json({"removed": removed, "missing": len(set(keys)) - removed})
    else:
        typer.echo(f"removed {removed} of {counted(len(set(keys)), 'key')}")


# What stats prints for a null (JSON's): an index that keeps no passages; any
# other (bytes_per_fingerprint of an empty index) "-".
_STATS_NONE = {"overlaps": "off"}


@reported
def stats(index: IndexArg, as_json: JsonOpt = False, timeout: TimeoutOpt = None) -> None:
    """Describe an index: size, k, layout, buckets.

    With its fingerprint configuration and verification threshold.

    The largest block bucket of each lookup index is listed, with a warning
    when one holds a large share of the fingerprints.
    """
    with open_index(index, readonly=True) as ix:
        info = ix.stats()
        info.pop("held_in_memory_bytes")  # this process has just opened it: nothing held
    if as_json:
        emit_json(info)
        return
    for name, value in info.items():
        if name == "warnings":
            continue
        if value is None:  # (JSON's null, in words)
            value = _STATS_NONE.get(name, "-")
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value
        typer.echo(f"{name}: {shown}")
    for warning in info["warnings"]:
        typer.echo(f"Warning: {warning}", err=True)


@reported
def rebuild(
    index: IndexArg,
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="The texts to rebuild from (files, folders, JSON Lines, CSV, '-'); "
            "without them, the stored fingerprints are laid out anew. " + KEYS_HELP
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option("--k", "-k", metavar="K", help="A new k (0-15; default: the index's)."),
    ] = None,
    blocks: Annotated[
        int | None,
        typer.Option(
            "--blocks",
            metavar="N",
            help="Blocks of the rebuilt index (default: what a new index for its k gets; "
            "see simindex advise).",
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="SIMILARITY",
            help="A new verification threshold (0-1; 0: distance alone).",
        ),
    ] = None,
    overlaps: Annotated[
        bool | None,
        typer.Option(
            "--overlaps/--no-overlaps",
            help="Keep passages (for simindex overlaps) from now on, made from SOURCES, or "
            "no longer. Default: as the index does.",
        ),
    ] = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    skip_empty: Annotated[
        bool, typer.Option("--skip-empty", help="Leave out documents with no words.")
    ] = False,
    strict: StrictOpt = False,
    workers: WorkersOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Lay an index out anew, or rebuild it from its texts.

    Without SOURCES, the stored fingerprints are laid out anew (--k, --blocks,
    --threshold).

    With SOURCES the index becomes exactly those documents, fingerprinted (and
    given verification signatures) with the fingerprint options given
    (default: the index's own): documents not in them are removed. Queries
    are answered from the old index meanwhile, which switches to the new
    content in one step; writers wait (up to their timeout). If the rebuild
    fails, the old index is left as it was; SOURCES holding no document are
    refused, and leave it so.
    """
    from simindex import ingest
    from simindex.cli.files import (
        NotText,
        Skipped,
        check_sources,
        folders_without_files,
        input_size,
    )

    check_k(k, MAX_INDEX_K)
    check_fields(fmt, key_field, text_field)
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    workers = workers_option(workers)
    check_threshold_option(threshold)
    paths = list(sources or [])
    if "-" in paths and fmt in ("auto", "text"):
        raise UserError("read the documents from stdin with --format lines, jsonl or csv")
    own = check_sources(index, paths)
    own_skipped = Skipped("the index's own files")
    not_text = NotText()
    empty_folders = folders_without_files()
    docs = (
        ingest.read_docs(
            paths,
            fmt=fmt,
            key_field=key_field,
            text_field=text_field,
            folder_keys="path",
            skip=own,
            on_skip=own_skipped,
            on_unreadable=None if strict else not_text,
            on_empty_folder=empty_folders,
        )
        if paths
        else None
    )
    with open_index(index) as ix:
        if docs is None:
            if config is not None and config != ix.config:
                raise UserError("a new fingerprint configuration needs the texts: give SOURCES")
            if overlaps and not ix.passages:
                raise UserError("passages are made from the texts: give SOURCES with --overlaps")
            rows = ix.rebuild(k=k, blocks=blocks, threshold=threshold, overlaps=overlaps)
        else:
            wanted = config or ix.config
            total = input_size(paths, own)
            skipped: list[str] = []
            with progress(total, quiet) as bar:
                task = bar.add_task("rebuilding", total=total, docs=0)

                keeps = ix.passages if overlaps is None else overlaps
                fingerprinting = _Fingerprinting(
                    config=wanted,
                    workers=workers,
                    bar=bar,
                    task=task,
                    skip_empty=skip_empty,
                    not_text=None if strict else not_text,
                    skipped=skipped,
                    texts=keeps,
                )
                stream = _some(fingerprinting(docs), [own_skipped, not_text, empty_folders])
                rows = ix.rebuild(
                    fingerprints=stream,
                    k=k,
                    blocks=blocks,
                    config=wanted,
                    threshold=threshold,
                    overlaps=keeps,
                )
        summary = {
            "index": ix.location,
            "count": rows,
            "k": ix.k,
            "threshold": ix.threshold,
            "blocks": list(ix.layout.widths),
            "fingerprint": json.loads(ix.config.to_json()),
            "overlaps": ix.passages,
            "skipped_files": not_text.as_json(),
        }
    own_skipped.tell()
    not_text.tell()
    empty_folders.tell()
    if as_json:
        emit_json(summary)
    else:
        typer.echo(
            f"rebuilt {ix.location}: {counted(rows, 'fingerprint')}, k={ix.k}, "
            f"threshold {ix.threshold}, "
            f"{layout_text(ix)}, {ix.config.describe()}"
        )


T = TypeVar("T")


def _some(stream: Iterator[T], notes: list[Any]) -> Iterator[T]:
    """A rebuild's documents, refused (the index left as it was) where there
    are none: the index would become empty, which a mistyped folder name
    must not do. The ``notes`` of what was skipped are told first: they say
    why there was none."""
    count = 0
    for item in stream:
        count += 1
        yield item
    if not count:
        for note in notes:
            note.tell()
        raise UserError(
            "found no document to rebuild from in SOURCES: the index is left as it was "
            "(a rebuild makes it exactly SOURCES' documents)"
        )


@reported
def check(
    index: IndexArg,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Fix what is safe to fix, in one transaction: recompute block columns, "
            "recreate missing lookup indexes, make every row's keys again; then check again.",
        ),
    ] = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Check an index for damage; --repair fixes what it safely can.

    Runs SQLite's integrity check, compares the schema with the index's
    settings, and every block column with its fingerprint. Exits 0 when all
    is well, 1 when something is wrong (listed), 2 on error.
    """
    try:
        with open_index(index, readonly=not repair) as ix:
            report = ix.check(repair=repair)
        location = ix.location
    except DamagedIndexError as exc:  # too damaged to open: that is what check reports
        report, location = CheckReport(False, [str(exc)], []), str(exc.path)
    if as_json:
        emit_json(report._asdict())
    else:
        for line in report.repaired:
            typer.echo(f"repaired: {line}")
        for line in report.problems:
            typer.echo(f"problem: {line}")
        if report.ok:
            typer.echo(f"{location}: ok")
    if not report.ok:
        raise typer.Exit(EXIT_NOT_FOUND)


@reported
def compact(index: IndexArg, as_json: JsonOpt = False, timeout: TimeoutOpt = None) -> None:
    """Reclaim free space and fold the write-ahead log into the file.

    SQLite's VACUUM, then a checkpoint.
    """
    with open_index(index) as ix:
        sizes = ix.compact()
    if as_json:
        emit_json({"index": ix.location} | sizes)
    else:
        typer.echo(f"{ix.location}: {sizes['before']:,} -> {sizes['after']:,} bytes")
