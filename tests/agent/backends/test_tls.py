"""A model server whose TLS this host does not accept (a self-signed certificate, an `https://` address
for a plain-HTTP port): the operator's log says so in one sentence, the person reads the calm one.

Real handshakes over loopback (`tls_server.py`); nothing in httpx, botocore or `ssl` is patched."""

from __future__ import annotations

import logging
import re

import pytest

from agent.backends import reset_backends
from agent.backends.bedrock import BedrockBackend
from agent.backends.openai import OpenAIBackend
from agent.exceptions import BackendError
from agent.loop import LASTING, run_agent
from agent.models import Message
from agent.state import Run
from agent.transcript import add_message
from tests.agent.backends.openai_server import ScriptedOpenAIServer
from tests.agent.backends.tls_server import SelfSignedTLSServer

KEY = "sk-tls-0000000000000000"
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]
# (OpenSSL 1.1 writes "self signed certificate", 3.x "self-signed certificate")
UNTRUSTED = r"certificate verify failed: self[- ]signed certificate\. Check the address and that this host trusts its certificate\."


def failure(backend) -> BackendError:
    with pytest.raises(BackendError) as info:
        list(backend.stream(system="", messages=USER, tools=[], model="m1"))
    return info.value


def openai_failure(url: str, sleeps: list[float]) -> BackendError:
    backend = OpenAIBackend(
        base_url=url, api_key=KEY, first_event_timeout=5, event_timeout=5, retries=2, sleep=sleeps.append
    )
    try:
        return failure(backend)
    finally:
        backend.close()


def assert_one_plain_sentence(message: str) -> None:
    """No OpenSSL bracket code or C source line, no second line, no key."""
    assert "[SSL" not in message and "_ssl.c" not in message and "\n" not in message, message
    assert KEY not in message, message


def test_an_untrusted_certificate_is_one_sentence_and_not_retried(tmp_path):
    sleeps: list[float] = []
    with SelfSignedTLSServer(tmp_path) as server:
        error = openai_failure(f"https://127.0.0.1:{server.port}/v1", sleeps)
    assert re.fullmatch(f"TLS handshake with the model server failed: {UNTRUSTED}", str(error)), str(error)
    assert_one_plain_sentence(str(error))
    # Trying again meets the same certificate: the person is told so at once, not after the retries.
    assert error.retryable is False and server.handshakes == 1 and sleeps == []


def test_bedrock_says_the_same_of_an_untrusted_certificate(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTDUMMY0000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "dummy-secret")
    sleeps: list[float] = []
    with SelfSignedTLSServer(tmp_path) as server:
        backend = BedrockBackend(
            endpoint_url=f"https://127.0.0.1:{server.port}",
            region="us-east-1",
            retries=2,
            first_event_timeout=5,
            event_timeout=5,
            prompt_caching=False,
            sleep=sleeps.append,
        )
        error = failure(backend)
    assert re.fullmatch(f"TLS handshake with Bedrock failed: {UNTRUSTED}", str(error)), str(error)
    assert_one_plain_sentence(str(error))
    assert error.retryable is False and server.handshakes == 1 and sleeps == []


def test_https_to_a_plain_http_port_names_the_mismatch_in_a_few_words():
    sleeps: list[float] = []
    server = ScriptedOpenAIServer().start()
    try:
        error = openai_failure(f"https://127.0.0.1:{server.port}/v1", sleeps)
    finally:
        server.stop()
    assert str(error) == "The TLS connection to the model server failed: wrong version number.", str(error)
    assert error.retryable is True  # (as any other transport failure)


@pytest.mark.django_db
def test_the_person_reads_the_calm_sentence_and_the_log_one_line(tmp_path, settings, chat, caplog):
    settings.AGENT_BACKEND, settings.OPENAI_API_KEY, settings.AGENT_MODEL = "openai", KEY, "gpt-4o-mini"
    add_message(Run(chat), Message.USER, [{"type": "text", "text": "Hello"}])
    with SelfSignedTLSServer(tmp_path) as server, caplog.at_level(logging.ERROR, logger="agent.loop"):
        settings.OPENAI_BASE_URL = f"https://127.0.0.1:{server.port}/v1"
        reset_backends()
        try:
            events = list(run_agent(chat))
        finally:
            reset_backends()
    assert events == [("error", {"code": "provider_error", "message": LASTING["refused"]})]
    (line,) = [r.getMessage() for r in caplog.records if r.name == "agent.loop"]
    assert line.startswith("backend openai failed (model 'gpt-4o-mini', retryable=False): TLS handshake "), line
    assert_one_plain_sentence(line)
