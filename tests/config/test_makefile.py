"""The Makefile's install step (`make run`, `make test`: README, "The two commands") on a fresh machine."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Stands in for `python3`: `-m venv [--clear] DIR` makes DIR/bin/pip, a pip that accepts anything.
FAKE_PYTHON = f"""#!{sys.executable}
import os, sys
assert sys.argv[1:3] == ["-m", "venv"], sys.argv
target = sys.argv[-1]
os.makedirs(os.path.join(target, "bin"), exist_ok=True)
with open(os.path.join(target, "bin", "pip"), "w") as f:
    f.write("#!/bin/sh\\nexit 0\\n")
os.chmod(os.path.join(target, "bin", "pip"), 0o755)
with open("venv-made", "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_virtualenv_left_without_pip_is_made_again(tmp_path):
    """(On Debian or Ubuntu without `python3-venv`, `python3 -m venv .venv` fails for want of ensurepip but
    leaves `.venv/bin/python`. Once the package was installed, `make run` saw that python, made no venv,
    and failed at `.venv/bin/pip: No such file or directory`, every time, until .venv was removed.)"""
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    for name in ("requirements.txt", "requirements-dev.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)  # the half-made venv: no pip
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)

    result = subprocess.run(
        ["make", "install", f"PYTHON={fake}"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "venv-made").read_text() == "-m venv --clear .venv\n"
    assert (tmp_path / ".venv" / ".installed").exists()
