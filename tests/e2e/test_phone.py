"""The site on a phone: a touch screen 390 (and 360) px wide. Nothing scrolls sideways, the assistant is
one tap from the top of the blog page, its buttons are big enough for a finger and never overlap, and the
touch keyboard's Enter adds a line (Send sends)."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image, ImageChops
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import (
    BLOG,
    chat_input,
    loads,
    login,
    new_chat,
    post_item,
    replies,
    user_messages,
    wait_turn_finished,
)

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
SMALL_PHONE = {"viewport": {"width": 360, "height": 640}, "is_mobile": True, "has_touch": True}
TABLET = {"viewport": {"width": 1024, "height": 768}, "is_mobile": True, "has_touch": True}
NARROWEST_PHONE = {"viewport": {"width": 320, "height": 568}, "is_mobile": True, "has_touch": True}
PHONES = pytest.mark.parametrize("context_options", [PHONE, SMALL_PHONE], ids=["390x844", "360x640"])
FINGER = 44  # px: the least height of a button a finger presses (WCAG 2.5.5, Apple's and Android's guidance)


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: these tests publish posts, which the public pages of other tests would list."""
    return server_factory("phone", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="40", **NO_LIMITS)


def width(page: Page) -> int:
    return page.viewport_size["width"]


def assert_no_sideways_scroll(page: Page) -> None:
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width(page), f"{page.url} scrolls sideways on a phone ({scroll}px wide)"


def assert_in_view(page: Page, *controls: Locator) -> None:
    """Each control lies wholly within the window as it is scrolled now."""
    view = page.viewport_size
    for control in controls:
        box = control.bounding_box()
        assert box, control
        assert box["x"] >= 0 and box["x"] + box["width"] <= view["width"], (control, box)
        assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"], (control, box)


def assert_fingertip(*controls: Locator) -> None:
    """Each control is tall enough to tap, and none overlaps another."""
    for control in controls:
        box = control.bounding_box()
        assert box and box["height"] >= FINGER, (control, box)
    assert_apart(*controls)


def assert_apart(*controls: Locator) -> None:
    """No two of the controls overlap."""
    boxes = [control.bounding_box() for control in controls]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"]
                or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"]
                or b["y"] + b["height"] <= a["y"]
            )
            assert apart, (a, b)


def tap_send(page: Page, text: str) -> None:
    before = user_messages(page).count()
    chat_input(page).fill(text)
    page.locator("#chat-send").tap()
    expect(user_messages(page)).to_have_count(before + 1)


@PHONES
def test_the_assistant_is_one_tap_from_the_top_of_the_blog_page(server, page, context_options):
    """The assistant sits under the posts on a phone (fifty of them, often): a link at the top of the
    page brings its whole panel, with the message box and Send, into view."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    assert_no_sideways_scroll(page)
    to_assistant = page.get_by_role("link", name="Assistant")
    expect(to_assistant).to_be_visible()
    assert_in_view(page, to_assistant)
    to_assistant.tap()
    panel = page.locator("#assistant")
    assert_in_view(page, panel.get_by_role("heading", name="Assistant"), chat_input(page), page.locator("#chat-send"))
    assert_fingertip(
        page.locator("#chat-send"), page.locator(".attach-button"), panel.get_by_role("button", name="New chat")
    )


def test_the_assistant_link_is_only_for_narrow_screens(server, page):
    """Beside the posts (a desktop window), the assistant needs no link to it."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    expect(page.locator("#assistant")).to_be_in_viewport()
    expect(page.get_by_role("link", name="Assistant")).to_be_hidden()


@pytest.mark.parametrize("context_options", [PHONE], ids=["390x844"])
def test_enter_adds_a_line_on_a_touch_keyboard_and_send_sends(server, page, context_options):
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)
    box = chat_input(page)
    assert "Enter sends" not in (box.get_attribute("placeholder") or "")  # not what Enter does here
    box.tap()
    box.type("first line")
    box.press("Enter")
    box.type("second line")
    expect(box).to_have_value("first line\nsecond line")
    expect(user_messages(page)).to_have_count(0)

    page.locator("#chat-send").tap()
    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_contain_text("first linesecond line")  # (its line break a <br>)
    expect(user_messages(page).first.locator(".bubble br")).to_have_count(1)
    wait_turn_finished(page)
    # The form drawn again for the chat the first message created keeps the phone's placeholder.
    assert "Enter sends" not in (chat_input(page).get_attribute("placeholder") or "")


def test_enter_still_sends_with_a_keyboard_and_mouse(server, page):
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)
    expect(chat_input(page)).to_have_attribute("placeholder", re.compile("Enter sends"))
    chat_input(page).fill("list my posts")
    chat_input(page).press("Enter")
    expect(user_messages(page)).to_have_count(1)
    wait_turn_finished(page)


@pytest.mark.parametrize("context_options", [TABLET], ids=["tablet-1024x768"])
def test_enter_sends_on_a_tablet_once_its_hardware_keyboard_shows_itself(server, page, context_options):
    """A tablet is a touch screen, so Enter at first adds a line; a key no on-screen keyboard has (Shift,
    for a capital) shows a hardware keyboard: Enter sends from then on, the box says so, and it keeps saying
    so on the next page. A key only an on-screen keyboard sends (Android's "Unidentified") turns it back."""
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)
    box = chat_input(page)
    assert "Enter sends" not in (box.get_attribute("placeholder") or "")
    box.tap()
    page.keyboard.press("Shift+KeyL")
    expect(box).to_have_attribute("placeholder", re.compile("Enter sends"))
    page.keyboard.type("ist my posts")
    page.keyboard.press("Enter")
    expect(user_messages(page)).to_have_count(1)
    expect(user_messages(page).first).to_have_text("List my posts")
    wait_turn_finished(page)
    expect(chat_input(page)).to_have_attribute("placeholder", re.compile("Enter sends"))  # (the form drawn again)

    page.reload()
    box = chat_input(page)
    expect(box).to_have_attribute("placeholder", re.compile("Enter sends"))
    box.tap()
    cdp = page.context.new_cdp_session(page)  # an on-screen keyboard's key, as Chrome on Android reports it
    for kind in ("rawKeyDown", "keyUp"):
        cdp.send("Input.dispatchKeyEvent", {"type": kind, "key": "Unidentified", "windowsVirtualKeyCode": 229})
    expect(box).to_have_attribute("placeholder", "Message the assistant…")
    box.type("one")
    box.press("Enter")
    box.type("two")
    expect(box).to_have_value("one\ntwo")
    expect(user_messages(page)).to_have_count(1)


@PHONES
def test_approve_reject_and_stop_are_big_enough_to_tap(server, page, context_options):
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)
    title = f"Heron at dawn {context_options['viewport']['width']}"
    tap_send(page, f"draft a post titled {title}")
    wait_turn_finished(page)
    tap_send(page, "publish it")
    card = page.locator(".approval").last
    approve, reject = card.get_by_role("button", name="Approve"), card.get_by_role("button", name="Reject")
    expect(approve).to_be_visible()
    approve.scroll_into_view_if_needed()
    assert_in_view(page, approve, reject)
    assert_fingertip(approve, reject)
    assert_no_sideways_scroll(page)
    approve.tap()
    expect(post_item(page, title).locator(".badge")).to_have_text("Published")
    wait_turn_finished(page)

    tap_send(page, "write something long")
    stop = page.locator("#chat-stop")
    expect(stop).to_be_visible()
    assert_in_view(page, stop, page.locator("#chat-send"))
    assert_fingertip(stop, page.locator("#chat-send"), page.locator(".attach-button"))
    stop.tap()
    wait_turn_finished(page, 30_000)
    expect(replies(page).last).to_be_visible()
    assert_no_sideways_scroll(page)


@PHONES
def test_members_fits_a_phone(server, page, context_options):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    assert_no_sideways_scroll(page)
    bob = page.locator(".members tbody tr").filter(has=page.locator("th", has_text="bob"))
    save, remove = bob.get_by_role("button", name="Save bob"), bob.get_by_role("link", name="Remove bob")
    assert_fingertip(save)
    assert_apart(save, remove)
    for control in (bob.get_by_label("Role of bob"), save, remove):
        box = control.bounding_box()
        assert box and box["x"] + box["width"] <= width(page), (control, box)


@pytest.mark.parametrize("context_options", [NARROWEST_PHONE], ids=["320x568"])
def test_no_main_screen_scrolls_sideways_on_the_narrowest_phone(server, page, context_options):
    """At 320 px (an iPhone SE's first size, a phone zoomed) Members scrolled sideways by 37 px: its four
    columns now fit. The other main screens are held to the same: sign-in, the blog page with a chat in its
    panel, a post's editor (new and with the assistant beside it), the Clients screen and the chat list."""
    base = server.url
    page.goto(f"{base}/accounts/login/")
    assert_no_sideways_scroll(page)
    login(page, base, "alice")
    new_chat(page, base)
    tap_send(page, "list my posts")
    wait_turn_finished(page)
    assert_no_sideways_scroll(page)
    for path in ("members/", "posts/new/", "clients/", "chats/"):
        page.goto(f"{base}/blogs/{BLOG}/{path}")
        expect(page.locator("main")).to_be_visible()
        assert_no_sideways_scroll(page)
    page.goto(f"{base}/blogs/{BLOG}/")
    post_item(page, "Welcome to Field Notes").get_by_role("link", name="Edit", exact=True).click()
    expect(page.get_by_label("Body (markdown)")).to_be_visible()
    assert_no_sideways_scroll(page)
    page.goto(f"{base}/blogs/{BLOG}/members/")
    bob = page.locator(".members tbody tr").filter(has=page.locator("th", has_text="bob"))
    save, remove = bob.get_by_role("button", name="Save bob"), bob.get_by_role("link", name="Remove bob")
    assert_in_view(page, bob.get_by_label("Role of bob"), save, remove)
    assert_fingertip(save)
    assert_apart(save, remove)


@PHONES
def test_a_long_word_in_a_published_post_never_widens_the_public_pages(server, page, context_options):
    base = server.url
    login(page, base, "alice")
    title = "Links-and-code-from-the-riverbank-" + "x" * 30
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill(title)
    page.get_by_label("Body (markdown)").fill(f"See https://example.com/{'a' * 150} and {'word' * 50}.")
    page.get_by_role("button", name="Create draft").click()
    page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))  # (loaded, its scripts too: Publish is an htmx button)
    row = post_item(page, title).first
    row.get_by_role("button", name="Publish").tap()
    expect(row.locator(".badge")).to_have_text("Published")

    page.goto(f"{base}/read/{BLOG}/")
    expect(page.locator(".public-entry", has_text=title).first).to_be_visible()
    assert_no_sideways_scroll(page)
    page.locator(".public-entry h2 a", has_text=title).first.tap()
    expect(page.locator("article > h1")).to_have_text(title)
    assert_no_sideways_scroll(page)
    page.goto(f"{base}/")
    assert_no_sideways_scroll(page)


@PHONES
def test_the_top_bar_keeps_each_link_on_one_line(server, page, context_options):
    """Signed in as staff the top bar holds five things; on a narrow phone they go to a second line whole,
    never "Field / Desk" or "Sign / out" broken over two."""
    login(page, server.url, "admin")
    assert_no_sideways_scroll(page)
    bar = page.locator(".topbar")
    for control in (
        bar.get_by_role("link", name="Field Desk"),
        bar.get_by_role("link", name="Password"),
        bar.get_by_role("link", name="Admin"),
        bar.get_by_role("button", name="Sign out"),
    ):
        lines = control.evaluate(
            "e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length; }"
        )
        assert lines == 1, (control, lines)  # one line of text
        box = control.bounding_box()
        assert box and box["x"] + box["width"] <= width(page), (control, box)


@PHONES
def test_a_posts_actions_and_the_top_bars_links_are_big_enough_to_tap(server, page, context_options):
    """Edit, Publish, History and Delete in a post's row, the blog's All posts, Public site, Clients, Members and
    Assistant, and the top bar's links were text about 24 px tall: each is now as tall as a button to a
    finger, and none overlaps another."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    row = page.locator("#post-list li.post").first
    actions = row.locator(".post-actions").locator("a, button")
    expect(actions.first).to_be_visible()
    assert actions.count() >= 3
    assert_fingertip(*actions.all())
    bar = page.locator(".topbar nav")
    assert_fingertip(bar.get_by_role("link", name="Password"), bar.get_by_role("button", name="Sign out"))
    blog_bar = page.get_by_role("navigation", name="Blog")
    assert_fingertip(*blog_bar.get_by_role("link").all())
    assert_no_sideways_scroll(page)


@PHONES
def test_checkboxes_are_big_enough_to_tap(server, page, context_options):
    """The browser's checkbox is 13 px: each takes 24 px (WCAG 2.5.8's least target), its label beside it."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/clients/")
    boxes = page.locator('input[type="checkbox"]')
    expect(boxes.first).to_be_visible()
    for box in boxes.all():
        if box.is_visible():
            size = box.bounding_box()
            assert size and size["width"] >= 24 and size["height"] >= 24, size
    assert_no_sideways_scroll(page)


def drawn_size(box: Locator) -> tuple[int, int]:
    """The width and height of what the browser paints for a control: the pixels of its screenshot that
    differ from the page behind it (its corner), not the layout box CSS gives it."""
    image = Image.open(io.BytesIO(box.screenshot(animations="disabled", scale="css"))).convert("RGB")
    behind = image.getpixel((0, 0))
    differs = Image.eval(
        ImageChops.difference(image, Image.new("RGB", image.size, behind)).convert("L"), lambda v: 255 if v > 24 else 0
    )
    area = differs.getbbox()
    return (area[2] - area[0], area[3] - area[1]) if area else (0, 0)


@PHONES
def test_a_checkbox_draws_its_whole_box_and_toggles_by_tap_label_and_space(server, page, context_options):
    """A checkbox made a 24 px target must also look it: what Chromium paints (measured in pixels, checked and
    not; a 13 px glyph in the middle of a 24 px box would fail) fills the box, and it still toggles by a tap
    on it, a tap on its label and the Space key."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/clients/")
    label = page.locator("label.check").filter(has=page.locator('input[type="checkbox"]:not(:disabled)')).first
    box = label.locator('input[type="checkbox"]')
    expect(box).to_be_visible()
    box.scroll_into_view_if_needed()
    checked = box.is_checked()
    for _ in range(2):
        width_, height = drawn_size(box)
        assert width_ >= 20 and height >= 20, (box.is_checked(), width_, height)
        box.tap()
        checked = not checked
        expect(box).to_be_checked(checked=checked)
    label.tap(position={"x": label.bounding_box()["width"] - 4, "y": 8})  # (its text's end, off the box)
    checked = not checked
    expect(box).to_be_checked(checked=checked)
    box.focus()
    page.keyboard.press("Space")
    expect(box).to_be_checked(checked=not checked)


@pytest.mark.parametrize("context_options", [PHONE], ids=["390x844"])
def test_usernames_are_typed_as_they_are_on_a_touch_keyboard(server, page, context_options):
    """Usernames are matched exactly ("Alice" is nobody): the touch keyboard must not capitalise the first
    letter or correct the spelling of the sign-in form's username, nor of the member to add."""
    page.goto(f"{server.url}/accounts/login/")
    username = page.get_by_label("Username")
    expect(username).to_have_attribute("autocapitalize", "none")
    expect(username).to_have_attribute("autocorrect", "off")
    expect(username).to_have_attribute("spellcheck", "false")
    expect(username).to_have_attribute("autocomplete", "username")
    expect(page.get_by_label("Password")).to_have_attribute("autocomplete", "current-password")
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    adding = page.locator("#add-username")
    expect(adding).to_have_attribute("autocapitalize", "none")
    expect(adding).to_have_attribute("autocorrect", "off")
    expect(adding).to_have_attribute("spellcheck", "false")
    expect(adding).to_have_attribute("autocomplete", "off")  # someone else's name, not the person's own


@PHONES
def test_earlier_chats_open_within_the_screen(server, page, context_options):
    """The assistant's head keeps "Earlier chats" and "New chat" on one line each, and the list of earlier
    chats opens wholly on the screen (it ran off its left edge, cutting each chat's name)."""
    base = server.url
    login(page, base, "alice")
    new_chat(page, base)
    tap_send(page, "list my posts")
    wait_turn_finished(page)
    # (the new chat's page, loaded: the page left, a chat's too, matched wait_for_url before htmx had navigated)
    with loads(page, re.compile(r"[?&]chat=")):
        page.locator("#assistant").get_by_role("button", name="New chat").tap()
    page.get_by_role("link", name="Assistant").tap()
    head = page.locator(".assistant-head")
    new, earlier = head.get_by_role("button", name="New chat"), head.locator(".history summary")
    assert_fingertip(new)
    assert_apart(new, earlier)
    assert new.bounding_box()["height"] < 50 and earlier.bounding_box()["height"] < 30  # one line each
    earlier.tap()
    chats = head.locator(".history ul")
    expect(chats).to_be_visible()
    box = chats.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width(page), box
    expect(chats.get_by_role("link", name=re.compile("list my posts")).first).to_be_visible()
    assert_no_sideways_scroll(page)


@pytest.mark.parametrize("context_options", [SMALL_PHONE], ids=["360x640"])
def test_connecting_a_client_with_a_long_name_fits_a_phone(server, page, context_options):
    """A client names itself: a long name without spaces pushed the consent page (and then the Clients
    screen) wider than the phone, and Approve could not be tapped."""
    from tests.e2e.test_connectors_ui import authorization, register

    base = server.url
    name = "Claude-Desktop-on-a-phone-" + "x" * 40
    url, _ = authorization(base, register(base, name))
    page.goto(url)
    login_form = page.locator("main form")
    expect(login_form).to_be_visible()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("demo-pass-1234")
    page.locator("main").get_by_role("button", name="Sign in").tap()
    expect(page.locator("#client-name")).to_have_text(name)
    assert_no_sideways_scroll(page)
    approve, deny = page.get_by_role("button", name="Approve"), page.get_by_role("button", name="Deny")
    approve.scroll_into_view_if_needed()
    assert_in_view(page, approve, deny)
    assert_fingertip(approve, deny)
    # (nothing listens on the callback's port: the request the browser makes is the answer)
    with page.expect_request(re.compile(r"^http://127\.0\.0\.1:5999/callback\?")):
        approve.tap()

    page = page.context.new_page()  # (this one is left to its failed callback)
    page.goto(f"{base}/blogs/{BLOG}/clients/")
    card = page.locator("form.connected-client").filter(has=page.locator(".client-name", has_text=name))
    expect(card).to_be_visible()
    assert_no_sideways_scroll(page)
    save, revoke = card.get_by_role("button", name="Save"), card.get_by_role("button", name="Revoke")
    revoke.scroll_into_view_if_needed()
    assert_in_view(page, save, revoke)
    assert_fingertip(save, revoke)
    revoke.tap()
    expect(page.locator("form.connected-client").filter(has=page.locator(".client-name", has_text=name))).to_have_count(
        0
    )


@PHONES
def test_the_assistant_beside_a_post_is_one_tap_from_the_top_of_its_editor(server, page, context_options):
    """Beside the editor the assistant comes after the post's fields and its preview: a link at the top
    of the editor brings the panel, with the message box and Send, into view."""
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    post_item(page, "Welcome to Field Notes").get_by_role("link", name="Edit", exact=True).click()
    expect(page.get_by_label("Body (markdown)")).to_be_visible()
    assert_no_sideways_scroll(page)
    expect(page.locator("#assistant")).not_to_be_in_viewport()
    to_assistant = page.get_by_role("link", name="Assistant")
    assert_in_view(page, to_assistant)
    to_assistant.tap()
    assert_in_view(page, page.locator("#assistant").get_by_role("heading", name="Assistant"), chat_input(page))


def test_the_editors_assistant_link_is_only_for_narrow_screens(server, page):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    post_item(page, "Welcome to Field Notes").get_by_role("link", name="Edit", exact=True).click()
    expect(page.locator("#assistant")).to_be_visible()
    expect(page.get_by_role("link", name="Assistant")).to_be_hidden()
