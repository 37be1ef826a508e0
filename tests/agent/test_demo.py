"""The offline demo model: understands a few plain requests, whatever the line breaks."""

from __future__ import annotations

import pytest

from agent.backends.demo import intent


@pytest.mark.parametrize("text,expected", [
    ("list my posts", ("list", "")),
    ("list my\nposts please", ("list", "")),
    ("Draft a post titled Morning light", ("draft", "Morning light")),
    ("draft a post titled “Morning light”", ("draft", "Morning light")),
    ("publish Morning light", ("publish", "Morning light")),
    ("unpublish Morning light", ("unpublish", "Morning light")),
    ("delete Old notes", ("delete", "Old notes")),
    ("yes", ("yes", "")),
    ("write something long", ("long", "")),
    ("what's the weather?", ("help", "")),
])
def test_intents(text, expected):
    assert intent(text) == expected
