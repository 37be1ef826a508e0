"""Transcripts for auditors: read-only, with usage, cost, backend, model, stop reason and tools offered."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Subquery
from django.forms.models import BaseInlineFormSet
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html, format_html_join
from django.utils.text import capfirst

from agent.admin_filters import MessageOutcomeFilter, MessageToolFilter, ToolCalledFilter, ToolOutcomeFilter
from agent.display import chat_label, shortened, with_first_words
from agent.media_views import attachment_url
from agent.models import Approval, ContextSummary, Message, Part, Session, Spend, SpendDay, Turn
from agent.transcript import is_redacted


class ReadOnlyMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


class PersonSearch:
    """Searches people by the user model's own login field (`USERNAME_FIELD`; `__username` in
    `search_fields` stands for it), so a project whose users sign in by email searches too."""

    def get_search_fields(self, request):
        login = get_user_model().USERNAME_FIELD
        return [
            f"{field.removesuffix('__username')}__{login}" if field.endswith("__username") else field
            for field in super().get_search_fields(request)
        ]


class DeletedWithItsOwner:
    """A row that is part of a record (a chat's transcript, the spending ledger, a post's history):
    deleted with what it belongs to (its chat, its person's account, its blog), never on its own,
    which would leave a call without its result, a budget that forgot spending or a gap in history.

    So it has no delete page or action of its own, while its delete permission stays as it was:
    deleting what it belongs to asks that permission of each row it takes with it."""

    def get_actions(self, request, action_location=None):
        # (`action_location`: Django 6.1 passes where the actions show; 5.2 does not)
        location = {} if action_location is None else {"action_location": action_location}
        actions = super().get_actions(request, **location)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        raise PermissionDenied

    def change_view(self, request, object_id, form_url="", extra_context=None):
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), "show_delete": False})


class PagedFormSet(BaseInlineFormSet):
    """An inline's rows of one page (`SessionAdmin.get_formset_kwargs` chooses them), with `pages`: what
    the inline says of where it is and its links to the other pages."""

    def __init__(self, *args, pages=None, **kwargs):
        self.pages = pages
        super().__init__(*args, **kwargs)


class PagedInline(admin.TabularInline):
    """A session's rows (messages, turns, approvals) a page at a time, the latest page first: a chat of
    thousands of messages is a page an auditor can open, and every row stays a link away."""

    formset = PagedFormSet
    template = "admin/agent/paged_tabular.html"
    per_page = 100


#: The transcript's stylesheet: its tables fit the page (fixed columns, long values wrap).
TRANSCRIPT_MEDIA = forms.Media(css={"all": ["agent/admin.css"]})


#: How much of a chat's title or first message names it in the list of chats and on its page.
BEGINS_CHARS = 48


class ModelCall:
    """A message's model call in two columns, for the session page's messages and the list of messages:
    what it was (backend, model, stop reason, thinking asked) and what it used (tokens, cost)."""

    @admin.display(description="backend / model · stop reason")
    def call(self, message: Message):
        if message.role != Message.ASSISTANT:
            return "-"
        return format_html(
            "{} / {}<br>{}{}",
            message.backend or "?",
            message.model_id or "?",
            message.stop_reason or "-",
            format_html("<br>thinking: {}", message.reasoning) if message.reasoning else "",
        )

    @admin.display(description="tokens in/out/cache · cost USD")
    def usage(self, message: Message):
        return format_html(
            "{} / {} / {}+{}<br>{}",
            message.input_tokens,
            message.output_tokens,
            message.cache_read_tokens,
            message.cache_write_tokens,
            message.cost_usd,
        )


class ChatColumn:
    """The chat a row belongs to, named shortly (its title or first words, else the start of its id), for
    the lists of messages and turns: a chat's full id took a third of a 1280 px window."""

    @admin.display(description="chat", ordering="session")
    def chat(self, obj: Message | Turn) -> str:
        return chat_label(obj.session, BEGINS_CHARS) or f"Chat {str(obj.session_id)[:8]}"


class MessageInline(ModelCall, ReadOnlyMixin, PagedInline):
    """A session's messages, one row each, in as many columns as fit a 1280 px window: what each model
    call was and what it used take one each (`ModelCall`)."""

    model = Message
    extra = 0
    can_delete = False
    classes = ["agent-transcript", "agent-messages"]
    fields = ("position", "role", "content", "call", "usage", "offered", "created")
    readonly_fields = fields
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("parts")

    @admin.display(description="content")
    def content(self, message: Message):
        return format_html_join(
            "", "<div class='agent-part'><b>{}</b> {}</div>", ((p.type, _part_text(p)) for p in message.parts.all())
        )

    @admin.display(description="tools offered")
    def offered(self, message: Message):
        tools = message.tools_offered
        if not tools:
            return "-"
        names = format_html_join("", "<li>{}</li>", ((name,) for name in tools))
        return format_html(
            "<details><summary>{} tool{}</summary><ul>{}</ul></details>", len(tools), pluralize(tools), names
        )

    @admin.display(description="created at")
    def created(self, message: Message):
        return format_html(
            '<time datetime="{}">{}</time>',
            message.created_at.isoformat(),
            date_format(timezone.localtime(message.created_at), "M j, Y H:i:s"),
        )


#: How much of a part the session page shows; its message's page ("View") shows it whole.
SHOWN = 2000


def _part_text(part: Part) -> str:
    """A part on one line of the session page, as JSON where it is data (as on its message's page)."""
    if part.type == "tool_use":
        return f"{part.tool_name}({_cut(_json(part.tool_input, indent=None))}) [{part.tool_use_id}]"
    if part.type == "tool_result":
        return f"{part.tool_status}: {_cut(_json(part.tool_result, indent=None))} [{part.tool_use_id}]"
    if part.type in ("image", "document"):
        return format_html("{} {}", part.media_type, _opened(part))
    if is_redacted(part):
        return "(redacted thinking)"
    return _cut(part.text)


def _opened(part: Part) -> str:
    """An attachment's name, linked to where its chat's person opens it (staff with the view
    permission on sessions may too)."""
    return format_html('<a href="{}">{}</a>', attachment_url(part), part.text or part.type)


def _cut(text: str) -> str:
    return shortened(text, SHOWN + 1)  # (the first SHOWN characters, then "…")


def provider_state(part: Part) -> str:
    """Which backend and model the part's provider state goes back to, and what it holds (its keys
    only: the values are the provider's, opaque, and redacted reasoning is never shown)."""
    if part.provider_data is None and not part.signature:
        return ""
    keys = sorted(part.provider_data or {}) + (["signature"] if part.signature else [])
    return f"{part.provider_backend or '?'} / {part.provider_model or '?'}: {', '.join(keys)}"


class AskedBy:
    """What asked for each turn (`asked_by`): a person's message; or, a turn without a message of its own
    carrying on after the one before it, calls people decided (that turn paused) or Try again (it failed;
    `turns.resume`, `turns.retry`). Read with the rows, two subqueries each, on the index of a session's
    turns by time."""

    def get_queryset(self, request):
        before = Turn.objects.filter(session=OuterRef("session"), created_at__lt=OuterRef("created_at"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                said=Exists(Message.objects.filter(turn=OuterRef("pk"), role=Message.USER)),
                after=Subquery(before.order_by("-created_at").values("status")[:1]),
            )
        )

    @admin.display(description="asked by")
    def asked_by(self, turn: Turn) -> str:
        if getattr(turn, "said", False):
            return "a message"
        return {Turn.PAUSED: "calls decided", Turn.ERROR: "Try again"}.get(getattr(turn, "after", ""), "-")


class TurnInline(AskedBy, ReadOnlyMixin, PagedInline):
    """A session's turns, oldest first: what asked for each and how each ended (an error's code and
    message are here, not on a message)."""

    model = Turn
    extra = 0
    can_delete = False
    classes = ["agent-transcript", "agent-turns"]
    fields = ("created_at", "asked_by", "status", "terminal_event", "ending", "finished_at")
    readonly_fields = fields
    show_change_link = True

    def get_queryset(self, request):
        return super().get_queryset(request).order_by("created_at")

    @admin.display(description="terminal payload")
    def ending(self, turn: Turn) -> str:
        return "-" if turn.terminal_payload is None else _cut(_json(turn.terminal_payload, indent=None))


class ApprovalInline(ReadOnlyMixin, PagedInline):
    """The calls the session's turns put to its person, and who decided each, and when."""

    model = Approval
    extra = 0
    can_delete = False
    classes = ["agent-transcript", "agent-approvals"]
    fields = ("created_at", "tool_name", "tool_use_id", "description", "status", "decided_by", "decided_at")
    readonly_fields = fields
    show_change_link = True

    def get_queryset(self, request):
        # (who decided is nullable: the admin would read it once per row)
        return super().get_queryset(request).select_related("decided_by").order_by("created_at")


@admin.register(Session)
class SessionAdmin(PersonSearch, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "begins", "user", "purpose", "status", "created_at", "updated_at"]
    ordering = ["-updated_at"]  # the latest activity first (ids are UUIDs: no order of their own)
    list_filter = ["purpose", "status", ToolCalledFilter, ToolOutcomeFilter, "created_at"]
    search_fields = ["id", "user__username", "messages__parts__text"]
    readonly_fields = [
        "id",
        "user",
        "purpose",
        "status",
        "title",
        "begins",
        "system_prompt",
        "created_at",
        "updated_at",
        "turn",
        "lease_until",
        "awaiting_people",
    ]
    inlines = [MessageInline, TurnInline, ApprovalInline]

    @property
    def media(self):
        return super().media + TRANSCRIPT_MEDIA

    def get_queryset(self, request):
        # (what the person first said, read with the chats: an auditor knows them apart by more than an id)
        return with_first_words(super().get_queryset(request), BEGINS_CHARS)

    @admin.display(description="Begins")
    def begins(self, obj: Session) -> str:
        """The chat's title, else its person's first words, as their own list of chats names it."""
        return chat_label(obj, BEGINS_CHARS)

    def get_search_results(self, request, queryset, search_term):
        """The chats a search finds, each once: when it reaches their messages' parts (many a chat), as the
        chats whose ids it finds, not Django's `DISTINCT` over the list's columns, which made the count
        compute every found chat's first words and the page sort every found chat."""
        found, duplicates = super().get_search_results(request, self.model._default_manager.all(), search_term)
        if not duplicates:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(pk__in=found.values("pk")), False

    def get_formset_kwargs(self, request, obj, inline, prefix):
        """A paged inline's rows of the page asked for (`?<prefix>-page=N`), else of its last page."""
        kwargs = super().get_formset_kwargs(request, obj, inline, prefix)
        if not isinstance(inline, PagedInline) or obj is None:
            return kwargs
        rows = kwargs["queryset"]
        keys = Paginator(rows.filter(session=obj).values_list("pk", flat=True), inline.per_page)
        page = keys.get_page(request.GET.get(f"{prefix}-page") or keys.num_pages)
        kwargs["queryset"] = rows.filter(pk__in=list(page.object_list))
        kwargs["pages"] = _pages(request, page, f"{prefix}-page", inline.verbose_name_plural)
        return kwargs

    def has_delete_permission(self, request, obj=None):
        """A superuser deletes a chat whole, but not while a turn runs in it (the turn would go on
        writing into a chat that is gone); a lease run out is a dead worker's."""
        if obj is not None and obj.turn_id is not None and obj.lease_until and obj.lease_until > timezone.now():
            return False
        return super().has_delete_permission(request, obj)


def _pages(request, page, name: str, rows: str) -> dict:
    """Where a paged inline is ("Messages 3,901–4,000 of 4,000") and its links to the first, earlier,
    later and last pages (each keeping the other inlines' pages)."""

    def link(number: int) -> str:
        query = request.GET.copy()
        query[name] = str(number)
        return f"?{query.urlencode()}"

    paginator = page.paginator
    links = []
    if page.has_previous():
        links += [("First", link(1)), ("Earlier", link(page.previous_page_number()))]
    if page.has_next():
        links += [("Later", link(page.next_page_number())), ("Last", link(paginator.num_pages))]
    shown = f"{page.start_index():,}–{page.end_index():,}" if paginator.count else "0"
    return {
        "summary": f"{capfirst(rows)} {shown} of {paginator.count:,} (page {page.number} of {paginator.num_pages})",
        "links": links if page.has_other_pages() else [],
    }


class PartInline(ReadOnlyMixin, admin.TabularInline):
    """A message's parts, whole: each part's text, or its call (tool and input) or result (tool, status
    and result) as indented JSON, or its file (type, name, storage key), in one column that wraps."""

    model = Part
    extra = 0
    can_delete = False
    classes = ["agent-transcript", "agent-parts"]
    fields = ("position", "type", "body", "tool_use_id", "effects", "state")
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("message")  # (an attachment's link names its session)

    @admin.display(description="text, call or result")
    def body(self, part: Part):
        match part.type:
            case "tool_use":
                head, text = part.tool_name, _json(part.tool_input)
            case "tool_result":
                head, text = f"{part.tool_name or '?'}: {part.tool_status}", _json(part.tool_result)
            case "image" | "document":
                head, text = part.media_type, format_html("{} ({})", _opened(part), part.media_ref)
            case _:
                head, text = "", "(redacted thinking)" if is_redacted(part) else part.text
        return format_html("{}<div class='agent-part'>{}</div>", format_html("<b>{}</b>", head) if head else "", text)

    @admin.display(description="provider state")
    def state(self, part: Part) -> str:
        return provider_state(part)


def _json(value, indent: int | None = 2) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=False)


@admin.register(Message)
class MessageAdmin(ModelCall, ChatColumn, PersonSearch, DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    # Each message named by its role and place (`assistant #3`) beside its chat, its call and its usage in
    # the session page's two columns, so a row's time stays in sight in a 1280 px window beside the
    # filters (which keep the role, backend, model and stop reason).
    list_display = ["__str__", "chat", "call", "usage", "created_at"]
    list_select_related = ["session"]
    ordering = ["-created_at"]
    list_filter = ["role", MessageToolFilter, MessageOutcomeFilter, "backend", "model_id", "stop_reason"]
    search_fields = ["session__id", "parts__text", "session__user__username"]
    readonly_fields = [f.name for f in Message._meta.fields]
    inlines = [PartInline]

    @property
    def media(self):
        return super().media + TRANSCRIPT_MEDIA


@admin.register(Turn)
class TurnAdmin(AskedBy, ChatColumn, PersonSearch, DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    # Each turn named with its status (`Turn 5821000b (error)`) and its chat shortly (`ChatColumn`), so a
    # row's times stay in sight in a 1280 px window beside the filters (which keep the status and the
    # terminal event).
    list_display = ["__str__", "chat", "asked_by", "created_at", "finished_at"]
    list_select_related = ["session"]
    ordering = ["-created_at"]
    list_filter = ["status", "terminal_event"]
    search_fields = ["session__id", "session__user__username"]
    readonly_fields = [f.name for f in Turn._meta.fields] + ["asked_by"]


@admin.register(SpendDay)
class SpendDayAdmin(DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["day", "cost_usd"]
    ordering = ["-day"]


@admin.register(Spend)
class SpendAdmin(PersonSearch, DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["user", "created_at", "model_id", "tokens", "cost_usd", "settled"]
    list_filter = ["model_id", "settled"]
    search_fields = ["user__username"]
    readonly_fields = [f.name for f in Spend._meta.fields]


@admin.register(Approval)
class ApprovalAdmin(PersonSearch, DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "created_at",
        "session",
        "tool_name",
        "description",
        "status",
        "decided_by",
        "decided_at",
        "expires_at",
        "resolved",
    ]
    list_filter = ["status", "tool_name", "resolved"]
    # (the admin joins only the non-null relations it shows by itself: who decided, nullable, would be
    # one query per row)
    list_select_related = ["session", "decided_by"]
    search_fields = ["session__id", "decided_by__username", "description"]
    readonly_fields = [f.name for f in Approval._meta.fields]


@admin.register(ContextSummary)
class ContextSummaryAdmin(DeletedWithItsOwner, ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["created_at", "session", "up_to_position", "model_id", "input_tokens", "output_tokens", "cost_usd"]
    search_fields = ["session__id", "text"]
    readonly_fields = [f.name for f in ContextSummary._meta.fields]
