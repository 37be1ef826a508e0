"""Reading the transcript as neutral messages and writing it back, one short autocommit write at a time."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import connection, connections, transaction
from django.db.models import Model

from agent.models import ContextSummary, Message, Part, Session, Turn
from agent.prepared import Columns, Prepared, Slot, Written, columns, convert, insert, insert_linked, new

ORPHAN_RESULT = {"error": "This tool call was interrupted before it ran."}


def build_neutral_messages(session: Session) -> list[dict[str, Any]]:
    """The transcript in CONTRACT §3 shape; one query whatever its length. Empty messages are skipped."""
    return [message for _, message in read_after(session, -1).pairs]


_END_KNOWN = Prepared(lambda: Session.objects.filter(pk=Slot("pk"), next_position__isnull=False))
_LAST_MESSAGE = Prepared(lambda: Message.objects.filter(session=Slot("session")).order_by("-position")[:1])


class Read(NamedTuple):
    pairs: list[tuple[int, dict[str, Any]]]  # (position, neutral message); empty messages are skipped
    end: int  # the position after the last message
    replies: int  # the assistant's messages read, empty ones included
    summary_to: int | None = None  # `read_latest`: the last position the latest summary covers, if any
    awaiting_people: bool = False  # the session's flag: calls of it wait for a person (`approvals`)


def _transcript_sql(after: str) -> Callable[[str], tuple[str, tuple[Columns, Any]]]:
    """One read of a session's messages after a position, with their parts: the session's row LEFT
    JOINed to its messages and theirs to their parts, so a message without parts still tells where
    the transcript ends, and the read returns a row even when there is no message. Its first column
    is the last position the session's latest summary covers (NULL without one), its second the
    session's `awaiting_people`; each part comes as a light row (a named tuple of its columns), not
    a model instance. Params: the session's id, then those of `after` (the position, or the
    session's id again), then its id."""

    def build(alias: str) -> tuple[str, tuple[Columns, Any]]:
        qn = connections[alias].ops.quote_name
        session, message, part = (qn(m._meta.db_table) for m in (Session, Message, Part))
        summary = qn(ContextSummary._meta.db_table)
        # (given the session's id, not correlated with its row: computed once, not once per row)
        covered = f"(SELECT MAX({qn('up_to_position')}) FROM {summary} WHERE {qn('session_id')} = %s)"
        parts = columns(Part, alias)
        sql_text = (
            f"SELECT {covered}, {session}.{qn('awaiting_people')}, {message}.{qn('id')}, {message}.{qn('position')},"
            f" {message}.{qn('role')}, {parts.sql}"
            f" FROM {session} LEFT OUTER JOIN {message} ON ({message}.{qn('session_id')} = {session}.{qn('id')}"
            f" AND {message}.{qn('position')} > {after.format(covered=covered)})"
            f" LEFT OUTER JOIN {part} ON ({part}.{qn('message_id')} = {message}.{qn('id')})"
            f" WHERE {session}.{qn('id')} = %s ORDER BY {message}.{qn('position')}, {part}.{qn('position')}"
        )
        return sql_text, (parts, namedtuple("PartRow", parts.attnames))  # noqa: PYI024

    return build


# Every turn reads its transcript, in one query (agent/prepared.py: written once, not per read).
_AFTER = Written(_transcript_sql("%s"))
_AFTER_SUMMARY = Written(_transcript_sql("COALESCE({covered}, -1)"))


def read_after(session: Session, after: int) -> Read:
    """The messages after position `after`, in one query, with what the same read tells besides:
    the position after the last message, when the message at `after` exists (or `after` is -1), and how many
    of the messages read are the assistant's (all of the session's, when `after` is -1)."""
    sid = _session_id(session)
    return _read(_AFTER, after, [sid, after, sid])


def read_latest(session: Session) -> Read:
    """The messages after what the session's latest summary covers (all, without one), in one query;
    `summary_to` says what that summary covers."""
    sid = _session_id(session)
    return _read(_AFTER_SUMMARY, None, [sid, sid, sid])


def _session_id(session: Session) -> Any:
    return Session._meta.pk.get_db_prep_value(session.pk, _AFTER.connection(), prepared=False)


def _read(written: Written, after: int | None, params: list[Any]) -> Read:
    rows, (parts, row_type) = written.rows(*params)
    connection = written.connection()
    covered = rows[0][0] if rows else None
    pairs: list[tuple[int, dict[str, Any]]] = []
    last, replies, current = None, 0, None
    for row in rows:
        message_id, position, role = row[2], row[3], row[4]
        if message_id is None:
            continue  # (no message after `after`: the session's row alone)
        if message_id != last:
            last, current = message_id, None
            end = position + 1
            replies += role == Message.ASSISTANT
        if row[5] is None:
            continue  # a message without parts
        part = row_type._make(convert(row[5:], parts.converters, connection))
        if current is None:
            current = {"role": role, "parts": []}
            pairs.append((position, current))
        current["parts"].append(part_to_neutral(part))
    if last is None:  # nothing after the start: the transcript ends there
        start = after if after is not None else covered
        end = 0 if start is None else start + 1
    return Read(pairs, end, replies, covered, bool(rows and rows[0][1]))


def part_to_neutral(part: Part) -> dict[str, Any]:
    match part.type:
        case "text":
            return {"type": "text", "text": part.text}
        case "reasoning":
            d = {"type": "reasoning", "text": part.text}
            if part.signature:
                d["signature"] = part.signature
            return d
        case "tool_use":
            return {"type": "tool_use", "id": part.tool_use_id, "name": part.tool_name, "input": part.tool_input or {}}
        case "tool_result":
            return {
                "type": "tool_result",
                "tool_use_id": part.tool_use_id,
                "name": part.tool_name,
                "result": part.tool_result or {},
                "status": part.tool_status or "ok",
            }
        case "image" | "document":
            d = {"type": part.type, "media_type": part.media_type, "data": load_media(part.media_ref)}
            if part.type == "document":
                d["name"] = part.text or "document"
            return d
    raise ValueError(f"Unknown part type {part.type!r}")


def load_media(ref: str) -> bytes:
    """Resolve a media reference through Django's default storage."""
    from django.core.files.storage import default_storage

    with default_storage.open(ref, "rb") as fh:
        return fh.read()


def _next_position(session: Session) -> int:
    """The position after the session's last message.

    Messages are only added by the holder of the session's lease (a turn), so once this session
    object has added one within its turn, or read the transcript to its end (`context.build`), it
    knows the next position without asking (`turns.claim` forgets it at the start of every turn);
    the unique (session, position) constraint turns any mistake into an error, never into a
    reordered transcript.
    """
    known = getattr(session, "_next_message_position", None)
    if known is not None:
        return known
    last = _LAST_MESSAGE.first(session=session)
    return 0 if last is None else last.position + 1


def add_message(
    session: Session,
    role: str,
    parts: list[dict[str, Any]],
    *,
    turn: Turn | None = None,
    also: tuple[Model, ...] = (),
    **fields: Any,
) -> Message:
    """Append one message with its parts, and new rows `also` (the ledger row of the model call it
    answers), all or none: on PostgreSQL one statement (`insert_linked`), elsewhere one short
    transaction."""
    position = _next_position(session)
    message = new(Message, session=session, turn=turn, role=role, position=position, **fields)
    rows = [_part_row(message, i, p) for i, p in enumerate(parts)]
    try:
        if turn is not None:
            insert_linked(message, rows, "message", also)  # (PostgreSQL: one statement, one round trip)
        else:  # one transaction with the UPDATE below (`insert_linked` inside it would nest a savepoint)
            with transaction.atomic():
                insert(message)
                if rows:
                    insert(*rows)
                for row in also:
                    insert(row)
                # No turn's end will record where the transcript ends now: make it unknown.
                _END_KNOWN.update({"next_position": None}, pk=session.pk)
                session.next_position = None
    except Exception:
        session._next_message_position = None  # ask the database next time
        raise
    session._next_message_position = position + 1
    tail = getattr(session, "_transcript_tail", None)
    if tail is not None:  # a context loaded in this run: keep it in step, as a reload would read it
        neutral = [part_to_neutral(row) for row in rows]
        if neutral:
            tail.append((position, {"role": role, "parts": neutral}))
    return message


def forget_loaded(session: Session) -> None:
    """Drop what this session object remembers of the transcript (see `context.build`)."""
    session._context_loaded = None
    session._transcript_tail = None
    session._replies_loaded = None


def _part_row(message: Message, position: int, p: dict[str, Any]) -> Part:
    kind = p["type"]
    row = new(Part, message=message, position=position, type=kind)
    if kind in ("text", "reasoning"):
        row.text = p.get("text", "")
        row.signature = p.get("signature") or ""
    elif kind == "tool_use":
        row.tool_use_id, row.tool_name, row.tool_input = str(p["id"]), p["name"], p.get("input") or {}
    elif kind == "tool_result":
        row.tool_use_id, row.tool_name = str(p["tool_use_id"]), p.get("name", "")
        row.tool_result, row.tool_status = p["result"], p.get("status", "ok")
        row.effects = list(p.get("effects") or [])
    else:
        row.media_type, row.media_ref, row.text = p.get("media_type", ""), p.get("media_ref", ""), p.get("name", "")
    return row


def persist_assistant(
    session: Session,
    *,
    turn: Turn | None,
    text: str,
    reasoning: list[dict[str, Any]],
    tool_uses: list[dict[str, Any]],
    usage: dict[str, int],
    stop_reason: str,
    backend: str,
    model_id: str,
    cost_usd: Decimal,
    tools_offered: list[str],
    also: tuple[Model, ...] = (),
) -> Message:
    parts: list[dict[str, Any]] = [
        {"type": "reasoning", "text": r["text"], "signature": r.get("signature", "")} for r in reasoning
    ]
    if text:
        parts.append({"type": "text", "text": text})
    parts += [{"type": "tool_use", "id": t["id"], "name": t["name"], "input": t.get("input") or {}} for t in tool_uses]
    return add_message(
        session,
        Message.ASSISTANT,
        parts,
        turn=turn,
        backend=backend,
        model_id=model_id,
        stop_reason=stop_reason,
        input_tokens=usage.get("input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
        cache_read_tokens=usage.get("cache_read_tokens", 0),
        cache_write_tokens=usage.get("cache_write_tokens", 0),
        cost_usd=cost_usd,
        tools_offered=tools_offered,
        also=also,
    )


def persist_tool_results(session: Session, *, turn: Turn | None, results: list[dict[str, Any]]) -> Message:
    """One tool-role message holding every result of one model call, in call order."""
    return add_message(session, Message.TOOL, [{"type": "tool_result", **r} for r in results], turn=turn)


def repair_orphans(session: Session, *, turn: Turn | None = None) -> int:
    """Answer every tool_use that has no tool_result with an error result; returns how many were answered."""
    used = Part.objects.filter(message__session=session, type="tool_use").values_list("tool_use_id", "tool_name")
    answered = set(
        Part.objects.filter(message__session=session, type="tool_result").values_list("tool_use_id", flat=True)
    )
    orphans = [(uid, name) for uid, name in used if uid not in answered]
    if orphans:
        persist_tool_results(
            session,
            turn=turn,
            results=[
                {"tool_use_id": uid, "name": name, "result": dict(ORPHAN_RESULT), "status": "error"}
                for uid, name in orphans
            ],
        )
    return len(orphans)


def release_connection() -> None:
    """Give the database connection back before waiting on a model (see NOTES: no pinned connections).

    PostgreSQL: back to psycopg's pool. SQLite: back to the process's small pool of open
    connections (config/sqlite_pool); keeping one connection per waiting greenlet instead would
    cost ~600 KB each (4x the memory per stream, measured).
    """
    if not connection.in_atomic_block:
        connection.close()
