"""Load through the real server: many concurrent turns for a while, 0 errors, 0 lost messages, flat memory.

The normal suite runs a short form (30 concurrent turns for ~20 s, on whatever DATABASE_URL says).
`make soak` runs the full form: 300 concurrent turns for 5 minutes on PostgreSQL
(SOAK_SECONDS=300 SOAK_CONCURRENCY=300; the Makefile points DATABASE_URL at the local server).

Each virtual user signs in (its own browser session), opens a chat on field-notes, and sends
message after message, reading every stream to its end. A turn is two model calls of the `fake`
backend with delays: a `list_posts` tool call, then an answer streamed word by word. Budgets and
the message rate limit are off. Every 10 turns a user starts a new chat, as people do.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass, field

import httpx

from tests.reliability.conftest import NO_LIMITS, PASSWORD, parse_sse

SECONDS = float(os.environ.get("SOAK_SECONDS", "20"))
CONCURRENCY = int(os.environ.get("SOAK_CONCURRENCY", "30"))
WORKERS = os.environ.get("SOAK_WORKERS", "1")
TURNS_PER_CHAT = 10
WORDS = [f"word{i} " for i in range(12)]
ANSWER = "".join(WORDS)
WARMUP_FRACTION = 0.25
TURN_DEADLINE = 90.0  # a stream that has not ended by then counts as an error (heartbeats keep it open)


def soak_script() -> dict:
    """Turn i of a chat uses calls 2i (a tool call) and 2i+1 (the answer)."""
    calls = []
    for i in range(TURNS_PER_CHAT):
        calls.append(
            [
                {"kind": "tool_use", "id": f"call_{i}", "name": "list_posts", "input": {}, "delay_ms": 300},
                {"kind": "done", "stop_reason": "tool_use", "usage": {"input_tokens": 50, "output_tokens": 5}},
            ]
        )
        calls.append(
            [
                *({"kind": "text", "text": w, "delay_ms": 200} for w in WORDS),
                {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 80, "output_tokens": 12}},
            ]
        )
    return {"calls": calls}


@dataclass
class Stats:
    turns: int = 0
    accepted: int = 0
    errors: list[str] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    first_token: list[float] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    message_ids: list[int] = field(default_factory=list)


def _login(url: str, username: str) -> dict[str, str]:
    """Sign in once (password hashing is deliberately slow) and share the cookies between virtual users."""
    with httpx.Client(base_url=url) as client:
        page = client.get("/accounts/login/")
        response = client.post(
            "/accounts/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": page.cookies["csrftoken"]},
        )
        assert response.status_code == 302, response.text[:300]
        return dict(client.cookies.items())


async def _user(url: str, cookies: dict[str, str], stop_at: float, stats: Stats) -> None:
    limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(120.0), limits=limits, cookies=cookies) as client:
        headers = {"X-CSRFToken": cookies["csrftoken"], "Content-Type": "application/json"}
        sid, in_chat = None, TURNS_PER_CHAT
        while time.monotonic() < stop_at:
            try:
                if in_chat >= TURNS_PER_CHAT:
                    created = await client.post(
                        "/api/agent/sessions", content=b'{"blog": "field-notes"}', headers=headers
                    )
                    assert created.status_code == 201, created.text
                    sid, in_chat = created.json()["id"], 0
                    stats.sessions.add(sid)
                started = time.monotonic()
                text = f"soak message {stats.turns} in {sid}"
                stats.turns += 1
                sent = await client.post(
                    f"/api/agent/sessions/{sid}/messages", content=json.dumps({"text": text}).encode(), headers=headers
                )
                assert sent.status_code == 202, f"{sent.status_code} {sent.text[:200]}"
                stats.accepted += 1
                stats.message_ids.append(sent.json()["message_id"])
                in_chat += 1
                body, first = await asyncio.wait_for(_follow(client, sent.json()["stream_url"], started), TURN_DEADLINE)
                events = parse_sse(body.decode())
                names = [n for n, _ in events]
                assert names.count("done") == 1 and names[-1] == "done" and "error" not in names, names
                tool = [d for n, d in events if n == "tool_result"]
                assert len(tool) == 1 and tool[0]["status"] == "ok", tool
                said = "".join(d["text"] for n, d in events if n == "token")
                assert said == ANSWER, said
                stats.durations.append(time.monotonic() - started)
                if first is not None:
                    stats.first_token.append(first)
            except Exception as exc:  # noqa: BLE001 - every failure is counted and reported
                stats.errors.append(repr(exc)[:300] or type(exc).__name__)
                in_chat = TURNS_PER_CHAT  # start afresh in a new chat


async def _follow(client: httpx.AsyncClient, url: str, started: float) -> tuple[bytes, float | None]:
    body, first = b"", None
    async with client.stream("GET", url) as stream:
        assert stream.status_code == 200
        async for piece in stream.aiter_bytes():
            if first is None and b"event: token" in piece:
                first = time.monotonic() - started
            body += piece
    return body, first


async def _run(url: str, seconds: float, concurrency: int, sample) -> Stats:
    stats = Stats()
    cookies = _login(url, "alice")
    stop_at = time.monotonic() + seconds
    tasks = []
    for _ in range(concurrency):
        tasks.append(asyncio.create_task(_user(url, cookies, stop_at, stats)))
        await asyncio.sleep(min(0.02, seconds / concurrency / 4))  # ramp up
    await asyncio.sleep(seconds * WARMUP_FRACTION)
    sample("warm")
    await asyncio.gather(*tasks)
    sample("end")
    return stats


def _ids(database, sessions: set[str]) -> list[str]:
    return [s if database.postgres else s.replace("-", "") for s in sessions]


def _count(database, sql_text: str, sessions: set[str]) -> int:
    ids, total = _ids(database, sessions), 0
    for i in range(0, len(ids), 200):
        batch = ids[i : i + 200]
        total += database.scalar(sql_text.format(",".join(["%s"] * len(batch))), tuple(batch))
    return total


def test_soak_concurrent_turns_lose_nothing_and_memory_stays_flat(server_factory, rel_workdir):
    script = rel_workdir / "soak-script.json"
    script.write_text(json.dumps(soak_script()))
    server = server_factory(
        "soak",
        {
            **NO_LIMITS,
            # Every virtual user signs in as alice: many users' streams, not one user's, so no per-user cap.
            "AGENT_MAX_STREAMS_PER_USER": "0",
            "AGENT_BACKEND": "fake",
            "AGENT_FAKE_SCRIPT": str(script),
            "WEB_CONCURRENCY": WORKERS,
            "LOG_LEVEL": "WARNING",
        },
    )
    rss: dict[str, int] = {}
    mark = server.mark()
    stats = asyncio.run(_run(server.url, SECONDS, CONCURRENCY, lambda when: rss.__setitem__(when, server.rss_kb())))
    time.sleep(1.0)  # the last turns' greenlets finish their bookkeeping
    db = server.database
    stored = _count(db, "SELECT COUNT(*) FROM agent_message WHERE role = 'user' AND session_id IN ({})", stats.sessions)
    unfinished = _count(
        db, "SELECT COUNT(*) FROM agent_turn WHERE status <> 'done' AND session_id IN ({})", stats.sessions
    )
    uses = _count(
        db,
        "SELECT COUNT(*) FROM agent_part p JOIN agent_message m ON m.id = p.message_id "
        "WHERE p.type = 'tool_use' AND m.session_id IN ({})",
        stats.sessions,
    )
    results = _count(
        db,
        "SELECT COUNT(*) FROM agent_part p JOIN agent_message m ON m.id = p.message_id "
        "WHERE p.type = 'tool_result' AND m.session_id IN ({})",
        stats.sessions,
    )
    durations = sorted(stats.durations)
    report = {
        "seconds": SECONDS,
        "concurrency": CONCURRENCY,
        "workers": WORKERS,
        "database": "postgresql" if db.postgres else "sqlite",
        "turns_started": stats.turns,
        "turns_accepted": stats.accepted,
        "turns_completed": len(durations),
        "errors": len(stats.errors),
        "user_messages_stored": stored,
        "unfinished_turns": unfinished,
        "tool_uses": uses,
        "tool_results": results,
        "turn_seconds_p50": round(statistics.median(durations), 2) if durations else None,
        "turn_seconds_p99": round(durations[int(len(durations) * 0.99) - 1], 2) if durations else None,
        "first_token_p50": round(statistics.median(stats.first_token), 2) if stats.first_token else None,
        "rss_warm_mb": round(rss["warm"] / 1024, 1),
        "rss_end_mb": round(rss["end"] / 1024, 1),
    }
    (rel_workdir.parent / f"soak-report-{os.getpid()}.json").write_text(json.dumps(report, indent=2))
    print("\nSOAK", json.dumps(report))
    assert stats.errors == [], stats.errors[:10]
    assert stats.turns == stats.accepted == len(durations) > 0
    assert stored == stats.accepted, "a user message was lost"
    assert unfinished == 0 and uses == results
    assert "Traceback" not in server.log_since(mark)
    growth = rss["end"] - rss["warm"]
    assert growth < max(40 * 1024, 0.3 * rss["warm"]), f"memory grew {growth / 1024:.0f} MB: {report}"
