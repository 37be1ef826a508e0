from django.contrib import admin

from accounts.models import FailedLogin


@admin.register(FailedLogin)
class FailedLoginAdmin(admin.ModelAdmin):
    list_display = ["created_at", "username", "ip"]
    search_fields = ["username", "ip"]
    readonly_fields = ["created_at", "username", "ip"]

    def has_add_permission(self, request):
        return False
