"""`config.checks`: what would make the served site fail, said in one sentence."""

from __future__ import annotations

import pytest

from config.checks import static_files_collected

MANIFEST = {"staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}}


@pytest.fixture
def served(settings, tmp_path):
    """The static files' settings with DEBUG off, collected into a folder of the test's own."""
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {**settings.STORAGES, **MANIFEST}
    return tmp_path


def test_static_files_never_collected_are_said_so(served):
    (error,) = static_files_collected()
    assert error.id == "config.E001"
    assert error.msg.startswith("Static files are not collected, so with DEBUG off every page would answer 500")


def test_static_files_collected_with_debug_on_are_told_apart(served):
    """(`collectstatic` with DEBUG on, say at a build that has no SECRET_KEY, copies the files but writes no
    manifest: the check then said "not collected, run collectstatic", which the operator had just done.)"""
    (served / "css").mkdir()
    (served / "css" / "site.css").write_text("body {}")
    (error,) = static_files_collected()
    assert error.id == "config.E001"
    assert error.msg == (
        "Static files were collected without their manifest (staticfiles.json), as `collectstatic` does with "
        "DEBUG on, so with DEBUG off every page would answer 500: run `python manage.py collectstatic --noinput` "
        "again with DEBUG off (it needs a SECRET_KEY to load the settings; it signs nothing with it)."
    )


def test_static_files_collected_with_their_manifest_pass(served):
    (served / "staticfiles.json").write_text('{"paths": {}, "version": "1.1", "hash": ""}')
    assert static_files_collected() == []


REDIS_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://r:6379/1"}}


def test_several_workers_with_each_its_own_cache_are_warned_of(settings):
    """AGENT_EVENTS_URL is set for a site of several workers; with the cache left in each one's memory,
    the limits kept in it held per worker, silently."""
    from django.core import checks

    settings.AGENT_EVENTS_URL = "redis://:s3cret@redis.internal:6379/0"
    (warning,) = [m for m in checks.run_checks(tags=[checks.Tags.caches]) if m.id.startswith("config.")]
    assert (warning.id, warning.level) == ("config.W001", checks.WARNING)
    assert warning.msg == (
        "AGENT_EVENTS_URL is set but CACHE_URL is not, so Django's cache stays each worker's own memory: "
        "one export at a time a person, the client registrations per address (DCR_REGISTRATIONS_PER_HOUR) "
        "and the editor's preview budget hold per worker, not for the site, and each worker renders post "
        "bodies for itself. Set CACHE_URL=redis://host:6379/1 to share them."
    )


def test_a_shared_cache_or_a_single_worker_is_not_warned_of(settings):
    from config.checks import cache_shared_with_the_events

    settings.AGENT_EVENTS_URL = ""
    assert cache_shared_with_the_events() == []  # (one worker: the in-process bus, its own cache)
    settings.AGENT_EVENTS_URL = "redis://redis.internal:6379/0"
    settings.CACHES = REDIS_CACHE
    assert cache_shared_with_the_events() == []


# --- config.W002: the cache's Redis answers ---------------------------------------------------------------


@pytest.fixture
def cache_url(settings):
    """Set the cache as CACHE_URL would (`config.settings.cache_backend`, its timeouts included)."""
    from config.settings import cache_backend

    def use(url: str) -> None:
        settings.CACHES = {"default": cache_backend({"CACHE_URL": url})}

    return use


@pytest.fixture(autouse=True)
def cache_health():
    """This process's cache health (`config.cache.health`), answering before and after each test: a
    check that fails marks it down, which is not to last into the next test."""
    from config.cache import health

    health.reset()
    yield health
    health.reset()


def test_a_cache_redis_that_answers_is_not_warned_of(cache_url, redis_server, cache_health):
    from config.checks import cache_answers

    cache_url(redis_server.url)
    assert cache_answers() == []
    assert cache_health.answering()


def test_a_failed_check_leaves_the_cache_alone_a_moment_as_a_failed_request_does(cache_url, cache_health, caplog):
    """(The worker's boot had just found the cache's Redis away, and its first request that used the cache
    still waited out a connect timeout to find it again.) The check marks the process's cache as down."""
    import logging

    from config import cache as shared_cache
    from config.checks import cache_answers
    from tests.agent.backends.openai_server import closed_port

    cache_url(f"redis://:s3cret@127.0.0.1:{closed_port()}/1")
    with caplog.at_level(logging.WARNING, logger="config.cache"):
        (warning,) = cache_answers()
    assert warning.id == "config.W002"
    assert not cache_health.answering()
    assert shared_cache.get_if_answering("any", "testing") is None  # (not asked: nothing more logged)
    assert [r.getMessage() for r in caplog.records] == [
        "the cache does not answer (ConnectionError): checked at start-up (config.W002)"
    ]
    assert "s3cret" not in caplog.text


def test_a_cache_redis_that_refuses_its_password_is_left_alone_a_moment_too(cache_url, cache_health):
    from config.checks import cache_answers
    from tests.redis_server import RedisServer

    server = RedisServer(password="right-pass").start()
    try:
        cache_url(server.url.replace("right-pass", "wrong-pass"))
        (warning,) = cache_answers()
    finally:
        server.stop()
    assert "AuthenticationError" in warning.msg
    assert not cache_health.answering()


def test_a_cache_redis_that_does_not_answer_is_warned_of_without_its_url(cache_url):
    """(Nothing said so at start-up: a wrong host showed only in the log and in refused exports.)"""
    from django.core import checks

    from tests.agent.backends.openai_server import closed_port

    cache_url(f"redis://:s3cret@127.0.0.1:{closed_port()}/1")
    (warning,) = [m for m in checks.run_checks(tags=[checks.Tags.caches]) if m.id.startswith("config.")]
    assert (warning.id, warning.level) == ("config.W002", checks.WARNING)
    assert warning.msg == (
        "The Redis server of CACHE_URL does not answer (ConnectionError): until it does, exports and client "
        "registrations are refused, previews pause, and post bodies are rendered afresh for every page."
    )


def test_a_cache_redis_that_refuses_its_password_is_warned_of_without_it(cache_url, tmp_path):
    from config.checks import cache_answers
    from tests.redis_server import RedisServer

    server = RedisServer(password="right-pass").start()
    try:
        cache_url(server.url)
        assert cache_answers() == []  # (the right one passes)
        cache_url(server.url.replace("right-pass", "wrong-pass"))
        (warning,) = cache_answers()
    finally:
        server.stop()
    assert warning.id == "config.W002"
    assert warning.msg == (
        "The Redis server of CACHE_URL refuses its user or password (AuthenticationError): until it accepts "
        "them, exports and client registrations are refused, previews pause, and post bodies are rendered "
        "afresh for every page."
    )


def test_a_cache_redis_that_refuses_writes_is_warned_of_and_left_alone_a_moment(cache_url, cache_health):
    """A read-only replica answers reads, so a `get` alone passed it, and then every limit the cache keeps
    refused for the moment, request after request, with nothing said at start-up."""
    import redis

    from config.checks import cache_answers
    from tests.agent.backends.openai_server import closed_port
    from tests.redis_server import RedisServer

    server = RedisServer().start()
    try:
        cache_url(server.url)
        assert cache_answers() == []  # (a primary passes)
        redis.Redis.from_url(server.url).replicaof("127.0.0.1", closed_port())  # (a replica of a primary away)
        (warning,) = cache_answers()
    finally:
        server.stop()
    assert warning.id == "config.W002"
    assert warning.msg == (
        "The Redis server of CACHE_URL refuses writes (ReadOnlyError: a read-only replica?): until CACHE_URL "
        "names its primary, exports and client registrations are refused, previews pause, and post bodies are "
        "rendered afresh for every page."
    )
    assert not cache_health.answering()


def test_a_silent_cache_redis_holds_the_check_no_longer_than_its_timeout(cache_url):
    """A host that takes the connection and never answers: the check waits out the 2 s read timeout once."""
    import socket
    import time

    from config.checks import cache_answers

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # (connections queue in the kernel; none is ever read)
        cache_url(f"redis://127.0.0.1:{silent.getsockname()[1]}/1")
        started = time.monotonic()
        (warning,) = cache_answers()
        took = time.monotonic() - started
    assert "does not answer (TimeoutError)" in warning.msg
    assert took < 3.5


def test_without_cache_url_the_cache_is_not_asked(settings, monkeypatch):
    from config import checks as config_checks

    class NoCaches:
        def __getitem__(self, alias):
            raise AssertionError("the cache was asked")

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    monkeypatch.setattr(config_checks, "caches", NoCaches(), raising=False)
    assert config_checks.cache_answers() == []


def test_manage_py_check_warns_of_a_cache_redis_that_does_not_answer_without_its_password():
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.agent.backends.openai_server import closed_port

    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parents[2],
        env={**base, "DEBUG": "1", "CACHE_URL": f"redis://:s3cret@127.0.0.1:{closed_port()}/1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "(config.W002) The Redis server of CACHE_URL does not answer (ConnectionError)" in result.stderr
    assert "s3cret" not in result.stdout + result.stderr and "127.0.0.1" not in result.stdout + result.stderr
