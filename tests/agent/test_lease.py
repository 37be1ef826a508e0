"""A live turn never loses its lease to the database pool (issue 22, item 4).

The process's watcher renews its running turns' leases. Through Django's PostgreSQL pool it waited
behind it: when the pool had nothing to give (exhausted, or rebuilding its connections after a
storm of killed backends) the renewal waited past a live turn's lease and a second message then
reclaimed the running turn. The watcher now renews on a connection of its own (AGENT_LEASE_DATABASE).
Evidence, not durations: the lease is made due first, so only a renewal made while the pool has
nothing to give keeps the second message out.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import psycopg
import pytest
from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from agent import hub, turns, watch
from agent.exceptions import TurnInProgress
from agent.models import Session, Turn

pytestmark = [
    pytest.mark.django_db(transaction=True, databases="__all__"),  # (the watcher's own database too)
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the pool is PostgreSQL's (SQLite has none)"),
]


def admin() -> psycopg.Connection:
    """A connection of its own to the test database, outside Django and its pool."""
    params = connection.get_connection_params()
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def live_turn(user):
    """A claimed, running turn of this process (what `turns.start` leaves for the watcher), its lease due."""
    session = Session.objects.create(user=user)
    run = turns.claim(session)
    channel = hub.open_channel(str(run.turn.pk))
    channel.watched = True
    yield run
    channel.close()


def make_due(run, db=None):
    """The lease runs out now: unless the watcher renews it, the next message reclaims the running turn."""
    if db is None:
        Session.objects.filter(pk=run.session.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    else:
        db.execute("UPDATE agent_session SET lease_until = now() - interval '1 second' WHERE id = %s", [run.session.pk])


def assert_still_owned(run):
    with pytest.raises(TurnInProgress):
        turns.claim(Session.objects.get(pk=run.session.pk))
    assert Turn.objects.get(pk=run.turn.pk).status == Turn.RUNNING
    assert Session.objects.get(pk=run.session.pk).turn_id == run.turn.pk


@pytest.fixture
def empty_pool():
    """Every connection of the pool taken (its timeout cut to 3 s, so a wait on it fails soon)."""
    connection.close()  # the test's own goes back first
    pool = connection.pool
    timeout, pool.timeout = pool.timeout, 3
    held = []

    def take_all():
        connection.close()  # (the test thread's own too)
        held.extend(pool.getconn() for _ in range(pool.max_size - len(held)))

    def give_back():
        while held:
            pool.putconn(held.pop())

    yield take_all, give_back
    give_back()
    pool.timeout = timeout


def test_the_watcher_renews_a_live_turns_lease_while_the_pool_has_nothing_to_give(live_turn, empty_pool):
    take_all, give_back = empty_pool
    make_due(live_turn)
    take_all()
    with ThreadPoolExecutor(1) as watcher:  # (a thread of its own, as the watcher's greenlet: its own connections)
        try:
            watcher.submit(watch.poll, renew=True).result()
        finally:
            watcher.submit(connections.close_all).result()
    give_back()
    assert_still_owned(live_turn)


def watcher_pid() -> int:
    with connections[settings.AGENT_LEASE_DATABASE].cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_the_watcher_reconnects_on_its_own_while_the_pool_has_nothing_to_give(live_turn, empty_pool):
    """Its connection killed (as in a storm of killed backends), the next pass connects afresh, outside the pool."""
    take_all, give_back = empty_pool
    with ThreadPoolExecutor(1) as watcher:
        try:
            assert watcher.submit(watch.tick, renew=True).result()
            before = watcher.submit(watcher_pid).result()
            with admin() as db:
                db.execute("SELECT pg_terminate_backend(%s)", [before])
                make_due(live_turn, db)
            take_all()
            assert watcher.submit(watch.tick, renew=True).result()
            assert watcher.submit(watcher_pid).result() != before
        finally:
            watcher.submit(connections.close_all).result()
    give_back()
    assert_still_owned(live_turn)


def test_the_watcher_holds_no_connection_while_no_turn_runs_here(live_turn):
    """Kept between passes while turns run; given back once none does, so an idle worker holds none."""
    with ThreadPoolExecutor(1) as watcher:
        try:
            assert watcher.submit(watch.tick, renew=True).result()
            before = watcher.submit(watcher_pid).result()
            assert watcher.submit(watch.tick, renew=False).result()
            assert watcher.submit(watcher_pid).result() == before  # (the same connection: kept)
            hub.get_channel(str(live_turn.turn.pk)).close()
            assert watcher.submit(watch.tick, renew=False).result()
            with admin() as db:
                assert not db.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [before]).fetchall()
        finally:
            watcher.submit(connections.close_all).result()
