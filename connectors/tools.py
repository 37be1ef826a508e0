"""The operation catalogue over MCP: the assistant's tools, for a connected client, capped by its grant.

Same names, descriptions and input schemas as the built-in assistant's tools (`blog.operations`),
offered only as far as the client's Consent ∩ the person's live seat allows, read afresh for every
list and every call. Each call runs through `perform_json`, the one write path, and its result is
wrapped by the same `as_object` the assistant's results go through. Every call leaves an `McpCall`.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import mcp_types as types
from django.conf import settings
from django.utils import timezone

from agent.tools import as_object
from blog import grants
from blog.operations import exposed, perform_json
from blog.services import OperationError
from connectors.auth import Caller
from connectors.models import McpCall
from connectors.protocol import RpcError

log = logging.getLogger(__name__)

RATE_LIMITED = -32000  # JSON-RPC's implementation-defined band
#: A call's arguments are audited whole up to this many characters of JSON; past it (a long post body,
#: or junk), each argument's start: a read-only client may send MCP_MAX_REQUEST_BYTES a call.
AUDIT_INPUT_CHARS = 4_000
AUDIT_ARGUMENTS, AUDIT_NAME_CHARS, AUDIT_VALUE_CHARS = 20, 64, 300
STATUS_OF_CODE = {"denied": McpCall.DENIED, "invalid": McpCall.INVALID}


def actor_for(caller: Caller) -> grants.Actor:
    return grants.connected_client(caller.user, caller.blog, caller.client_id)


def list_tools(caller: Caller) -> types.ListToolsResult:
    actor = actor_for(caller)
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=op.description, input_schema=op.input_schema)
            for name, op in sorted(exposed().items())
            if grants.allows(actor, op)
        ]
    )


def call_tool(caller: Caller, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in exposed():
        raise RpcError(types.INVALID_PARAMS, f"Unknown tool: {params.name[:64]}")
    check_rate(caller)
    arguments = params.arguments or {}
    actor = actor_for(caller)
    try:
        out, _effects = perform_json(params.name, actor, caller.blog, arguments)
    except OperationError as exc:
        message = exc.public_message
        result, status = {"error": message}, STATUS_OF_CODE.get(exc.code, McpCall.ERROR)
    else:
        result, status, message = as_object(out), McpCall.OK, ""
    finally:
        grants.note_use(actor)
    McpCall.objects.create(
        user=caller.user,
        blog=caller.blog,
        client_id=caller.client_id,
        client_name=caller.client_name,
        tool=params.name,
        input=audited(arguments),
        status=status,
        message=message[:300],
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
        structured_content=result,
        is_error=status != McpCall.OK,
    )


def audited(arguments: dict[str, Any]) -> dict[str, Any]:
    """What the audit keeps of a call's arguments: all of them when short; else the first
    AUDIT_ARGUMENTS, each name and value cut to its start, and under "…" how long they were."""
    text = json.dumps(arguments, ensure_ascii=False)
    if len(text) <= AUDIT_INPUT_CHARS:
        return arguments
    kept: dict[str, Any] = {}
    for name, value in list(arguments.items())[:AUDIT_ARGUMENTS]:
        if isinstance(value, dict | list) and len(dumped := json.dumps(value, ensure_ascii=False)) > AUDIT_VALUE_CHARS:
            value = dumped[:AUDIT_VALUE_CHARS] + "…"
        elif isinstance(value, str) and len(value) > AUDIT_VALUE_CHARS:
            value = value[:AUDIT_VALUE_CHARS] + "…"
        kept[name[:AUDIT_NAME_CHARS]] = value
    kept["…"] = f"cut from {len(text):,} characters"
    return kept


def check_rate(caller: Caller) -> None:
    """At most MCP_CALLS_PER_MINUTE tool calls per client and user in any rolling minute (0 = no limit).

    Per user too: anyone may authorise a public client, and one person's calls must not use up another's.
    """
    limit = settings.MCP_CALLS_PER_MINUTE
    if not limit:
        return
    since = timezone.now() - timedelta(minutes=1)
    recent = McpCall.objects.filter(client_id=caller.client_id, user=caller.user, created_at__gt=since)
    if recent.count() < limit:
        return
    oldest = recent.order_by("created_at").values_list("created_at", flat=True)[:1]
    wait = max(1, int((oldest[0] - since).total_seconds()) + 1) if oldest else 60
    log.info("connectors: client %s is over %s calls a minute", caller.client_id, limit)
    raise RpcError(
        RATE_LIMITED,
        f"Too many calls: this client may make {limit} tool calls a minute. Try again in {wait} seconds.",
        data={"code": "rate_limited", "retry_after_seconds": wait},
        status=429,
    )
