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
from django.template.loader import render_to_string
from django.test import Client, RequestFactory

from agent import typed
from agent.chat_views import conversation, earlier_position
from agent.models import Message, Session, Turn
from agent.policy import get_policy
from tests.agent.testapp.models import Notebook, NotebookLink
from tests.chats import long_chat

pytestmark = pytest.mark.django_db

AS_PAGE = {"HTTP_SEC_FETCH_MODE": "navigate"}
DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}


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


# --- "Earlier messages" and Stop, pressed before the page's scripts ran -----------------------------


def drawn_questions(html: str) -> list[str]:
    return re.findall(r"question \d+", html)


def test_earlier_messages_pressed_as_a_page_asks_the_chats_page_for_them(browser, notebook_chat, user):
    """The button is also a GET form of the turns' position: sent as a page, it goes to the chat's page with
    `?before=`, which `conversation(..., before=)` draws: those turns, the way further back, and back to the latest."""
    long_chat(notebook_chat, 25)
    request = RequestFactory().get("/")
    request.user = user
    latest = render_to_string("agent/_conversation.html", conversation(notebook_chat, request))
    assert drawn_questions(latest) == [f"question {n}" for n in range(5, 25)]
    form = re.search(
        r'<form class="earlier" method="get" action="([^"]+)"><input type="hidden" name="before" value="(\d+)">', latest
    )
    assert form is not None and form.group(1) == f"/chat/{notebook_chat.pk}/earlier"
    before = form.group(2)

    response = browser.get(form.group(1), {"before": before}, **AS_PAGE)
    notebook = NotebookLink.objects.get(session=notebook_chat).notebook
    assert response.status_code == 302
    assert response["Location"] == f"/notebooks/{notebook.pk}/?chat={notebook_chat.pk}&before={before}"

    asked = RequestFactory().get(response["Location"])
    asked.user = user
    context = conversation(notebook_chat, asked, before=earlier_position(asked))
    page = render_to_string("agent/_conversation.html", context)
    assert drawn_questions(page) == [f"question {n}" for n in range(5)]
    assert context["running"] is None and context["form_running"] is False
    assert f'<a href="/notebooks/{notebook.pk}/?chat={notebook_chat.pk}">Back to the latest messages</a>' in page
    assert '<form class="earlier"' not in page  # (nothing before the first turn)
    # htmx (and scripts) still get the fragment, whatever the policy names.
    fragment = browser.get(form.group(1), {"before": before}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and drawn_questions(fragment.content.decode()) == [
        f"question {n}" for n in range(5)
    ]


def test_earlier_messages_of_a_chat_with_no_page_answer_the_fragment_even_as_a_page(browser, chat):
    long_chat(chat, 25)
    response = browser.get(f"/chat/{chat.pk}/earlier", {"before": "20"}, **AS_PAGE)
    assert response.status_code == 200 and drawn_questions(response.content.decode()) == [
        f"question {n}" for n in range(5)
    ]


@pytest.mark.parametrize("raw", ["", "x", "-1", "١٢", "1" * 10])
def test_a_page_asked_for_turns_before_no_position_draws_the_latest(raw):
    request = RequestFactory().get("/", {"before": raw})
    assert earlier_position(request) is None
    assert earlier_position(RequestFactory().get("/", {"before": "12"})) == 12


def test_stop_pressed_as_a_page_stops_the_answer_and_comes_back_with_the_words(browser, notebook_chat):
    turn = Turn.objects.create(session=notebook_chat, status=Turn.RUNNING)
    words = "and then <b>basil</b> & “thyme”"
    response = browser.post(f"/chat/{notebook_chat.pk}/stop", {"text": words}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == get_policy().page_url(notebook_chat)
    turn.refresh_from_db()
    assert turn.stop_requested
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Stopped: the answer ends where it had got to."]
    assert textarea(notebook_page(browser, notebook_chat)) == words
    assert textarea(notebook_page(browser, notebook_chat)) == ""  # (taken once)


def test_stop_pressed_as_a_page_after_the_answer_ended_says_so(browser, notebook_chat):
    Turn.objects.create(session=notebook_chat, status=Turn.DONE)
    response = browser.post(f"/chat/{notebook_chat.pk}/stop", {"text": ""}, **AS_PAGE)
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["The answer had already ended."]


def test_stop_by_htmx_or_of_a_chat_with_no_page_answers_204(browser, notebook_chat, chat):
    turn = Turn.objects.create(session=notebook_chat, status=Turn.RUNNING)
    assert browser.post(f"/chat/{notebook_chat.pk}/stop", {"text": "x"}, HTTP_HX_REQUEST="true").status_code == 204
    turn.refresh_from_db()
    assert turn.stop_requested
    assert browser.post(f"/chat/{chat.pk}/stop", **AS_PAGE).status_code == 204
    assert textarea(notebook_page(browser, notebook_chat)) == ""  # (by htmx, the words stay in the page's box)
