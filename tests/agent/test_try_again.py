""" "Try again" below the chat's last answer when it failed for now: the answer is asked for again, no message
added, the failed call's unfinished words left out of what the model reads (kept in the transcript); offered
and accepted only for the chat's latest answer, only for a failure a retry may clear, only to its person."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.utils import timezone

from agent.backends import get_backend
from agent.chat_views import conversation
from agent.loop import CALM, LASTING
from agent.models import Message, Session, Turn
from agent.policy import get_policy

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}
CUT = [{"kind": "text", "text": "Tomatoes like"}, {"kind": "error", "retryable": True}]
ANSWER = [{"kind": "text", "text": "Tomatoes like sun."}, DONE]
AS_PAGE = {"HTTP_SEC_FETCH_MODE": "navigate"}
BUTTON = 'id="try-again"'


def page_of(client: Client, session: Session) -> str:
    """The chat's log as its page draws it (`agent/_conversation.html`), its entities read as text."""
    request = RequestFactory().get("/")
    request.user = session.user
    return html.unescape(render_to_string("agent/_conversation.html", conversation(session, request), request=request))


def failed_once(browser: Client, session: Session, script, calls=(CUT, ANSWER)) -> Turn:
    script([list(call) for call in calls])
    assert browser.post(f"/chat/{session.pk}/send", {"text": "what do tomatoes like?"}).status_code == 200
    failed = Turn.objects.get(session=session)
    assert failed.status == Turn.ERROR
    return failed


def test_a_failed_answer_offers_try_again_which_answers_the_same_message_again(browser, notebook_chat, script):
    failed = failed_once(browser, notebook_chat, script)
    page = page_of(browser, notebook_chat)
    assert CALM["provider_error"] in page and BUTTON in page
    assert f'action="/chat/{notebook_chat.pk}/retry"' in page and "csrfmiddlewaretoken" in page

    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert "sse-connect" in body and '<div id="try-again" hx-swap-oob="delete"></div>' in body

    retried = Turn.objects.filter(session=notebook_chat).exclude(pk=failed.pk).get()
    assert retried.status == Turn.DONE and retried.user_message_id is None
    assert Message.objects.filter(session=notebook_chat, role=Message.USER).count() == 1  # no message added
    # The model read the person's message last, not the words the failed call was cut off in.
    sent = get_backend().requests[-1]["messages"]
    assert sent[-1]["role"] == "user" and "what do tomatoes like?" in str(sent[-1])
    assert "Tomatoes like" not in str(sent)
    # Both answers stay in the transcript as they were drawn: the cut one with its error, then the new one.
    page = page_of(browser, notebook_chat)
    assert page.index("Tomatoes like") < page.index(CALM["provider_error"]) < page.index("Tomatoes like sun.")
    assert BUTTON not in page


def test_the_streamed_end_of_a_failed_answer_offers_try_again(browser, notebook_chat, script):
    script([CUT])
    response = browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "what do tomatoes like?"})
    url = html.unescape(response.content.decode().split('sse-connect="', 1)[1].split('"', 1)[0])
    stream = b"".join(browser.get(url).streaming_content).decode()
    events = {}
    for block in stream.split("\n\n"):
        lines = block.split("\n")
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        if name:
            events[name] = "\n".join(line[6:] for line in lines if line.startswith("data: "))
    events = {name: html.unescape(data) for name, data in events.items()}
    assert CALM["provider_error"] in events["error"] and BUTTON in events["error"]
    assert f'hx-post="/chat/{notebook_chat.pk}/retry"' in events["error"]


def test_an_answer_only_the_operator_can_mend_offers_no_try_again_and_takes_none(browser, notebook_chat, script):
    failed_once(browser, notebook_chat, script, calls=([{"kind": "error", "retryable": False}], ANSWER))
    page = page_of(browser, notebook_chat)
    assert LASTING["refused"] in page and BUTTON not in page
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "nothing to try again" in html.unescape(response.content.decode())
    assert Turn.objects.filter(session=notebook_chat).count() == 1


def test_an_answer_that_did_not_fail_cannot_be_tried_again(browser, notebook_chat, script):
    script([ANSWER])
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "what do tomatoes like?"})
    assert BUTTON not in page_of(browser, notebook_chat)
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "The chat's last answer did not fail, so there is nothing to try again." in html.unescape(
        response.content.decode()
    )
    assert Turn.objects.filter(session=notebook_chat).count() == 1


def test_tried_again_once_the_answer_cannot_be_tried_again_a_second_time(browser, notebook_chat, script):
    """Two presses (two tabs): the second finds the latest answer did not fail, and starts nothing."""
    failed_once(browser, notebook_chat, script)
    assert browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true").status_code == 200
    again = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "nothing to try again" in html.unescape(again.content.decode())
    assert Turn.objects.filter(session=notebook_chat).count() == 2


def test_only_the_chats_last_answer_offers_try_again(browser, notebook_chat, script):
    failed_once(browser, notebook_chat, script, calls=(CUT, ANSWER))
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "and peppers?"})
    page = page_of(browser, notebook_chat)
    assert CALM["provider_error"] in page and BUTTON not in page
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "nothing to try again" in html.unescape(response.content.decode())


def test_try_again_while_an_answer_runs_says_it_is_still_answering(browser, notebook_chat, script):
    failed_once(browser, notebook_chat, script)
    running = Turn.objects.create(session=notebook_chat, status=Turn.RUNNING)  # (another tab's message, say)
    Session.objects.filter(pk=notebook_chat.pk).update(turn=running, lease_until=timezone.now() + timedelta(minutes=5))
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "still answering" in html.unescape(response.content.decode())
    assert Turn.objects.filter(session=notebook_chat).count() == 2


def test_try_again_pressed_as_a_page_goes_back_to_the_chats_page(browser, notebook_chat, script):
    failed_once(browser, notebook_chat, script)
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == get_policy().page_url(notebook_chat)
    assert Turn.objects.filter(session=notebook_chat, status=Turn.DONE).count() == 1
    again = browser.post(f"/chat/{notebook_chat.pk}/retry", **AS_PAGE)
    assert again.status_code == 302
    assert [str(m) for m in get_messages(again.wsgi_request)] == [
        "The chat's last answer did not fail, so there is nothing to try again."
    ]


def test_try_again_counts_against_the_message_rate_and_gives_the_slot_back_when_refused(
    browser, notebook_chat, script, settings
):
    settings.AGENT_MESSAGES_PER_MINUTE = 2
    failed_once(browser, notebook_chat, script, calls=([{"kind": "error", "retryable": False}],))
    for _ in range(3):  # (refused: nothing to try again; each slot given back)
        refused = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
        assert "nothing to try again" in html.unescape(refused.content.decode())
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "second"})
    refused = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "too quickly" in html.unescape(refused.content.decode())


def test_only_the_chats_person_may_try_again_and_only_with_the_csrf_token(notebook_chat, script, other_user, browser):
    failed_once(browser, notebook_chat, script)
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true").status_code == 404
    anonymous = Client().post(f"/chat/{notebook_chat.pk}/retry")
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(notebook_chat.user)
    assert strict.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true").status_code == 403
    assert browser.get(f"/chat/{notebook_chat.pk}/retry").status_code == 405
    assert Turn.objects.filter(session=notebook_chat).count() == 1


def test_a_message_answered_between_the_check_and_the_claim_is_not_answered_again(
    browser, notebook_chat, script, monkeypatch
):
    """The failed answer is checked again once the lease is taken: a message another tab sent (and had
    answered) in between makes the press start nothing, and leaves no turn and no lease behind."""
    from agent import turns

    failed_once(browser, notebook_chat, script)
    claim = turns.claim

    def another_tab_first(session, **kwargs):
        Turn.objects.create(session=session, status=Turn.DONE)
        return claim(session, **kwargs)

    monkeypatch.setattr(turns, "claim", another_tab_first)
    response = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    assert "nothing to try again" in html.unescape(response.content.decode())
    assert Turn.objects.filter(session=notebook_chat).count() == 2  # the failed one and the other tab's
    notebook_chat.refresh_from_db()
    assert notebook_chat.turn_id is None and notebook_chat.lease_until is None


def test_an_api_client_tries_again_as_the_page_does(api, chat, script):
    script([CUT, ANSWER])
    session_id = chat.pk
    sent = api.post(f"/api/agent/sessions/{session_id}/messages", {"text": "what do tomatoes like?"})
    assert sent.status_code == 202
    assert Turn.objects.get(session_id=session_id).status == Turn.ERROR

    retried = api.post(f"/api/agent/sessions/{session_id}/retry")
    assert retried.status_code == 202 and set(retried.json()) == {"stream_url"}
    transcript = api.client.get(f"/api/agent/sessions/{session_id}").json()
    assert [m["role"] for m in transcript["messages"]] == ["user", "assistant", "assistant"]
    assert transcript["messages"][-1]["parts"] == [{"type": "text", "text": "Tomatoes like sun."}]

    again = api.post(f"/api/agent/sessions/{session_id}/retry")
    assert again.status_code == 409
    assert again.json() == {
        "error": {
            "code": "nothing_to_retry",
            "message": "The chat's last answer did not fail, so there is nothing to try again.",
        }
    }


def test_a_press_that_fails_once_the_lease_is_taken_gives_the_lease_back_at_once(
    browser, notebook_chat, script, monkeypatch
):
    """As a message's start does: the chat is not left "still answering" until the lease runs out."""
    from agent import turns

    failed_once(browser, notebook_chat, script)
    checked = turns.failed_last

    def fails_under_the_lease(session, *, besides=None):
        if besides is not None:
            raise RuntimeError("the database went away")
        return checked(session)

    monkeypatch.setattr(turns, "failed_last", fails_under_the_lease)
    with pytest.raises(RuntimeError):
        browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")
    notebook_chat.refresh_from_db()
    assert notebook_chat.turn_id is None and notebook_chat.lease_until is None
    assert set(Turn.objects.filter(session=notebook_chat).values_list("status", flat=True)) == {Turn.ERROR}


def test_a_spent_budget_offers_try_again_once_its_wait_is_over(browser, notebook_chat, script, user):
    """A spent budget's error counts its wait down; the button is on the page from the start but hidden
    until the wait is over (the page's scripts show it then; a page drawn later shows it at once), and the
    answer it asks for is guarded again before its model call."""
    from agent.models import Spend

    script([ANSWER])
    Spend.objects.create(user=user, created_at=timezone.now() - timedelta(seconds=30), tokens=20000, settled=True)
    browser.post(f"/chat/{notebook_chat.pk}/send", {"text": "what do tomatoes like?"})
    spent = Turn.objects.get(session=notebook_chat)
    assert spent.status == Turn.ERROR and spent.terminal_payload["code"] == "budget_exceeded"
    page = page_of(browser, notebook_chat)
    assert "You've sent a lot in the last minute." in page and "Try again in" in page
    button = page[page.index("<form", page.index(BUTTON) - 200) : page.index(BUTTON) + len(BUTTON) + 200]
    assert BUTTON in button and " hidden" in button  # (until the wait is over)

    early = browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true")  # (an API client, say)
    assert early.status_code == 200 and "sse-connect" in early.content.decode()
    asked = Turn.objects.filter(session=notebook_chat).order_by("-created_at").first()
    assert asked.status == Turn.ERROR and asked.terminal_payload["code"] == "budget_exceeded"  # guarded again

    Spend.objects.filter(user=user).update(created_at=timezone.now() - timedelta(minutes=2))
    Turn.objects.filter(session=notebook_chat).update(finished_at=timezone.now() - timedelta(minutes=2))
    page = page_of(browser, notebook_chat)
    assert "Try again in" not in page
    button = page[page.index("<form", page.index(BUTTON) - 200) : page.index(BUTTON) + len(BUTTON) + 200]
    assert " hidden" not in button
    assert browser.post(f"/chat/{notebook_chat.pk}/retry", HTTP_HX_REQUEST="true").status_code == 200
    answered = Turn.objects.filter(session=notebook_chat).order_by("-created_at").first()
    assert answered.status == Turn.DONE and "Tomatoes like sun." in page_of(browser, notebook_chat)
    assert Message.objects.filter(session=notebook_chat, role=Message.USER).count() == 1
