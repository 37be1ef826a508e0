from django.contrib import admin

from connectors.models import McpCall


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
