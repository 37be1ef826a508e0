"""A release's code uses a site `seed_demo` filled, as its workers and its terminal would (run.sh runs it).

    cd <that release's checkout> && DEBUG=1 DATABASE_URL=... python .../bench/old_workers/old_use.py <tag>

Only what every release since agent 0013 + connectors 0001 has: the `chat` command, the JSON API's chats with
the demo model's tools (create, publish after approval, rename beside the editor, delete after approval), the
editor's form, the Clients screen (a Consent), the pages, the admin's lists, an MCP client's whole OAuth
connection and its tool calls, and a new blog (the site's New blog where the release has one, else an INSERT as
the admin's Add blog makes). Each step prints OK or FAIL and the time; a failure never stops the others.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import sys
import time
import traceback
from urllib.parse import parse_qs, urlencode, urlsplit

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

setup_test_environment()
settings.ALLOWED_HOSTS = ["*"]

from agent.models import Session  # noqa: E402
from blog import urls as blog_urls  # noqa: E402
from blog.models import Blog, Post, Seat  # noqa: E402

TAG = sys.argv[1] if len(sys.argv) > 1 else "x"
BLOG = "field-notes"
RESULTS: list[tuple[str, bool, str]] = []


def step(name):
    def run(fn):
        try:
            note = fn() or ""
            RESULTS.append((name, True, str(note)))
            print(f"OK   {name} {note} @{time.time():.2f}", flush=True)
        except Exception as exc:  # report and go on
            RESULTS.append((name, False, repr(exc)))
            print(f"FAIL {name}: {exc!r} @{time.time():.2f}", flush=True)
            traceback.print_exc(limit=-3)
        return fn

    return run


User = get_user_model()
alice = User.objects.get(username="alice")
admin = User.objects.get(username="admin")


def sse(body: bytes) -> list[tuple[str, object]]:
    events = []
    for block in body.decode().split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if name:
            events.append((name, json.loads("\n".join(data)) if data else None))
    return events


class Api:
    def __init__(self, user):
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(user)
        self.client.get("/accounts/login/")
        self.csrf = self.client.cookies["csrftoken"].value

    def post(self, url, body=None):
        return self.client.post(
            url, data=json.dumps(body or {}), content_type="application/json", HTTP_X_CSRFTOKEN=self.csrf
        )

    def stream(self, url):
        response = self.client.get(url)
        assert response.status_code == 200, (response.status_code, response.content[:300])
        return sse(b"".join(response.streaming_content))

    def turn(self, session_id, text):
        response = self.post(f"/api/agent/sessions/{session_id}/messages", {"text": text})
        assert response.status_code == 202, (response.status_code, response.content[:300])
        return self.stream(response.json()["stream_url"])

    def open(self, data):
        response = self.post("/api/agent/sessions", data)
        assert response.status_code == 201, (response.status_code, response.content[:300])
        return response.json()["id"]


def names(events):
    return [n for n, _ in events]


def ok_results(events):
    results = [p for n, p in events if n == "tool_result"]
    assert results and all(r["status"] == "ok" for r in results), events
    return results


api = Api(alice)
state: dict[str, object] = {}


@step("terminal chat: manage.py chat drafts and lists")
def _():
    call_command("chat", user="alice", blog=BLOG, message=[f"draft a post titled Autumn birds {TAG}", "list my posts"])
    assert Post.objects.filter(blog__slug=BLOG, title=f"Autumn birds {TAG}").exists()


@step("API chat: create_post through the demo model")
def _():
    state["chat"] = api.open({"blog": BLOG})
    events = api.turn(state["chat"], f"draft a post titled Geese {TAG}")
    ok_results(events)
    state["post"] = Post.objects.get(blog__slug=BLOG, title=f"Geese {TAG}").pk


@step("API chat: publish_post waits for approval, approved, published")
def _():
    events = api.turn(state["chat"], f"publish Geese {TAG}")
    confirms = [p for n, p in events if n == "confirm"]
    assert confirms, names(events)
    [pending] = confirms[0]["approvals"]
    response = api.post(f"/api/agent/sessions/{state['chat']}/approvals/{pending['id']}", {"approve": True})
    assert response.status_code == 202, response.content[:300]
    ok_results(api.stream(response.json()["stream_url"]))
    assert Post.objects.get(pk=state["post"]).status == "published"


@step("API chat beside the editor: update_post renames the open post")
def _():
    chat = api.open({"blog": BLOG, "post": state["post"]})
    events = api.turn(chat, f"rename this post to Geese renamed {TAG}")
    if [p for n, p in events if n == "confirm"]:  # a published post's change may ask first
        [pending] = [p for n, p in events if n == "confirm"][0]["approvals"]
        response = api.post(f"/api/agent/sessions/{chat}/approvals/{pending['id']}", {"approve": True})
        events = api.stream(response.json()["stream_url"])
    ok_results(events)
    assert Post.objects.get(pk=state["post"]).title == f"Geese renamed {TAG}"
    state["editor_chat"] = chat


@step("API chat: delete_post after approval")
def _():
    call_command("chat", user="alice", blog=BLOG, message=[f"draft a post titled Doomed {TAG}"])
    events = api.turn(state["chat"], f"delete Doomed {TAG}")
    confirms = [p for n, p in events if n == "confirm"]
    assert confirms, names(events)
    [pending] = confirms[0]["approvals"]
    response = api.post(f"/api/agent/sessions/{state['chat']}/approvals/{pending['id']}", {"approve": True})
    ok_results(api.stream(response.json()["stream_url"]))
    assert not Post.objects.filter(blog__slug=BLOG, title=f"Doomed {TAG}").exists()


browser = Client()
browser.force_login(alice)


@step("editor: a hand edit saved (POST the post's form)")
def _():
    post = Post.objects.get(pk=state["post"])
    url = f"/blogs/{BLOG}/posts/{post.pk}/edit/"
    assert browser.get(url).status_code == 200
    response = browser.post(url, {"title": post.title, "body": post.body + "\n\nEdited by hand."})
    assert response.status_code == 302, (response.status_code, response.content[:300])
    assert "Edited by hand." in Post.objects.get(pk=post.pk).body


@step("clients: the assistant's grant saved (a Consent written)")
def _():
    response = browser.post(
        f"/blogs/{BLOG}/clients/", {"scopes": ["posts:read", "posts:write", "posts:publish", "posts:delete"]}
    )
    assert response.status_code in (200, 302), response.status_code


@step("pages as alice answer 200")
def _():
    post = Post.objects.get(pk=state["post"])
    session = Session.objects.get(pk=state["chat"])
    urls = [
        "/",
        f"/blogs/{BLOG}/",
        f"/blogs/{BLOG}/posts/",
        f"/blogs/{BLOG}/posts/new/",
        f"/blogs/{BLOG}/posts/{post.pk}/edit/",
        f"/blogs/{BLOG}/posts/{post.pk}/history/",
        f"/blogs/{BLOG}/members/",
        f"/blogs/{BLOG}/clients/",
        f"/blogs/{BLOG}/?chat={session.pk}",
        f"/blogs/{BLOG}/posts/{post.pk}/edit/?chat={state['editor_chat']}",
        f"/api/agent/sessions/{session.pk}",
        f"/read/{BLOG}/",
        f"/read/{BLOG}/{post.slug}/",
        f"/read/{BLOG}/feed/",
        "/sitemap.xml",
    ]
    bad = {u: c for u in urls if (c := browser.get(u).status_code) != 200}
    assert not bad, bad
    return f"({len(urls)} pages)"


@step("admin pages as admin answer 200")
def _():
    staff = Client()
    staff.force_login(admin)
    session = Session.objects.get(pk=state["chat"])
    index = staff.get("/admin/")
    assert index.status_code == 200, index.status_code
    lists = sorted(set(re.findall(r'href="(/admin/[a-z_]+/[a-z_]+/)"', index.content.decode())))
    urls = lists + [
        f"/admin/blog/blog/{Blog.objects.get(slug=BLOG).pk}/change/",
        f"/admin/agent/session/{session.pk}/change/",
    ]
    bad = {u: c for u in urls if (c := staff.get(u).status_code) != 200}
    assert not bad, bad
    return f"({len(urls)} pages)"


REDIRECT = "http://127.0.0.1:5999/callback"
RESOURCE = "http://testserver/mcp"
SCOPES = ["posts:delete", "posts:publish", "posts:read", "posts:write"]


@step("MCP: register, consent (writes a Consent), token, tools/call create, update, publish")
def _():
    response = Client().post(
        "/oauth/register/",
        data=json.dumps({"client_name": f"Upgrade {TAG}", "redirect_uris": [REDIRECT]}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content[:300]
    client_id = response.json()["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": " ".join(SCOPES),
    }
    person = Client()
    person.force_login(alice)
    url = "/oauth/authorize/?" + urlencode(query)
    assert person.get(url).status_code == 200
    response = person.post(url, {"blog": BLOG, "allow": SCOPES, "decision": "approve"})
    assert response.status_code == 302, response.content[:300]
    code = parse_qs(urlsplit(response["Location"]).query)["code"][0]
    response = Client().post(
        "/oauth/token/",
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": RESOURCE,
        },
    )
    assert response.status_code == 200, response.content[:300]
    token = response.json()["access_token"]

    def call(name, arguments):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        response = Client().post(
            "/mcp", data=json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 200, response.content[:300]
        result = response.json()["result"]
        assert not result.get("isError"), result
        return result["structuredContent"] if "structuredContent" in result else result

    created = call("create_post", {"title": f"From MCP {TAG}", "body": "Hello from a client."})
    post = Post.objects.get(blog__slug=BLOG, title=f"From MCP {TAG}")
    call("update_post", {"post_id": post.pk, "body": "Changed by a client."})
    call("publish_post", {"post_id": post.pk})
    post.refresh_from_db()
    assert (post.status, post.body) == ("published", "Changed by a client."), (post.status, post.body)
    return f"(post {post.pk}; {str(created)[:60]})"


@step("a new blog made by this release's code")
def _():
    if "blog_new" in {getattr(p, "name", None) for p in blog_urls.urlpatterns}:
        person = Client()
        person.force_login(admin)
        response = person.post("/blogs/new/", {"title": f"Upgrade {TAG}", "slug": f"upgrade-{TAG}"})
        assert Blog.objects.filter(slug=f"upgrade-{TAG}").exists(), (response.status_code, response.content[:200])
        return "(POST /blogs/new/)"
    blog = Blog.objects.create(owner=admin, title=f"Upgrade {TAG}", slug=f"upgrade-{TAG}")
    Seat.objects.create(user=admin, blog=blog, role=Seat.OWNER)
    return "(Blog.objects.create, as the admin's Add blog does)"


failed = [name for name, ok, _ in RESULTS if not ok]
print(f"\n{len(RESULTS) - len(failed)} of {len(RESULTS)} steps held" + (f"; failed: {failed}" if failed else ""))
sys.exit(1 if failed else 0)
