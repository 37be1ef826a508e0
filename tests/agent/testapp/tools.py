"""The notebook's tools, registered with the engine at start-up (`NotesConfig.ready`)."""

from __future__ import annotations

from typing import Any

from agent.models import Session
from agent.tools import register
from tests.agent.testapp.models import Note
from tests.agent.testapp.policy import notebook_of

NOTE_ID = {"type": "object", "properties": {"note_id": {"type": "integer"}}, "required": ["note_id"]}


def in_a_notebook(session: Session, name: str) -> bool:
    """Offered and run only in a chat tied to a notebook."""
    return notebook_of(session) is not None


def list_notes(session: Session, query: str = "") -> list[dict[str, Any]]:
    notes = Note.objects.filter(notebook=notebook_of(session), title__icontains=query).order_by("pk")
    return [{"id": n.pk, "title": n.title} for n in notes]


def read_note(session: Session, note_id: int) -> dict[str, Any]:
    note = Note.objects.filter(notebook=notebook_of(session), pk=note_id).first()
    if note is None:
        return {"error": f"There is no note #{note_id}."}
    return {"id": note.pk, "title": note.title, "body": note.body}


def write_note(session: Session, title: str, body: str = "") -> dict[str, Any]:
    note = Note.objects.create(notebook=notebook_of(session), title=title, body=body)
    return {"id": note.pk, "_effects": [{"type": "note.written", "id": note.pk}]}


def delete_note(session: Session, note_id: int) -> dict[str, Any]:
    deleted, _ = Note.objects.filter(notebook=notebook_of(session), pk=note_id).delete()
    if not deleted:
        return {"error": f"There is no note #{note_id}."}
    return {"deleted": note_id, "_effects": [{"type": "note.deleted", "id": note_id}]}


def describe_delete(session: Session, name: str, data: dict[str, Any]) -> str:
    note = Note.objects.filter(notebook=notebook_of(session), pk=data.get("note_id")).first()
    return f"Delete the note “{note.title}”" if note else f"Delete note #{data.get('note_id')}"


def register_tools() -> None:
    common = {"purposes": ("chat",), "available": in_a_notebook}
    register(
        "list_notes",
        description="List the notebook's notes, optionally those whose title contains `query`.",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        writes=False,
        **common,
    )(list_notes)
    register("read_note", description="Read one note.", input_schema=NOTE_ID, writes=False, **common)(read_note)
    register(
        "write_note",
        description="Write a new note.",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string", "minLength": 1}, "body": {"type": "string"}},
            "required": ["title"],
        },
        **common,
    )(write_note)
    register(
        "delete_note", description="Delete a note for good.", input_schema=NOTE_ID, describe=describe_delete, **common
    )(delete_note)
