"""Upgrading a database an older release made: rows written at an old schema (plain SQL, as that
release's code left them) are migrated forward by `migrate` and read right by today's code and views.

Each test goes back with `call_command("migrate", app, <older migration>)`, which also proves the
migrations after it reversible, and always forward again to the latest, for the tests after it."""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, migrations
from django.db.models import NOT_PROVIDED, Model
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent.models import Message, Part, Session, Turn
from agent.transcript import build_neutral_messages
from blog import services
from blog.models import Blog, ChatLink, Post, Seat
from tests.blog.conftest import browser, make_blog

pytestmark = pytest.mark.django_db(transaction=True)


def insert(model: type[Model], **values: Any) -> None:
    """One row at whatever the table's schema is now: only the columns given, each value prepared
    by its field as Django would write it (UUIDs, JSON, dates on SQLite and PostgreSQL)."""
    fields = [model._meta.get_field(name) for name in values]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {connection.ops.quote_name(model._meta.db_table)} ({columns}) VALUES ({marks})", params
        )


def message_id(session: Session, position: int) -> int:
    table, session_column = Message._meta.db_table, Message._meta.get_field("session").column
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {connection.ops.quote_name(table)} WHERE {session_column} = %s AND position = %s",
            [Session._meta.pk.get_db_prep_value(session.pk, connection), position],
        )
        return cursor.fetchone()[0]


def old_turn(session: Session) -> uuid.UUID:
    """A finished turn as agent 0011 stored it (no `last_event_id` yet)."""
    pk = uuid.uuid4()
    now = timezone.now()
    insert(
        Turn,
        id=pk,
        session=session.pk,
        status=Turn.DONE,
        stop_requested=False,
        terminal_event="done",
        terminal_payload={},
        created_at=now,
        finished_at=now,
    )
    return pk


def old_message(
    session: Session, turn: uuid.UUID, position: int, role: str, backend: str = "", model_id: str = ""
) -> int:
    """A message of a turn as agent 0011 stored it (no `reasoning` yet)."""
    insert(
        Message,
        session=session.pk,
        turn=turn,
        role=role,
        position=position,
        backend=backend,
        model_id=model_id,
        stop_reason="end_turn" if role == "assistant" else "",
        input_tokens=0,
        output_tokens=0,
        cache_read_tokens=0,
        cache_write_tokens=0,
        cost_usd=0,
        created_at=timezone.now(),
    )
    return message_id(session, position)


def old_part(message: int, position: int, type: str, text: str = "", signature: str = "") -> None:
    """A part as agent 0011 stored it (no provider state, backend or model; no media facts)."""
    insert(
        Part,
        message=message,
        position=position,
        type=type,
        text=text,
        tool_use_id="",
        tool_name="",
        tool_status="",
        media_type="",
        media_ref="",
        signature=signature,
        effects=[],
    )


def test_signed_thinking_from_before_provider_state_goes_back_only_to_the_model_that_signed_it(django_user_model):
    """agent 0012 stamps each stored signature with its message's backend and model. Without it,
    a year-old chat's signed thinking would be sent to whatever model the site uses now, which
    refuses a signature it did not make, so the old chat could not be continued."""
    team = make_blog(django_user_model)
    session = Session.objects.create(user=team.owner, title="From last year")
    ChatLink.objects.create(session=session, blog=team.blog)
    call_command("migrate", "agent", "0011_approval_detail_and_version", verbosity=0)
    try:
        turn = old_turn(session)
        asked = old_message(session, turn, 0, "user")
        old_part(asked, 0, "text", "Plan the week's posts.")
        answer = old_message(session, turn, 1, "assistant", backend="anthropic", model_id="claude-old")
        old_part(answer, 0, "reasoning", "Three posts, one a day.", signature="sig-anthropic")
        old_part(answer, 1, "text", "Here is a plan: <b>three posts</b>.")
    finally:
        call_command("migrate", verbosity=0)

    signed, said = Part.objects.filter(message_id=answer).order_by("position")
    assert (signed.provider_backend, signed.provider_model, signed.signature) == (
        "anthropic",
        "claude-old",
        "sig-anthropic",
    )
    assert (said.provider_backend, said.provider_model, said.provider_data, said.media_meta) == ("", "", None, None)
    assert Message.objects.get(pk=answer).reasoning == ""
    assert Turn.objects.get(pk=turn).last_event_id is None

    def sent(origin: tuple[str, str]) -> dict[str, Any]:
        return build_neutral_messages(Session.objects.get(pk=session.pk), origin=origin)[1]["parts"][0]

    assert sent(("anthropic", "claude-old"))["signature"] == "sig-anthropic"
    assert "signature" not in sent(("bedrock", "claude-new"))

    # The person still reads the old chat: the JSON transcript and the blog page with it open.
    owner = browser(team.owner)
    body = owner.get(f"/api/agent/sessions/{session.pk}").json()
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][1]["parts"][1] == {"type": "text", "text": "Here is a plan: <b>three posts</b>."}
    page = owner.get(f"/blogs/{team.blog.slug}/?chat={session.pk}")
    assert page.status_code == 200
    assert "Plan the week&#x27;s posts." in page.text and "three posts" in page.text


def test_the_audit_indexes_are_built_without_holding_chats_writes_on_postgresql():
    """`agent_part` is the largest table: on PostgreSQL its audit indexes are built `CONCURRENTLY` (a plain
    `CREATE INDEX` holds every chat's writes of parts until it is done), outside a transaction, and one an
    interrupted build left behind is built again. Back to 0015 they are gone; forward again, there."""
    audit_indexes = {"agent_part_tool_use_name_idx", "agent_part_result_status_idx"}

    def indexes() -> set[str]:
        with connection.cursor() as cursor:
            return set(connection.introspection.get_constraints(cursor, "agent_part")) & audit_indexes

    assert indexes() == audit_indexes
    try:
        call_command("migrate", "agent", "0015_admin_names", verbosity=0)
        assert indexes() == set()
        with connection.cursor() as cursor:  # (an interrupted build left one behind)
            cursor.execute('CREATE INDEX "agent_part_tool_use_name_idx" ON "agent_part" ("tool_name")')
        with CaptureQueriesContext(connection) as run:
            call_command("migrate", "agent", "0016_part_audit_indexes", verbosity=0)
    finally:
        call_command("migrate", verbosity=0)
    built = [q["sql"] for q in run.captured_queries if "CREATE INDEX" in q["sql"]]
    assert len(built) == 2, built
    if connection.vendor == "postgresql":
        assert all("CREATE INDEX CONCURRENTLY" in sql for sql in built), built
    assert indexes() == audit_indexes
    with connection.cursor() as cursor:  # (the one left behind rebuilt as the model has it: partial)
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'agent_part_tool_use_name_idx'")
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'agent_part_tool_use_name_idx'")
        assert "WHERE" in cursor.fetchone()[0]


def test_a_former_owners_seat_the_admin_left_an_owners_is_an_editors_after_the_upgrade(django_user_model):
    """Before blog 0009 an admin's change of a blog's owner left the former owner's seat an owner's; with
    the blog's Settings page (delete, hand over), a blog has one owner's seat, its owner's. The upgrade
    makes each such seat an editor's, keeping whether it may use the assistant; the owner's stays."""
    team = make_blog(django_user_model)
    former = Seat.objects.get(blog=team.blog, user=team.owner)
    new_owner = Seat.objects.get(blog=team.blog, role=Seat.AUTHOR)
    call_command("migrate", "blog", "0008_post_title_upper_idx", verbosity=0)
    try:
        Blog.objects.filter(pk=team.blog.pk).update(owner=new_owner.user)  # (as the admin left them)
        Seat.objects.filter(pk=new_owner.pk).update(role=Seat.OWNER)
        Seat.objects.filter(pk=former.pk).update(may_use_assistant=False)
    finally:
        call_command("migrate", verbosity=0)
    roles = {s.pk: (s.role, s.may_use_assistant) for s in Seat.objects.filter(blog=team.blog)}
    assert roles[former.pk] == (Seat.EDITOR, False)
    assert roles[new_owner.pk] == (Seat.OWNER, Seat.objects.get(pk=new_owner.pk).may_use_assistant)
    assert [s for s, (role, _) in roles.items() if role == Seat.OWNER] == [new_owner.pk]


def test_the_chats_list_index_is_built_without_holding_turns_on_postgresql():
    """Every turn writes its chat's row as it starts: on PostgreSQL the list's index on `agent_session` is
    built `CONCURRENTLY`, outside a transaction, and one an interrupted build left behind is built again."""

    def built() -> bool:
        with connection.cursor() as cursor:
            return "agent_session_updated_idx" in connection.introspection.get_constraints(cursor, "agent_session")

    assert built()
    try:
        call_command("migrate", "agent", "0016_part_audit_indexes", verbosity=0)
        assert not built()
        with connection.cursor() as cursor:  # (an interrupted build left one behind, on another column)
            cursor.execute('CREATE INDEX "agent_session_updated_idx" ON "agent_session" ("created_at")')
        with CaptureQueriesContext(connection) as run:
            call_command("migrate", "agent", "0017_session_updated_index", verbosity=0)
    finally:
        call_command("migrate", verbosity=0)
    made = [q["sql"] for q in run.captured_queries if "CREATE INDEX" in q["sql"]]
    assert len(made) == 1, made
    if connection.vendor == "postgresql":
        assert "CREATE INDEX CONCURRENTLY" in made[0], made
    with connection.cursor() as cursor:
        columns = connection.introspection.get_constraints(cursor, "agent_session")["agent_session_updated_idx"]
    assert columns["columns"] == ["updated_at", "id"], columns


# Old workers on the new schema ----------------------------------------------------------------------
# README, Upgrading: from the oldest release that has agent 0013 and connectors 0001 (commit 0856e5a) the
# old workers may keep serving while `migrate` runs and after it. Its code names only the columns it
# knows: what came after may add a column it leaves out of its INSERTs only with a database default (or
# NULL), and may take away or rename nothing it reads.

OLD_WORKERS_FROM = {
    "accounts": "0002_sessions_name_djangos_backend",
    "agent": "0013_part_media_meta",
    "blog": "0005_post_cover",
    "connectors": "0001_initial",
}
TAKES_AWAY = (
    migrations.RemoveField,
    migrations.RenameField,
    migrations.DeleteModel,
    migrations.RenameModel,
    migrations.AlterModelTable,
)


def later_operations() -> Iterator[tuple[str, str, Any]]:
    """(app, migration, operation) of every migration after the release the old workers run."""
    for app, last_old in OLD_WORKERS_FROM.items():
        package = apps.get_app_config(app).module.__name__ + ".migrations"
        names = sorted(p.stem for p in Path(importlib.import_module(package).__path__[0]).glob("[0-9]*.py"))
        for name in names:
            if name > last_old:
                for operation in importlib.import_module(f"{package}.{name}").Migration.operations:
                    if isinstance(operation, migrations.SeparateDatabaseAndState):
                        yield from ((app, name, op) for op in operation.database_operations)
                    else:
                        yield app, name, operation


def test_what_came_after_the_old_workers_release_leaves_their_reads_and_writes_working():
    offences = []
    for app, name, operation in later_operations():
        if isinstance(operation, TAKES_AWAY):
            offences.append(f"{app} {name}: {operation.describe()} (the old code reads it)")
        elif isinstance(operation, migrations.AddField):
            field = apps.get_model(app, operation.model_name)._meta.get_field(operation.name)
            if not field.null and field.db_default is NOT_PROVIDED:
                offences.append(f"{app} {name}: {operation.describe()}, NOT NULL without a database default")
    assert offences == []


def test_a_blog_an_older_release_makes_without_a_description_has_an_empty_one(django_user_model):
    """blog 0010 added `Blog.description` NOT NULL: an older release's INSERT (the admin's Add blog, the
    site's New blog) names no such column, and the database fills it in (blog 0011)."""
    owner = django_user_model.objects.create_user("olden", password="pw-olden-1234")
    insert(Blog, owner=owner.pk, title="From an old worker", slug="from-an-old-worker", created_at=timezone.now())
    assert Blog.objects.get(slug="from-an-old-worker").description == ""


def test_posts_from_before_their_text_was_kept_are_found_by_it_after_the_upgrade(django_user_model, monkeypatch):
    """blog 0012 added `Post.text`, the words a search reads: 0013 fills it in for every post there is, a
    batch at a time, and a post an older release's worker inserts afterwards (without it) is still found by
    its body, and by its words once 0013 runs again."""
    monkeypatch.setattr(importlib.import_module("blog.migrations.0013_fill_post_texts"), "BATCH", 2)
    team = make_blog(django_user_model)
    call_command("migrate", "blog", "0011_blog_description_db_default", verbosity=0)
    try:
        for n in range(3):
            values = {
                "title": f"Old {n}",
                "slug": f"old-{n}",
                "body": f"A **her**on, number {n}.",
                "status": "draft",
                "cover_ref": "",
                "cover_type": "",
            }
            insert(Post, blog=team.blog.pk, created_at=timezone.now(), updated_at=timezone.now(), **values)
    finally:
        call_command("migrate", verbosity=0)
    assert list(Post.objects.filter(blog=team.blog).order_by("pk").values_list("text", flat=True)) == [
        f"A heron, number {n}." for n in range(3)
    ]
    insert(
        Post,
        blog=team.blog.pk,
        title="New",
        slug="new",
        body="A heron.",
        status="draft",
        cover_ref="",
        cover_type="",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )
    assert Post.objects.get(slug="new").text == ""
    found, _ = services.posts_matching(Post.objects.filter(blog=team.blog), "heron")
    assert sorted(p.title for p in found) == ["New", "Old 0", "Old 1", "Old 2"]
    # Once the old workers are gone, every post's words are read again (README, "Upgrading").
    call_command("migrate", "blog", "0012_post_text", verbosity=0)
    call_command("migrate", verbosity=0)
    assert Post.objects.get(slug="new").text == "A heron."
