"""The house rules a newcomer can check: classes composed, not mixed in; the
"changed, ask again" rule caught in one place; every dependency between
simindex's modules pointing one way (no import cycles, lazy imports inside
functions included); nothing outside simindex/storage/ asking which
database it talks to, and inside it only dialects.py (with the exceptions
listed in KIND_NAMED); and no test module importing another (what they
share is in conftest.py and helpers.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "simindex"
TESTS = Path(__file__).resolve().parent


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The simindex modules this one imports, anywhere in it (TYPE_CHECKING included)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if target in known else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    # A module naming its own package (``from simindex.storage import
    # schema`` inside storage/) reaches a sibling, found above; the edge to
    # the package itself is not a dependency. A package's __init__ keeps its
    # edges to its own modules: a cycle through a package's exports is one.
    return {m for m in found if m in known and m != name and not name.startswith(m + ".")}


# Interfaces with one implementation per kind (not parts of a class).
INTERFACES = {"Dialect"}


def test_the_rooms_are_composed_not_mixed_in() -> None:
    """The facade, the reader, the views and the store hold their parts; no
    class shares its private state with a base class of simindex's (errors
    and warnings are kinds of value, not parts)."""
    from simindex import SimIndex
    from simindex.reader import Reader
    from simindex.storage import Store
    from simindex.view import Views

    for cls in (SimIndex, Reader, Views, Store):
        assert cls.__bases__ == (object,), cls
    trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules().items()}
    ours = {
        node.name
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rpartition(".")[2] for b in node.bases]
                mixed = [
                    b
                    for b in bases
                    if b in ours and b not in INTERFACES and not b.endswith(("Error", "Warning"))
                ]
                assert not mixed, f"{name}.{node.name} inherits {mixed}"


def test_the_ask_again_rule_is_caught_in_one_place() -> None:
    """storage.Changed ("the index changed under this read") is caught by
    view.Views.read's loop alone: every read is asked again the same way."""
    catchers = [
        name
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ExceptHandler)
        and node.type is not None
        and "Changed" in ast.unparse(node.type)
    ]
    assert catchers == ["simindex.view"]


def test_every_dependency_points_one_way() -> None:
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    cycles = []
    state: dict[str, int] = {}  # 1 visiting, 2 done
    trail: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        trail.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == 1:
                cycles.append(trail[trail.index(other) :] + [other])
            elif other not in state:
                visit(other)
        trail.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)
    # The graph is real: the facade reaches storage, storage never the facade.
    assert "simindex.storage" in graph["simindex.index"]
    assert not any(m.startswith("simindex.index") for m in graph["simindex.storage.store"])


def test_the_command_line_reaches_storage_only_through_the_library() -> None:
    """cli -> the library's facade (simindex.index, simindex.index_files)
    -> storage: no module of simindex/cli imports simindex.storage, at its
    top or inside a function."""
    known = modules()
    reaching = {
        f"{name} -> {other}"
        for name, path in known.items()
        if name.startswith("simindex.cli")
        for other in imports(name, path, known)
        if other == "simindex.storage" or other.startswith("simindex.storage.")
    }
    assert not reaching, sorted(reaching)
    facade = imports("simindex.cli.restore_command", known["simindex.cli.restore_command"], known)
    assert "simindex.index_files" in facade  # (the check sees lazy imports)


# The rooms that work in memory: what they know of the database comes in as
# values (the accelerator's Stamp is a pair of ints, storage's Versions one).
IN_MEMORY = (
    "simindex.accelerator",
    "simindex.snapshot",
    "simindex.tables",
    "simindex.pairs",
    "simindex.planner",
    "simindex.matching",
    "simindex.dedup",
    "simindex.signature",
    "simindex.fingerprint",
)


def test_the_in_memory_rooms_need_nothing_of_storage() -> None:
    """Not even a type: storage depends on them, never they on storage
    (looked at through every module they import, and those import)."""
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    for room in IN_MEMORY:
        reached, todo = set(), [room]
        while todo:
            for other in graph[todo.pop()] - reached:
                reached.add(other)
                todo.append(other)
        assert not {m for m in reached if m.startswith("simindex.storage")}, room


def test_no_database_kind_is_asked_outside_storage() -> None:
    """As `grep -rn "dialect\\|postgres" simindex --include=*.py` outside
    simindex/storage/ (the words code would use; a sentence to a user may
    name PostgreSQL)."""
    words = re.compile(r"dialect|postgres")
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for name, path in modules().items()
        if not name.startswith("simindex.storage")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if words.search(line)
    ]
    assert not found, "\n".join(found)


# Where a module may name a kind of database, and why. Everywhere else the
# differences are asked of the Dialect (storage/dialects.py).
KIND_NAMED = {
    "simindex.storage.dialects": "every difference between the databases lives here",
    "simindex.storage.location": "names the kinds a URL may be, and says which one it is",
    "simindex.storage.schema": (
        "SQLAlchemy takes a type's variant and a compile hook by the dialect's name "
        "(ID_TYPE's INTEGER on SQLite, CREATE INDEX ... INCLUDE on PostgreSQL), "
        "declared with the tables they shape"
    ),
}
_KIND = re.compile(r"(sqlite|postgresql|postgres)(\+\w+)?(://.*)?", re.IGNORECASE)


def kind_questions(source: str) -> list[tuple[int, str]]:
    """Where code asks which database it talks to: a database kind's name as
    a string (compared, or handed to SQLAlchemy; docstrings aside), a
    dialect's name (``conn.dialect.name``), a location's kind
    (``where.postgres``), or a URL's driver name looked at rather than
    shown in a message."""
    tree = ast.parse(source)
    docstrings, shown = set(), set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            docstrings.add(id(body[0].value))
        if isinstance(node, ast.FormattedValue):
            shown.update(id(n) for n in ast.walk(node.value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            asks = id(node) not in docstrings and _KIND.fullmatch(node.value) is not None
        elif isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            asks = (
                (node.attr == "name" and owner.rpartition(".")[2] == "dialect")
                or node.attr == "postgres"
                or (node.attr == "drivername" and id(node) not in shown)
            )
        else:
            continue
        if asks:
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def test_no_database_kind_is_asked_outside_dialects() -> None:
    """Every difference between SQLite and PostgreSQL is a Dialect's
    (storage/dialects.py): no other module branches on the kind."""
    known = modules()
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for name, path in known.items()
        if name not in KIND_NAMED
        for line, what in kind_questions(path.read_text(encoding="utf-8"))
    ]
    assert not found, "\n".join(found)
    # Each exception is still needed (else it goes from the list).
    for name in KIND_NAMED:
        assert kind_questions(known[name].read_text(encoding="utf-8")), name


# short_sets.py's seven branches as they were, and the other ways to ask.
_ASKED = """
def f(conn, where, url, engine):
    if conn.dialect.name == "sqlite":
        pass
    length = "length" if conn.dialect.name == "sqlite" else "octet_length"
    if conn.dialect.name != "sqlite" or not marking(conn):
        pass
    alone = conn.dialect.name == "sqlite"
    shared = where.path is None and not where.postgres
    if url.drivername.startswith("postgresql+psycopg"):
        pass
    dialect = engine.dialect
    return dialect.name in ("postgres",)
"""
_TOLD = '''
def g(url, exc):
    """On SQLite a row trigger runs per row; "sqlite" is a name."""
    message = f"the database driver for {url.drivername} is not installed"
    return exc.sqlite_errorcode, "SQLite integrity check: ", message
'''


def test_the_kind_check_sees_every_spelling() -> None:
    lines = [line for line, _ in kind_questions(_ASKED)]
    assert lines == [3, 3, 5, 5, 6, 6, 8, 8, 9, 10, 10, 13, 13]  # every line, each thing asked
    assert kind_questions(_TOLD) == []


def test_a_sqlite_process_opening_an_index_never_loads_postgresql_s_dialect(
    tmp_path: Path,
) -> None:
    """Creating an index runs its migrations (Alembic loads every dialect it
    knows); opening one, querying, adding and rebuilding load SQLite's alone."""
    import subprocess
    import sys

    from simindex import SimIndex

    path = str(tmp_path / "x.db")
    SimIndex(path).close()
    code = (
        "import sys\n"
        "from simindex import SimIndex\n"
        f"with SimIndex({path!r}) as index:\n"
        "    index.add_fingerprints([('a', 1), ('b', 3)])\n"
        "    index.rebuild(k=3)\n"
        "    assert [m.key for m in index.query(1)] == ['a', 'b']\n"
        "print(sorted(m for m in sys.modules if m.startswith('sqlalchemy.dialects.postgresql')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def modules_importing_others(folder: Path) -> dict[str, set[str]]:
    """For each tests/test_*.py, the other test modules it imports (anywhere
    in it): ``from tests.test_x``, ``from .test_x``, ``from . import test_x``,
    ``from tests import test_x``, ``import tests.test_x``."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.glob("test_*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                parts = module.split(".") if module else []
                if node.level == 1 or (node.level == 0 and parts[:1] == ["tests"]):
                    inside = parts[1:] if node.level == 0 else parts
                    if inside:
                        names.add(inside[0])
                    else:  # from . import test_x / from tests import test_x
                        names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == "tests" and len(parts) > 1:
                        names.add(parts[1])
        others = {n for n in names if n.startswith("test_") and n != path.stem}
        if others:
            found[path.name] = others
    return found


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in tests/helpers.py and fixtures in conftest.py.
    A test module importing another ties the two together: moving or
    renaming a test breaks an unrelated module, and a test or fixture
    imported by name is collected again where it is imported."""
    found = modules_importing_others(TESTS)
    assert not found, "test modules importing other test modules: " + "; ".join(
        f"{name} imports {', '.join(sorted(others))}" for name, others in sorted(found.items())
    )


def test_the_import_check_sees_every_spelling(tmp_path: Path) -> None:
    spellings = {
        "test_a.py": "from tests.test_b import x\n",
        "test_b.py": "from .test_c import x\n",
        "test_c.py": "def f():\n    from . import test_a, helpers\n",
        "test_d.py": "import tests.test_a as a\n",
        "test_e.py": "from tests import test_d\n",
        "test_f.py": "from tests.helpers import ok\nfrom .conftest import ROOT\nimport tests\n",
        "test_g.py": "from .test_g import x\n",  # itself: not another
    }
    for name, text in spellings.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert modules_importing_others(tmp_path) == {
        "test_a.py": {"test_b"},
        "test_b.py": {"test_c"},
        "test_c.py": {"test_a"},
        "test_d.py": {"test_a"},
        "test_e.py": {"test_d"},
    }


def numba_loading(source: str) -> tuple[bool, list[int]]:
    """Whether ``source`` imports numba, and the lines of its ``except``
    clauses that catch an ImportError (or anything) around an import of
    numba or of a module of compiled loops (simindex._x), or around a call
    of a function of its own that makes one: a loader of its own."""
    tree = ast.parse(source)

    def loads(node: ast.AST) -> bool:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import) and any(
                a.name.split(".")[0] == "numba" or a.name.startswith("simindex._")
                for a in inner.names
            ):
                return True
            if isinstance(inner, ast.ImportFrom) and (
                (inner.module or "").split(".")[0] == "numba"
                or (inner.module or "").startswith("simindex._")
                or (inner.module == "simindex" and any(a.name[0] == "_" for a in inner.names))
            ):
                return True
        return False

    loaders = {f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and loads(f)}
    imports_numba = any(
        (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "numba" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "numba")
        for n in ast.walk(tree)
    )
    caught = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        body = ast.Module(body=node.body, type_ignores=[])
        calls = {
            c.func.id
            for c in ast.walk(body)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        }
        if loads(body) or calls & loaders:
            for handler in node.handlers:
                what = ast.unparse(handler.type) if handler.type is not None else ""
                if not what or "ImportError" in what or "Exception" in what:
                    caught.append(handler.lineno)
    return imports_numba, caught


def test_compiled_code_has_one_loader() -> None:
    """simindex.compiling loads compiled code for every user (the text pass,
    the all-pairs loops): numba is imported there and by the modules of
    loops it loads, and no other module catches numba's ImportError or a
    failed compile on its own."""
    found = {name: numba_loading(path.read_text("utf-8")) for name, path in modules().items()}
    importers = {name for name, (numba, _) in found.items() if numba}
    assert importers == {"simindex.compiling", "simindex._loops", "simindex._marks"}
    loaders = {name for name, (_, caught) in found.items() if caught}
    assert loaders == {"simindex.compiling"}


def test_the_loader_check_sees_a_loader_of_its_own() -> None:
    old = (  # as simindex.fastmarks loaded its loop before simindex.compiling did
        "def _loaded():\n"
        "    try:\n"
        "        return _compile()\n"
        "    except ImportError:\n"
        "        return None\n"
        "def _compile():\n"
        "    import numba\n"
        "    from simindex import _marks\n"
        "    return _marks.marks\n"
    )
    assert numba_loading(old) == (True, [4])
    inline = "try:\n    from simindex import _loops\nexcept Exception:\n    _loops = None\n"
    assert numba_loading(inline) == (False, [3])
    assert numba_loading("try:\n    import jieba\nexcept ImportError:\n    pass\n") == (False, [])


# The short-text rule (two exact sets one unit apart count as ONE_UNIT
# similar; the set keys that find them) lives in signature.py, where
# ``similarity`` needs it; every other module asks its functions (one_unit,
# one_unit_many, one_unit_reaches, keys_of_sets, KEYED_BYTES). The names below are the
# rule's numbers and its private parts; a module using one computes the rule
# again. Allowed, each for its reason:
SHORT_RULE = {"ONE_UNIT", "ONE_UNIT_SHARED", "_KEY_SALT", "_compare_sets", "one_unit_apart"}
SHORT_RULE_ELSEWHERE = {
    # explain's text tells a user the rule's numbers.
    "simindex.cli.tools": {"ONE_UNIT", "ONE_UNIT_SHARED"},
}


def rule_names(source: str) -> set[str]:
    """The names of SHORT_RULE that ``source`` uses (a name, an attribute or
    an import)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.name)
    return found & SHORT_RULE


def test_the_short_text_rule_is_written_once() -> None:
    """No module but signature.py uses the rule's numbers or builds set keys
    (those named in SHORT_RULE_ELSEWHERE only what is named there); and in
    signature.py one function makes set keys and one compares exact sets."""
    found = {
        name: used
        for name, path in modules().items()
        if name != "simindex.signature" and (used := rule_names(path.read_text(encoding="utf-8")))
    }
    extra = {
        name: used - SHORT_RULE_ELSEWHERE.get(name, set())
        for name, used in found.items()
        if used - SHORT_RULE_ELSEWHERE.get(name, set())
    }
    assert not extra, f"the short-text rule outside signature.py: {extra}"
    tree = ast.parse(modules()["simindex.signature"].read_text(encoding="utf-8"))
    users: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for name in rule_names(ast.unparse(node)) - {node.name}:
                users.setdefault(name, set()).add(node.name)
    assert users["_KEY_SALT"] == {"keys_of_sets"}  # the keys, computed once
    # The similarity of two exact sets: one pair, many pairs (compared case
    # by case in tests/test_signature.py); and the reader's shortcut.
    assert users["ONE_UNIT"] == {"_compare_sets", "one_unit_many", "one_unit_reaches"}


def test_the_short_rule_check_sees_every_spelling() -> None:
    spellings = (
        "from simindex.signature import ONE_UNIT\n",
        "from simindex import signature\nx = signature.ONE_UNIT_SHARED\n",
        "import simindex.signature as s\nk = s._KEY_SALT\n",
        "from simindex.signature import one_unit_apart as close\n",
    )
    for source in spellings:
        assert rule_names(source), source
    assert not rule_names("from simindex.signature import one_unit, keys_of_sets\n")


FORM_BYTES = {"ORDERED", "CJK", "MIDDLE", "MIDDLE_CJK"}  # signature.py's bytes after a set


def test_a_signature_s_form_is_told_in_one_place() -> None:
    """What a signature holds is read from its bytes by signature.form's
    table alone (_form_table); two functions of signature.py write the
    bytes (_signature_of a text's, held_signature a held row's), and the
    compiled pass (_marks.py) writes the same numbers, held to the Python
    path by tests/test_fastmarks.py; no other module imports them."""
    users = {}
    tree = ast.parse(modules()["simindex.signature"].read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & FORM_BYTES
            if used:
                users[node.name] = used
    assert set(users) == {"_form_table", "_signature_of", "held_signature"}, users
    assert users["_form_table"] == FORM_BYTES
    for name, path in modules().items():
        if name == "simindex.signature":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("signature"):
                assert not {a.name for a in node.names} & FORM_BYTES, (name, node.module)
            if isinstance(node, ast.Attribute) and node.attr in FORM_BYTES:
                assert not (isinstance(node.value, ast.Name) and node.value.id == "signature"), name


def test_the_layouts_are_searched_in_one_place() -> None:
    """Every choice of a layout of even blocks (a new index's lookups, a held
    query's tables, a batch's, all pairs') is blocks.cheapest with its own
    cost; costs.advise lists them all for a user (it chooses none)."""
    loops = set()
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef):
                for node in ast.walk(func):
                    if isinstance(node, ast.For) and "BITS // 4" in ast.unparse(node.iter):
                        loops.add((name, func.name))
    assert loops == {("simindex.blocks", "cheapest"), ("simindex.costs", "advise")}


def test_listeners_are_kept_in_one_place() -> None:
    """Whoever tells listeners (simindex.waits, simindex.compiling) keeps
    them in a simindex.listeners.Listeners: no other module defines its own
    listen / unlisten."""
    defined = set()
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("listen", "unlisten"):
                defined.add(name)
    assert defined == {"simindex.listeners"}


def test_sqlite_s_result_codes_are_read_in_one_place() -> None:
    """An error's SQLite result code is read by storage.location.sqlite_code
    alone (the busy, read-only and damage tests and the file check ask it)."""
    readers = set()
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr"):
                continue
            named = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if "sqlite_errorcode" in named:
                readers.add(name)
    assert readers == {"simindex.storage.location"}


def test_a_layout_s_lookups_are_enumerated_in_one_place() -> None:
    """The values within a radius of a table's bits are enumerated by
    blocks._probes alone (blocks.table_flips gives them as XORs): no other
    function makes combinations of bits."""
    makers = set()
    for name, path in modules().items():
        for func in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(func, ast.FunctionDef):
                for node in ast.walk(func):
                    if (
                        isinstance(node, ast.Call)
                        and ast.unparse(node.func) == "combinations"
                        and "range" not in ast.unparse(node.args[0])  # (blocks, not bits)
                    ):
                        makers.add((name, func.name))
    assert makers == {("simindex.blocks", "_probes")}
