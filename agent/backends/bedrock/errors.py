"""Bedrock failures → BackendError: ClientError codes and HTTP statuses, exception events inside the
stream, and botocore, urllib3 and socket failures; key ids, signatures and secrets are scrubbed out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent.backends.tls import tls_error
from agent.exceptions import BackendError

# In-stream exception members of ConverseStreamOutput (lower camel case) and their HTTP-level names.
STREAM_EXCEPTION_KEYS = frozenset(
    {
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
_RETRYABLE_CODES = frozenset(
    {
        "throttlingexception",
        "toomanyrequestsexception",
        "serviceunavailableexception",
        "serviceunavailable",
        "internalserverexception",
        "internalfailure",
        "modelnotreadyexception",
        "modeltimeoutexception",
        "modelstreamerrorexception",
        "requesttimeout",
        "requesttimeoutexception",
    }
)
_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_TOO_LONG_RE = re.compile(
    r"(input|prompt|request|conversation) is too long|too many (input )?tokens|context (length|window|limit)"
    r"|maximum context"
    r"|exceeds? (the )?(max|maximum) (number of )?(input )?tokens",
    re.IGNORECASE,
)
_SECRET_RES = (
    re.compile(r"\b(AKIA|ASIA|AIDA|AROA)[A-Z0-9]{12,}\b"),
    re.compile(r"(Credential|Signature|X-Amz-Security-Token|aws_secret_access_key)\s*[=:]\s*\S+", re.IGNORECASE),
)


def _scrub(text: str, limit: int = 500) -> str:
    """Provider text for a log line: no key ids, signatures or secrets, bounded length."""
    for pattern in _SECRET_RES:
        text = pattern.sub("[redacted]", text)
    return text[:limit]


def error_from_code(
    code: str, message: str, status: int | None, retry_after: float | None, *, in_stream: bool = False
) -> BackendError:
    key = code.lower()
    retryable = key in _RETRYABLE_CODES or status in _RETRYABLE_STATUSES
    too_long = key == "validationexception" and bool(_TOO_LONG_RE.search(message))
    where = "in the stream" if in_stream else (f"HTTP {status}" if status else "before the stream")
    return BackendError(
        f"Bedrock error {code} ({where}): {_scrub(message) or 'no message'}",
        retryable=retryable,
        retry_after=retry_after if retryable else None,
        context_too_long=too_long,
    )


def _from_client_error(exc: Any) -> BackendError:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error") or {}
    metadata = response.get("ResponseMetadata") or {}
    status = metadata.get("HTTPStatusCode")
    retry_after = _retry_after((metadata.get("HTTPHeaders") or {}).get("retry-after"))
    in_stream = type(exc).__name__ == "EventStreamError"
    return error_from_code(
        str(error.get("Code") or "Unknown"), str(error.get("Message") or ""), status, retry_after, in_stream=in_stream
    )


def _retry_after(value: Any) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None


def _from_other_error(exc: BaseException) -> BackendError | None:
    """botocore, urllib3 and socket failures → BackendError; None for anything else."""
    import botocore.exceptions as bex
    import urllib3.exceptions as uex
    from botocore.eventstream import ParserError

    name = type(exc).__name__
    if isinstance(exc, bex.NoRegionError):
        return BackendError("Bedrock has no AWS region: set AWS_REGION.", retryable=False)
    if isinstance(exc, bex.NoCredentialsError | bex.PartialCredentialsError):
        return BackendError("Bedrock found no usable AWS credentials.", retryable=False)
    if isinstance(exc, bex.ConnectionError | bex.HTTPClientError | uex.HTTPError | ParserError | OSError):
        if (tls := tls_error(exc, server="Bedrock")) is not None:
            return tls
        return BackendError(f"Bedrock transport failure ({name}): {_scrub(str(exc), 300)}", retryable=True)
    if isinstance(exc, bex.BotoCoreError):
        return BackendError(f"Bedrock client error ({name}): {_scrub(str(exc), 300)}", retryable=False)
    return None


@contextmanager
def map_api_errors() -> Iterator[None]:
    """Let no botocore, urllib3 or socket exception out: each becomes a BackendError."""
    from botocore.exceptions import ClientError

    try:
        yield
    except BackendError:
        raise
    except ClientError as exc:
        raise _from_client_error(exc) from exc
    except Exception as exc:
        mapped = _from_other_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
