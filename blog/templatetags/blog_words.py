"""Template words for what people see: grants in plain words, not scope names."""

from django import template

from blog.access import plain_scopes

register = template.Library()


@register.filter
def plain(scopes) -> str:
    """`{{ grant_scopes|plain }}` → "read, draft, publish, delete"."""
    return plain_scopes(scopes)
