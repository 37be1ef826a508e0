"""Finding a chat in a real browser: on the chats page, type a word, press Enter, follow the chat found."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import BLOG, chat_log, login
from tests.servers import manage

CHATS = """
from django.contrib.auth import get_user_model
from agent.state import Run
from agent.transcript import add_message
from blog.chat import start_session
from blog.models import Blog
alice = get_user_model().objects.get(username="alice")
blog = Blog.objects.get(slug="field-notes")
for asked, answered in (
    ("Which birds wade at dawn?", "Grey herons and little egrets wade in the shallows at dawn."),
    ("A list of spring birds", "Swallows, swifts and cuckoos arrive in spring."),
):
    run = Run(start_session(alice, blog))
    add_message(run, "user", [{"type": "text", "text": asked}])
    add_message(run, "assistant", [{"type": "text", "text": answered}])
"""


@pytest.fixture(scope="module")
def server(server_factory):
    server = server_factory("chat-search", AGENT_BACKEND="demo")
    manage(server.env, server.log, "shell", "-c", CHATS)
    return server


def test_a_chat_is_found_by_a_word_of_its_answer_and_followed(page, server):
    """The word is in the assistant's answer, not the chat's name: the chat is found, its line shown with
    the word marked, and its link opens it in the panel."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/chats/")
    box = page.get_by_role("searchbox", name="Search your chats")
    box.click()
    page.keyboard.type("EGRETS")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/chats/\?q=EGRETS$"))
    expect(page.get_by_role("searchbox", name="Search your chats")).to_have_value("EGRETS")
    expect(page.locator("#search-summary")).to_contain_text("1 chat matches “EGRETS”, the latest first.")
    found = page.locator(".chat-list li")
    expect(found).to_have_count(1)
    expect(found.locator(".chat-snippet mark")).to_have_text("egrets")
    expect(found.locator(".chat-snippet")).to_have_text("Grey herons and little egrets wade in the shallows at dawn.")

    found.get_by_role("link", name="Which birds wade at dawn?").click()
    expect(page).to_have_url(re.compile(rf"/blogs/{BLOG}/\?chat="))
    expect(chat_log(page)).to_contain_text("Which birds wade at dawn?")  # (that chat, in the panel)


def test_a_search_that_finds_nothing_says_so_and_clears(page, server):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/chats/")
    page.get_by_role("searchbox", name="Search your chats").fill("<b>kingfisher</b>")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#search-summary")).to_have_text("No chats match “<b>kingfisher</b>”. Clear the search")
    page.get_by_role("link", name="Clear the search").click()
    expect(page.locator(".chat-list li")).to_have_count(2)
