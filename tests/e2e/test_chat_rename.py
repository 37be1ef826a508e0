"""Renaming a chat in a real browser: from the chats page with the keyboard only, and a name given before
anything was said kept once the chat's first message is answered."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import BLOG, chat_input, login, new_chat, open_blog, wait_turn_finished
from tests.servers import manage

CHATS = """
from django.contrib.auth import get_user_model
from agent.state import Run
from agent.transcript import add_message
from blog.chat import start_session
from blog.models import Blog
alice = get_user_model().objects.get(username="alice")
blog = Blog.objects.get(slug="field-notes")
for words in ("Herons at dawn on the river", "A list of spring birds"):
    add_message(Run(start_session(alice, blog)), "user", [{"type": "text", "text": words}])
"""


@pytest.fixture(scope="module")
def server(server_factory):
    server = server_factory("chat-rename", AGENT_BACKEND="demo")
    manage(server.env, server.log, "shell", "-c", CHATS)
    return server


def test_a_chat_is_renamed_on_the_chats_page_with_the_keyboard(page, server):
    """Tab to the chat's Rename, open it, type the name over its first words, Enter: the page comes back with focus on what it
    did and the chat named so (in the panel's list too). A name refused comes back with focus in its field,
    what was typed kept and the refusal its description."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/chats/")
    page.get_by_role("link", name="Herons at dawn on the river").focus()
    page.keyboard.press("Tab")
    rename = page.get_by_text("Rename Herons at dawn on the river")
    expect(rename).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    field = page.get_by_role("textbox", name="New name").and_(page.locator(":focus"))
    expect(field).to_have_value("Herons at dawn on the river")  # (named by nobody yet: its first words, to edit)
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("Dawn chorus")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_be_focused()
    expect(page.locator(".flash")).to_have_text("Renamed the chat “Dawn chorus”.")
    expect(page.get_by_role("link", name="Dawn chorus", exact=True)).to_have_count(1)
    expect(page.get_by_role("link", name="Herons at dawn on the river")).to_have_count(0)

    page.get_by_role("link", name="Dawn chorus", exact=True).focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    page.keyboard.press("ControlOrMeta+A")
    page.keyboard.type("   ")  # (spaces only: the form sends them, the server says why not)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/rename$"))
    refused = page.get_by_role("textbox", name="New name").and_(page.locator(":focus"))
    expect(refused).to_have_value("   ")
    expect(refused).to_have_accessible_description("Give the chat a name.")
    expect(page.get_by_role("alert")).to_have_text("Give the chat a name.")

    open_blog(page, server.url)
    page.get_by_text("Earlier chats").click()
    expect(page.locator("details.history").get_by_text("Dawn chorus", exact=True)).to_be_visible()


def test_a_name_given_before_the_first_message_is_kept_once_it_is_answered(page, server):
    """The panel names a chat started by New chat by its first message once sent (static/js/chat/history.js),
    but not one its person named meanwhile: theirs stays, in the list and after a reload."""
    login(page, server.url, "alice")
    new_chat(page, server.url)
    chat_url = page.url
    page.get_by_text("Earlier chats").click()
    page.get_by_role("link", name="All chats…").click()
    page.get_by_text("Rename Untitled chat").click()
    page.get_by_role("textbox", name="New name").and_(page.locator(":visible")).fill("Picnic plans")
    page.get_by_role("button", name="Save name").and_(page.locator(":visible")).click()
    expect(page.get_by_role("link", name="Picnic plans", exact=True)).to_have_count(1)
    page.goto(chat_url)
    current = page.locator("details.history [aria-current] .chat-label")
    expect(current).to_have_text("Picnic plans")
    chat_input(page).fill("write a post about the summer picnic by the river")
    page.locator("#chat-send").click()
    wait_turn_finished(page)
    expect(current).to_have_text("Picnic plans")
    page.reload()
    expect(page.locator("details.history [aria-current] .chat-label")).to_have_text("Picnic plans")
