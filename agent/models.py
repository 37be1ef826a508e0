"""The durable neutral transcript: Session → Message → Part, plus turns and the spend ledger."""

from __future__ import annotations

import uuid
from typing import Final

from django.conf import settings
from django.db import models
from django.db.models import Q

from agent.values import Usage


class Session(models.Model):
    """Identity and scope of one conversation; no foreign key into any domain."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # (the (user, updated_at) index serves every lookup by user; see Message.session)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions", db_index=False
    )
    purpose = models.CharField(max_length=40, default="chat")
    status = models.CharField(max_length=20, default="active")
    title = models.CharField(max_length=200, blank=True)
    system_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The turn lease: one turn at a time, across workers and hosts.
    turn = models.ForeignKey("Turn", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    lease_until = models.DateTimeField(null=True, blank=True)
    # True from before a turn records approvals until a later turn has settled them: a turn whose
    # lease was taken while it was False knows, without a query, that nothing waits for a person.
    awaiting_people = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["user", "-updated_at"]),
            # The admin's list of chats, latest activity first (its `ordering`, and the primary key Django adds
            # to make the order total): a page is read in order, not every chat sorted. A turn writes
            # `updated_at` once, as it takes the lease (`sql.take_lease`).
            models.Index(fields=["-updated_at", "-id"], name="agent_session_updated_idx"),
        ]

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class Turn(models.Model):
    """One user message and the model calls that answer it."""

    RUNNING, DONE, ERROR, STOPPED, PAUSED = "running", "done", "error", "stopped", "paused"
    STATUSES = [(s, s) for s in (RUNNING, DONE, ERROR, STOPPED, PAUSED)]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # (the (session, created_at) index serves every lookup by session; see Message.session)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns", db_index=False)
    # Stored when the turn ends (one write fewer at its start); the message's own `turn` links them
    # from the moment it is written, also for a turn whose worker died.
    user_message = models.ForeignKey("Message", null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=STATUSES, default=RUNNING)
    stop_requested = models.BooleanField(default=False)
    terminal_event = models.CharField(max_length=20, blank=True)
    terminal_payload = models.JSONField(null=True, blank=True)
    # The SSE id its terminal event was sent with: a stream resumed at it (`Last-Event-ID`) had the
    # end already, whichever worker or host it reconnects to, and long after the turn ended.
    last_event_id = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["session", "created_at"])]

    def __str__(self) -> str:
        return f"Turn {str(self.pk)[:8]} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status != self.RUNNING


class Message(models.Model):
    USER: Final = "user"
    ASSISTANT: Final = "assistant"
    TOOL: Final = "tool"
    ROLES = [(r, r) for r in (USER, ASSISTANT, TOOL)]

    # No index of its own: the unique (session, position) one serves every lookup by session (each
    # index is one more page written by every turn's commit).
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages", db_index=False)
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    role = models.CharField(max_length=10, choices=ROLES)
    position = models.PositiveIntegerField()
    backend = models.CharField(max_length=20, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    stop_reason = models.CharField(max_length=30, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    tools_offered = models.JSONField(null=True, blank=True)
    # The thinking asked of the model for this call (`AGENT_REASONING`: a level or a token budget;
    # blank when off). A model without reasoning settings is asked nothing whatever this says.
    reasoning = models.CharField(max_length=20, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position"]
        # (no index by session and role: only the fake and demo backends count a session's replies,
        # and the (session, position) index bounds that count to one session's messages)
        constraints = [models.UniqueConstraint(fields=["session", "position"], name="agent_message_position_unique")]

    def __str__(self) -> str:
        return f"{self.role} #{self.position}"

    @property
    def usage(self) -> Usage:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


class Part(models.Model):
    TYPES = [(t, t) for t in ("text", "reasoning", "tool_use", "tool_result", "image", "document")]

    # (the unique (message, position) index serves every lookup by message)
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="parts", db_index=False)
    position = models.PositiveIntegerField()
    type = models.CharField(max_length=20, choices=TYPES)
    text = models.TextField(blank=True)
    tool_use_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=64, blank=True)
    tool_input = models.JSONField(null=True, blank=True)
    tool_result = models.JSONField(null=True, blank=True)
    tool_status = models.CharField(max_length=10, blank=True)
    media_type = models.CharField(max_length=100, blank=True)
    media_ref = models.CharField(max_length=500, blank=True)  # the object's key in the default storage
    # An attachment's facts, read from its bytes when it was accepted: size, and width and height
    # (images) or pages (PDFs). The model is told them; the budget estimates from them.
    media_meta = models.JSONField(null=True, blank=True)
    signature = models.TextField(blank=True)
    # Opaque state the provider needs back with this part (Gemini's thought signature on a tool
    # call, DeepSeek's reasoning_content, OpenRouter's reasoning_details, redacted reasoning), kept
    # as the adapter gave it, and which backend and model made it (and its signature): both go back
    # only to that backend and model (`transcript.part_for_model`).
    provider_data = models.JSONField(null=True, blank=True)
    provider_backend = models.CharField(max_length=20, blank=True)
    provider_model = models.CharField(max_length=200, blank=True)
    # A tool_result's page effects (what changed, for live refreshes). Never shown to the model;
    # kept so a stream served from the transcript (another worker) replays them too.
    effects = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["message", "position"], name="agent_part_position_unique")]
        # The admin's audit filters (`admin_filters`): chats by a tool called and its list of names, by how
        # calls ended (a result's status), and by both. Partial: calls and results only, a small share of
        # the parts, so a turn's write pays for them only when it calls a tool.
        indexes = [
            models.Index(fields=["tool_name"], condition=Q(type="tool_use"), name="agent_part_tool_use_name_idx"),
            models.Index(
                fields=["tool_status", "tool_name"],
                condition=Q(type="tool_result"),
                name="agent_part_result_status_idx",
            ),
        ]


class Spend(models.Model):
    """The budget ledger: one row per model call, reserved before it and settled after."""

    # (the (user, created_at) index serves every lookup by user)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    created_at = models.DateTimeField(db_index=True)
    model_id = models.CharField(max_length=200, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    settled = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"], name="agent_spend_user_time_idx")]


class SpendDay(models.Model):
    """Everyone's ledger cost per day (UTC), kept in step with `Spend` while budgets are on.

    The global monthly cap sums at most 31 of these rows instead of every ledger row of the
    last 30 days, so checking it costs the same at a hundred calls a month or a million.
    """

    day = models.DateField(unique=True)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    def __str__(self) -> str:
        return f"{self.day}: ${self.cost_usd}"


class RateEvent(models.Model):
    """One accepted user message, for the per-user message rate limit."""

    # (the (user, created_at) index serves every lookup by user; see Message.session)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["user", "created_at"], name="agent_rate_user_time_idx")]


class Approval(models.Model):
    """A tool call waiting for a person: claimed once, by the session's user, before it expires."""

    PENDING, APPROVED, REJECTED, EXPIRED = "pending", "approved", "rejected", "expired"
    STATUSES = [(s, s) for s in (PENDING, APPROVED, REJECTED, EXPIRED)]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # (the (session, resolved) index serves every lookup by session; see Message.session)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="approvals", db_index=False)
    # (none when `run_agent` ran without a turn: the engine's own use, outside the HTTP API)
    turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.CASCADE, related_name="approvals")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="approvals")
    tool_use_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=64)
    tool_input = models.JSONField(default=dict)
    description = models.CharField(max_length=300, blank=True)
    # What will change, as plain text (a diff), shown escaped; and the state the call acts on when the
    # person was asked (the tool's `version`): a different state when it would run voids the approval.
    detail = models.TextField(blank=True, default="")
    version = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default=PENDING)
    resolved = models.BooleanField(default=False)  # its tool_result is in the transcript
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["session", "resolved"], name="agent_approval_open_idx"),
            models.Index(fields=["expires_at"], name="agent_approval_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class ContextSummary(models.Model):
    """A model-written summary of a session's older messages, up to and including `up_to_position`."""

    # (the (session, -up_to_position) index serves every lookup by session; see Message.session)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="summaries", db_index=False)
    up_to_position = models.PositiveIntegerField()
    text = models.TextField()
    model_id = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "context summaries"
        indexes = [models.Index(fields=["session", "-up_to_position"], name="agent_summary_latest_idx")]

    def __str__(self) -> str:
        return f"Summary up to #{self.up_to_position}"
