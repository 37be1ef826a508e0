"""OpenAI-compatible failures -> BackendError: `error` payloads (in the stream or as an HTTP body) and
HTTP statuses with their Retry-After (transport failures: `agent.backends.http`). Every message is
bounded and has the API key scrubbed out."""

from __future__ import annotations

from typing import Any

import httpx

from agent.backends.http import CONTEXT_MARKERS, MAX_MESSAGE_CHARS, endpoint, error_body, retry_after, scrub
from agent.exceptions import BackendError

RETRYABLE_MARKERS = ("server_error", "overloaded", "rate_limit", "internal_error", "service_unavailable")
# Out of money or credits: a 429 that waiting cannot clear (OpenAI's `insufficient_quota`).
QUOTA_MARKERS = ("insufficient_quota", "billing_hard_limit", "insufficient_credits")


def as_int(value: Any) -> int | None:
    """A wire number (int, integral float or digit string) as an int; None otherwise, bools included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def count(value: Any) -> int:
    """A wire count (`as_int`) that is positive, else 0: a token count never goes below nothing."""
    number = as_int(value)
    return number if number is not None and number > 0 else 0


def _is_retryable(info: dict[str, Any]) -> bool:
    if _is_quota(info):
        return False
    numbers = [as_int(info.get(key)) for key in ("code", "status", "status_code")]
    if any(n is not None and (n in (408, 409, 429) or n >= 500) for n in numbers):
        return True
    words = " ".join(str(info.get(key) or "") for key in ("code", "type", "status")).lower()
    return any(marker in words for marker in RETRYABLE_MARKERS)


def _is_quota(info: dict[str, Any]) -> bool:
    words = " ".join(str(info.get(key) or "") for key in ("code", "type", "status")).lower()
    return any(marker in words for marker in QUOTA_MARKERS)


def _is_context_overflow(info: dict[str, Any]) -> bool:
    words = " ".join(str(info.get(key) or "") for key in ("code", "type", "message")).lower()
    return any(marker in words for marker in CONTEXT_MARKERS)


def payload_error(error: Any, secret: str = "", status: int | None = None, url: str = "") -> BackendError:
    """An `error` object (mid-stream chunk, `event: error` data, or an HTTP error body, with the `url` it
    came from) -> BackendError."""
    if isinstance(error, list) and error:  # Gemini's OpenAI-compatible endpoint: `[{"error": {...}}]`
        error = error[0]
    if isinstance(error, dict) and "error" in error:
        error = error["error"]
    info: dict[str, Any] = error if isinstance(error, dict) else {"message": str(error)}
    label = info.get("code") or info.get("type") or ""
    where = (f"HTTP {status}" + (f" at {url}" if url else "")) if status is not None else "error in stream"
    message = (
        f"Model server {where}"
        + (f" ({label})" if label else "")
        + f": {info.get('message') or info.get('detail') or 'no message'}"
    )
    message = scrub(message, secret)[:MAX_MESSAGE_CHARS]
    if _is_context_overflow(info):
        return BackendError(message, retryable=False, context_too_long=True)
    return BackendError(message, retryable=_is_retryable(info))


def status_error(response: httpx.Response, secret: str = "") -> BackendError:
    """An HTTP error answer (body already read) -> BackendError with retryability and context flag."""
    status = response.status_code
    payload = error_body(response)
    error = payload_error(payload, secret, status, endpoint(response))
    if error.context_too_long and status != 429:  # (a rate limit may name token counts too)
        return error
    if (status == 429 or status >= 500 or status in (408, 409)) and not _quota_payload(payload):
        return BackendError(str(error), retryable=True, retry_after=retry_after(response.headers))
    return BackendError(str(error), retryable=False)


def _quota_payload(payload: Any) -> bool:
    if isinstance(payload, list) and payload:
        payload = payload[0]
    info = payload.get("error", payload) if isinstance(payload, dict) else None
    return isinstance(info, dict) and _is_quota(info)


def prompt_filtered(response: httpx.Response) -> bool:
    """Azure OpenAI's answer to a prompt its content filter flags: HTTP 400, code `content_filter`."""
    if response.status_code != 400:
        return False
    payload = error_body(response)
    info = payload.get("error") if isinstance(payload, dict) else None
    return isinstance(info, dict) and info.get("code") == "content_filter"
