"""The audit of connected clients: one row per MCP tool call."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class McpCall(models.Model):
    """One `tools/call` by a connected client: who, which client, which blog, what and how it went."""

    OK, ERROR, DENIED, INVALID = "ok", "error", "denied", "invalid"
    STATUSES = [(OK, "ok"), (ERROR, "error"), (DENIED, "denied"), (INVALID, "invalid input")]

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    blog = models.ForeignKey("blog.Blog", null=True, on_delete=models.SET_NULL, related_name="+")
    client_id = models.CharField(max_length=100)
    client_name = models.CharField(max_length=200, blank=True)
    tool = models.CharField(max_length=64)
    input = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES)
    message = models.CharField(max_length=300, blank=True)  # the refusal the client was given, if any
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name, verbose_name_plural = "MCP call", "MCP calls"
        ordering = ["-created_at", "-pk"]
        indexes = [
            # the rate limit (per client and user) counts the last minute's rows
            models.Index(fields=["client_id", "user", "created_at"], name="connectors_call_rate_idx"),
            # the Clients screen's "recent actions"
            models.Index(fields=["blog", "user", "client_id", "-created_at"], name="connectors_call_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} by {self.client_name or self.client_id} ({self.status})"
