"""The README and the code in step, cheaply: every variable the deploy layer reads from the environment
is named in the README, every variable of its "Configuration" table is read by the shipped code, each
default the table gives as one value is the one the settings take with nothing set, and every
`make <target>` it tells you to run is a target of the Makefile."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# What reads the process's environment when the site starts: the settings, gunicorn's configuration
# and `python -m config.serve` (the Procfile's `web`, `make run`).
DEPLOY_LAYER = ("config/settings.py", "config/gunicorn.conf.py", "config/serve.py")
SHIPPED = ("accounts", "agent", "blog", "config", "connectors")
NAME = re.compile(r"[A-Z][A-Z0-9_]*")
READERS = {"getenv", "env_bool", "env_int", "env_float", "count_from_env"}  # (and `<…environ>.get`)


def env_names(path: Path) -> set[str]:
    """The environment variables `path` reads by name: `os.environ.get("X")`, `environ["X"]`,
    `os.getenv("X")`, and the settings' and gunicorn's readers (`env_int("X", …)`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            on_environ = isinstance(func, ast.Attribute) and ast.unparse(func.value).endswith("environ")
            if called in READERS or (called == "get" and on_environ):
                args = node.args
            else:
                continue
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("environ"):
            args = [node.slice]
        else:
            continue
        names |= {
            a.value
            for a in args
            if isinstance(a, ast.Constant) and isinstance(a.value, str) and NAME.fullmatch(a.value)
        }
    return names


def configuration_table() -> dict[tuple[str, ...], str]:
    """The README's table of variables: the names of each row, and its default cell."""
    section = README.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[tuple(re.findall(r"`([A-Z][A-Z0-9_]*)`", cells[0]))] = cells[1]
    return rows


def test_the_reader_finds_every_form_the_deploy_layer_uses():
    found = set().union(*(env_names(ROOT / path) for path in DEPLOY_LAYER))
    # One of each form: os.environ.get, env_int/env_float/env_bool, environ[...] and environ.get in
    # media_storage, count_from_env in gunicorn.conf.py, environ.get in serve.py.
    assert {"DATABASE_URL", "AGENT_MAX_TOKENS", "AGENT_STOP_POLL_SECONDS", "DEBUG", "AGENT_MEDIA_S3_BUCKET"} <= found
    assert {"AGENT_MEDIA_S3_ACCESS_KEY_ID", "WORKER_CONNECTIONS", "WEB_CONCURRENCY", "PORT", "BIND"} <= found


def test_every_variable_the_deploy_layer_reads_is_named_in_the_readme():
    unnamed = {
        f"{name} ({path})" for path in DEPLOY_LAYER for name in env_names(ROOT / path) if f"`{name}`" not in README
    }
    assert not unnamed, f"read from the environment but never named in README.md: {sorted(unnamed)}"


def test_every_variable_of_the_configuration_table_is_read_by_the_code():
    read = set().union(*(env_names(path) for package in SHIPPED for path in (ROOT / package).rglob("*.py")))
    named = {name for names in configuration_table() for name in names}
    assert len(named) > 60, "the table was not found"
    assert not named - read, f"named in the README's table but read nowhere: {sorted(named - read)}"


def test_each_single_default_of_the_table_is_the_settings_default():
    """A default cell that is one value (`20`, `demo`, `127.0.0.1,localhost`, unset, empty) is what the
    settings hold with none of these variables set and DEBUG off."""
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: getattr(s, k) for k in dir(s) if k.isupper()}, default=str))"
    )
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    env = {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "SECRET_KEY": "readme-defaults"}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    settings = json.loads(result.stdout.strip().splitlines()[-1])
    compared, wrong = 0, []
    for names, cell in configuration_table().items():
        if len(names) != 1 or names[0] not in settings:
            continue  # (several variables in a row, or no Django setting of that name: gunicorn's, S3's)
        value, one = settings[names[0]], re.fullmatch(r"`([^`]*)`", cell)
        if cell in ("unset", "empty"):
            ok = not value
        elif not one:
            continue  # (a default in words: "per backend", "`1` when `DEBUG` is off")
        elif isinstance(value, bool):
            ok = one[1] == ("1" if value else "0")
        elif isinstance(value, int | float):
            ok = float(one[1]) == value
        elif isinstance(value, list):
            ok = one[1] == ",".join(value)
        else:
            ok = one[1] == value
        compared += 1
        if not ok:
            wrong.append(f"{names[0]}: README {cell}, settings {value!r}")
    assert compared > 40, "the table's defaults were not found"
    assert not wrong, wrong


def test_every_make_target_the_readme_names_is_the_makefiles():
    blocks = re.findall(r"```.*?```", README, re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", README, flags=re.S))
    named = {t for code in blocks + spans for t in re.findall(r"(?:^|[\s;&(])make ([a-z][a-z0-9-]*)", code, re.M)}
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M))
    assert {"run", "test", "lint"} <= named
    assert not named - targets, f"the README runs make targets the Makefile does not have: {sorted(named - targets)}"
