from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from connectors.clients import connected_counts, disconnect_everywhere
from connectors.models import McpCall

DISCONNECT = "Disconnect all connected clients"
CONFIRMATION = "connectors/admin_disconnect_clients.html"


@admin.register(McpCall)
class McpCallAdmin(admin.ModelAdmin):
    """Read-only: the audit is written by the MCP endpoint alone."""

    list_display = ["created_at", "user", "client_name", "blog", "tool", "status"]
    list_filter = ["status", "tool"]
    search_fields = ["client_id", "client_name", "user__username", "blog__slug"]
    date_hierarchy = "created_at"
    list_select_related = ["user", "blog"]
    readonly_fields = [f.name for f in McpCall._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def clients(count: int) -> str:
    return f"{count} connected client" if count == 1 else f"{count} connected clients"


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(UserAdmin):
    """Django's Users admin, and the person's connected clients (MCP/OAuth): how many on their page, and
    an action that ends them all as the person's own Disconnect all does: after a confirmation, only
    with the change permission on users. A new password set here does not end them (their tokens are
    not the password), so the password change offers it."""

    actions = ["disconnect_clients"]
    fieldsets = [*(UserAdmin.fieldsets or []), ("Connected clients", {"fields": ["connected_clients"]})]
    readonly_fields = ["connected_clients", "connected_clients_count"]

    def get_urls(self):
        one = path(
            "<int:object_id>/disconnect/",  # (a user's key is a whole number: nothing to unquote)
            self.admin_site.admin_view(self.disconnect_one),
            name=f"{self.opts.app_label}_{self.opts.model_name}_disconnect",
        )
        return [one, *super().get_urls()]

    def get_fieldsets(self, request, obj=None):
        """Whoever may not change users sees the count alone, without the link to end them."""
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None and not self.has_change_permission(request, obj):
            fieldsets = [
                (name, {**options, "fields": ["connected_clients_count"]})
                if "connected_clients" in options.get("fields", ())
                else (name, options)
                for name, options in fieldsets
            ]
        return fieldsets

    def disconnect_url(self, person) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_disconnect", args=[person.pk])

    @admin.display(description="connected clients")
    def connected_clients_count(self, person) -> str:
        count = connected_counts([person]).get(person.pk, 0)
        return clients(count) if count else "No connected clients"

    @admin.display(description="connected clients")
    def connected_clients(self, person) -> str:
        count = connected_counts([person]).get(person.pk, 0)
        if not count:
            return "No connected clients"
        return format_html('{} <a href="{}">{}</a>', clients(count), self.disconnect_url(person), DISCONNECT)

    @admin.action(description=DISCONNECT, permissions=["change"])
    def disconnect_clients(self, request, queryset):
        """After its confirmation page: each selected person's clients revoked, on every blog, and logged
        on the person's history."""
        people = list(queryset)
        if not request.POST.get("post"):
            return self.confirmation(request, people, form_action=None)
        total = 0
        for person in people:
            count = disconnect_everywhere(person)
            self.log_change(request, person, f"Disconnected all connected clients ({count}).")
            total += count
        who = "1 person" if len(people) == 1 else f"{len(people)} people"
        self.message_user(request, f"Disconnected {clients(total)} of {who}.", messages.SUCCESS)
        return None

    def confirmation(self, request, people, *, form_action: str | None) -> TemplateResponse:
        counts = connected_counts(people)
        context = {
            **self.admin_site.each_context(request),
            "title": f"{DISCONNECT}?",
            "opts": self.opts,
            "people": [(person, clients(counts.get(person.pk, 0))) for person in people],
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "form_action": form_action,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, CONFIRMATION, context)

    def disconnect_one(self, request, object_id):
        """The action's confirmation page for one person (linked from their page and their password
        change); its form is the action's, sent to the list, which checks and does it."""
        person = self.get_object(request, str(object_id))
        if not self.has_change_permission(request, person):
            raise PermissionDenied
        if person is None:
            raise Http404("No such user.")
        if request.method != "GET":
            return HttpResponseNotAllowed(["GET"])
        changelist = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        return self.confirmation(request, [person], form_action=changelist)

    def user_change_password(self, request, id, form_url=""):
        """Django's, and once a password is set: the person's clients still work, with a link to end them."""
        response = super().user_change_password(request, id, form_url)
        if request.method != "POST" or response.status_code != 302:
            return response
        person = self.get_object(request, id)
        changed = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[person.pk])
        count = connected_counts([person]).get(person.pk, 0) if response["Location"] == changed else 0
        if count:
            still = "it still works with its tokens" if count == 1 else "they still work with their tokens"
            self.message_user(
                request,
                format_html(
                    'The user “{}” still has {}: {}, as a new password does not end {}. <a href="{}">{}</a>',
                    person.get_username(),
                    clients(count),
                    still,
                    "it" if count == 1 else "them",
                    self.disconnect_url(person),
                    DISCONNECT,
                ),
                messages.WARNING,
            )
        return response
