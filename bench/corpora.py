"""Same-genre texts every Debian machine has: copyright and licence files, and
manual pages grouped by the package that installs them. Read by
bench/quality.py --hard (the same-genre negatives) and bench/copyright.py (the
real-corpus precision report).
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DOC = Path("/usr/share/doc")
LICENSES = Path("/usr/share/common-licenses")
MAN = Path("/usr/share/man")
DPKG_INFO = Path("/var/lib/dpkg/info")
OVERSTRIKE = re.compile(r".\x08")  # bold and underline as groff prints them for a terminal
MAN_SECTIONS = ("man1", "man8")  # commands: the pages a user reads side by side
MAN_PER_PACKAGE = 40  # pages rendered per package (the first in name order)
MAN_MAX_PAGES = 1500  # pages rendered in all (English)


def copyright_files(distinct: bool = True) -> list[tuple[str, str]]:
    """(path, text) of every /usr/share/doc/*/copyright and /usr/share/common-licenses
    file: each file once (symlinks resolved, so a link to another package's file or to
    a licence is read once), empty ones left out; with ``distinct``, files with the same
    text (whitespace collapsed) once. In path order."""
    paths = sorted(DOC.glob("*/copyright")) + sorted(LICENSES.glob("*"))
    seen: set[Path] = set()
    texts: set[str] = set()
    out = []
    for p in paths:
        try:
            real = p.resolve(strict=True)
        except OSError:
            continue
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        try:
            text = real.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        key = " ".join(text.split())
        if key and not (distinct and key in texts):
            texts.add(key)
            out.append((str(p), text))
    return out


def _package_pages(roots: Iterable[Path]) -> dict[str, list[Path]]:
    """package -> its manual pages in MAN_SECTIONS (from dpkg's file lists)."""
    found: dict[str, list[Path]] = {}
    if DPKG_INFO.is_dir():
        for lst in sorted(DPKG_INFO.glob("*.list")):
            pkg = lst.stem.split(":")[0]
            try:
                lines = lst.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                parts = line.split("/")
                if (
                    line.startswith("/usr/share/man/man")
                    and len(parts) == 6
                    and parts[4] in MAN_SECTIONS
                    and Path(line).is_file()
                ):
                    found.setdefault(pkg, []).append(Path(line))
    for root in roots:  # pages extracted from downloaded packages: one group per root
        pages = [p for s in MAN_SECTIONS for p in sorted((root / "usr/share/man" / s).glob("*"))]
        if pages:
            found[f"fetched:{root}"] = pages
    return {k: sorted(set(v)) for k, v in found.items() if len(set(v)) >= 2}


def render(page: Path, cache: Path) -> str | None:
    """A manual page as a terminal shows it (man -P cat -l, 80 columns), cached."""
    out = cache / (page.name + ".txt")
    if out.exists():
        return out.read_text(encoding="utf-8")
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_DISABLE_SECCOMP": "1"}
    env.pop("MAN_KEEP_FORMATTING", None)
    try:
        p = subprocess.run(
            ["man", "-P", "cat", "-l", str(page)],
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = OVERSTRIKE.sub("", p.stdout.decode("utf-8", "replace"))
    if p.returncode != 0 or len(text.split()) < 20:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return text


def _read_source(page: Path) -> str | None:
    """The words of a page's roff source, where `man` cannot render it: requests and
    font escapes dropped."""
    try:
        raw = gzip.decompress(page.read_bytes()) if page.suffix == ".gz" else page.read_bytes()
    except OSError:
        return None
    lines = [ln for ln in raw.decode("utf-8", "replace").splitlines() if not ln.startswith(".")]
    return re.sub(r"\\f[BIRP]|\\\(..|\\.", " ", "\n".join(lines))


def man_pages(lang: str, cache: Path, roots: Iterable[Path] = ()) -> dict[str, list[tuple]]:
    """Rendered manual pages grouped by what makes them related: English, the man1
    and man8 pages of each package that installs two or more (up to MAN_PER_PACKAGE
    each, MAN_MAX_PAGES in all); Chinese, every zh_CN page (one group: the same
    tools, shadow's and man-db's). group -> [(page name, text)]."""
    if lang == "zh":
        pages = sorted(p for p in (MAN / "zh_CN").glob("man*/*") if p.is_file())
        groups = {"zh_CN": pages} if len(pages) >= 2 else {}
    else:
        groups = _package_pages(roots)
        budget = MAN_MAX_PAGES
        for pkg in sorted(groups):
            groups[pkg] = groups[pkg][: min(MAN_PER_PACKAGE, max(0, budget))]
            budget -= len(groups[pkg])
        groups = {k: v for k, v in groups.items() if len(v) >= 2}
    todo = [(g, p) for g, pages in groups.items() for p in pages]
    where = cache / f"man-{lang}"
    with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        texts = list(pool.map(lambda gp: render(gp[1], where) or _read_source(gp[1]), todo))
    out: dict[str, list[tuple]] = {}
    seen: set[str] = set()
    for (g, p), text in zip(todo, texts, strict=True):
        key = " ".join((text or "").split())
        if len(key.split()) >= 20 and key not in seen:
            seen.add(key)
            out.setdefault(g, []).append((p.name, text))
    return {k: v for k, v in out.items() if len(v) >= 2}
