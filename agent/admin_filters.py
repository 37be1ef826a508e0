"""The transcript admin's audit filters: chats (and messages) by the tools called and how the calls ended.

Each is an `Exists` subquery, so a chat is listed once however many of its parts match, and the list
takes the same queries whatever its length. Tool names come from the transcripts themselves (the
engine knows no domain's tools; a tool no longer registered is still found).
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


class ToolCalledFilter(admin.SimpleListFilter):
    """Chats with a call of the chosen tool."""

    title = "tool called"
    parameter_name = "tool"
    #: From a part to the listed row (a chat), and the part types that name the tool there.
    part_owner = "message__session"
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
        parts = Part.objects.filter(**{self.part_owner: OuterRef("pk")}, type__in=self.part_types, tool_name=name)
        return queryset.filter(Exists(parts))


class MessageToolFilter(ToolCalledFilter):
    """Messages that call the chosen tool or carry a result of it."""

    title = "tool"
    part_owner = "message"
    part_types = ("tool_use", "tool_result")


class ToolOutcomeFilter(admin.SimpleListFilter):
    """Chats with a call that ended so; with a tool chosen (`ToolCalledFilter`), a call of that tool:
    "deleted a post" is a delete that succeeded, not a rejected delete beside a listing that did.

    (So, with both chosen, this filter's counts, "Show counts", are of the chosen tool's calls, and the
    tool filter's counts of chats where the chosen tool's call ended so and the other tool was called.)
    """

    title = "tool outcome"
    parameter_name = "outcome"
    #: From a part, and from an approval, to the listed row (a chat).
    part_owner = "message__session"
    approval_owner = "session"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return OUTCOMES

    def queryset(self, request: Any, queryset: QuerySet) -> QuerySet | None:
        outcome = self.value()
        if outcome not in dict(OUTCOMES):
            return None
        tool = request.GET.get(ToolCalledFilter.parameter_name)
        same_tool = Q(tool_name=tool) if tool else Q()
        rows: QuerySet[Any]
        if outcome in ("ok", "error"):
            # (the engine writes each result with its call's name: `loop._run_tools`, `approvals`)
            rows = Part.objects.filter(
                same_tool, **{self.part_owner: OuterRef("pk")}, type="tool_result", tool_status=outcome
            )
        else:
            rows = Approval.objects.filter(same_tool, **{self.approval_owner: OuterRef("pk")}, status=outcome)
        return queryset.filter(Exists(rows))


class MessageOutcomeFilter(ToolOutcomeFilter):
    """Results that ended so, and calls a person rejected or left unanswered (the message asking)."""

    part_owner = "message"
    approval_owner = "message"
