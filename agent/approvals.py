"""Human approval of risky tools: a durable pending approval, claimed once, then the turn resumes.

The loop records an Approval for each call named in AGENT_CONFIRM_TOOLS and pauses the turn.
A person approves or rejects (one conditional UPDATE, so it works across workers); once every
call of that model response is decided, a new turn settles them — approved calls run under
the grant as it stands *then*, the others answer the model with an error result — and goes on.

An approval is bound to what its call acts on: the tool's `version` is recorded when the person is
asked and read again, in the same transaction as the run, when the approved call would run; if it
differs (someone changed the post in between), nothing is applied and the model is told so.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agent import logcontext, notices
from agent.conf import settings
from agent.models import Approval, Message, Part, Session
from agent.state import Run
from agent.tools import ToolOutcome, confirm_name, description_of, run_tool, version_of
from agent.transcript import persist_tool_results
from agent.values import ConfirmPayload, Effect, LoopEvent, ToolCall, ToolResult, ToolResultPayload

logger = logcontext.get_logger("agent.approvals")

REJECTED = "The user rejected this action. Do not retry it unless they ask again."
NOT_APPROVED = "The user did not approve this action (it expired or they moved on). Ask again if it is still needed."
CHANGED = (
    "What this action acts on changed after the user was asked to approve it, so nothing was applied. "
    "Read it again and ask the user again if it is still wanted."
)
MAX_DETAIL = 20_000
#: What a person is told when their decision was not applied (`decide`'s other outcomes), or when the
#: turn it would resume cannot start yet.
NOT_DECIDED = {
    "expired": "That request expired. Ask the assistant again.",
    "gone": "That request was already decided.",
}
STILL_ANSWERING = "The assistant is still answering. Try again in a moment."
#: Said where no stream can be handed over, when another request's turn already took the decisions up.
TAKEN_UP = "Your decision was taken up by the answer already under way in another window."


def needs_approval(name: str, session: Any = None, input: dict[str, Any] | None = None) -> bool:
    """Whether a call waits for a person: its tool is in AGENT_CONFIRM_TOOLS, or (given the session
    and input) the tool's `confirm_as` names one that is. With the setting empty, nothing waits."""
    confirm = settings.AGENT_CONFIRM_TOOLS
    if name in confirm:
        return True
    if session is None or not confirm:
        return False
    as_name = confirm_name(session, name, input if isinstance(input, dict) else {})
    return as_name is None or as_name in confirm  # a hook that fails lets a person decide


def create(run: Run, message: Message, tool_uses: list[ToolCall]) -> list[Approval]:
    session = run.session
    # Flagged first: a crash between the two leaves a flag with nothing open, which costs one query later.
    Session.objects.filter(pk=session.pk).update(awaiting_people=True)
    session.awaiting_people, run.approvals_settled = True, False
    expires = timezone.now() + timedelta(seconds=settings.AGENT_APPROVAL_TTL_SECONDS)
    return [_record(run, message, tu, expires) for tu in tool_uses]


def _record(run: Run, message: Message, tool_use: ToolCall, expires: Any) -> Approval:
    name, input = tool_use["name"], tool_use.get("input") or {}
    said = description_of(run.session, name, input)
    try:
        version = version_of(run.session, name, input)
    except Exception:
        logger.exception("version failed for tool %s", name)
        version = {"unreadable": True}  # never matches a value read later: approving it applies nothing
    return Approval.objects.create(
        session=run.session,
        turn=run.turn,
        message=message,
        tool_use_id=tool_use["id"],
        tool_name=name,
        tool_input=input,
        description=said.text[:300],
        detail=said.detail[:MAX_DETAIL],
        version=version,
        expires_at=expires,
    )


def as_event(approvals: list[Approval]) -> LoopEvent:
    payload: ConfirmPayload = {
        "approvals": [
            {
                "id": str(a.pk),
                "name": a.tool_name,
                "input": a.tool_input,
                "description": a.description,
                "detail": a.detail,
            }
            for a in approvals
        ]
    }
    return ("confirm", payload)


def decide(session: Session, approval_id: Any, user: Any, approve: bool) -> str:
    """Claim a pending approval for its own user: "decided", "expired", "gone" (already decided or not found)."""
    now = timezone.now()
    base = Approval.objects.filter(pk=approval_id, session=session, session__user=user)
    claimed = base.filter(status=Approval.PENDING, expires_at__gt=now).update(
        status=Approval.APPROVED if approve else Approval.REJECTED, decided_at=now, decided_by=user
    )
    if claimed:
        notices.approval_decided(session.pk, approval_id)  # the chat's other open pages show it decided
        return "decided"
    if base.filter(status=Approval.PENDING, expires_at__lte=now).update(status=Approval.EXPIRED, decided_at=now):
        return "expired"
    return "gone"


def waiting(session: Session, approval_id: Any) -> list[Approval]:
    """Undecided approvals of the same model response as `approval_id`."""
    approval = Approval.objects.filter(pk=approval_id, session=session).first()
    if approval is None:
        return []
    return list(
        Approval.objects.filter(message_id=approval.message_id, status=Approval.PENDING, expires_at__gt=timezone.now())
    )


def pending(session: Session) -> list[Approval]:
    """The session's calls still waiting for a person's decision (undecided, not expired)."""
    return list(
        Approval.objects.filter(session=session, status=Approval.PENDING, expires_at__gt=timezone.now()).order_by(
            "created_at"
        )
    )


def open_approvals(session: Session) -> list[Approval]:
    return list(Approval.objects.filter(session=session, resolved=False).order_by("created_at"))


def settle(run: Run) -> list[LoopEvent]:
    """Answer every open approval in the transcript: run the approved, refuse the rest. Returns events.

    No query when the run already knows nothing waits (its lease was taken while nothing did);
    else one read when nothing waits.
    """
    if run.approvals_settled:
        return []
    session = run.session
    if not Session.objects.filter(pk=session.pk, awaiting_people=True).exists():
        # Approvals are open only while the flag is set (`create` sets it first, `_settled` clears it
        # last): one read, and no write, answers the usual case.
        session.awaiting_people, run.approvals_settled = False, True
        return []
    pending = open_approvals(session)
    if not pending:
        _settled(run)
        return []
    answered = set(  # a call already answered, whatever answered it, is not answered twice
        Part.objects.filter(
            message__session=session, type="tool_result", tool_use_id__in=[a.tool_use_id for a in pending]
        ).values_list("tool_use_id", flat=True)
    )
    results: list[ToolResult] = []
    effects: list[Effect] = []
    events: list[LoopEvent] = []
    for approval in pending:
        if approval.tool_use_id in answered:
            continue
        outcome = _answer(session, approval)
        effects += outcome.effects
        result, status = outcome.result, outcome.status
        results.append(
            {
                "tool_use_id": approval.tool_use_id,
                "name": approval.tool_name,
                "result": result,
                "status": status,
                "effects": outcome.effects,
            }
        )
        shown: ToolResultPayload = {
            "id": approval.tool_use_id,
            "name": approval.tool_name,
            "status": status,
            "result": result,
        }
        events.append(("tool_result", shown))
    if results:
        persist_tool_results(run, results)
    now = timezone.now()
    Approval.objects.filter(pk__in=[a.pk for a in pending]).update(resolved=True)
    Approval.objects.filter(pk__in=[a.pk for a in pending], status=Approval.PENDING).update(
        status=Approval.EXPIRED, decided_at=now
    )
    _settled(run)
    if effects:
        events.append(("effects", effects))
    return events


def _answer(session: Session, approval: Approval) -> ToolOutcome:
    """A decided call's result: an approved one runs (`_run_approved`); a rejected or lapsed one
    answers the model with an error result saying so."""
    if approval.status != Approval.APPROVED:
        return ToolOutcome({"error": REJECTED if approval.status == Approval.REJECTED else NOT_APPROVED}, "error", [])
    tool_use: ToolCall = {"id": approval.tool_use_id, "name": approval.tool_name, "input": approval.tool_input}
    return _run_approved(session, approval, tool_use)


def _run_approved(session: Session, approval: Approval, tool_use: ToolCall) -> ToolOutcome:
    """Run an approved call, unless what it acts on changed since the person was asked (then an
    error result, nothing applied). The check and the run share one transaction, so a tool's
    `version` may lock what it reads until the call has run."""
    if approval.version is None:
        return run_tool(session, tool_use)
    with transaction.atomic():
        try:
            unchanged = version_of(session, approval.tool_name, approval.tool_input) == approval.version
        except Exception:
            logger.exception("version failed for tool %s", approval.tool_name)
            unchanged = False
        if not unchanged:
            return ToolOutcome({"error": CHANGED}, "error", [])
        return run_tool(session, tool_use)


def _settled(run: Run) -> None:
    """Nothing waits for a person any more (called under the turn's lease, after the approvals are
    resolved). Written whatever the session object says: it may have been loaded before the flag was set."""
    Session.objects.filter(pk=run.session.pk).update(awaiting_people=False)
    run.session.awaiting_people, run.approvals_settled = False, True


def expire_stale(before: Any = None) -> int:
    """Mark approvals past their expiry as expired (their tool_result is written when the session moves on)."""
    now = before or timezone.now()
    return Approval.objects.filter(Q(status=Approval.PENDING) & Q(expires_at__lte=now)).update(
        status=Approval.EXPIRED, decided_at=now
    )
