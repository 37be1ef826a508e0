"""One cache for every worker and host (`CACHE_URL`), and what its users do while it does not answer.

A second worker is a second process (`config.settings` with `CACHE_URL`, a connection of its own) on a
redis-server of the tests' own. A cache that does not answer is a Redis URL whose port nothing listens on.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from oauth2_provider.models import Application

from tests.agent.backends.openai_server import closed_port
from tests.blog.conftest import browser, make_post
from tests.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]
REDIS_CACHE = "django.core.cache.backends.redis.RedisCache"
EXPORT = "/blogs/notes/export/"
PREVIEW = "/blogs/notes/posts/preview/"
ADDRESS = "203.0.113.9"


def other_worker(url: str, code: str, **env: str) -> str:
    """Run `code` in another process with the site's settings and CACHE_URL=`url`; what it printed."""
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1", "CACHE_URL": url, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def export_elsewhere(url: str, user_id: int) -> str:
    return other_worker(
        url,
        "from blog.export import ExportRunning, one_at_a_time\n"
        "try:\n"
        f"    with one_at_a_time({user_id}): print('exported')\n"
        "except ExportRunning: print('running elsewhere')",
    )


@pytest.fixture
def shared(settings, redis_server):
    """This process's cache on the tests' own Redis, as CACHE_URL gives it; empty before and after."""
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": redis_server.url}}
    cache.clear()
    yield redis_server.url
    cache.clear()


@pytest.fixture
def down(settings):
    """The cache is a Redis that does not answer (its URL with a password, which nothing may say)."""
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": f"redis://:s3cret@127.0.0.1:{closed_port()}/0"}}
    yield
    from config.cache import health

    health.reset()  # (the process would leave the cache alone a moment: not into the next test)


def test_two_workers_hold_one_export_place_a_person(shared):
    """(Each worker's own memory held the place: a person could run one export per worker at once.)"""
    from blog.export import one_at_a_time

    with one_at_a_time(7):
        assert export_elsewhere(shared, 7) == "running elsewhere"
        assert export_elsewhere(shared, 8) == "exported"  # (another person's is not held up)
    assert export_elsewhere(shared, 7) == "exported"  # (given back once written, for every worker)


@pytest.mark.django_db
def test_two_workers_count_one_registration_limit_an_address(shared, settings):
    settings.DCR_REGISTRATIONS_PER_HOUR = 2

    def here():
        body = json.dumps({"redirect_uris": ["http://127.0.0.1/cb"]})
        return browser().post("/oauth/register/", body, content_type="application/json", REMOTE_ADDR=ADDRESS)

    assert here().status_code == 201
    counted = other_worker(
        shared,
        "from django.test import RequestFactory\n"
        "from connectors.registration import seconds_limited\n"
        f"print(seconds_limited(RequestFactory().post('/oauth/register/', REMOTE_ADDR={ADDRESS!r})))",
        DCR_REGISTRATIONS_PER_HOUR="2",
    )
    assert counted == "0"  # (the second of two: allowed there)
    third = here()
    assert third.status_code == 429, third.content  # (the third, counted with the other worker's)
    assert Application.objects.count() == 1


@pytest.mark.django_db
def test_pages_are_rendered_while_the_cache_does_not_answer(team, down, caplog):
    """(The rendered bodies only save work: a Redis outage answered 500 to every public post page.)"""
    post = make_post(team.blog, "Still here", "Some **bold** words.", published=True)
    with caplog.at_level(logging.WARNING, logger="config.cache"):
        page = browser().get(f"/read/notes/{post.slug}/")
        index = browser().get("/read/notes/")
        feed = browser().get("/read/notes/feed/")
    assert page.status_code == 200 and "<strong>bold</strong>" in page.content.decode()
    assert index.status_code == 200 and "Some bold words." in index.content.decode()
    assert feed.status_code == 200 and "bold" in feed.content.decode()
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["the cache does not answer (ConnectionError): post bodies are rendered at each visit"]
    assert "s3cret" not in caplog.text


@pytest.mark.django_db
def test_no_export_starts_while_the_cache_does_not_answer(team, down):
    """The place cannot be taken, so none is: a calm 503 to try again, never an export past the limit."""
    response = browser(team.owner).get(EXPORT)
    assert (response.status_code, response["Retry-After"]) == (503, "30")
    text = response.content.decode()
    assert "Exports are paused for a moment" in text and 'href="/blogs/notes/"' in text
    assert "s3cret" not in text and "ConnectionError" not in text


def test_an_export_written_as_the_cache_goes_away_is_not_failed_for_it(settings, tmp_path):
    """(Giving the place back raised in `finally`: the ZIP, written, became a 500.) The place lapses."""
    from blog.export import one_at_a_time
    from config.cache import health

    server = RedisServer().start()
    try:
        settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": server.url}}
        with one_at_a_time(7):
            server.kill()
    finally:
        server.stop()
        health.reset()


@pytest.mark.django_db
def test_no_client_registers_while_the_cache_does_not_answer(down):
    """Registration needs no account: uncounted, anyone could fill the database with clients."""
    body = json.dumps({"redirect_uris": ["http://127.0.0.1/cb"]})
    response = browser().post("/oauth/register/", body, content_type="application/json", REMOTE_ADDR=ADDRESS)
    assert (response.status_code, response["Retry-After"]) == (503, "30")
    assert response.json() == {
        "error": "temporarily_unavailable",
        "error_description": "Registration is unavailable for a moment; try again later.",
    }
    assert Application.objects.count() == 0


@pytest.mark.django_db
def test_previews_pause_while_the_cache_does_not_answer(team, down):
    """The preview budget cannot be read: previews pause (429, as a spent budget does), saying why."""
    response = browser(team.author).post(PREVIEW, {"body": "Some **bold**."})
    assert response.status_code == 429
    text = response.content.decode()
    assert "The preview is paused for a moment" in text and "within 30 seconds" in text
    assert "bold" not in text


def test_after_a_failure_the_worker_leaves_the_cache_alone_a_moment(shared, settings):
    """So a feed of twenty posts does not wait out twenty timeouts on a Redis that does not answer."""
    from config import cache as shared_cache

    cache.set("kept", "here")
    settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": f"redis://127.0.0.1:{closed_port()}/0"}}
    try:
        assert shared_cache.get_if_answering("kept", "testing") is None  # (failed)
        settings.CACHES = {"default": {"BACKEND": REDIS_CACHE, "LOCATION": shared}}  # (back at once)
        assert shared_cache.get_if_answering("kept", "testing") is None  # (not asked, for the moment)
        shared_cache.health.down_until -= shared_cache.DOWN_SECONDS  # (the moment over)
        assert shared_cache.get_if_answering("kept", "testing") == "here"
    finally:
        shared_cache.health.reset()
