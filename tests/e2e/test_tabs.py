"""One person in several tabs of one chat: two pages of one browser context share the sign-in."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import (
    BLOG,
    LONG_WAIT,
    MARK_BLOG_LIVE,
    WATCH_ANNOUNCEMENTS,
    announcements,
    ask,
    chat_input,
    chat_log,
    chip,
    expect_blog_live,
    expect_writable_not_sendable,
    fill_sign_in,
    login,
    new_chat,
    open_blog,
    post_item,
    replies,
    send,
    sign_out_elsewhere,
    streaming_reply,
    user_messages,
    wait_turn_finished,
)
from tests.servers import manage


def test_a_message_sent_in_a_second_tab_while_the_first_tabs_answer_runs_shows_it_and_keeps_the_words(
    slow_demo_server, page
):
    """Tab B, open before tab A asked, has not heard of A's running answer: its live stream of the blog
    is down here (a reconnect, a worker that publishes nowhere else without AGENT_EVENTS_URL). Sending
    there is refused (one turn at a time); B then shows that answer streaming, with its Stop, and keeps
    B's words in the box to send once it ends. It used to say "Wait for it or stop it." beside neither."""
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    other = page.context.new_page()
    other.route(re.compile(r"/events/"), lambda route: route.abort())
    other.goto(page.url)
    expect(chat_input(other)).to_be_enabled()

    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    box = chat_input(other)
    box.fill("list my posts")
    other.evaluate(WATCH_ANNOUNCEMENTS)
    box.press("Enter")

    expect(chat_log(other).locator(".notice")).to_have_text(
        "The assistant is still answering an earlier message of this chat, shown above. Your message is "
        "still in the box: send it when the answer ends, or stop the answer."
    )
    expect(user_messages(other)).to_have_count(1)
    expect(user_messages(other).first).to_have_text("write something long")
    expect(streaming_reply(other).locator(".flow")).to_contain_text("Paragraph 4:")  # it follows the answer
    expect(box).to_have_value("list my posts")
    expect_writable_not_sendable(other)
    heard = "".join(announcements(other))
    assert "still in the box" in heard and "write something long" not in heard, heard  # not the chat again

    other.locator("#chat-stop").click()  # Stop in B ends the answer asked in A, in both tabs
    wait_turn_finished(other)
    expect(replies(other).last.locator(".note")).to_have_text("Stopped.")
    wait_turn_finished(page)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")

    expect(box).to_have_value("list my posts")  # the words waited, and go now
    box.press("Enter")
    expect(user_messages(other)).to_have_count(2)
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Here are your posts")
    expect(box).to_have_value("")
    page.reload()
    expect(user_messages(page)).to_have_count(2)
    assert ask(page, "list my posts")


def test_words_typed_in_a_tab_signed_out_in_another_are_in_the_box_again_after_signing_in(demo_server, page):
    """Signed out in tab A, tab B's message takes B to the sign-in form (test_chat.py); after signing in,
    B is back in its chat with the words it had typed in the box, to send. They were lost."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    chat_page = page.url
    sign_out_elsewhere(page, base)

    chat_input(page).fill("draft a post titled Kept words\nwith a second line")
    chat_input(page).press("Enter")
    page.wait_for_url(re.compile(r"/accounts/login/\?next="))
    fill_sign_in(page, "alice")
    page.wait_for_url(chat_page)
    expect(chat_input(page)).to_have_value("draft a post titled Kept words\nwith a second line")
    expect(user_messages(page)).to_have_count(0)  # nothing was sent meanwhile

    chat_input(page).press("Enter")
    wait_turn_finished(page)
    expect(user_messages(page)).to_have_count(1)
    page.reload()  # sent, the words are not put back again
    expect(chat_input(page)).to_have_value("")


def test_words_kept_for_one_person_are_not_put_in_the_box_of_another_who_signs_in_on_that_tab(demo_server, page):
    """A shared computer: alice's words wait in her tab, signed out elsewhere; bob signs in on that tab and
    opens the same blog. The box is his, empty: the words are kept for the person who typed them."""
    base = demo_server.url
    login(page, base, "alice")
    open_blog(page, base)
    sign_out_elsewhere(page, base)

    chat_input(page).fill("alice's unsent words")
    chat_input(page).press("Enter")
    page.wait_for_url(re.compile(r"/accounts/login/\?next="))
    fill_sign_in(page, "bob")
    page.wait_for_url(f"{base}/blogs/{BLOG}/")
    expect(page.locator(".who")).to_have_text("bob")
    expect(chat_input(page)).to_have_value("")


def test_revoked_in_another_tab_while_a_publish_waits_the_approval_is_refused_in_plain_words(server_factory, page):
    """Tab A's publish waits for Approve; tab B revokes the assistant's grant on the Clients screen.
    Approving in A runs nothing (the grant is read again at the call) and A reads why in the Clients
    screen's words, and its "Can …" line says what the grant is now (it kept the grant of page load)."""
    base = server_factory("tabs-revoke", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    console_errors: list[str] = []  # (a trigger's [filter] is eval'd, which the CSP refuses: an error here)
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    login(page, base, "alice")
    new_chat(page, base)
    expect(page.locator("#grant-line")).to_contain_text("Can read, draft, publish, delete")
    ask(page, "draft a post titled Held back")
    ask(page, "publish Held back")
    other = page.context.new_page()
    other.goto(f"{base}/blogs/{BLOG}/clients/")
    other.get_by_role("button", name="Revoke all").click()
    expect(other.locator("#effective-scopes")).to_have_text("nothing")

    page.locator("#chat-log .approval").get_by_role("button", name="Approve").click()
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text(
        "I'm not allowed to publish posts on this blog for you. "
        "The Clients screen shows what I may do, and lets you change it."
    )
    expect(page.locator("#grant-line")).to_have_text("Can do nothing until you allow it · change")
    expect(post_item(page, "Held back")).to_contain_text("Draft")

    for box in other.locator("#assistant-grant input[type=checkbox]").all():  # granted again in B...
        box.check()
    other.get_by_role("button", name="Save").click()
    expect(other.locator("#effective-scopes")).to_have_text("can read, draft, publish, delete")
    page.bring_to_front()  # ...A, shown again, says so
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#grant-line")).to_have_text("Can read, draft, publish, delete · change")
    assert console_errors == []


def test_back_to_a_chat_whose_answer_was_streaming_shows_it_and_follows_it_to_its_end(demo_server, page):
    """Left mid-answer for a post's editor, then Back: the page is read again (the browser kept the one
    first loaded, an empty chat, and showed that), with the message and the answer, followed to its
    end, never twice."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    page.locator("#post-list li.post").first.get_by_role("link", name="Edit").click()
    page.wait_for_url(re.compile(r"/posts/\d+/edit/$"))
    page.go_back()

    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_have_text("write something long")
    wait_turn_finished(page, timeout=LONG_WAIT)
    reply = replies(page).last
    expect(reply).to_contain_text("Paragraph 40:")
    assert reply.inner_text().count("Paragraph 1:") == 1
    expect(replies(page)).to_have_count(1)


def second_tab(page, base: str):
    """Tab B of the chat tab A (`page`) shows, listening to the chat's notices before A does anything."""
    page.context.add_init_script(MARK_BLOG_LIVE)
    other = page.context.new_page()
    other.goto(page.url)
    expect_blog_live(other)
    return other


def test_a_message_sent_in_one_tab_shows_in_the_other_and_its_answer_is_followed_there_live(slow_demo_server, page):
    """Tab B, open on the same chat, shows A's message and follows the answer as it streams, its form
    at rest with its Stop; Stop there ends it in both. A draws it once. Before, B saw nothing until
    a reload."""
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    other = second_tab(page, base)

    send(page, "write something long")
    expect(user_messages(other)).to_have_count(1)
    expect(user_messages(other).first).to_have_text("write something long")
    expect(streaming_reply(other).locator(".flow")).to_contain_text("Paragraph 2:")  # live, word by word
    expect_writable_not_sendable(other)
    other.locator("#chat-stop").click()
    wait_turn_finished(other)
    expect(replies(other).last.locator(".note")).to_have_text("Stopped.")
    wait_turn_finished(page)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")
    expect(user_messages(page)).to_have_count(1)  # the tab that sent it draws it once
    expect(replies(page)).to_have_count(1)


def test_an_answer_with_a_tool_card_ends_the_same_in_both_tabs(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    other = second_tab(page, base)

    mine = ask(page, "list my posts")
    wait_turn_finished(other)
    expect(user_messages(other)).to_have_count(1)
    expect(replies(other)).to_have_count(1)
    expect(replies(other).last).to_contain_text("Here are your posts")
    expect(chip(other, "list_posts")).to_contain_text("done")
    assert replies(other).last.inner_text() == mine.inner_text()
    expect(chat_input(other)).to_be_enabled()


def test_a_card_decided_in_one_tab_shows_decided_in_the_other(server_factory, page):
    """A publish waits for Approve in both tabs; approved in A, B's card says "Approved." and B follows
    the answer it resumed to its end, without a reload. It stayed "awaiting your OK" there."""
    base = server_factory("tabs-approve", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    console_errors: list[str] = []
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Both tabs")
    other = second_tab(page, base)
    other.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)

    ask(page, "publish Both tabs")
    card = other.locator("#chat-log .approval")
    expect(card).to_contain_text("Needs your OK")  # the question came to B too
    expect(chip(other, "publish_post")).to_contain_text("awaiting your OK")

    page.locator("#chat-log .approval").get_by_role("button", name="Approve").click()
    expect(card).to_have_text("Approved.")
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Done: I published “Both tabs”.")
    expect(chip(other, "publish_post")).to_contain_text("done")
    expect(post_item(other, "Both tabs")).to_contain_text("Published")
    wait_turn_finished(page)
    expect(page.locator("#chat-log .approval")).to_have_text("Approved.")
    expect(replies(page).filter(has_text="Done: I published")).to_have_count(1)  # once, in A as well
    assert console_errors == []


def test_a_card_decided_elsewhere_then_pressed_in_a_tab_that_did_not_hear_says_so_calmly(server_factory, page):
    """B did not hear the decision (its live stream down): its buttons answer in the card, calmly."""
    base = server_factory("tabs-approve", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Deaf tab")
    ask(page, "publish Deaf tab")
    other = page.context.new_page()
    other.route(re.compile(r"/events/"), lambda route: route.abort())
    other.goto(page.url)
    page.locator("#chat-log .approval").get_by_role("button", name="Reject").click()
    wait_turn_finished(page)

    other.locator("#chat-log .approval").get_by_role("button", name="Approve").click()
    expect(other.locator("#chat-log .approval")).to_have_text("That request was already decided.")
    expect(other.locator(".topbar .who")).to_have_text("alice")  # the page, not an error page
    expect(post_item(other, "Deaf tab")).to_contain_text("Draft")


def two_tabs_showing_no_chat(server_factory, page, name: str):
    """Tabs A (`page`) and B of a first visit (a server of its own: alice has no chat on the blog), both
    on the panel's first words and listening to the blog before A does anything; returns (base, B)."""
    base = server_factory(name, AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    open_blog(page, base)
    expect(page.locator("#chat-log .empty")).to_be_visible()
    other = page.context.new_page()
    other.js_errors = []  # type: ignore[attr-defined]
    other.on("pageerror", lambda exc: other.js_errors.append(str(exc)))  # type: ignore[attr-defined]
    other.goto(page.url)
    expect(other.locator("#chat-log .empty")).to_be_visible()
    expect_blog_live(other)
    expect_blog_live(page)
    return base, other


def listening_again(tab) -> None:
    """Forget that the tab's stream of the blog opened: `expect_blog_live` then waits for its next one."""
    tab.evaluate("document.documentElement.removeAttribute('data-blog-live')")


def test_a_tab_showing_no_chat_takes_up_the_chat_its_person_starts_in_another(server_factory, page):
    """A's first message starts a chat: B, showing none, takes it up in place (the message, the answer
    followed to its end) with the words typed in its box kept, and B's next message goes to that chat,
    which A then shows too. One chat in the end. Before, B heard nothing and started a chat of its own."""
    _base, other = two_tabs_showing_no_chat(server_factory, page, "tabs-take-up")
    chat_input(other).fill("list my posts")  # typed in B, not sent yet
    listening_again(page)

    send(page, "draft a post titled Started in A")
    expect(user_messages(other)).to_have_count(1)
    expect(user_messages(other).first).to_have_text("draft a post titled Started in A")
    wait_turn_finished(other)
    expect(replies(other)).to_have_count(1)
    wait_turn_finished(page)
    assert replies(other).last.inner_text() == replies(page).last.inner_text()
    expect(other.locator("#chat-log .empty")).to_be_hidden()  # (the hint gives way to the chat)
    expect(chat_input(other)).to_have_value("list my posts")
    chat = page.evaluate("document.getElementById('chat-form').getAttribute('hx-post')")
    assert other.evaluate("document.getElementById('chat-form').getAttribute('hx-post')") == chat
    expect_blog_live(page)  # A's stream names the chat its first message started

    chat_input(other).press("Enter")  # into A's chat
    expect(user_messages(other)).to_have_count(2)
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Here are your posts")
    expect(user_messages(page)).to_have_count(2)  # A hears B's message in the chat it started
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Here are your posts")
    other.reload()
    expect(user_messages(other)).to_have_count(2)
    expect(other.locator("#assistant .history")).to_have_count(0)  # one chat: no earlier ones to list
    assert page.js_errors == [] and other.js_errors == []  # type: ignore[attr-defined]


def test_a_tab_showing_no_chat_takes_up_a_new_chat_started_in_another_and_follows_it(server_factory, page):
    """New chat in A, then a message there: B takes up the (empty) chat at once and shows the message and
    its answer live."""
    _base, other = two_tabs_showing_no_chat(server_factory, page, "tabs-take-up-new")
    listening_again(other)
    page.locator("#assistant").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"[?&]chat="))
    chat = page.url.split("chat=")[1]
    expect(other.locator(f'#page-stream[sse-connect*="?chat={chat}"]')).to_have_count(1)
    expect_blog_live(other)  # B's stream now names the chat
    expect_blog_live(page)

    send(page, "list my posts")
    expect(user_messages(other)).to_have_count(1)
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Here are your posts")
    expect(other.locator("#chat-log .empty")).to_be_hidden()  # (the hint gives way to the chat)
    assert page.js_errors == [] and other.js_errors == []  # type: ignore[attr-defined]


def test_a_chat_started_in_another_tab_joins_the_list_of_a_tab_showing_a_chat_with_its_first_message(
    server_factory, page
):
    """A shows chat X, words typed in its box; New chat in B starts Y: with nothing said in Y, A lists
    it nowhere (a chat with nothing said is listed only where it is shown); B's first message in Y puts
    it in A's list at once, named by that message as B's list names it, X still shown and marked, the
    words still there. Before, A's list showed Y as "Untitled chat" as soon as B pressed New chat."""
    base = server_factory("tabs-list", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    new_chat(page, base)
    expect_blog_live(page)
    shown = page.url
    other = second_tab(page, base)
    chat_input(page).fill("words typed in A")
    expect(page.locator("#assistant .history")).to_have_count(0)  # one chat: no earlier ones to list

    other.locator("#assistant").get_by_role("button", name="New chat").click()
    other.wait_for_url(lambda url: "chat=" in url and url != shown)
    started = other.url.split("chat=")[1]
    expect_blog_live(other)
    expect(page.locator("#assistant .history")).to_have_count(0)  # (Y, nothing said in it, is not listed in A)

    ask(other, "list my posts")
    entries = page.locator("#assistant .history li a:not(.all-chats)")  # (the chats, not the link to them all)
    expect(page.locator(f'#assistant .history a[href="?chat={started}"] .chat-label')).to_have_text("list my posts")
    expect(entries).to_have_count(2)
    current = shown.split("chat=")[1]
    expect(page.locator("#assistant .history a[aria-current]")).to_have_attribute("href", f"?chat={current}")
    assert page.url == shown
    expect(chat_input(page)).to_have_value("words typed in A")
    expect(page.locator(f'#page-stream[sse-connect*="?chat={current}"]')).to_have_count(1)
    page.locator("#assistant .history summary").click()
    expect(page.locator("#assistant .history")).to_have_attribute("open", "")
    expect(page.locator(f'#assistant .history a[href="?chat={started}"] .chat-label')).to_have_text("list my posts")
    expect(chat_input(page)).to_have_value("words typed in A")
    assert page.js_errors == []  # type: ignore[attr-defined]


# Each fetch of a panel's list of chats, held until the page has done with its answer (a task later).
WATCH_LIST_READS = """
window.listReads = [];
const fetched = window.fetch;
window.fetch = function (url, options) {
  const answer = fetched.call(this, url, options);
  if (String(url).includes("/chats/list")) {
    window.listReads.push(answer.then((r) => r.clone().text()).then(() => new Promise((done) => setTimeout(done, 0))));
  }
  return answer;
};
"""


def test_opening_the_list_of_earlier_chats_leaves_entries_still_true_in_place(server_factory, page):
    """Opening "Earlier chats" reads the list again; when nothing changed, the entries shown stay the
    same elements. Before, they were swapped for equal ones just after the list opened, so a tap landing
    then was lost (and a phone test measuring the list found it gone)."""
    base = server_factory("tabs-list-kept", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(WATCH_LIST_READS)
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "list my posts")
    first = page.url
    page.locator("#assistant").get_by_role("button", name="New chat").click()
    page.wait_for_url(lambda url: "chat=" in url and url != first)
    expect(page.locator("#assistant .history li a", has_text="list my posts")).to_have_count(1)
    page.evaluate("document.querySelector('#assistant .history ul').dataset.kept = 'yes'")
    page.locator("#assistant .history summary").click()
    expect(page.locator("#assistant .history ul")).to_be_visible()
    page.wait_for_function("window.listReads.length > 0")
    page.evaluate("Promise.all(window.listReads)")
    expect(page.locator("#assistant .history ul")).to_have_attribute("data-kept", "yes")
    expect(page.locator("#assistant .history li a", has_text="list my posts").first).to_be_visible()
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_the_list_of_earlier_chats_follows_chats_deleted_elsewhere_down_to_none(server_factory, page, request):
    """Chats X and Y, Y shown with both listed; X deleted elsewhere (here by a script on the server):
    opening the list reads it again, and with one chat left, the one shown, it goes, as a reload draws
    it. Before, an answer without a list left the stale one in place, X's entry still there."""
    server = server_factory("tabs-list-shrinks", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS)
    request.addfinalizer(server.stop)  # (its own: stopped now, its PostgreSQL connections with it)
    page.context.add_init_script(WATCH_LIST_READS)
    login(page, server.url, "alice")
    new_chat(page, server.url)
    ask(page, "list my posts")
    first = page.url.split("chat=")[1]
    page.locator("#assistant").get_by_role("button", name="New chat").click()
    page.wait_for_url(lambda url: "chat=" in url and not url.endswith(first))
    entries = page.locator("#assistant .history li a:not(.all-chats)")  # (the chats, not the link to them all)
    expect(entries).to_have_count(2)

    manage(
        server.env,
        server.log,
        "shell",
        "-c",
        f"from agent.models import Session; Session.objects.filter(pk='{first}').delete()",
    )
    page.locator("#assistant .history summary").click()
    page.wait_for_function("window.listReads.length > 0")
    page.evaluate("Promise.all(window.listReads)")
    expect(page.locator("#assistant .history")).to_have_count(0)
    page.reload()
    expect(page.locator("#assistant .history")).to_have_count(0)
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_a_tab_whose_stream_was_down_while_the_other_acted_catches_up_when_it_listens_again(server_factory, page):
    """B's live stream is down (reconnecting) while A approves a waiting publish and sends one more
    message: once it listens again B shows the card decided, the resumed answer, the message and its
    answer, without a reload. Before, notices sent meanwhile were lost: B stayed as it was."""
    base = server_factory("tabs-catch-up", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Caught up")
    ask(page, "publish Caught up")
    down = re.compile(r"/events/")
    other = page.context.new_page()
    other.route(down, lambda route: route.abort())
    other.goto(page.url)
    card = other.locator("#chat-log .approval")
    expect(card).to_contain_text("Needs your OK")

    page.locator("#chat-log .approval").get_by_role("button", name="Approve").click()
    expect(page.locator("#chat-log .approval")).to_have_text("Approved.")
    expect(replies(page).last).to_contain_text("Done: I published")
    wait_turn_finished(page)
    ask(page, "list my posts")
    expect(user_messages(other)).to_have_count(2)  # (B heard none of it)
    other.unroute(down)

    expect(card).to_have_text("Approved.", timeout=LONG_WAIT)
    expect(user_messages(other)).to_have_count(3)
    expect(user_messages(other).last).to_have_text("list my posts")
    wait_turn_finished(other)
    expect(replies(other).filter(has_text="Done: I published")).to_have_count(1)
    expect(replies(other).last).to_contain_text("Here are your posts")
    assert [reply.inner_text() for reply in replies(other).all()] == [
        reply.inner_text() for reply in replies(page).all()
    ]
    expect(chip(other, "publish_post")).to_contain_text("done")
    assert other.url == page.url


def deaf_tab_showing_no_chat(page, url: str):
    """Tab B of the page A (`page`) shows, drawn while it showed no chat, its live stream of the blog
    down throughout: it never hears of the chat A starts, so its first message goes as if sent at the
    same moment as A's."""
    other = page.context.new_page()
    other.js_errors = []  # type: ignore[attr-defined]
    other.on("pageerror", lambda exc: other.js_errors.append(str(exc)))  # type: ignore[attr-defined]
    other.route(re.compile(r"/blogs/[^/]+/events/"), lambda route: route.abort())
    other.goto(url)
    expect(other.locator("#chat-log .empty")).to_be_visible()
    return other


def test_first_messages_of_two_tabs_showing_no_chat_go_to_one_chat(server_factory, page, request):
    """A and B show no chat, and B hears nothing of A (as when both send at once). On the blog page, A's
    message is answered, then B's first message goes to A's chat: B shows A's exchange, then its own
    message and answer, its form pointing at that chat. Beside a post's editor, B sends while A's answer
    there runs: B follows that answer, its words waiting in the box, and sends them into that chat once it
    ends. One chat in each panel. Before, each first message made a chat of its own."""
    server = server_factory("tabs-first-race", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="40", **NO_LIMITS)
    request.addfinalizer(server.stop)  # (its own: stopped now, its PostgreSQL connections with it)
    base = server.url
    login(page, base, "alice")
    open_blog(page, base)
    other = deaf_tab_showing_no_chat(page, page.url)
    ask(page, "list my posts")
    chat_input(other).fill("draft a post titled From B")
    chat_input(other).press("Enter")
    expect(user_messages(other)).to_have_count(2)
    wait_turn_finished(other)
    expect(user_messages(other)).to_have_text(["list my posts", "draft a post titled From B"])
    expect(replies(other).first).to_contain_text("Here are your posts")
    expect(replies(other)).to_have_count(2)
    chat = page.evaluate("document.getElementById('chat-form').getAttribute('hx-post')")
    assert other.evaluate("document.getElementById('chat-form').getAttribute('hx-post')") == chat
    expect(chat_input(other)).to_have_value("")
    page.reload()
    expect(user_messages(page)).to_have_text(["list my posts", "draft a post titled From B"])
    expect(page.locator("#assistant .history")).to_have_count(0)  # one chat: no earlier ones to list

    open_editor(page, base)
    beside = deaf_tab_showing_no_chat(page, page.url)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    box = chat_input(beside)
    box.fill("list my posts")
    box.press("Enter")
    expect(chat_log(beside).locator(".notice")).to_contain_text("Your message is still in the box")
    expect(user_messages(beside)).to_have_text(["write something long"])
    expect(streaming_reply(beside).locator(".flow")).to_contain_text("Paragraph 4:")  # it follows the answer
    expect(box).to_have_value("list my posts")
    beside.locator("#chat-stop").click()
    wait_turn_finished(beside)
    box.press("Enter")
    expect(user_messages(beside)).to_have_count(2)
    wait_turn_finished(beside)
    expect(replies(beside).last).to_contain_text("Here are your posts")
    beside.reload()
    expect(user_messages(beside)).to_have_text(["write something long", "list my posts"])
    expect(beside.locator("#assistant .history")).to_have_count(0)
    assert other.js_errors == [] and beside.js_errors == []  # type: ignore[attr-defined]


def open_editor(tab, base: str) -> None:
    """The editor of the blog's first post, its chat panel beside it."""
    open_blog(tab, base)
    tab.locator("#post-list li.post").first.get_by_role("link", name="Edit").click()
    tab.wait_for_url(re.compile(r"/posts/\d+/edit/$"))


def test_a_tab_pointing_its_stream_at_the_chat_it_started_leaves_the_persons_other_tabs_listening(server_factory, page):
    """Two places for alice's open pages: an editor tab, then a blog tab whose first message starts a
    chat, its stream then naming it. The stream it replaced frees its place at once, so the editor tab
    (the oldest) keeps listening. Before, the replaced stream kept its place until its next heartbeat,
    and the editor tab was stopped as one tab too many."""
    base = server_factory(
        "tabs-places", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", AGENT_MAX_STREAMS_PER_USER="2", **NO_LIMITS
    ).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    editor = page.context.new_page()
    open_editor(editor, base)
    expect_blog_live(editor)
    open_blog(page, base)
    expect(page.locator("#chat-log .empty")).to_be_visible()
    expect_blog_live(page)
    listening_again(page)

    ask(page, "list my posts")
    expect(page.locator('#page-stream[sse-connect*="?chat="]')).to_have_count(1)
    expect_blog_live(page)  # its stream now names the chat
    page.wait_for_timeout(1_000)  # (a stop would have reached the editor tab by now)
    expect(editor.locator("#live-status")).to_be_empty()
    expect(page.locator("#live-status")).to_be_empty()


def test_an_editor_tab_showing_no_chat_takes_up_the_chat_its_person_starts_beside_the_same_post(server_factory, page):
    """Tabs A and B on one post's editor, and C on the blog page, none showing a chat: A's first message
    there starts a chat about the post. B takes it up in place, its typed words kept, and follows the
    answer; C, whose panel is the blog's, does not."""
    base = server_factory("tabs-editor", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    open_editor(page, base)
    other, blog_tab = page.context.new_page(), page.context.new_page()
    errors: list[str] = []
    other.on("pageerror", lambda exc: errors.append(str(exc)))
    other.goto(page.url)
    open_blog(blog_tab, base)
    for tab in (page, other, blog_tab):
        expect(tab.locator("#chat-log .empty")).to_be_visible()
        expect_blog_live(tab)
    chat_input(other).fill("words typed in B")

    send(page, "list my posts")
    expect(user_messages(other)).to_have_count(1)
    expect(user_messages(other).first).to_have_text("list my posts")
    wait_turn_finished(other)
    wait_turn_finished(page)
    assert replies(other).last.inner_text() == replies(page).last.inner_text()
    expect(chat_input(other)).to_have_value("words typed in B")
    chat = page.evaluate("document.getElementById('chat-form').getAttribute('hx-post')")
    assert other.evaluate("document.getElementById('chat-form').getAttribute('hx-post')") == chat
    expect(blog_tab.locator("#chat-log .empty")).to_be_visible()  # the blog's panel: not this chat
    expect(user_messages(blog_tab)).to_have_count(0)
    assert errors == []


# Tabs, third round: a page whose stream was down catches up on more than its chat -------------------------


def deaf_tab(page, url: str):
    """Tab B opened on `url` with its live stream down (reconnecting) until `other.unroute(DOWN)`."""
    other = page.context.new_page()
    other.js_errors = []  # type: ignore[attr-defined]
    other.on("pageerror", lambda exc: other.js_errors.append(str(exc)))  # type: ignore[attr-defined]
    other.route(DOWN, lambda route: route.abort())
    other.goto(url)
    return other


DOWN = re.compile(r"/events/")


def test_a_blog_tab_whose_stream_was_down_while_a_post_was_written_elsewhere_lists_it_when_it_listens_again(
    server_factory, page
):
    """A writes a new draft while B's live stream is down: once it listens again, B's post list shows it,
    without a reload. Before, B's list stayed as it was until the blog's next change."""
    base = server_factory("tabs-blog-catch-up", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    other = deaf_tab(page, f"{base}/blogs/{BLOG}/")
    expect(other.locator("#post-list li.post").first).to_be_visible()

    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill("Written while B was deaf")
    page.get_by_label("Body (markdown)").fill("Hello from A.")
    page.locator("#post-form").get_by_role("button", name="Create draft").click()
    expect(post_item(page, "Written while B was deaf")).to_have_count(1)
    expect(post_item(other, "Written while B was deaf")).to_have_count(0)  # (B heard none of it)
    other.unroute(DOWN)

    expect(post_item(other, "Written while B was deaf")).to_contain_text("Draft", timeout=LONG_WAIT)
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_an_editor_whose_stream_was_down_while_its_post_was_saved_elsewhere_shows_the_change_and_keeps_the_words(
    server_factory, page
):
    """B edits a post, words typed and not saved, its live stream down while A saves the same post: once
    B listens again it shows the card "This post changed while you were editing" with A's words, its own
    still in the box, as when it hears the change live. Before, B showed nothing (a save would have
    overwritten A's words unseen)."""
    base = server_factory("tabs-blog-catch-up", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    open_editor(page, base)
    other = deaf_tab(page, page.url)
    body = other.get_by_label("Body (markdown)")
    body.fill("Words typed in B, not saved.")

    page.get_by_label("Body (markdown)").fill("Saved from A.")
    page.locator("#post-form").get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(other.locator("#incoming .incoming")).to_have_count(0)  # (B heard none of it)
    other.unroute(DOWN)

    card = other.locator("#incoming .incoming")
    expect(card).to_contain_text("This post changed while you were editing", timeout=LONG_WAIT)
    expect(card.locator(".diff")).to_contain_text("Saved from A.")
    expect(body).to_have_value("Words typed in B, not saved.")
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_a_tab_showing_no_chat_whose_stream_was_down_takes_up_the_chat_its_person_started_meanwhile(
    server_factory, page
):
    """A's first message starts a chat while B, showing none, has its live stream down: once B listens
    again it takes the chat up in place, as on hearing it live (the message and answer, its form and
    stream naming the chat, the words typed in B kept). Before, B stayed on the panel's first words."""
    base = server_factory("tabs-take-up-down", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    open_blog(page, base)
    expect(page.locator("#chat-log .empty")).to_be_visible()
    other = deaf_tab(page, page.url)
    expect(other.locator("#chat-log .empty")).to_be_visible()
    chat_input(other).fill("words typed in B")

    ask(page, "list my posts")
    expect(user_messages(other)).to_have_count(0)  # (B heard none of it)
    other.unroute(DOWN)

    expect(user_messages(other)).to_have_count(1, timeout=LONG_WAIT)
    expect(user_messages(other).first).to_have_text("list my posts")
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Here are your posts")
    assert replies(other).last.inner_text() == replies(page).last.inner_text()
    expect(chat_input(other)).to_have_value("words typed in B")
    chat = page.evaluate("document.getElementById('chat-form').getAttribute('hx-post')")
    assert other.evaluate("document.getElementById('chat-form').getAttribute('hx-post')") == chat
    expect(other.locator('#page-stream[sse-connect*="?chat="]')).to_have_count(1)
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_a_message_sent_while_the_catch_up_asks_is_drawn_once(demo_server, page):
    """The page's stream opens again and its catch-up asks for the turns after the last it shows; the
    person sends a message just then, and the catch-up's answer (held until the message's turn has run)
    brings that very turn: the log shows it once. Before, it was drawn twice."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "list my posts")
    held: list = []
    page.route(re.compile(r"/news\?after="), lambda route: route.continue_() if held else held.append(route))
    page.route(DOWN, lambda route: route.abort())
    page.reload()
    expect(replies(page)).to_have_count(1)
    with page.expect_request(re.compile(r"/news\?after="), timeout=LONG_WAIT):
        page.unroute(DOWN)

    ask(page, "list my posts again")
    turn = replies(page).last.get_attribute("id").removeprefix("turn-")
    with page.expect_request(re.compile(rf"/news\?after={turn}$")):  # (asked once it drew the answer held)
        held[0].continue_()
    expect(user_messages(page)).to_have_count(2)
    expect(replies(page)).to_have_count(2)
    assert page.locator(f"#turn-{turn}").count() == 1
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_a_message_whose_turn_the_catch_up_drew_before_the_message_was_stored_is_shown(demo_server, page):
    """The catch-up asked just as the person sent a message, and the server read the message's turn in the
    moment after it began and before its message was stored (seen under load on PostgreSQL): the catch-up
    drew the answer alone. The message's own answer, coming second, was then left out whole as already
    shown, and the person's message was missing until a reload. It now goes in before its answer."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    held_news: list = []
    page.route(re.compile(r"/news\?after="), lambda route: held_news.append(route))
    page.route(DOWN, lambda route: route.abort())
    page.reload()
    with page.expect_request(re.compile(r"/news\?after=")) as asked:
        page.unroute(DOWN)  # (its stream opens: the catch-up asks, held here)
    # (The page left by the reload may have asked too, as the new chat's stream opened, and been held here
    # first: the reloaded page's catch-up is the one that waits.)
    while (catch_up := next((r for r in held_news if r.request is asked.value), None)) is None:
        page.wait_for_timeout(50)

    sent: list = []
    page.route(re.compile(r"/chat/[0-9a-f-]+/send$"), lambda route: sent.append((route, route.fetch())))
    chat_input(page).fill("list my posts")
    chat_input(page).press("Enter")
    while not sent:  # (the message is stored and its turn runs; its answer to this page waits here)
        page.wait_for_timeout(50)
    news = catch_up.fetch()  # (now it finds the turn; as read before the message was stored:)
    alone = re.sub(r'<article class="msg user">.*?</article>', "", news.text(), flags=re.S)
    assert alone != news.text()
    catch_up.fulfill(response=news, body=alone)
    expect(replies(page)).to_have_count(1)
    expect(user_messages(page)).to_have_count(0)

    route, answer = sent[0]
    route.fulfill(response=answer)
    expect(user_messages(page)).to_have_text(["list my posts"])
    wait_turn_finished(page)
    expect(replies(page)).to_have_count(1)
    order = "log => [...log.querySelectorAll('article.msg')].map(a => a.classList.contains('user') ? 'user' : 'reply')"
    assert chat_log(page).evaluate(order) == ["user", "reply"]
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_another_tab_whose_catch_up_drew_a_turn_before_its_message_was_stored_shows_the_message(demo_server, page):
    """As above, in the person's other tab: its stream opened just as the person sent a message in this one,
    and its catch-up read the message's turn before the message was stored, so it drew the answer alone.
    That tab has no answer of its own to bring the message, and the notice of the turn was passed over
    (the turn was shown): the message was missing there until a reload. A notice naming a turn shown
    without its message now fetches it again, and the message goes in before its answer."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    other = page.context.new_page()
    errors: list[str] = []
    other.on("pageerror", lambda exc: errors.append(str(exc)))
    held_news: list = []  # (the first catch-up is held; those after it go on)
    other.route(re.compile(r"/news\?after="), lambda r: r.continue_() if held_news else held_news.append(r))
    other.route(DOWN, lambda route: route.abort())
    other.goto(page.url)
    expect(chat_input(other)).to_be_enabled()
    with other.expect_request(re.compile(r"/news\?after=")):
        other.unroute(DOWN)  # (its stream opens: the catch-up asks, held here)

    send(page, "list my posts")  # (stored, its turn begun: the other tab's stream hears of it)
    wait_turn_finished(page)
    news = held_news[0].fetch()  # (as the catch-up read it before the message was stored:)
    alone = re.sub(r'<article class="msg user">.*?</article>', "", news.text(), flags=re.S)
    assert alone != news.text()
    held_news[0].fulfill(response=news, body=alone)

    expect(user_messages(other)).to_have_text(["list my posts"])
    expect(replies(other)).to_have_count(1)
    order = "log => [...log.querySelectorAll('article.msg')].map(a => a.classList.contains('user') ? 'user' : 'reply')"
    assert chat_log(other).evaluate(order) == ["user", "reply"]
    assert errors == []
    assert page.js_errors == []  # type: ignore[attr-defined]
