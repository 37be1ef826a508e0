"""Plain values that cross the engine's boundaries, typed (docs/engine.md, "Backends" and "The loop").

What `Backend.stream()` receives and yields stays plain dicts, so an adapter or a fake can be
written without importing anything of ours; these TypedDicts let a type checker see every key.
The loop's events are `(name, payload)` tuples; their payloads are typed here too, and only the
surfaces (`agent.sse`, the chat panel, the terminal) encode them.
"""

from __future__ import annotations

import re
import unicodedata
from enum import Enum
from typing import Any, Literal, Never, NotRequired, TypedDict

# --- the neutral transcript (what `stream()` receives) ---------------------------------------


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ReasoningPart(TypedDict):
    type: Literal["reasoning"]
    text: str
    signature: NotRequired[str]
    provider_data: NotRequired[dict[str, Any]]  # opaque; only from (and to) the backend and model that made it


class ToolUsePart(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    provider_data: NotRequired[dict[str, Any]]


ToolStatus = Literal["ok", "error"]


class ToolResultPart(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    name: NotRequired[str]
    result: dict[str, Any]
    status: ToolStatus


class ImagePart(TypedDict):
    type: Literal["image"]
    media_type: str
    data: bytes
    name: NotRequired[str]
    # Beyond CONTRACT §3, as the transcript gives them (`transcript.neutral_part`): the attachment's
    # id, by which the model and tools name it, and its facts (`uploads.Upload.meta`). Read by
    # `agent.attachments` (its note, the budget's estimate); every adapter ignores them.
    id: NotRequired[int]
    size: NotRequired[int]
    width: NotRequired[int]
    height: NotRequired[int]


class DocumentPart(TypedDict):
    type: Literal["document"]
    media_type: str
    name: str
    data: bytes
    id: NotRequired[int]  # (as an image's, above)
    size: NotRequired[int]
    pages: NotRequired[int]


Part = TextPart | ReasoningPart | ToolUsePart | ToolResultPart | ImagePart | DocumentPart


Role = Literal["user", "assistant", "tool"]


class NeutralMessage(TypedDict):
    role: Role
    parts: list[Part]


class ToolSpec(TypedDict):
    name: str
    description: str
    input_schema: dict[str, Any]


# --- what `stream()` yields --------------------------------------------------------------------


UsageKey = Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]


class Usage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


class TextEvent(TypedDict):
    kind: Literal["text"]
    text: str


class ReasoningEvent(TypedDict):
    kind: Literal["reasoning"]
    text: str
    signature: NotRequired[str]
    # State the provider needs back with this reasoning (stored, sent back to the same backend and
    # model only); `{"redacted": ...}` is reasoning the provider encrypted.
    provider_data: NotRequired[dict[str, Any]]


class ToolUseEvent(TypedDict):
    kind: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    input_error: NotRequired[str]  # the arguments did not parse: the runner answers an error result
    provider_data: NotRequired[dict[str, Any]]  # state the provider needs back with this call


class DoneEvent(TypedDict):
    kind: Literal["done"]
    stop_reason: str
    usage: Usage


ModelEvent = TextEvent | ReasoningEvent | ToolUseEvent | DoneEvent


# --- what the engine writes (the stored transcript's input) ------------------------------------


class ToolCall(TypedDict):
    """One tool call as the loop carries it, from the model's event (`ToolUseEvent` without its
    `kind`, the id always a str) through the limits, the approvals and the runner to its result."""

    id: str
    name: str
    input: dict[str, Any]
    input_error: NotRequired[str]
    provider_data: NotRequired[dict[str, Any]]


Effect = dict[str, Any]  # what a tool changed, for the pages showing it (a domain's own shape)


class ToolResult(TypedDict):
    """One call's result as the runner and the approvals write it (`transcript.persist_tool_results`)."""

    tool_use_id: str
    name: str
    result: dict[str, Any]
    status: ToolStatus
    effects: NotRequired[list[Effect]]  # stored with the part, never sent to a model


class StoredToolResultPart(ToolResult):
    type: Literal["tool_result"]


class MediaRefPart(TypedDict):
    """An attachment as a user message stores it (`media.store`): its object's key in the default
    storage, not its bytes (`transcript.neutral_part` reads them back)."""

    type: Literal["image", "document"]
    media_type: str
    media_ref: str
    name: str
    meta: NotRequired[dict[str, int]]  # `uploads.Upload.meta`: size; width and height, or pages


AnswerPart = TextPart | ReasoningPart | ToolUsePart  # what a model call's answer holds (`loop.answer_parts`)
StoredPart = AnswerPart | StoredToolResultPart | MediaRefPart  # what `transcript.add_message` takes


# --- what `run_agent` yields: (name, payload) ---------------------------------------------------


class TokenPayload(TypedDict):
    text: str


class ToolUsePayload(TypedDict):
    id: str
    name: str
    input: dict[str, Any]


class ToolResultPayload(TypedDict):
    id: str
    name: str
    status: ToolStatus
    result: dict[str, Any]


class ErrorPayload(TypedDict):
    code: str
    message: str
    retry_after_seconds: NotRequired[int]


class DonePayload(TypedDict):
    message_id: int | None
    stop_reason: str
    usage: Usage


class ApprovalPayload(TypedDict):
    id: str
    name: str
    input: dict[str, Any]
    description: str
    detail: str  # what will change, for the person deciding ("" when the tool says nothing more)


class ConfirmPayload(TypedDict):
    approvals: list[ApprovalPayload]


EventName = Literal["token", "reasoning", "tool_use", "tool_result", "effects", "error", "done", "confirm"]
# One event: the payload's type follows the name. Dispatch on the name with `match event[0]` (or
# `item[1]` for a `StreamItem`), which narrows the whole tuple, and end with `assert_never` on it: a
# type checker then names any kind left out. (Unpacked first, name and payload no longer narrow together.)
LoopEvent = (
    tuple[Literal["token", "reasoning"], TokenPayload]
    | tuple[Literal["tool_use"], ToolUsePayload]
    | tuple[Literal["tool_result"], ToolResultPayload]
    | tuple[Literal["effects"], list[Effect]]
    | tuple[Literal["error"], ErrorPayload]
    | tuple[Literal["done"], DonePayload]
    | tuple[Literal["confirm"], ConfirmPayload]
)
TERMINAL: tuple[EventName, ...] = ("done", "error", "confirm")

# What a turn's channel (`agent.hub`) holds: its events, and in a bus's copy of it a heartbeat in the
# place of each event trimmed off the bus. The channel keeps names and payloads as two parallel lists
# (no tuple per token), so each list is typed loosely and a reader of both types them back together
# (`TurnChannel.since` with a cast; `follow` reads the lists as `Any`, which costs nothing per token).
StreamName = EventName | Literal["heartbeat"]
StreamEvent = LoopEvent | tuple[Literal["heartbeat"], None]
Payload = (
    TokenPayload
    | ToolUsePayload
    | ToolResultPayload
    | list[Effect]
    | ErrorPayload
    | DonePayload
    | ConfirmPayload
    | None
)


def unknown_kind(event: Never) -> None:
    """The last case of a `match` over an event's kinds: a type checker names any kind of ours left out
    (as `assert_never` would); at run time it lets pass an event of a kind this version does not know,
    which a newer worker may publish on the bus during a rolling deploy."""


# What a follower yields (`agent.follow`) and a surface encodes (`agent.sse`): (SSE id, name, payload),
# the id None for what was not numbered (a heartbeat, an event rebuilt from the transcript).
StreamItem = (
    tuple[int | None, Literal["token", "reasoning"], TokenPayload]
    | tuple[int | None, Literal["tool_use"], ToolUsePayload]
    | tuple[int | None, Literal["tool_result"], ToolResultPayload]
    | tuple[int | None, Literal["effects"], list[Effect]]
    | tuple[int | None, Literal["error"], ErrorPayload]
    | tuple[int | None, Literal["done"], DonePayload]
    | tuple[int | None, Literal["confirm"], ConfirmPayload]
    | tuple[int | None, Literal["heartbeat"], None]
)


class Phase(Enum):
    """Marks between a run's events, yielded only for a driver that asks (`Run.marks_phases`): what
    follows `MODEL` up to `DATABASE` is one model call's stream and touches no database; what
    follows `DATABASE` (or the start) may. The background driver (`agent.turns`) runs the first kind
    in the turn's own greenlet and the second in a runner, so a turn holds no connection while the
    model streams. Never published, never sent: they are not events."""

    MODEL = "model"
    DATABASE = "database"


#: What neither database can hold nor look up: a NUL, and a surrogate (JSON may escape a lone one, and
#: Python's parser reads one encoded in UTF-8 too; a pair is read as the one character it stands for).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: Any) -> Any:
    """Parsed JSON with every NUL and lone surrogate, in strings and keys, as U+FFFD: what a request's
    body says (the chat's API, `/mcp`), once. Not for a model's answer: the loop reads its text once
    per event, keeping a pair split across two events whole (`agent.loop`)."""
    if isinstance(value, str):
        return UNSTORABLE.sub("\ufffd", value) if UNSTORABLE.search(value) else value
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value


def nothing_visible(text: str) -> bool:
    """Whether `text` shows nothing: empty, or only spaces and invisible characters (separators, control
    and format characters such as the zero-width space and joiners). A name or title of these is none."""
    return all(unicodedata.category(c)[0] in "ZC" for c in text)


def without_nul(value: Any) -> Any:
    """`value` with every NUL character, in strings and in keys, as U+FFFD: PostgreSQL's text and JSON
    columns (and its query parameters) cannot hold NUL, which a model may write (a post's text can ask
    it to) and a JSON body may carry (`\\u0000`). The loop applies it once per answer and per tool
    call, never per token: the stream sends the words as the model wrote them."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_nul(v) for v in value]
    return value
