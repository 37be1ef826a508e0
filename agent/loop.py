"""run_agent: the synchronous streamed loop, one readable generator of (event, payload) tuples."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Generator, Iterator, Mapping
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict

from agent import approvals, budget, context, limits, logcontext, signals, sql
from agent.backends import get_backend, model_for
from agent.backends.base import USAGE_KEYS, Backend, CallContext, call_context, zero_usage
from agent.conf import settings
from agent.exceptions import BackendError, BudgetExceeded
from agent.models import Message, Session, Spend, Turn
from agent.state import Run
from agent.tools import catalog_for, is_available, run_tool
from agent.transcript import persist_assistant, persist_tool_results, release_connection, repair_orphans
from agent.values import (
    AnswerPart,
    DonePayload,
    Effect,
    ErrorPayload,
    LoopEvent,
    ModelEvent,
    Phase,
    ReasoningEvent,
    ReasoningPart,
    TokenPayload,
    ToolCall,
    ToolResult,
    ToolResultPayload,
    ToolSpec,
    ToolStatus,
    ToolUsePart,
    ToolUsePayload,
    Usage,
    without_nul,
)

logger = logcontext.get_logger("agent.loop")

Event = LoopEvent

CALM = {
    "provider_error": "The assistant couldn't answer just now. Please try again in a moment.",
    "tool_cycle_limit": "The assistant took too many steps on this request and stopped. Try a simpler request.",
    "chat_error": "Something went wrong on our side. Your message is saved; please try again.",
}
# A `provider_error` that trying again will not clear gets a sentence that does not ask for a retry.
LASTING = {
    # The provider refused in a way only the operator can mend (a wrong key or model, a bad request).
    "refused": (
        "The assistant can't answer this right now, and trying again won't help until the site's operator "
        "looks into it. Your message is saved."
    ),
    # The transcript is longer than the model's window, even with its older messages summarised.
    "too_long": "This chat is now longer than the assistant's model can read. Start a new chat to go on.",
}


#: The errors whose sentence asks the person to try again: a model call that failed for now, or something of ours.
RETRY_HELPS = {("provider_error", CALM["provider_error"]), ("chat_error", CALM["chat_error"])}


def retry_helps(payload: Mapping[str, Any] | None) -> bool:
    """Whether the person may ask for an answer that ended with this `error` payload again ("Try again"):
    after a failure a retry may clear, or a spent budget (whose page offers it once its wait is over; asked
    sooner, the budget is checked again before the model call, as for any turn). Not for a refusal only the
    operator can mend, a chat too long or a request that took too many steps."""
    if not payload:
        return False
    code = str(payload.get("code"))
    return code == "budget_exceeded" or (code, str(payload.get("message"))) in RETRY_HELPS


def calm_error(code: str, *, message: str | None = None) -> tuple[Literal["error"], ErrorPayload]:
    """The `error` event a turn ends with: `message`, else the calm sentence for `code`."""
    payload: ErrorPayload = {"code": code, "message": message or CALM[code]}
    return ("error", payload)


def provider_sentence(exc: BackendError, *, summarised: bool) -> str:
    """What the person reads after a failed model call: a retry helps, or it does not (and why)."""
    if exc.context_too_long and summarised:
        return LASTING["too_long"]
    return CALM["provider_error"] if exc.retryable else LASTING["refused"]


class _Reasoning(TypedDict):
    """One reasoning block as a model call streams it (`_add_reasoning`)."""

    text: str
    signature: str
    provider_data: NotRequired[dict[str, Any]]


class _Call:
    """What one model call streamed, gathered while it is relayed."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[_Reasoning] = []
        self.tool_uses: list[ToolCall] = []
        # Where each reasoning block and tool call began among the text tokens, in the order they came:
        # (kind, index in its list, tokens of text before it). The answer keeps that order.
        self.order: list[tuple[Literal["reasoning", "tool_use"], int, int]] = []
        self.usage = zero_usage()
        self.finished = False  # the model's `done` came, with the provider's own count of the tokens
        self.stop_reason = "end_turn"
        self.index: int | None = None  # the session's model calls before this one, for a backend that reads it
        self.cost = Decimal(0)
        self.ledger: Spend | None = None  # its ledger row, still to write with the answer (no cap on)
        self.sentence: str | None = None  # what the person reads if the call failed (`provider_sentence`)

    def output_chars(self) -> int:
        """Characters the model wrote before its call ended."""
        if not (self.text or self.reasoning or self.tool_uses):
            return 0
        reasoning = sum(len(block.get("text") or "") for block in self.reasoning)
        return sum(map(len, self.text)) + reasoning + len(json.dumps([tu.get("input") for tu in self.tool_uses]))


def _never() -> bool:
    return False


def run_agent(
    session: Session, *, turn: Turn | None = None, should_stop: Callable[[], bool] = _never, run: Run | None = None
) -> Iterator[Event | Phase]:
    """Answer the session's transcript: call the model, run the tools it asks for, repeat.

    `run` is what the turn already knows (`turns.claim` makes it); without one the run starts from
    the transcript as it stands. With `run.marks_phases` it also yields a `Phase` mark before and
    after each model call's stream (`agent.values.Phase`).
    """
    if run is None:
        run = Run(session, turn)
    backend = get_backend()
    model = model_for(backend)
    run.forget_history()  # read the transcript afresh once per run (context.build)
    calls: int | None = None  # known from the first call on (`_call_index`), for backends that read it
    total = zero_usage()
    last_id: int | None = None
    # A turn first answers the calls people decided: a new message's turn did in `begin`, and shows
    # them now (a card still waiting on the page learns it lapsed); a resumed turn does it here.
    answered, run.answered = run.answered, []
    yield from answered
    if not run.approvals_settled:
        yield from approvals.settle(run)
    for _cycle in range(settings.AGENT_MAX_TOOL_CYCLES):
        specs = catalog_for(session.purpose, session)  # recomputed: a narrowed grant bites now
        call = _Call()
        try:
            failure = yield from _call_model(run, backend, model, specs, call, should_stop, calls)
        except BudgetExceeded as exc:
            exceeded: ErrorPayload = {
                "code": "budget_exceeded",
                "message": exc.message,
                "retry_after_seconds": exc.retry_after_seconds,
            }
            yield ("error", exceeded)
            return
        calls = None if call.index is None else call.index + 1
        if failure:
            call.tool_uses, call.stop_reason = [], "error"
        message = _persist(run, call, backend.name, model, call.cost, specs)
        last_id = message.pk
        _add(total, call.usage)
        if failure:
            signals.agent_error.send(sender=Session, session=session, code=failure)
            yield calm_error(failure, message=call.sentence)
            return
        if call.stop_reason == "stopped" or not call.tool_uses:
            yield _done(last_id, call.stop_reason, total)
            return
        refused = limits.refusals(run, call.tool_uses)  # past a limit: an error result, never run
        waiting = [tu for tu in call.tool_uses if tu["id"] not in refused and _needs_person(session, tu)]
        ready = [tu for tu in call.tool_uses if tu not in waiting]
        if ready:
            yield from _run_tools(run, ready, should_stop, refused)
        if waiting:
            yield approvals.as_event(approvals.create(run, message, waiting))
            return
        if should_stop():
            yield _done(last_id, "stopped", total)
            return
    yield calm_error("tool_cycle_limit")


def _done(message_id: int | None, stop_reason: str, usage: Usage) -> Event:
    payload: DonePayload = {"message_id": message_id, "stop_reason": stop_reason, "usage": usage}
    return ("done", payload)


def _call_model(
    run: Run,
    backend: Backend,
    model: str,
    specs: list[ToolSpec],
    call: _Call,
    should_stop: Callable[[], bool],
    index: int | None,
) -> Generator[Event | Phase, None, str | None]:
    """One model call, budgeted; a context-too-long refusal before any output gets one summarise-and-retry.

    Returns the failure code (None on success); BudgetExceeded propagates.
    """
    session = run.session
    if should_stop():  # asked before the model was (Stop pressed at once, or during the tools): no call
        call.stop_reason = "stopped"
        return None
    for attempt in (0, 1):
        try:
            ctx = context.build(run, backend, model, specs, force=attempt == 1)
        except BackendError as exc:
            if should_stop():  # a Stop cut the summary's call: the turn stops before its model call
                call.stop_reason = "stopped"
                return None
            logger.error("summarising the older messages failed via %s: %s", backend.name, exc)
            call.sentence = provider_sentence(exc, summarised=False)
            return "provider_error"
        if index is None and backend.uses_call_index:
            index = _call_index(session)
        call.index = index
        estimate = budget.estimate_tokens(ctx.system, ctx.messages, specs) if budget.Limits.from_settings().any else 0
        reservation = budget.reserve(session.user, model, max_tokens=settings.AGENT_MAX_TOKENS, input_estimate=estimate)
        release_connection()  # nothing pinned while we wait on the model
        token = call_context.set(CallContext(str(session.pk), index, interrupt=run.interrupt))
        failure, retry = None, False
        if run.marks_phases:
            yield Phase.MODEL
        try:
            yield from _relay(
                backend.stream(
                    system=ctx.system,
                    messages=ctx.messages,
                    tools=specs,
                    model=model,
                    inference={"max_tokens": settings.AGENT_MAX_TOKENS},
                ),
                call,
                should_stop,
            )
        except Exception as exc:
            failure, retry = _failed(exc, call, backend.name, model, attempt=attempt, stopped=should_stop())
        finally:
            call_context.reset(token)
        if run.marks_phases:
            yield Phase.DATABASE
        if retry:
            budget.settle(reservation, zero_usage())
            continue
        _charge(call, reservation, estimate, ctx, specs)
        return failure
    return "provider_error"


def _failed(
    exc: Exception, call: _Call, backend: str, model: str, *, attempt: int, stopped: bool
) -> tuple[str | None, bool]:
    """What a model call that raised comes to: (its failure code, None when a Stop cut it; whether to
    summarise the older messages and try once more). Logged for the operator; `call.sentence` is
    what the person reads."""
    if stopped:  # a Stop cut the model's read (`Interrupt`): what it wrote is kept, as at any Stop
        call.stop_reason, call.tool_uses = "stopped", []
        if not isinstance(exc, BackendError):  # (an adapter's bug that met a Stop still leaves a trace)
            logger.warning("model call failed unexpectedly after a Stop", exc_info=exc)
        return None, False
    if not isinstance(exc, BackendError):
        logger.error("model call failed unexpectedly", exc_info=exc)
        return "chat_error", False
    retry = exc.context_too_long and attempt == 0 and not (call.text or call.reasoning or call.tool_uses)
    _log_backend_error(exc, backend, model, retrying=retry, summarised=attempt == 1)
    call.sentence = provider_sentence(exc, summarised=attempt == 1)
    return "provider_error", retry


def _charge(
    call: _Call, reservation: budget.Reservation, estimate: int, ctx: context.Context, specs: list[ToolSpec]
) -> None:
    """Settle the call's reservation with what it used, and keep its cost on `call`. A call that ended
    without the provider's count is charged at an estimate: its prompt (`estimate`, else counted now)
    and the output it wrote."""
    written = call.output_chars()
    if budget.counted_at_estimate(finished=call.finished, stopped=call.stop_reason == "stopped", output_chars=written):
        prompt = estimate or budget.estimate_tokens(ctx.system, ctx.messages, specs)
        call.usage = budget.estimated_usage(prompt, written)
    # No cap on: the call's ledger row is written with the answer (`_persist`), one transaction.
    call.ledger = budget.ledger_row(reservation, call.usage)
    call.cost = budget.settle(reservation, call.usage) if call.ledger is None else call.ledger.cost_usd


def _log_backend_error(exc: BackendError, backend: str, model: str, *, retrying: bool, summarised: bool) -> None:
    """The operator's line for a failed model call; a context window too small says what to change.
    (Whose call it was, session and turn, is on the record: `agent.logcontext`.)"""
    refused = f"model {model!r} via {backend} refused the request as longer than its context window"
    if exc.context_too_long and retrying:
        logger.warning("%s; summarising the older messages and trying once more: %s", refused, exc)
    elif exc.context_too_long and summarised:
        logger.error(
            "%s even after summarising: set AGENT_CONTEXT_MAX_TOKENS below the model's window: %s", refused, exc
        )
    else:
        logger.error("backend %s failed (model %r, retryable=%s): %s", backend, model, exc.retryable, exc)


def _call_index(session: Session) -> int:
    """The session's model calls so far, for the backends that read it (the fake, the demo)."""
    return sql.model_calls(session)


def _needs_person(session: Session, tool_use: ToolCall) -> bool:
    """Calls of a confirm-listed tool that could run wait for a person; the rest answer at once."""
    return (
        approvals.needs_approval(tool_use["name"], session, tool_use.get("input"))
        and not tool_use.get("input_error")
        and is_available(session, tool_use["name"])
    )


def _relay(events: Iterator[ModelEvent], call: _Call, should_stop: Callable[[], bool]) -> Iterator[Event]:
    """Forward one model call's events as loop events while gathering them; stop between events."""
    half = ""  # the first half of a character a text event ended in, kept for the next text event
    thought = ""  # the same for reasoning events
    try:
        for raw in events:
            if raw["kind"] == "text":  # once per token: only its text is read, so only that is cleaned
                if thought:  # a half the next reasoning event did not complete
                    yield from _gather(call, {"kind": "reasoning", "text": "?"})
                    thought = ""
                text = raw["text"]
                if half or type(text) is not str or not text.isascii():  # (ASCII is valid UTF-8 as it is)
                    text, half = _joined(half, text)
                    if half and not text:
                        continue  # the event was only a character's first half: nothing to show yet
                call.text.append(text)
                token: TokenPayload = {"text": text}  # (annotated: mypy infers no TypedDict in a union of tuples)
                yield ("token", token)
            else:
                if half:  # a half the next text event did not complete
                    call.text.append("?")
                    token = {"text": "?"}
                    yield ("token", token)
                    half = ""
                if raw["kind"] == "reasoning":  # once per token of reasoning, as text above
                    text = raw.get("text", "")
                    if thought or type(text) is not str or not text.isascii():
                        text, thought = _joined(thought, text)
                        if thought and (raw.get("signature") or raw.get("provider_data")):
                            text, thought = text + "?", ""  # the block closes with this event: no rest can come
                        elif thought and not text:
                            continue
                        raw = raw.copy()
                        raw["text"] = text
                elif thought:
                    yield from _gather(call, {"kind": "reasoning", "text": "?"})
                    thought = ""
                yield from _gather(call, clean_text(raw))
            if should_stop is not _never and should_stop():  # (once per token: no call when nobody can stop)
                call.stop_reason, call.tool_uses = "stopped", []
                return
    finally:
        close = getattr(events, "close", None)
        if close:
            close()


def _gather(call: _Call, ev: ModelEvent) -> Iterator[Event]:
    """A model event other than text: gathered into `call`, forwarded when people see it. A kind
    outside the four of docs/engine.md, "Backends" (an adapter's mistake) is ignored, never shown."""
    match ev["kind"]:
        case "reasoning":
            if _add_reasoning(call, ev):
                call.order.append(("reasoning", len(call.reasoning) - 1, len(call.text)))
            if ev.get("text"):
                thought: TokenPayload = {"text": ev["text"]}
                yield ("reasoning", thought)
        case "tool_use":
            tool_use: ToolCall = {
                "id": _kept_id(without_nul(str(ev["id"]))),
                "name": _kept_name(without_nul(ev["name"])),
                "input": without_nul(ev["input"]),
            }
            if "input_error" in ev:
                tool_use["input_error"] = ev["input_error"]
            if "provider_data" in ev:
                tool_use["provider_data"] = ev["provider_data"]
            call.order.append(("tool_use", len(call.tool_uses), len(call.text)))
            call.tool_uses.append(tool_use)
            shown: ToolUsePayload = {"id": tool_use["id"], "name": tool_use["name"], "input": tool_use["input"]}
            yield ("tool_use", shown)
        case "done":
            call.stop_reason = ev.get("stop_reason") or "end_turn"
            call.finished = True
            call.usage = {**zero_usage(), **(ev.get("usage") or {})}
        case "text":
            call.text.append(ev["text"])
            token: TokenPayload = {"text": ev["text"]}
            yield ("token", token)
        case _:
            logger.warning("ignoring a model event of unknown kind %r", ev.get("kind"))


def _kept_name(name: Any) -> Any:
    """A tool name as long as the transcript keeps one (a tool's name has at most 64 characters): a
    longer one, which a model may write (a post's text can ask it to), is cut and ends in "…", so it
    never names a tool that exists and its call is answered "unknown tool"."""
    return name[:63] + "…" if isinstance(name, str) and len(name) > 64 else name


def _kept_id(value: str) -> str:
    """A tool call's id as long as the transcript keeps one (200 characters); a longer one gets a stable
    id of its own (the call and its result are written with it)."""
    return value if len(value) <= 200 else "toolu_" + hashlib.sha256(value.encode()).hexdigest()[:32]


def _joined(half: str, text: Any) -> tuple[str, str]:
    """A text or reasoning event's text as valid UTF-8, and the half of a character it ends in. A server that slices
    its text in UTF-16 units (JSON spells each half as its own escape) may end one event halfway through
    an emoji and begin the next with the rest: the halves are joined, not each shown as "?"."""
    if type(text) is not str:
        return half + clean_text(text), ""
    text = half + text
    if "\ud800" <= text[-1:] <= "\udbff":  # a high surrogate: its low half may come next
        text, half = text[:-1], text[-1]
    else:
        half = ""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # surrogates: pair those that make a character, the rest become "?"
            text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
            text = clean_text(text)
    return text, half


def clean_text(value: Any) -> Any:
    """Strings as valid UTF-8: a lone surrogate from a model would break the stream, the database
    and every later request built from the transcript; it becomes "?" here, once."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8") if not value.isascii() else value
    if isinstance(value, dict):
        return {k: clean_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_text(v) for v in value]
    return value


def _add_reasoning(call: _Call, ev: ReasoningEvent) -> bool:
    """Reasoning pieces join the open block; a signature or provider state closes it (redacted
    reasoning is a block of its own). True when the piece began a new block."""
    state = ev.get("provider_data")
    last = call.reasoning[-1] if call.reasoning else None
    if last and not last.get("signature") and not last.get("provider_data") and "redacted" not in (state or {}):
        last["text"] += ev.get("text", "")
        if ev.get("signature"):
            last["signature"] = ev["signature"]
        if state:
            last["provider_data"] = state
        return False
    call.reasoning.append({"text": ev.get("text", ""), "signature": ev.get("signature", "")})
    if state:
        call.reasoning[-1]["provider_data"] = state
    return True


def answer_parts(call: _Call) -> list[AnswerPart]:
    """The call's answer as neutral parts in the order the model wrote them: reasoning, text and tool
    calls may alternate (a note between two tool calls), and the providers that sign reasoning want
    each block back where it was. Tool calls the loop dropped (a failed or stopped call) are left out."""
    parts: list[AnswerPart] = []
    start = 0
    for kind, index, at in call.order:
        if kind == "tool_use" and index >= len(call.tool_uses):
            continue
        if at > start:
            parts.append({"type": "text", "text": without_nul("".join(call.text[start:at]))})
            start = at
        if kind == "reasoning":
            parts.append(_reasoning_part(call.reasoning[index]))
        else:
            parts.append(_tool_use_part(call.tool_uses[index]))
    if len(call.text) > start:
        parts.append({"type": "text", "text": without_nul("".join(call.text[start:]))})
    return [part for part in parts if part["type"] != "text" or part["text"]]


def _reasoning_part(block: _Reasoning) -> ReasoningPart:
    part: ReasoningPart = {
        "type": "reasoning",
        "text": without_nul(block["text"]),
        "signature": block.get("signature", ""),
    }
    if state := _state(block):
        part["provider_data"] = state
    return part


def _tool_use_part(tool_use: ToolCall) -> ToolUsePart:
    part: ToolUsePart = {
        "type": "tool_use",
        "id": tool_use["id"],
        "name": tool_use["name"],
        "input": tool_use.get("input") or {},
    }
    if state := _state(tool_use):
        part["provider_data"] = state
    return part


def _state(block: _Reasoning | ToolCall) -> dict[str, Any] | None:
    """The provider state a block carries, if any (kept with its part: `transcript._part_row`)."""
    data = block.get("provider_data")
    return data if isinstance(data, dict) and data else None


def _persist(
    run: Run,
    call: _Call,
    backend: str,
    model: str,
    cost: Decimal,
    specs: list[ToolSpec],
) -> Message:
    """The answer, with the call's ledger row when one is still to write; if the answer cannot be
    written, the row is written alone: what a call cost is recorded whatever became of its answer."""
    try:
        return persist_assistant(
            run,
            parts=answer_parts(call),
            usage=call.usage,
            stop_reason=call.stop_reason,
            backend=backend,
            model_id=model,
            cost_usd=cost,
            tools_offered=[s["name"] for s in specs],
            also=(call.ledger,) if call.ledger is not None else (),
        )
    except Exception:
        if call.ledger is not None:
            _record_alone(call.ledger)
        raise


def _record_alone(row: Spend) -> None:
    """Write a call's ledger row on its own (its answer could not be written)."""
    try:
        sql.insert_spend(
            Spend(
                user_id=row.user_id,
                created_at=row.created_at,
                model_id=row.model_id,
                tokens=row.tokens,
                cost_usd=row.cost_usd,
                settled=row.settled,
            )
        )
    except Exception:
        logger.exception("recording the cost of a model call failed (user=%s)", row.user_id)


def _run_tools(
    run: Run, tool_uses: list[ToolCall], should_stop: Callable[[], bool], refused: dict[str, str] | None = None
) -> Iterator[Event]:
    """Run each call (every tool_use gets exactly one result), persist them together, then emit effects.

    A call in `refused` (past a limit) is answered with its error and never run.
    """
    session = run.session
    results: list[ToolResult] = []
    effects: list[Effect] = []
    for tu in tool_uses:
        result: dict[str, Any]
        status: ToolStatus
        ran: list[Effect] = []
        if refused and tu["id"] in refused:
            result, status = {"error": refused[tu["id"]]}, "error"
        elif should_stop():
            result, status = {"error": "The user stopped this turn before the tool ran."}, "error"
        else:
            outcome = run_tool(session, tu)
            result, status, ran = outcome.result, outcome.status, outcome.effects
            effects += ran
            signals.tool_called.send(sender=Session, session=session, name=tu["name"], status=status)
        results.append(
            {"tool_use_id": tu["id"], "name": tu["name"], "result": result, "status": status, "effects": ran}
        )
    try:
        persist_tool_results(run, results)
    except Exception:
        logger.exception("persisting tool results failed")
        repair_orphans(run)
        raise
    for r in results:
        payload: ToolResultPayload = {
            "id": r["tool_use_id"],
            "name": r["name"],
            "status": r["status"],
            "result": r["result"],
        }
        yield ("tool_result", payload)
    if effects:
        yield ("effects", effects)


def _add(total: Usage, usage: Usage) -> None:
    for k in USAGE_KEYS:
        total[k] += int(usage.get(k, 0) or 0)
