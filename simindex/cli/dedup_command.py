"""The dedup command: every near-duplicate pair (or cluster) in an index, or a corpus deduplicated.

``simindex dedup INDEX`` asks SimIndex.duplicates or SimIndex.clusters;
``simindex dedup CORPUS... --out FILE`` streams the corpus through
simindex.dedup.dedup_stream and writes what it keeps (in the format
simindex.cli.records chooses) and, with --report, what it drops, through
simindex.cli.files, all or nothing.

simindex.cli registers the command on its app (COMMANDS, in the order of
``simindex -h``); each is wrapped in ``reported``.
"""

from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated

import typer

from simindex import ingest, signals
from simindex.blocks import DEFAULT_K
from simindex.cli import records
from simindex.cli.errors import UserError, interrupted, reported
from simindex.cli.files import (
    NotText,
    Skipped,
    check_outputs,
    folders_without_files,
    input_size,
    standard_output,
    written_together,
)
from simindex.cli.options import (
    CHARACTERS_HELP,
    KEYS_HELP,
    CjkOpt,
    FormatOpt,
    JsonOpt,
    KeyFieldOpt,
    NgramOpt,
    QuietOpt,
    StopOpt,
    StrictOpt,
    TextFieldOpt,
    TimeoutOpt,
    WeightingOpt,
    WorkersOpt,
    check_fields,
    check_k,
    check_threshold_option,
    config_from,
    open_index,
    workers_option,
)
from simindex.cli.output import counted, emit_json, escaped, json_line, progress
from simindex.dedup import Decision, dedup_stream
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.ingest import Doc
from simindex.signature import DEFAULT_THRESHOLD


@reported
def dedup(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="An index; or, with --out, a corpus: files, folders, JSON Lines, CSV, "
            "Parquet, '-'. " + KEYS_HELP
        ),
    ],
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            "-k",
            metavar="K",
            help=f"Largest fingerprint distance, 0-15 (default: the index's k, or {DEFAULT_K}); "
            "texts whose signatures' keys meet are paired at any distance (--threshold 0: "
            "distance alone).",
        ),
    ] = None,
    clusters: Annotated[
        bool,
        typer.Option(
            "--clusters",
            help="Print groups instead of pairs: each group is a canonical (first added) "
            "document and its near-duplicates (no chains: every member is a near-duplicate "
            "of the first).",
        ),
    ] = False,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="Corpus mode: write the documents that are not near-duplicates of an "
            "earlier one to this file ('-' for stdout); never one of the inputs or inside an "
            "input folder. Its format is its name's (.jsonl, .csv, .parquet; .gz, .zst, .bz2, "
            ".xz after the first two), else the input's; in the input's format, records are "
            "written whole (all their fields or columns), else as key and text.",
        ),
    ] = None,
    report: Annotated[
        str | None,
        typer.Option(
            "--report",
            metavar="FILE",
            help="Corpus mode: write what was dropped, and why, as JSON Lines (.gz, .zst, "
            ".bz2, .xz after its name compress it).",
        ),
    ] = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    strict: StrictOpt = False,
    workers: WorkersOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="SIMILARITY",
            help="Similarity (0-1) a candidate pair needs, by the verification signatures "
            f"(default: the index's, or {DEFAULT_THRESHOLD} for a corpus; 0: distance alone)."
            + CHARACTERS_HELP,
        ),
    ] = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Find near-duplicates in an index, or drop them from a corpus.

    `simindex dedup INDEX` prints each near-duplicate pair: distance, key, key;
    with --clusters, one group a line: the canonical (first added) key, then
    each other one as KEY:DISTANCE (its distance to the canonical one).
    Fields are separated by tabs; in keys, tab, newline, CR, NUL and
    backslash are written \\t \\n \\r \\0 \\\\ and other control
    characters \\xNN (--json gives them as they are).

    `simindex dedup CORPUS... --out unique.jsonl` streams a corpus and writes
    only the documents that are not near-duplicates of an earlier kept one
    (within k and verified at --threshold; with --report, a JSON line for
    each dropped one: its key, the key it duplicates, the distance and the
    similarity). Documents with no words are dropped as "no words", and
    each record of a key after its first as "repeated key".
    """
    check_k(k, 15)
    check_threshold_option(threshold)
    corpus_only = [
        name
        for name, given in (
            ("--format", fmt != "auto"),
            ("--key-field", key_field != "id"),
            ("--text-field", text_field != "text"),
            ("--strict", strict),
            ("--workers", workers is not None),
            ("--ngram", ngram is not None),
            ("--weighting", weighting is not None),
            ("--keep-stopwords", keep_stopwords),
            ("--cjk", cjk is not None),
        )
        if given
    ]
    if out is None and corpus_only:
        raise UserError(
            f"{', '.join(corpus_only)}: for a corpus (with --out); an index is read with "
            "its own configuration"
        )
    workers = workers_option(workers)
    if out is not None and clusters:
        raise UserError("--clusters goes with an index (dedup INDEX --clusters), not with --out")
    if out is not None:
        check_fields(fmt, key_field, text_field)
        _dedup_corpus(
            sources,
            out,
            report,
            k,
            DEFAULT_THRESHOLD if threshold is None else threshold,
            fmt,
            key_field,
            text_field,
            workers,
            config_from(ngram, weighting, keep_stopwords, cjk),
            quiet,
            as_json,
            strict,
        )
        return
    if report is not None:
        raise UserError("--report goes with --out (corpus mode)")
    if len(sources) != 1:
        raise UserError("give one index (or a corpus with --out)")
    _check_index(sources[0])
    with open_index(sources[0]) as ix:
        used_k = ix.k if k is None else k
        used = ix.threshold if threshold is None else threshold
        if clusters:
            groups = ix.clusters(k, threshold=threshold)
            if as_json:
                emit_json(
                    {
                        "k": used_k,
                        "threshold": used,
                        "clusters": [
                            {"canonical": c.canonical, "members": [list(m) for m in c.members]}
                            for c in groups
                        ],
                    }
                )
            else:
                for c in groups:
                    members = (f"{escaped(key)}:{d}" for key, d in c.members[1:])
                    typer.echo("\t".join((escaped(c.canonical), *members)))
            return
        pairs = ix.duplicates(k, threshold=threshold)
    if as_json:
        emit_json({"k": used_k, "threshold": used, "pairs": [p._asdict() for p in pairs]})
    else:
        for p in pairs:
            typer.echo(f"{p.distance}\t{escaped(p.key_a)}\t{escaped(p.key_b)}")


def _check_index(source: str) -> None:
    """A folder, or a file SQLite says is none of its, given as the index:
    most likely a corpus given without --out; say so (an empty, missing,
    locked or unreadable file is left to open_index, which says what it is)."""
    from simindex.index_files import not_sqlite

    path = Path(source)
    folder = path.is_dir()
    if folder or (path.is_file() and not_sqlite(path)):
        what = "a folder, not an index file" if folder else "not a simindex index (not SQLite)"
        raise UserError(
            f"{source} is {what}: to drop the near-duplicates of a corpus, give --out FILE "
            "(simindex dedup CORPUS --out unique.jsonl)"
        )


def _dedup_corpus(
    sources: list[str],
    out: str,
    report: str | None,
    k: int | None,
    threshold: float,
    fmt: str,
    key_field: str,
    text_field: str,
    workers: int | None,
    config: FingerprintConfig | None,
    quiet: bool,
    as_json: bool,
    strict: bool,
) -> None:
    """Stream a corpus; keep each document unless it is near an earlier kept one.

    The deciding is simindex.dedup's; this is the shell around it: the files
    read (never an output), the outputs written all or nothing, the progress
    bar and the summary on stderr (on stdout with --json, unless --out is '-').
    """
    if "-" in sources and fmt in ("auto", "text"):
        raise UserError("read a corpus from stdin with --format lines, jsonl or csv")
    from simindex.index_files import is_sqlite

    ingest.check_paths(sources)
    for source in sources:
        if os.path.isfile(source) and is_sqlite(Path(source)):  # (never a pipe: isfile)
            raise UserError(
                f"{source} is a SQLite database (an index?), not a corpus: `simindex dedup "
                f"{source}` lists its near-duplicate pairs; --out is for texts"
            )
    # A name of standard output (/dev/stdout) is written as '-' is: through it.
    out = "-" if standard_output(out) else out
    report = "-" if report is not None and standard_output(report) else report
    own = check_outputs([("--out", out), ("--report", report)], sources)
    written = records.plan(out, sources, fmt)
    own_skipped = Skipped("this command's own output files")
    not_text = NotText()
    empty_folders = folders_without_files()
    docs = ingest.read_docs(
        sources,
        fmt=fmt,
        key_field=key_field,
        text_field=text_field,
        folder_keys="path",
        skip=own,
        on_skip=own_skipped,
        on_unreadable=None if strict else not_text,
        on_empty_folder=empty_folders,
        records=written.as_read,
    )
    total = input_size(sources, own)
    without_words = 0  # files found in folders with no words, skipped as not_text says
    repeated = 0  # records of a key read before, dropped as "repeated key"
    repeats: deque[bool] = deque()  # which of the documents in flight are those
    try:
        with written_together() as outputs:
            unique = records.Sink(outputs, out, written, key_field, text_field)
            dropped = None
            if report is not None:
                dropped = records.Sink(outputs, report, records.report_plan(report), "id", "text")
            sinks = [s for s in (unique, dropped) if s is not None]
            try:
                with progress(total, quiet or out == "-") as bar:
                    task = bar.add_task("dedup", total=total, docs=0)
                    with dedup_stream(
                        _first_of_each_key(docs, repeats),
                        k=DEFAULT_K if k is None else k,
                        threshold=threshold,
                        config=config or DEFAULT_CONFIG,
                        workers=workers,
                    ) as run:
                        for decision in run:
                            doc = decision.doc
                            bar.update(task, advance=doc.size, docs=run.counts.read)
                            repeat = repeats.popleft()
                            repeated += repeat
                            if decision.no_words and doc.in_folder and not repeat:
                                if strict:
                                    raise UserError(
                                        f"{doc.where} has no words to fingerprint (--strict); "
                                        f"nothing was written"
                                    )
                                not_text.no_words(doc)
                                without_words += 1
                                continue
                            unique.take(doc, decision.kept)
                            if dropped is not None and not decision.kept:
                                dropped.write(json_line(_why_dropped(decision, repeat)))
                for sink in sinks:
                    sink.finish()
            except BaseException:
                for sink in sinks:
                    sink.abandon()
                raise
    except KeyboardInterrupt as exc:  # no transaction here: the outputs were not written
        named = " or ".join(p for p in (out, report) if p is not None and p != "-")
        interrupted(exc, f"nothing was written to {named}" if named else "")
        raise typer.Exit(signals.exit_code(exc)) from None
    own_skipped.tell()
    not_text.tell()
    empty_folders.tell()
    # A folder's files with no words were skipped as files, not read as documents;
    # the records of a repeated key were passed on without their text.
    counts = replace(
        run.counts,
        read=run.counts.read - without_words,
        no_words=run.counts.no_words - without_words - repeated,
    )
    if as_json:
        summary = asdict(counts) | {
            "repeated_keys": repeated,
            "k": run.k,
            "threshold": run.threshold,
            "skipped_files": not_text.as_json(),
        }
        typer.echo(json.dumps(summary), err=out == "-")
    else:
        rest = f"{counts.no_words} with no words"
        rest = f", {rest} and {repeated} with a repeated key" if repeated else f" and {rest}"
        typer.echo(
            f"read {counts.read}, kept {counts.kept}, dropped "
            f"{counted(counts.dropped, 'near-duplicate')} (k={run.k}, threshold {run.threshold})"
            f"{rest}",
            err=True,
        )


def _first_of_each_key(docs: Iterable[Doc], repeats: deque[bool]) -> Iterator[Doc]:
    """The documents of a corpus, each later record of a key passed on
    without its text (so it is decided in its place in the input's order, as
    having no words) and ``repeats`` told, document by document, which they
    are (decisions come in the same order), so that it is dropped as
    "repeated key", never as a near-duplicate of itself. A key names one
    document, as in an index, where ``add`` gives a key read twice the text
    of its last record; a stream cannot take back what it has written, so
    here the first record stays, as with ``add --skip-existing`` (one with
    no words is dropped as "no words", and the key with it: whether a text
    has words is known once it is fingerprinted, after the records read
    ahead of it were passed on). Memory: a set of every key read."""
    seen: set[str] = set()
    for doc in docs:
        again = doc.key in seen
        repeats.append(again)
        if again:
            yield doc._replace(text="")
        else:
            seen.add(doc.key)
            yield doc


def _why_dropped(decision: Decision, repeat: bool) -> dict[str, object]:
    """A --report line: the key of a dropped document, and the kept key it
    duplicates and the distance, or that it has no words, or a repeated key."""
    if repeat:
        return {"id": decision.key, "reason": "repeated key"}
    if decision.no_words:
        return {"id": decision.key, "reason": "no words"}
    return {
        "id": decision.key,
        "duplicate_of": decision.duplicate_of,
        "distance": decision.distance,
        "similarity": decision.similarity,
    }
