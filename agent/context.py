"""Bounded context: the transcript grows without limit, what is sent does not.

What a model call receives: the system prompt, a model-written summary of the older prefix
(recorded as a ContextSummary with the last message it covers), and the recent messages
verbatim. The cut always falls just before a user message, so a tool call is never split
from its result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent import attachments, budget, logcontext, sql
from agent.backends.base import Backend, CallContext, Interrupt, call_context, zero_usage
from agent.conf import settings
from agent.models import ContextSummary, Session
from agent.state import Run
from agent.transcript import read_after, release_connection
from agent.values import NeutralMessage, ToolSpec

logger = logcontext.get_logger("agent.context")

SUMMARY_PROMPT = (
    "You condense the earlier part of a conversation between a user and an assistant that uses tools. "
    "Write a compact summary (at most 200 words) of what the user asked for, what was done (tool calls and "
    "their outcomes, with ids and titles), and anything still pending. Facts only; no preamble."
)
SUMMARY_MAX_TOKENS = 1024


@dataclass
class Context:
    system: str
    messages: list[NeutralMessage]


def build(run: Run, backend: Backend, model: str, tools: list[ToolSpec], *, force: bool = False) -> Context:
    """The context for the next call; writes a new summary first when the transcript outgrew the limit.

    Within one run the transcript is read once: the messages the run adds are appended to what was
    loaded (`transcript.add_message`), so the second call of a tool round trip needs no query.
    """
    if run.history is None:
        load(run, (backend.name, model))
    session, summary, pairs = run.session, run.summary, run.history
    assert pairs is not None  # (`load` read it)
    system = _system(session, summary)
    limit = settings.AGENT_CONTEXT_MAX_TOKENS
    too_big = bool(limit) and budget.estimate_tokens(system, [m for _, m in pairs], tools) > limit
    if force or too_big:
        keep = settings.AGENT_CONTEXT_KEEP_MESSAGES if not force else max(1, settings.AGENT_CONTEXT_KEEP_MESSAGES // 2)
        cut = cut_index(pairs, keep)
        if cut > 0:
            summary = summarize(session, backend, model, summary, pairs[:cut], interrupt=run.interrupt)
            run.summary, run.history = summary, pairs[cut:]
            pairs, system = run.history, _system(session, summary)
    return Context(system, attachments.for_model([m for _, m in pairs]))


def load(run: Run, origin: tuple[str, str] | None = None) -> None:
    """Read what the next call is built from: the latest summary and the messages after it, with
    the provider state only of the backend and model `origin` (a run keeps to one of each)."""
    run.summary = sql.latest_summary(run.session)
    after = -1 if run.summary is None else run.summary.up_to_position
    history = read_after(run.session, after, origin=origin)
    run.history = [pair for pair in history if pair[0] != run.set_aside] if run.set_aside is not None else history


def _system(session: Session, summary: ContextSummary | None) -> str:
    if summary is None:
        return session.system_prompt
    return f"{session.system_prompt}\n\n<conversation_summary>\n{summary.text}\n</conversation_summary>"


def cut_index(pairs: list[tuple[int, NeutralMessage]], keep: int) -> int:
    """Where the verbatim part starts: a user's own message, at most `keep` from the end when one is
    there (else the latest one, since a turn's tool calls and results are never split)."""
    start = max(0, len(pairs) - keep)
    later = [i for i in range(start, len(pairs)) if _is_user_text(pairs[i][1])]
    if later:
        return later[0]
    earlier = [i for i in range(start) if _is_user_text(pairs[i][1])]
    return earlier[-1] if earlier else 0


def _is_user_text(message: NeutralMessage) -> bool:
    return message["role"] == "user" and any(p["type"] == "text" for p in message["parts"])


def summarize(
    session: Session,
    backend: Backend,
    model: str,
    previous: ContextSummary | None,
    prefix: list[tuple[int, NeutralMessage]],
    *,
    interrupt: Interrupt | None = None,
) -> ContextSummary:
    """Ask the model to condense `prefix` (and the previous summary); budgeted like any call. A Stop
    (the turn's `interrupt`) cuts it as it cuts a chat call: it then raises BackendError."""
    text = render(previous.text if previous else "", [m for _, m in prefix])
    request: list[NeutralMessage] = [{"role": "user", "parts": [{"type": "text", "text": text}]}]
    estimate = budget.estimate_tokens(SUMMARY_PROMPT, request, [])
    reservation = budget.reserve(session.user, model, max_tokens=SUMMARY_MAX_TOKENS, input_estimate=estimate)
    release_connection()
    out, usage, finished = [], zero_usage(), False
    token = call_context.set(CallContext(str(session.pk), -1, purpose="summary", interrupt=interrupt))
    try:
        for event in backend.stream(
            system=SUMMARY_PROMPT, messages=request, tools=[], model=model, inference={"max_tokens": SUMMARY_MAX_TOKENS}
        ):
            if event["kind"] == "text":
                out.append(event["text"])
            elif event["kind"] == "done":
                usage, finished = {**usage, **(event.get("usage") or {})}, True
    finally:
        call_context.reset(token)
        written = sum(map(len, out))
        if budget.counted_at_estimate(
            finished=finished, stopped=interrupt is not None and interrupt.fired, output_chars=written
        ):
            usage = budget.estimated_usage(estimate, written)
        cost = budget.settle(reservation, usage)
    logger.info("summarised %d messages of session %s", len(prefix), session.pk)
    return ContextSummary.objects.create(
        session=session,
        up_to_position=prefix[-1][0],
        text="".join(out).strip() or "(no summary)",
        model_id=model,
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        cost_usd=cost,
    )


def render(previous: str, messages: list[NeutralMessage]) -> str:
    lines = [f"Summary so far: {previous}"] if previous else []
    for message in messages:
        for part in message["parts"]:
            lines.append(_line(message["role"], part))
    return "Condense this conversation:\n\n" + "\n".join(line for line in lines if line)


def _line(role: str, part: Mapping[str, Any]) -> str:
    match part["type"]:
        case "text":
            return f"{role.title()}: {part['text']}"
        case "tool_use":
            return f"Assistant called {part['name']}({json.dumps(part['input'], ensure_ascii=False)[:300]})"
        case "tool_result":
            return f"Result ({part['status']}): {json.dumps(part['result'], ensure_ascii=False)[:500]}"
        case "image" | "document":
            return f"{role.title()} attached a {part['type']}."
    return ""
