"""What a stream's client lacks once the bus's copy of its turn stopped short (`agent.backfill`): pure units."""

from __future__ import annotations

from typing import Any

from agent.backfill import Sent


def had(*events: tuple[str, Any]) -> Sent:
    return Sent.of(events)


def token(text: str) -> tuple[str, Any]:
    return "token", {"text": text}


def reasoning(text: str) -> tuple[str, Any]:
    return "reasoning", {"text": text}


def tool_use(id: str) -> tuple[str, Any]:
    return "tool_use", {"id": id, "name": "write_note", "input": {"title": "Milk"}}


def tool_result(id: str) -> tuple[str, Any]:
    return "tool_result", {"id": id, "name": "write_note", "status": "ok", "result": {"id": 1}}


EFFECTS = ("effects", [{"type": "note.written", "id": 1}])


def test_the_rest_of_the_part_begun_then_every_later_part_whole():
    sent = had(reasoning("Hm"), reasoning("m."), token("Let "), ("heartbeat", None), token("me "))
    first = [reasoning("Hmm."), token("Let me write it."), tool_use("w1")]
    assert list(sent.missing(first)) == [token("write it."), tool_use("w1")]
    assert list(sent.missing([tool_result("w1"), EFFECTS])) == [tool_result("w1"), EFFECTS]
    assert list(sent.missing([token("Done.")])) == [token("Done.")]


def test_nothing_twice_and_nothing_left_out():
    turn = [[token("Let me."), tool_use("w1")], [tool_result("w1"), EFFECTS], [token("Done.")]]
    everything = [event for message in turn for event in message]
    all_of_it = had(token("Let "), token("me."), tool_use("w1"), tool_result("w1"), EFFECTS, token("Done."))
    assert [list(all_of_it.missing(message)) for message in turn] == [[], [], []]
    assert [event for message in turn for event in had().missing(message)] == everything


def test_a_run_of_tokens_may_be_several_parts():
    """An empty reasoning block between two text parts is not streamed: the tokens read as one run."""
    sent = had(token("ab"), token("cd"))
    assert list(sent.missing([token("abc"), token("def")])) == [token("ef")]


def test_a_part_that_does_not_continue_what_the_client_had_is_left_out():
    sent = had(token("Let "), token("us "))  # (not what the transcript says)
    assert list(sent.missing([token("Let me write it."), tool_use("w1")])) == [tool_use("w1")]


def test_calls_a_stopped_model_call_dropped_are_stepped_over():
    """A stopped (or failed) model call keeps its text, joined, and drops its calls."""
    sent = had(token("a"), tool_use("x"), token("b"))
    assert list(sent.missing([token("ab")])) == []


def test_a_tool_event_the_client_never_had_is_sent_where_the_transcript_has_it():
    """A result trimmed off the bus (a heartbeat in its place): it stands alone, so it is sent."""
    sent = had(tool_use("w1"), ("heartbeat", None), EFFECTS, token("Done"))
    assert list(sent.missing([tool_use("w1")])) == []
    assert list(sent.missing([tool_result("w1"), EFFECTS])) == [tool_result("w1")]
    assert list(sent.missing([token("Done.")])) == [token(".")]
