"""Human approval of risky tools: a durable pending approval, claimed once, then the turn resumes.

The loop records an Approval for each call named in AGENT_CONFIRM_TOOLS and pauses the turn.
A person approves or rejects (one conditional UPDATE, so it works across workers); once every
call of that model response is decided, a new turn settles them — approved calls run under
the grant as it stands *then*, the others answer the model with an error result — and goes on.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from agent.models import Approval, Message, Session
from agent.state import Run
from agent.tools import describe, run_tool
from agent.transcript import persist_tool_results

REJECTED = "The user rejected this action. Do not retry it unless they ask again."
NOT_APPROVED = "The user did not approve this action (it expired or they moved on). Ask again if it is still needed."


def needs_approval(name: str) -> bool:
    return name in settings.AGENT_CONFIRM_TOOLS


def create(run: Run, message: Message, tool_uses: list[dict[str, Any]]) -> list[Approval]:
    session, turn = run.session, run.turn
    # Flagged first: a crash between the two leaves a flag with nothing open, which costs one query later.
    Session.objects.filter(pk=session.pk).update(awaiting_people=True)
    session.awaiting_people, run.approvals_settled = True, False
    expires = timezone.now() + timedelta(seconds=settings.AGENT_APPROVAL_TTL_SECONDS)
    return [
        Approval.objects.create(
            session=session,
            turn=turn,
            message=message,
            tool_use_id=tu["id"],
            tool_name=tu["name"],
            tool_input=tu.get("input") or {},
            description=describe(session, tu["name"], tu.get("input") or {})[:300],
            expires_at=expires,
        )
        for tu in tool_uses
    ]


def as_event(approvals: list[Approval]) -> tuple[str, dict[str, Any]]:
    return (
        "confirm",
        {
            "approvals": [
                {"id": str(a.pk), "name": a.tool_name, "input": a.tool_input, "description": a.description}
                for a in approvals
            ]
        },
    )


def decide(session: Session, approval_id: Any, user: Any, approve: bool) -> str:
    """Claim a pending approval for its own user: "decided", "expired", "gone" (already decided or not found)."""
    now = timezone.now()
    base = Approval.objects.filter(pk=approval_id, session=session, session__user=user)
    claimed = base.filter(status=Approval.PENDING, expires_at__gt=now).update(
        status=Approval.APPROVED if approve else Approval.REJECTED, decided_at=now, decided_by=user
    )
    if claimed:
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


def open_approvals(session: Session) -> list[Approval]:
    return list(Approval.objects.filter(session=session, resolved=False).order_by("created_at"))


def settle(run: Run) -> list[tuple[str, Any]]:
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
    results, effects, events = [], [], []
    for approval in pending:
        tool_use = {"id": approval.tool_use_id, "name": approval.tool_name, "input": approval.tool_input}
        ran: list[dict[str, Any]] = []
        if approval.status == Approval.APPROVED:
            outcome = run_tool(session, tool_use)
            result, status, ran = outcome.result, outcome.status, outcome.effects
            effects += ran
        else:
            result, status = {"error": REJECTED if approval.status == Approval.REJECTED else NOT_APPROVED}, "error"
        results.append(
            {
                "tool_use_id": approval.tool_use_id,
                "name": approval.tool_name,
                "result": result,
                "status": status,
                "effects": ran,
            }
        )
        events.append(
            (
                "tool_result",
                {"id": approval.tool_use_id, "name": approval.tool_name, "status": status, "result": result},
            )
        )
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
