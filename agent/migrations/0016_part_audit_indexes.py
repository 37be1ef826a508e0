"""The audit filters' partial indexes on `agent_part` (`Part.Meta.indexes`).

`agent_part` is the largest table: on PostgreSQL the indexes are built `CONCURRENTLY`, so chats keep
writing their parts while an upgrade builds them (a plain `CREATE INDEX` would hold their writes until it
is done). That cannot run in a transaction, so this migration is not atomic. A build interrupted leaves
an index behind (on PostgreSQL an invalid one, which no query uses): each is dropped if there, then built,
so running the migration again mends it. Other databases build them plainly.
"""

from django.db import migrations, models

INDEXES = {
    "agent_part_tool_use_name_idx": "(\"tool_name\") WHERE \"type\" = 'tool_use'",
    "agent_part_result_status_idx": "(\"tool_status\", \"tool_name\") WHERE \"type\" = 'tool_result'",
}


def _concurrently(schema_editor) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def create_indexes(apps, schema_editor):
    drop_indexes(apps, schema_editor)
    for name, definition in INDEXES.items():
        schema_editor.execute(f'CREATE INDEX {_concurrently(schema_editor)}"{name}" ON "agent_part" {definition}')


def drop_indexes(apps, schema_editor):
    for name in INDEXES:
        schema_editor.execute(f'DROP INDEX {_concurrently(schema_editor)}IF EXISTS "{name}"')


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("agent", "0015_admin_names"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="part",
                    index=models.Index(
                        condition=models.Q(("type", "tool_use")),
                        fields=["tool_name"],
                        name="agent_part_tool_use_name_idx",
                    ),
                ),
                migrations.AddIndex(
                    model_name="part",
                    index=models.Index(
                        condition=models.Q(("type", "tool_result")),
                        fields=["tool_status", "tool_name"],
                        name="agent_part_result_status_idx",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(create_indexes, drop_indexes)],
        ),
    ]
