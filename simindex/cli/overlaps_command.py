"""overlaps: the stored documents a text is inside of, or that are inside it.

A thin shell over SimIndex.overlaps: one line a document (the text's share
found in it, its share found in the text, its key escaped), or --json.
"""

from __future__ import annotations

from typing import Annotated

import typer

from simindex.cli.errors import EXIT_NOT_FOUND, UserError, reported
from simindex.cli.options import (
    IndexArg,
    JsonOpt,
    TimeoutOpt,
    check_threshold_option,
    open_index,
    read_text_file,
)
from simindex.cli.output import emit_json, escaped
from simindex.overlaps import DEFAULT_THRESHOLD


@reported
def overlaps(
    index: IndexArg,
    text: Annotated[str | None, typer.Argument(help="The text to look for.")] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file", "-f", metavar="FILE", help="Read the text from a file ('-' for stdin)."
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            metavar="SHARE",
            help="The share (0-1) of the text found in a document, or of the document "
            f"found in the text, that returns it (default {DEFAULT_THRESHOLD}).",
        ),
    ] = DEFAULT_THRESHOLD,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", metavar="N", help="At most this many documents.")
    ] = None,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Print the documents that share passages with a text.

    The text inside them, or them inside the text.

    One line each: the share of the text found in the document, the share of
    the document found in the text, and its key; the larger share first. The
    index must keep passages (simindex init --overlaps, or rebuild
    --overlaps from the texts). Exits 1 when there are none, like grep.
    """
    if (text is None) == (file is None):
        raise UserError("give exactly one of: TEXT, --file FILE ('-' for stdin)")
    check_threshold_option(threshold)
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, not {limit}")
    query = read_text_file(file, index) if file is not None else text
    assert query is not None
    with open_index(index, readonly=True) as ix:
        found = ix.overlaps(query, threshold=threshold, limit=limit)
    if as_json:
        emit_json({"threshold": threshold, "overlaps": [o._asdict() for o in found]})
    else:
        for o in found:
            typer.echo(f"{o.query_share:.3f}\t{o.stored_share:.3f}\t{escaped(o.key)}")
    if not found:
        raise typer.Exit(EXIT_NOT_FOUND)
