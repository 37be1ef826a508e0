"""The statements every turn makes, written by hand through Django's documented cursor.

Building a query with the ORM costs many times what running it costs, and a turn's start, its
writes and its end are the same few statements every time; so these few are written once here,
for SQLite and PostgreSQL alike, and everything else goes through the ORM. Each value is prepared
for the database by its own column's field (`Field.get_db_prep_value`) and each read value
converted back by it (`Field.from_db_value`), as the ORM would; table and column names come from
the models' `_meta`, so a renamed column cannot drift from its SQL.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Model

from agent.models import Message, Part, Session, Turn


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _prep(model: type[Model], name: str, value: Any) -> Any:
    """A value compared with a column, as a lookup prepares it."""
    return model._meta.get_field(name).get_db_prep_value(value, connection)


def _prep_save(model: type[Model], name: str, value: Any) -> Any:
    """A value written to a column, as `save()` prepares it (None is SQL NULL, also for JSON)."""
    return model._meta.get_field(name).get_db_prep_save(value, connection)


def _insert(model: type[Model], values: dict[str, Any]) -> Any:
    """INSERT one row of `values` (field name -> Python value); returns the new row's id."""
    columns = ", ".join(_column(model, name) for name in values)
    marks = ", ".join(["%s"] * len(values))
    params = [_prep_save(model, name, value) for name, value in values.items()]
    sql = f"INSERT INTO {_table(model)} ({columns}) VALUES ({marks})"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"{sql} RETURNING {_column(model, 'id')}", params)
            return cursor.fetchone()[0]
        cursor.execute(sql, params)
        return cursor.lastrowid


def _update(model: type[Model], changes: dict[str, Any], where: dict[str, Any], null: Iterable[str] = ()) -> int:
    """UPDATE the rows matching `where` (field = value, and the fields of `null` IS NULL); returns
    how many rows changed."""
    assignments = ", ".join(f"{_column(model, name)} = %s" for name in changes)
    conditions = [f"{_column(model, name)} = %s" for name in where]
    conditions += [f"{_column(model, name)} IS NULL" for name in null]
    params = [_prep_save(model, name, value) for name, value in changes.items()]
    params += [_prep(model, name, value) for name, value in where.items()]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_table(model)} SET {assignments} WHERE {' AND '.join(conditions)}", params)
        return cursor.rowcount


# --- a turn's lease ---------------------------------------------------------------------------


def insert_turn(turn: Turn) -> None:
    """Write a new, running turn (its id, session and start are set)."""
    _insert(
        Turn,
        {
            "id": turn.pk,
            "session": turn.session_id,
            "status": turn.status,
            "stop_requested": False,
            "terminal_event": "",
            "created_at": turn.created_at,
        },
    )


def take_lease(session: Session, turn: Turn, until: Any, now: Any, *, only_if_nobody_waits: bool) -> bool:
    """Give the session's lease to `turn` if no turn holds it (and, if asked, nothing waits for a
    person); one conditional UPDATE, so two workers can never both take it."""
    where: dict[str, Any] = {"id": session.pk}
    if only_if_nobody_waits:
        where["awaiting_people"] = False
    changes = {"turn": turn.pk, "lease_until": until, "updated_at": now}
    return bool(_update(Session, changes, where, null=("turn",)))


def give_lease_back(session_id: Any, turn: Turn) -> None:
    """Clear the session's lease if `turn` still holds it."""
    _update(Session, {"turn": None, "lease_until": None}, {"id": session_id, "turn": turn.pk})


def end_turn(turn: Turn, changes: dict[str, Any]) -> None:
    _update(Turn, changes, {"id": turn.pk})


# --- the transcript ---------------------------------------------------------------------------


def next_position(session: Session) -> int:
    """The position after the session's last message (0 for a new session)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT MAX({_column(Message, 'position')}) FROM {_table(Message)} WHERE {_column(Message, 'session')} = %s",
            [_prep(Message, "session", session.pk)],
        )
        last = cursor.fetchone()[0]
    return 0 if last is None else last + 1


MESSAGE_FIELDS = (
    "session",
    "turn",
    "role",
    "position",
    "backend",
    "model_id",
    "stop_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "tools_offered",
    "created_at",
)
PART_FIELDS = (
    "message",
    "position",
    "type",
    "text",
    "tool_use_id",
    "tool_name",
    "tool_input",
    "tool_result",
    "tool_status",
    "media_type",
    "media_ref",
    "signature",
    "effects",
)


def insert_message(message: Message, parts: list[Part]) -> None:
    """Write a new message and its parts (the caller holds the transaction); sets their ids."""
    values = {name: getattr(message, message._meta.get_field(name).attname) for name in MESSAGE_FIELDS}
    message.pk = _insert(Message, values)
    for part in parts:
        part.message_id = message.pk
        part.pk = _insert(Part, {name: getattr(part, part._meta.get_field(name).attname) for name in PART_FIELDS})


READ_PART_FIELDS = (
    "type",
    "text",
    "signature",
    "tool_use_id",
    "tool_name",
    "tool_input",
    "tool_result",
    "tool_status",
    "media_type",
    "media_ref",
)
_JSON = ("tool_input", "tool_result")


def parts_after(session: Session, after: int) -> list[tuple[int, str, Part]]:
    """(message position, message role, part) of every part of the messages after position `after`,
    in order; a message without parts has no row."""
    m, p = _table(Message), _table(Part)
    part_columns = ", ".join(f"{p}.{_column(Part, name)}" for name in READ_PART_FIELDS)
    position, role = f"{m}.{_column(Message, 'position')}", f"{m}.{_column(Message, 'role')}"
    sql = (
        f"SELECT {position}, {role}, {part_columns} FROM {p}"
        f" INNER JOIN {m} ON ({p}.{_column(Part, 'message')} = {m}.{_column(Message, 'id')})"
        f" WHERE {m}.{_column(Message, 'session')} = %s AND {position} > %s"
        f" ORDER BY {position}, {p}.{_column(Part, 'position')}"
    )
    json_fields = {name: Part._meta.get_field(name) for name in _JSON}
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(Message, "session", session.pk), after])
        rows = cursor.fetchall()
    out = []
    for position_value, role_value, *values in rows:
        fields = dict(zip(READ_PART_FIELDS, values, strict=True))
        for name, field in json_fields.items():
            fields[name] = field.from_db_value(fields[name], None, connection)
        out.append((position_value, role_value, Part(**fields)))
    return out
