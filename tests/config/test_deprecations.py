"""Deprecations fail the suite (pyproject.toml, `filterwarnings`), and the servers the tests start.

An inner pytest run under the project's own `filterwarnings` (read from pyproject.toml) holds tests that
each raise one kind of deprecation, as our code or Django would; each must fail. A server's environment
(`tests.servers.server_env`) makes the same warnings errors in the processes the tests start.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.servers import server_env

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

INNER = """
import warnings

from django.utils.deprecation import RemovedAfterNextVersionWarning, RemovedInNextVersionWarning


def test_our_deprecated_call():
    warnings.warn("our own deprecated call", DeprecationWarning, stacklevel=1)


def test_our_pending_deprecation():
    warnings.warn("our own pending deprecation", PendingDeprecationWarning, stacklevel=1)


def test_django_warns_from_its_own_module():
    # What Django does about our usage: its RemovedInDjangoNNWarning, often attributed to a django.* frame.
    warnings.warn_explicit(
        "django, next version", RemovedInNextVersionWarning, "fields.py", 1, module="django.forms.fields"
    )


def test_django_warns_of_the_version_after():
    warnings.warn_explicit(
        "django, version after", RemovedAfterNextVersionWarning, "base.py", 1, module="django.db.models.base"
    )


def test_a_library_warns_from_its_own_module():
    warnings.warn_explicit("a library's own", DeprecationWarning, "client.py", 1, module="somelib.client")


def test_nothing_deprecated():
    warnings.warn("not a deprecation", UserWarning, stacklevel=1)
"""


def project_filters() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["pytest"]["ini_options"]["filterwarnings"]


def test_every_deprecation_fails_a_test_under_the_projects_filters(pytester: pytest.Pytester) -> None:
    filters = ", ".join(json.dumps(entry) for entry in project_filters())
    pytester.makepyprojecttoml(f"[tool.pytest.ini_options]\nfilterwarnings = [{filters}]\n")
    pytester.makepyfile(test_inner=INNER)

    result = pytester.runpytest_inprocess("-p", "no:django", "-p", "no:cacheprovider", "-p", "no:randomly")

    result.assert_outcomes(failed=5, passed=1, warnings=1)
    result.stdout.fnmatch_lines_random(
        [
            "E * DeprecationWarning: our own deprecated call",
            "E * PendingDeprecationWarning: our own pending deprecation",
            "E * django.utils.deprecation.RemovedIn*Warning: django, next version",
            "E * django.utils.deprecation.RemovedIn*Warning: django, version after",
            "E * DeprecationWarning: a library's own",
            "*UserWarning: not a deprecation",
        ]
    )


@pytest.mark.parametrize("category", ["DeprecationWarning", "PendingDeprecationWarning"])
def test_a_server_process_fails_on_a_deprecation(category: str) -> None:
    warn = f"import warnings; warnings.warn('deprecated in a server', {category}); print('went on')"
    done = subprocess.run([sys.executable, "-c", warn], env=server_env(), capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert f"{category}: deprecated in a server" in done.stderr
    assert "went on" not in done.stdout


def test_a_process_a_test_starts_itself_fails_on_a_deprecation() -> None:
    """Not only servers (`server_env`): a child started with the test process's own environment too."""
    warn = "import warnings; warnings.warn('deprecated in a child', DeprecationWarning); print('went on')"
    done = subprocess.run([sys.executable, "-c", warn], capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert "DeprecationWarning: deprecated in a child" in done.stderr
    assert "went on" not in done.stdout
