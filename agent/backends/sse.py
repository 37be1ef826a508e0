"""A pure server-sent-events reader: `iter_sse(chunks)` over an iterator of byte chunks (any split,
LF or CRLF, comments, multi-line `data:`), yielding `SSEEvent`s."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched SSE event (`event` defaults to "message"), or a comment line (`comment=True`)."""

    event: str
    data: str
    comment: bool = False


class _EventBuilder:
    """Collects the field lines of one SSE event until a blank line dispatches it."""

    def __init__(self) -> None:
        self.event = ""
        self.data: list[str] = []

    def line(self, raw: bytes) -> SSEEvent | None:
        text = raw.decode("utf-8", errors="replace")
        if not text:
            return self.dispatch()
        if text.startswith(":"):
            return SSEEvent("", text[1:].strip(), comment=True)
        name, _, value = text.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self.data.append(value)
        elif name == "event":
            self.event = value
        return None  # `id:`, `retry:` and unknown fields are ignored

    def dispatch(self) -> SSEEvent | None:
        event, data = self.event or "message", self.data
        self.event, self.data = "", []
        return SSEEvent(event, "\n".join(data)) if data else None


def iter_sse(chunks: Iterable[bytes]) -> Iterator[SSEEvent]:
    """Split a byte stream into SSE events; the result does not depend on how the bytes were chunked.

    Lines end in LF or CRLF. Lines are split on bytes before decoding, so a UTF-8 character cut
    between two chunks is decoded whole. An event left unterminated at the end of the body is still
    dispatched (servers that end without the final blank line).
    """
    builder = _EventBuilder()
    partial: list[bytes] = []
    for chunk in chunks:
        if b"\n" not in chunk:
            partial.append(chunk)
            continue
        first, *rest = chunk.split(b"\n")
        lines, tail = [b"".join([*partial, first]), *rest[:-1]], rest[-1]
        partial = [tail] if tail else []
        for line in lines:
            if (item := builder.line(line.removesuffix(b"\r"))) is not None:
                yield item
    if partial and (item := builder.line(b"".join(partial).removesuffix(b"\r"))) is not None:
        yield item
    if (item := builder.dispatch()) is not None:
        yield item
