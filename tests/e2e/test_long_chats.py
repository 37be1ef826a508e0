"""A year of use in a real browser: a chat of hundreds of turns and more chats than the panel lists."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import (
    BLOG,
    MARK_BLOG_LIVE,
    chat_input,
    chat_log,
    expect_blog_live,
    fill_sign_in,
    login,
    new_chat,
    open_blog,
    send,
    user_messages,
    wait_settled,
    wait_turn_finished,
)
from tests.servers import manage

LONG_CHATS = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from agent.models import Session
from blog.chat import start_session
from blog.models import Blog
from tests.chats import long_chat
alice = get_user_model().objects.get(username="alice")
blog = Blog.objects.get(slug="field-notes")
for i in range(25):
    session = start_session(alice, blog)
    long_chat(session, 300 if i == 24 else 1)
    Session.objects.filter(pk=session.pk).update(title=f"Chat {i}", updated_at=timezone.now() - timedelta(hours=25 - i))
"""


@pytest.fixture(scope="module")
def server(server_factory):
    server = server_factory("long-chats", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS)
    manage(server.env, server.log, "shell", "-c", LONG_CHATS)
    return server


def test_earlier_messages_come_in_above_keeping_the_readers_place(page, server):
    login(page, server.url, "alice")
    open_blog(page, server.url)
    expect(user_messages(page)).to_have_count(20)
    expect(user_messages(page).first).to_have_text("question 280")
    log = chat_log(page)
    log.evaluate("log => { log.scrollTop = 0; }")
    reading = user_messages(page).first
    top = reading.evaluate("m => m.getBoundingClientRect().top")
    page.get_by_role("button", name="Earlier messages").click()
    expect(user_messages(page)).to_have_count(40)
    expect(user_messages(page).first).to_have_text("question 260")
    # What the person was reading stays where it was; the turns that came in have focus.
    assert abs(page.get_by_text("question 280", exact=True).evaluate("m => m.getBoundingClientRect().top") - top) < 2
    assert page.evaluate("() => document.activeElement.className") == "earlier-turns"
    send(page, "list my posts")
    wait_turn_finished(page)
    expect(user_messages(page)).to_have_count(41)
    expect(user_messages(page).last).to_have_text("list my posts")
    expect(page.locator("#chat-log article.msg.assistant").last).to_contain_text("list_posts")


def test_a_request_elsewhere_on_the_page_leaves_the_reader_where_they_are(page, server):
    """Scrolled up to read, the person stays there when something else on the page is fetched (the grant
    line read again as the tab is shown again): the log followed its end as it was at the page's load, or
    at the last event of a stream, and jumped there. Where they are is read before each swap."""
    page.route("**/events/**", lambda route: route.abort())  # (no stream event comes to read it either)
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()  # (the long chat: another test may have started a newer one)
    page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
    # (the page it leaves may show 20 messages too: the chat's own page, loaded, its scripts run)
    page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))
    expect(user_messages(page)).to_have_count(20)
    log = chat_log(page)
    log.evaluate("log => { log.scrollTop = 0; }")
    with page.expect_response(re.compile(r"/chats/grant/")):
        page.evaluate("() => htmx.trigger(document.body, 'chat:shown')")
    wait_settled(page)
    assert log.evaluate("log => log.scrollTop") == 0


def test_a_chat_older_than_the_panel_lists_opens_from_all_chats(page, server):
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()
    expect(page.locator("details.history").get_by_text("Chat 5", exact=True)).to_be_visible()
    expect(page.locator("details.history").get_by_text("Chat 0", exact=True)).to_have_count(0)
    page.get_by_role("link", name="All chats…").click()
    page.get_by_role("link", name="Chat 0", exact=True).click()
    expect(page).to_have_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]+$"))
    expect(user_messages(page)).to_have_text(["question 0"])


def test_a_new_chat_is_named_in_the_list_by_its_first_message_without_a_reload(page, server):
    """After "New chat" the list of earlier chats names it "Untitled chat" (it has no message); once its
    first message is sent the list names it by its words, cut between characters as a reload cuts them."""
    login(page, server.url, "alice")
    new_chat(page, server.url)
    history = page.locator("details.history")
    current = history.locator("[aria-current] .chat-label")
    expect(current).to_have_text("Untitled chat")
    words = "Plan   the spring issue:\nherons, kingfishers, a 👋🏽 wave to the first swallows"  # 👋🏽: 47th, 48th
    chat_input(page).fill(words)
    page.locator("#chat-send").click()
    wait_turn_finished(page)
    named = "Plan the spring issue: herons, kingfishers, a…"  # (48 characters at most, 👋🏽 not cut in two)
    expect(current).to_have_text(named)
    page.reload()
    expect(page.locator("details.history [aria-current] .chat-label")).to_have_text(named)


RING = """el => {
  const style = getComputedStyle(el);
  return {focused: el === document.activeElement, style: style.outlineStyle, width: parseFloat(style.outlineWidth)};
}"""


def test_earlier_turns_brought_by_the_keyboard_show_a_focus_ring(page, server):
    """Focus moves to the turns "Earlier messages" brought (static/js/chat/log.js); from the keyboard they show where it is,
    as every other control does (WCAG 2.4.7), not an outline taken away."""
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()  # (the long chat: another test may have started a newer one)
    page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
    page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))  # (the page it leaves may show 20 messages too)
    expect(user_messages(page)).to_have_count(20)
    page.get_by_role("button", name="Earlier messages").focus()
    page.keyboard.press("Enter")
    expect(user_messages(page)).to_have_count(40)
    turns = page.locator("#chat-log .earlier-turns")
    expect(turns).to_be_focused()
    ring = turns.evaluate(RING)
    assert ring["focused"] and ring["style"] != "none" and ring["width"] >= 2, ring


def test_the_chat_shown_is_marked_in_the_list_by_more_than_a_tint(page, server):
    """The list of earlier chats marks the one shown (aria-current) by a bar at its edge and a heavier name,
    not by a faint background alone, which a person who cannot tell the colours apart misses (WCAG 1.4.1)."""
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()
    expect(page.locator("details.history ul")).to_be_visible()
    look = """a => {
      const own = getComputedStyle(a), label = getComputedStyle(a.querySelector(".chat-label"));
      return {bar: parseFloat(own.borderLeftWidth), weight: Number(label.fontWeight)};
    }"""
    current = page.locator("details.history a[aria-current]").evaluate(look)
    other = page.locator("details.history li a:not(.all-chats, [aria-current])").first.evaluate(look)
    assert current["bar"] >= 3 and other["bar"] == 0, (current, other)
    assert current["weight"] >= 600 and other["weight"] <= 400, (current, other)


def test_a_reader_who_scrolls_up_before_the_page_has_caught_up_stays_where_they_are(page, server):
    """As its stream opens, a page showing a chat asks for the turns after its last one (tabs.js); that
    answer, empty or not, came in below what the person had scrolled up to read since the page loaded,
    and the log jumped to its end: it followed where they were at the load. Where they are is read just
    before the swap, as for every other swap (log.js); only their own message brings them to the end."""
    held = []
    news = re.compile(r"/chat/[0-9a-f-]+/news\?after=")
    page.route(news, lambda route: held.append(route))
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()
    page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
    page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))
    expect(user_messages(page)).to_have_count(20)

    def asked() -> list:
        # This page's own asks (htmx names the page that asks): the blog's page before it, on a busy
        # machine, may have asked too before the click took it away, and its request has no page to answer.
        return [r for r in held if "?chat=" in (r.request.headers.get("hx-current-url") or "")]

    for _ in range(150):  # (the page's stream opens, then it asks)
        if asked():
            break
        page.wait_for_timeout(100)
    assert asked(), "the page never asked for the turns after its last one"
    log = chat_log(page)
    log.evaluate("log => { log.scrollTop = 0; }")
    with page.expect_response(news):
        for route in asked():
            route.continue_()
    wait_settled(page)
    page.wait_for_timeout(200)  # (any scroll the answer would cause has happened)
    assert log.evaluate("log => log.scrollTop") == 0


def test_earlier_messages_without_scripts_go_back_page_by_page_and_to_the_latest(browser, server):
    """With JavaScript off, "Earlier messages" is a form of its own: the page comes back with the turns before
    those it showed, and a link back to the latest."""
    plain = browser.new_context(java_script_enabled=False)
    try:
        page = plain.new_page()
        page.goto(f"{server.url}/accounts/login/")
        fill_sign_in(page, "alice")
        page.wait_for_url(re.compile(r"/$"))
        page.goto(f"{server.url}/blogs/{BLOG}/")
        page.get_by_text("Earlier chats").click()  # (the long chat: another test may have started a newer one)
        page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
        page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))
        expect(user_messages(page)).to_have_count(20)
        first = int(user_messages(page).first.inner_text().split()[-1])  # (other tests may have added turns)
        page.get_by_role("button", name="Earlier messages").click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}&before=\d+$"))
        expect(user_messages(page)).to_have_text([f"question {n}" for n in range(first - 20, first)])
        page.get_by_role("button", name="Earlier messages").click()
        expect(user_messages(page).first).to_have_text(f"question {first - 40}")
        page.get_by_role("link", name="Back to the latest messages").click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        expect(user_messages(page).first).to_have_text(f"question {first}")
    finally:
        plain.close()


def test_a_page_of_earlier_turns_opened_with_scripts_stays_those_turns(page, server):
    """ "Earlier messages" pressed before the scripts ran (a slow phone) opens the chat's page at earlier turns;
    its scripts then run. The page's catch-up as its stream opens (the turns after the last one shown, one
    request each) would have drawn every later turn after them, below the way back to the latest."""
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()  # (the long chat: another test may have started a newer one)
    page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
    page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))
    asked: list[str] = []  # (the news this page of earlier turns asks for: htmx names the page asking)

    def heard(request) -> None:
        if "/news" in request.url and "before=400" in (request.headers.get("hx-current-url") or ""):
            asked.append(request.url)

    page.on("request", heard)
    page.context.add_init_script(MARK_BLOG_LIVE)
    page.goto(f"{page.url}&before=400")  # (turn n's message is at position 4n: turns 80 to 99)
    expect_blog_live(page)
    page.wait_for_timeout(500)  # (the catch-up asks as the stream opens: room for it to start)
    wait_settled(page)
    expect(user_messages(page)).to_have_text([f"question {n}" for n in range(80, 100)])
    expect(page.locator("#chat-log > .latest")).to_be_visible()
    assert not [url for url in asked if "after=" in url]


def test_a_message_sent_from_a_page_of_earlier_turns_shows_with_the_latest(page, server):
    """On the chat's page at earlier turns (opened before the scripts ran), a message sent with the scripts
    goes to the chat's latest turns: the page shows them, then the message and its answer, not the message
    below turns a hundred earlier, with the way back to the latest between."""
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()  # (the long chat: another test may have started a newer one)
    page.locator("details.history a").filter(has_text=re.compile(r"^Chat 24\b")).click()
    page.wait_for_url(re.compile(r"\?chat=[0-9a-f-]+$"))
    latest = page.url
    page.context.add_init_script(MARK_BLOG_LIVE)
    page.goto(f"{latest}&before=400")
    expect_blog_live(page)
    wait_settled(page)
    expect(user_messages(page).first).to_have_text("question 80")
    swapped: list[str] = []
    page.on("console", lambda message: swapped.append(message.text) if "earlier-swap" in message.text else None)
    page.evaluate(
        """() => document.getElementById("chat-log").addEventListener("htmx:afterSwap", () => {
             if (document.querySelector("#chat-log > .latest")) console.log("earlier-swap");
           })"""
    )
    chat_input(page).fill("what is new since then?")
    chat_input(page).press("Enter")
    page.wait_for_url(latest)
    expect(user_messages(page).last).to_have_text("what is new since then?")
    wait_turn_finished(page)
    expect(page.locator("#chat-log > .latest")).to_have_count(0)
    expect(user_messages(page)).to_have_count(20)  # (the latest turns, this message's the last)
    expect(chat_input(page)).to_have_value("")
    assert swapped == []  # (the message was never drawn below the earlier turns)
