"""Long chats made straight in the database (thousands of rows in a moment), for the tests of what a
page draws of them."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from agent.models import Message, Part, Session, Turn


def long_chat(session: Session, turns: int, *, first: int = 0) -> None:
    """Add `turns` finished turns to `session`: each a person's "question N", then the assistant's
    call of `plain_tool` with its result, and its "answer N" (four messages a turn)."""
    start = timezone.now() - timedelta(days=365)
    position = Message.objects.filter(session=session).count()
    made = Turn.objects.bulk_create(
        Turn(session=session, status=Turn.DONE, created_at=start + timedelta(minutes=n), finished_at=start)
        for n in range(first, first + turns)
    )
    messages, parts = [], []
    for n, turn in zip(range(first, first + turns), made, strict=True):
        call = f"call_{n}"
        for role, part in (
            (Message.USER, {"type": "text", "text": f"question {n}"}),
            (Message.ASSISTANT, {"type": "tool_use", "tool_use_id": call, "tool_name": "plain_tool", "tool_input": {}}),
            (Message.TOOL, {"type": "tool_result", "tool_use_id": call, "tool_result": {}, "tool_status": "ok"}),
            (Message.ASSISTANT, {"type": "text", "text": f"answer {n}"}),
        ):
            message = Message(session=session, turn=turn, role=role, position=position)
            position += 1
            messages.append(message)
            parts.append(Part(message=message, position=0, **part))
    Message.objects.bulk_create(messages)
    Part.objects.bulk_create(parts)
