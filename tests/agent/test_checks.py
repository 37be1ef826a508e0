"""`manage.py check` says each misconfiguration of the engine in one clear sentence, with its id."""

from __future__ import annotations

import pytest
from django.test import override_settings

from agent.backends import reset_backends
from agent.checks import agent_events, agent_settings


@pytest.fixture(autouse=True)
def fresh_backends():
    reset_backends()
    yield
    reset_backends()


def ids(messages) -> list[str]:
    return [m.id for m in messages]


def test_a_sound_configuration_says_nothing(settings):
    settings.AGENT_BACKEND, settings.AGENT_MODEL = "fake", ""
    settings.OPENAI_API_KEY = settings.ANTHROPIC_API_KEY = ""  # (whatever the shell running the tests exports)
    assert agent_settings() == []
    assert agent_events() == []


def test_an_unknown_backend_is_one_error(settings):
    settings.AGENT_BACKEND = "gemini-direct"
    (error,) = agent_settings()
    assert error.id == "agent.E001" and "AGENT_BACKEND must be one of" in error.msg and "'gemini-direct'" in error.msg


def test_tool_cycles_and_the_turn_executor_are_checked(settings):
    settings.AGENT_BACKEND, settings.AGENT_MAX_TOOL_CYCLES, settings.AGENT_TURN_EXECUTOR = "fake", 0, "celery"
    assert ids(agent_settings()) == ["agent.E003", "agent.E004"]


@pytest.mark.parametrize(
    ("poll", "lease", "expected"), [(0, 120, "agent.E006"), (-1, 120, "agent.E006"), (2, 3, "agent.E007")]
)
def test_the_watcher_s_pace_and_the_lease_are_checked(settings, poll, lease, expected):
    settings.AGENT_BACKEND, settings.AGENT_STOP_POLL_SECONDS, settings.AGENT_TURN_LEASE_SECONDS = "fake", poll, lease
    assert ids(agent_settings()) == [expected]
    settings.AGENT_STOP_POLL_SECONDS, settings.AGENT_TURN_LEASE_SECONDS = 60, 120  # (tests/e2e/test_two_hosts.py)
    assert agent_settings() == []


def test_a_model_without_a_price_is_warned_of(settings):
    settings.AGENT_BACKEND, settings.AGENT_MODEL, settings.AGENT_PRICES = "fake", "my-own-model", {}
    (warning,) = [m for m in agent_settings() if m.id != "agent.W006"]  # (W006: a model named to the fake)
    assert warning.id == "agent.W001" and "'my-own-model'" in warning.msg and "AGENT_PRICES" in warning.msg
    settings.AGENT_PRICES = {"my-own-model": {"input": 0, "output": 0}}
    assert ids(agent_settings()) == ["agent.W006"]


def test_a_confirmed_tool_that_no_tool_is_named_is_warned_of(settings):
    # (A typo, `delete_notes`, held nothing for approval, and check said nothing.)
    settings.AGENT_BACKEND, settings.AGENT_CONFIRM_TOOLS = "fake", ["delete_notes", "delete_note"]
    (warning,) = agent_settings()
    assert warning.id == "agent.W004"
    assert warning.msg.startswith(
        "AGENT_CONFIRM_TOOLS names 'delete_notes', which is no tool's name: the calls it was meant to hold for "
        "a person's approval would run at once. Tools: "
    )
    assert "delete_note," in warning.msg
    settings.AGENT_CONFIRM_TOOLS = ["delete_note"]
    assert agent_settings() == []


def test_an_event_bus_url_that_cannot_be_read_is_an_error_that_shows_no_password(settings):
    settings.AGENT_EVENTS_URL = "mysql://user:s3cret-pass@db/1"
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"  # (as config/settings.py picks it for a URL)
    (error,) = agent_events()
    assert error.id == "agent.E005" and "redis://host:port/db" in error.msg
    assert "s3cret-pass" not in error.msg


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("tests.agent.testapp.policy.NoSuchPolicy", "cannot be imported"),
        ("tests.agent.testapp.models.Notebook", "is not a subclass of agent.policy.SessionPolicy"),
    ],
)
def test_a_session_policy_that_does_not_load_is_one_error(settings, path, why):
    # (A typo here passed the check, and every request of the API then failed with a 500.)
    settings.AGENT_BACKEND, settings.AGENT_SESSION_POLICY = "fake", path
    (error,) = agent_settings()
    assert error.id == "agent.E008" and error.msg.startswith(f"AGENT_SESSION_POLICY names {path!r}, which {why}")


def test_attachments_in_the_working_directory_are_warned_of(settings):
    # (Django's MEDIA_ROOT default is "": a new project stored uploads under ./agent/<session id>/,
    # inside the copied `agent` package itself.)
    settings.AGENT_BACKEND, settings.MEDIA_ROOT = "fake", ""
    (warning,) = agent_settings()
    assert warning.id == "agent.W005" and warning.msg == (
        "MEDIA_ROOT is not set: attachments would be stored in the working directory, under agent/. "
        "Set MEDIA_ROOT to a directory of their own, not served at MEDIA_URL."
    )
    settings.MEDIA_ROOT = "/srv/media"
    assert agent_settings() == []


def test_a_reasoning_setting_that_does_not_parse_is_one_error(settings):
    # (config/settings.py refuses it from the environment; set in another project's settings, it
    # passed the check and failed the first model call of a real adapter instead.)
    settings.AGENT_BACKEND, settings.AGENT_REASONING = "fake", "hgih"
    (error,) = agent_settings()
    assert error.id == "agent.E009" and error.msg == (
        "AGENT_REASONING must be off, low, medium, high or a number of tokens; got 'hgih'."
    )


@pytest.mark.parametrize(
    "prices",
    [{"fake": {"input": "0.15"}}, {"fake": 0.15}, {"fake": {"input": -1}}, ["fake"]],
)
def test_prices_that_are_not_numbers_are_one_error(settings, prices):
    # (config/settings.py refuses them from the environment; set in another project's settings,
    # they passed the check and failed every turn of the model at its first call.)
    settings.AGENT_BACKEND, settings.AGENT_MODEL, settings.AGENT_PRICES = "fake", "", prices
    errors = agent_settings()
    assert ids(errors) == ["agent.E010"] and errors[0].msg == (
        'AGENT_PRICES must be a dict of model id to prices, e.g. {"my-model": {"input": 0.15, "output": 0.6}} '
        "(dollars per million tokens, none negative; `long`: the same for long prompts)."
    )


def test_prices_with_long_prompt_figures_pass(settings):
    settings.AGENT_BACKEND, settings.AGENT_MODEL = "fake", ""  # (the fake's own model, "fake")
    settings.AGENT_PRICES = {"fake": {"input": 1, "output": 2.5, "long": {"input": 2, "output": 5}}}
    assert agent_settings() == []


def test_no_model_named_for_a_server_other_than_the_provider_s_own_is_warned_of(settings):
    """Ollama, vLLM or OpenRouter with AGENT_MODEL forgotten: the default `gpt-4o-mini` is asked of a server that
    serves no such model, and every first message failed with a 404 in the log."""
    settings.AGENT_BACKEND, settings.AGENT_MODEL = "openai", ""
    settings.OPENAI_BASE_URL, settings.AGENT_PRICES = "http://127.0.0.1:11434/v1", {}
    warnings = [m for m in agent_settings() if m.id == "agent.W007"]
    assert [w.msg for w in warnings] == [
        "AGENT_MODEL is not set, so the openai backend asks 127.0.0.1:11434 for its default model 'gpt-4o-mini', "
        "which a server other than api.openai.com may not serve: set AGENT_MODEL to one of its models."
    ]
    settings.AGENT_MODEL = "qwen2.5:7b"
    reset_backends()
    assert "agent.W007" not in ids(agent_settings())
    settings.AGENT_MODEL, settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "", "https://api.openai.com/v1", "sk-x"
    reset_backends()
    assert "agent.W007" not in ids(agent_settings())


def test_provider_settings_with_a_backend_that_answers_without_a_model_are_warned_of(settings):
    """`OPENAI_API_KEY=… AGENT_MODEL=… make run` with AGENT_BACKEND forgotten: the offline backend answered, and
    nothing said the key was unused."""
    settings.AGENT_BACKEND, settings.AGENT_MODEL = "fake", "gpt-6-sol"
    settings.OPENAI_API_KEY, settings.ANTHROPIC_API_KEY = "sk-live-0000", ""
    (warning,) = [m for m in agent_settings() if m.id == "agent.W006"]
    assert warning.msg == (
        "AGENT_BACKEND is 'fake', which answers without any model, so OPENAI_API_KEY and AGENT_MODEL are not "
        "used: set AGENT_BACKEND to openai, openai-responses, anthropic or bedrock for a real model."
    )
    assert "sk-live" not in warning.msg
    settings.AGENT_MODEL, settings.OPENAI_API_KEY = "", ""
    assert "agent.W006" not in ids(agent_settings())


def test_a_minute_budget_too_small_for_a_tool_turn_in_a_long_chat_is_warned_of(settings):
    """With a real model, a chat's every call counts its whole prompt: past ~8,000 tokens a turn that
    uses a tool met the default minute budget on its second call, every time it was tried."""
    settings.AGENT_BACKEND, settings.AGENT_MODEL, settings.AGENT_PRICES = "openai", "gpt-4o-mini", {}
    settings.OPENAI_API_KEY, settings.OPENAI_BASE_URL = "sk-x", "https://api.openai.com/v1"
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE, settings.AGENT_CONTEXT_MAX_TOKENS = 20000, 60000
    settings.AGENT_MAX_TOKENS = 4096
    reset_backends()
    (warning,) = [m for m in agent_settings() if m.id == "agent.W008"]
    assert warning.msg == (
        "AGENT_BUDGET_TOKENS_PER_MINUTE (20000) holds a turn that uses a tool only while the chat is under about "
        "7952 tokens, but chats are summarised only past AGENT_CONTEXT_MAX_TOKENS (60000): in a longer chat such a "
        "turn ends with budget_exceeded, however often it is tried. Raise the budget to at least 192288 (room for "
        "three calls) or lower AGENT_CONTEXT_MAX_TOKENS."
    )
    for name, value in [
        ("AGENT_BUDGET_TOKENS_PER_MINUTE", 192288),  # room enough
        ("AGENT_BUDGET_TOKENS_PER_MINUTE", 0),  # no minute budget
        ("AGENT_CONTEXT_MAX_TOKENS", 4000),  # chats summarised before they outgrow it
    ]:
        with override_settings(**{name: value}):
            assert "agent.W008" not in ids(agent_settings()), name
    settings.AGENT_BACKEND, settings.OPENAI_API_KEY, settings.AGENT_MODEL = "fake", "", ""  # (no model: no cost)
    reset_backends()
    assert "agent.W008" not in ids(agent_settings())


@pytest.mark.parametrize(
    ("name", "error_id", "message"),
    [
        # (0 passed `check` and every start: each model call then asked for an answer of no tokens, which a
        # provider refuses, so every person's first message failed)
        (
            "AGENT_MAX_TOKENS",
            "agent.E011",
            "AGENT_MAX_TOKENS must be at least 1 (the longest answer of one model call).",
        ),
        # (0 passed too: each approval expired as it was created, so no call of AGENT_CONFIRM_TOOLS could
        # ever be approved)
        (
            "AGENT_APPROVAL_TTL_SECONDS",
            "agent.E013",
            "AGENT_APPROVAL_TTL_SECONDS must be at least 1 (how long a call waits for a person's approval).",
        ),
    ],
)
def test_a_zero_that_would_break_every_turn_is_refused_at_start_up(settings, name, error_id, message):
    settings.AGENT_BACKEND, settings.AGENT_MODEL = "fake", ""
    settings.OPENAI_API_KEY = settings.ANTHROPIC_API_KEY = ""
    setattr(settings, name, 0)
    (error,) = agent_settings()
    assert (error.id, error.msg) == (error_id, message)
    setattr(settings, name, 1)
    assert agent_settings() == []


def test_an_event_stream_that_keeps_no_events_is_refused_at_start_up(settings):
    """(AGENT_EVENTS_MAX_LEN=0 passed: Redis was told to keep no entry of a turn's events, so a stream
    on another worker or host could miss what it had not read yet.)"""
    settings.AGENT_EVENTS_MAX_LEN = 0
    (error,) = agent_events()
    assert (error.id, error.msg) == (
        "agent.E012",
        "AGENT_EVENTS_MAX_LEN must be at least 1 (the events of a turn kept on Redis).",
    )
