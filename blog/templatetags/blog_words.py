"""Template words for what people see: grants in plain words, not scope names; a description shortened."""

from django import template

from agent.display import shortened as shortened_text
from blog.access import plain_scopes
from blog.blogs import DESCRIPTION_SHOWN

register = template.Library()


@register.filter
def plain(scopes) -> str:
    """`{{ grant_scopes|plain }}` → "read, draft, publish, delete"."""
    return plain_scopes(scopes)


@register.filter
def shortened(text: str, limit: int = DESCRIPTION_SHOWN) -> str:
    """`{{ blog.description|shortened }}` → its first DESCRIPTION_SHOWN characters, ending in "…" when cut
    (never inside what a reader sees as one character: `agent.display.shortened`)."""
    return shortened_text(text, limit)
