"""Drop eight indexes that repeat the leading column of another: a write of a row writes a page of
each (an engine turn wrote three of them, a product turn up to five; bench/FINDINGS.md, session
9). Lookups by the column use the wider index: a message's by session the unique (session,
position), a part's by message the unique (message, position), the ledger's by user (user,
created_at), a session's by user (user, updated_at), a turn's by session (session, created_at),
an approval's by session (session, resolved), a rate event's by user (user, created_at), a
summary's by session (session, -up_to_position).

And the index of messages by session and role, which only the fake and demo backends' count of a
session's replies after a summary used.

The model state changes as `AlterField(db_index=False)` would; the database change is a plain
DROP INDEX (Django's AlterField would rebuild each whole table on SQLite)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# (model, its reference, what it refers to, the reference's related_name, the index Django made)
DROPPED = [
    ("message", "session", "agent.session", "messages", "agent_message_session_id_037b8600"),
    ("part", "message", "agent.message", "parts", "agent_part_message_id_7a869fdb"),
    ("spend", "user", settings.AUTH_USER_MODEL, "+", "agent_spend_user_id_d5189784"),
    ("session", "user", settings.AUTH_USER_MODEL, "agent_sessions", "agent_session_user_id_bc29dd0c"),
    ("turn", "session", "agent.session", "turns", "agent_turn_session_id_9bfff0c8"),
    ("approval", "session", "agent.session", "approvals", "agent_approval_session_id_88432fbf"),
    ("rateevent", "user", settings.AUTH_USER_MODEL, "+", "agent_rateevent_user_id_4b32a75f"),
    ("contextsummary", "session", "agent.session", "summaries", "agent_contextsummary_session_id_09e1d505"),
]


class Migration(migrations.Migration):
    dependencies = [
        ("agent", "0007_session_next_position"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(model_name="message", name="agent_msg_session_role_idx"),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model,
                    name=name,
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name=related_name,
                        to=to,
                    ),
                )
                for model, name, to, related_name, _ in DROPPED
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "agent_{model}" ("{name}_id")',
                )
                for model, name, _, _, index in DROPPED
            ],
        ),
    ]
