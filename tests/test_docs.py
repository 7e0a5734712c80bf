"""The docs stay true to the code and to themselves.

- every `simindex` command, argument and option appears in docs/cli.md, in
  the command's own section, and has help text;
- README.md stays short, and shows .ci/run's two set-up commands word for word;
- no README or docs line cites a commit hash for a figure ("at 0b46f1e"):
  figures cite the bench/results/ file they come from;
- every relative link in README.md, bench/README.md and docs/ points at a file
  that exists, and at a heading that exists where it names one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from simindex import cli

from .conftest import ROOT

README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [README, ROOT / "bench" / "README.md", *DOCS]
README_MAX_LINES = 150

# "at 0b46f1e", "from git `d5fdb8d`", "at revision 9c18086": a hash needs a letter
# in it, so "at 1000000" is a number, not a revision.
COMMIT_CITATION = re.compile(
    r"\b(?:at|from)\s+(?:git\s+|revision\s+|commit\s+)?`?(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def commands() -> dict[str, Any]:
    """The CLI's click commands by name (typer builds them; it may vendor click)."""
    return cli.commands()


def prose(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown file, fenced code blocks left out."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose(path):
        if m := re.match(r"#{1,6}\s+(.*)", line):
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return found


def cli_sections() -> dict[str, str]:
    """docs/cli.md's text under each '## `simindex NAME`' heading."""
    parts = re.split(r"^## `simindex (\S+)`\s*$", CLI_DOC.read_text(encoding="utf-8"), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# --- the CLI reference --------------------------------------------------------


def test_every_command_has_a_section_and_help() -> None:
    sections = cli_sections()
    for name, command in commands().items():
        assert name in sections, f"docs/cli.md has no section '## `simindex {name}`'"
        assert (command.help or "").strip(), f"simindex {name} has no help text"
    assert set(sections) <= set(commands()), "docs/cli.md describes a command that is gone"


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_and_argument_is_documented_with_help(name: str) -> None:
    section = cli_sections()[name]
    for param in commands()[name].params:
        helped = getattr(param, "help", None)
        if param.param_type_name == "argument":
            metavar = (param.metavar or param.name or "").upper()
            assert re.search(rf"\b{re.escape(metavar)}\b", section), (
                f"simindex {name}: argument {metavar} is not in its docs/cli.md section"
            )
            assert (helped or "").strip(), f"simindex {name}: argument {metavar} has no help"
            continue
        for opt in [*param.opts, *param.secondary_opts]:
            assert re.search(rf"`{re.escape(opt)}(?=[` =,\]])", section), (
                f"simindex {name}: option {opt} is not in its docs/cli.md section"
            )
        assert (helped or "").strip(), f"simindex {name}: option {param.opts[0]} has no help"


def test_help_options_and_exit_codes_are_documented() -> None:
    text = CLI_DOC.read_text(encoding="utf-8")
    group: Any = typer.main.get_command(cli.app)
    assert group.context_settings["help_option_names"] == ["-h", "--help"]
    assert "`-h`" in text and "`--help`" in text
    for code in (cli.EXIT_OK, cli.EXIT_NOT_FOUND, cli.EXIT_ERROR, 130):
        assert re.search(rf"^\s*\| {code} \|", text, flags=re.M), f"exit code {code}"


# --- the README ---------------------------------------------------------------


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move the detail to docs/"


def test_readme_says_how_long_the_tests_take() -> None:
    """A newcomer reads what they will wait for, in minutes, not "a few"."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    assert re.search(r"about \d+ minutes on \d+ cores with the install", text)
    assert "a few minutes" not in text


def test_readme_shows_the_commands_ci_runs() -> None:
    """.ci/run greps README.md for its DEMO and TESTS commands word for word."""
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8").splitlines()
    for name in ("DEMO", "TESTS"):
        m = re.search(rf'^{name}="(.*)"$', run, flags=re.M)
        assert m, f".ci/run has no {name}= line"
        assert m.group(1) in (line.strip() for line in readme), (
            f"README.md does not show .ci/run's {name} command: {m.group(1)}"
        )


# --- every page ---------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_figure_cites_a_commit(page: Path) -> None:
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        m = COMMIT_CITATION.search(line)
        assert m is None, (
            f"{page.relative_to(ROOT)}:{number} cites a commit ({m.group(0)!r}): cite the "
            f"bench/results/ file the figure comes from"
        )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_and_headings(page: Path) -> None:
    for number, line in prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            assert file.exists(), f"{where} links to {target}, which does not exist"
            if anchor and file.suffix == ".md":
                assert anchor in anchors(file), f"{where} links to a missing heading: {target}"
