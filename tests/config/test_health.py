"""`GET /healthz` (`config.middleware.HealthCheckMiddleware`): what a load balancer asks of each host."""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.http import HttpResponse
from django.test import Client, RequestFactory

from config.middleware import HealthCheckMiddleware
from tests.agent.backends.openai_server import closed_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def probe(settings):
    """As a balancer asks: by the host's own address (no allowed Host), over plain HTTP, no cookie."""
    settings.ALLOWED_HOSTS = ["blog.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    return Client(HTTP_HOST="10.0.3.7:8000")


def test_a_serving_worker_with_its_database_is_healthy(probe):
    response = probe.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "migrations": "ok", "events": "in-process"}
    assert response["Cache-Control"] == "no-store" and "Set-Cookie" not in response
    assert probe.head("/healthz").status_code == 200
    # The rest of the site still refuses that Host, and still sends plain HTTP to HTTPS.
    assert probe.get("/").status_code == 400
    assert Client(HTTP_HOST="blog.example.com").get("/").status_code == 301


def test_without_its_database_a_worker_is_unavailable_and_says_no_more(probe, monkeypatch):
    def refused(self, *args, **kwargs):
        raise OperationalError('connection to server at "10.0.9.9", port 5432 failed: password authentication')

    monkeypatch.setattr("django.db.backends.base.base.BaseDatabaseWrapper.cursor", refused)
    response = probe.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "database": "unavailable",
        "migrations": "unknown",
        "events": "in-process",
    }
    assert b"10.0.9.9" not in response.content and b"password" not in response.content


def test_redis_down_is_reported_but_leaves_the_worker_in_service(probe, settings):
    """Streams fall back to the database without Redis, and every host shares it: not a reason to
    take them all out of the balancer at once."""
    settings.AGENT_EVENTS_URL = f"redis://:s3cret@127.0.0.1:{closed_port()}/0"
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    response = probe.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "migrations": "ok", "events": "unavailable"}
    assert b"s3cret" not in response.content and b"127.0.0.1" not in response.content


def test_only_reading_it_is_allowed(probe):
    response = probe.post("/healthz")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


@pytest.mark.django_db(transaction=True)
def test_a_worker_started_before_migrate_is_unavailable_until_the_database_is_migrated(probe, monkeypatch):
    """A rolling deploy starts the new code's workers before (or while) `migrate` runs: their pages answer
    500, so the balancer must not send them anyone until the database has every migration they know."""
    clock = [1000.0]
    monkeypatch.setattr("config.middleware.monotonic", lambda: clock[0])
    call_command("migrate", "blog", "0006", verbosity=0)
    try:
        response = probe.get("/healthz")
        assert response.status_code == 503
        body = {"status": "unavailable", "database": "ok", "migrations": "pending", "events": "in-process"}
        assert response.json() == body
    finally:
        call_command("migrate", "blog", verbosity=0)
    # Re-checked at most every few seconds: a probe in between answers from what it last found.
    assert probe.get("/healthz").json()["migrations"] == "pending"
    clock[0] += 5
    response = probe.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "migrations": "ok", "events": "in-process"}


def test_once_migrated_a_probe_asks_the_database_one_query(probe, django_assert_num_queries):
    """Migrations never become unapplied under a running worker: after the first probe found them all
    applied, the next ones ask only whether the database answers."""
    assert probe.get("/healthz").json()["migrations"] == "ok"
    with django_assert_num_queries(1):
        assert probe.get("/healthz").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_broken_migration_history_makes_the_worker_unavailable_not_an_error(probe, caplog):
    """The database records a migration as applied whose dependency is not (a hand-edited table, a
    restore from the wrong backup): `migrate` refuses to run, so the worker cannot be sure of its schema.
    The probe answers 503 `"migrations": "unknown"` and the log says why, once; it used to answer 500."""
    from django.db import connection

    call_command("migrate", "blog", "0005", verbosity=0)  # 0006 and 0007 not applied...
    with connection.cursor() as cursor:  # ...yet 0007 recorded as if it were
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, CURRENT_TIMESTAMP)",
            ["blog", "0007_consent_known_scopes"],
        )
    try:
        caplog.set_level("ERROR", logger="config")
        for _ in range(2):
            response = probe.get("/healthz")
            assert response.status_code == 503
            body = {"status": "unavailable", "database": "ok", "migrations": "unknown", "events": "in-process"}
            assert response.json() == body
        said = [r.getMessage() for r in caplog.records if "migration history" in r.getMessage()]
        assert len(said) == 1, said
        assert "blog.0007_consent_known_scopes" in said[0]
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM django_migrations WHERE app = %s AND name = %s", ["blog", "0007_consent_known_scopes"]
            )
        call_command("migrate", "blog", verbosity=0)


def test_probes_arriving_together_look_at_the_migrations_once(monkeypatch):
    """A worker's first probes often come together (a balancer and an orchestrator, several balancer
    nodes): one looks at the migrations (`migrate --check`), the others wait for its answer and take it."""
    looks = []

    def pending() -> bool:
        looks.append(threading.current_thread().name)
        time.sleep(0.2)  # (the look takes a while: the other probes arrive meanwhile)
        return True

    monkeypatch.setattr("config.middleware.migrations_pending", pending)
    monkeypatch.setattr("config.middleware.database_answers", lambda: True)
    health = HealthCheckMiddleware(lambda request: HttpResponse())
    answers: list[tuple[int, str]] = []

    def ask() -> None:
        response = health(RequestFactory().get("/healthz"))
        answers.append((response.status_code, json.loads(response.content)["migrations"]))

    probes = [threading.Thread(target=ask) for _ in range(5)]
    for probe in probes:
        probe.start()
    for probe in probes:
        probe.join()
    assert answers == [(503, "pending")] * 5
    assert len(looks) == 1, looks


def test_a_worker_out_of_service_logs_the_change_once_not_each_probe(probe, monkeypatch, caplog):
    """A balancer probes every few seconds: through a rolling deploy's pending migrations each probe used to
    log an error ("Service Unavailable: /healthz", Django's request log). The worker now says once that it
    went out of service and why, and once that it is back."""
    clock = [1000.0]
    monkeypatch.setattr("config.middleware.monotonic", lambda: clock[0])
    pending = [True]
    monkeypatch.setattr("config.middleware.migrations_pending", lambda: pending[0])
    caplog.set_level("INFO")
    for _ in range(3):
        assert probe.get("/healthz").status_code == 503
        clock[0] += 5
    pending[0] = False
    for _ in range(2):
        assert probe.get("/healthz").status_code == 200
    said = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if "healthz" in r.getMessage()]
    assert said == [
        ("config.middleware", "WARNING", "/healthz: out of service (database ok, migrations pending)"),
        ("config.middleware", "INFO", "/healthz: back in service"),
    ]
