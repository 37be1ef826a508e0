"""An open editor follows its post's cover: a cover set, replaced or removed elsewhere (another tab, the
assistant beside the editor) is shown in the editor as it is now, the newest image and never the cached
one, and the Remove box with it; the words typed, the image chosen and a ticked Remove stay."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests import files
from tests.e2e.conftest import NO_LIMITS
from tests.e2e.test_editor_saves import alice_editing_a_new_draft, new_draft
from tests.e2e.ui import BLOG, login, post_item, send, wait_turn_finished


def width_shown(page) -> int:
    """The width of the cover the editor shows, once loaded (each test image has its own)."""
    cover = page.locator("#post-cover")
    expect(cover).to_be_visible()
    page.wait_for_function("() => { const i = document.getElementById('post-cover'); return i && i.complete; }")
    return cover.evaluate("img => img.naturalWidth")


def save_cover_in(tab, edit_url: str, *, width: int | None = None, remove: bool = False) -> None:
    """In another tab: open the editor, choose an image `width` pixels wide (or tick Remove), and Save."""
    tab.goto(edit_url)
    if remove:
        tab.get_by_label("Remove the cover").check()
    else:
        tab.get_by_label("Cover image").set_input_files(
            {"name": f"w{width}.png", "mimeType": "image/png", "buffer": files.png(width, 40)}
        )
    tab.locator("#post-form").get_by_role("button", name="Save").click()
    tab.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))


def test_a_cover_set_replaced_and_removed_in_another_tab_reaches_the_open_editor(server_factory, context):
    """A (alice's editor) is open on a draft; in tab B she sets a cover, then replaces it, then removes it. A
    shows each: the new image (the cover's address is the post's, and a browser keeps the image it got for an
    hour), the Remove box once there is a cover and gone with it. A's words, the image chosen in A and A's
    ticked Remove stay throughout; A's Save then keeps A's words and image (its version moved on)."""
    base, a, edit_url = alice_editing_a_new_draft(server_factory, context, "Cover follows check")
    errors: list[str] = []
    a.on("pageerror", lambda exc: errors.append(str(exc)))
    b = context.new_page()
    expect(a.locator("#post-cover")).to_have_count(0)
    expect(a.get_by_label("Remove the cover")).to_have_count(0)

    save_cover_in(b, edit_url, width=64)
    assert width_shown(a) == 64
    expect(a.get_by_label("Remove the cover")).not_to_be_checked()
    expect(a.locator("#cover-hint")).to_contain_text("A new image replaces the cover.")
    expect(a.locator("#incoming")).to_contain_text("You changed this post in another tab or window")

    a.get_by_label("Body (markdown)").fill("Words typed in A.")
    a.get_by_label("Remove the cover").check()
    a.get_by_label("Cover image").set_input_files(
        {"name": "mine.png", "mimeType": "image/png", "buffer": files.png(100, 40)}
    )

    save_cover_in(b, edit_url, width=80)
    expect(a.locator("#post-cover")).to_have_attribute("src", re.compile(r"/cover\?v=[0-9a-f]{12}$"))
    a.wait_for_function("() => document.getElementById('post-cover').naturalWidth === 80")
    expect(a.get_by_label("Remove the cover")).to_be_checked()  # (still a cover: the tick stays)
    expect(a.get_by_label("Body (markdown)")).to_have_value("Words typed in A.")
    assert a.get_by_label("Cover image").evaluate("input => input.files[0].name") == "mine.png"

    save_cover_in(b, edit_url, remove=True)
    expect(a.locator("#post-cover")).to_have_count(0)
    expect(a.get_by_label("Remove the cover")).to_have_count(0)
    expect(a.locator("#cover-hint")).not_to_contain_text("replaces")
    expect(a.get_by_label("Body (markdown)")).to_have_value("Words typed in A.")
    assert a.get_by_label("Cover image").evaluate("input => input.files[0].name") == "mine.png"
    expect(a.locator("#incoming .incoming")).to_have_count(0)  # (the words were not changed: nothing to choose)

    a.locator("#post-form").get_by_role("button", name="Save").click()
    a.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    thumb = post_item(a, "Cover follows check").locator("img.post-thumb")
    expect(thumb).to_have_count(1)
    a.wait_for_function("() => document.querySelector('img.post-thumb').naturalWidth === 100")
    a.goto(edit_url)
    expect(a.get_by_label("Body (markdown)")).to_have_value("Words typed in A.")
    assert errors == []


def test_the_assistant_beside_the_editor_removes_the_cover_and_the_editor_shows_none(server_factory, page):
    """Beside the editor, words typed and not saved, the person asks the demo assistant to remove the cover of
    this post: the editor's picture and its Remove box go, the words stay. Before, the picture stayed until a
    reload."""
    base = server_factory("editor-cover-live", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS).url
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, base, "alice")
    edit_url = new_draft(page, base, "Cover by the assistant", "Saved words.")
    save_cover_in(page, edit_url, width=64)
    page.goto(edit_url)
    assert width_shown(page) == 64
    page.get_by_label("Body (markdown)").fill("Saved words.\nTyped, not saved.")

    send(page, "remove the cover of this post")
    expect(page.locator("#post-cover")).to_have_count(0)
    expect(page.get_by_label("Remove the cover")).to_have_count(0)
    wait_turn_finished(page)
    expect(page.get_by_label("Body (markdown)")).to_have_value("Saved words.\nTyped, not saved.")
    assert errors == []


def test_a_cover_changed_while_a_change_card_is_open_leaves_the_cards_choice_answering_for_it(server_factory, context):
    """A (alice's editor) has words typed; in tab B she saves other words, and A offers the change ("Use the
    saved version" / "Keep mine"). Then in B she sets a cover only. A shows the cover, the card as it was; "Keep
    mine" and Save in A keep A's words and the cover, at once. Before, the card still answered for the version
    before the cover, so that Save was refused as a change made meanwhile."""
    base, a, edit_url = alice_editing_a_new_draft(server_factory, context, "Card and cover check")
    errors: list[str] = []
    a.on("pageerror", lambda exc: errors.append(str(exc)))
    a.get_by_label("Body (markdown)").fill("Words typed in A.")
    b = context.new_page()
    b.goto(edit_url)
    b.get_by_label("Body (markdown)").fill("Words saved in B.")
    b.locator("#post-form").get_by_role("button", name="Save").click()
    b.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    card = a.locator("#incoming .incoming")
    expect(card.locator(".diff-line.added")).to_contain_text(["Words saved in B."])

    save_cover_in(b, edit_url, width=64)
    assert width_shown(a) == 64
    expect(card.locator(".diff-line.added")).to_contain_text(["Words saved in B."])  # (the card as it was)

    card.get_by_role("button", name="Keep mine").click()
    expect(card).to_have_count(0)
    a.locator("#post-form").get_by_role("button", name="Save").click()
    a.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(a.locator(".flash")).to_contain_text("Saved “Card and cover check”.")
    a.goto(edit_url)
    expect(a.get_by_label("Body (markdown)")).to_have_value("Words typed in A.")
    assert width_shown(a) == 64
    assert errors == []
