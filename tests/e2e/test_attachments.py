"""Attachments in the chat box, in a real browser against a real server with the offline demo model."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests import files
from tests.e2e.ui import (
    BLOG,
    chat_input,
    chat_log,
    login,
    new_chat,
    post_item,
    replies,
    send,
    signed_in,
    user_messages,
    wait_turn_finished,
)

TRAY = "#chat-form #attach-tray .pending-file"


def attach(page, *named: tuple[str, str, bytes]) -> None:
    page.locator("#chat-files").set_input_files([{"name": n, "mimeType": t, "buffer": b} for n, t, b in named])


def loaded(image) -> bool:
    return image.evaluate("img => img.complete && img.naturalWidth > 0")


def test_attach_an_image_and_a_pdf_send_them_and_find_them_after_a_reload(demo_server, page, browser):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    attach(page, ("beach.png", "image/png", files.png(640, 480)), ("report.pdf", "application/pdf", files.pdf()))
    attach(page, ("extra.txt", "text/plain", b"not this one"))  # picking again adds to the tray
    expect(page.locator(TRAY)).to_have_count(3)
    page.get_by_role("button", name="Remove extra.txt").click()
    expect(page.locator(TRAY)).to_have_count(2)
    expect(page.locator(TRAY).first.locator("img")).to_be_visible()  # a thumbnail before sending

    # With the scripts, which take dropped and pasted files, the button offers them too.
    expect(page.locator("#chat-form .attach-button")).to_have_attribute("title", re.compile(r"drop or paste them here"))
    send(page, "what are these?")
    wait_turn_finished(page)
    expect(page.locator(TRAY)).to_have_count(0)  # the tray is cleared once sent
    bubble = user_messages(page).last
    expect(bubble.locator(".attachment.thumb img")).to_have_count(1)
    # The thumbnail opens the picture in a new tab, and says so to a screen reader.
    expect(bubble.get_by_role("link", name="beach.png (opens in a new tab)")).to_have_attribute("target", "_blank")
    expect(bubble.locator(".attachment.file")).to_contain_text("report.pdf")
    expect(replies(page).last).to_contain_text("I received 2 attachments")
    expect(replies(page).last).to_contain_text("a PNG image, 640×480 pixels")
    expect(replies(page).last).to_contain_text("a PDF document, 1 page")

    page.reload()
    bubble = user_messages(page).last
    image = bubble.locator(".attachment.thumb img")
    expect(image).to_be_visible()
    page.wait_for_function("img => img.complete", arg=image.element_handle())
    assert loaded(image)
    expect(bubble.locator(".attachment.file")).to_contain_text("report.pdf")
    url = image.get_attribute("src")
    assert re.fullmatch(r"/api/agent/sessions/[0-9a-f-]+/attachments/\d+", url)

    # Bob, another member of the blog, cannot fetch Alice's attachment.
    with signed_in(browser, base, "bob") as bob:
        assert bob.request.get(base + url).status == 404
        assert page.request.get(base + url).status == 200


def test_drop_and_paste_add_files_to_the_tray(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    page.evaluate(
        """() => {
          const dt = new DataTransfer();
          dt.items.add(new File(["# Notes"], "dropped.md", {type: "text/markdown"}));
          const form = document.getElementById("chat-form");
          form.dispatchEvent(new DragEvent("dragover", {bubbles: true, cancelable: true, dataTransfer: dt}));
          form.dispatchEvent(new DragEvent("drop", {bubbles: true, cancelable: true, dataTransfer: dt}));
          const paste = new DataTransfer();
          paste.items.add(new File([new Uint8Array([137, 80, 78, 71])], "pasted.png", {type: "image/png"}));
          document.getElementById("chat-text").dispatchEvent(
            new ClipboardEvent("paste", {bubbles: true, cancelable: true, clipboardData: paste}));
        }"""
    )
    expect(page.locator(TRAY)).to_have_count(2)
    expect(page.locator(TRAY).nth(0)).to_contain_text("dropped.md")
    expect(page.locator(TRAY).nth(1)).to_contain_text("pasted.png")
    assert page.evaluate("document.getElementById('chat-files').files.length") == 2


def test_make_a_post_from_this_photo_with_the_demo_model(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    attach(page, ("harbour-at-dawn.jpg", "image/jpeg", files.jpeg_with_gps(80, 60, orientation=1)))
    send(page, "make a post from this photo")
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("Done: I drafted “Harbour at dawn” with your photo as its cover.")
    item = post_item(page, "Harbour at dawn")  # the effect refreshed the post list
    expect(item.locator(".badge")).to_have_text("Draft")
    expect(item.locator("img.post-thumb")).to_be_visible()

    page.goto(f"{base}/blogs/{BLOG}/")
    post_item(page, "Harbour at dawn").get_by_role("link", name="Edit").click()
    cover = page.locator("#post-cover")
    expect(cover).to_be_visible()
    page.wait_for_function("img => img.complete", arg=cover.element_handle())
    assert loaded(cover)


def test_a_renamed_executable_is_refused_with_a_calm_notice(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    attach(page, ("setup.png", "image/png", files.exe_as_png()))
    before = user_messages(page).count()
    chat_input(page).fill("here is a picture")
    chat_input(page).press("Enter")
    expect(chat_log(page).locator(".notice")).to_contain_text("“setup.png” can't be attached")
    expect(user_messages(page)).to_have_count(before)
    expect(chat_input(page)).to_be_enabled()


def validation_message(page) -> str:
    """What the browser's bubble says about the chat box when the form is checked ("" when it may be sent)."""
    return chat_input(page).evaluate("box => box.validationMessage")


def test_files_or_spaces_without_words_say_what_to_write_and_send_nothing(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send_url = base + page.locator("#chat-form").get_attribute("hx-post")
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" and r.url == send_url else None)

    attach(page, ("beach.png", "image/png", files.png(64, 48)))
    page.locator("#chat-send").click()
    assert validation_message(page) == "Write a few words to go with your files."
    chat_input(page).press("Enter")
    assert validation_message(page) == "Write a few words to go with your files."
    expect(page.locator(TRAY)).to_have_count(1)  # the file is still there, waiting for its words

    page.get_by_role("button", name="Remove beach.png").click()
    chat_input(page).fill("   \n  ")
    page.locator("#chat-send").click()
    assert validation_message(page) == "Write a message first: spaces alone can't be sent."

    attach(page, ("beach.png", "image/png", files.png(64, 48)))
    send(page, "what is this?")  # with words, the same box sends
    # (and says nothing of words any more: the box, open while the answer runs, is only empty now. It was
    # checked as "" while it was disabled then, which the browser never checks at all)
    assert chat_input(page).evaluate("box => box.validity.customError") is False
    wait_turn_finished(page)
    expect(replies(page).last).to_contain_text("I received 1 attachment")
    # Only the message with words went: no refusal from the server ("Write a message of up to 20,000
    # characters." for the spaces) came back to the log.
    assert len(sent) == 1
    expect(user_messages(page)).to_have_count(1)
    expect(chat_log(page).locator(".notice")).to_have_count(0)
