"""The newest screens with the keyboard only and as a screen reader hears them: the editor's refused Save,
the chat's tray of files chosen to attach, the Clients and Members screens, and the pages a form comes back to."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.test_connectors_ui import approve_in_browser
from tests.e2e.test_editor_saves import DOWN, new_draft
from tests.e2e.ui import BLOG, WATCH_ANNOUNCEMENTS, announcements, chat_input, login, new_chat, post_item


def choose(page, *names: str) -> None:
    page.locator("#chat-files").set_input_files([{"name": n, "mimeType": "text/plain", "buffer": b"x"} for n in names])


def test_each_chosen_file_is_heard_once_and_removing_one_keeps_focus_in_the_tray(demo_server, page):
    """Choosing more files, a screen reader hears the new ones, not every file chosen before once more; removing
    one with its × button leaves focus on the next file's × (else the one before, else Attach), not on the page.
    Before, the tray was drawn again whole at each change: every file heard again, focus lost to the page."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    page.evaluate(WATCH_ANNOUNCEMENTS)
    choose(page, "a.txt", "b.txt")
    choose(page, "c.txt")
    heard = "".join(announcements(page))
    assert [heard.count(name) for name in ("a.txt", "b.txt", "c.txt")] == [1, 1, 1], announcements(page)

    page.get_by_role("button", name="Remove b.txt").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Remove c.txt")).to_be_focused()
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name="Remove a.txt")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#chat-files")).to_be_focused()
    expect(page.locator("#attach-tray .pending-file")).to_have_count(0)
    assert "".join(announcements(page)).count("a.txt") == 1, announcements(page)  # (removing reads no file again)
    page.keyboard.press("Shift+Tab")
    expect(chat_input(page)).to_be_focused()


def test_a_refused_save_puts_focus_on_the_sentence_that_says_why(server_factory, page):
    """The refused Save comes back as the same editor page: from the top of it a screen reader would not hear
    that nothing was saved (an alert already on a page that loads is not announced). Focus goes to the
    sentence, and the next Tab reaches the card's choices."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo").url
    login(page, base, "alice")
    edit_url = new_draft(page, base, "Refused focus check", "The first words.")
    stale = page.context.new_page()
    stale.route(DOWN, lambda route: route.abort())  # (it hears nothing of the other save)
    stale.goto(edit_url)
    stale.get_by_label("Body (markdown)").fill("Words typed in the stale tab.")
    page.get_by_label("Body (markdown)").fill("Words saved first.")
    page.locator("#post-form").get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/blogs/[^/]+/$"))

    stale.get_by_label("Body (markdown)").focus()
    stale.keyboard.press("Tab")
    stale.keyboard.press("Enter")  # (Save, from the keyboard)
    error = stale.locator("p.error[role=alert]")
    expect(error).to_contain_text("so nothing was saved")
    expect(error).to_be_focused()
    take = stale.locator("#incoming .incoming").get_by_role("button", name="Use the saved version")
    expect(take).to_be_visible()  # (shown by the editor's script)
    stale.keyboard.press("Tab")
    expect(take).to_be_focused()
    stale.keyboard.press("Tab")
    stale.keyboard.press("Enter")  # Keep mine
    expect(stale.get_by_label("Body (markdown)")).to_be_focused()
    expect(stale.get_by_label("Body (markdown)")).to_have_value("Words typed in the stale tab.")


def test_the_page_a_form_comes_back_to_puts_focus_on_what_it_did(server_factory, page):
    """The members screen, the blog page (after a draft's Create or a Save) and a post's history (after a
    restore) come back from the top with a message: focus on it, or a screen reader hears nothing of what
    the form did (a message already on a page that loads is not announced)."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo").url
    login(page, base, "alice")
    flash = page.locator("main .flash")

    page.goto(f"{base}/blogs/{BLOG}/members/")
    page.get_by_role("button", name="Save carol").focus()
    page.keyboard.press("Enter")
    expect(flash).to_have_text("carol is now a viewer (viewers never use the assistant).")
    expect(flash).to_be_focused()

    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill("Focus after forms")
    page.get_by_label("Body (markdown)").fill("First words.")
    page.get_by_label("Body (markdown)").press("Tab")
    page.keyboard.press("Enter")  # (Create draft, from the keyboard)
    expect(flash).to_have_text("Draft “Focus after forms” created.")
    expect(flash).to_be_focused()

    post_item(page, "Focus after forms").get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Body (markdown)").fill("Second words.")
    page.get_by_label("Body (markdown)").press("Tab")
    page.keyboard.press("Enter")  # Save
    expect(flash).to_have_text("Saved “Focus after forms”.")
    expect(flash).to_be_focused()

    post_item(page, "Focus after forms").get_by_role("link", name="History").click()
    page.locator("main form.inline").get_by_role("button").first.focus()
    page.keyboard.press("Enter")  # restore the version before the Save
    expect(flash).to_have_text("Restored version 1, now version 3.")
    expect(flash).to_be_focused()


def connect(page, base: str, name: str) -> None:
    """Connect a client named `name` for alice, the page left at the client's callback (answered here: with
    nothing listening, the browser's error page could still be loading when the test goes on)."""
    page.route(re.compile(r"^http://127\.0\.0\.1:5999/"), lambda route: route.fulfill(body="Connected."))
    approve_in_browser(page, base, name, untick=[])
    page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:5999/callback\?"))


def test_each_connected_clients_buttons_are_heard_inside_a_form_named_by_the_client(server_factory, page):
    """With two clients connected, the Clients screen has three Save buttons and two Revoke: tabbing to one,
    a screen reader names the form it enters (the client's), so "Revoke" says whose."""
    base = server_factory("mcp-ui", AGENT_BACKEND="demo", MCP_CALLS_PER_MINUTE="0").url
    connect(page, base, "Keyboard client")
    page.goto(f"{base}/blogs/{BLOG}/clients/")
    expect(page.get_by_role("form", name="Built-in assistant").get_by_role("button", name="Save")).to_have_count(1)
    client = page.get_by_role("form", name="Keyboard client", exact=True)
    expect(client.get_by_role("button", name="Revoke")).to_have_count(1)


def test_saving_or_revoking_on_the_clients_screen_puts_focus_on_what_it_did(server_factory, page):
    """The screen comes back from the top after a Save or Revoke: focus on its message, or a screen reader
    would hear nothing of whether the grant was saved or refused (a message already there is not announced)."""
    base = server_factory("mcp-ui", AGENT_BACKEND="demo", MCP_CALLS_PER_MINUTE="0").url
    connect(page, base, "Revoked by keyboard")
    page.goto(f"{base}/blogs/{BLOG}/clients/")
    page.get_by_role("form", name="Built-in assistant").get_by_role("button", name="Save").focus()
    page.keyboard.press("Enter")
    flash = page.locator("main .flash")
    expect(flash).to_have_text("Saved what the assistant may do for you.")
    expect(flash).to_be_focused()

    page.get_by_role("form", name="Revoked by keyboard").get_by_role("button", name="Revoke").focus()
    page.keyboard.press("Enter")
    expect(flash).to_have_text("Revoked by keyboard can no longer act for you on this blog.")
    expect(flash).to_be_focused()
