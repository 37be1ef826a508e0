"""Drop eight indexes that repeat the leading column of another: a write of a row writes a page of
each (an engine turn wrote three of them, a product turn up to five; bench/FINDINGS.md, session
9). Lookups by the column use the wider index: a message's by session the unique (session, position), a part's by
message the unique (message, position), the ledger's by user (user, created_at), a session's by
user (user, updated_at), a turn's by session (session, created_at), an approval's by session
(session, resolved), a rate event's by user (user, created_at), a summary's by session
(session, -up_to_position).

And the index of messages by session and role, which only the fake and demo backends' count of a
session's replies after a summary used.

The model state changes as `AlterField(db_index=False)` would; the database change is a plain
DROP INDEX (Django's AlterField would rebuild each whole table on SQLite)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

DROPPED = [
    ("agent_message_session_id_037b8600", "agent_message", "session_id"),
    ("agent_part_message_id_7a869fdb", "agent_part", "message_id"),
    ("agent_spend_user_id_d5189784", "agent_spend", "user_id"),
    ("agent_session_user_id_bc29dd0c", "agent_session", "user_id"),
    ("agent_turn_session_id_9bfff0c8", "agent_turn", "session_id"),
    ("agent_approval_session_id_88432fbf", "agent_approval", "session_id"),
    ("agent_rateevent_user_id_4b32a75f", "agent_rateevent", "user_id"),
    ("agent_contextsummary_session_id_09e1d505", "agent_contextsummary", "session_id"),
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
                    model_name="message",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="messages",
                        to="agent.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="part",
                    name="message",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="parts",
                        to="agent.message",
                    ),
                ),
                migrations.AlterField(
                    model_name="session",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="agent_sessions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="turn",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turns",
                        to="agent.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="approval",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="approvals",
                        to="agent.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="rateevent",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="contextsummary",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="summaries",
                        to="agent.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="spend",
                    name="user",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")',
                )
                for name, table, column in DROPPED
            ],
        ),
    ]
