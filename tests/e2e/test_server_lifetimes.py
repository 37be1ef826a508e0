"""How long the browser tests' servers live: a module's own stop when the module ends; the demo servers last the package.

An inner pytest run uses this package's conftest with `ServerGroup.start` replaced by a stand-in that
records what happens to each server (started, stopped, database dropped), so no real server starts.
"""

from __future__ import annotations

import signal
import subprocess
from typing import cast

import pytest

from tests.servers import Database, Server, ServerGroup

pytest_plugins = ["pytester"]

EVENTS: list[tuple[str, str]] = []


class RecordedProcess:
    """Stands in for a server's gunicorn: `Server.stop` signals it, which is recorded."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        EVENTS.append(("stop", self.label))
        self.returncode = -sig

    def wait(self, timeout: float | None = None) -> int:
        return -signal.SIGINT if self.returncode is None else self.returncode


class RecordedDatabase(Database):
    label: str = ""

    def drop(self) -> None:
        if not self.dropped:
            EVENTS.append(("drop", self.label))
        self.dropped = True


def recording_start(
    self: ServerGroup, name: str, overrides: dict[str, str], database: Database | None = None
) -> Server:
    label = f"{name}#{sum(1 for event, what in EVENTS if event == 'start' and what.split('#')[0] == name) + 1}"
    EVENTS.append(("start", label))
    db = RecordedDatabase(url=f"fake://{label}")
    db.label = label
    process = cast(subprocess.Popen, RecordedProcess(label))
    server = Server(name, "http://127.0.0.1:9", process, self.workdir / f"server-{name}.log", db, dict(overrides))
    self.servers.append(server)
    return server


MODULE_A = """
def test_the_same_name_and_env_reuse_one_server(server_factory, demo_server):
    assert server_factory("own", X="1") is server_factory("own", X="1")
    assert server_factory("own", X="2") is not server_factory("own", X="1")

def test_a_later_test_of_the_module_gets_it_too(server_factory, demo_server, slow_demo_server):
    assert server_factory("own", X="1").process.poll() is None
"""

MODULE_B = """
def test_another_module_starts_its_own(server_factory, demo_server):
    assert server_factory("own", X="1").process.poll() is None
    assert demo_server.process.poll() is None
"""


def test_a_modules_servers_stop_and_drop_their_databases_when_it_ends_the_demo_servers_when_the_package_does(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    EVENTS.clear()
    monkeypatch.setattr(ServerGroup, "start", recording_start)
    package = pytester.mkpydir("browser")
    (package / "conftest.py").write_text("from tests.e2e.conftest import *  # noqa: F403\n")
    (package / "test_a.py").write_text(MODULE_A)
    (package / "test_b.py").write_text(MODULE_B)
    (pytester.path / "test_after.py").write_text("def test_after():\n    pass\n")

    result = pytester.runpytest_inprocess("-p", "no:django", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=4)

    assert EVENTS == [
        ("start", "demo#1"),
        ("start", "own#1"),
        ("start", "own#2"),
        ("start", "demo-slow#1"),
        # test_a.py ends: its own two servers stop, newest first, and their databases go
        ("stop", "own#2"),
        ("drop", "own#2"),
        ("stop", "own#1"),
        ("drop", "own#1"),
        ("start", "own#3"),  # test_b.py: the same name and env, a server of its own
        ("stop", "own#3"),
        ("drop", "own#3"),
        # the package ends (before test_after.py): the shared demo servers stop
        ("stop", "demo-slow#1"),
        ("drop", "demo-slow#1"),
        ("stop", "demo#1"),
        ("drop", "demo#1"),
    ]
