"""The engine stands alone: these tests run with `blog` not installed, and no engine module needs it."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

import agent
from agent.models import Session

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
TOOL_CALL = {"kind": "tool_use", "id": "call_1", "name": "add", "input": {"a": 2, "b": 3}}


def test_blog_is_not_installed_and_the_policy_is_the_test_apps():
    from agent.policy import get_policy
    from tests.agent.testapp.policy import NotebookPolicy

    assert not apps.is_installed("blog")
    assert isinstance(get_policy(), NotebookPolicy)


def test_every_engine_module_imports_without_blog():
    for module in pkgutil.walk_packages(agent.__path__, "agent."):
        importlib.import_module(module.name)
    assert [name for name in sys.modules if name == "blog" or name.startswith("blog.")] == []


# This project's packages, which a project of its own around the engine would not have: its deploy
# layer and sign-in, the domain, the connectors and their OAuth server (and the project's test settings,
# which load `config.settings`).
PROJECT = ("config", "accounts", "blog", "connectors", "oauth2_provider", "tests.settings")
TESTS = Path(__file__).resolve().parent.parent  # (tests/: tests/conftest.py is loaded for this run too)


def of_the_project(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in PROJECT)


def test_nothing_of_the_project_is_loaded(client):
    """The settings, the URLconf, the middleware and the system checks load without the project."""
    from django.core.checks import run_checks

    assert client.get("/no-such-page/").status_code == 404  # the URLconf and the middleware chain, loaded
    run_checks()
    assert [name for name in sys.modules if of_the_project(name)] == []


def test_no_engine_test_imports_the_project():
    """Not even inside a function, where it would be loaded only when that test runs."""
    found = []
    for path in [TESTS / "conftest.py", *sorted((TESTS / "agent").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            found += [f"{path.relative_to(TESTS)}: {name}" for name in names if of_the_project(name)]
    assert found == []


def without_engine_settings(settings, *keep: str) -> None:
    """Delete every `AGENT_*` setting but `keep`, as in a project that names only what it changes."""
    from django.conf import settings as django_settings

    for name in [n for n in dir(django_settings) if n.startswith("AGENT_") and n not in keep]:
        delattr(settings, name)


@pytest.mark.django_db(transaction=True)
def test_a_project_that_sets_only_the_backend_runs_a_turn(settings, script, api):
    """The engine's settings have defaults (docs/engine.md, 'Settings'): a new project names its
    backend and nothing else, and a turn with a tool call runs through the HTTP API."""
    from agent.checks import agent_events, agent_settings
    from agent.tools import register, unregister

    script([[TOOL_CALL, {"kind": "done", "stop_reason": "tool_use"}], [{"kind": "text", "text": "5."}]])
    without_engine_settings(settings, "AGENT_BACKEND", "AGENT_FAKE_SCRIPT")
    register("add", description="Add.", input_schema=ADD_SCHEMA, writes=False)(lambda session, a, b: {"sum": a + b})
    try:
        assert agent_settings() == [] and agent_events() == []
        created = api.post("/api/agent/sessions", {"purpose": "chat"})  # the default policy: any signed-in user
        assert created.status_code == 201, created.content
        chat = Session.objects.get(pk=created.json()["id"])
        events = api.turn(chat, "What is 2 + 3?")
    finally:
        unregister("add")
    assert [name for name, _ in events] == ["tool_use", "tool_result", "token", "done"]
    assert events[1][1]["result"] == {"sum": 5}


def test_a_missing_backend_setting_is_one_clear_error(settings):
    from agent.backends import get_backend
    from agent.checks import agent_settings

    without_engine_settings(settings)
    with pytest.raises(ImproperlyConfigured) as raised:
        get_backend()
    assert raised.value.args == (
        "AGENT_BACKEND is not set: name the backend the engine calls, one of "
        "anthropic, bedrock, fake, openai, openai-responses.",
    )
    (error,) = agent_settings()
    assert error.id == "agent.E001" and error.msg == raised.value.args[0]
