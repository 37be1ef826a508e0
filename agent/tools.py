"""The in-memory tool registry: handler and catalogue in one place, filled at start-up."""

from __future__ import annotations

import contextlib
import contextvars
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction

from agent import logcontext
from agent.runtime import gevent_patched
from agent.values import Effect, ToolCall, ToolSpec, ToolStatus

logger = logcontext.get_logger("agent.tools")

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

Handler = Callable[..., Any]
Available = Callable[[Any, str], bool]


@dataclass(frozen=True)
class Description:
    """What a person approving a call reads: one line, and what will change (plain text, a diff's
    lines starting with "+", "-" or " "), shown escaped."""

    text: str
    detail: str = ""


Describe = Callable[[Any, str, dict[str, Any]], "str | Description"]
ConfirmAs = Callable[[Any, str, dict[str, Any]], str]
Version = Callable[[Any, str, dict[str, Any]], Any]
Shown = Callable[[Any, list[tuple[str, dict[str, Any]]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    handler: Handler
    description: str
    input_schema: dict[str, Any]
    purposes: tuple[str, ...]
    available: Available | None = None
    validator: Any = field(default=None, compare=False, repr=False)
    describe: Describe | None = None
    confirm_as: ConfirmAs | None = None
    version: Version | None = None
    writes: bool = True  # counts against AGENT_MAX_MUTATIONS_PER_TURN (agent/limits.py)
    shown: Shown | None = None  # how its calls' inputs read on their chips (agent/display.py)

    def spec(self) -> ToolSpec:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


REGISTRY: dict[str, Tool] = {}


def register(
    name: str,
    *,
    description: str = "",
    input_schema: dict[str, Any] | None = None,
    purposes: tuple[str, ...] = ("chat",),
    available: Available | None = None,
    describe: Describe | None = None,
    confirm_as: ConfirmAs | None = None,
    version: Version | None = None,
    writes: bool = True,
    shown: Shown | None = None,
) -> Callable[[Handler], Handler]:
    """Register `handler(session, **input)` under `name`.

    `available(session, name)` gates both offer and run; `describe(session, name, input)` says
    in plain words what a call would do (shown when a person must approve it): a str, or a
    `Description` that also shows what will change. `confirm_as(session, name, input)` names the
    tool a call is confirmed as (AGENT_CONFIRM_TOOLS), when one call of a tool is riskier than
    another (an edit of live content is a publish). `version(session, name, input)` is a JSON value
    naming the state the call acts on: an approval records it when the person is asked, and a
    different value when the call would run voids the approval.
    `writes=False` marks a tool that only reads: it does not count against a turn's limit on
    changes (AGENT_MAX_MUTATIONS_PER_TURN). A tool is taken to change something unless it says otherwise.
    `shown(session, calls)` gives, for a list of `(name, input)` calls, each input as a person reads
    it on the call's chip: a dict in the order to show, its values plain text (the ids a domain
    knows replaced by the names of what they point at, only where the session's user may see it).
    Tools sharing one `shown` get it once for all their calls of a page, so it can read at once.
    """
    if not TOOL_NAME.match(name):
        raise ValueError(f"Tool name {name!r} must match [a-zA-Z0-9_-]{{1,64}}.")
    schema = input_schema or EMPTY_SCHEMA
    jsonschema.Draft202012Validator.check_schema(schema)

    def deco(fn: Handler) -> Handler:
        REGISTRY[name] = Tool(
            name,
            fn,
            description,
            schema,
            tuple(purposes),
            available,
            jsonschema.Draft202012Validator(schema),
            describe,
            confirm_as,
            version,
            writes,
            shown,
        )
        return fn

    return deco


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def catalog_for(purpose: str, session: Any = None) -> list[ToolSpec]:
    """The tool specs this session may be offered, sorted by name."""
    return [tool.spec() for tool in _offered(purpose, session)]


_scratch: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("agent_tool_scratch", default=None)


def call_scratch() -> dict[str, Any] | None:
    """A scratch dict shared by the checks of one catalogue pass, or by one tool run (None outside).

    A domain may keep what it loaded for one check (the grant, say) for the rest of that pass or
    run; the next pass or run starts empty, so a narrowed grant still bites on the next call.
    """
    return _scratch.get()


@contextlib.contextmanager
def _scratch_scope() -> Iterator[None]:
    token = _scratch.set({})
    try:
        yield
    finally:
        _scratch.reset(token)


def _offered(purpose: str, session: Any) -> list[Tool]:
    tools = [t for _, t in sorted(REGISTRY.items()) if not t.purposes or purpose in t.purposes]
    if session is None:
        return tools
    token = _scratch.set({})  # (as `_scratch_scope`, without a context manager: every model call passes here)
    try:
        return [t for t in tools if t.available is None or t.available(session, t.name)]
    finally:
        _scratch.reset(token)


def writes(name: str) -> bool:
    """Whether a call of `name` may change something (an unknown tool changes nothing: it never runs)."""
    tool = REGISTRY.get(name)
    return tool is not None and tool.writes


def is_available(session: Any, name: str) -> bool:
    tool = REGISTRY.get(name)
    return tool is not None and (tool.available is None or tool.available(session, name))


def describe(session: Any, name: str, input: dict[str, Any]) -> str:
    """Plain words for a call: the tool's own `describe`, else its name and input."""
    return description_of(session, name, input).text


def description_of(session: Any, name: str, input: dict[str, Any]) -> Description:
    """What a person approving the call is shown: the tool's own `describe`, else its name and input."""
    tool = REGISTRY.get(name)
    if tool is not None and tool.describe is not None:
        try:
            said = tool.describe(session, name, input)
            return said if isinstance(said, Description) else Description(str(said))
        except Exception:
            logger.exception("describe failed for tool %s", name)
    args = ", ".join(f"{k}={v!r}" for k, v in input.items())
    return Description(f"Run {name}({args})")


def confirm_name(session: Any, name: str, input: dict[str, Any]) -> str | None:
    """The tool name this call is confirmed as: its `confirm_as`, else its own name; None when the
    hook fails (the caller then lets a person decide)."""
    tool = REGISTRY.get(name)
    if tool is None or tool.confirm_as is None:
        return name
    try:
        return tool.confirm_as(session, name, input)
    except Exception:
        logger.exception("confirm_as failed for tool %s", name)
        return None


def version_of(session: Any, name: str, input: dict[str, Any]) -> Any:
    """The state this call acts on, as JSON (`version`), or None when the tool names none.

    Read inside a transaction, so a hook may lock what it reads (`select_for_update`): called within
    an outer one, the lock holds until that transaction ends. Raises what the hook raises.
    """
    tool = REGISTRY.get(name)
    if tool is None or tool.version is None:
        return None
    with transaction.atomic():
        value = tool.version(session, name, input)
    return None if value is None else json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def as_object(value: Any) -> dict[str, Any]:
    """A tool result is always a JSON object: lists become {"items": [...]}, scalars {"result": x}."""
    if isinstance(value, dict):
        return value
    if isinstance(value, list | tuple):
        return {"items": list(value)}
    if value is None:
        return {}
    return {"result": value}


@dataclass
class ToolOutcome:
    result: dict[str, Any]
    status: ToolStatus
    effects: list[Effect]


def _error(message: str) -> ToolOutcome:
    return ToolOutcome({"error": message}, "error", [])


def run_tool(session: Any, tool_use: ToolCall, *, purpose: str | None = None) -> ToolOutcome:
    """Run one tool call; every failure becomes an error result the model can read."""
    # (whose call it is goes on its log lines, also when it runs outside a turn: an approval's)
    with _scratch_scope(), logcontext.bind(session_id=getattr(session, "pk", None)):
        return _run_tool(session, tool_use, purpose)


def not_available(name: str) -> str:
    """The error result of a call of a tool the session may not use now (its grant changed, say)."""
    return f"The tool {name!r} is not available to you here. Ask the user to grant it."


def _run_tool(session: Any, tool_use: ToolCall, purpose: str | None) -> ToolOutcome:
    name = tool_use.get("name", "")
    tool = REGISTRY.get(name)
    purpose = purpose or getattr(session, "purpose", "chat")
    if tool is None or (tool.purposes and purpose not in tool.purposes):
        return _error(f"Unknown tool {name!r}.")
    if tool.available is not None and not tool.available(session, name):
        return _error(not_available(name))
    if tool_use.get("input_error"):
        return _error(f"The arguments for {name!r} were not valid JSON: {tool_use['input_error']}. Try again.")
    raw = tool_use.get("input")
    if not isinstance(raw, dict):
        return _error("Tool input must be a JSON object.")
    problems = sorted(tool.validator.iter_errors(raw), key=lambda e: list(e.path))
    if problems:
        where = "/".join(str(p) for p in problems[0].path) or "input"
        return _error(f"Invalid input at {where}: {problems[0].message}")
    try:
        result = as_object(_call_with_time_limit(lambda: tool.handler(session, **raw)))
    except ToolTimeout:
        logger.error("tool %s ran past its time limit", name)
        return _error(f"The tool {name!r} took too long and was stopped. Try again or try something simpler.")
    except Exception as exc:  # the model gets a readable error; the operator gets the traceback
        logger.exception("tool %s raised", name)
        return _error(_tool_exception_text(exc))
    effects = result.pop("_effects", None) or []
    return ToolOutcome(result, "error" if "error" in result else "ok", list(effects))


class ToolTimeout(Exception):
    """A tool ran past AGENT_TOOL_TIMEOUT_SECONDS."""


def _call_with_time_limit(fn: Callable[[], Any]) -> Any:
    """Under gevent a hung tool (waiting on I/O) is interrupted after the limit; elsewhere it runs to its end."""
    from django.conf import settings

    limit = getattr(settings, "AGENT_TOOL_TIMEOUT_SECONDS", 0)
    if not limit or not gevent_patched():
        return fn()
    import gevent

    with gevent.Timeout(limit, ToolTimeout):
        return fn()


def _tool_exception_text(exc: Exception) -> str:
    # Domain errors that are safe to show carry `public_message`; anything else stays generic.
    message = getattr(exc, "public_message", None)
    return str(message) if message else "The tool failed unexpectedly. Try something else or ask the user."
