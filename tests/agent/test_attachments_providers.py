"""What each real adapter sends for a message with attachments: the loopback servers see the request.

The attachments go in through the HTTP API (multipart), are stored, read back from storage and
shaped for the model (`agent.attachments`) before the adapter writes them in its own format.
"""

from __future__ import annotations

import base64

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent.backends import reset_backends
from agent.models import Part
from tests import files
from tests.agent.backends.bedrock_server import BedrockStubServer
from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer, sse

pytestmark = pytest.mark.django_db

PNG = files.png(64, 48)
PDF = files.pdf()


@pytest.fixture(autouse=True)
def media(tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def send_with_files(api, chat):
    data = {
        "text": "What is in these?",
        "files": [
            SimpleUploadedFile("photo.png", PNG),
            SimpleUploadedFile("report.pdf", PDF),
            SimpleUploadedFile("notes.md", b"# Notes\nbuy milk"),
        ],
    }
    response = api.client.post(f"/api/agent/sessions/{chat.pk}/messages", data=data, HTTP_X_CSRFTOKEN=api.csrf)
    assert response.status_code == 202, response.content
    events = api.events(response.json()["stream_url"])
    assert events[-1][0] == "done", events
    return Part.objects.filter(type__in=("image", "document")).order_by("position")


def test_openai_compatible_gets_a_data_url_image_and_the_notes(api, chat, settings):
    server = ScriptedOpenAIServer().start()
    try:
        chunk = {"choices": [{"index": 0, "delta": {"content": "A teal square."}, "finish_reason": "stop"}]}
        server.script(Reply(body=sse(chunk)))
        settings.AGENT_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.url, "k"
        settings.AGENT_MODEL = "gpt-4o"
        reset_backends()
        image, pdf, note = send_with_files(api, chat)
        content = server.requests[0].body["messages"][-1]["content"]
    finally:
        server.stop()
    assert content[0] == {"type": "text", "text": "What is in these?"}
    assert content[1] == {
        "type": "text",
        "text": f"[Attachment #{image.pk}: photo.png, image/png, 64×48, {len(PNG)} B]",
    }
    assert content[2] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(image_bytes(image)).decode()},
    }
    assert content[3]["text"].startswith(f"[Attachment #{pdf.pk}: report.pdf, application/pdf, 1 page, ")
    # Not api.openai.com: the PDF's text, extracted, with a note saying so.
    assert content[4] == {
        "type": "text",
        "text": "[Attached PDF 'report.pdf': its text, extracted (layout, images and tables may be lost).]\n\nHello PDF",
    }
    assert content[5] == {
        "type": "text",
        "text": f"[Attachment #{note.pk}: notes.md, text/markdown, 16 B]\n<document>\n# Notes\nbuy milk\n</document>",
    }


def test_openai_compatible_gets_a_pdf_as_a_file_part_where_the_server_takes_files(api, chat, settings):
    server = ScriptedOpenAIServer().start()
    try:
        chunk = {"choices": [{"index": 0, "delta": {"content": "A report."}, "finish_reason": "stop"}]}
        server.script(Reply(body=sse(chunk)))
        settings.AGENT_BACKEND, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "openai", server.url, "k"
        settings.AGENT_MODEL, settings.OPENAI_PDF_FILES = "gpt-4o", "1"
        reset_backends()
        image, pdf, note = send_with_files(api, chat)
        content = server.requests[0].body["messages"][-1]["content"]
    finally:
        server.stop()
    from django.core.files.storage import default_storage

    with default_storage.open(pdf.media_ref, "rb") as fh:
        stored = fh.read()
    assert content[4] == {
        "type": "file",
        "file": {
            "filename": "report.pdf",
            "file_data": "data:application/pdf;base64," + base64.b64encode(stored).decode(),
        },
    }


def test_a_pdf_without_text_is_said_so(settings):
    from agent.backends.openai.wire import to_wire_messages

    blank = files.pdf("")
    message = {
        "role": "user",
        "parts": [{"type": "document", "media_type": "application/pdf", "name": "b.pdf", "data": blank}],
    }
    (wire,) = to_wire_messages("", [message])
    assert wire == {"role": "user", "content": "[Attached PDF 'b.pdf': no text could be read from it.]"}


def test_bedrock_gets_image_and_document_blocks(api, chat, settings, monkeypatch):
    with BedrockStubServer() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTDUMMY0000000")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy-secret")
        settings.AGENT_BACKEND, settings.AWS_REGION = "bedrock", "us-east-1"
        settings.AGENT_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0"
        reset_backends()
        image, pdf, note = send_with_files(api, chat)
        content = server.requests[0]["body"]["messages"][-1]["content"]
    assert content[0] == {"text": "What is in these?"}
    assert content[1] == {"text": f"[Attachment #{image.pk}: photo.png, image/png, 64×48, {len(PNG)} B]"}
    assert content[2] == {
        "image": {"format": "png", "source": {"bytes": base64.b64encode(image_bytes(image)).decode()}}
    }
    assert content[3]["text"].startswith(f"[Attachment #{pdf.pk}: report.pdf, application/pdf, 1 page, ")
    assert content[4] == {
        "document": {"format": "pdf", "name": "report", "source": {"bytes": base64.b64encode(PDF).decode()}}
    }
    assert content[5]["text"].endswith("<document>\n# Notes\nbuy milk\n</document>")


def image_bytes(part: Part) -> bytes:
    from django.core.files.storage import default_storage

    with default_storage.open(part.media_ref) as fh:
        return fh.read()
