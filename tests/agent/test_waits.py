"""A wait in words (`agent_waits.wait`), as the chat says it and static/js/chat/waits.js counts it down."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from agent.templatetags.agent_waits import wait


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (1, "1 s"),
        (60, "60 s"),
        (90, "90 s"),
        (91, "2 min"),  # (rounded up: a wait is never said shorter than it is)
        (1800, "30 min"),
        (3599, "60 min"),
        (3600, "1 h"),
        (5400, "2 h"),
        (47 * 3600, "47 h"),
        (48 * 3600, "2 days"),
        (30 * 86400, "30 days"),  # a month's limit, not "2592000 s"
    ],
)
def test_a_wait_is_said_in_the_unit_that_reads(seconds, said):
    assert wait(seconds) == said


def test_the_retry_fragment_says_the_wait_in_words_and_keeps_the_seconds_for_the_countdown():
    html = Template('{% include "agent/_retry.html" with seconds=1800 %}').render(Context())
    assert 'data-retry-seconds="1800"' in html and "<span>Try again in 30 min.</span>" in html
    assert 'data-retry-done="That wait is over: you can send a message now."' in html


def test_a_turns_error_says_its_wait_as_a_refused_message_does():
    """One wait, said one way: after a turn's error ("You've sent a lot in the last minute.") as after
    the rate notice, a sentence of its own, and its end too. Was: "(try again in 90 s)" after the
    one, "Try again in 90 s." after the other."""
    for template in ("agent/_turn_final.html", "agent/_notice.html"):
        error = {"message": "You've sent a lot in the last minute.", "retry_after_seconds": 90}
        context = {"error": error, "message": error["message"], "retry_after_seconds": 90, "turn_id": 1}
        html = Template(f'{{% include "{template}" %}}').render(Context(context))
        assert "minute. <span" in html and "<span>Try again in 90 s.</span></span></p>" in html, template
        assert 'data-retry-done="That wait is over: you can send a message now."' in html, template


def test_a_wait_with_try_again_below_ends_saying_so():
    """A spent budget's answer shows Try again when its wait ends: the sentence that ends the wait names it."""
    error = {"message": "You've sent a lot in the last minute.", "retry_after_seconds": 90, "try_again": True}
    html = Template('{% include "agent/_turn_final.html" %}').render(
        Context({"error": error, "turn_id": 1, "session_id": 1})
    )
    assert 'data-retry-done="That wait is over: you can try again now."' in html and 'id="try-again" hidden' in html
