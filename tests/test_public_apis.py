"""Shipped code uses only the public, documented APIs of the packages it depends on.

Every module of the shipped packages (not tests, bench or migrations) is read with `ast`. Offences:

- an import from another package (standard library included) of a module path with a component
  starting with `_`, of a name starting with `_`, or of a module or name known to be internal
  (`INTERNAL_MODULES`, `INTERNAL_NAMES`: the ORM's query compiler, a database backend's innards,
  gunicorn's HTTP layer, botocore's event-stream parser...);
- an attribute `x._name` (or `getattr(x, "_name")`, `setattr`, `hasattr`) whose `_name` our own
  code never defines (a function, class, module variable, class attribute or `self._name = `):
  another package's private name, or state stashed on another class's objects. Django documents `Model._meta` and the model's
  `_default_manager` / `_base_manager`; namedtuple documents its `_asdict`, `_replace`, `_fields`.

Our own modules keep to the same rule among themselves: one shipped module does not import another's
underscore names (what two modules share is public in one of them).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("config", "accounts", "agent", "blog", "connectors")
PROJECT = {*SHIPPED, "tests", "bench", "manage"}

DOCUMENTED_PRIVATE_NAMES = {
    "_meta",  # Django's Model._meta API
    "_default_manager",  # Django: Model._default_manager
    "_base_manager",  # Django: Model._base_manager
    "_asdict",  # collections.namedtuple
    "_replace",
    "_fields",
    "_make",
    "_field_defaults",
}

# Modules that are a package's internals, whatever they export.
INTERNAL_MODULES = (
    "django.db.models.sql",  # the ORM's query building and compiler
    "django.db.models.fields.related_descriptors",
    "django.db.backends.utils",
    "gunicorn.http",  # gunicorn's request parsing and response writing
    "gunicorn.workers",
    "gunicorn.util",
    "django.contrib.admin.utils",  # the admin's own helpers (`unquote`, `quote`...), undocumented
)
# A database backend's modules other than `base` (operations, compiler, features, schema...).
INTERNAL_BACKEND_MODULE = re.compile(r"^django\.db\.backends\.\w+\.(?!base$)\w+")
# Names of otherwise public modules that are internals.
INTERNAL_NAMES = {
    "django.db.models.query": {
        "get_related_populators",
        "RelatedPopulator",
        "BaseIterable",
        "ModelIterable",
        "RawModelIterable",
        "ValuesIterable",
        "ValuesListIterable",
        "NamedValuesListIterable",
        "FlatValuesListIterable",
    },
    "django.utils.functional": {"empty"},  # the lazy objects' unset marker (their `_wrapped`)
}
# From a backend's `base` module only the wrapper class, which documented custom backends subclass.
BACKEND_BASE = re.compile(r"^django\.db\.backends\.\w+\.base$")


def shipped_files() -> list[Path]:
    files = []
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                files.append(path)
    return files


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_names(trees: list[ast.Module]) -> set[str]:
    """Every name our own code defines: functions, classes, variables, and `self._x = ...` attributes."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
            ):
                names.add(node.attr)
    return names


def import_offences(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from module_offences(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from module_offences(node.lineno, node.module)
            if node.module.split(".")[0] in PROJECT:
                continue
            for alias in node.names:
                if is_private(alias.name):
                    yield node.lineno, f"imports private name {alias.name!r} from {node.module}"
                elif alias.name in INTERNAL_NAMES.get(node.module, ()):
                    yield node.lineno, f"imports internal name {alias.name!r} from {node.module}"
                elif BACKEND_BASE.match(node.module) and alias.name != "DatabaseWrapper":
                    yield node.lineno, f"imports {alias.name!r} from a database backend's internals ({node.module})"


def module_offences(lineno: int, module: str) -> Iterator[tuple[int, str]]:
    if module.split(".")[0] in PROJECT:
        return
    if any(is_private(part) for part in module.split(".")):
        yield lineno, f"imports private module {module}"
    elif any(module == m or module.startswith(m + ".") for m in INTERNAL_MODULES) or INTERNAL_BACKEND_MODULE.match(
        module
    ):
        yield lineno, f"imports internal module {module}"


def attribute_offences(tree: ast.Module, ours: set[str]) -> Iterator[tuple[int, str]]:
    allowed = ours | DOCUMENTED_PRIVATE_NAMES
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr) and node.attr not in allowed:
            yield node.lineno, f"private attribute .{node.attr} (no class of ours defines it)"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and is_private(node.args[1].value)
            and node.args[1].value not in allowed
        ):
            yield node.lineno, f"private attribute {node.args[1].value!r} by name (no class of ours defines it)"


def offences(package: str) -> list[str]:
    files = shipped_files()
    trees = {path: parse(path) for path in files}
    ours = defined_names(list(trees.values()))
    found = []
    for path, tree in trees.items():
        if path.relative_to(ROOT).parts[0] != package:
            continue
        for lineno, message in sorted({*import_offences(tree), *attribute_offences(tree, ours)}):
            found.append(f"{path.relative_to(ROOT)}:{lineno}: {message}")
    return found


@pytest.mark.parametrize("package", SHIPPED)
def test_shipped_code_uses_only_public_apis(package):
    found = offences(package)
    print("\n".join(found))
    assert found == [], f"{len(found)} uses of private or internal APIs in {package}/:\n" + "\n".join(found)


def check(source: str, ours: str = "") -> list[str]:
    tree = ast.parse(source)
    defined = defined_names([ast.parse(ours)])
    return [message for _, message in sorted({*import_offences(tree), *attribute_offences(tree, defined)})]


def test_the_scan_finds_private_and_internal_imports():
    assert check("from django.db.models.sql.compiler import SQLInsertCompiler") == [
        "imports internal module django.db.models.sql.compiler"
    ]
    assert check("from django.db.models.query import get_related_populators, QuerySet") == [
        "imports internal name 'get_related_populators' from django.db.models.query"
    ]
    assert check("from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX, DatabaseWrapper") == [
        "imports 'FORMAT_QMARK_REGEX' from a database backend's internals (django.db.backends.sqlite3.base)"
    ]
    assert check("import httpx._transports") == ["imports private module httpx._transports"]
    assert check("from gevent import _abstract_linkable") == ["imports private name '_abstract_linkable' from gevent"]
    assert (
        check("from botocore.eventstream import EventStream, ParserError") == []
    )  # documented in botocore's reference
    assert check("from agent.loop import _relay\nfrom django.db import models") == []


def test_the_scan_finds_private_attributes_of_other_packages_only():
    assert check("qs._result_cache = None") == ["private attribute ._result_cache (no class of ours defines it)"]
    assert check("getattr(pool, '_check', None)") == [
        "private attribute '_check' by name (no class of ours defines it)"
    ]
    assert check("obj._state.adding") == ["private attribute ._state (no class of ours defines it)"]
    assert check("model._meta.get_field('x'); model._default_manager.all()") == []
    assert check("self._seen.add(1)", ours="class A:\n    def __init__(self):\n        self._seen = set()") == []
    assert check("pool._check = f") == [
        "private attribute ._check (no class of ours defines it)"
    ]  # assigning it on another object defines nothing
    assert check("x.__class__.__name__") == []


def own_private_imports(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in SHIPPED:
                for alias in node.names:
                    if is_private(alias.name):
                        yield node.lineno, f"imports {node.module}'s private name {alias.name!r}"


def test_shipped_modules_import_no_private_names_of_each_other():
    found = [
        f"{path.relative_to(ROOT)}:{lineno}: {message}"
        for path in shipped_files()
        for lineno, message in own_private_imports(parse(path))
    ]
    assert found == [], "\n".join(found)
    assert [m for _, m in own_private_imports(ast.parse("from agent.loop import _relay, run_agent"))] == [
        "imports agent.loop's private name '_relay'"
    ]
