"""The assistant panel as a new user meets it, in a real browser against a real server."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from agent.budget import MESSAGES
from agent.loop import CALM, LASTING
from tests.e2e.ui import (
    BLOG,
    LONG_WAIT,
    WATCH_STREAMING,
    ask,
    chat_input,
    chat_log,
    chip,
    expect_writable_not_sendable,
    fill_sign_in,
    login,
    new_chat,
    open_blog,
    post_item,
    replies,
    send,
    send_button,
    sign_out_elsewhere,
    streaming_reply,
    user_messages,
    wait_settled,
    wait_turn_finished,
)

# A provider's lasting refusal (a wrong key or model): no "try again", which would not help.
PROVIDER_ERROR = LASTING["refused"]
XSS_TITLE = "<img src=x onerror=window.__xss=1>"
XSS_FORM_TITLE = "<img src=x onerror=window.__xss=2>"


def _normal(text: str) -> str:
    return " ".join(text.split())


def test_draft_streams_and_the_post_list_updates_live(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    page.evaluate("window.__marker = 1")
    page.evaluate(WATCH_STREAMING)

    send(page, "draft a post titled Morning light")

    # Tokens arrive while the typing indicator still shows.
    page.wait_for_function("() => window.__lengths.length >= 2")
    expect(chip(page, "create_post")).to_be_visible()
    expect(chip(page, "create_post").locator(".chip-status")).to_have_text("done")
    expect(post_item(page, "Morning light")).to_be_visible()
    expect(post_item(page, "Morning light").locator(".badge")).to_have_text("Draft")
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Done: I drafted “Morning light”.")
    assert page.evaluate("window.__marker") == 1, "the page was reloaded"

    # Publishing waits for the person's OK (AGENT_CONFIRM_TOOLS), then happens live.
    reply = ask(page, "publish Morning light")
    expect(reply.locator(".chip-name", has_text="publish_post")).to_be_visible()
    approval = reply.locator(".approval")
    expect(approval).to_contain_text("Needs your OK")
    expect(post_item(page, "Morning light").locator(".badge")).to_have_text("Draft")
    approval.get_by_role("button", name="Approve").click()
    expect(post_item(page, "Morning light").locator(".badge")).to_have_text("Published")
    wait_turn_finished(page)
    expect(chat_log(page)).to_contain_text("Done: I published “Morning light”.")
    assert page.evaluate("window.__marker") == 1, "the page was reloaded"
    assert page.js_errors == []


def test_enter_sends_and_shift_enter_adds_a_line(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    box = chat_input(page)

    box.click()
    box.press_sequentially("list my posts")
    box.press("Shift+Enter")
    box.press_sequentially("please")
    expect(box).to_have_value("list my posts\nplease")
    expect(user_messages(page)).to_have_count(0)
    expect(replies(page)).to_have_count(0)

    box.press("Enter")
    expect_writable_not_sendable(page)  # the turn runs: the next message may be written, not sent
    expect(page.locator("#chat-stop")).to_be_visible()
    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_contain_text("list my posts")
    expect(user_messages(page).first).to_contain_text("please")
    assert user_messages(page).first.locator("br").count() == 1  # the new line is kept

    wait_turn_finished(page)
    expect(box).to_be_enabled()
    expect(box).to_have_value("")
    expect(page.locator("#chat-stop")).to_be_hidden()
    expect(replies(page).last).to_contain_text("Here are your posts")
    expect(replies(page).last).to_contain_text("Welcome to Field Notes")


def test_stop_keeps_the_partial_reply(slow_demo_server, page):
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)

    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 3:")
    held = []  # the Stop request, held back: the button shows it was heard until the answer ends

    def hold(route):
        held.append(route)

    page.route(re.compile(r"/stop$"), hold)
    page.locator("#chat-stop").click()
    expect(page.locator("#chat-stop")).to_have_text("Stopping…")
    expect(page.locator("#chat-stop")).to_be_disabled()
    held[0].continue_()

    wait_turn_finished(page)
    reply = replies(page).last
    expect(reply.locator(".note")).to_have_text("Stopped.")
    expect(reply).to_contain_text("Paragraph 3:")
    assert "Paragraph 40:" not in reply.inner_text()
    partial = _normal(reply.locator(".flow").inner_text())

    # The form works again.
    expect(chat_input(page)).to_be_enabled()
    expect(page.locator("#chat-send")).to_be_enabled()
    expect(page.locator("#chat-stop")).to_be_hidden()

    page.reload()
    expect(user_messages(page)).to_have_count(1)
    expect(replies(page)).to_have_count(1)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")
    assert _normal(replies(page).last.locator(".flow").inner_text()) == partial

    reply = ask(page, "list my posts")
    expect(reply).to_contain_text("Here are your posts")


def test_reload_mid_turn_follows_the_reply_to_its_end(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)

    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    page.reload()

    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_have_text("write something long")
    expect_writable_not_sendable(page)  # the turn is still running
    wait_turn_finished(page, timeout=LONG_WAIT)
    reply = replies(page).last
    expect(reply).to_contain_text("Paragraph 40:")
    text = reply.inner_text()
    assert text.count("Paragraph 1:") == 1
    expect(user_messages(page)).to_have_count(1)
    expect(replies(page)).to_have_count(1)

    page.reload()
    expect(user_messages(page)).to_have_count(1)
    expect(replies(page)).to_have_count(1)
    expect(replies(page).last).to_contain_text("Paragraph 40:")


def test_a_finished_reply_keeps_the_room_its_paragraphs_took_while_streaming(demo_server, page):
    """Streamed, a reply's paragraphs are its text with a blank line between them; finished, they are its
    markdown's paragraphs. Spaced alike, the reply does not shrink (and the log jump) as it ends."""
    from blog.demo import LONG_TEXT

    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    wait_turn_finished(page, timeout=LONG_WAIT)
    flow = replies(page).last.locator(".flow.final")
    expect(flow).to_contain_text("Paragraph 40:")
    heights = flow.evaluate(
        """(final, text) => {
            const streamed = document.createElement("div");
            streamed.className = "flow";  // (as the reply streams: its text as it came)
            streamed.textContent = text;
            final.after(streamed);
            const sizes = [final.getBoundingClientRect().height, streamed.getBoundingClientRect().height];
            streamed.remove();
            return sizes;
        }""",
        LONG_TEXT,
    )
    assert abs(heights[0] - heights[1]) <= 2, heights


# A browser set to block sites' data: reading `sessionStorage` throws (a SecurityError), as Chromium's does.
BLOCK_STORAGE = """
Object.defineProperty(window, "sessionStorage", {
  configurable: true,
  get() { throw new DOMException("Access is denied for this document.", "SecurityError"); },
});
"""


def test_a_browser_that_blocks_storage_still_gets_the_whole_chat(demo_server, page):
    """What the panel keeps in session storage (the words typed, that New chat was pressed) is not kept
    when the browser refuses it; everything else works as ever: New chat, sending, a page reloaded while
    an answer runs rests its form. (An error there stopped the page's start, which rests the form.)"""
    base = demo_server.url
    login(page, base, "alice")
    page.add_init_script(BLOCK_STORAGE)
    new_chat(page, base)
    assert page.evaluate("() => { try { return !!window.sessionStorage; } catch (e) { return e.name; } }") == (
        "SecurityError"
    )

    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    page.reload()

    expect_writable_not_sendable(page)  # the turn is still running: nothing can be sent
    expect(page.locator("#chat-stop")).to_be_visible()
    page.locator("#chat-stop").click()
    wait_turn_finished(page)
    expect(chat_input(page)).to_be_enabled()
    assert page.js_errors == []


def test_budget_limit_shows_one_calm_line(server_factory, page):
    server = server_factory(
        "budget", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", AGENT_BUDGET_TOKENS_PER_MINUTE="1"
    )
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)

    first = ask(page, "hello")  # an empty bucket admits one call
    expect(first).to_contain_text("offline demo assistant")

    second = ask(page, "list my posts")
    error = second.locator(".chat-error")
    expect(error).to_have_count(1)
    expect(error).to_contain_text(MESSAGES["minute"])
    expect(error).to_contain_text(re.compile(r"minute\. Try again in \d+ s\."))
    expect(second.locator(".chip")).to_have_count(0)
    expect(user_messages(page)).to_have_count(2)
    expect(user_messages(page).last).to_have_text("list my posts")

    page.reload()
    expect(user_messages(page)).to_have_count(2)
    expect(user_messages(page).last).to_have_text("list my posts")
    expect(replies(page).last.locator(".chat-error")).to_contain_text(MESSAGES["minute"])


def test_a_spent_budget_offers_try_again_once_its_wait_is_over(server_factory, page):
    """The button is there from the start, hidden while the wait counts down; shown when it ends, pressed it
    asks for the answer again, which the budget guards again before its model call."""
    server = server_factory(
        "budget-try-again", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", AGENT_BUDGET_TOKENS_PER_MINUTE="1"
    )
    base = server.url
    page.clock.install()
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "hello")  # an empty bucket admits one call
    spent = ask(page, "list my posts")
    seconds = int(spent.locator(".chat-error .retry").get_attribute("data-retry-seconds"))
    again = spent.get_by_role("button", name="Try again")
    expect(again).to_be_hidden()
    page.clock.run_for(1000)
    expect(again).to_be_hidden()
    page.clock.run_for(seconds * 1000)
    expect(spent.locator(".chat-error")).to_contain_text("That wait is over: you can try again now.")
    expect(again).to_be_visible()
    expect(again).to_be_in_viewport()  # (the log, read to its end, still shows its end)
    end = "(() => { const log = document.getElementById('chat-log'); return log.scrollHeight - log.scrollTop - log.clientHeight; })()"
    assert page.evaluate(end) <= 1
    again.click()
    expect(replies(page)).to_have_count(3)
    expect(replies(page).last.locator(".chat-error")).to_contain_text(
        MESSAGES["minute"]
    )  # (this server's minute is not over)
    expect(page.locator("#try-again")).to_have_count(1)
    expect(user_messages(page)).to_have_count(2)


def test_provider_error_reads_calmly(server_factory, write_script, page):
    script = write_script(
        "provider-error", [[{"kind": "text", "text": "Partial"}, {"kind": "error", "retryable": False}]]
    )
    server = server_factory("fake-error", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script)
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)

    reply = ask(page, "hello?")
    expect(reply.locator(".chat-error")).to_have_text(PROVIDER_ERROR)
    log = chat_log(page).inner_text()
    for leak in ("scripted failure", "BackendError", "Traceback", "Exception"):
        assert leak not in log
    expect(chat_input(page)).to_be_enabled()


def test_an_answer_that_failed_for_now_is_tried_again_with_one_press(server_factory, write_script, page):
    """The model's server failed mid-answer: "Try again" below the error asks for the answer again, without
    the message typed again. The new answer streams below the failed one, the button goes, and the chat
    reads the same after a reload; the person's message shows once."""
    script = write_script(
        "fails-then-answers",
        [
            [{"kind": "text", "text": "Your posts are"}, {"kind": "error", "retryable": True}],
            [{"kind": "text", "text": "You have two posts."}, {"kind": "done", "stop_reason": "end_turn"}],
        ],
    )
    server = server_factory("fake-fails-then-answers", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script)
    login(page, server.url, "alice")
    new_chat(page, server.url)

    reply = ask(page, "how many posts do I have?")
    expect(reply.locator(".chat-error")).to_have_text(CALM["provider_error"])
    again = reply.get_by_role("button", name="Try again")
    expect(again).to_be_visible()
    # The new turn's notice reaches this page too, which asks for the turn again (it shows no message before
    # it, as a message's turn would); held here until the answer has ended, so what it brings comes last.
    held: list = []
    page.route(re.compile(r"/news\?turn="), lambda route: held.append(route))
    again.click()
    expect(replies(page)).to_have_count(2)
    expect(replies(page).last).to_have_text("You have two posts.")
    expect(page.locator("#chat-log article.streaming")).to_have_count(0)
    while not held:
        page.wait_for_timeout(50)
    with page.expect_response(re.compile(r"/news\?turn=")):
        held[0].continue_()
    wait_settled(page)
    expect(send_button(page)).to_be_enabled()  # (the turn brought again, already ended, marks nothing as answering)
    expect(page.locator("#chat-stop")).to_be_hidden()
    expect(page.get_by_role("button", name="Try again")).to_have_count(0)
    expect(user_messages(page)).to_have_text(["how many posts do I have?"])
    expect(chat_input(page)).to_be_enabled()

    page.reload()
    expect(user_messages(page)).to_have_text(["how many posts do I have?"])
    expect(replies(page)).to_have_count(2)
    expect(replies(page).first).to_contain_text("Your posts are")
    expect(replies(page).last).to_have_text("You have two posts.")
    expect(page.get_by_role("button", name="Try again")).to_have_count(0)
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_stop_reaches_a_model_still_thinking(server_factory, write_script, page):
    """A model that thinks in silence (nothing streamed for a minute) stops when Stop is pressed,
    not when it next speaks: the server cuts its read (a real gunicorn + gevent worker)."""
    script = write_script(
        "silent",
        [
            [
                {"kind": "reasoning", "text": "Weighing every word."},
                {"kind": "text", "text": "Too late.", "delay_ms": 60_000},
                {"kind": "done", "stop_reason": "end_turn"},
            ]
        ],
    )
    server = server_factory("fake-silent", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script)
    login(page, server.url, "alice")
    new_chat(page, server.url)

    send(page, "think it over")
    expect(streaming_reply(page)).to_contain_text("Weighing every word.")
    page.locator("#chat-stop").click()
    wait_turn_finished(page)  # (within the page's usual wait: the silence lasts a minute)
    reply = replies(page).last
    expect(reply.locator(".note")).to_have_text("Stopped.")
    expect(reply.locator("details.thinking .think")).to_have_text("Weighing every word.")
    assert "Too late." not in reply.inner_text()
    expect(chat_input(page)).to_be_enabled()


def test_the_thinking_shows_once_while_and_after_the_reply_streams(server_factory, write_script, page):
    """The live thinking block gives way to the reply's final one (it showed twice until a reload)."""
    script = write_script(
        "thinking",
        [
            [
                {"kind": "reasoning", "text": "The user says hello; "},
                {"kind": "reasoning", "text": "a short answer fits.", "delay_ms": 50},
                {"kind": "reasoning", "text": "", "signature": "c2lnbmVk"},
                {"kind": "text", "text": "Hello!", "delay_ms": 50},
                {"kind": "done", "stop_reason": "end_turn"},
            ]
        ],
    )
    server = server_factory("fake-thinking", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script)
    login(page, server.url, "alice")
    new_chat(page, server.url)

    reply = ask(page, "hello")
    expect(reply).to_contain_text("Hello!")
    expect(reply.locator("details.thinking")).to_have_count(1)
    expect(reply.locator("details.thinking .think")).to_have_text("The user says hello; a short answer fits.")
    page.reload()
    expect(replies(page).last.locator("details.thinking")).to_have_count(1)


def test_editor_without_consent_is_told_no(demo_server, page):
    base = demo_server.url
    login(page, base, "bob")
    new_chat(page, base)
    expect(page.locator("#assistant .grant")).to_contain_text("nothing until you allow it")

    reply = ask(page, "draft a post titled Nope")
    expect(reply).to_contain_text("I'm not allowed to draft posts on this blog for you.")
    expect(reply).not_to_contain_text("create_post")  # (the Clients screen's words, not a tool's name)
    expect(reply.locator(".chip")).to_have_count(0)
    expect(post_item(page, "Nope")).to_have_count(0)

    page.reload()
    expect(post_item(page, "Nope")).to_have_count(0)


def test_viewer_has_no_assistant(demo_server, page):
    base = demo_server.url
    login(page, base, "carol")
    open_blog(page, base)
    expect(page.locator("#post-list")).to_be_visible()
    expect(post_item(page, "Welcome to Field Notes")).to_be_visible()
    expect(page.locator("#assistant")).to_have_count(0)
    expect(page.locator("textarea[name=text]")).to_have_count(0)
    expect(page.get_by_role("link", name="New post")).to_have_count(0)


def test_titles_are_text_not_html(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")

    # One post through the "New post" form…
    open_blog(page, base)
    page.get_by_role("link", name="New post").click()
    page.get_by_label("Title").fill(XSS_FORM_TITLE)
    page.get_by_role("button", name="Create draft").click()
    expect(post_item(page, XSS_FORM_TITLE)).to_be_visible()

    # …and one through the assistant, whose chip shows the title too.
    new_chat(page, base)
    send(page, f"draft a post titled {XSS_TITLE}")
    expect(chip(page, "create_post").locator(".chip-input")).to_contain_text(XSS_TITLE)
    expect(post_item(page, XSS_TITLE)).to_be_visible()
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text(f"Done: I drafted “{XSS_TITLE}”.")

    reply = ask(page, "list my posts")
    expect(reply).to_contain_text(XSS_TITLE)
    expect(reply).to_contain_text(XSS_FORM_TITLE)

    page.reload()
    expect(post_item(page, XSS_TITLE)).to_be_visible()
    expect(chip(page, "create_post").locator(".chip-input")).to_contain_text(XSS_TITLE)
    expect(page.locator("img[src=x]")).to_have_count(0)
    assert page.evaluate("typeof window.__xss") == "undefined"


PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
LONG_TITLE = "Observations-from-the-riverbank-at-dawn-with-herons-and-kingfishers"


def _assert_fits_phone(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone ({width}px wide)"


@pytest.mark.parametrize("context_options", [PHONE], ids=["390x844"])
def test_phone_width(demo_server, page, context_options):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    _assert_fits_phone(page)

    box = chat_input(page)
    box.scroll_into_view_if_needed()
    expect(box).to_be_visible()
    expect(page.locator("#chat-send")).to_be_visible()
    form = page.locator("#chat-form").bounding_box()
    assert form and form["x"] >= 0 and form["x"] + form["width"] <= 390

    # A long unbroken title lands in the post list and in a tool chip: still no sideways scroll.
    box.tap()
    reply = ask(page, f"draft a post titled {LONG_TITLE}")
    expect(reply).to_contain_text("Done: I drafted")
    expect(reply.locator(".chip")).to_be_visible()
    expect(post_item(page, LONG_TITLE)).to_be_visible()
    _assert_fits_phone(page)

    page.locator("#chat-send").scroll_into_view_if_needed()
    chat_input(page).fill("list my posts")
    page.locator("#chat-send").tap()
    expect(user_messages(page)).to_have_count(2)
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Here are your posts")
    expect(replies(page).last).to_contain_text(LONG_TITLE)
    _assert_fits_phone(page)
    assert f"/blogs/{BLOG}/" in page.url


def test_the_first_message_of_a_first_visit_creates_the_chat(server_factory, page):
    """Showing the blog page creates no chat; the first message does, and the form then belongs to it
    (Stop and the next message reach the new chat, and a reload resumes it)."""
    server = server_factory(
        "first-visit",
        AGENT_BACKEND="demo",
        AGENT_DEMO_DELAY_MS="40",
        AGENT_BUDGET_TOKENS_PER_MINUTE="0",
        AGENT_BUDGET_TOKENS_PER_HOUR="0",
    )
    base = server.url
    login(page, base, "alice")
    open_blog(page, base)
    expect(page.locator("#assistant .history")).to_have_count(0)  # no earlier chats: none was made
    expect(chat_input(page)).to_be_enabled()

    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    page.locator("#chat-stop").click()
    wait_turn_finished(page)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")

    reply = ask(page, "list my posts")
    expect(reply).to_contain_text("Here are your posts")
    page.reload()
    expect(user_messages(page)).to_have_count(2)  # both messages went to the one chat the first created
    expect(page.locator("#assistant .history")).to_have_count(0)
    assert page.js_errors == []


def test_a_style_another_script_left_on_the_form_is_not_copied_past_the_policy(server_factory, page):
    """An extension, autofill or a screenshot tool may style the message box from script (allowed);
    the first message's answer then replaces the form. htmx's settle step used to copy the old box's
    style attribute onto the new one, which the site's policy refuses (the page fixture fails on it)."""
    server = server_factory("first-visit-styled", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20")
    login(page, server.url, "alice")
    open_blog(page, server.url)
    page.evaluate(
        "(box => { box.style.outline = '1px solid'; box.style.outline = ''; })(document.getElementById('chat-text'))"
    )
    expect(page.locator("#chat-text[style]")).to_have_count(1)

    reply = ask(page, "list my posts")
    expect(reply).to_contain_text("Here are your posts")
    expect(page.locator("#chat-text[style]")).to_have_count(0)  # the new box, as the server drew it


def test_signed_out_in_another_tab_the_next_action_goes_to_sign_in(demo_server, page):
    """The session ended elsewhere: sending a message, or publishing from the post list, leads the
    whole page to the sign-in form (and back after it), never the form inside the chat or the list."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    chat_page = page.url
    sign_out_elsewhere(page, base)

    chat_input(page).fill("list my posts")
    chat_input(page).press("Enter")
    page.wait_for_url(re.compile(r"/accounts/login/\?next="))
    expect(page.locator("#chat-log")).to_have_count(0)
    fill_sign_in(page, "alice")
    page.wait_for_url(chat_page)
    expect(chat_input(page)).to_be_enabled()


def test_scrolled_up_to_read_the_log_stays_put_while_an_answer_streams(slow_demo_server, page):
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "list my posts")
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 6:")
    log = page.locator("#chat-log")
    assert log.evaluate("log => log.scrollTop") > 0  # the log has more than it shows, and follows it
    log.evaluate("log => { log.scrollTop = 0; }")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 9:")  # more came meanwhile
    assert log.evaluate("log => log.scrollTop") == 0
    log.evaluate("log => { log.scrollTop = log.scrollHeight; }")  # back at the end
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 12:")
    at_end = "log => log.scrollHeight - log.scrollTop - log.clientHeight < 48"
    assert log.evaluate(at_end)  # it follows again
    page.locator("#chat-stop").click()
    wait_turn_finished(page)


def test_moving_on_without_deciding_retires_the_card(demo_server, page):
    """A new message answers the waiting call as not approved; its card stops offering the buttons."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Lapse check")
    asked = ask(page, "delete Lapse check").get_attribute("id")  # (that reply, not the last one)
    card = page.locator(f"#{asked} .approval")
    expect(card).to_contain_text("Needs your OK")
    ask(page, "list my posts")
    expect(card).to_have_text("Not approved: the chat went on without a decision.")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(chip(page, "delete_post").locator(".chip-status")).to_have_text("not approved")
    expect(post_item(page, "Lapse check")).to_be_visible()
    assert page.js_errors == []


# Presses a card's Reject button the moment the card is in the page (a MutationObserver runs before
# the browser does anything else), as a quick keyboard could, and records the page's address then.
REJECT_ON_ARRIVAL = """
() => {
  new MutationObserver((changes, observer) => {
    const button = [...document.querySelectorAll("#chat-log .approval button")].find((b) => b.textContent === "Reject");
    if (!button) return;
    observer.disconnect();
    window.__pressed_at = location.href;
    button.click();
  }).observe(document.getElementById("chat-log"), {subtree: true, childList: true});
}
"""


def test_a_cards_buttons_work_the_moment_it_appears(demo_server, page):
    """htmx wires what it swaps in as it swaps it (no settle delay): a button pressed at once is
    sent as the chat's request, not submitted as a plain form that reloads the page."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Pressed at once")
    page.evaluate(REJECT_ON_ARRIVAL)
    send(page, "delete Pressed at once")
    expect(chat_log(page).locator(".approval").last).to_have_text("Rejected.")
    assert page.url == page.evaluate("window.__pressed_at")  # (a plain submit adds ?approve=0)
    wait_turn_finished(page)
    expect(post_item(page, "Pressed at once")).to_be_visible()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("abort", "The site couldn't be reached. Check your connection and try again."),
        (410, "That isn't available to you any more. Reload the page to see where things stand."),
        (503, "Something went wrong on our side. Please try again in a moment."),
    ],
)
def test_a_message_the_site_could_not_take_says_so_and_keeps_what_was_typed(demo_server, page, answer, said):
    """The site unreachable, the chat gone (403, 404, 410) or the server failing (5xx). These servers
    run with DEBUG, where django-htmx shows Django's error page for 400, 403, 404 and 500 instead (for
    the developer): 410 and 503 take the path 404 and 500 take in production."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send_url = re.compile(r"/chat/[0-9a-f-]+/send$")
    page.route(send_url, lambda route: route.abort() if answer == "abort" else route.fulfill(status=answer, body="x"))
    box = chat_input(page)
    box.fill("keep these words")
    box.press("Enter")
    expect(chat_log(page).locator(".notice")).to_have_text(said)
    expect(box).to_be_enabled()
    expect(box).to_have_value("keep these words")
    expect(user_messages(page)).to_have_count(0)

    page.unroute(send_url)  # the site back: the same words go as they are
    box.press("Enter")
    expect(user_messages(page)).to_have_count(1)
    wait_turn_finished(page)
