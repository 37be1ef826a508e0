"""The admin's list of chats, latest activity first, read through an index of its own (`Session.Meta.indexes`).

Every turn writes its chat's row as it takes the lease: on PostgreSQL the index is built `CONCURRENTLY`, so
turns keep starting while an upgrade builds it (a plain `CREATE INDEX` would hold them until it is done).
That cannot run in a transaction, so this migration is not atomic. A build interrupted leaves the index
behind (on PostgreSQL an invalid one, which no query uses): it is dropped if there, then built, so running
the migration again mends it. Other databases build it plainly (as 0016 builds the audit indexes).
"""

from django.db import migrations, models

NAME = "agent_session_updated_idx"
DEFINITION = '("updated_at" DESC, "id" DESC)'


def _concurrently(schema_editor) -> str:
    return "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""


def create_index(apps, schema_editor):
    drop_index(apps, schema_editor)
    schema_editor.execute(f'CREATE INDEX {_concurrently(schema_editor)}"{NAME}" ON "agent_session" {DEFINITION}')


def drop_index(apps, schema_editor):
    schema_editor.execute(f'DROP INDEX {_concurrently(schema_editor)}IF EXISTS "{NAME}"')


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("agent", "0016_part_audit_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="session",
                    index=models.Index(fields=["-updated_at", "-id"], name=NAME),
                ),
            ],
            database_operations=[migrations.RunPython(create_index, drop_index)],
        ),
    ]
