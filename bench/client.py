"""The load generator: its own process, one asyncio event loop, raw HTTP/1.1 over asyncio Protocols.

For each manifest row: connect, `POST /api/agent/sessions/<id>/messages` (session cookie + CSRF
header), read the 202, then `GET <stream_url>` on the same keep-alive connection and read the SSE
stream to `done`. With `--follow-port P` the stream is read from another server instead (a new
connection to port P): the turn runs on one server and its stream follows it on the other
(`bench/cross.py`). Starts are spread evenly over `--ramp` seconds; the whole run stops by itself
at `--deadline` seconds (unfinished streams count as errors). Prints one JSON object.

    python -m bench.client --port 8000 --manifest m.json --tokens 200 --delay-ms 50
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from array import array
from collections import Counter

from bench.common import pct

now = time.monotonic


class Stream(asyncio.Protocol):
    __slots__ = (
        "row",
        "run",
        "transport",
        "buf",
        "phase",
        "status",
        "chunked",
        "need",
        "body_left",
        "sse",
        "t0",
        "t_first",
        "t_last",
        "tokens",
        "finished",
        "sent_get",
        "url",
        "drops",
    )

    def __init__(self, row: dict, run: Run) -> None:
        self.row, self.run = row, run
        self.transport = None
        self.buf = b""
        self.phase = "post_head"
        self.status = 0
        self.chunked = False
        self.need = -1  # chunk bytes still to read (-1: expecting a size line)
        self.body_left = 0
        self.sse = b""
        self.t0 = now()
        self.t_first = 0.0
        self.t_last = 0.0
        self.tokens = 0
        self.finished = False
        self.url = b""
        self.drops = 0  # connections closed on purpose (the POST's, when the stream is read elsewhere)

    # --- transport callbacks
    def connection_made(self, transport) -> None:
        self.transport = transport
        if self.phase == "get_head":  # the stream's own connection, to the other server
            self._get()
            return
        body = json.dumps({"text": "Write me something."}).encode()
        r = self.run
        self.transport.write(
            b"POST /api/agent/sessions/%s/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nCookie: %s\r\nX-CSRFToken: %s\r\n\r\n%s"
            % (
                self.row["session"].encode(),
                r.host,
                len(body),
                self.row["cookie"].encode(),
                self.row["csrf"].encode(),
                body,
            )
        )

    def connection_lost(self, exc) -> None:
        if self.drops:
            self.drops -= 1
            return
        if not self.finished:
            self.fail("closed_early" if self.phase != "post_head" else "closed_before_202")

    def data_received(self, data: bytes) -> None:
        if self.finished:
            return
        if self.phase == "sse":
            self._body(data)
            return
        self.buf += data
        if self.phase == "post_head" or self.phase == "get_head":
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4 :]
            lines = head.split("\r\n")
            self.status = int(lines[0].split(" ", 2)[1])
            headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            if self.phase == "post_head":
                if self.status != 202:
                    self.fail(f"post_{self.status}")
                    return
                self.body_left = int(headers.get("content-length", "0"))
                self.phase = "post_body"
            else:
                if self.status != 200:
                    self.fail(f"get_{self.status}")
                    return
                self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
                self.phase = "sse"
                rest, self.buf = self.buf, b""
                if rest:
                    self._body(rest)
                return
        if self.phase == "post_body" and len(self.buf) >= self.body_left:
            body, self.buf = self.buf[: self.body_left], self.buf[self.body_left :]
            self.url = (json.loads(body)["stream_url"] + self.run.query).encode()
            self.phase = "get_head"
            if self.run.follow_port:
                self.drops += 1
                self.transport.close()
                asyncio.ensure_future(self.run.reconnect(self))
            else:
                self._get()

    def _get(self) -> None:
        self.transport.write(
            b"GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nCookie: %s\r\n\r\n"
            % (self.url, self.run.host, self.row["cookie"].encode())
        )

    # --- body: de-chunk, then split SSE events
    def _body(self, data: bytes) -> None:
        if not self.chunked:
            self._events(data)
            return
        buf = self.buf + data if self.buf else data
        i, n, out = 0, len(buf), []
        while i < n:
            if self.need > 0:  # inside a chunk
                take = min(self.need, n - i)
                out.append(buf[i : i + take])
                i += take
                self.need -= take
                if self.need == 0:
                    self.need = -4
            elif self.need == -4:  # the CRLF after a chunk
                if n - i < 2:
                    break
                i += 2
                self.need = -1
            elif self.need == -1:  # a size line
                j = buf.find(b"\r\n", i)
                if j < 0:
                    break
                size = int(buf[i:j].split(b";")[0], 16)
                i = j + 2
                if size == 0:
                    self.need = -2
                    break
                self.need = size
            else:
                break
        self.buf = buf[i:]
        if out:
            self._events(b"".join(out))

    def _events(self, data: bytes) -> None:
        self.sse += data
        while True:
            end = self.sse.find(b"\n\n")
            if end < 0:
                return
            ev, self.sse = self.sse[:end], self.sse[end + 2 :]
            k = ev.find(b"event: ")
            if k < 0:
                continue  # a comment (heartbeat)
            name = ev[k + 7 : ev.find(b"\n", k)]
            if name == b"token":
                t = now()
                if self.tokens:
                    self.run.gaps.append(t - self.t_last)
                else:
                    self.t_first = t
                self.t_last = t
                self.tokens += 1
            elif name == b"done":
                self.finish(None)
                return
            elif name == b"error":
                self.finish("stream_error:" + ev.split(b"data: ", 1)[-1][:60].decode(errors="replace"))
                return

    def fail(self, why: str) -> None:
        self.finish(why)

    def finish(self, error: str | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.run.record(self, error)
        if self.transport is not None:
            self.transport.close()


class Run:
    def __init__(self, host: str, port: int, follow_port: int = 0) -> None:
        self.query = ""
        self.host_name = host
        self.follow_port = follow_port
        self.host = f"{host}:{port}".encode()
        self.gaps = array("d")
        self.ttft: list[float] = []
        self.durations: list[float] = []
        self.spans: list[tuple[float, float]] = []  # (first token, last token) of each stream that streamed
        self.tokens = 0
        self.completed = 0
        self.errors: Counter[str] = Counter()
        self.open = 0
        self.t_end = 0.0
        self.all_done = asyncio.get_event_loop().create_future()
        self.expected = 0

    async def reconnect(self, s: Stream) -> None:
        try:
            await asyncio.get_running_loop().create_connection(lambda: s, self.host_name, self.follow_port)
        except OSError as exc:
            s.fail(f"connect_{type(exc).__name__}")

    def record(self, s: Stream, error: str | None) -> None:
        self.tokens += s.tokens
        if error is None:
            self.completed += 1
            self.durations.append(s.t_last - s.t_first if s.tokens else 0.0)
        else:
            self.errors[error.split(":")[0] if error.startswith("post_") else error] += 1
        if s.tokens:
            self.ttft.append(s.t_first - s.t0)
            self.spans.append((s.t_first, s.t_last))
        self.t_end = max(self.t_end, now())
        if self.completed + sum(self.errors.values()) >= self.expected and not self.all_done.done():
            self.all_done.set_result(None)


async def main_async(args) -> dict:
    rows = json.load(open(args.manifest))[args.skip :][: args.n or None]
    loop = asyncio.get_running_loop()
    run = Run(args.host, args.port, args.follow_port)
    run.query = args.query
    run.expected = len(rows)
    streams: list[Stream] = []
    t_start = now()

    async def open_one(row: dict, at: float) -> None:
        await asyncio.sleep(max(0.0, at - now()))
        s = Stream(row, run)
        streams.append(s)
        try:
            await loop.create_connection(lambda: s, args.host, args.port)
        except OSError as exc:
            s.fail(f"connect_{type(exc).__name__}")

    tasks = [
        asyncio.ensure_future(open_one(r, t_start + args.ramp * i / max(1, len(rows)))) for i, r in enumerate(rows)
    ]
    cpu0 = os.times()
    try:
        await asyncio.wait_for(asyncio.shield(run.all_done), timeout=args.deadline)
    except TimeoutError:
        pass
    cpu1 = os.times()
    for t in tasks:
        t.cancel()
    unfinished = [s for s in streams if not s.finished]
    for s in unfinished:
        s.finish("timeout")
    run.errors["not_started"] += len(rows) - len(streams)
    if not run.errors["not_started"]:
        del run.errors["not_started"]
    wall = (run.t_end or now()) - t_start
    pace = args.delay_ms / 1000
    gaps = list(run.gaps)
    added = [g - pace for g in gaps]
    nominal = (args.tokens - 1) * pace
    client_cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    return {
        "n": len(rows),
        "completed": run.completed,
        "errors": sum(run.errors.values()),
        "error_kinds": dict(run.errors),
        "ttft_p50_ms": _ms(pct(run.ttft, 0.5)),
        "ttft_p99_ms": _ms(pct(run.ttft, 0.99)),
        "ttft_max_ms": _ms(max(run.ttft) if run.ttft else None),
        "gap_added_p50_ms": _ms(pct(added, 0.5)),
        "gap_added_p99_ms": _ms(pct(added, 0.99)),
        "gap_added_max_ms": _ms(max(added) if added else None),
        "stretch_p50": _r(pct(run.durations, 0.5) / nominal) if run.durations and nominal else None,
        "stretch_p99": _r(pct(run.durations, 0.99) / nominal) if run.durations and nominal else None,
        "streams_peak": peak_overlap(run.spans),
        "tokens": run.tokens,
        "wall_s": _r(wall),
        "tokens_per_s": _r(run.tokens / wall) if wall > 0 else None,
        "client_cpu_pct": _r(100 * client_cpu / max(wall, 1e-9)),
    }


def peak_overlap(spans: list[tuple[float, float]]) -> int:
    """The most streams that were between their first and last token at one instant."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], -e[1]))
    peak = live = 0
    for _, step in edges:
        live += step
        peak = max(peak, live)
    return peak


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 1)


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--n", type=int, default=0)
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--delay-ms", type=int, default=50)
    ap.add_argument("--ramp", type=float, default=2.0)
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--query", default="", help="appended to each stream URL, e.g. ?flavour=html")
    ap.add_argument("--follow-port", type=int, default=0, help="read each stream from this server instead")
    args = ap.parse_args()
    if args.host not in ("127.0.0.1", "localhost"):
        sys.exit("bench.client talks to 127.0.0.1 only")
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
