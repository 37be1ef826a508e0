"""The transcript shaped for people: user bubbles and assistant turns with text, thinking and tool chips."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import regex
from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Substr
from django.urls import reverse
from django.utils import timezone

from agent import logcontext
from agent.approvals import NOT_APPROVED, REJECTED
from agent.attachments import human_size
from agent.loop import retry_helps
from agent.markdown import rendered
from agent.models import Approval, Message, Part, Session, Turn
from agent.tools import REGISTRY, Shown
from agent.transcript import is_redacted

logger = logcontext.get_logger("agent.display")

REDACTED_THINKING = "Redacted thinking (the provider keeps it encrypted)."
# What people are told when an answer did not end normally.
STOP_NOTES = {
    "stopped": "Stopped.",
    "max_tokens": "The answer was cut off (it reached its length limit).",
    "incomplete": "The answer may be incomplete: the model stopped without finishing normally.",
    "content_filtered": "A content filter stopped this answer.",  # (Azure's, a Bedrock guardrail: often mid-word)
    "refusal": "The model declined to answer this request.",  # (Claude's `refusal` may come with no text at all)
}
TOOL_LABELS = {
    "ok": "done",
    "error": "failed",
    "declined": "not approved",
    "running": "running",
    "waiting": "awaiting your OK",
}
#: What an answered call says when a person rejected it or let it lapse (`agent.approvals`).
DECLINED = frozenset((REJECTED, NOT_APPROVED))


def _error_of(result: Any) -> Any:
    return result.get("error") if isinstance(result, dict) else None


def lapsed(result: Any) -> bool:
    """Whether a result answers a call nobody decided before the chat went on (or it expired)."""
    return _error_of(result) == NOT_APPROVED


def shown_status(status: str, result: Any) -> str:
    """A result's status as people read it: a call a person turned down was declined, not failed."""
    return "declined" if status == "error" and _error_of(result) in DECLINED else status


def chip_id(tool_use_id: str) -> str:
    # Tool call ids are unique within a session, and a resumed turn updates a paused turn's chip.
    return "chip-" + re.sub(r"[^A-Za-z0-9_-]", "_", str(tool_use_id))[:120]


def summarize_input(data: Any, order: list[str] | None = None, limit: int = 60) -> str:
    """A short, plain summary of a tool's input for its chip (escaped by the template).

    Keys follow the tool's schema order, so the chip reads the same live and after a reload
    (PostgreSQL's jsonb does not keep key order).
    """
    if not isinstance(data, dict) or not data:
        return ""
    rank = {key: i for i, key in enumerate(order or [])}
    keys = sorted(data, key=lambda k: (rank.get(k, len(rank)), k))
    bits = []
    for key in keys[:2]:
        value = data[key]
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        bits.append(f"{key}: {shown}")
    return shortened(", ".join(bits).replace("\n", " "), limit)


_GRAPHEME = regex.compile(r"\X")  # what a reader sees as one character (Unicode's extended grapheme cluster)


def shortened(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, ending in "…" when cut; never cut inside what a reader sees
    as one character (a hand and its skin tone, a flag's two letters, a family joined by ZWJs, a letter
    and its accent), which would show another emoji, a lone letter or a bare letter instead."""
    if len(text) <= limit:
        return text
    end = 0
    for cluster in _GRAPHEME.finditer(text, 0, limit + 32):  # (a cluster is rarely longer than a few)
        if cluster.end() > limit - 1:
            break
        end = cluster.end()
    return text[:end].rstrip() + "…"


def with_first_words(sessions: QuerySet[Session], chars: int) -> QuerySet[Session]:
    """`sessions` each with `first_words`: the start of its person's first message (a few words more than
    `chars`, or None when nothing was said), read in the same query as the chats."""
    first_text = (
        Part.objects.filter(message__session=OuterRef("pk"), message__role=Message.USER, type="text")
        .exclude(text="")
        .order_by("message__position", "position")
        .values("text")[:1]
    )
    return sessions.annotate(first_words=Substr(Subquery(first_text), 1, chars * 2))


def chat_label(session: Session, chars: int) -> str:
    """What names a chat for people: its title, else its first words (`with_first_words`), in at most
    `chars` characters on one line; "" when it has neither."""
    words = " ".join((session.title or getattr(session, "first_words", None) or "").split())
    return shortened(words, chars)


def meter_display(meter: dict[str, float], threshold: float = 0.8) -> dict[str, int] | None:
    """Whole percentages (capped at 100) of the buckets near their limit; None while all are comfortable."""
    near = {k: min(100, round(v * 100)) for k, v in meter.items() if v >= threshold}
    return near or None


def chip(tool_use_id: str, name: str, status: str, summary: str = "") -> dict[str, Any]:
    """A tool call's chip; `summary` from `summaries`."""
    return {
        "id": chip_id(tool_use_id),
        "name": name,
        "summary": summary,
        "status": status,
        "label": TOOL_LABELS.get(status, status),
    }


def summaries(session: Any, calls: list[tuple[str, Any]]) -> list[str]:
    """Each `(name, input)` call's summary for its chip: the input as its tool's `shown` hook gives
    it (one call of each hook for all its calls), else as the model sent it, in the schema's order."""
    shown: list[dict[str, Any] | None] = [None] * len(calls)
    hooks: dict[Shown, list[int]] = {}
    for i, (name, input) in enumerate(calls):
        tool = REGISTRY.get(name)
        if tool is not None and tool.shown is not None and isinstance(input, dict) and input:
            hooks.setdefault(tool.shown, []).append(i)
    for hook, indexes in hooks.items():
        try:
            said = hook(session, [calls[i] for i in indexes])
            for i, value in zip(indexes, said, strict=True):
                shown[i] = value
        except Exception:  # a chip without names is still a chip: it reads the input as given
            logger.exception("the shown hook of %s failed", calls[indexes[0]][0])
    return [
        summarize_input(said, list(said)) if said is not None else summarize_input(input, _schema_order(name))
        for (name, input), said in zip(calls, shown, strict=True)
    ]


def _schema_order(name: str) -> list[str]:
    tool = REGISTRY.get(name)
    return list((tool.input_schema.get("properties") or {}).keys()) if tool else []


def _mark_waiting(statuses: dict[str, str], session_id: Any) -> None:
    """Calls still waiting for a person's decision read "waiting" (answered calls keep their status)."""
    for uid in Approval.objects.filter(session_id=session_id, resolved=False).values_list("tool_use_id", flat=True):
        statuses.setdefault(uid, "waiting")


def turn_result_statuses(messages: list[Message], session_id: Any) -> dict[str, str]:
    """Each answered tool call's status, and "waiting" for calls a person has yet to decide, for the
    calls of one turn, or of whole turns in a row, from their loaded
    messages (parts prefetched): a call is answered before its chat's next message, or waits for a
    person. At most one query (the waiting ones, when a call has no result), however long the chat."""
    statuses, calls = {}, set()
    for message in messages:
        for part in message.parts.all():
            if part.type == "tool_result":
                statuses[part.tool_use_id] = shown_status(part.tool_status, part.tool_result)
            elif part.type == "tool_use":
                calls.add(part.tool_use_id)
    if calls - statuses.keys():  # only a call without its result may be waiting for a person
        _mark_waiting(statuses, session_id)
    return statuses


def chip_summaries(session: Session | None, messages: list[Message]) -> dict[int, str]:
    """The summary of every tool call among `messages` (parts prefetched), by its part's pk, as shown
    in `session` (theirs; read from a message, only when there is a call, when not given)."""
    calls = [
        part
        for message in messages
        if message.role == Message.ASSISTANT
        for part in message.parts.all()
        if part.type == "tool_use"
    ]
    if not calls:
        return {}
    said = summaries(session or messages[0].session, [(p.tool_name, p.tool_input) for p in calls])
    return {part.pk: text for part, text in zip(calls, said, strict=True)}


def turn_blocks(
    messages: list[Message],
    statuses: dict[str, str],
    session: Session | None = None,
    summary: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Assistant messages of one turn as display blocks, in order; `statuses` from `turn_result_statuses`.
    Chips read `summary` (from `chip_summaries`, made once for a whole page), else their own, shown
    in `session`."""
    if summary is None:
        summary = chip_summaries(session, messages)
    blocks: list[dict[str, Any]] = []
    for message in messages:
        if message.role != Message.ASSISTANT:
            continue
        for part in message.parts.all():
            if part.type == "reasoning" and part.text:
                blocks.append({"kind": "reasoning", "text": part.text})
            elif is_redacted(part):  # kept for the provider; people see only that it was there
                blocks.append({"kind": "reasoning", "text": REDACTED_THINKING})
            elif part.type == "text" and part.text:
                blocks.append({"kind": "text", "html": rendered(part.text)[0]})  # (a long one off the loop)
            elif part.type == "tool_use":
                status = statuses.get(part.tool_use_id, "error")
                blocks.append({"kind": "chip", **chip(part.tool_use_id, part.tool_name, status, summary[part.pk])})
        if note := STOP_NOTES.get(message.stop_reason):
            blocks.append({"kind": "note", "text": note})
    return blocks


#: How many of a chat's latest turns (a person's message and its answer) a page draws; "Earlier
#: messages" brings the turns before them, as many at a time.
TURNS_SHOWN = 20


@dataclass
class Stretch:
    """A stretch of a chat as drawn: its items, the turn still running (None for an earlier stretch),
    and `earlier`: the position where it starts, when messages before it are left for another page."""

    items: list[dict[str, Any]]
    running: Turn | None
    earlier: int | None


def conversation(session: Session, before: int | None = None, turns: int = TURNS_SHOWN) -> Stretch:
    """Display items for the chat's latest `turns` turns (those before position `before`, when given),
    and its running turn, whose replies the stream will bring.

    A stretch starts at a person's message, so a tool call and its result (also one a person let lapse,
    answered before their next message) are always drawn together. The queries do not grow with the
    chat's length: the stretch's start, its messages and parts, their turns, the running turn."""
    # The running turn is read before the messages: an answer that ends in between is then drawn as
    # running (its stream brings the end), its messages left out; read after them, it was neither.
    running = (
        Turn.objects.filter(session=session, status=Turn.RUNNING).order_by("-created_at").first()
        if before is None
        else None
    )
    messages, earlier = _stretch(session, before, turns)
    turn_ids = {m.turn_id for m in messages if m.turn_id is not None}
    found = {t.pk: t for t in Turn.objects.filter(pk__in=turn_ids)} if turn_ids else {}
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == Message.USER:
            items.append(user_item(message, session.pk))
            if message.turn_id != getattr(running, "pk", None):
                items.append({"kind": "assistant", "turn_id": message.turn_id, "messages": []})
        elif message.turn_id != getattr(running, "pk", None):
            if items and items[-1]["kind"] == "assistant" and items[-1]["turn_id"] == message.turn_id:
                items[-1]["messages"].append(message)
            else:
                items.append({"kind": "assistant", "turn_id": message.turn_id, "messages": [message]})
    statuses = turn_result_statuses(messages, session.pk)
    summary = chip_summaries(session, [m for i in items if i["kind"] == "assistant" for m in i["messages"]])
    for item in items:
        if item["kind"] == "assistant":
            _fill(item, found.get(item.pop("turn_id")), item.pop("messages"), statuses, summary)
    drawn = [i for i in items if i["kind"] == "user" or i["blocks"] or i["approvals"] or i["error"]]
    for item in drawn[:-1] if before is None and running is None else drawn:  # (only the chat's last answer)
        item["try_again"] = False
    return Stretch(drawn, running, earlier)


def user_item(message: Message, session_id: Any) -> dict[str, Any]:
    """A person's message as drawn (its parts prefetched)."""
    return {
        "kind": "user",
        "turn_id": message.turn_id,
        "text": " ".join(p.text for p in message.parts.all() if p.type == "text"),
        "attachments": attachment_items(message.parts.all(), session_id),
    }


def _stretch(session: Session, before: int | None, turns: int) -> tuple[list[Message], int | None]:
    """The messages (parts prefetched) of the chat's latest `turns` turns before position `before`, and
    the position they start at when older messages are left out (else None)."""
    mine = session.messages.all() if before is None else session.messages.filter(position__lt=before)
    starts = list(mine.filter(role=Message.USER).order_by("-position").values_list("position", flat=True)[: turns + 1])
    earlier = starts[turns - 1] if len(starts) > turns else None
    return list(mine.filter(position__gte=earlier or 0).prefetch_related("parts").order_by("position")), earlier


BADGES = {"application/pdf": "PDF", "text/plain": "TXT", "text/markdown": "MD"}


def attachment_items(parts: Any, session_id: Any) -> list[dict[str, Any]]:
    """A user message's attachments for its bubble: a thumbnail or a file chip each, with its link."""
    return [
        {
            "id": p.pk,
            "image": p.type == "image",
            "name": p.text or p.type,
            "media_type": p.media_type,
            "badge": BADGES.get(p.media_type, "FILE"),
            "size": human_size((p.media_meta or {}).get("size", 0)),
            "width": (p.media_meta or {}).get("width"),
            "height": (p.media_meta or {}).get("height"),
            "url": reverse("agent:attachment", args=[session_id, p.pk]),
        }
        for p in parts
        if p.type in ("image", "document")
    ]


def _fill(
    item: dict[str, Any], turn: Turn | None, messages: list[Message], statuses: dict[str, str], summary: dict[int, str]
) -> None:
    item["turn_id"] = turn.pk if turn else None
    item["blocks"] = turn_blocks(messages, statuses, summary=summary)
    item["approvals"] = approvals_for(turn) if turn and turn.status == Turn.PAUSED else []
    if turn is not None and turn.status == Turn.ERROR:
        payload = turn.terminal_payload or {}
        item["error"] = payload.get("message", "")
        item["retry_after_seconds"] = retry_left(turn, payload)
        item["try_again"] = retry_helps(payload)
    else:
        item["error"], item["retry_after_seconds"], item["try_again"] = "", None, False


def retry_left(turn: Turn, payload: Mapping[str, Any]) -> int | None:
    """What is left of an error's `retry_after_seconds`, counted from when its turn ended (None once over).

    The error keeps the wait as it was when the turn ended; a page shown later says what remains.
    """
    wait = payload.get("retry_after_seconds")
    if not wait or turn.finished_at is None:
        return wait
    left = wait - int((timezone.now() - turn.finished_at).total_seconds())
    return left if left > 0 else None


def approvals_for(turn: Turn) -> list[dict[str, Any]]:
    """The calls of a paused turn still waiting for a person."""
    return [
        {
            "id": a.pk,
            "chip": chip_id(a.tool_use_id),
            "description": a.description or a.tool_name,
            "name": a.tool_name,
            "detail_lines": detail_lines(a.detail),
        }
        for a in Approval.objects.filter(turn=turn, status=Approval.PENDING, resolved=False).order_by("created_at")
    ]


DIFF_KINDS = {"+": "add", "-": "del"}


def detail_lines(detail: str) -> list[dict[str, str]]:
    """An approval's detail as lines, each marked by its first character: added, removed or kept."""
    return [{"kind": DIFF_KINDS.get(line[:1], "ctx"), "text": line} for line in detail.splitlines()]
