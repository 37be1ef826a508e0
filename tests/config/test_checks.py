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
