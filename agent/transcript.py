"""Reading the transcript as neutral messages and writing it back, one short write at a time."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.utils import timezone

from agent import sql
from agent.backends.reasoning import configured as reasoning_setting
from agent.models import Approval, Message, Part, Session, Spend
from agent.state import Run
from agent.values import (
    AnswerPart,
    DocumentPart,
    ImagePart,
    NeutralMessage,
    ReasoningPart,
    Role,
    StoredPart,
    ToolResult,
    ToolUsePart,
    Usage,
)
from agent.values import Part as NeutralPart

Origin = tuple[str, str]  # (backend name, model id) of a model call

ORPHAN_RESULT = {"error": "This tool call was interrupted before it ran."}


def build_neutral_messages(session: Session, *, origin: Origin | None = None) -> list[NeutralMessage]:
    """The whole transcript in the neutral shape (docs/engine.md, "Backends"), oldest first. Messages
    without parts are skipped. With an `origin` (backend name, model id) it is what that model is
    sent: provider state made by another backend or model is left out (`part_for_model`)."""
    return [message for _, message in read_after(session, -1, origin=origin)]


def read_after(session: Session, after: int, *, origin: Origin | None = None) -> list[tuple[int, NeutralMessage]]:
    """The messages after position `after` as (position, neutral message) for a model call, in one
    query; `origin` as in `build_neutral_messages`."""
    pairs: list[tuple[int, NeutralMessage]] = []
    parts: list[NeutralPart] = []
    last = None
    for position, role, part in sql.parts_after(session, after):
        if position != last:
            last, parts = position, []
            pairs.append((position, {"role": role, "parts": parts}))
        parts.append(part_for_model(part, origin))
    return pairs


def neutral_part(part: Part) -> NeutralPart:
    """A part in the neutral shape, without provider state (`part_for_model` adds it back)."""
    match part.type:
        case "text":
            return {"type": "text", "text": part.text}
        case "reasoning":
            reasoning: ReasoningPart = {"type": "reasoning", "text": part.text}
            if part.signature:
                reasoning["signature"] = part.signature
            return reasoning
        case "tool_use":
            return {"type": "tool_use", "id": part.tool_use_id, "name": part.tool_name, "input": part.tool_input or {}}
        case "tool_result":
            return {
                "type": "tool_result",
                "tool_use_id": part.tool_use_id,
                "name": part.tool_name,
                "result": part.tool_result or {},
                "status": "error" if part.tool_status == "error" else "ok",
            }
        case "image":
            image: ImagePart = {"type": "image", "media_type": part.media_type, "data": load_media(part.media_ref)}
            if part.text:
                image["name"] = part.text
            # Beyond CONTRACT §3 (adapters ignore them; `values.ImagePart`): the attachment's id, by
            # which the model and tools name it, and its facts (size; width and height, or pages).
            if part.pk is not None:
                image["id"] = part.pk
            if part.media_meta:  # (`uploads.Upload.meta`, as stored)
                image.update(part.media_meta)
            return image
        case "document":
            document: DocumentPart = {
                "type": "document",
                "media_type": part.media_type,
                "data": load_media(part.media_ref),
                "name": part.text or "document",
            }
            if part.pk is not None:
                document["id"] = part.pk
            if part.media_meta:  # (`uploads.Upload.meta`, as stored)
                document.update(part.media_meta)
            return document
    raise ValueError(f"Unknown part type {part.type!r}")


def part_to_neutral(part: Part) -> Mapping[str, Any]:
    """A part as people and API clients see it: no provider state; redacted reasoning says so."""
    neutral = neutral_part(part)
    return {**neutral, "redacted": True} if is_redacted(part) else neutral


def is_redacted(part: Part) -> bool:
    """Reasoning the provider encrypted: kept for the provider, shown to people as "redacted thinking"."""
    return part.type == "reasoning" and isinstance(part.provider_data, dict) and "redacted" in part.provider_data


def part_for_model(part: Part, origin: Origin | None = None) -> NeutralPart:
    """A part as a model call is sent it. Its provider state (`provider_data`, a signature) goes
    only to the backend and model that made it: with an `origin` (backend name, model id) that is
    another, the state is left out; without one, all of it is kept. A signature stored before the
    origin was recorded is kept (nothing says it came from elsewhere)."""
    d = neutral_part(part)
    if d["type"] != "reasoning" and d["type"] != "tool_use":
        return d  # (only reasoning and tool calls carry provider state: `_part_row`)
    if part.provider_backend and origin is not None and (part.provider_backend, part.provider_model) != origin:
        if d["type"] == "reasoning":
            d.pop("signature", None)
    elif part.provider_data is not None:
        d["provider_data"] = part.provider_data
    return d


def load_media(ref: str) -> bytes:
    """Resolve a media reference through Django's default storage."""
    with default_storage.open(ref, "rb") as fh:
        return fh.read()


def next_position(session: Session) -> int:
    """The position after the session's last message (0 for a new session)."""
    return sql.next_position(session)


def add_message(
    run: Run, role: Role, parts: Sequence[StoredPart], *, also: Iterable[Spend] = (), **fields: Any
) -> Message:
    """Append one message with its parts, and the unsaved ledger rows `also` (of the model call it
    answers), all or none, in one short transaction.

    Only the holder of the session's lease adds messages, so the run keeps the next position once
    it knows it; the unique (session, position) constraint turns any mistake into an error, never
    into a reordered transcript.
    """
    position = run.next_position if run.next_position is not None else next_position(run.session)
    message = Message(
        session=run.session, turn=run.turn, role=role, position=position, created_at=timezone.now(), **fields
    )
    rows = [_part_row(message, i, p) for i, p in enumerate(parts)]
    try:
        with transaction.atomic():
            sql.insert_message(message, rows)
            for row in also:
                sql.insert_spend(row)
    except Exception:
        run.next_position = None  # ask the database next time
        raise
    run.next_position = position + 1
    if run.history is not None:  # the run's loaded transcript stays as a fresh read would find it
        neutral = [part_for_model(row) for row in rows]  # (this run's own calls: their state is kept)
        if neutral:
            run.history.append((position, {"role": role, "parts": neutral}))
    return message


def _part_row(message: Message, position: int, p: StoredPart) -> Part:
    row = Part(message=message, position=position, type=p["type"])
    match p["type"]:
        case "text":
            row.text = p.get("text", "")
        case "reasoning":
            row.text = p.get("text", "")
            row.signature = p.get("signature") or ""
            _keep_state(row, p)
        case "tool_use":
            row.tool_use_id, row.tool_name, row.tool_input = str(p["id"]), p["name"], p.get("input") or {}
            _keep_state(row, p)
        case "tool_result":
            row.tool_use_id, row.tool_name = str(p["tool_use_id"]), p.get("name", "")
            row.tool_result, row.tool_status = p["result"], p.get("status", "ok")
            row.effects = list(p.get("effects") or [])
        case _:  # an attachment ("image", "document")
            row.media_type, row.media_ref, row.text = p.get("media_type", ""), p.get("media_ref", ""), p.get("name", "")
            row.media_meta = p.get("meta") or None
    if row.provider_data is not None or row.signature:  # which backend and model the state goes back to
        row.provider_backend, row.provider_model = message.backend, message.model_id
    return row


def _keep_state(row: Part, p: ReasoningPart | ToolUsePart) -> None:
    """Provider state comes only with reasoning and tool calls (`part_for_model` sends it back)."""
    if isinstance(data := p.get("provider_data"), dict):
        row.provider_data = data


def persist_assistant(
    run: Run,
    *,
    parts: list[AnswerPart],
    usage: Usage,
    stop_reason: str,
    backend: str,
    model_id: str,
    cost_usd: Decimal,
    tools_offered: list[str],
    also: Iterable[Spend] = (),
) -> Message:
    """A model call's answer: its parts in the order the model wrote them (`loop.answer_parts`)."""
    return add_message(
        run,
        Message.ASSISTANT,
        parts,
        backend=backend,
        model_id=model_id,
        stop_reason=stop_reason,
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_read_tokens=usage.get("cache_read_tokens", 0),
        cache_write_tokens=usage.get("cache_write_tokens", 0),
        cost_usd=cost_usd,
        tools_offered=tools_offered,
        reasoning=str(reasoning_setting() or ""),
        also=also,
    )


def persist_tool_results(run: Run, results: list[ToolResult]) -> Message:
    """One tool-role message holding every result of one model call, in call order."""
    return add_message(run, Message.TOOL, [{"type": "tool_result", **r} for r in results])


def repair_orphans(run: Run) -> int:
    """Answer every tool_use that has no tool_result with an error result; returns how many were answered.

    A call still waiting on its Approval is no orphan: a person may have approved it, and the next
    run answers it (`approvals.settle`) with what the decision says, once.
    """
    session = run.session
    used = Part.objects.filter(message__session=session, type="tool_use").values_list("tool_use_id", "tool_name")
    answered = set(
        Part.objects.filter(message__session=session, type="tool_result").values_list("tool_use_id", flat=True)
    )
    answered.update(Approval.objects.filter(session=session, resolved=False).values_list("tool_use_id", flat=True))
    orphans = [(uid, name) for uid, name in used if uid not in answered]
    if orphans:
        run.next_position = None  # a failed write may have left the run unsure where the transcript ends
        persist_tool_results(
            run,
            [
                {"tool_use_id": uid, "name": name, "result": dict(ORPHAN_RESULT), "status": "error"}
                for uid, name in orphans
            ],
        )
    return len(orphans)


def release_connection() -> None:
    """Give the database connection back before waiting on a model or a follower's next event.

    A turn or a stream waits for seconds; holding a connection meanwhile would need one per open
    stream (PostgreSQL allows 100 by default). With Django's PostgreSQL pool, closing returns it to
    the pool; the next query takes one again. A SQLite connection is a file handle of this process,
    limited by nothing but memory, and opening one costs more than the queries a turn makes
    between two waits: it is kept.
    """
    if connection.vendor != "sqlite" and not connection.in_atomic_block:
        connection.close()
