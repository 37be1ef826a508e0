"""`BedrockBackend`: one boto3 `bedrock-runtime` client per instance, `converse_stream` with retries.

Timeouts: the client's read timeout is the longer of the first-event and between-events timeouts
(botocore has one read timeout per client); each event's arrival is then checked against the limit
that applies to it, the first-event timeout until the first content event, the between-events
timeout after it, as the OpenAI-compatible adapter does.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

from django.conf import settings

from agent.backends.base import Backend, BackendError, Event, interruptible, setting
from agent.backends.bedrock.errors import map_api_errors
from agent.backends.bedrock.request import build_request, caches_prompts
from agent.backends.bedrock.translate import Translator
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.retry import stream_with_retries
from agent.values import NeutralMessage, ToolSpec

CONNECT_TIMEOUT_SECONDS = 10


class BedrockBackend(Backend):
    name = "bedrock"
    default_model = "anthropic.claude-3-5-haiku-20241022-v1:0"

    def __init__(
        self,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        prompt_caching: bool | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.region = region if region is not None else (getattr(settings, "AWS_REGION", "") or None)
        self.endpoint_url = endpoint_url
        self._wire_limits(first_event_timeout, event_timeout, retries, sleep)
        self._client: Any = None
        self._lock = threading.Lock()
        self.prompt_caching = bool(setting(prompt_caching, "AGENT_PROMPT_CACHING", True))

    def stream(
        self,
        *,
        system: str,
        messages: list[NeutralMessage],
        tools: list[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        request = build_request(
            system=system,
            messages=messages,
            tools=tools,
            model=model,
            inference=inference,
            reasoning=reasoning_setting(),
            cache=self.prompt_caching and caches_prompts(model),
        )
        yield from stream_with_retries(
            lambda: self._stream_once(request), retries=self.retries, sleep=self._sleep, label="bedrock"
        )

    def _stream_once(self, request: dict[str, Any]) -> Iterator[Event]:
        translator = Translator()
        with map_api_errors():
            events = self.client().converse_stream(**request)["stream"]
            try:
                with interruptible(_socket_cut(_answer.get())):
                    yield from self._read(events, translator)
            except BaseException:
                with suppress(Exception):
                    events.close()
                raise
        yield translator.done()

    def _read(self, events: Any, translator: Translator) -> Iterator[Event]:
        last, limit = time.monotonic(), self.first_event_timeout
        for event in events:
            now = time.monotonic()
            if now - last > limit:
                raise BackendError(f"The model server sent no event for {limit:g} seconds.", retryable=True)
            if "messageStart" not in event:
                last, limit = now, self.event_timeout
            yield from translator.feed(event)

    def client(self) -> Any:
        """The boto3 client, made once per instance (clients are thread-safe; sessions are not)."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    with map_api_errors():
                        self._client = self._make_client()
        return self._client

    def _make_client(self) -> Any:
        import boto3
        from botocore.config import Config

        config = Config(
            read_timeout=max(self.first_event_timeout, self.event_timeout),
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            max_pool_connections=2000,
            # One attempt in all (`max_attempts` counts retries only): stream_with_retries does the retrying.
            retries={"total_max_attempts": 1, "mode": "standard"},
        )
        kwargs: dict[str, Any] = {"region_name": self.region or None, "config": config}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        client = boto3.session.Session().client("bedrock-runtime", **kwargs)
        client.meta.events.register("after-call.bedrock-runtime.ConverseStream", _keep_answer)
        return client

    def check(self) -> list[str]:
        problems: list[str] = []
        try:
            import boto3
            from botocore.exceptions import BotoCoreError
        except ImportError:
            return ["The bedrock backend needs the boto3 package installed."]
        try:
            session = boto3.session.Session()
        except BotoCoreError as exc:  # an AWS_PROFILE no file has, a config file that does not parse
            return [f"The bedrock backend cannot read the AWS configuration: {str(exc).rstrip('.')}."]
        if not (self.region or session.region_name):
            problems.append("The bedrock backend needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION).")
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            value = os.environ.get(name, "")  # (boto3 reads them as they are; never echoed: they are secrets)
            if value != value.strip():
                problems.append(f"{name} has a space or line break around it (a CRLF .env file?): set the value alone.")
        endpoint = self.endpoint_url or _env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        if endpoint and not endpoint.startswith(("http://", "https://")):
            problems.append("AWS_ENDPOINT_URL_BEDROCK_RUNTIME must start with http:// or https://.")
        for label, seconds in (
            ("AGENT_FIRST_EVENT_TIMEOUT_SECONDS", self.first_event_timeout),
            ("AGENT_EVENT_TIMEOUT_SECONDS", self.event_timeout),
        ):
            if seconds <= 0:
                problems.append(f"{label} must be a positive number of seconds.")
        return problems

    def cautions(self, model: str) -> list[str]:
        """No credentials in the chain now: a warning, not an error (an instance role's may come later)."""
        try:
            import boto3
            from botocore.exceptions import BotoCoreError
        except ImportError:
            return []  # (`check` says so)
        try:
            credentials = boto3.session.Session().get_credentials()
        except BotoCoreError:
            return []  # (`check` says so, or the call will, in its log line)
        if credentials is not None:
            return []
        return [
            "The bedrock backend found no AWS credentials (environment, AWS_PROFILE and ~/.aws, SSO, container "
            "or instance role): every turn will fail until it has some. Set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE."
        ]


#: The HTTP response of the latest ConverseStream call made in this context (`_keep_answer`).
_answer: contextvars.ContextVar[Any] = contextvars.ContextVar("bedrock_answer", default=None)


def _keep_answer(http_response: Any, **_: Any) -> None:
    """botocore's `after-call` event (its documented extension point): keep the call's HTTP response,
    whose socket a Stop shuts down (closing the event stream from another thread cannot: it is
    being read)."""
    _answer.set(http_response)


def _socket_cut(http_response: Any) -> Callable[[], None]:
    """A cut for `interruptible`: urllib3's `HTTPResponse.shutdown()` (documented, urllib3 >= 2.3)
    ends a read blocked on the response from another thread or greenlet."""
    raw = getattr(http_response, "raw", None)
    shutdown = getattr(raw, "shutdown", None)

    def cut() -> None:
        if shutdown is not None:
            with suppress(RuntimeError, ValueError):  # (already given back to the pool: read to its end)
                shutdown()

    return cut


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()
