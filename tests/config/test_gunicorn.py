"""gunicorn as deployed (`config/gunicorn.conf.py`): a misconfigured site is refused when it starts,
in one sentence, not on a person's first message (README, "Configuration")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.servers import ROOT, free_port, server_env


def serve(tmp_path, **env: str) -> subprocess.Popen:
    """gunicorn as the README runs it, on a free loopback port, its output in `tmp_path/log`."""
    values = {"DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "MEDIA_ROOT": str(tmp_path), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.conf.py"],
        cwd=ROOT,
        env={**server_env(**values), "BIND": f"127.0.0.1:{free_port()}"},
        stdout=(tmp_path / "log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_gunicorn_refuses_to_serve_a_misconfigured_site_saying_why(tmp_path):
    # (It served every page, and the first message's turn failed with chat_error.)
    server = serve(tmp_path, AGENT_BACKEND="nope")
    try:
        returncode = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)  # (the session it was started in: gunicorn and its worker)
        server.wait()
        returncode = None
    log = (tmp_path / "log").read_text()
    assert returncode == 3, log  # gunicorn's "Worker failed to boot"
    assert (
        "(agent.E001) AGENT_BACKEND must be one of anthropic, bedrock, demo, fake, openai, openai-responses; "
        "got 'nope'." in log
    )
