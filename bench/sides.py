"""The two trees one run measures side by side: the baseline ("old") and the current tree ("new").

The old tree is a git worktree of the baseline ref, made for the run in a temporary directory and
removed after it. The current tree's `bench/` is copied over the old tree's, so both sides are
measured by the same bench code and differ only in the project's code; each side's servers and
in-process measurements run with that tree as their working directory and PYTHONPATH, so the two
never meet in one interpreter. Both use this interpreter (the same venv).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT

BASELINE_FILE = ROOT / "bench" / "baseline.txt"


@dataclass(frozen=True)
class Tree:
    side: str  # "old" or "new"
    path: Path
    commit: str  # short hash, "+ changes" when the work tree differs from it
    subject: str


def baseline_ref(given: str | None = None) -> str:
    """`--baseline`, else BENCH_BASELINE, else the ref in bench/baseline.txt."""
    if given or os.environ.get("BENCH_BASELINE"):
        return given or os.environ["BENCH_BASELINE"]
    lines = [ln.strip() for ln in BASELINE_FILE.read_text().splitlines()]
    return next(ln for ln in lines if ln and not ln.startswith("#"))


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def describe(path: Path, side: str) -> Tree:
    commit = _git("rev-parse", "--short", "HEAD", cwd=path)
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no", cwd=path))
    subject = _git("log", "-1", "--format=%s", cwd=path)
    return Tree(side, path, commit + (" + changes" if dirty else ""), subject)


def order(i: int, items: tuple) -> tuple:
    """`items` in turn forwards and backwards, so a drift of the host's speed hits every side alike."""
    return items if i % 2 == 0 else items[::-1]


@contextlib.contextmanager
def trees(ref: str) -> Iterator[tuple[Tree, Tree]]:
    """(old, new): a worktree of `ref` with this tree's bench code and venv, and this tree."""
    commit = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    path = tmp / "tree"
    _git("worktree", "add", "--detach", "--quiet", str(path), commit)
    try:
        shutil.copytree(
            ROOT / "bench",
            path / "bench",
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("results", "__pycache__"),
        )
        venv = Path(sys.prefix)
        if not (path / ".venv").exists():
            (path / ".venv").symlink_to(venv, target_is_directory=True)
        old = Tree("old", path, commit[:9], _git("log", "-1", "--format=%s", commit))
        yield old, describe(ROOT, "new")
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            _git("worktree", "remove", "--force", str(path))
        shutil.rmtree(tmp, ignore_errors=True)
