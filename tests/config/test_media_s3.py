"""Attachments on S3-compatible storage: django-storages (boto3) against a loopback S3 stand-in.

The same settings code as production (`config.settings.media_storage`) builds the storage; boto3
sends real signed HTTP requests to `tests/s3_server.py`. Nothing in the SDK is patched.
"""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from agent.models import Part, Session
from config.settings import media_storage
from tests import files
from tests.s3_server import S3StandIn

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}


@pytest.fixture
def s3(settings):
    with S3StandIn() as stand_in:
        env = {
            "AGENT_MEDIA_STORAGE": "s3",
            "AGENT_MEDIA_S3_BUCKET": "media",
            "AGENT_MEDIA_S3_ENDPOINT_URL": stand_in.url,
            "AGENT_MEDIA_S3_REGION": "us-east-1",
            "AGENT_MEDIA_S3_ADDRESSING_STYLE": "path",
            "AGENT_MEDIA_S3_ACCESS_KEY_ID": "AKIDTESTDUMMY0000000",
            "AGENT_MEDIA_S3_SECRET_ACCESS_KEY": "dummy-secret",
        }
        settings.STORAGES = {**settings.STORAGES, "default": media_storage(env)}
        yield stand_in


def test_attachments_are_put_read_and_deleted_on_s3(
    api, chat, script, s3, other_user, django_capture_on_commit_callbacks
):
    script([[DONE]])
    data = {"text": "Look", "files": [SimpleUploadedFile("photo.png", files.png(32, 24))]}
    response = api.client.post(f"/api/agent/sessions/{chat.pk}/messages", data=data, HTTP_X_CSRFTOKEN=api.csrf)
    assert response.status_code == 202, response.content
    part = Part.objects.get(type="image")
    assert list(s3.objects) == [f"media/{part.media_ref}"]
    assert part.media_ref.startswith(f"agent/{chat.pk}/")
    assert ("PUT", f"media/{part.media_ref}") in s3.requests

    # The turn read it back for the model; the owner fetches it through the app, nobody else does.
    assert ("GET", f"media/{part.media_ref}") in s3.requests
    got = api.get(f"/api/agent/sessions/{chat.pk}/attachments/{part.pk}")
    assert (got.status_code, got["Content-Type"]) == (200, "image/png")
    assert b"".join(got.streaming_content) == s3.objects[f"media/{part.media_ref}"]
    outsider = Client()
    outsider.force_login(other_user)
    assert outsider.get(f"/api/agent/sessions/{chat.pk}/attachments/{part.pk}").status_code == 404

    # An object gone from the bucket is a 404, not an error page.
    s3.objects.clear()
    assert api.get(f"/api/agent/sessions/{chat.pk}/attachments/{part.pk}").status_code == 404

    # chat_cleanup deletes the chat's objects.
    s3.objects[f"media/{part.media_ref}"] = b"again"
    Session.objects.filter(pk=chat.pk).update(updated_at="2000-01-01T00:00:00Z", turn=None)
    with django_capture_on_commit_callbacks(execute=True):  # (the objects go once the deletion commits)
        call_command("chat_cleanup", "--older-than", "30", stdout=io.StringIO())
    assert s3.objects == {}
    assert ("DELETE", f"media/{part.media_ref}") in s3.requests


def test_s3_needs_a_bucket_and_a_known_kind():
    with pytest.raises(ImproperlyConfigured, match="AGENT_MEDIA_STORAGE=s3 needs AGENT_MEDIA_S3_BUCKET."):
        media_storage({"AGENT_MEDIA_STORAGE": "s3"})
    with pytest.raises(ImproperlyConfigured, match="must be filesystem or s3, got 'ftp'"):
        media_storage({"AGENT_MEDIA_STORAGE": "ftp"})
    assert media_storage({})["BACKEND"] == "django.core.files.storage.FileSystemStorage"


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        (
            "AGENT_MEDIA_S3_ENDPOINT_URL",
            "minio.internal:9000",
            "AGENT_MEDIA_S3_ENDPOINT_URL must be an http:// or https:// URL with a host, such as https://s3.example.com.",
        ),
        (
            "AGENT_MEDIA_S3_ENDPOINT_URL",
            "https://",
            "AGENT_MEDIA_S3_ENDPOINT_URL must be an http:// or https:// URL with",
        ),
        (
            "AGENT_MEDIA_S3_ADDRESSING_STYLE",
            "paths",
            "AGENT_MEDIA_S3_ADDRESSING_STYLE must be auto, virtual or path, got 'paths'.",
        ),
    ],
)
def test_an_s3_endpoint_or_addressing_style_boto3_refuses_is_refused_at_start_up(name, value, sentence):
    """(Unchecked, the endpoint failed the first upload, a person's request, with botocore's ValueError, and
    the addressing style stopped `manage.py check` with botocore's traceback.)"""
    with pytest.raises(ImproperlyConfigured) as refused:
        media_storage({"AGENT_MEDIA_STORAGE": "s3", "AGENT_MEDIA_S3_BUCKET": "b", name: value})
    assert str(refused.value).startswith(sentence)
    assert "minio" not in str(refused.value)  # (a URL is not echoed: it may carry a key)


def test_an_s3_endpoint_and_addressing_style_as_the_readme_gives_them_load():
    env = {"AGENT_MEDIA_STORAGE": "s3", "AGENT_MEDIA_S3_BUCKET": "b"}
    options = media_storage(
        {**env, "AGENT_MEDIA_S3_ENDPOINT_URL": "http://127.0.0.1:9000", "AGENT_MEDIA_S3_ADDRESSING_STYLE": "Path"}
    )["OPTIONS"]
    assert (options["endpoint_url"], options["addressing_style"]) == ("http://127.0.0.1:9000", "path")
