"""What every scenario shares: the fake script, the SSE bytes, the environment, small stats helpers.

No Django import here: the bare app and the load client use this module too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PG_BASE = "postgres://postgres@127.0.0.1:5432"  # the PostgreSQL the PostgreSQL scenarios make their databases on
TOKEN_TEXT = "lorem "
USAGE = {"input_tokens": 900, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}


def script(tokens: int, delay_ms: int) -> dict[str, Any]:
    """The fake backend's script (CONTRACT §5): one model call of `tokens` text events, `delay_ms` apart."""
    token = {"kind": "text", "text": TOKEN_TEXT, **({"delay_ms": delay_ms} if delay_ms else {})}
    events: list[dict[str, Any]] = [dict(token) for _ in range(tokens)]
    events.append({"kind": "done", "stop_reason": "end_turn", "usage": {**USAGE, "output_tokens": tokens}})
    return {"calls": [events]}


def write_script(tokens: int, delay_ms: int) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"script_{tokens}x{delay_ms}ms.json"
    path.write_text(json.dumps(script(tokens, delay_ms)))
    return path


def sse(name: str, payload: Any, event_id: int | None = None) -> bytes:
    """The same bytes as agent.sse.encode_json (JSON flavour, CONTRACT §4), without Django."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {name}\ndata: {json.dumps(payload, separators=(',', ':'), ensure_ascii=False)}\n\n".encode()


def server_env(db_url: str, script_path: Path, root: Path = ROOT, **extra: str) -> dict[str, str]:
    """The environment of every server and helper of the tree at `root`: production settings, limits
    and budgets off, the fake. Settings one tree does not know are ignored by it."""
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DEBUG": "0",  # DEBUG=1 would keep every query in memory
            "SECRET_KEY": "bench-only-secret-key-not-for-production-0123456789",
            "SECURE_SSL_REDIRECT": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DATABASE_URL": db_url,
            "AGENT_BACKEND": "fake",
            "AGENT_FAKE_SCRIPT": str(script_path),
            "AGENT_MESSAGES_PER_MINUTE": "0",
            "AGENT_BUDGET_TOKENS_PER_MINUTE": "0",
            "AGENT_BUDGET_TOKENS_PER_HOUR": "0",
            "AGENT_BUDGET_USD_PER_MONTH": "0",
            "AGENT_BUDGET_GLOBAL_USD_PER_MONTH": "0",
            "LOG_LEVEL": "WARNING",
            "WEB_CONCURRENCY": "1",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(root),
        }
    )
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update(extra)
    return env


def pct(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) by nearest rank; None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))
    return s[k]
