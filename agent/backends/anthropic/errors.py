"""Anthropic failures → BackendError: HTTP error answers (with Retry-After), `error` events in the
stream, and httpx transport failures. The key is scrubbed out of every message, which is bounded."""

from __future__ import annotations

from typing import Any

import httpx

from agent.backends.http import CONTEXT_MARKERS, MAX_MESSAGE_CHARS, endpoint, error_body, retry_after, scrub
from agent.exceptions import BackendError

# Error types that may clear by trying again (the API's own list: 429 rate_limit_error, 500
# api_error, 529 overloaded_error; 504 timeout_error).
RETRYABLE_TYPES = frozenset({"rate_limit_error", "api_error", "overloaded_error", "timeout_error"})
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


def _info(payload: Any) -> dict[str, Any]:
    error = payload.get("error", payload) if isinstance(payload, dict) else None
    return error if isinstance(error, dict) else {"message": str(payload)[:300]}


def _error(info: dict[str, Any], secret: str, where: str, retryable: bool, retry_after: float | None) -> BackendError:
    kind = str(info.get("type") or "")
    text = str(info.get("message") or "no message")
    message = scrub(f"Anthropic API {where}" + (f" ({kind})" if kind else "") + f": {text}", secret)
    message = message[:MAX_MESSAGE_CHARS]
    if any(marker in text.lower() for marker in CONTEXT_MARKERS) and kind == "invalid_request_error":
        return BackendError(message, retryable=False, context_too_long=True)
    return BackendError(message, retryable=retryable, retry_after=retry_after if retryable else None)


def error_event(data: dict[str, Any], secret: str = "") -> BackendError:
    """An `event: error` in the stream (`overloaded_error` mid-answer, for one)."""
    info = _info(data)
    return _error(info, secret, "error in stream", str(info.get("type")) in RETRYABLE_TYPES, None)


def status_error(response: httpx.Response, secret: str = "") -> BackendError:
    """An HTTP error answer (its body already read)."""
    status = response.status_code
    payload = error_body(response)
    info = _info(payload)
    retryable = status in RETRYABLE_STATUSES or str(info.get("type")) in RETRYABLE_TYPES
    return _error(info, secret, f"HTTP {status} at {endpoint(response)}", retryable, retry_after(response.headers))
