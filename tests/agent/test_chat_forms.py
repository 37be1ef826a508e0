"""The chat's forms sent by the browser as a page (before the page's scripts ran): the engine answers with
a redirect to the page the session policy names for the chat (`SessionPolicy.page_url`), or, naming none,
with the fragment as for htmx."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.messages import get_messages
from django.contrib.sessions.backends.signed_cookies import SessionStore
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template import Context, RequestContext, Template
from django.test import Client, RequestFactory

from agent import typed
from agent.models import Message, Session
from agent.policy import get_policy
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


# --- A refused message's words, back in the box -----------------------------------------------------

TYPED = "x" * 20_001 + "\n<b>tomatoes & “basil”</b>\r\n\n"  # (too long, and what a template must escape)


def textarea(page: str) -> str:
    """What the page's chat box holds as a browser reads it: its line breaks made LF (as a browser reads any
    page's), less the one line break a browser drops after `<textarea>`, unescaped."""
    page = page.replace("\r\n", "\n").replace("\r", "\n")
    found = re.search(r"<textarea[^>]*>\n?(.*?)</textarea>", page, re.DOTALL)
    assert found is not None, page
    return html.unescape(found.group(1))


def notebook_page(client: Client, session: Session) -> str:
    page = client.get(get_policy().page_url(session) or "")
    assert page.status_code == 200
    return page.content.decode()


@pytest.fixture
def second_chat(user, notebook_chat) -> Session:
    notebook = NotebookLink.objects.get(session=notebook_chat).notebook
    session = Session.objects.create(user=user, purpose="chat")
    NotebookLink.objects.create(session=session, notebook=notebook)
    return session


def test_a_refused_message_sent_as_a_page_has_its_words_back_in_the_box_once(browser, notebook_chat):
    response = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": TYPED}, **AS_PAGE)
    assert response.status_code == 302
    assert "tomatoes" not in response["Location"] and "x" * 50 not in response["Location"]
    page = notebook_page(browser, notebook_chat)
    assert "Your message was not sent." in page
    assert textarea(page) == TYPED.replace("\r\n", "\n")  # (sent again, a browser makes each line break CR LF)
    assert "<b>tomatoes" not in page and "&lt;b&gt;tomatoes &amp; “basil”&lt;/b&gt;" in page
    assert textarea(notebook_page(browser, notebook_chat)) == ""  # (read once: a reload shows an empty box)


def test_the_words_are_kept_for_their_chat_and_person_alone(browser, notebook_chat, second_chat, other_user):
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": TYPED}, **AS_PAGE)
    assert textarea(notebook_page(browser, second_chat)) == ""  # (another chat of theirs: not its words)
    someone = Client()
    someone.force_login(other_user)
    theirs = Notebook.objects.create(owner=other_user, name="orchard")
    their_chat = Session.objects.create(user=other_user, purpose="chat")
    NotebookLink.objects.create(session=their_chat, notebook=theirs)
    assert textarea(notebook_page(someone, their_chat)) == ""
    assert textarea(notebook_page(browser, notebook_chat)).startswith("x" * 20_001)


def test_an_accepted_message_leaves_nothing_kept(browser, notebook_chat, script):
    script([[{"kind": "text", "text": "Noted."}, DONE]])
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "plant tomatoes"}, **AS_PAGE)
    assert textarea(notebook_page(browser, notebook_chat)) == ""
    assert [key for key in browser.session.keys() if key.startswith("agent.")] == []


def test_a_refused_message_sent_by_htmx_keeps_nothing_its_page_keeps_its_words(browser, notebook_chat):
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": TYPED})
    assert textarea(notebook_page(browser, notebook_chat)) == ""


def test_the_words_kept_are_cut_at_a_bound_and_files_are_asked_for_again(browser, notebook_chat):
    long = "y" * (typed.KEPT_MAX + 10)
    note = SimpleUploadedFile("plan.txt", b"beds by the wall", content_type="text/plain")
    response = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": long, "files": [note]}, **AS_PAGE)
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Your message was not sent. Write a message of up to 20,000 characters. Attach the files again: they were "
        "not kept."
    ]
    assert textarea(notebook_page(browser, notebook_chat)) == "y" * typed.KEPT_MAX


def test_without_sessions_nothing_is_kept_and_nothing_fails(notebook_chat):
    request = RequestFactory().post(f"/chat/{notebook_chat.pk}/send", {"text": TYPED})
    request.user = notebook_chat.user
    typed.keep(request, TYPED)
    assert typed.take(request, request.path) == ""
    drawn = Template("{% load agent_forms %}{% typed_words url as words %}[{{ words }}]")
    assert drawn.render(Context({"url": request.path})) == "[]"  # (no request in the template's context)
    assert drawn.render(RequestContext(request, {"url": request.path})) == "[]"


def test_a_session_kept_in_its_cookie_keeps_no_words(browser, notebook_chat, settings):
    """A cookie past 4 KB is dropped by browsers and refused by proxies: the words are not worth the session."""
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
    request = RequestFactory().post(f"/chat/{notebook_chat.pk}/send", {"text": TYPED})
    request.user = notebook_chat.user
    request.session = SessionStore()
    typed.keep(request, TYPED)
    assert dict(request.session.items()) == {}
