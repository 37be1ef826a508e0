"""gunicorn as deployed (`config/gunicorn.conf.py`): a misconfigured site is refused when it starts,
in one sentence, not on a person's first message (README, "Configuration")."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.servers import ROOT, free_port, manage, server_env


def serve(tmp_path, app: str = "config.wsgi", port: int = 0, **env: str) -> subprocess.Popen:
    """gunicorn as the README runs it, on a free loopback port, its output in `tmp_path/log`."""
    values = {"DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "MEDIA_ROOT": str(tmp_path), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", app, "-c", "config/gunicorn.conf.py"],
        cwd=ROOT,
        env={**server_env(**values), "BIND": f"127.0.0.1:{port or free_port()}"},
        stdout=(tmp_path / "log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(server: subprocess.Popen) -> int | None:
    """Stop a server that may still run: the session it was started in (gunicorn and its worker)."""
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        return None
    return server.returncode


def refused(tmp_path, **env: str) -> str:
    """The log of a gunicorn that refused to serve (`serve` with `env`): it stopped as a worker that
    failed to boot stops it."""
    server = serve(tmp_path, **env)
    try:
        returncode = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        returncode = stop(server)
    log = (tmp_path / "log").read_text()
    assert returncode == 3, log  # gunicorn's "Worker failed to boot"
    return log


def test_gunicorn_refuses_to_serve_a_misconfigured_site_saying_why(tmp_path):
    # (It served every page, and the first message's turn failed with chat_error.)
    log = refused(tmp_path, AGENT_BACKEND="nope")
    sentence = (
        "(agent.E001) AGENT_BACKEND must be one of anthropic, bedrock, demo, fake, openai, openai-responses; "
        "got 'nope'."
    )
    assert log.count(sentence) == 1, log
    # The checks' report alone: no traceback of gunicorn's hook before it (it came first, and the
    # sentence twice).
    assert "Traceback" not in log, log
    assert "[ERROR] SystemCheckError: System check identified some issues:" in log


def test_uncollected_static_files_are_said_in_the_checks_sentence_alone(tmp_path):
    """(WhiteNoise warns `No directory at: …/` as the app loads: the log began with that warning and a
    line of Django's source it was attributed to, before the check's sentence said what to do.)"""
    log = refused(
        tmp_path,
        DEBUG="0",
        SECRET_KEY="a-test-secret-key-that-is-long-enough-0123456789",
        DJANGO_SETTINGS_MODULE="tests.reliability.server_settings",
        RELIABILITY_STATIC_ROOT=str(tmp_path / "static"),  # (not there: collectstatic never ran)
    )
    assert log.count("(config.E001) Static files are not collected") == 1, log
    assert "run `python manage.py collectstatic --noinput`" in log
    assert "No directory at" not in log and "Warning" not in log, log


def test_a_warning_raised_as_the_app_loads_is_one_line_of_the_log(tmp_path):
    server = serve(tmp_path, "tests.config.warning_app:application")
    try:
        deadline = time.monotonic() + 30
        while server.poll() is None and time.monotonic() < deadline:
            if "Booting worker" in (tmp_path / "log").read_text() and "UserWarning" in (tmp_path / "log").read_text():
                break
            time.sleep(0.1)
    finally:
        stop(server)
    log = (tmp_path / "log").read_text()
    lines = [line for line in log.splitlines() if "something the operator should know" in line]
    assert len(lines) == 1, log
    assert lines[0].endswith("[WARNING] UserWarning: loading this app: something the operator should know"), log
    assert "warnings.warn(" not in log, log  # (not the source line Python's own display adds)


def test_the_same_configuration_serves_an_app_that_is_not_django(tmp_path):
    """bench/bare_app.py (the benchmarks' physical limit) runs with this gunicorn.conf.py: no checks there."""
    port = free_port()
    server = serve(tmp_path, "bench.bare_app:application", port, DJANGO_SETTINGS_MODULE="config.settings")
    try:
        deadline, answer = time.monotonic() + 30, None
        while server.poll() is None and time.monotonic() < deadline:
            try:
                answer = httpx.post(f"http://127.0.0.1:{port}/api/agent/sessions/s/messages", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert server.poll() is None, (tmp_path / "log").read_text()
        assert answer is not None and answer.status_code == 202
    finally:
        stop(server)


def procfile_web(tmp_path, **env: str) -> subprocess.CompletedProcess:
    """The Procfile's `web` command as a platform runs it (its `python` this test's), stopped after 20 s."""
    (web,) = [
        line.removeprefix("web:").split()
        for line in (ROOT / "Procfile").read_text().splitlines()
        if line.startswith("web:")
    ]
    command = [sys.executable if word == "python" else word for word in web]
    values = {"DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "MEDIA_ROOT": str(tmp_path), **env}
    try:
        return subprocess.run(
            command,
            cwd=ROOT,
            env={"BIND": f"127.0.0.1:{free_port()}", **server_env(**values)},
            capture_output=True,
            text=True,
            timeout=20,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{shlex.join(command)} kept running: {e.stderr!r}") from None


@pytest.mark.parametrize("value", ["abc", "0", "-1", "1.5"])
def test_a_worker_count_that_is_no_count_stops_the_start_in_one_sentence(tmp_path, value):
    # (gunicorn reads WEB_CONCURRENCY as it is imported: `abc` failed there with its own traceback; `0`
    # started a master that served nothing.)
    started = procfile_web(tmp_path, WEB_CONCURRENCY=value)
    assert started.returncode == 1
    assert started.stderr == f"WEB_CONCURRENCY must be a whole number of worker processes, 1 or more; got {value!r}.\n"


@pytest.mark.parametrize(
    ("env", "sentence"),
    [
        ({"BIND": "127.0.0.1:99999"}, "BIND's port must be 0 to 65535; got '127.0.0.1:99999'."),
        ({"BIND": "", "PORT": "99999"}, "PORT must be a port number, 0 to 65535; got '99999'."),
        ({"BIND": "", "PORT": "http"}, "PORT must be a port number, 0 to 65535; got 'http'."),
    ],
)
def test_a_port_out_of_range_stops_the_start_in_one_sentence(tmp_path, env, sentence):
    # (gunicorn took it, then failed to bind with a traceback of gevent's: `OverflowError: bind(): port must
    # be 0-65535`.)
    started = procfile_web(tmp_path, **env)
    assert started.returncode == 1
    assert started.stderr == sentence + "\n"


def test_gunicorn_run_directly_with_its_configuration_refuses_no_workers_in_one_sentence(tmp_path):
    server = serve(tmp_path, WEB_CONCURRENCY="0", WORKER_CONNECTIONS="many")
    try:
        returncode = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        returncode = stop(server)
    assert returncode == 1
    assert (tmp_path / "log").read_text() == (
        "WEB_CONCURRENCY must be a whole number of worker processes, 1 or more; got '0'.\n"
    )


def test_a_blank_worker_count_is_the_default(tmp_path):
    port = free_port()
    values = {"DEBUG": "1", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "MEDIA_ROOT": str(tmp_path)}
    manage(server_env(**values), tmp_path / "migrate.log", "migrate", "--noinput")  # (else /healthz says 503)
    server = subprocess.Popen(
        [sys.executable, "-m", "config.serve"],
        cwd=ROOT,
        env={**server_env(**values, WEB_CONCURRENCY=" "), "BIND": f"127.0.0.1:{port}"},
        stdout=(tmp_path / "log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline, answer = time.monotonic() + 30, None
        while server.poll() is None and time.monotonic() < deadline:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert answer is not None and answer.status_code == 200, (tmp_path / "log").read_text()
    finally:
        stop(server)


def test_a_setting_refused_as_the_settings_load_is_one_sentence_without_a_traceback(tmp_path):
    """(A value config/settings.py refuses, `DEBUG=maybe` say, stopped the start, but the log showed
    gunicorn's traceback of the worker's import of the app, through Django's, before the sentence.)"""
    server = serve(tmp_path, LOG_LEVEL="loud")
    try:
        returncode = server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        returncode = stop(server)
    log = (tmp_path / "log").read_text()
    assert returncode == 4, log  # gunicorn's "App failed to load": the master stops, no worker is started again
    assert "Traceback" not in log, log
    assert log.count("LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got 'LOUD'.") == 1, log
