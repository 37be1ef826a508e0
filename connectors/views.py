"""`/mcp`: the Streamable HTTP endpoint, stateless, answering each POSTed message with JSON.

The site is synchronous WSGI under gunicorn + gevent, so the official SDK's server (ASGI, Starlette,
anyio task groups) does not fit; this view is the transport, and `connectors.protocol` uses the
SDK's types package for the messages. No session is kept (no `Mcp-Session-Id`): every POST carries
its bearer token and is authorised afresh. GET (a server-to-client stream) answers 405, as the
transport allows a server that never sends requests of its own.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from connectors import protocol, tools
from connectors.auth import Unauthorized, authenticate, challenge
from connectors.protocol import RpcError

log = logging.getLogger(__name__)
PROTOCOL_HEADER = "MCP-Protocol-Version"


@csrf_exempt  # bearer tokens only, no cookies: nothing a browser could forge
def mcp(request: HttpRequest) -> HttpResponse:
    if request.method == "OPTIONS":
        return HttpResponse(status=204, headers={"Allow": "POST"})
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "POST"})
    origin = request.headers.get("Origin")
    if origin and origin != f"{request.scheme}://{request.get_host()}":
        # DNS-rebinding guard the transport asks for; programs send no Origin.
        return _reply(
            None, RpcError(protocol.types.INVALID_REQUEST, "Cross-origin requests are not accepted.", status=403)
        )
    try:
        caller = authenticate(request)
    except Unauthorized as exc:
        return challenge(request, exc)
    version = request.headers.get(PROTOCOL_HEADER)
    if version and version not in protocol.PROTOCOL_VERSIONS:
        unsupported = f"Unsupported protocol version; this server speaks {', '.join(protocol.PROTOCOL_VERSIONS)}."
        return _reply(None, RpcError(protocol.types.INVALID_REQUEST, unsupported, status=400))
    body = _read_body(request)
    if body is None:
        limit = settings.MCP_MAX_REQUEST_BYTES
        return _reply(
            None, RpcError(protocol.types.INVALID_REQUEST, f"Request too large: at most {limit} bytes.", status=413)
        )
    try:
        message = protocol.parse(body)
    except RpcError as exc:
        return _reply(None, exc)
    if message is None or not isinstance(message, protocol.types.JSONRPCRequest):
        return HttpResponse(status=202)  # a notification or a response: accepted, nothing to say
    try:
        answer = protocol.handle(
            message,
            list_tools=lambda: tools.list_tools(caller),
            call_tool=lambda params: tools.call_tool(caller, params),
        )
    except RpcError as exc:
        return _reply(message.id, exc)
    except Exception:
        log.exception("connectors: %s failed for client %s", message.method[:64], caller.client_id)
        return _reply(
            message.id, RpcError(protocol.types.INTERNAL_ERROR, "Internal error: the request could not be completed.")
        )
    return JsonResponse(answer)


def _read_body(request: HttpRequest) -> bytes | None:
    """The body, or None when it is over MCP_MAX_REQUEST_BYTES (told by Content-Length or by reading)."""
    limit = settings.MCP_MAX_REQUEST_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return None
    body = request.read(limit + 1)
    return None if len(body) > limit else body


def _reply(request_id, exc: RpcError) -> JsonResponse:
    headers = {}
    if exc.data and isinstance(exc.data, dict) and "retry_after_seconds" in exc.data:
        headers["Retry-After"] = str(exc.data["retry_after_seconds"])
    return JsonResponse(protocol.error(request_id, exc), status=exc.status, headers=headers)
