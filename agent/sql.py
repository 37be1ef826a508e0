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
from functools import cache
from typing import Any

from django.db import connection
from django.db.models import Field, JSONField, Model

from agent.models import ContextSummary, Message, Part, Session, Spend, Turn
from agent.values import Role


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    """One of the model's own fields by name (what this module names: never a reverse relation)."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return field


def _column(model: type[Model], name: str) -> str:
    column = _field(model, name).column
    assert column is not None  # (a field of the model's own has its column)
    return connection.ops.quote_name(column)


@cache
def _insert_sql(model: type[Model], names: tuple[str, ...], vendor: str) -> str:
    columns = ", ".join(_column(model, name) for name in names)
    sql = f"INSERT INTO {_table(model)} ({columns}) VALUES ({', '.join(['%s'] * len(names))})"
    return f"{sql} RETURNING {_column(model, 'id')}" if vendor == "postgresql" else sql


@cache
def _update_sql(model: type[Model], changes: tuple[str, ...], where: tuple[str, ...], null: tuple[str, ...]) -> str:
    assignments = ", ".join(f"{_column(model, name)} = %s" for name in changes)
    conditions = [f"{_column(model, name)} = %s" for name in where]
    conditions += [f"{_column(model, name)} IS NULL" for name in null]
    return f"UPDATE {_table(model)} SET {assignments} WHERE {' AND '.join(conditions)}"


def _prep(model: type[Model], name: str, value: Any) -> Any:
    """A value compared with a column, as a lookup prepares it."""
    return _field(model, name).get_db_prep_value(value, connection)


def _prep_save(model: type[Model], name: str, value: Any) -> Any:
    """A value written to a column, as `save()` prepares it (None is SQL NULL, also for JSON)."""
    return _field(model, name).get_db_prep_save(value, connection)


def _values(obj: Model, names: tuple[str, ...]) -> dict[str, Any]:
    """The instance's value of each named field (a relation's id, not its object)."""
    return {name: getattr(obj, _field(type(obj), name).attname) for name in names}


def _insert(model: type[Model], values: dict[str, Any]) -> Any:
    """INSERT one row of `values` (field name -> Python value); returns the new row's id."""
    params = [_prep_save(model, name, value) for name, value in values.items()]
    with connection.cursor() as cursor:
        cursor.execute(_insert_sql(model, tuple(values), connection.vendor), params)
        return cursor.fetchone()[0] if connection.vendor == "postgresql" else cursor.lastrowid


def _update(model: type[Model], changes: dict[str, Any], where: dict[str, Any], null: Iterable[str] = ()) -> int:
    """UPDATE the rows matching `where` (field = value, and the fields of `null` IS NULL); returns
    how many rows changed."""
    params = [_prep_save(model, name, value) for name, value in changes.items()]
    params += [_prep(model, name, value) for name, value in where.items()]
    with connection.cursor() as cursor:
        cursor.execute(_update_sql(model, tuple(changes), tuple(where), tuple(null)), params)
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


def take_lease(session: Session, turn: Turn, until: Any, now: Any, *, awaiting_people: bool | None) -> bool:
    """Give the session's lease to `turn` if no turn holds it (and, unless `awaiting_people` is None,
    only if calls wait for a person or only if none do); one conditional UPDATE, so two workers can
    never both take it."""
    where: dict[str, Any] = {"id": session.pk}
    if awaiting_people is not None:
        where["awaiting_people"] = awaiting_people
    changes = {"turn": turn.pk, "lease_until": until, "updated_at": now}
    return bool(_update(Session, changes, where, null=("turn",)))


def give_lease_back(session_id: Any, turn: Turn) -> None:
    """Clear the session's lease if `turn` still holds it."""
    _update(Session, {"turn": None, "lease_until": None}, {"id": session_id, "turn": turn.pk})


def end_turn(turn: Turn, changes: dict[str, Any]) -> None:
    _update(Turn, changes, {"id": turn.pk})


# --- the transcript ---------------------------------------------------------------------------


@cache
def _select_sql(model: type[Model], what: str, where: tuple[str, ...], vendor: str) -> str:
    conditions = " AND ".join(f"{_column(model, name)} = %s" for name in where)
    return f"SELECT {what} FROM {_table(model)} WHERE {conditions}"


def next_position(session: Session) -> int:
    """The position after the session's last message (0 for a new session)."""
    what = f"MAX({_column(Message, 'position')})"
    with connection.cursor() as cursor:
        cursor.execute(
            _select_sql(Message, what, ("session",), connection.vendor), [_prep(Message, "session", session.pk)]
        )
        last = cursor.fetchone()[0]
    return 0 if last is None else last + 1


def model_calls(session: Session) -> int:
    """How many of the session's messages are the assistant's (its model calls so far)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _select_sql(Message, "COUNT(*)", ("session", "role"), connection.vendor),
            [_prep(Message, "session", session.pk), Message.ASSISTANT],
        )
        return cursor.fetchone()[0]


SUMMARY_FIELDS = ("id", "session", "up_to_position", "text", "model_id", "input_tokens", "output_tokens", "cost_usd")


def latest_summary(session: Session) -> ContextSummary | None:
    """The summary of the session's older messages that covers the most, if any."""
    columns = ", ".join(_column(ContextSummary, name) for name in SUMMARY_FIELDS)
    sql = _select_sql(ContextSummary, columns, ("session",), connection.vendor)
    sql += f" ORDER BY {_column(ContextSummary, 'up_to_position')} DESC LIMIT 1"
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(ContextSummary, "session", session.pk)])
        row = cursor.fetchone()
    if row is None:
        return None
    values = dict(zip(SUMMARY_FIELDS, row, strict=True))
    cost = ContextSummary._meta.get_field("cost_usd")
    values["cost_usd"] = cost.to_python(values["cost_usd"])
    values["session_id"] = values.pop("session")
    return ContextSummary(**values)


SPEND_FIELDS = ("user", "created_at", "model_id", "tokens", "cost_usd", "settled")


def insert_spend(row: Spend) -> None:
    """Write a new ledger row; sets its id."""
    row.pk = _insert(Spend, _values(row, SPEND_FIELDS))


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
    "reasoning",
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
    "media_meta",
    "signature",
    "provider_data",
    "provider_backend",
    "provider_model",
    "effects",
)


def insert_message(message: Message, parts: list[Part]) -> None:
    """Write a new message and its parts (the caller holds the transaction); sets their ids."""
    message.pk = _insert(Message, _values(message, MESSAGE_FIELDS))
    for part in parts:
        part.message_id = message.pk
        part.pk = _insert(Part, _values(part, PART_FIELDS))


# (with the part's id: an attachment is named to the model by it)
READ_PART_FIELDS = ("id", *(name for name in PART_FIELDS if name not in ("message", "position", "effects")))
_JSON = ("tool_input", "tool_result", "provider_data", "media_meta")


def _json_field(name: str) -> JSONField[Any, Any]:
    field = Part._meta.get_field(name)
    assert isinstance(field, JSONField)
    return field


@cache
def _parts_after_sql(vendor: str) -> str:
    m, p = _table(Message), _table(Part)
    part_columns = ", ".join(f"{p}.{_column(Part, name)}" for name in READ_PART_FIELDS)
    position, role = f"{m}.{_column(Message, 'position')}", f"{m}.{_column(Message, 'role')}"
    return (
        f"SELECT {position}, {role}, {part_columns} FROM {p}"
        f" INNER JOIN {m} ON ({p}.{_column(Part, 'message')} = {m}.{_column(Message, 'id')})"
        f" WHERE {m}.{_column(Message, 'session')} = %s AND {position} > %s"
        f" ORDER BY {position}, {p}.{_column(Part, 'position')}"
    )


def parts_after(session: Session, after: int) -> list[tuple[int, Role, Part]]:
    """(message position, message role, part) of every part of the messages after position `after`,
    in order; a message without parts has no row. (The role column holds only `Message.ROLES`.)"""
    sql = _parts_after_sql(connection.vendor)
    json_fields = {name: _json_field(name) for name in _JSON}
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(Message, "session", session.pk), after])
        rows = cursor.fetchall()
    out = []
    for position_value, role_value, *values in rows:
        fields = dict(zip(READ_PART_FIELDS, values, strict=True))
        for name, field in json_fields.items():
            # (JSONField reads `expression` only to spot a key transform: None says there is none; the stubs want one)
            fields[name] = field.from_db_value(fields[name], None, connection)  # type: ignore[arg-type]
        out.append((position_value, role_value, Part(**fields)))
    return out
