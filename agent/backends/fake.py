"""A deterministic scripted backend for tests and benchmarks (docs/engine.md, "The fake backend's script")."""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from agent.backends.base import Backend, call_context, current_interrupt, zero_usage
from agent.conf import settings
from agent.exceptions import BackendError
from agent.values import ModelEvent, NeutralMessage, TextEvent, ToolSpec

REQUESTS_KEPT = 200
#: A scripted pause at least this long (a silent model) ends at a Stop; shorter ones, the pace of a
#: stream of tokens, are slept as they are (cheaper per token).
LONG_PAUSE_MS = 500
END_OF_SCRIPT = [{"kind": "text", "text": "(end of script)"}, {"kind": "done", "stop_reason": "end_turn"}]


class FakeBackend(Backend):
    """Replays `calls[k]` for the k-th model call of a session; no network, same answers in every process."""

    name = "fake"
    offline = True
    uses_call_index = True  # picks the scripted call by its place in the session
    default_model = "fake"

    def __init__(self, script: dict[str, Any] | None = None, *, sleep: Any = time.sleep) -> None:
        self._script = script
        self._sleep = sleep
        # What the engine sent (for tests); bounded, since a long-running server replays scripts forever.
        self.requests: deque[dict[str, Any]] = deque(maxlen=REQUESTS_KEPT)

    def script(self) -> dict[str, Any]:
        if self._script is not None:
            return self._script
        path = settings.AGENT_FAKE_SCRIPT
        if not path:
            return {"calls": []}
        return _load_script(path)

    def check(self) -> list[str]:
        path = settings.AGENT_FAKE_SCRIPT
        if path and not Path(path).is_file():
            return [f"AGENT_FAKE_SCRIPT names {path!r}, which is not a readable file."]
        return []

    def stream(
        self,
        *,
        system: str,
        messages: list[NeutralMessage],
        tools: list[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[ModelEvent]:
        self.requests.append(
            {"system": system, "messages": messages, "tools": tools, "model": model, "inference": inference or {}}
        )
        ctx = call_context.get()
        if ctx is not None and ctx.purpose == "summary":
            return self._replay(summary_events(messages))
        index = (
            ctx.call_index
            if ctx and ctx.call_index is not None
            else sum(1 for m in messages if m["role"] == "assistant")
        )
        calls = self.script().get("calls", [])
        events = calls[index] if index < len(calls) else END_OF_SCRIPT
        return self._replay(events)

    def _replay(self, events: Sequence[Mapping[str, Any]]) -> Iterator[ModelEvent]:
        done = False
        interrupt = current_interrupt() if self._sleep is time.sleep else None
        for raw in events:
            if len(raw) == 2 and raw["kind"] == "text":  # once per token: a token and nothing else (no pause)
                yield cast(TextEvent, raw)  # (as scripted: its readers only read it)
                continue
            delay = raw.get("delay_ms", 0)
            if interrupt is not None and delay >= LONG_PAUSE_MS:
                if interrupt.wait(delay / 1000):  # a Stop ends a long pause, as it cuts a real adapter's read
                    raise BackendError("The stream was cut by a Stop.", retryable=False)
            elif delay:
                self._sleep(delay / 1000)  # (a short one is slept: the loop sees a Stop at the next event)
            if raw["kind"] == "text":  # only what a text event carries, no copy of the rest
                yield {"kind": "text", "text": raw["text"]}
                continue
            ev = dict(raw)
            ev.pop("delay_ms", None)
            if ev["kind"] == "error":
                raise BackendError(ev.get("message", "scripted failure"), retryable=bool(ev.get("retryable")))
            if ev["kind"] == "done":
                ev["usage"] = {**zero_usage(), **(ev.get("usage") or {})}
                ev.setdefault("stop_reason", "end_turn")
                done = True
            yield cast(ModelEvent, ev)  # (a script's event is JSON in the §3 shapes: the script's word for it)
            if done:
                return
        if not done:
            yield {"kind": "done", "stop_reason": "end_turn", "usage": zero_usage()}


_parsed: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}


def _load_script(path: str) -> dict[str, Any]:
    """The parsed script file, parsed again only when the file changes (tests rewrite it between turns).

    Callers only read it: `_replay` copies each event before changing it, and hands out as scripted
    only a text event with nothing else in it, which its readers (the loop, a summary) only read.
    """
    stat = os.stat(path)
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == version:
        return cached[1]
    script = json.loads(Path(path).read_text())
    _parsed.clear()  # one script at a time is the norm; never let the cache grow
    _parsed[path] = (version, script)
    return script


def summary_events(messages: Sequence[NeutralMessage]) -> list[ModelEvent]:
    """A deterministic stand-in for a model-written summary: how much it condensed, and the first line.
    The request to condense is one user message of one text part (`context.summarize`)."""
    part = messages[-1]["parts"][0] if messages else None
    text = part["text"] if part is not None and part["type"] == "text" else ""
    lines = [line for line in text.splitlines()[1:] if line.strip()]
    first = lines[0][:120] if lines else ""
    return [
        {"kind": "text", "text": f"Summary of {len(lines)} earlier lines. It began: {first}"},
        {
            "kind": "done",
            "stop_reason": "end_turn",
            "usage": {**zero_usage(), "input_tokens": len(text) // 4, "output_tokens": 20},
        },
    ]
