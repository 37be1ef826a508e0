"""Pressed before the page's scripts have run (a slow phone, scripts that never load): Publish and the
chat's Send are ordinary forms, so the press does what it says and the page comes back showing it; a
message's words never go into an address."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, Locator, Page, expect

from agent.loop import CALM
from tests import files
from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import BLOG, chat_input, fill_sign_in, loads, login, post_item, replies, send_button, user_messages


@contextmanager
def without_scripts(browser: Browser, base: str, username: str = "alice") -> Iterator[Page]:
    """A page of a browser context with JavaScript off, signed in as `username` by the plain sign-in form;
    the context closed when the block ends."""
    plain = browser.new_context(java_script_enabled=False)
    try:
        page = plain.new_page()
        page.goto(f"{base}/accounts/login/")
        fill_sign_in(page, username)
        page.wait_for_url(re.compile(r"/$"))
        yield page
    finally:
        plain.close()


def reloaded_until_answered(page: Page) -> Locator:
    """No script follows an answer as it streams: the page shows it once it is read again after the answer
    ended. The page's answered replies, once there is one and none is still streaming."""
    answered = page.locator("#chat-log article.msg.assistant:not(.streaming)")
    streaming = page.locator("#chat-log article.msg.assistant.streaming")
    for _ in range(50):
        if answered.count() and not streaming.count():
            break
        page.wait_for_timeout(200)
        page.reload()
    return answered


def test_without_scripts_publish_and_a_message_to_the_assistant_still_work(server_factory, browser):
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/posts/new/")
        page.get_by_label("Title").fill("Written on a slow phone")
        page.get_by_label("Body (markdown)").fill("Words.")
        page.locator("#post-form").get_by_role("button", name="Create draft").click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))

        row = post_item(page, "Written on a slow phone")
        expect(row.locator(".badge")).to_have_text("Draft")
        row.get_by_role("button", name="Publish").click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?shown=\d+#post-\d+$"))
        expect(post_item(page, "Written on a slow phone").locator(".badge")).to_have_text("Published")

        chat_input(page).fill("what can you do")
        send_button(page).click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))  # (the words are not in it)
        expect(user_messages(page)).to_have_text(["what can you do"])
        answered = reloaded_until_answered(page)
        expect(replies(page)).to_have_count(1)
        expect(answered.locator(".flow.final")).not_to_be_empty()


def test_without_scripts_a_message_takes_its_attached_files(server_factory, browser):
    """The form was sent urlencoded without scripts: the browser sent the chosen file's name alone, and
    the message went without it, nothing said."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/")
        page.locator("#chat-files").set_input_files(
            [
                {"name": "beach.png", "mimeType": "image/png", "buffer": files.png(64, 48)},
                {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"Herons at dusk.\n"},
            ]
        )
        chat_input(page).fill("what did I attach?")
        send_button(page).click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        bubble = user_messages(page).last  # (the server serves the module's other tests too: their chats)
        expect(bubble).to_contain_text("what did I attach?")
        expect(bubble.locator(".attachment.thumb img")).to_have_count(1)
        expect(bubble.locator(".attachment.file")).to_contain_text("notes.txt")
        reloaded_until_answered(page)
        expect(replies(page).last).to_contain_text("I received 2 attachments")


def test_without_scripts_try_again_asks_for_a_failed_answer_again(server_factory, write_script, browser):
    """ "Try again" below an answer that failed for now is a plain form: pressed, the chat's page comes back
    and shows the new answer once it has ended, the person's message once, and no button any more."""
    script = write_script(
        "fails-then-answers-plain",
        [
            [{"kind": "error", "retryable": True}],
            [{"kind": "text", "text": "You have two posts."}, {"kind": "done", "stop_reason": "end_turn"}],
        ],
    )
    base = server_factory("fake-fails-then-answers-plain", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script).url
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/")
        chat_input(page).fill("how many posts do I have?")
        send_button(page).click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        reloaded_until_answered(page)
        expect(page.locator("#chat-log .chat-error")).to_have_text(CALM["provider_error"])
        page.get_by_role("button", name="Try again").click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        answered = reloaded_until_answered(page)
        expect(answered).to_have_count(2)
        expect(answered.last).to_have_text("You have two posts.")
        expect(user_messages(page)).to_have_text(["how many posts do I have?"])
        expect(page.get_by_role("button", name="Try again")).to_have_count(0)


def test_without_scripts_a_refused_long_message_comes_back_in_the_box(server_factory, browser):
    """One message a minute: the second, long and with markup in it, is refused (too quick, or the first's
    answer still running); the page says why and has the words back in the box, once."""
    limits = {**NO_LIMITS, "AGENT_MESSAGES_PER_MINUTE": "1"}
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **limits).url
    typed = "A long message, written with care. " * 400 + "\nand <b>this</b> & that"
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/")
        chat_input(page).fill("what can you do")
        send_button(page).click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        chat_input(page).fill(typed)
        with loads(page, re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$")):  # (the words are not in it)
            send_button(page).click()
        expect(page.locator(".flash-error")).to_contain_text("Your message was not sent.")
        expect(chat_input(page)).to_have_value(typed)
        page.reload()
        expect(chat_input(page)).to_have_value("")


def test_without_scripts_stop_ends_a_running_answer_and_keeps_the_words_in_the_box(server_factory, browser):
    """The demo writes slowly here, so its answer is still running when the page comes back: Stop is on it,
    as a button of the chat's form, and the page says to read it again (no script follows it)."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="300", **NO_LIMITS).url
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/")
        chat_input(page).fill("write something long about herons")
        send_button(page).click()
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$"))
        stop = page.locator("#chat-stop")
        expect(stop).to_be_visible()
        # (Playwright's text matching skips <noscript>: the line is asked for by its own element)
        notice = page.locator("#chat-log .turn-state .notice")
        expect(notice).to_be_visible()
        expect(notice).to_have_text("The assistant is answering. Reload this page in a moment to read the answer.")
        chat_input(page).fill("and then the weir")
        with loads(page, re.compile(rf"/blogs/{BLOG}/\?chat=[0-9a-f-]{{36}}$")):
            stop.click()
        expect(page.get_by_text("Stopped: the answer ends where it had got to.")).to_be_visible()
        expect(chat_input(page)).to_have_value("and then the weir")
        answered = reloaded_until_answered(page)
        expect(answered.last).to_contain_text("Stopped.")
        expect(stop).to_be_hidden()


def test_without_scripts_preview_shows_the_post_as_it_will_read_and_saves_nothing(server_factory, browser):
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    with without_scripts(browser, base) as page:
        page.goto(f"{base}/blogs/{BLOG}/posts/new/")
        preview = page.locator("#preview")
        expect(preview).to_contain_text("The preview of your post appears here as you write.")
        page.get_by_label("Title").fill("Previewed on a slow phone")
        page.get_by_label("Body (markdown)").fill("Herons at **dawn**.")
        with loads(page, re.compile(rf"/blogs/{BLOG}/posts/new/$")):
            page.get_by_role("button", name="Preview").click()
        expect(preview.locator("strong")).to_have_text("dawn")
        expect(page.get_by_text("This is a preview: nothing is saved yet.")).to_be_visible()
        expect(page.get_by_label("Body (markdown)")).to_have_value("Herons at **dawn**.")
        page.locator("#post-form").get_by_role("button", name="Create draft").click()  # (the words previewed)
        page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
        expect(post_item(page, "Previewed on a slow phone")).to_have_count(1)  # (one: the preview saved none)


def test_with_scripts_the_preview_follows_the_typing_and_no_preview_button_shows(server_factory, page):
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Body (markdown)").fill("Herons at **dawn**.")
    expect(page.locator("#preview strong")).to_have_text("dawn")
    expect(page.get_by_role("button", name="Preview")).to_have_count(0)
    expect(page.locator("#preview")).not_to_contain_text("Press Preview")
