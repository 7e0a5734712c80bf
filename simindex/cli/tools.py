"""The tools that need no index: advise, fingerprint, distance, explain.

advise compares block layouts (simindex.blocks); fingerprint and distance
are simhash and hamming on the command line; explain says why two texts are,
or are not, near-duplicates (simindex.explain). fingerprint and explain may
take an index's configuration (--index), and explain its layout and k.

simindex.cli registers the commands on its app (COMMANDS, in the order of
``simindex -h``); each is wrapped in ``reported``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Annotated, Any
from unicodedata import east_asian_width

import typer

from simindex import signature
from simindex.blocks import DEFAULT_K, MAX_INDEX_K, BlockLayout
from simindex.cli.errors import UserError, reported
from simindex.cli.options import (
    CHARACTERS_HELP,
    CjkOpt,
    JsonOpt,
    NgramOpt,
    StopOpt,
    TimeoutOpt,
    WeightingOpt,
    check_threshold_option,
    config_from,
    open_index,
    parse_fingerprint,
    read_text_file,
)
from simindex.cli.output import counted, emit_json, escaped
from simindex.errors import EmptyTextError
from simindex.explain import Explanation, explain
from simindex.fingerprint import DEFAULT_CONFIG, hamming, simhash
from simindex.signature import DEFAULT_THRESHOLD


@reported
def advise(
    n: Annotated[
        int, typer.Option("--n", metavar="N", help="How many fingerprints the index will hold.")
    ],
    k: Annotated[
        int,
        typer.Option(
            "--k",
            "-k",
            metavar="K",
            help=f"The distance it must answer, 0-15 (default {DEFAULT_K}).",
        ),
    ] = DEFAULT_K,
    as_json: JsonOpt = False,
) -> None:
    """Compare block layouts for an index of n fingerprints.

    It recommends one. For each number of blocks: the database indexes it needs, the expected
    candidate rows per query (for well-spread fingerprints), the index seeks
    per query (probes included, for k or fewer blocks), the estimated bytes
    per fingerprint and query time (microseconds, from costs measured at a
    million fingerprints). Create the recommended one with:
    simindex init INDEX --k K --blocks B.
    """
    from simindex.costs import advise as advise_layouts

    if n < 0:
        raise UserError(f"--n must be at least 0, not {n}")
    if not 0 <= k <= 15:
        raise UserError(f"--k must be from 0 to 15, not {k}")
    layouts = advise_layouts(n, k)
    best = layouts[0]
    rows = [
        {
            "blocks": a.blocks,
            "indexes": len(a.layout.tables),
            "widths": list(a.layout.widths),
            "candidates_per_query": round(a.candidates, 3),
            "seeks_per_query": a.seeks,
            "bytes_per_fingerprint": a.bytes_per_fingerprint,
            "cost": round(a.cost, 2),
            "recommended": a is best,
        }
        for a in sorted(layouts, key=lambda a: a.blocks)
    ]
    if as_json:
        emit_json({"n": n, "k": k, "layouts": rows, "recommended_blocks": best.blocks})
        return
    typer.echo(f"layouts for n={counted(n, 'fingerprint', grouped=True)}, k={k}:")
    typer.echo(
        f"{'blocks':>6} {'indexes':>7} {'candidates/query':>16} {'seeks':>6} {'bytes/fp':>8} "
        f"{'est. us':>8}"
    )
    for r in rows:
        mark = "  <- recommended" if r["recommended"] else ""
        typer.echo(
            f"{r['blocks']:>6} {r['indexes']:>7} {r['candidates_per_query']:>16,.3f} "
            f"{r['seeks_per_query']:>6} {r['bytes_per_fingerprint']:>8.0f} {r['cost']:>8.1f}{mark}"
        )
    typer.echo(f"create it with: simindex init INDEX --k {k} --blocks {best.blocks}")


# fingerprint, distance and explain take their inputs as arguments, and the
# same two flags say what the arguments are: --text (texts) or --file (files,
# '-' for stdin). Without them each takes what it is most used with:
# fingerprint a text (like query), distance fingerprints, explain files.
def _text_flag(words: str) -> Any:
    return typer.Option("--text", "-t", help=words, show_default=False)


def _file_flag(words: str) -> Any:
    return typer.Option("--file", "-f", help=words, show_default=False)


def _inputs_kind(as_text: bool, as_file: bool, default: str) -> str:
    if as_text and as_file:
        raise UserError("give --text or --file, not both")
    return "text" if as_text else "file" if as_file else default


def _read_input(value: str, kind: str, hint: str = "", index: str | None = None) -> str:
    """An argument as a text: itself, or the file it names (never ``index``'s own)."""
    if kind == "text":
        return value
    if value != "-" and not os.path.lexists(value):
        raise UserError(f"no such file: {value}{hint}")
    return read_text_file(value, index)


@reported
def fingerprint_cmd(
    value: Annotated[
        str | None,
        typer.Argument(
            metavar="TEXT", help="The text; with --file, a file to read ('-' for stdin)."
        ),
    ] = None,
    as_text: Annotated[bool, _text_flag("TEXT is a text (the default).")] = False,
    as_file: Annotated[bool, _file_flag("TEXT is a file to read ('-' for stdin).")] = False,
    index: Annotated[
        str | None,
        typer.Option(
            "--index", "-i", metavar="INDEX", help="Use this index's fingerprint configuration."
        ),
    ] = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Print a text's 64-bit fingerprint.

    Decimal, and 0x-hex too with --json.

    simindex fingerprint TEXT, or --text TEXT, or --file FILE ('-' for stdin).
    """
    kind = _inputs_kind(as_text, as_file, "text")
    if value is None:
        raise UserError("give the text to fingerprint, or --file FILE ('-' for stdin)")
    if kind == "text" and not as_text and os.path.isfile(value):
        typer.echo(
            f"Warning: fingerprinting the text {value!r}, not the file of that name "
            "(give --file to read it)",
            err=True,
        )
    what = _read_input(value, kind, index=index)
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    if index is not None:
        with open_index(index, config=config) as ix:
            fp = ix.fingerprint(what)
    else:
        fp = simhash(what, config or DEFAULT_CONFIG)
    if as_json:
        emit_json({"fingerprint": fp, "hex": f"0x{fp:016x}"})
    else:
        typer.echo(str(fp))


@reported
def distance(
    a: Annotated[
        str,
        typer.Argument(
            help="A fingerprint (decimal or 0x-hex); a text with --text, a file with --file."
        ),
    ],
    b: Annotated[str, typer.Argument(help="Another one.")],
    as_text: Annotated[bool, _text_flag("A and B are texts.")] = False,
    as_file: Annotated[bool, _file_flag("A and B are files (one may be '-', stdin).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the Hamming distance between two fingerprints or texts.

    Fingerprints by default; texts with --text, files with --file.
    """
    kind = _inputs_kind(as_text, as_file, "fingerprint")
    if kind == "fingerprint":
        hint = " (or give --text or --file to compare texts or files)"
        fa, fb = (parse_fingerprint(x, hint) for x in (a, b))
    else:
        if kind == "file" and a == "-" and b == "-":
            raise UserError("only one of A and B can be '-' (standard input)")
        fa, fb = (simhash(_read_input(x, kind)) for x in (a, b))
    d = hamming(fa, fb)
    if as_json:
        emit_json({"distance": d, "a": fa, "b": fb})
    else:
        typer.echo(str(d))


@reported
def explain_cmd(
    a: Annotated[str, typer.Argument(help="A file ('-' for stdin); a text with --text.")],
    b: Annotated[str, typer.Argument(help="Another one.")],
    as_text: Annotated[bool, _text_flag("A and B are texts.")] = False,
    as_file: Annotated[
        bool, _file_flag("A and B are files (the default; one may be '-', stdin).")
    ] = False,
    index: Annotated[
        str | None,
        typer.Option(
            "--index",
            "-i",
            metavar="INDEX",
            help="Use this index's fingerprint configuration, blocks and k.",
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k",
            "-k",
            metavar="K",
            help=f"Largest fingerprint distance (default: the index's k, or {DEFAULT_K}); "
            "texts whose signatures' keys meet are near-duplicates beyond it too.",
        ),
    ] = None,
    blocks: Annotated[
        int | None,
        typer.Option(
            "--blocks",
            metavar="N",
            help="Without --index: blocks of the layout (default: a new index's).",
        ),
    ] = None,
    top: Annotated[
        int,
        typer.Option("--top", "-n", metavar="N", help="Features listed on each side (default 10)."),
    ] = 10,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            metavar="SIMILARITY",
            help="Similarity the verification signatures need (0-1; default: the index's, "
            f"or {DEFAULT_THRESHOLD})." + CHARACTERS_HELP,
        ),
    ] = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    as_json: JsonOpt = False,
    timeout: TimeoutOpt = None,
) -> None:
    """Explain why two texts are, or are not, near-duplicates.

    The two are files by default, texts with --text.

    Prints the distance beside k, which blocks of the layout agree, which of
    its lookup indexes ("tables") would find one text from the other, the
    similarity of the two texts' features with the distance it predicts, and
    the features credited with the bits that agree (in both texts) and with
    the bits that differ (in one text, or weighed differently). A feature's
    score is in bits: the apart scores add up to the distance. Then the
    second stage: the similarity the verification signatures estimate
    against --threshold, the exact similarity of the two texts' units (words
    and CJK characters) it estimates, and the units only one text has.
    """
    check_threshold_option(threshold)
    if k is not None and not 0 <= k <= 64:
        raise UserError(f"--k must be from 0 to 64, not {k}")
    if top < 0:
        raise UserError(f"--top must be at least 0, not {top}")
    if index is not None and blocks is not None:
        raise UserError("an index has its own blocks: give --blocks without --index")
    if index is None and k is not None and k > MAX_INDEX_K:
        raise UserError(
            f"without --index, --k goes up to {MAX_INDEX_K} (a layout's limit), not {k}"
        )
    kind = _inputs_kind(as_text, as_file, "file")
    if kind == "file" and a == "-" and b == "-":
        raise UserError("only one of A and B can be '-' (standard input)")
    hint = " (give --text to explain two texts)"
    texts = (_read_input(a, kind, hint, index), _read_input(b, kind, hint, index))
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    try:
        if index is not None:
            with open_index(index, readonly=True, config=config) as ix:
                result = ix.explain(*texts, k=k, top=top, threshold=threshold)
        else:
            distance = DEFAULT_K if k is None else k
            layout = BlockLayout.for_k(distance, blocks)
            result = explain(
                *texts,
                k=distance,
                layout=layout,
                config=config or DEFAULT_CONFIG,
                top=top,
                threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            )
    except EmptyTextError as exc:  # ("text a has no word features ..."): name the file
        side, given = ("A", a) if str(exc).startswith("text a ") else ("B", b)
        shown = f"{side} ({escaped(given)})" if kind == "file" else side
        raise UserError(f"{shown} {str(exc).split(' ', 2)[2]}") from None
    if as_json:
        emit_json(result.to_dict())
    else:
        for line in _explanation_lines(result):
            typer.echo(line)


def _explanation_lines(e: Explanation) -> Iterator[str]:
    """The human report of an explanation."""
    yield e.verdict()
    yield f"fingerprints: a 0x{e.fingerprint_a:016x}  b 0x{e.fingerprint_b:016x}"
    yield "blocks: " + "  ".join(
        f"{b.width} ✓" if b.agrees else f"{b.width} ✗({b.differing})" for b in e.blocks
    )
    matched = [
        f"{i} (block{'s' * (len(e.tables[i]) > 1)} {'+'.join(map(str, e.tables[i]))})"
        for i in e.matching_tables
    ]
    yield (
        f"tables: {len(matched)} of {len(e.tables)} match: {', '.join(matched)}"
        if matched
        else f"tables: none of {len(e.tables)} matches"
    )
    if e.similarity is not None:
        yield f"signatures: {e.judged(3)}"
    if e.unit_jaccard is not None:
        small = e.units_a is not None and e.units_b is not None
        small = small and max(e.units_a or 0, e.units_b or 0) <= signature.SMALL
        how = (
            "both sets kept exactly in the signatures; one unit apart among "
            f"{signature.ONE_UNIT_SHARED} or more shared counts as {signature.ONE_UNIT:.3f}"
            if small
            else "what the signatures estimate"
        )
        yield (
            f"units: {e.units_a} in a, {e.units_b} in b, {e.shared_units} shared: "
            f"exact Jaccard {e.unit_jaccard:.3f} ({how})"
        )
        for side, only in (("a", e.only_a), ("b", e.only_b)):
            if only:
                shown = " ".join(u if len(u) <= 30 else u[:29] + "…" for u in only)
                yield f"  only in {side}: {escaped(shown, backslash=False)}"
    if e.cosine is None or e.weighted_jaccard is None or e.expected_distance is None:
        return
    yield (
        f"features: {e.features_a} in a, {e.features_b} in b, {e.shared_features} shared; "
        f"cosine {e.cosine:.3f}, weighted Jaccard {e.weighted_jaccard:.3f}: "
        f"expected distance ~{e.expected_distance:.1f}"
    )
    for title, effects in (
        ("pulled together (in both texts)", e.together),
        ("pulled apart (in one text, or weighed differently)", e.apart),
    ):
        if not effects:
            continue
        names = [f if len(f) <= 40 else f[:39] + "…" for f in (x.feature for x in effects)]
        width = max(len("feature"), *map(_columns, names))
        yield ""
        yield f"{title}:"
        yield f"  {'feature':<{width}} {'a':>6} {'b':>6} {'bits':>6}"
        for name, x in zip(names, effects, strict=True):
            pad = " " * (width - _columns(name))
            yield f"  {name}{pad} {x.weight_a:>6} {x.weight_b:>6} {x.score:>6.2f}"


def _columns(text: str) -> int:
    """The columns a terminal gives a text: two for a wide (CJK) character."""
    return sum(2 if east_asian_width(c) in "WF" else 1 for c in text)
