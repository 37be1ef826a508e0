"""What a keyboard or screen-reader user meets on the blog and editor pages, in a real browser:
what the live regions announce, where focus goes when the control that had it is swapped away,
a countdown that counts, and a focus ring on every control."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from playwright.sync_api import expect

from agent.approvals import NOT_DECIDED
from agent.loop import LASTING
from tests.e2e.conftest import NO_LIMITS, SCREENSHOTS
from tests.e2e.ui import (
    BLOG,
    MARK_BLOG_LIVE,
    WATCH_ANNOUNCEMENTS,
    announcements,
    ask,
    chat_input,
    expect_blog_live,
    login,
    new_chat,
    open_blog,
    post_item,
    send,
    streaming_reply,
    wait_settled,
    wait_turn_finished,
)

GREETING = "I'm the offline demo assistant."  # the demo's answer to "hello"

# Where focus went, in order: one entry per focusin, naming the element by id, else by its classes.
WATCH_FOCUS = """
() => {
  window.__focused = [];
  document.addEventListener("focusin", (e) => {
    window.__focused.push(e.target.id || e.target.className || e.target.tagName);
  });
}
"""


def _create_draft(page, base: str, title: str) -> None:
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Create draft").click()
    expect(post_item(page, title)).to_be_visible()
    page.wait_for_load_state()  # (htmx has taken in the post list's buttons)


# Live regions -----------------------------------------------------------------------------------------------


def test_an_answer_is_announced_once_when_complete_and_the_typing_indicator_is_heard(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    page.evaluate(WATCH_ANNOUNCEMENTS)

    reply = ask(page, "hello")
    expect(reply).to_contain_text(GREETING)
    heard = announcements(page)
    assert "The assistant is answering" in [" ".join(text.split()) for text in heard], heard
    # Not word by word while it streamed, and then whole once more: once, complete.
    assert "".join(heard).count(GREETING) == 1, heard
    assert [text.strip() for text in heard if GREETING in text][0].startswith(GREETING), heard


def test_the_preview_refreshes_silently_and_only_a_too_long_body_is_announced(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.evaluate(WATCH_ANNOUNCEMENTS)
    body = page.get_by_label("Body (markdown)")

    body.fill("Some **bold** words about herons.")
    expect(page.locator("#preview strong")).to_have_text("bold")
    body.fill("Some **bold** words about herons and kingfishers.")
    expect(page.locator("#preview")).to_contain_text("kingfishers")
    assert not any("herons" in text for text in announcements(page)), announcements(page)

    body.fill("x" * 100_001)
    expect(page.locator("#preview")).to_contain_text("This post is too long")
    expect(page.locator("#preview-status")).to_contain_text("This post is too long")
    body.fill("x" * 100_002)  # still too long: said once, not at every pause in typing
    body.fill("Short again.")
    expect(page.locator("#preview")).to_contain_text("Short again.")
    expect(page.locator("#preview-status")).to_have_text("")
    heard = announcements(page)
    assert len(heard) == 1 and heard[0].strip().startswith("This post is too long"), heard


def test_an_error_in_the_chat_is_announced_once(server_factory, write_script, page):
    """The chat's log announces what is added to it: an error there is no alert of its own as well,
    which a screen reader would announce a second time."""
    script = write_script("provider-error", [[{"kind": "text", "text": "Partial"}, {"kind": "error"}]])
    base = server_factory("fake-error", AGENT_BACKEND="fake", AGENT_FAKE_SCRIPT=script).url
    login(page, base, "alice")
    new_chat(page, base)
    page.evaluate(WATCH_ANNOUNCEMENTS)

    reply = ask(page, "hello?")
    expect(reply.locator(".chat-error")).to_have_text(LASTING["refused"])
    heard = announcements(page)
    assert "".join(heard).count(LASTING["refused"]) == 1, heard


def test_a_card_decided_elsewhere_says_so_once(demo_server, context):
    base = demo_server.url
    here, there = context.new_page(), context.new_page()
    login(here, base, "alice")
    new_chat(here, base)
    ask(here, "draft a post titled Decided elsewhere check")
    ask(here, "publish Decided elsewhere check")
    # The same chat in another tab, its card still asking, that does not hear of the decision (its live
    # stream is down: a tab that hears shows the card decided, tests/e2e/test_tabs.py).
    there.route(re.compile(r"/events/"), lambda route: route.abort())
    there.goto(here.url)
    here.locator("#chat-log .approval").last.get_by_role("button", name="Approve").click()
    wait_turn_finished(here)

    there.evaluate(WATCH_ANNOUNCEMENTS)
    card = there.locator("#chat-log .approval").last
    card.get_by_role("button", name="Reject").click()
    expect(card.locator(".chat-error")).to_have_text(NOT_DECIDED["gone"])
    expect(card).to_be_focused()  # read as it takes the focus of the button pressed...
    heard = announcements(there)
    assert NOT_DECIDED["gone"] not in "".join(heard), heard  # ...and not once more by the chat's log


# Focus after a swap -----------------------------------------------------------------------------------------


def test_publish_and_unpublish_keep_focus_on_the_rows_button(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    _create_draft(page, base, "Focus publish check")
    row = post_item(page, "Focus publish check")

    def press_enter() -> None:
        # The list is swapped twice: by the answer, and by the blog's channel telling every open page.
        refreshed = f"/blogs/{BLOG}/posts/"
        with page.expect_response(lambda r: r.request.method == "GET" and urlsplit(r.url).path == refreshed):
            page.keyboard.press("Enter")

    row.get_by_role("button", name="Publish").focus()
    press_enter()
    expect(row.locator(".badge")).to_have_text("Published")
    expect(row.get_by_role("button", name="Unpublish")).to_be_focused()
    wait_settled(page)  # (htmx has taken in the new buttons)

    press_enter()
    expect(row.locator(".badge")).to_have_text("Draft")
    expect(row.get_by_role("button", name="Publish")).to_be_focused()


def test_approve_and_reject_move_focus_to_the_cards_result_then_to_the_chat_input(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Focus approval check")

    asked = ask(page, "publish Focus approval check").get_attribute("id")
    card = page.locator(f"#{asked} .approval")  # (the answer after it will be the last)
    page.evaluate(WATCH_FOCUS)
    page.evaluate(WATCH_ANNOUNCEMENTS)
    card.get_by_role("button", name="Approve").focus()
    page.keyboard.press("Enter")
    expect(card).to_have_text("Approved.")
    wait_turn_finished(page)
    expect(chat_input(page)).to_be_focused()
    assert "Approved." not in "".join(announcements(page))  # (read as it took the focus, not again by the log)
    # The result held focus until the answer ended (focus never fell to the page's body).
    assert page.evaluate("window.__focused") == ["primary", card.get_attribute("id"), "chat-text"], page.evaluate(
        "window.__focused"
    )

    asked = ask(page, "delete Focus approval check").get_attribute("id")
    card = page.locator(f"#{asked} .approval")
    card.get_by_role("button", name="Reject").focus()
    page.keyboard.press("Enter")
    expect(card).to_have_text("Rejected.")
    wait_turn_finished(page)
    expect(chat_input(page)).to_be_focused()
    assert card.get_attribute("id") in page.evaluate("window.__focused")
    expect(post_item(page, "Focus approval check")).to_be_visible()


def test_the_editors_conflict_card_gives_focus_back_to_the_editor(demo_server, context):
    base = demo_server.url
    context.add_init_script(MARK_BLOG_LIVE)
    editor, other = context.new_page(), context.new_page()
    login(editor, base, "alice")
    _create_draft(editor, base, "Focus conflict check")
    post_item(editor, "Focus conflict check").get_by_role("link", name="Edit", exact=True).click()
    expect_blog_live(editor)  # the editor's own stream, not the blog page's it left
    body = editor.get_by_label("Body (markdown)")
    body.fill("Typed here, not saved.")

    for title, choice in (("Focus conflict, renamed", "Keep mine"), ("Focus conflict, again", "Use the saved version")):
        other.goto(editor.url)
        other.get_by_label("Title").fill(title)
        other.get_by_role("button", name="Save").click()
        expect(other).to_have_url(f"{base}/blogs/{BLOG}/")
        card = editor.locator("#incoming .incoming")
        card.get_by_role("button", name=choice).focus()
        editor.keyboard.press("Enter")
        expect(card).to_have_count(0)
        expect(body).to_be_focused()
    expect(editor.get_by_label("Title")).to_have_value("Focus conflict, again")


def test_new_chat_puts_focus_in_the_chat_input(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    open_blog(page, base)
    page.locator("#assistant").get_by_role("button", name="New chat").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"[?&]chat="))
    expect(chat_input(page)).to_be_focused()

    page.reload()  # reaching the chat any other way leaves focus where the page starts
    expect(chat_input(page)).not_to_be_focused()


def test_a_refused_new_chat_says_why_once_and_keeps_focus_in_the_chat(server_factory, page):
    """Over the message rate, "New chat" stays on the page: the notice in the chat's log says why (heard
    once), and focus goes to the chat input, as after a refused message (not to the top of a new page)."""
    limits = {**NO_LIMITS, "AGENT_MESSAGES_PER_MINUTE": "1"}
    base = server_factory("rate-new-chat", AGENT_BACKEND="demo", **limits).url
    login(page, base, "alice")
    new_chat(page, base)  # (takes the minute's one slot)
    chat = page.url
    page.evaluate(WATCH_ANNOUNCEMENTS)
    page.locator("#assistant").get_by_role("button", name="New chat").focus()
    page.keyboard.press("Enter")

    expect(chat_input(page)).to_be_focused()
    notice = page.locator("#chat-log .notice")
    expect(notice).to_contain_text("You're sending messages too quickly.")
    assert page.url == chat
    seconds = notice.locator(".retry").get_attribute("data-retry-seconds")
    heard = [" ".join(text.split()) for text in announcements(page)]
    assert heard == [f"You're sending messages too quickly. Try again in {seconds} s."], heard


def test_the_end_of_an_answer_leaves_focus_where_the_person_went(slow_demo_server, page):
    """Who moved on to the post list while the assistant answered keeps their place when it ends;
    who stayed in the chat is put back in its input."""
    base = slow_demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 2:")
    elsewhere = page.get_by_role("link", name="New post")
    elsewhere.focus()
    page.locator("#chat-stop").click()  # (the answer ends: as at its natural end)
    elsewhere.focus()
    wait_turn_finished(page)
    expect(elsewhere).to_be_focused()

    ask(page, "hello")  # stayed in the chat: the input again
    expect(chat_input(page)).to_be_focused()


# A wait that counts down ------------------------------------------------------------------------------------


def test_a_rate_limit_counts_down_to_you_can_send_now(server_factory, page):
    limits = {**NO_LIMITS, "AGENT_MESSAGES_PER_MINUTE": "1"}
    server = server_factory("rate-countdown", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **limits)
    base = server.url
    page.clock.install()
    login(page, base, "alice")
    new_chat(page, base)  # (a new chat counts under the message rate)
    chat_input(page).fill("hello")
    chat_input(page).press("Enter")
    notice = page.locator("#chat-log .notice")
    expect(notice).to_contain_text("You're sending messages too quickly.")
    expect(page.locator("#chat-log > .hint")).to_be_hidden()  # (not "Ask me to…" beside it)
    retry = notice.locator(".retry")
    first = int(retry.get_attribute("data-retry-seconds"))
    assert 50 <= first <= 60
    shown = retry.locator("[aria-hidden=true]")  # (a screen reader keeps the server's sentence meanwhile)
    expect(shown).to_have_text(re.compile(rf"Try again in ({first}|{first - 1}) s\."))
    notice.screenshot(path=str(SCREENSHOTS / "rate-limit-countdown.png"))

    page.clock.run_for(3_000)
    expect(shown).to_have_text(re.compile(rf"Try again in ({first - 3}|{first - 4}) s\."))
    expect(retry.locator(".visually-hidden")).to_have_text(f"Try again in {first} s.")
    page.clock.run_for(first * 1000)
    expect(retry).to_have_text("That wait is over: you can send a message now.")
    expect(chat_input(page)).to_be_enabled()


def test_an_hours_limit_says_its_wait_in_minutes_and_counts_them_down(server_factory, page):
    """Not "try again in 3540 s": the wait is said in the unit that reads, by the server and as the
    page counts it down."""
    limits = {**NO_LIMITS, "AGENT_BUDGET_TOKENS_PER_HOUR": "1"}
    server = server_factory("hour-countdown", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **limits)
    base = server.url
    page.clock.install()
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "hello")  # an empty bucket admits one call
    retry = ask(page, "list my posts").locator(".chat-error .retry")
    seconds = int(retry.get_attribute("data-retry-seconds"))
    assert 3000 < seconds <= 3600
    minutes = -(-seconds // 60)
    expect(retry.locator(".visually-hidden")).to_have_text(f"Try again in {minutes} min.")
    shown = retry.locator("[aria-hidden=true]")
    expect(shown).to_have_text(re.compile(rf"Try again in ({minutes}|{minutes - 1}) min\."))
    page.clock.run_for(10 * 60_000)
    expect(shown).to_have_text(re.compile(rf"Try again in ({minutes - 10}|{minutes - 11}) min\."))


def test_a_refused_message_says_to_wait_once(server_factory, page):
    """The notice names its wait in one sentence, the one that counts down, not also "please wait"."""
    limits = {**NO_LIMITS, "AGENT_MESSAGES_PER_MINUTE": "1"}
    base = server_factory("rate-said-once", AGENT_BACKEND="demo", **limits).url
    login(page, base, "alice")
    new_chat(page, base)  # (takes the minute's one slot)
    page.evaluate(WATCH_ANNOUNCEMENTS)
    chat_input(page).fill("hello")
    chat_input(page).press("Enter")
    notice = page.locator("#chat-log .notice")
    expect(notice).to_contain_text("You're sending messages too quickly.")
    seconds = notice.locator(".retry").get_attribute("data-retry-seconds")
    heard = [" ".join(text.split()) for text in announcements(page)]
    assert heard == [f"You're sending messages too quickly. Try again in {seconds} s."], heard


# Focus visibility -------------------------------------------------------------------------------------------


def test_the_attach_control_shows_a_focus_ring_from_the_keyboard(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    attach = page.locator("#chat-form .attach-button")

    def ring() -> tuple[str, float, str]:
        style, width, color = attach.evaluate(
            "el => { const s = getComputedStyle(el); return [s.outlineStyle, s.outlineWidth, s.outlineColor]; }"
        )
        return style, float(width.removesuffix("px")), color

    assert ring()[0] == "none"
    chat_input(page).focus()
    page.keyboard.press("Tab")
    expect(page.locator("#chat-files")).to_be_focused()
    style, width, color = ring()
    assert style == "solid" and width >= 2, (style, width)
    assert color == "rgb(47, 91, 234)"  # the accent: 5.5:1 against the white panel (WCAG 2.2 asks 3:1)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#chat-form").screenshot(path=str(SCREENSHOTS / "attach-focus-ring.png"))


def test_the_chat_log_is_one_tab_stop_that_a_keyboard_scrolls_and_shows_a_ring(demo_server, page):
    """The log scrolls; once a card is decided it may hold nothing else to focus, and a keyboard could not
    scroll it (axe: scrollable-region-focusable, tests/e2e/test_axe.py). It is a tab stop of its own, named."""
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "hello")
    chat_input(page).focus()
    page.keyboard.press("Shift+Tab")
    log = page.get_by_role("log", name="Conversation")
    expect(log).to_be_focused()
    style, width = log.evaluate("el => [getComputedStyle(el).outlineStyle, getComputedStyle(el).outlineWidth]")
    assert style == "solid" and float(width.removesuffix("px")) >= 2, (style, width)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator("#assistant").screenshot(path=str(SCREENSHOTS / "chat-log-focus-ring.png"))


# Contrast -----------------------------------------------------------------------------------------------------

# A control's border colour, and the background around it (the first ancestor that paints one).
EDGES = """
el => {
  let around = el.parentElement;
  while (around && getComputedStyle(around).backgroundColor === "rgba(0, 0, 0, 0)") around = around.parentElement;
  return [getComputedStyle(el).borderTopColor, around ? getComputedStyle(around).backgroundColor : "rgb(255, 255, 255)"];
}
"""


def _luminance(rgb: str) -> float:
    def channel(value: str) -> float:
        c = int(value) / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in re.findall(r"\d+", rgb)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_a_text_fields_edge_stands_out_from_what_is_around_it(demo_server, page):
    """A text box is told apart by its border alone: 3:1 against the card or page around it (WCAG 2.2
    1.4.11, non-text contrast). The panel's hairline grey (1.2:1) left the boxes all but invisible."""
    base = demo_server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    edges = [page.get_by_label("Title").evaluate(EDGES), page.get_by_label("Body (markdown)").evaluate(EDGES)]
    open_blog(page, base)
    edges.append(chat_input(page).evaluate(EDGES))
    for border, around in edges:
        assert _contrast(border, around) >= 3, (border, around, round(_contrast(border, around), 2))
