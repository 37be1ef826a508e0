"""Every JSON endpoint answers a body it cannot read with 400 and the API's error shape, never a 500.

`[` a thousand times is not JSON, but Python's parser recurses once per bracket and raises
`RecursionError` before it finds that out; a deeply nested body that *is* JSON does the same.
"""

from __future__ import annotations

import uuid

import pytest

from agent.models import Approval, Message, Session

pytestmark = pytest.mark.django_db

DEEP = [b"[" * 1000, b"{" * 1000, b"[" * 100_000 + b"]" * 100_000, b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}"]


# A number of more than 4,300 digits is JSON, but Python refuses to make an int of it (a ValueError
# that is not a JSONDecodeError: the limit guards against quadratic conversion time).
HUGE = [b'{"blog": ' + b"9" * 5000 + b"}", b'{"text": "hi", "n": -' + b"1" * 4301 + b"}", b"1" * 10_000]


@pytest.mark.parametrize(
    "raw",
    DEEP + HUGE,
    ids=["open-brackets", "open-braces", "deep-list", "deep-text", "huge-value", "huge-extra-key", "huge-bare"],
)
def test_a_body_python_cannot_read_is_a_bad_request_on_every_json_endpoint(api, chat, raw):
    """Too deep for the parser's recursion, or a number too long to convert: a calm 400, nothing stored."""
    response = api.post("/api/agent/sessions", raw=raw)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "bad_request")
    assert Session.objects.count() == 1  # only the fixture's chat

    response = api.post(f"/api/agent/sessions/{chat.pk}/messages", raw=raw)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "bad_message")
    assert not Message.objects.exists()

    response = api.post(f"/api/agent/sessions/{chat.pk}/approvals/{uuid.uuid4()}", raw=raw)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "bad_request")
    assert not Approval.objects.exists()


def test_nul_characters_in_a_bodys_strings_and_keys_are_read_as_replacement_characters(rf):
    """PostgreSQL's text columns, and its query parameters, cannot hold NUL: every string of an API
    body, keys too, reads it as U+FFFD, whatever the domain's policy then does with it."""
    from agent.api import json_body

    request = rf.post(
        "/", data=b'{"a\\u0000": ["b\\u0000", {"c": "\\u0000"}], "n": 1}', content_type="application/json"
    )
    assert json_body(request) == {"a\ufffd": ["b\ufffd", {"c": "\ufffd"}], "n": 1}
    for encoding in ("utf-16", "utf-16-le", "utf-32-be"):  # (the parser reads these too)
        body = '{"blog": "notes\\u0000"}'.encode(encoding)
        assert json_body(rf.post("/", data=body, content_type="application/json")) == {"blog": "notes\ufffd"}


def test_lone_surrogates_in_a_bodys_strings_and_keys_are_read_as_replacement_characters(rf):
    """JSON may spell half of a UTF-16 pair alone (`\\ud800`), which no UTF-8 text holds: neither
    database can look it up or store it (Python refuses to encode it). Every string and key of an API
    body reads one as U+FFFD, as `/mcp` does; a pair spelled as two escapes stays one character."""
    from agent.api import json_body

    raw = b'{"blog\\uD800": ["a\\udc00", {"c": "\\ud83d\\ude00"}], "n": "\\ud800\\u0000"}'
    assert json_body(rf.post("/", data=raw, content_type="application/json")) == {
        "blog\ufffd": ["a\ufffd", {"c": "\U0001f600"}],
        "n": "\ufffd\ufffd",
    }
    for body in ('{"blog": "notes\\ud800"}'.encode("utf-16"), b'{"blog": "notes\xed\xa0\x80"}'):
        # (a body in UTF-16; a half encoded as UTF-8 bytes, which the parser decodes with "surrogatepass")
        assert json_body(rf.post("/", data=body, content_type="application/json")) == {"blog": "notes\ufffd"}
