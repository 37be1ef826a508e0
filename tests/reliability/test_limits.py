"""Hostile use of the limits through the real server (issue 22): a body nested too deep, an answer asking
for a flood of writes, one user opening stream after stream. Each is refused or bounded calmly."""

from __future__ import annotations

import uuid
from contextlib import ExitStack

from tests.reliability.conftest import assert_valid_transcript, text_reply, tool_reply


def test_a_body_nested_too_deep_is_a_calm_json_400_on_every_json_endpoint(app, alice):
    sid, mark = alice.new_chat(), app.mark()
    for path in (
        "/api/agent/sessions",
        f"/api/agent/sessions/{sid}/messages",
        f"/api/agent/sessions/{sid}/approvals/{uuid.uuid4()}",
    ):
        response = alice.post_json(path, raw=b"[" * 1000)
        assert response.status_code == 400, (path, response.status_code, response.text[:300])
        assert response.json()["error"]["code"] in ("bad_request", "bad_message"), path
    assert "Traceback" not in app.log_since(mark) and "RecursionError" not in app.log_since(mark)
    assert alice.transcript(sid)["messages"] == []


def test_an_answer_asking_for_a_flood_of_calls_and_writes_is_bounded(app, provider, alice):
    """Defaults: 16 calls per answer, 8 changes per turn. The rest answer the model with an error, never run."""
    before = app.database.scalar("SELECT COUNT(*) FROM blog_post")
    provider.script(
        tool_reply(*[(f"look_{i}", "list_posts", {}) for i in range(20)]),
        tool_reply(*[(f"make_{i}", "create_post", {"title": f"Flood {i}", "body": "x"}) for i in range(12)]),
        text_reply("Done what I could."),
    )
    sid = alice.new_chat()
    turn = alice.turn(sid, "Make lots of posts")
    assert turn.terminal[0] == "done", turn.events
    status = {p["id"]: p["status"] for n, p in turn.events if n == "tool_result"}
    assert [status[f"look_{i}"] for i in range(20)] == ["ok"] * 16 + ["error"] * 4
    assert [status[f"make_{i}"] for i in range(12)] == ["ok"] * 8 + ["error"] * 4
    assert app.database.scalar("SELECT COUNT(*) FROM blog_post") == before + 8
    assert_valid_transcript(alice.wait_idle(sid), user_text="Make lots of posts")


def test_one_user_opening_stream_after_stream_keeps_at_most_the_limit_open(app, provider, alice):
    """Default 8 per user and worker: each one past it closes that user's oldest calmly; the turn goes on."""
    provider.script(text_reply(*[f"w{i} " for i in range(12)], delay=0.3))
    sid = alice.new_chat()
    accepted = alice.send(sid, "Talk slowly")
    assert accepted.status_code == 202
    url = accepted.json()["stream_url"]
    with ExitStack() as stack:
        streams = []
        for _ in range(10):  # one after another, each open (its first event read) before the next
            response = stack.enter_context(alice.http.stream("GET", url, headers=alice.headers(), timeout=30.0))
            assert response.status_code == 200
            lines = response.iter_lines()
            assert next(line for line in lines if line.startswith("event: ")) == "event: token"
            streams.append(lines)
        rest = [list(lines) for lines in streams]  # each to its end
    for superseded in rest[:2]:
        assert ": superseded" in superseded and "event: done" not in superseded, superseded[-5:]
    for followed in rest[2:]:
        assert followed.count("event: done") == 1 and ": superseded" not in followed, followed[-5:]
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Talk slowly")
    assert len(provider.requests) == 1
