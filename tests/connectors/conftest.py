"""Connector fixtures: a registered client, PKCE, and the whole authorization dance through Django's test client."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client

from tests.blog.conftest import Team, make_blog

SERVER = "http://testserver"
RESOURCE = f"{SERVER}/mcp"
REDIRECT = "http://127.0.0.1:5999/callback"
ALL = ["posts:delete", "posts:publish", "posts:read", "posts:write"]


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def register(client: Client | None = None, name: str = "Test Client", uris: list[str] | None = None) -> str:
    client = client or Client()
    response = client.post(
        "/oauth/register/",
        data=json.dumps({"client_name": name, "redirect_uris": uris or [REDIRECT]}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()["client_id"]


def authorize_query(client_id: str, challenge: str, **extra: Any) -> dict[str, Any]:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-123",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": " ".join(ALL),
    }
    query.update(extra)
    return {k: v for k, v in query.items() if v is not None}


def redirect_params(response) -> dict[str, str]:
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith(REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


@dataclass
class Connected:
    client_id: str
    access_token: str
    refresh_token: str
    token_body: dict[str, Any]

    def mcp(self, payload: Any, *, token: str | None = None, raw: bytes | None = None, **headers: Any):
        data = raw if raw is not None else json.dumps(payload)
        return Client().post(
            "/mcp",
            data=data,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token or self.access_token}",
            **headers,
        )

    def rpc(self, method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            body["params"] = params
        response = self.mcp(body)
        assert response.status_code in (200, 429), response.content
        return response.json()

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.rpc("tools/call", {"name": name, "arguments": arguments or {}})

    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.rpc("tools/list")["result"]["tools"]]


def approve(user: Any, client_id: str, blog_slug: str, scopes: list[str], **extra: Any) -> tuple[dict[str, str], str]:
    """Sign in as `user`, approve on the consent page; the redirect's parameters and the PKCE verifier."""
    verifier, challenge = pkce()
    browser = Client()
    browser.force_login(user)
    url = "/oauth/authorize/?" + urlencode(authorize_query(client_id, challenge, **extra))
    page = browser.get(url)
    assert page.status_code == 200, page.content[:500]
    response = browser.post(url, {"blog": blog_slug, "allow": scopes, "decision": "approve"})
    return redirect_params(response), verifier


def exchange(client_id: str, code: str, verifier: str, **extra: Any):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    data.update(extra)
    return Client().post("/oauth/token/", {k: v for k, v in data.items() if v is not None})


def connect(user: Any, blog_slug: str, scopes: list[str], client_id: str | None = None) -> Connected:
    client_id = client_id or register()
    params, verifier = approve(user, client_id, blog_slug, scopes)
    response = exchange(client_id, params["code"], verifier)
    assert response.status_code == 200, response.content
    body = response.json()
    return Connected(client_id, body["access_token"], body["refresh_token"], body)


@pytest.fixture
def team(django_user_model) -> Team:
    return make_blog(django_user_model)


@pytest.fixture
def other_team(django_user_model) -> Team:
    return make_blog(django_user_model, slug="elsewhere", title="Elsewhere", prefix="x")
