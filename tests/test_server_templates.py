"""The test servers' databases: seeded once per kind of server, then copied (`tests.servers.Templates`)."""

from __future__ import annotations

from pathlib import Path

from tests.servers import Templates, server_env

# A quick seed of the same shape as the servers' (migrate, then rows written by a command).
SEED = (
    ("migrate", "contenttypes", "--noinput"),
    (
        "shell",
        "-c",
        "from django.contrib.contenttypes.models import ContentType as C; C.objects.create(app_label='x', model='seeded')",
    ),
)


def seeded_rows(database) -> int:
    return database.scalar("SELECT COUNT(*) FROM django_content_type WHERE model = %s", ("seeded",))


def test_servers_that_differ_only_in_runtime_settings_share_one_seed_and_each_gets_its_own_copy(tmp_path: Path) -> None:
    templates = Templates()
    log = tmp_path / "seed.log"
    base = server_env(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1")
    made = []
    try:
        made.append(templates.seeded("tmpl", "a", SEED, {**base, "AGENT_BACKEND": "demo", "BIND": "127.0.0.1:1"}, log))
        made.append(templates.seeded("tmpl", "b", SEED, {**base, "AGENT_BACKEND": "fake", "LOG_LEVEL": "INFO"}, log))
        first, second = made
        assert log.read_text().count("$ manage.py migrate") == 1  # one seed for both
        assert first.url != second.url
        assert seeded_rows(first) == seeded_rows(second) == 1

        # A copy is a database of its own: what one server writes, the other never sees.
        conn = first.connect()
        try:
            conn.execute("DELETE FROM django_content_type WHERE model = 'seeded'")
        finally:
            conn.close()
        assert seeded_rows(first) == 0 and seeded_rows(second) == 1

        # A setting that may change what the seed makes (anything RUNTIME_ONLY does not name) seeds again.
        made.append(templates.seeded("tmpl", "c", SEED, {**base, "SECRET_KEY": "another-" + "x" * 50}, log))
        assert log.read_text().count("$ manage.py migrate") == 2
        assert seeded_rows(made[2]) == 1
    finally:
        for database in made:
            database.drop()
        templates.drop_all()
    assert templates.databases == {}
