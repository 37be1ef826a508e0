"""A TLS failure talking to a model server, as one sentence for the operator's log.

httpx and botocore pass OpenSSL's own text on (`[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify
failed: self-signed certificate (_ssl.c:1006)`, botocore with the whole request URL before it): a
library code in brackets and a line of C. The `ssl` exception under theirs (reached through the
exceptions' cause and context, as Python chains them) gives the parts the `ssl` module documents:
`verify_message` for a certificate this host does not trust, `reason` for anything else.
"""

from __future__ import annotations

import ssl

from agent.exceptions import BackendError


def ssl_error_under(exc: BaseException) -> ssl.SSLError | None:
    """The `ssl.SSLError` that `exc` was raised from or while handling, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def tls_error(exc: BaseException, *, server: str) -> BackendError | None:
    """A BackendError saying in one sentence what went wrong with TLS to `server`, or None when `exc`
    came from no TLS failure.

    A certificate this host does not trust is not retryable: the next attempt meets the same one, and
    the person is told at once that trying again won't help. Other TLS failures (a connection cut in a
    handshake, a plain-HTTP port) stay retryable, as any transport failure.
    """
    error = ssl_error_under(exc)
    if error is None:
        return None
    if isinstance(error, ssl.SSLCertVerificationError):
        why = str(error.verify_message or "").rstrip(".") or "unknown reason"
        return BackendError(
            f"TLS handshake with {server} failed: certificate verify failed: {why}. "
            "Check the address and that this host trusts its certificate.",
            retryable=False,
        )
    reason = (error.reason or type(error).__name__).replace("_", " ").lower()
    return BackendError(f"The TLS connection to {server} failed: {reason}.", retryable=True)
