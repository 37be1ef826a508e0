"""The chat's forms sent by the browser as a page (before the page's scripts ran): the engine answers with
a redirect to the page the session policy names for the chat (`SessionPolicy.page_url`), or, naming none,
with the fragment as for htmx."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from agent.models import Message, Session
from tests.agent.testapp.models import Notebook, NotebookLink

pytestmark = pytest.mark.django_db

AS_PAGE = {"HTTP_SEC_FETCH_MODE": "navigate"}
DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}


@pytest.fixture
def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def notebook_chat(user) -> Session:
    notebook = Notebook.objects.create(owner=user, name="garden")
    session = Session.objects.create(user=user, purpose="chat")
    NotebookLink.objects.create(session=session, notebook=notebook)
    return session


def test_a_message_sent_as_a_page_goes_to_the_page_the_policy_names(browser, notebook_chat, script):
    script([[{"kind": "text", "text": "Noted."}, DONE]])
    response = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "plant tomatoes"}, **AS_PAGE)
    notebook = NotebookLink.objects.get(session=notebook_chat).notebook
    assert response.status_code == 302
    assert response["Location"] == f"/notebooks/{notebook.pk}/?chat={notebook_chat.pk}"
    assert Message.objects.filter(session=notebook_chat, role="user").count() == 1


def test_a_refused_message_sent_as_a_page_is_said_there_and_stores_nothing(browser, notebook_chat):
    response = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "   "}, **AS_PAGE)
    assert response.status_code == 302 and "/notebooks/" in response["Location"]
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Your message was not sent. Write a message of up to 20,000 characters."
    ]
    assert not Message.objects.filter(session=notebook_chat).exists()


def test_a_chat_with_no_page_answers_a_page_send_with_the_fragment(browser, chat, script):
    script([[{"kind": "text", "text": "Hi."}, DONE]])
    response = browser.post(f"/chat/{chat.pk}/send", {"text": "hello"}, **AS_PAGE)
    assert response.status_code == 200 and "sse-connect" in response.content.decode()


def test_htmx_and_scripts_get_the_fragment_whatever_the_policy(browser, notebook_chat, script):
    script([[{"kind": "text", "text": "One."}, DONE], [{"kind": "text", "text": "Two."}, DONE]])
    by_script = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "one"})
    assert by_script.status_code == 200 and "sse-connect" in by_script.content.decode()
