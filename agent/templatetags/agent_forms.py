"""The chat's form as a page draws it: the words of a message refused when it was sent as a page, back in its box."""

from __future__ import annotations

from typing import Any

from django import template

from agent import typed

register = template.Library()


@register.simple_tag(takes_context=True)
def typed_words(context: Any, form_url: str) -> str:
    """`{% typed_words send_url as words %}`: the words kept for the form posting to `send_url`
    (`agent.typed`), taken, for its `<textarea>`; "" when none, or with no request in the context. Put
    a line break after `<textarea>` and before them: a browser drops the first, and words beginning with
    one keep it. Escaped as any value is where they are drawn."""
    request = context.get("request")
    return "" if request is None else typed.take(request, form_url)
