"""The transcript admin's audit filters: chats (and messages) by the tools called and how the calls ended.

Each is a subquery, so a row is listed once however many of its parts match, and the list takes the
same queries whatever its length. Tool names come from the transcripts themselves (the engine knows no
domain's tools; a tool no longer registered is still found).

The chats' filters find the matching parts first, through the partial indexes on calls by name and
results by status and name (`Part.Meta.indexes`), then their chats: a chat's messages are not walked one
chat at a time (SQLite's plan for a correlated `EXISTS`). A message's parts are found through it, by the
unique (message, position) index.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Exists, OuterRef, Q, QuerySet

from agent.models import Approval, Part

#: How a call ended, as the transcript records it: its result's status, or the person's decision on an
#: approval (a rejected or lapsed call is also answered with an error result, which says so in words).
OUTCOMES = [
    ("ok", "succeeded"),
    ("error", "failed or refused (an error result)"),
    (Approval.REJECTED, "rejected by a person"),
    (Approval.EXPIRED, "not approved in time"),
]


def chats_owning(parts: QuerySet) -> Q:
    """The chats with one of `parts` (the parts read once, not per chat)."""
    return Q(pk__in=parts.values("message__session"))


def messages_owning(parts: QuerySet) -> Q:
    """The messages with one of `parts` (each message's own, by its index)."""
    return Q(Exists(parts.filter(message=OuterRef("pk"))))


class ToolCalledFilter(admin.SimpleListFilter):
    """Chats with a call of the chosen tool."""

    title = "tool called"
    parameter_name = "tool"
    #: The listed rows (chats) with one of some parts; and the part types that name the tool there.
    owning = staticmethod(chats_owning)
    part_types: tuple[str, ...] = ("tool_use",)

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        names = (
            Part.objects.filter(type="tool_use")
            .exclude(tool_name="")
            .order_by("tool_name")
            .values_list("tool_name", flat=True)
            .distinct()
        )
        return [(name, name) for name in names]

    def queryset(self, request: Any, queryset: QuerySet) -> QuerySet | None:
        name = self.value()
        if name is None:
            return None
        # (`type=` for one type, which the partial index's condition is: an `IN` of one is not, to SQLite)
        types = Q(type=self.part_types[0]) if len(self.part_types) == 1 else Q(type__in=self.part_types)
        return queryset.filter(self.owning(Part.objects.filter(types, tool_name=name)))


class MessageToolFilter(ToolCalledFilter):
    """Messages that call the chosen tool or carry a result of it."""

    title = "tool"
    owning = staticmethod(messages_owning)
    part_types = ("tool_use", "tool_result")


class ToolOutcomeFilter(admin.SimpleListFilter):
    """Chats with a call that ended so; with a tool chosen (`ToolCalledFilter`), a call of that tool:
    "deleted a post" is a delete that succeeded, not a rejected delete beside a listing that did.

    (So, with both chosen, this filter's counts, "Show counts", are of the chosen tool's calls, and the
    tool filter's counts of chats where the chosen tool's call ended so and the other tool was called.)
    """

    title = "tool outcome"
    parameter_name = "outcome"
    #: The listed rows (chats) with one of some parts; and the way from an approval to the listed row.
    owning = staticmethod(chats_owning)
    approval_owner = "session"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return OUTCOMES

    def queryset(self, request: Any, queryset: QuerySet) -> QuerySet | None:
        outcome = self.value()
        if outcome not in dict(OUTCOMES):
            return None
        tool = request.GET.get(ToolCalledFilter.parameter_name)
        same_tool = Q(tool_name=tool) if tool else Q()
        if outcome in ("ok", "error"):
            # (the engine writes each result with its call's name: `loop._run_tools`, `approvals`)
            return queryset.filter(self.owning(Part.objects.filter(same_tool, type="tool_result", tool_status=outcome)))
        rows = Approval.objects.filter(same_tool, **{self.approval_owner: OuterRef("pk")}, status=outcome)
        return queryset.filter(Exists(rows))


class MessageOutcomeFilter(ToolOutcomeFilter):
    """Results that ended so, and calls a person rejected or left unanswered (the message asking)."""

    owning = staticmethod(messages_owning)
    approval_owner = "message"
