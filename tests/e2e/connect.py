"""A person at the consent page and the Clients screen, over plain HTTP (httpx with a session cookie),
and the official MCP SDK's client wired to them: what an MCP client and its user do, unmodified."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.e2e.ui import PASSWORD

T = TypeVar("T")
CALLBACK = "http://127.0.0.1:5999/callback"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Person:
    """A signed-in browser session, without a browser."""

    def __init__(self, base: str, username: str) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
        page = self.http.get("/accounts/login/")
        response = self.http.post(
            "/accounts/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": CSRF.search(page.text).group(1)},
        )
        assert response.status_code == 302, f"{username} could not sign in"

    def csrf(self) -> str:
        return self.http.cookies["csrftoken"]

    def consent(self, url: str, blog: str, scopes: list[str], decision: str = "approve") -> str:
        """Open the consent page at `url` and answer it; the redirect back to the client."""
        page = self.http.get(url)
        assert page.status_code == 200, page.text[:500]
        data: dict[str, Any] = {"csrfmiddlewaretoken": self.csrf(), "blog": blog, "allow": scopes, "decision": decision}
        response = self.http.post(url, data=data)
        assert response.status_code == 302, response.text[:500]
        return response.headers["location"]

    def set_client_scopes(self, blog: str, client_id: str, scopes: list[str]) -> None:
        response = self.http.post(
            f"/blogs/{blog}/clients/{client_id}/",
            data={"csrfmiddlewaretoken": self.csrf(), "scopes": scopes, "action": "save"},
        )
        assert response.status_code == 302

    def revoke_client(self, blog: str, client_id: str) -> None:
        response = self.http.post(
            f"/blogs/{blog}/clients/{client_id}/", data={"csrfmiddlewaretoken": self.csrf(), "action": "revoke"}
        )
        assert response.status_code == 302

    def clients_page(self, blog: str) -> str:
        return self.http.get(f"/blogs/{blog}/clients/").text


@dataclass
class Memory:
    """The SDK's TokenStorage, in memory."""

    tokens: Any = None
    client_info: Any = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


@dataclass
class Connector:
    """An MCP client (the SDK's OAuthClientProvider + streamable HTTP client) whose user answers as told."""

    base: str
    person: Person
    blog: str
    scopes: list[str]
    name: str = "SDK test client"
    storage: Memory = field(default_factory=Memory)
    authorizations: list[str] = field(default_factory=list)  # every consent URL the client sent the person to
    allow_authorization: bool = True
    _redirect: str = ""

    def auth(self):
        from mcp.client.auth import OAuthClientProvider
        from mcp.shared.auth import OAuthClientMetadata

        return OAuthClientProvider(
            server_url=f"{self.base}/mcp",
            client_metadata=OAuthClientMetadata(client_name=self.name, redirect_uris=[CALLBACK]),
            storage=self.storage,
            redirect_handler=self._open,
            callback_handler=self._callback,
        )

    async def _open(self, url: str) -> None:
        self.authorizations.append(url)
        if not self.allow_authorization:
            raise RuntimeError("the person is not asked again in this test")
        self._redirect = self.person.consent(url, self.blog, self.scopes)

    async def _callback(self):
        from mcp.client.auth import AuthorizationCodeResult

        query = {k: v[0] for k, v in parse_qs(urlsplit(self._redirect).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    async def session(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Connect (authorising if needed), run `work(client)`, disconnect."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(auth=self.auth(), timeout=30) as http:
            async with Client(streamable_http_client(f"{self.base}/mcp", http_client=http)) as client:
                return await work(client)

    @property
    def client_id(self) -> str:
        return self.storage.client_info.client_id

    @property
    def access_token(self) -> str:
        return self.storage.tokens.access_token


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on a fresh event loop in its own thread (the browser tests keep one running on this thread)."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
