"""What the two HTTP adapters share (the OpenAI-compatible one and Anthropic's): one `httpx.Client`
per backend, transport failures as `BackendError`, the two event deadlines with the watchdog under
them, retries before the first event, and the checks of their settings.

A subclass says what differs: its request body (`request_body`), where it goes (`url`) with which
`headers`, how an error answer reads (`status_error`), and how the streamed answer becomes neutral
events (`events`); optionally which error answer is the provider's content filter refusing the prompt
(`withheld`).
"""

from __future__ import annotations

import json
import math
import re
import time
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any, TypedDict
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from agent import logcontext
from agent.backends.base import Backend, Event, interruptible, setting, zero_usage
from agent.backends.retry import stream_with_retries
from agent.backends.sse import SSEEvent, iter_sse
from agent.backends.tls import tls_error
from agent.backends.watchdog import Watchdog, cut_response, each_expecting
from agent.exceptions import BackendError
from agent.values import NeutralMessage, ToolSpec

logger = logcontext.get_logger("agent.backends")

#: The longest error message an adapter passes on (it reaches logs, never a person).
MAX_MESSAGE_CHARS = 600
CONNECT_TIMEOUT_SECONDS = 10.0
#: What servers say when the request is longer than the model's context window (in lower case).
CONTEXT_MARKERS = (
    "context_length_exceeded",  # OpenAI, vLLM, most compatible servers
    "maximum context length",
    "context window",
    "exceeds the available context size",  # llama.cpp (type `exceed_context_size_error`)
    "exceed_context_size",
    "input token count",  # Gemini: "The input token count (…) exceeds the maximum number of tokens allowed"
    "exceeds the maximum number of tokens",
    "prompt is too long",  # Anthropic-style: "prompt is too long: 210000 tokens > 200000 maximum"
    "exceed context limit",  # Anthropic: "input length and `max_tokens` exceed context limit: …"
)


#: A key shorter than this is a placeholder a local server ignores (`x`, `none`, `ollama`), not a secret:
#: it is scrubbed only where it stands alone, or every "x" of an error would read "[redacted]".
SHORT_KEY = 16


def scrub(text: str, secret: str) -> str:
    """`text` without the API key in it, as it is or as an error quotes it (escaped, or as bytes)."""
    if not secret:
        return text
    quoted = repr(secret)[1:-1], repr(secret.encode("utf-8", "replace"))[2:-1]
    for form in sorted({secret, *quoted}, key=len, reverse=True):
        if len(secret) >= SHORT_KEY:
            text = text.replace(form, "[redacted]")
        else:
            text = re.sub(rf"(?<![\w-]){re.escape(form)}(?![\w-])", "[redacted]", text)
    return text


def header_safe(value: str) -> bool:
    """Whether `value` is printable ASCII with no space: what an API key is, and what a header carries."""
    return value.isascii() and value.isprintable() and not any(c.isspace() for c in value)


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait from `retry-after-ms`, `Retry-After` (seconds or HTTP date), else `X-RateLimit-Reset`.

    The last is OpenRouter's, sent with its 429s instead of `Retry-After`: when the limit resets, in epoch
    milliseconds. Read as epoch seconds when it is too small for milliseconds, and as seconds from now when
    it is too small to be a time at all (the header has no standard; these are the shapes servers send).
    """
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(float(millis) / 1000, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return _ratelimit_reset(headers.get("x-ratelimit-reset"))
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, IndexError):
        return None


def _ratelimit_reset(value: str | None) -> float | None:
    try:
        reset = float(value) if value else None
    except ValueError:
        return None
    if reset is None or not math.isfinite(reset) or reset < 0:
        return None
    if reset >= 1e11:  # epoch milliseconds (1e11 ms is 1973; 1e11 s is far beyond any reset)
        return max(reset / 1000 - time.time(), 0.0)
    if reset >= 1e9:  # epoch seconds (2001 onwards)
        return max(reset - time.time(), 0.0)
    return reset


def error_body(response: httpx.Response) -> Any:
    """An HTTP error answer's body (already read): its JSON, else `{"message": <its first text>}` (an
    HTML page's title, when it has one: a proxy's `502 Bad Gateway` page)."""
    try:
        return json.loads(response.content[:65536])
    except (ValueError, RecursionError):
        if is_html(response) and (title := html_title(response.content)):
            return {"message": f"{title} (an HTML page)"}
        return {"message": response.content[:300].decode("utf-8", "replace").strip() or response.reason_phrase}


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)


def is_html(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").split(";")[0].strip().lower() in (
        "text/html",
        "application/xhtml+xml",
    )


def html_title(content: bytes) -> str:
    """An HTML page's title, spaces collapsed and bounded; empty when it has none."""
    match = _TITLE.search(content[:65536])
    return " ".join(match.group(1).decode("utf-8", "replace").split())[:120] if match else ""


def endpoint(response: httpx.Response) -> str:
    """Where the request went, for a log line: scheme, host, port and path (no query, no user info)."""
    url = response.request.url
    return f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}{url.path}"


@contextmanager
def transport_errors(secret: str) -> Iterator[None]:
    """No httpx exception leaves this block: transport failures become BackendError."""
    try:
        yield
    except UnicodeEncodeError as exc:  # (httpx encodes header values as ASCII; `check()` names the key)
        raise BackendError("A request header holds a non-ASCII character (is the API key pasted whole?).") from exc
    except httpx.TimeoutException as exc:
        raise BackendError(f"Timed out waiting for the model server ({type(exc).__name__}).", retryable=True) from exc
    except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
        if (tls := tls_error(exc, server="the model server")) is not None:
            raise tls from exc
        message = scrub(
            f"Lost or could not open the connection to the model server ({type(exc).__name__}: {exc}).", secret
        )
        raise BackendError(message[:MAX_MESSAGE_CHARS], retryable=True) from exc
    except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as exc:
        message = scrub(f"Could not call the model server ({type(exc).__name__}: {exc}).", secret)
        raise BackendError(message[:MAX_MESSAGE_CHARS], retryable=False) from exc


def enforce_deadlines(
    events: Iterable[SSEEvent], *, started: float, first: float, between: float, clock: Callable[[], float]
) -> Iterator[SSEEvent]:
    """Fail when the first data event comes later than `first` seconds after the request, or a later one
    more than `between` seconds after the previous; comments (keep-alives) do not count as events."""
    last, limit = started, first
    for item in events:
        now = clock()
        if now - last > limit:
            raise BackendError(f"The model server sent no event for {limit:g} seconds.", retryable=True)
        if not item.comment:
            last, limit = now, between
        yield item


class HttpOptions(TypedDict, total=False):
    """`HttpBackend`'s constructor options, for a subclass that adds its own (`**options: Unpack[HttpOptions]`);
    each left out (or None) is read from the settings."""

    base_url: str | None
    api_key: str | None
    first_event_timeout: float | None
    event_timeout: float | None
    retries: int | None
    sleep: Callable[[float], None]


class HttpBackend(Backend, metaclass=ABCMeta):
    """A model API streamed over HTTP with server-sent events.

    Timeouts: connecting may take 10 s. `first_event_timeout` bounds the wait from sending the request
    to the first SSE data event; `event_timeout` bounds each later gap between data events. httpx only
    has one read timeout per request, so the socket read timeout is `max(first, event)` (it bounds
    the wait for the response headers), and once the headers are in a `Watchdog` holds each event to
    its own deadline, cutting the connection under a read that waits longer: a server that goes
    silent after its first event is cut after `event_timeout`, not the longer of the two. The
    deadlines are also checked on every line received, so `:` keep-alive comments hide nothing.
    """

    #: The settings that name the endpoint and the key (read when the constructor is not given them, and
    #: named by `check()`), the endpoint when neither names one, and the host that needs a key.
    url_setting = ""
    key_setting = ""
    default_base_url = ""
    keyed_host = ""
    #: Other hosted APIs that refuse a call without a key (a host ending with one of these).
    keyed_hosts: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        base_url = str(setting(base_url, self.url_setting, self.default_base_url))
        self.base_url = base_url.strip().rstrip("/")  # (a CRLF `.env` leaves a `\r` after it)
        # (a key read from a secrets file or a CRLF `.env` ends in a line break)
        self.api_key = str(setting(api_key, self.key_setting) or "").strip()
        self._wire_limits(first_event_timeout, event_timeout, retries, sleep)
        self.max_tokens = int(getattr(settings, "AGENT_MAX_TOKENS", 4096))
        self._clock = time.monotonic
        read = max(self.first_event_timeout, self.event_timeout)
        self._client = httpx.Client(
            timeout=httpx.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=read, write=30.0, pool=10.0),
            limits=httpx.Limits(max_connections=2000, max_keepalive_connections=200),
        )

    def close(self) -> None:
        self._client.close()

    # --- what a subclass says (abstract: a subclass that leaves one out cannot be made) ---

    @abstractmethod
    def request_body(
        self,
        *,
        system: str,
        messages: Sequence[NeutralMessage],
        tools: Sequence[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The JSON body of one streamed call."""

    @abstractmethod
    def url(self) -> str:
        """Where the body is POSTed."""

    @abstractmethod
    def headers(self, body: dict[str, Any]) -> dict[str, str]:
        """The headers of the request that sends `body` (its key among them)."""

    @abstractmethod
    def status_error(self, response: httpx.Response) -> BackendError:
        """An HTTP error answer (its body already read) as the BackendError it means."""

    @abstractmethod
    def events(self, response: httpx.Response, started: float, watchdog: Watchdog) -> Iterator[Event]:
        """The neutral events of a streamed answer (read them with `deadlined`)."""

    # --- the shared work ---

    def stream(
        self,
        *,
        system: str,
        messages: list[NeutralMessage],
        tools: list[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        body = self.request_body(system=system, messages=messages, tools=tools, model=model, inference=inference)
        yield from stream_with_retries(
            lambda: self._attempt(body), retries=self.retries, sleep=self._sleep, label=self.name
        )

    def withheld(self, response: httpx.Response) -> bool:
        """Whether an HTTP error answer (its body read) is the provider's content filter refusing the prompt."""
        return False

    def redirected(self, response: httpx.Response) -> BackendError:
        """A redirect (`http://` for an `https://` server, a moved API): where it points, and what to set."""
        target = response.request.url.join(response.headers["location"]).copy_with(query=None, fragment=None)
        return BackendError(
            f"The model server at {endpoint(response)} redirects to {target} (HTTP {response.status_code}): set "
            f"{self.url_setting} to the address it redirects to, without {self.url().removeprefix(self.base_url)}.",
            retryable=False,
        )

    def not_the_api(self, response: httpx.Response) -> BackendError:
        """A success answered with an HTML page: the base URL reaches a web server, not the API."""
        title = html_title(response.content)
        return BackendError(
            f"The model server answered HTTP {response.status_code} with an HTML page"
            + (f" ({title})" if title else "")
            + f", not an event stream, at {endpoint(response)}: is {self.url_setting} the API's address?",
            retryable=False,
        )

    def deadlined(self, chunks: Iterable[bytes], started: float, watchdog: Watchdog) -> Iterator[SSEEvent]:
        """The SSE events of a response's bytes, each held to its deadline (`enforce_deadlines`, the watchdog)."""
        events = enforce_deadlines(
            iter_sse(chunks),
            started=started,
            first=self.first_event_timeout,
            between=self.event_timeout,
            clock=self._clock,
        )
        return each_expecting(events, watchdog, self.event_timeout)

    def _attempt(self, body: dict[str, Any]) -> Iterator[Event]:
        started = self._clock()
        with transport_errors(self.api_key):
            with self._client.stream("POST", self.url(), json=body, headers=self.headers(body)) as response:
                if response.status_code >= 300:
                    response.read()
                    if response.is_redirect:  # (httpx follows none: a POST must not be re-sent elsewhere)
                        raise self.redirected(response)
                    if self.withheld(response):  # the answer, withheld: not a failure to try again
                        logger.warning(
                            "%s: the model server's content filter withheld the answer (HTTP %d at %s)",
                            self.name,
                            response.status_code,
                            endpoint(response),
                        )
                        yield {"kind": "done", "stop_reason": "content_filtered", "usage": zero_usage()}
                        return
                    raise self.status_error(response)
                if is_html(response):  # (a base URL that reaches a web site or a proxy's page, not the API)
                    response.read()
                    raise self.not_the_api(response)
                cut = lambda: cut_response(response)  # noqa: E731 - the watchdog's and a Stop's
                watchdog = Watchdog(cut, clock=self._clock)
                first_left = max(self.first_event_timeout - (self._clock() - started), 0.0)
                watchdog.expect(first_left, limit=self.first_event_timeout)
                try:
                    with interruptible(cut):
                        yield from self.events(response, started, watchdog)
                except Exception as exc:
                    if watchdog.fired is None:
                        raise
                    message = f"The model server sent no event for {watchdog.fired:g} seconds."
                    raise BackendError(message, retryable=True) from exc
                finally:
                    watchdog.stop()

    def check(self) -> list[str]:
        problems = []
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"{self.url_setting} must be an http:// or https:// URL; got {self.base_url!r}.")
        elif (added := self.url().removeprefix(self.base_url)) and self.base_url.endswith(added):
            problems.append(
                f"{self.url_setting} names the endpoint: the backend adds {added} itself, so set it to "
                f"{self.base_url.removesuffix(added)}."
            )
        host = (parts.hostname or "").lower()
        keyed = [self.keyed_host, *self.keyed_hosts] if self.keyed_host else list(self.keyed_hosts)
        if not self.api_key and host and any(host == k or host.endswith("." + k) for k in keyed):
            problems.append(f"{self.key_setting} is not set, and {host} needs one.")
        if self.api_key and not header_safe(self.api_key):  # (never echoed: it is a secret)
            problems.append(
                f"{self.key_setting} holds a space, a control character or a non-ASCII character (such as a "
                "typographic quote), which no API key has: set the key alone."
            )
        if self.first_event_timeout <= 0 or self.event_timeout <= 0:
            problems.append("AGENT_FIRST_EVENT_TIMEOUT_SECONDS and AGENT_EVENT_TIMEOUT_SECONDS must be positive.")
        if self.retries < 0:
            problems.append("AGENT_RETRIES must be zero or more.")
        return problems
