"""Prepared reads give what the ORM gives for the same QuerySet, compile once, and are counted as queries."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.apps import apps
from django.core.exceptions import SynchronousOnlyOperation
from django.db import IntegrityError, connection, connections, models, transaction
from django.db.models import Count, F, PositiveIntegerField, Q, Sum
from django.db.models.functions import Coalesce
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent.models import Message, Part, Session, Spend, Turn
from agent.prepared import Prepared, PreparedAggregate, Slot, _plain, _unchanged, insert, insert_linked, new
from blog.chat import start_session
from blog.models import Blog, Seat

pytestmark = pytest.mark.django_db


def fields(obj):
    return {k: v for k, v in obj.__dict__.items() if k != "_state"}


@pytest.fixture
def chat(user):
    blog = Blog.objects.create(slug="b", title="B", owner=user)
    Seat.objects.create(user=user, blog=blog, role=Seat.OWNER)
    session = start_session(user, blog)
    for i, role in enumerate(["user", "assistant", "user"]):
        m = Message.objects.create(
            session=session,
            role=role,
            position=i,
            cost_usd=Decimal("0.000123"),
            tools_offered=["a", "b"] if i else None,
        )
        Part.objects.create(message=m, position=0, type="text", text=f"t{i}")
        Part.objects.create(
            message=m, position=1, type="tool_use", tool_use_id=f"u{i}", tool_name="x", tool_input={"k": [i]}
        )
    return session


def test_rows_equal_the_orms_for_every_field_type(chat, user):
    """UUIDs, JSON, decimals, datetimes, booleans, nullable foreign keys: as the ORM converts them."""
    messages = Prepared(
        lambda: Message.objects.filter(session=Slot("s"), position__gt=Slot("after")).order_by("position")
    )
    got = messages.rows(s=chat, after=0)
    want = list(Message.objects.filter(session=chat, position__gt=0).order_by("position"))
    assert [fields(m) for m in got] == [fields(m) for m in want] and len(got) == 2
    assert got[0].cost_usd == Decimal("0.000123") and got[0].tools_offered == ["a", "b"]
    assert isinstance(got[0].created_at, type(want[0].created_at)) and got[0].created_at.tzinfo is not None

    parts = Prepared(
        lambda: Part.objects.filter(message__session=Slot("s")).order_by("message__position", "position")
    ).rows(s=chat.pk)
    assert [(p.message_id, p.position, p.tool_input) for p in parts] == [
        (p.message_id, p.position, p.tool_input)
        for p in Part.objects.filter(message__session=chat).order_by("message__position", "position")
    ]
    assert parts[1].tool_input == {"k": [0]}


def test_select_related_objects_are_filled_in(chat, user):
    read = Prepared(lambda: Session.objects.select_related("blog_link__blog").filter(pk=Slot("pk"), user=Slot("u"))[:1])
    got = read.first(pk=str(chat.pk), u=user)  # a UUID given as text, the user as an instance
    want = Session.objects.select_related("blog_link__blog").get(pk=chat.pk)
    assert fields(got) == fields(want)
    assert Session.blog_link.is_cached(got) and fields(got.blog_link.blog) == fields(want.blog_link.blog)
    assert read.first(pk=chat.pk, u=user.pk + 1) is None  # another user's: nothing


def test_instances_are_saved_as_loaded_rows(chat):
    """`from_db` marks them loaded from this database: saving updates the row, it does not insert another."""
    got = Prepared(lambda: Session.objects.filter(pk=Slot("pk"))).first(pk=chat.pk)
    assert got._state.adding is False and got._state.db == "default"
    got.title = "Renamed"
    got.save(update_fields=["title"])
    assert Session.objects.count() == 1 and Session.objects.get().title == "Renamed"


def test_datetime_and_constant_filters_bind_like_the_orm(user):
    now = timezone.now()
    for minutes, settled in [(1, True), (5, False), (10, True)]:
        Spend.objects.create(user=user, created_at=now - timedelta(minutes=minutes), settled=settled)
    recent = Prepared(
        lambda: Spend.objects.filter(user=Slot("u"), created_at__gt=Slot("since"), settled=True).order_by("created_at")
    )
    assert [s.created_at for s in recent.rows(u=user, since=now - timedelta(minutes=7))] == [now - timedelta(minutes=1)]
    assert len(recent.rows(u=user, since=now - timedelta(hours=1))) == 2


def test_compiled_once_and_each_run_is_one_counted_query(chat, django_assert_num_queries):
    builds = []

    def build():
        builds.append(1)
        return Message.objects.filter(session=Slot("s"))

    read = Prepared(build)
    for _ in range(3):
        with django_assert_num_queries(1):
            assert len(read.rows(s=chat)) == 3
    assert len(builds) == 1


def test_mistakes_are_refused_when_first_compiled(chat):
    read = Prepared(lambda: Message.objects.filter(session=Slot("s"), role=Slot("r")))
    with pytest.raises(TypeError, match=r"missing \['r'\]"):
        read.rows(s=chat)
    with pytest.raises(TypeError, match=r"unknown \['rol'\]"):  # a misspelt name is not ignored
        read.rows(s=chat, r="user", rol="user")
    with pytest.raises(TypeError, match="plain model QuerySets"):
        Prepared(lambda: Message.objects.filter(session=Slot("s")).values("role")).rows(s=chat)
    with pytest.raises(TypeError, match="plain model QuerySets"):
        Prepared(lambda: Message.objects.filter(session=Slot("s")).prefetch_related("parts")).rows(s=chat)
    with pytest.raises(TypeError, match="deferred"):
        Prepared(lambda: Message.objects.filter(session=Slot("s")).only("role")).rows(s=chat)
    with pytest.raises(TypeError, match="right-hand side"):
        Prepared(lambda: Message.objects.filter(session=Slot("s"), position=Coalesce(Slot("p"), 0))).rows(s=chat, p=1)


def test_insert_writes_what_save_writes(chat, user, django_assert_num_queries):
    """Defaults, auto_now_add, JSON and decimals as `save()` stores them; the id the database gives is set."""
    turn = Turn(session=chat)  # a UUID primary key, set before the insert
    with django_assert_num_queries(1):
        insert(turn)
    assert turn._state.adding is False and Turn.objects.get(pk=turn.pk).created_at == turn.created_at
    message = Message(session=chat, turn=turn, role="assistant", position=9, cost_usd=Decimal("1.5"), tools_offered=[])
    insert(message)
    assert message.pk == Message.objects.get(position=9).pk and message.created_at is not None
    parts = [Part(message=message, position=i, type="tool_use", tool_input={"n": i}) for i in range(3)]
    with django_assert_num_queries(1):  # several rows: one statement, and each gets its id
        insert(*parts)
    stored = {p.pk: p for p in Part.objects.filter(message=message)}
    assert sorted(stored) == sorted(p.pk for p in parts)
    assert [stored[p.pk].tool_input for p in parts] == [{"n": 0}, {"n": 1}, {"n": 2}]
    stored_message = Message.objects.get(pk=message.pk)
    assert (stored_message.cost_usd, stored_message.tools_offered, stored_message.turn_id) == (
        Decimal("1.5"),
        [],
        turn.pk,
    )
    message.stop_reason = "end_turn"
    message.save(update_fields=["stop_reason"])  # marked as saved: an UPDATE of the same row
    assert Message.objects.filter(position=9).count() == 1


def test_a_preparation_is_skipped_only_where_it_would_return_the_value_unchanged():
    """Inserts and bound values skip a field's preparation for a value of its `_plain` type: for
    every column of every installed model that has one, the preparation returns such values as they are."""
    samples = {str: ["", "x", "é"], int: [0, 7, -3], bool: [True, False]}
    seen = set()
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            plain = _plain(field, connection)
            if plain is None:
                continue
            seen.add((type(field).__name__, plain))
            for value in samples[plain]:
                saved = field.get_db_prep_save(value, connection=connection)
                compared = field.get_db_prep_value(value, connection, prepared=False)
                for prepared in (saved, compared):
                    assert prepared == value and type(prepared) is plain, (model, field.name, value)
    for model in apps.get_models():  # and None, where saving writes it as NULL as it is
        for field in model._meta.concrete_fields:
            if type(None) in _unchanged(field, connection):
                assert field.get_db_prep_save(None, connection=connection) is None, (model, field.name)
    assert type(None) in _unchanged(Part._meta.get_field("tool_input"), connection)  # JSON
    assert type(None) in _unchanged(Message._meta.get_field("turn"), connection)  # a reference to a UUID
    assert not _unchanged(Message._meta.get_field("created_at"), connection)
    # (PostgreSQL's operations wrap integers in the driver's own types: prepared there, every time)
    assert {plain for _, plain in seen} == ({str, int, bool} if connection.vendor == "sqlite" else {str, bool})
    assert {"CharField", "TextField", "BooleanField"} <= {n for n, _ in seen}
    if connection.vendor == "sqlite":
        assert {"PositiveIntegerField", "ForeignKey"} <= {n for n, _ in seen}

    class Shouting(models.CharField):  # prepares its own way: never skipped
        def get_prep_value(self, value):
            return super().get_prep_value(value).upper()

    others = [models.DecimalField(max_digits=5, decimal_places=2), models.DateTimeField(), models.DateField()]
    others += [models.JSONField(), models.UUIDField(), models.FloatField(), Shouting(max_length=5)]
    assert [_plain(field, connection) for field in others] == [None] * len(others)
    assert _plain(Message._meta.get_field("session"), connection) is None  # a reference to a UUID


def test_new_makes_what_the_model_makes(chat, user, django_assert_num_queries):
    """`new(model, ...)`: the same columns and the same cached relations as `model(...)`."""
    turn = Turn(session=chat)
    insert(turn)
    given = {"role": "assistant", "position": 9, "cost_usd": Decimal("1.5"), "tools_offered": ["a"]}
    made, expected = new(Message, session=chat, turn=turn, **given), Message(session=chat, turn=turn, **given)
    assert fields(made) == fields(expected) and made._state.adding and made._state.db is None
    with django_assert_num_queries(0):  # the related objects are cached, as the model caches them
        assert made.session is chat and made.turn is turn
    by_column = new(Message, session_id=chat.pk, turn=None, role="user", position=10)
    assert (by_column.session_id, by_column.turn_id, by_column.input_tokens, by_column.tools_offered) == (
        chat.pk,
        None,
        0,
        None,
    )
    part = new(Part, message=made, position=0, type="text", text="hi")  # its message not saved yet
    assert part.message_id is None and part.effects == [] and part.effects is not new(Part).effects
    insert(made)
    insert(part)  # takes the id its message was just given, as a save would
    assert Part.objects.get(pk=part.pk).message_id == made.pk
    assert new(Spend, user=user, created_at=timezone.now()).user_id == user.pk
    with pytest.raises(TypeError, match="no field 'colour'"):
        new(Message, session=chat, colour="red")


def test_insert_refuses_what_save_refuses(chat):
    unsaved = Message(session=chat, role="user", position=5)
    with pytest.raises(ValueError, match="unsaved related object"):
        insert(Part(message=unsaved, position=0, type="text"))
    with pytest.raises(IntegrityError):  # the position is taken: the database says so, as on save()
        with transaction.atomic():
            insert(Message(session=chat, role="user", position=0))
    with pytest.raises(TypeError, match="one model"):
        insert(Turn(session=chat), Message(session=chat, role="user", position=7))


@pytest.mark.django_db(transaction=True)  # autocommit as in production: "all or none" is the database's doing
def test_insert_linked_writes_a_parent_and_its_children_all_or_none(chat, django_assert_num_queries):
    message = Message(session=chat, role="assistant", position=5, cost_usd=Decimal("0.25"), tools_offered=["a"])
    parts = [
        Part(message=message, position=0, type="text", text="Here."),
        Part(message=message, position=1, type="tool_use", tool_use_id="t1", tool_name="a", tool_input={"n": 1}),
        Part(message=message, position=2, type="tool_result", tool_use_id="t1", tool_result={"ok": True}),
    ]
    with CaptureQueriesContext(connection) as ctx:
        insert_linked(message, parts, "message")
    if connection.vendor == "postgresql":
        assert len(ctx.captured_queries) == 1  # one statement, one round trip, atomic by itself
    stored = Message.objects.get(pk=message.pk)
    assert (stored.position, stored.cost_usd, stored.tools_offered) == (5, Decimal("0.25"), ["a"])
    rows = list(Part.objects.filter(message=message).order_by("position"))
    assert [r.pk for r in rows] == [p.pk for p in parts] and all(p._state.adding is False for p in parts)
    assert [(r.type, r.text, r.tool_input, r.tool_result) for r in rows] == [
        ("text", "Here.", None, None),
        ("tool_use", "", {"n": 1}, None),
        ("tool_result", "", None, {"ok": True}),
    ]
    with django_assert_num_queries(0):  # each child keeps the parent it was given
        assert all(p.message is message and p.message_id == message.pk for p in parts)

    clash = Message(session=chat, role="assistant", position=6)
    twins = [Part(message=clash, position=0, type="text", text=t) for t in ("one", "two")]  # the same position
    with pytest.raises(IntegrityError):
        insert_linked(clash, twins, "message")
    assert not Message.objects.filter(session=chat, position=6).exists()  # no message without its parts
    alone = Message(session=chat, role="user", position=6)
    insert_linked(alone, [], "message")  # no children: the parent alone
    assert Message.objects.get(session=chat, position=6).pk == alone.pk


@pytest.mark.django_db(transaction=True)
def test_insert_linked_writes_other_rows_with_them_all_or_none(chat, user):
    """`also`: rows of other models (a call's ledger row) in the same statement or transaction."""
    now = timezone.now()
    message = Message(session=chat, role="assistant", position=5, cost_usd=Decimal("0.5"))
    parts = [Part(message=message, position=0, type="text", text="Done.")]
    spend = Spend(user=user, created_at=now, model_id="fake", tokens=12, cost_usd=Decimal("0.5"), settled=True)
    with CaptureQueriesContext(connection) as ctx:
        insert_linked(message, parts, "message", (spend,))
    if connection.vendor == "postgresql":
        assert len(ctx.captured_queries) == 1
    stored = Spend.objects.get(pk=spend.pk)
    assert (stored.tokens, stored.cost_usd, stored.settled, stored.created_at) == (12, Decimal("0.5"), True, now)
    assert Part.objects.get(pk=parts[0].pk).message_id == message.pk and spend._state.adding is False

    lone = Spend(user=user, created_at=now, model_id="fake", tokens=3)
    insert_linked(Message(session=chat, role="user", position=6), [], "message", (lone,))  # no children
    assert Spend.objects.filter(pk=lone.pk, tokens=3).exists() and Message.objects.filter(position=6).exists()

    clash = Message(session=chat, role="assistant", position=6)  # the position is taken
    lost = Spend(user=user, created_at=now, model_id="fake", tokens=99)
    with pytest.raises(IntegrityError):
        insert_linked(clash, [Part(message=clash, position=0, type="text")], "message", (lost,))
    assert not Spend.objects.filter(tokens=99).exists()  # none of it


def test_insert_linked_refuses_what_it_cannot_write_as_one(chat):
    message = Message(session=chat, role="user", position=7)
    turn = Turn(session=chat)
    with pytest.raises(TypeError, match="refers to the parent"):
        insert_linked(turn, [Part(message=message, position=0, type="text")], "message")
    with pytest.raises(TypeError, match="one relation"):  # a message also refers to its session
        insert_linked(turn, [Message(session=chat, turn=turn, role="user", position=7)], "turn")
    assert not Message.objects.filter(position=7).exists()


def test_update_sets_what_queryset_update_sets(chat, django_assert_num_queries):
    turn = Turn(session=chat)
    insert(turn)
    lease = Prepared(lambda: Session.objects.filter(pk=Slot("pk"), turn__isnull=True))
    until = timezone.now() + timedelta(minutes=5)
    with django_assert_num_queries(1):
        assert lease.update({"turn": turn, "lease_until": until}, pk=chat.pk) == 1
    assert lease.update({"turn": turn, "lease_until": until}, pk=chat.pk) == 0  # taken: nothing matches now
    stored = Session.objects.get(pk=chat.pk)
    assert (stored.turn_id, stored.lease_until) == (turn.pk, until)

    ended = Prepared(lambda: Turn.objects.filter(pk=Slot("pk")))
    payload = {"stop_reason": "end_turn", "usage": {"input_tokens": 3}}
    assert ended.update({"status": Turn.DONE, "terminal_payload": payload, "finished_at": until}, pk=turn.pk) == 1
    assert Turn.objects.filter(pk=turn.pk).values_list("status", "terminal_payload", "finished_at").get() == (
        Turn.DONE,
        payload,
        until,
    )
    held = Prepared(lambda: Session.objects.filter(pk=Slot("pk"), turn=Slot("turn")))
    assert held.update({"turn": None, "lease_until": None, "next_position": 4}, pk=chat.pk, turn=turn) == 1
    assert Session.objects.filter(pk=chat.pk, turn__isnull=True, lease_until__isnull=True, next_position=4).exists()


def test_update_refuses_a_none_filter_and_other_tables(chat):
    held = Prepared(lambda: Session.objects.filter(pk=Slot("pk"), turn=Slot("turn")))
    with pytest.raises(TypeError, match="__isnull"):  # `turn = NULL` would silently match nothing
        held.update({"title": "x"}, pk=chat.pk, turn=None)
    joined = Prepared(lambda: Session.objects.filter(blog_link__blog__slug=Slot("slug")))
    with pytest.raises(TypeError, match="own columns"):
        joined.update({"title": "x"}, slug="b")


def test_count_counts_what_queryset_count_counts(chat, django_assert_num_queries):
    replies = Prepared(lambda: Message.objects.filter(session=Slot("s"), role="assistant").order_by("-position"))
    with django_assert_num_queries(1):
        counted = replies.count(s=chat)
    assert counted == 1 == Message.objects.filter(session=chat, role="assistant").count()
    other = start_session(chat.user, Blog.objects.get())
    assert replies.count(s=other) == 0
    with pytest.raises(TypeError, match="plain filtered"):
        Prepared(lambda: Message.objects.filter(session=Slot("s"))[:2]).count(s=chat)


def test_aggregates_equal_the_orms_with_slots_in_their_own_filters(user, other_user):
    now = timezone.now()
    for minutes, tokens, cost in [(1, 10, "0.5"), (30, 20, "0.25"), (90, 40, "1.125")]:
        Spend.objects.create(user=user, created_at=now - timedelta(minutes=minutes), tokens=tokens, cost_usd=cost)
    Spend.objects.create(user=other_user, created_at=now, tokens=1000, cost_usd="9")
    usage = PreparedAggregate(
        lambda: Spend.objects.filter(user=Slot("user"), created_at__gte=Slot("since")),
        recent=Sum("tokens", filter=Q(created_at__gte=Slot("recent"))),
        cost=Sum("cost_usd"),
    )
    got = usage.get(user=user, since=now - timedelta(hours=1), recent=now - timedelta(minutes=5))
    want = Spend.objects.filter(user=user, created_at__gte=now - timedelta(hours=1)).aggregate(
        recent=Sum("tokens", filter=Q(created_at__gte=now - timedelta(minutes=5))), cost=Sum("cost_usd")
    )
    assert got == want == {"recent": 10, "cost": Decimal("0.75")}
    assert isinstance(got["cost"], Decimal)
    nobody = usage.get(user=user, since=now + timedelta(hours=1), recent=now)
    assert nobody == {"recent": None, "cost": None}  # SUM over no rows, as the ORM answers it


def test_an_update_may_set_an_expression_with_slots_of_its_own(chat):
    held = Prepared(lambda: Session.objects.filter(pk=Slot("pk")))
    for _ in range(2):
        held.update(
            {"next_position": F("next_position") + Slot("n", output_field=PositiveIntegerField())}, pk=chat.pk, n=3
        )
    assert Session.objects.get(pk=chat.pk).next_position == 6
    held.update({"next_position": F("next_position") * Slot("n")}, pk=chat.pk, n=2)  # another shape: compiled anew
    assert Session.objects.get(pk=chat.pk).next_position == 12


def _watched(run):
    """`run()` while the connection's queries are watched (as under DEBUG or assertNumQueries)."""
    with CaptureQueriesContext(connection) as seen:
        result = run()
    return result, len(seen.captured_queries)


def test_unwatched_statements_run_on_the_drivers_cursor_with_the_same_results(chat, monkeypatch):
    """Nobody watching: every kind of statement skips Django's cursor, and gives what it gives watched.
    SQL holding a literal `%` (Django writes `%%`) runs on both; so does a filter on a bound value."""
    odd = Prepared(lambda: Message.objects.filter(session=Slot("s"), position=F("position") % 2).order_by("position"))
    calls = PreparedAggregate(lambda: Message.objects.filter(session=Slot("s")), n=Count("*"))
    held = Prepared(lambda: Session.objects.filter(pk=Slot("pk")))

    def run_all(position):
        rows = [(m.pk, m.position, m.cost_usd, m.tools_offered) for m in odd.rows(s=chat)]
        turn = Turn(session=chat)
        insert(turn)
        message = Message(session=chat, turn=turn, role="user", position=position)
        insert(message)
        changed = held.update({"title": f"t{position}"}, pk=chat.pk)
        return rows, calls.get(s=chat)["n"], odd.count(s=chat), changed, message.pk is not None

    watched, counted = _watched(lambda: run_all(10))
    assert counted == 6  # each statement seen once
    with monkeypatch.context() as m:
        m.setattr(
            type(connections["default"]),
            "cursor",
            lambda self: pytest.fail("Django's cursor used while nobody watches"),
        )
        unwatched = run_all(11)
    assert watched[0] == unwatched[0] and [p for _, p, _, _ in watched[0]] == [0, 1]
    assert watched[1:] == (4, 2, 1, True) and unwatched[1:] == (5, 2, 1, True)
    assert Session.objects.get(pk=chat.pk).title == "t11"


def test_an_execute_wrapper_sees_every_prepared_statement(chat):
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    read = Prepared(lambda: Message.objects.filter(session=Slot("s")))
    with connection.execute_wrapper(wrapper):
        assert len(read.rows(s=chat)) == 3
        insert(Turn(session=chat))
    assert len(seen) == 2 and "agent_turn" in seen[1]


def test_unwatched_errors_are_djangos_and_roll_back_with_the_transaction(chat):
    with pytest.raises(IntegrityError), transaction.atomic():  # the driver's own error, raised as Django's
        insert(Message(session=chat, role="user", position=0))
    with pytest.raises(RuntimeError), transaction.atomic():
        insert(Turn(session=chat))
        raise RuntimeError
    assert not Turn.objects.exists()  # the insert went with the transaction
    with pytest.raises(IntegrityError), transaction.atomic():
        insert(Message(session=chat, role="user", position=1))
    assert Message.objects.filter(session=chat).count() == 3  # and the connection still works


@pytest.mark.parametrize("watched", [False, True])
def test_a_failed_write_marks_its_transaction_for_rollback_as_the_orms_do(chat, watched):
    from django.db.transaction import TransactionManagementError

    context = CaptureQueriesContext(connection) if watched else transaction.atomic()  # (any context)
    with context, transaction.atomic():
        with pytest.raises(IntegrityError):
            insert(Message(session=chat, role="user", position=0))  # the position is taken
        assert connection.needs_rollback
        with pytest.raises(TransactionManagementError):  # as after a failed save() caught inside the block
            Message.objects.count()
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            Prepared(lambda: Message.objects.filter(session=Slot("s"), position=1)).update({"position": 0}, s=chat)
        assert connection.needs_rollback  # (so the block rolls back when it ends)
    assert Message.objects.filter(session=chat).count() == 3


@pytest.mark.django_db(transaction=True)
def test_unwatched_statements_keep_djangos_connection_checks():
    """Another thread's use of a connection is refused, and a closed connection is opened again."""
    from django.db import DatabaseError

    from agent import prepared

    own = connections["default"]
    refused = []

    def elsewhere():
        try:
            prepared._execute(own, "SELECT 1", "SELECT 1", [], prepared._ONE_ROW)
        except DatabaseError as exc:
            refused.append(str(exc))

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert refused and "same thread" in refused[0]
    own.close()
    assert tuple(prepared._execute(own, "SELECT 1", "SELECT 1", [], prepared._ONE_ROW)) == (1,)
    assert own.connection is not None


def test_refused_inside_a_running_event_loop_as_djangos_own_queries_are(chat, monkeypatch):
    monkeypatch.delenv("DJANGO_ALLOW_ASYNC_UNSAFE", raising=False)  # (the tests' settings allow it)
    read = Prepared(lambda: Message.objects.filter(session=Slot("s")))

    async def inside():
        read.rows(s=chat)

    with pytest.raises(SynchronousOnlyOperation):
        asyncio.run(inside())
