"""No secret leaks into the server log, a transcript, an admin page or an error page.

The servers run with recognisable fake secrets (OPENAI_API_KEY, AWS credentials, SECRET_KEY). The test
makes the traffic it searches itself (a turn that runs a tool, one the provider refuses while echoing the
key, both stream flavours, admin pages, error pages), so it proves the same whatever runs before it or
whether anything does; run after other tests it searches their logs and transcripts too.
"""

from __future__ import annotations

import json

from tests.reliability.conftest import FAKE_OPENAI_KEY, SECRETS, Fault, assert_calm_error, text_reply, tool_reply


def _leaks(text: str, cookies: list[str]) -> list[str]:
    return [s for s in (*SECRETS, *cookies) if s and s in text]


def test_no_secret_in_logs_transcripts_admin_or_error_pages(app, provider, alice, login):
    # A provider that echoes the key back in its error body (as OpenAI does for a wrong key).
    echo = {
        "error": {
            "message": f"Incorrect API key provided: {FAKE_OPENAI_KEY}.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    # A turn that works, with a tool call: its request carries the key, its stream and transcript are searched.
    provider.script(tool_reply(("call_secret_1", "list_posts", {})), text_reply("All ", "fine."), text_reply("Again."))
    working = alice.new_chat()
    ok = alice.turn(working, "List my posts")
    assert ok.terminal[0] == "done" and ok.text == "All fine.", ok.events
    html = alice.turn(working, "Again, in HTML", flavour="html")
    provider.script(Fault(status=401, body=json.dumps(echo)))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Use the key")
    assert_calm_error(turn)
    assert provider.requests[0].headers["authorization"] == f"Bearer {FAKE_OPENAI_KEY}", "the key was really used"
    assert "HTTP 401" in app.log_since(mark) and "[redacted]" in app.log_since(mark)

    admin = login("admin")
    cookies = [alice.jar["sessionid"], admin.jar["sessionid"]]
    seen: dict[str, str] = {"stream": turn.raw, "working stream": ok.raw, "html stream": html.raw}

    ids = [r[0] for r in app.database.query("SELECT id FROM agent_session ORDER BY created_at DESC")][:60]
    sessions = [str(i) if app.database.postgres else f"{i[:8]}-{i[8:12]}-{i[12:16]}-{i[16:20]}-{i[20:]}" for i in ids]
    for session_id in sessions:
        owner = admin.get(f"/admin/agent/session/{session_id}/change/")
        assert owner.status_code == 200
        seen[f"admin session {session_id}"] = owner.text
    for user_sid in [s for s in sessions if alice.get(f"/api/agent/sessions/{s}").status_code == 200]:
        seen[f"transcript {user_sid}"] = alice.get(f"/api/agent/sessions/{user_sid}").text
    assert {f"transcript {working}", f"transcript {sid}"} <= set(seen)
    for path in (
        "/admin/",
        "/admin/agent/message/",
        "/admin/agent/turn/",
        "/admin/agent/spend/",
        "/admin/agent/approval/",
        "/admin/blog/consent/",
        "/admin/auth/user/",
    ):
        page = admin.get(path)
        assert page.status_code == 200, path
        seen[path] = page.text
    message = app.database.scalar("SELECT MAX(id) FROM agent_message WHERE stop_reason = 'error'")
    seen["admin failed message"] = admin.get(f"/admin/agent/message/{message}/change/").text

    anonymous = login(None)
    errors = {
        "404 page": alice.get("/no/such/page/"),
        "404 api": alice.get("/api/agent/sessions/00000000-0000-4000-8000-000000000000"),
        "405": alice.get("/api/agent/sessions"),
        "400": alice.post_json("/api/agent/sessions", raw=b"{not json"),
        "403 csrf page": alice.post_form("/blogs/field-notes/posts/new/", {"title": "x"}, csrf=False),
        "403 csrf api": alice.post_json("/api/agent/sessions", {"blog": "field-notes"}, csrf=False),
        "401 api": anonymous.get(f"/api/agent/sessions/{sid}"),
        "bad login": anonymous.post_form("/accounts/login/", {"username": "alice", "password": "wrong"}),
    }
    for name, response in errors.items():
        assert response.status_code in (200, 400, 401, 403, 404, 405), (name, response.status_code)
        assert "Traceback" not in response.text and "SECRET_KEY" not in response.text, name
        seen[name] = response.text + json.dumps(dict(response.headers))

    for where, text in seen.items():
        assert not _leaks(text, cookies), f"a secret leaked into {where}"
    for server_log in app.log.parent.glob("server-*.log"):
        text = server_log.read_text(errors="replace")
        assert not _leaks(text, cookies), f"a secret leaked into {server_log.name}"
        assert "sessionid=" not in text and "csrftoken=" not in text
