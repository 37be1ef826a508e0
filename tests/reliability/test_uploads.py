"""Hostile uploads through the real server (gunicorn + gevent, DEBUG=0, the OpenAI adapter).

Each refused upload answers one calm sentence and stores nothing: no file under the server's
MEDIA_ROOT, no message, no part, no rate slot, no model call. Accepted attachments are served
only to their chat's person, with headers that keep a browser from running them.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from tests import files
from tests.reliability.conftest import text_reply

COUNTED = ("agent_message", "agent_part", "agent_turn", "agent_rateevent")


def _stored(app) -> list[Path]:
    root = Path(app.env["MEDIA_ROOT"])
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _counts(app) -> dict[str, int]:
    return {t: app.database.scalar(f"SELECT COUNT(*) FROM {t}") for t in COUNTED}


def _upload(client, sid: str, named: list[tuple[str, bytes]], *, csrf: bool = True) -> httpx.Response:
    headers = client.headers({"X-CSRFToken": client.csrf} if csrf else {})
    multipart = [("files", (name, data, "application/octet-stream")) for name, data in named]
    return client.keep(
        client.http.post(f"/api/agent/sessions/{sid}/messages", data={"text": "Here"}, files=multipart, headers=headers)
    )


PROBES = [
    ("setup.png", files.exe_as_png(), 400, "unsupported_type", "“setup.png” can't be attached: only PNG"),
    ("logo.svg", files.svg_with_script(), 400, "unsupported_type", "SVG and HTML files are not accepted"),
    ("logo.png", files.svg_with_script(), 400, "unsupported_type", "SVG and HTML files are not accepted"),
    ("notes.md", b"<html><script>alert(1)</script></html>", 400, "unsupported_type", "SVG and HTML"),
    ("bomb.png", files.png_bomb(), 400, "too_many_pixels", "“bomb.png” is too large an image"),
    ("big.pdf", b"%PDF-1.4\n" + b"0" * (50 * 1024 * 1024), 413, "too_large", "allowed in one message"),
]


@pytest.mark.parametrize(("name", "data", "status", "code", "says"), PROBES, ids=[p[0] + "-" + p[3] for p in PROBES])
def test_hostile_uploads_are_refused_calmly_and_store_nothing(app, provider, alice, name, data, status, code, says):
    sid = alice.new_chat()
    before, stored = _counts(app), _stored(app)
    calls = len(provider.requests)
    response = _upload(alice, sid, [("fine.png", files.png()), (name, data)])
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error["code"] == code and says in error["message"] and "\n" not in error["message"]
    assert "Traceback" not in response.text and "PIL" not in response.text
    assert (_counts(app), _stored(app), len(provider.requests)) == (before, stored, calls)


def test_too_many_files_and_a_missing_csrf_token_store_nothing(app, provider, alice):
    sid = alice.new_chat()
    before, stored = _counts(app), _stored(app)
    response = _upload(alice, sid, [(f"n{i}.txt", b"note") for i in range(9)])
    assert (response.status_code, response.json()["error"]["code"]) == (400, "too_many_files")
    response = _upload(alice, sid, [("photo.png", files.png())], csrf=False)
    assert response.status_code == 403
    assert (_counts(app), _stored(app)) == (before, stored)


def test_attachments_are_served_only_to_their_chat_and_never_run(app, provider, alice, login):
    provider.script(text_reply("Nice photo."))
    sid = alice.new_chat()
    response = _upload(alice, sid, [("photo.png", files.png(32, 24)), ("report.pdf", files.pdf())])
    assert response.status_code == 202, response.text
    alice.read_stream(response.json()["stream_url"])
    # The stand-in is not api.openai.com, so the model got the PDF's text, read in gevent's thread pool.
    sent = json.dumps(provider.requests[-1].body["messages"][-1])
    assert "its text, extracted" in sent and "Hello PDF" in sent
    parts = [p for m in alice.get(f"/api/agent/sessions/{sid}").json()["messages"] for p in m["parts"] if "url" in p]
    image, pdf = parts
    # The stored image was re-encoded from its pixels: nothing of the upload but the picture.
    got = alice.get(image["url"])
    assert got.status_code == 200
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["content-disposition"] == 'inline; filename="photo.png"'
    assert "sandbox" in got.headers["content-security-policy"]
    assert "default-src 'none'" in got.headers["content-security-policy"]
    got = alice.get(pdf["url"])
    assert got.headers["content-disposition"] == 'attachment; filename="report.pdf"'

    bob, carol = login("bob"), login("carol")
    anonymous = login(None)
    for visitor in (bob, carol, anonymous):
        assert visitor.get(image["url"]).status_code == 404
        assert visitor.get(pdf["url"]).status_code == 404
    # Guessed addresses: neighbouring part ids under alice's chat, and under bob's own chat.
    bobs = bob.new_chat()
    for part_id in range(max(1, image["id"] - 5), image["id"] + 6):
        assert bob.get(f"/api/agent/sessions/{sid}/attachments/{part_id}").status_code == 404
        assert bob.get(f"/api/agent/sessions/{bobs}/attachments/{part_id}").status_code == 404
