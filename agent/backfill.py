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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from agent.values import EventName, LoopEvent, StreamEvent, TokenPayload, unknown_kind

# (event name, value): the run's text for token and reasoning, the call's id for tool events, "" for effects
Unit = tuple[EventName, str]


@dataclass
class Sent:
    """The events a client had of a turn, as units, and how far the transcript has matched them."""

    units: list[Unit] = field(default_factory=list)
    at: int = 0  # the unit the next transcript event is matched against
    offset: int = 0  # how much of `units[at]`'s text earlier transcript parts matched

    @classmethod
    def of(cls, events: Iterable[StreamEvent]) -> Sent:
        """From the events the client had (heartbeats, and events trimmed off the bus, are skipped)."""
        gathered: list[tuple[EventName, list[str]]] = []  # runs of text gathered before they are joined
        for event in events:
            match event[0]:
                case "token" | "reasoning":
                    if not event[1]["text"]:
                        continue
                    if gathered and gathered[-1][0] == event[0]:
                        gathered[-1][1].append(event[1]["text"])
                    else:
                        gathered.append((event[0], [event[1]["text"]]))
                case "tool_use" | "tool_result":
                    gathered.append((event[0], [event[1]["id"]]))
                case "effects":
                    gathered.append((event[0], []))
                case "error" | "done" | "confirm" | "heartbeat":
                    pass
                case _:
                    unknown_kind(event)  # (skipped)
        return cls([(name, "".join(texts)) for name, texts in gathered])

    def missing(self, events: Iterable[LoopEvent]) -> Iterator[LoopEvent]:
        """Of a persisted message's events, in order, those the client lacks (a text part's rest alone)."""
        for event in events:
            kept = self._match(event)
            if kept is not None:
                yield kept

    def _match(self, event: LoopEvent) -> LoopEvent | None:
        if self.at >= len(self.units):
            return event  # past all the client had
        kind, value = self.units[self.at]
        match event[0]:
            case "token" | "reasoning":
                return self._text(event[0], event[1]["text"], kind, value)
            case "tool_use" | "tool_result":
                for later in range(self.at, len(self.units)):
                    if self.units[later] == (event[0], event[1]["id"]):
                        self.at, self.offset = later + 1, 0  # (units before it: calls the transcript lacks)
                        return None
                return event
            case "effects":
                if kind == "effects":
                    self.at, self.offset = self.at + 1, 0
                    return None
                return event
            case "error" | "done" | "confirm":
                return event
            case _:
                unknown_kind(event)
                return event

    def _text(
        self, name: Literal["token", "reasoning"], text: str, kind: EventName, had: str
    ) -> tuple[Literal["token", "reasoning"], TokenPayload] | None:
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
            rest: TokenPayload = {"text": text[len(begun) :]}
            return name, rest
        # It does not continue what the client had (or the client had more after it): sending its
        # rest would glue text in the wrong place, so this part is left out.
        return None
