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
