"""Thinking on demand (`AGENT_REASONING`) in each provider's words, seen in the requests sent."""

from __future__ import annotations

import pytest

from agent.backends.bedrock import build_request
from agent.backends.openai import OpenAIBackend
from agent.backends.reasoning import Reasoning, binds_thinking, claude_thinking, claude_thinking_off, parse
from tests.agent.backends.openai_server import Reply, sse

USER = [{"role": "user", "parts": [{"type": "text", "text": "Think."}]}]
SAMPLING = {"max_tokens": 8000, "temperature": 0.3, "top_p": 0.9}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("off", None),
        ("", None),
        ("low", Reasoning(level="low")),
        ("HIGH", Reasoning(level="high")),
        ("3000", Reasoning(budget=3000)),
    ],
)
def test_the_setting(value, expected):
    assert parse(value) == expected


def test_a_bad_setting_is_one_clear_sentence():
    with pytest.raises(ValueError) as info:
        parse("lots")
    assert info.value.args == ("AGENT_REASONING must be off, low, medium, high or a number of tokens; got 'lots'.",)


def test_budgets_and_levels():
    assert Reasoning(budget=1500).effort == "low"
    assert Reasoning(budget=5000).effort == "medium"
    assert Reasoning(budget=50000).effort == "high"
    assert Reasoning(level="high").budget_below(4096) == 3072  # room left for the answer
    assert Reasoning(budget=2000).budget_below(8000) == 2000
    assert Reasoning(level="low").budget_below(1500) is None  # too small to think in


TOOL = [{"name": "list_posts", "description": "List posts.", "input_schema": {"type": "object"}}]


def sent(server, model, tools=(), **options):
    backend = OpenAIBackend(base_url=server.url, api_key="k", retries=0, **options)
    server.script(Reply(body=sse({"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})))
    try:
        list(backend.stream(system="", messages=USER, tools=list(tools), model=model, inference=SAMPLING))
    finally:
        backend.close()
    return server.requests[-1].body


def test_openai_reasoning_model_gets_reasoning_effort_and_no_temperature(server, settings):
    settings.AGENT_REASONING = "high"
    body = sent(server, "o4-mini")
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 8000
    assert "temperature" not in body and "top_p" not in body


def test_a_model_made_reasoning_by_setting_gets_it_too(server, settings):
    settings.AGENT_REASONING = "3000"
    settings.AGENT_MODEL_REASONING = True
    body = sent(server, "prod-chat")
    assert (body["reasoning_effort"], body["max_completion_tokens"]) == ("medium", 8000)


@pytest.mark.parametrize("model", ["gpt-6-sol", "gpt-6-luna", "gpt-5.6-luna", "openai/gpt-6-sol"])
def test_gpt_5_4_and_later_with_tools_in_chat_completions_are_asked_for_no_reasoning(server, settings, model):
    """They take function tools there only at `reasoning_effort: "none"`, and reason by default (a
    request without it is a 400 too); without tools they think as AGENT_REASONING asks."""
    settings.AGENT_REASONING = "high"
    body = sent(server, model, tools=TOOL)
    assert body["reasoning_effort"] == "none" and body["tools"]
    assert body["max_completion_tokens"] == 8000 and "max_tokens" not in body and "temperature" not in body
    settings.AGENT_REASONING = "off"
    assert sent(server, model, tools=TOOL)["reasoning_effort"] == "none"
    settings.AGENT_REASONING = "low"
    assert sent(server, model)["reasoning_effort"] == "low"


def test_gpt_5_2_thinks_with_tools_as_asked(server, settings):
    settings.AGENT_REASONING = "low"
    assert sent(server, "gpt-5.2", tools=TOOL)["reasoning_effort"] == "low"


def test_check_warns_of_an_openai_model_that_takes_tools_only_through_responses(settings):
    from agent.checks import agent_settings

    settings.AGENT_BACKEND, settings.OPENAI_API_KEY = "openai", "sk-test"
    settings.AGENT_MODEL = "gpt-6-astra"
    (warning,) = [m for m in agent_settings() if m.id == "agent.W003"]
    assert "gpt-6-astra takes function tools only through the Responses API" in warning.msg
    assert "Use AGENT_BACKEND=openai-responses" in warning.msg  # the backend that gives it its tools
    settings.AGENT_MODEL, settings.AGENT_REASONING = "gpt-6-sol", "off"
    assert not [m for m in agent_settings() if m.id == "agent.W003"]
    settings.AGENT_REASONING = "high"  # asked for, but not given to a call with tools
    (warning,) = [m for m in agent_settings() if m.id == "agent.W003"]
    assert "AGENT_REASONING applies only to calls that offer the assistant no tools" in warning.msg
    settings.AGENT_BACKEND = "openai-responses"  # where it reasons with its tools
    assert not [m for m in agent_settings() if m.id == "agent.W003"]


def test_other_models_are_not_asked_and_off_sends_nothing(server, settings):
    settings.AGENT_REASONING = "high"
    body = sent(server, "llama3.1:8b")
    assert "reasoning_effort" not in body and body["temperature"] == 0.3
    settings.AGENT_REASONING = "off"
    assert "reasoning_effort" not in sent(server, "o3")


@pytest.mark.parametrize(
    ("base_url", "reasoning", "expected"),
    [
        ("https://openrouter.ai/api/v1", "medium", {"reasoning": {"effort": "medium"}}),
        ("https://openrouter.ai/api/v1", "6000", {"reasoning": {"max_tokens": 6000}}),
        ("https://api.deepseek.com/v1", "high", {"thinking": {"type": "enabled"}}),
    ],
)
def test_openrouter_and_deepseek_in_their_own_words(settings, base_url, reasoning, expected):
    settings.AGENT_REASONING = reasoning
    backend = OpenAIBackend(base_url=base_url, api_key="k")
    try:
        body = backend.request_body(system="", messages=USER, tools=[], model="any/model", inference=SAMPLING)
    finally:
        backend.close()
    assert {key: body[key] for key in expected} == expected


def bedrock(model, reasoning, **inference):
    return build_request(
        system="s", messages=USER, tools=[], model=model, inference={**SAMPLING, **inference}, reasoning=reasoning
    )


def test_bedrock_claude_thinking_with_a_budget_below_max_tokens():
    request = bedrock("us.anthropic.claude-sonnet-4-20250514-v1:0", Reasoning(level="high"))
    assert request["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 6976}}
    assert request["inferenceConfig"] == {"maxTokens": 8000}  # no temperature or topP with thinking
    request = bedrock("anthropic.claude-3-7-sonnet-20250219-v1:0", Reasoning(budget=2048))
    assert request["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 2048


@pytest.mark.parametrize(
    ("model", "reasoning", "inference"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", Reasoning(level="low"), {}),  # no extended thinking
        ("amazon.nova-pro-v1:0", Reasoning(level="low"), {}),
        ("anthropic.claude-sonnet-4-20250514-v1:0", Reasoning(level="low"), {"max_tokens": 1500}),  # too small
        ("anthropic.claude-sonnet-4-20250514-v1:0", None, {}),  # off
    ],
)
def test_bedrock_without_thinking(model, reasoning, inference):
    request = bedrock(model, reasoning, **inference)
    assert "additionalModelRequestFields" not in request
    assert request["inferenceConfig"]["temperature"] == 0.3


def _loop_without_thinking(first_part: dict | None = None) -> list[dict]:
    parts = [{"type": "tool_use", "id": "t1", "name": "list_posts", "input": {}}]
    return [
        *USER,
        {"role": "assistant", "parts": [*([first_part] if first_part else []), *parts]},
        {"role": "tool", "parts": [{"type": "tool_result", "tool_use_id": "t1", "result": {}, "status": "ok"}]},
    ]


@pytest.mark.parametrize(
    ("first_part", "thinks"),
    [
        (None, False),  # the loop began without thinking (or its state went to another model)
        ({"type": "reasoning", "text": "Hm.", "signature": "sig"}, True),
        ({"type": "reasoning", "text": "", "provider_data": {"redacted": "AAAA"}}, True),
    ],
)
def test_claude_thinks_only_where_the_tool_loop_allows(first_part, thinks):
    from agent.backends.anthropic import build_body

    messages = _loop_without_thinking(first_part)
    model = "anthropic.claude-sonnet-4-20250514-v1:0"
    bedrock_request = build_request(
        system="", messages=messages, tools=[], model=model, inference={"max_tokens": 8000}, reasoning=Reasoning("low")
    )
    assert ("additionalModelRequestFields" in bedrock_request) is thinks
    body = build_body(
        system="", messages=messages, tools=[], model="claude-sonnet-4-5", max_tokens=8000, reasoning=Reasoning("low")
    )
    assert ("thinking" in body) is thinks


@pytest.mark.parametrize(
    ("model", "kind"),
    [
        ("anthropic.claude-3-5-haiku-20241022-v1:0", None),  # no thinking before 3.7
        ("claude-3-opus-20240229", None),
        ("gpt-5", None),
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", "budget"),
        ("claude-sonnet-4-20250514", "budget"),  # (eight digits are a date, not a minor version)
        ("claude-opus-4-1-20250805", "budget"),
        ("claude-sonnet-4-5", "budget"),
        ("claude-opus-4-5-20251101", "budget"),
        ("us.anthropic.claude-haiku-4-5-20251001-v1:0", "budget"),
        ("us.anthropic.claude-opus-4-6-v1", "adaptive"),
        ("anthropic.claude-sonnet-4-6", "adaptive"),
        ("claude-opus-4-7", "adaptive"),
        ("claude-sonnet-5", "adaptive"),
        ("global.anthropic.claude-opus-5-5", "adaptive"),
        ("claude-haiku-5-5", "adaptive"),
        ("claude-fable-5-1", "adaptive"),
        ("claude-mythos-preview", "adaptive"),
    ],
)
def test_which_way_a_claude_model_thinks(model, kind):
    assert claude_thinking(model) == kind


def test_adaptive_claude_gets_an_effort_and_summarized_thinking_on_both_apis():
    from agent.backends.anthropic import build_body

    body = build_body(
        system="",
        messages=USER,
        tools=[],
        model="claude-sonnet-5",
        max_tokens=8000,
        reasoning=Reasoning("low"),
        inference=SAMPLING,
    )
    assert body["thinking"] == {"type": "adaptive", "display": "summarized"}  # (no budget: a 400 there)
    assert body["output_config"] == {"effort": "low"}
    assert "temperature" not in body and "top_p" not in body
    request = bedrock("global.anthropic.claude-opus-5-5", Reasoning(budget=30000))
    assert request["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive", "display": "summarized"},
        "output_config": {"effort": "high"},  # a budget read as the level it falls in
    }
    assert request["inferenceConfig"] == {"maxTokens": 8000}


def test_adaptive_claude_thinks_on_in_a_tool_loop_that_began_without_thinking():
    from agent.backends.anthropic import build_body

    messages = _loop_without_thinking()
    body = build_body(
        system="", messages=messages, tools=[], model="claude-opus-4-7", max_tokens=8000, reasoning=Reasoning("medium")
    )
    assert body["thinking"]["type"] == "adaptive"
    request = build_request(
        system="", messages=messages, tools=[], model="anthropic.claude-sonnet-4-6", reasoning=Reasoning("medium")
    )
    assert request["additionalModelRequestFields"]["output_config"] == {"effort": "medium"}


SUMMARIZED = {"type": "adaptive", "display": "summarized"}


@pytest.mark.parametrize(
    ("model", "thinking"),
    [
        ("claude-sonnet-4-5", None),  # thinks only when asked
        ("claude-opus-4-8", None),
        ("anthropic.claude-3-5-haiku-20241022-v1:0", None),
        ("gpt-6-sol", None),
        ("claude-opus-5", {"type": "disabled"}),  # thinks by default, and may be told not to
        ("claude-sonnet-5", {"type": "disabled"}),
        ("claude-haiku-5-5", {"type": "disabled"}),
        ("claude-sonnet-5-5", {"type": "between_tools"}),  # refuses "disabled": its lowest setting
        ("claude-opus-5-5", SUMMARIZED),  # always thinks: at least its words between tool calls show
        ("claude-fable-5-1", SUMMARIZED),
        ("claude-mythos-preview", SUMMARIZED),
    ],
)
def test_reasoning_off_asks_each_claude_model_for_as_little_thinking_as_it_takes(model, thinking):
    assert claude_thinking_off(model) == thinking


def test_reasoning_off_on_both_apis():
    from agent.backends.anthropic import build_body

    def anthropic(model):
        return build_body(
            system="", messages=USER, tools=[], model=model, max_tokens=8000, reasoning=None, inference=SAMPLING
        )

    body = anthropic("claude-sonnet-4-5")
    assert "thinking" not in body and "output_config" not in body and body["temperature"] == 0.3
    body = anthropic("claude-sonnet-5")
    assert body["thinking"] == {"type": "disabled"} and body["temperature"] == 0.3  # (not thinking: sampling stands)
    body = anthropic("claude-sonnet-5-5")  # binds its thinking: the block_binding goes with it
    assert body["thinking"] == {"type": "between_tools", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    assert "output_config" not in body and "temperature" not in body  # the model's own effort
    body = anthropic("claude-haiku-5-5")
    assert body["thinking"] == {"type": "disabled"}  # (no block_binding: it writes no thinking to bind)
    assert anthropic("claude-opus-5-5")["thinking"] == {
        **SUMMARIZED,
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }

    assert "additionalModelRequestFields" not in bedrock("anthropic.claude-sonnet-4-5-20250929-v1:0", None)
    request = bedrock("us.anthropic.claude-sonnet-5-5", None)
    assert request["additionalModelRequestFields"] == {"thinking": {"type": "between_tools"}}
    assert request["inferenceConfig"] == {"maxTokens": 8000}
    request = bedrock("anthropic.claude-opus-5", None)
    assert request["additionalModelRequestFields"] == {"thinking": {"type": "disabled"}}
    assert request["inferenceConfig"]["temperature"] == 0.3
    assert bedrock("global.anthropic.claude-opus-5-5", None)["additionalModelRequestFields"] == {"thinking": SUMMARIZED}


@pytest.mark.parametrize(
    ("model", "binds"),
    [
        ("claude-opus-5-5", True),
        ("claude-sonnet-5-5", True),
        ("claude-haiku-5-5", True),
        ("claude-fable-5-1", True),
        ("global.anthropic.claude-mythos-5-2", True),
        ("claude-fable-5", False),
        ("claude-opus-5", False),
        ("claude-sonnet-5", False),
        ("claude-mythos-preview", False),
        ("claude-haiku-4-5-20251001", False),
        ("gpt-6-sol", False),
    ],
)
def test_which_claude_models_bind_their_thinking_to_the_conversation(model, binds):
    assert binds_thinking(model) is binds


def test_a_request_that_turns_thinking_off_sends_no_thinking_back():
    """Haiku 5.5 binds its thinking to the conversation: a chat that thought (AGENT_REASONING was on)
    and goes on with it off sends its old thinking blocks back to no one."""
    from agent.backends.anthropic import build_body

    messages = _loop_without_thinking({"type": "reasoning", "text": "Hm.", "signature": "sig"})
    body = build_body(system="", messages=messages, tools=[], model="claude-haiku-5-5", max_tokens=8000)
    assert body["thinking"] == {"type": "disabled"}
    assert [block["type"] for block in body["messages"][1]["content"]] == ["tool_use"]
    request = build_request(system="", messages=messages, tools=[], model="us.anthropic.claude-haiku-5-5")
    assert [list(block) for block in request["messages"][1]["content"]] == [["toolUse"]]
    body = build_body(system="", messages=messages, tools=[], model="claude-sonnet-5-5", max_tokens=8000)
    assert body["messages"][1]["content"][0]["type"] == "thinking"  # between_tools: it still thinks
    body = build_body(system="", messages=messages, tools=[], model="claude-sonnet-4-5", max_tokens=8000)
    assert body["messages"][1]["content"][0]["type"] == "thinking"  # asked nothing: as before
