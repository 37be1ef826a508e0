"""What a stream's client lacks of a turn once the bus's copy of it stopped short: the rest, from the transcript.

A stream on another worker sends the turn's events as the bus copies them (`agent.follow`). When
the copy stops before the turn's terminal event (Redis went away, or answered `2-0`: the turn went
off the bus; or the turn ended without its terminal event reaching the bus), the turn still writes
each message to the transcript. The stream then reads the transcript as it is written and sends,
through `Sent`, only what its client did not have: the rest of a text or reasoning part whose
beginning it had as tokens, then every later part whole.

Why this lines up: a persisted message holds what the turn streamed for it, in order (a model
call's answer; a tool cycle's results, then its effects), each run of tokens (or of reasoning)
joined into one part (`follow._message_events`). So the events the client had, with their runs
joined the same way, are the transcript's events up to where the copy stopped, the last run
perhaps only begun. `Sent` walks the transcript's events along them.

Where they differ, nothing is sent that would read wrong: a text part that does not continue what
the client had at that place (a token trimmed off the bus, say) is left out; a tool call the
transcript lacks (a failed or stopped model call drops its calls) is stepped over; a tool event
or effects the client never had (a call answered as an orphan after a failure) is sent, since it
stands alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

TEXTS = frozenset(("token", "reasoning"))
TOOLS = frozenset(("tool_use", "tool_result"))

# (event name, value): the run's text for token and reasoning, the call's id for tool events, "" for effects
Unit = tuple[str, str]


@dataclass
class Sent:
    """The events a client had of a turn, as units, and how far the transcript has matched them."""

    units: list[Unit] = field(default_factory=list)
    at: int = 0  # the unit the next transcript event is matched against
    offset: int = 0  # how much of `units[at]`'s text earlier transcript parts matched

    @classmethod
    def of(cls, names: Sequence[str], payloads: Sequence[Any]) -> Sent:
        """From the events the client had (heartbeats, and events trimmed off the bus, are skipped)."""
        gathered: list[tuple[str, list[str]]] = []  # runs of text gathered before they are joined
        for name, payload in zip(names, payloads, strict=True):
            if name in TEXTS:
                if not payload["text"]:
                    continue
                if gathered and gathered[-1][0] == name:
                    gathered[-1][1].append(payload["text"])
                else:
                    gathered.append((name, [payload["text"]]))
            elif name in TOOLS:
                gathered.append((name, [payload["id"]]))
            elif name == "effects":
                gathered.append((name, []))
        return cls([(name, "".join(texts)) for name, texts in gathered])

    def missing(self, events: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
        """Of a persisted message's events, in order, those the client lacks (a text part's rest alone)."""
        for name, payload in events:
            event = self._match(name, payload)
            if event is not None:
                yield event

    def _match(self, name: str, payload: Any) -> tuple[str, Any] | None:
        if self.at >= len(self.units):
            return name, payload  # past all the client had
        kind, value = self.units[self.at]
        if name in TEXTS:
            return self._text(name, payload["text"], kind, value)
        if name in TOOLS:
            for later in range(self.at, len(self.units)):
                if self.units[later] == (name, payload["id"]):
                    self.at, self.offset = later + 1, 0  # (units before it: calls the transcript lacks)
                    return None
            return name, payload
        if name == "effects" and kind == name:
            self.at, self.offset = self.at + 1, 0
            return None
        return name, payload

    def _text(self, name: str, text: str, kind: str, had: str) -> tuple[str, Any] | None:
        if kind != name:
            return None  # text where the client had something else: it would read out of place
        if had.startswith(text, self.offset):  # had whole (one run may be several parts)
            self.offset += len(text)
            if self.offset == len(had):
                self.at, self.offset = self.at + 1, 0
            return None
        begun = had[self.offset :]
        self.at, self.offset = self.at + 1, 0
        if self.at == len(self.units) and text.startswith(begun):  # the part the copy stopped in
            return name, {"text": text[len(begun) :]}
        # It does not continue what the client had (or the client had more after it): sending its
        # rest would glue text in the wrong place, so this part is left out.
        return None
