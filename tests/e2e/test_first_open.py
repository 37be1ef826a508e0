"""The page's stream opening for the first time: what changed since the page was drawn shows then.

Tab B is drawn by the server, and its stream of the blog's changes is held back by the browser (the
request waits in `page.route`) while tab A changes something; then B's stream opens. What A did must
show in B once it listens, as after an outage (tests/e2e/test_tabs.py, "third round"). A page drawn
on what is still true asks for nothing more when its stream opens.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import (
    BLOG,
    LONG_WAIT,
    MARK_BLOG_LIVE,
    ask,
    chat_input,
    expect_blog_live,
    login,
    open_blog,
    post_item,
    replies,
    signed_in,
    user_messages,
    wait_turn_finished,
)

STREAM = re.compile(r"/events/")


def held_tab(page, url: str):
    """Tab B drawn from `url`, its stream's first request held until `release(B)`."""
    other = page.context.new_page()
    other.js_errors = []  # type: ignore[attr-defined]
    other.on("pageerror", lambda exc: other.js_errors.append(str(exc)))  # type: ignore[attr-defined]
    held: list = []
    other.held = held  # type: ignore[attr-defined]
    other.route(STREAM, lambda route: route.continue_() if held and held[0] is None else held.append(route))
    with other.expect_request(STREAM):
        other.goto(url)
    return other


def release(other) -> None:
    """Let B's held stream request go on (and any later one)."""
    waiting, other.held[:] = list(other.held), [None]
    for route in waiting:
        route.continue_()


def open_editor(tab, base: str) -> None:
    open_blog(tab, base)
    tab.locator("#post-list li.post").first.get_by_role("link", name="Edit").click()
    tab.wait_for_url(re.compile(r"/posts/\d+/edit/$"))


def test_a_post_written_before_a_blog_tabs_stream_first_opens_is_listed_once_it_opens(server_factory, page):
    """Before, B's list stayed as drawn until the blog's next change."""
    base = server_factory("first-open-list", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    other = held_tab(page, f"{base}/blogs/{BLOG}/")
    expect(other.locator("#post-list li.post").first).to_be_visible()

    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill("Written before B listened")
    page.get_by_label("Body (markdown)").fill("Hello from A.")
    page.locator("#post-form").get_by_role("button", name="Create draft").click()
    expect(post_item(page, "Written before B listened")).to_have_count(1)
    expect(post_item(other, "Written before B listened")).to_have_count(0)  # (B was drawn before)
    release(other)

    expect_blog_live(other)
    expect(post_item(other, "Written before B listened")).to_contain_text("Draft", timeout=LONG_WAIT)
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_an_editor_whose_post_was_saved_before_its_stream_first_opened_shows_the_change_and_keeps_the_words(
    server_factory, page
):
    """Before, B showed nothing, and its Save would have been refused only then."""
    base = server_factory("first-open-editor", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    open_editor(page, base)
    other = held_tab(page, page.url)
    body = other.get_by_label("Body (markdown)")
    body.fill("Words typed in B, not saved.")

    page.get_by_label("Body (markdown)").fill("Saved from A.")
    page.locator("#post-form").get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(other.locator("#incoming .incoming")).to_have_count(0)  # (B was drawn before)
    release(other)

    card = other.locator("#incoming .incoming")
    expect(card).to_contain_text("This post changed while you were editing", timeout=LONG_WAIT)
    expect(card.locator(".diff")).to_contain_text("Saved from A.")
    expect(body).to_have_value("Words typed in B, not saved.")
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_a_tab_showing_no_chat_takes_up_a_chat_started_before_its_stream_first_opened(server_factory, page):
    """Before, B stayed on the panel's first words."""
    base = server_factory("first-open-take-up", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    login(page, base, "alice")
    open_blog(page, base)
    expect(page.locator("#chat-log .empty")).to_be_visible()
    other = held_tab(page, page.url)
    expect(other.locator("#chat-log .empty")).to_be_visible()
    chat_input(other).fill("words typed in B")

    ask(page, "list my posts")
    expect(user_messages(other)).to_have_count(0)  # (B was drawn before)
    release(other)

    expect(user_messages(other)).to_have_count(1, timeout=LONG_WAIT)
    expect(user_messages(other).first).to_have_text("list my posts")
    wait_turn_finished(other)
    expect(replies(other).last).to_contain_text("Here are your posts")
    expect(chat_input(other)).to_have_value("words typed in B")
    expect(other.locator('#page-stream[sse-connect*="?chat="]')).to_have_count(1)
    assert other.js_errors == []  # type: ignore[attr-defined]


def test_a_page_drawn_on_what_is_still_true_asks_for_nothing_more_when_its_stream_opens(server_factory, page):
    """No change between drawing and listening: no catch-up request (the post list, the editor's look at
    its post, the panel's latest chat), on the blog page as beside the editor."""
    base = server_factory("first-open-quiet", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    asked: list[str] = []
    catch_up = re.compile(r"/posts/(\?|\d+/incoming)|/chats/panel")
    page.on("request", lambda request: asked.append(request.url) if catch_up.search(request.url) else None)
    open_blog(page, base)
    expect_blog_live(page)
    open_editor(page, base)
    expect_blog_live(page)
    page.wait_for_timeout(1_000)  # (a catch-up would have asked by now)
    assert asked == []
    assert page.js_errors == []  # type: ignore[attr-defined]


def test_a_rename_before_a_blog_tabs_stream_first_opens_shows_once_it_opens(server_factory, page):
    """A rename writes no revision, so the posts' mark alone would not tell: the header's mark does, and B's
    header and title follow once its stream opens (before, they stayed as drawn until the blog's next rename)."""
    base = server_factory("first-open-head", AGENT_BACKEND="demo", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "alice")
    other = held_tab(page, f"{base}/blogs/{BLOG}/")
    expect(other.get_by_role("heading", level=1)).to_have_text("Field Notes")

    page.goto(f"{base}/blogs/{BLOG}/settings/")
    page.get_by_role("textbox", name="Title").fill("Field Notes, renamed")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved the title.")
    release(other)

    expect_blog_live(other)
    expect(other.get_by_role("heading", level=1)).to_have_text("Field Notes, renamed")
    expect(other).to_have_title("Field Notes, renamed · Field Desk")
    assert other.js_errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("where", ["blog", "editor"])
def test_the_assistant_taken_away_before_a_tabs_stream_first_opens_shows_once_it_opens(
    server_factory, page, browser, where
):
    """A seat saved writes no revision, and the header's mark said nothing of the seat: B kept its panel until
    the blog's next change. The mark now carries whether its member may summon the assistant, and B shows the
    note in the panel's place once it listens (the blog page, or beside a post's editor), the words typed in
    its box kept, said not to have been sent; the post's words typed in B's editor stay as they are."""
    base = server_factory(f"first-open-seat-{where}", AGENT_BACKEND="demo", **NO_LIMITS).url
    page.context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "bob")
    if where == "editor":
        open_editor(page, base)
    else:
        open_blog(page, base)
    other = held_tab(page, page.url)
    expect(other.locator("#assistant")).to_be_visible()
    chat_input(other).fill("words typed in B")
    if where == "editor":
        other.get_by_label("Body (markdown)").fill("Post words typed in B.")

    with signed_in(browser, base, "alice") as alice:
        alice.goto(f"{base}/blogs/{BLOG}/members/")
        alice.get_by_label("bob may use the assistant").set_checked(False)
        alice.get_by_role("button", name="Save bob").click()
        expect(alice.locator(".messages, [role=status]").first).to_be_visible()
    other.wait_for_timeout(500)  # (nothing heard yet: B's stream is held)
    expect(other.locator("#assistant")).to_be_visible()
    release(other)

    expect_blog_live(other)
    note = other.locator("#assistant-off")
    expect(note).to_contain_text("The assistant is off for you on Field Notes.", timeout=LONG_WAIT)
    expect(other.locator("#assistant")).to_have_count(0)
    expect(note.get_by_role("textbox", name="What you had typed wasn't sent.")).to_have_value("words typed in B")
    if where == "editor":
        expect(other.get_by_label("Body (markdown)")).to_have_value("Post words typed in B.")
    assert other.js_errors == []  # type: ignore[attr-defined]
