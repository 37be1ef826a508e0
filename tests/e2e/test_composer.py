"""Writing the next message while an answer streams: the box takes words (and files), nothing is sent
until the answer ends, in the tab that asked and in another following it, and a reload keeps the words."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests import files
from tests.e2e.ui import (
    LONG_WAIT,
    MARK_BLOG_LIVE,
    chat_input,
    expect_blog_live,
    expect_writable_not_sendable,
    login,
    new_chat,
    replies,
    send,
    send_button,
    streaming_reply,
    user_messages,
    wait_turn_finished,
)

SENDS = re.compile(r"/chat/[0-9a-f-]+/send$")


def posts_of(page) -> list[str]:
    """Every message the page sends to its chat from now on, by URL."""
    sent: list[str] = []

    def seen(request) -> None:
        if request.method == "POST" and SENDS.search(request.url):
            sent.append(request.url)

    page.on("request", seen)
    return sent


def try_every_way_to_send(page) -> None:
    """Enter in the box, a click on Send, Send pressed from the keyboard, the form's requestSubmit() and
    htmx's own submit trigger: while a turn runs, none of them may send."""
    box = chat_input(page)
    box.press("Enter")
    expect(box).to_be_focused()  # (Enter did nothing, not even a new line, and the box keeps focus)
    send_button(page).click(force=True)  # (force: aria-disabled, which Playwright would wait out)
    send_button(page).focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Space")
    page.evaluate("document.getElementById('chat-form').requestSubmit()")
    page.evaluate("htmx.trigger('#chat-form', 'submit')")
    box.focus()


def test_the_next_message_is_written_while_an_answer_streams_and_sent_only_once_it_ends(demo_server, page):
    """The box rested (disabled) while an answer streamed: the next message could not be written while
    reading it. Now it is written then, Shift+Enter still adds a line, and nothing sends it before the
    answer ends: no request, no new message in the log. Once the answer is over the words are still
    there, Send is usable, and sends them."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    sent = posts_of(page)

    box = chat_input(page)
    box.click()
    box.press_sequentially("list my posts")
    box.press("Shift+Enter")
    box.press_sequentially("please")
    expect_writable_not_sendable(page)
    try_every_way_to_send(page)
    expect(box).to_have_value("list my posts\nplease")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 6:")  # (time for any request)
    assert sent == []
    expect(user_messages(page)).to_have_count(1)

    wait_turn_finished(page, timeout=LONG_WAIT)
    expect(replies(page).last).to_contain_text("Paragraph 40:")
    expect(box).to_have_value("list my posts\nplease")  # still there, unsent
    expect(box).to_be_focused()  # (focus never left the box)
    assert sent == []
    send_button(page).click()
    expect(user_messages(page)).to_have_count(2)
    expect(user_messages(page).last).to_contain_text("list my posts")
    assert len(sent) == 1
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Here are your posts")
    expect(box).to_have_value("")
    assert page.js_errors == []


def test_words_and_files_chosen_while_a_message_is_on_its_way_stay_for_the_next(demo_server, page):
    """The box stays open while the message's request is under way (one with files may take seconds):
    what is written or chosen then is not the message sent, and stays when its answer clears the form."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    held = []
    page.route(SENDS, lambda route: held.append(route))

    box = chat_input(page)
    box.fill("list my posts")
    box.press("Enter")
    while not held:  # (the message on its way, held here)
        page.wait_for_timeout(50)
    expect_writable_not_sendable(page)
    box.press("End")
    box.press_sequentially(" and then the next one")
    page.locator("#chat-files").set_input_files([{"name": "later.png", "mimeType": "image/png", "buffer": files.png()}])
    held[0].continue_()

    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_have_text("list my posts")
    expect(box).to_have_value("and then the next one")
    expect(page.locator("#attach-tray .pending-file")).to_have_count(1)
    wait_turn_finished(page)
    expect(box).to_have_value("and then the next one")


def test_words_written_while_an_answer_streams_survive_a_reload_and_wait_for_its_end(slow_demo_server, page):
    """A reload mid-answer keeps what was written meanwhile (a draft, like any other): the page follows
    the answer with the words in the box, still unsent, and they go once the answer is stopped."""
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    chat_input(page).press_sequentially("list my posts")
    page.reload()

    expect(chat_input(page)).to_have_value("list my posts")
    expect(streaming_reply(page)).to_have_count(1)
    expect_writable_not_sendable(page)
    sent = posts_of(page)
    try_every_way_to_send(page)
    chat_input(page).press_sequentially(", please")
    page.locator("#chat-stop").click()
    wait_turn_finished(page)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")
    expect(user_messages(page)).to_have_count(1)
    assert sent == []
    expect(chat_input(page)).to_have_value("list my posts, please")
    chat_input(page).press("Enter")
    expect(user_messages(page)).to_have_count(2)
    expect(user_messages(page).last).to_have_text("list my posts, please")
    wait_turn_finished(page)
    expect(chat_input(page)).to_have_value("")


def test_a_second_tab_following_the_answer_takes_words_and_sends_them_once_it_ends(slow_demo_server, page):
    """Tab B follows the answer tab A asked for: its box takes the next message meanwhile, nothing of B
    is sent while the answer runs there, and once it ends (Stop in A) B's Send sends B's words."""
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    page.context.add_init_script(MARK_BLOG_LIVE)
    other = page.context.new_page()
    other.goto(page.url)
    expect_blog_live(other)

    send(page, "write something long")
    expect(streaming_reply(other).locator(".flow")).to_contain_text("Paragraph 2:")  # B follows it
    sent = posts_of(other)
    chat_input(other).click()
    chat_input(other).press_sequentially("list my posts")
    expect_writable_not_sendable(other)
    try_every_way_to_send(other)
    expect(streaming_reply(other).locator(".flow")).to_contain_text("Paragraph 4:")
    assert sent == []
    expect(user_messages(other)).to_have_count(1)

    page.locator("#chat-stop").click()
    wait_turn_finished(other)
    expect(replies(other).last.locator(".note")).to_have_text("Stopped.")
    expect(chat_input(other)).to_have_value("list my posts")
    expect(chat_input(other)).to_be_focused()
    send_button(other).click()
    expect(user_messages(other)).to_have_count(2)
    expect(user_messages(page)).to_have_count(2)  # A follows B's message in turn
    assert len(sent) == 1
    wait_turn_finished(other)
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Here are your posts")
    assert page.js_errors == []


def test_a_message_after_stop_goes_to_the_chat_even_where_stop_still_counts_as_last_pressed(demo_server, page):
    """Stop is a submit button of the chat's form with a `formaction` (the chat's stop, for a press before
    the scripts ran), and htmx sends a form to the `formaction` of the button it last saw pressed in it.
    Chromium forgets that button when Stop is disabled after its press (a focusout); a browser that does not
    must still send the next message to the chat, not to its stop. Here Stop counts as last pressed by the
    event htmx listens for."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "list my posts")
    wait_turn_finished(page)
    sent = posts_of(page)
    chat_input(page).fill("list my drafts")
    page.locator("#chat-stop").dispatch_event("focusin")
    chat_input(page).press("Enter")
    expect(user_messages(page)).to_have_text(["list my posts", "list my drafts"])
    wait_turn_finished(page)
    assert len(sent) == 1
