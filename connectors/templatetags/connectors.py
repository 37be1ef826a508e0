from __future__ import annotations

from django import template

from connectors import clients
from connectors.oauth import resource_url

register = template.Library()


@register.inclusion_tag("connectors/_clients.html", takes_context=True)
def connected_clients(context, blog, seat):
    """The Clients screen's rows for connected (OAuth) clients of the signed-in person."""
    request = context["request"]
    return {
        "blog": blog,
        "rows": clients.rows(request.user, blog, seat),
        "csrf_token": context.get("csrf_token"),
        "mcp_url": resource_url(request),
    }


@register.inclusion_tag("connectors/_connected_everywhere.html", takes_context=True)
def connected_everywhere(context):
    """The signed-in person's connected clients on every blog, each with its blog's Clients screen,
    and one button that disconnects them all."""
    return {
        "consents": clients.connected_everywhere(context["request"].user),
        "csrf_token": context.get("csrf_token"),
    }
