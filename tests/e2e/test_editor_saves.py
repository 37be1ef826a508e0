"""The editor's Save never writes over a change made elsewhere unseen (a lost update): a tab that did not
hear the change (its stream down, JavaScript off) is refused, shown the saved version against its words,
and keeps them; a second Save, made knowing, keeps its words."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from blog.services import MAX_BODY_CHARS
from tests import files
from tests.e2e.conftest import NO_LIMITS
from tests.e2e.ui import (
    BLOG,
    MARK_BLOG_LIVE,
    expect_blog_live,
    loads,
    login,
    post_item,
    send,
    signed_in,
    wait_turn_finished,
)

DOWN = re.compile(r"/events/")
TOO_LONG_TO_COMPARE = (
    "This post changed meanwhile, and the body here is too long to compare with it. "
    "Shorten it and Save: the saved version is then shown beside your words, and nothing is lost."
)


def new_draft(page, base: str, title: str, body: str) -> str:
    """Create a draft; the address of its editor."""
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill(title)
    page.get_by_label("Body (markdown)").fill(body)
    page.locator("#post-form").get_by_role("button", name="Create draft").click()
    post_item(page, title).get_by_role("link", name="Edit", exact=True).click()
    page.wait_for_url(re.compile(r"/posts/\d+/edit/$"))
    return page.url


def alice_editing_a_new_draft(server_factory, context, title: str):
    """alice's editor open on a new draft of hers, its page hearing the blog's changes live:
    (the server's URL, her page, the editor's URL)."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    context.add_init_script(MARK_BLOG_LIVE)
    alice = context.new_page()
    login(alice, base, "alice")
    edit_url = new_draft(alice, base, title, "The first words.")
    expect_blog_live(alice)
    return base, alice, edit_url


def save_as_bob(browser, base: str, edit_url: str, field: str, value: str) -> None:
    """Another member, in a browser of his own, changes one field of the post and saves it."""
    with signed_in(browser, base, "bob") as bob:
        bob.goto(edit_url)
        bob.get_by_label(field).fill(value)
        bob.locator("#post-form").get_by_role("button", name="Save").click()
        bob.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))


def saved_body(page, edit_url: str) -> str:
    page.goto(edit_url)
    return page.get_by_label("Body (markdown)").input_value()


def test_a_tab_that_did_not_hear_a_save_made_in_another_is_refused_and_keeps_its_words(server_factory, page):
    """A and B edit the same post; B saves; A, whose live stream is down, saves: A gets the card "This post
    changed while you were editing" with B's words, its own still in the form, and B's words stay saved.
    Then "Keep mine" and Save keep A's words. Before, A's Save wrote over B's words without a word."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    login(page, base, "alice")
    edit_url = new_draft(page, base, "Lost update check", "The first words.")
    a = page.context.new_page()
    errors: list[str] = []
    a.on("pageerror", lambda exc: errors.append(str(exc)))
    a.route(DOWN, lambda route: route.abort())  # (A hears nothing of B's save)
    a.goto(edit_url)
    a.get_by_label("Title").fill("Lost update check, A's title")
    a.get_by_label("Body (markdown)").fill("Words typed in A.")

    b = page
    b.get_by_label("Body (markdown)").fill("Words saved from B.")
    b.locator("#post-form").get_by_role("button", name="Save").click()
    b.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))

    with loads(a):  # (refused: the editor again, whose script asks before leaving and keeps the words)
        a.locator("#post-form").get_by_role("button", name="Save").click()
    card = a.locator("#incoming .incoming")
    expect(card).to_contain_text("This post changed while you were editing")
    expect(card.locator(".diff-line.added")).to_contain_text(["Words saved from B."])
    expect(a.locator("p.error[role=alert]")).to_contain_text(
        "You changed this post in another tab or window since you opened it, so nothing was saved."
    )
    expect(a.get_by_text("You changed this post in another tab or window")).to_have_count(1)  # said once
    assert a.url == edit_url
    expect(a.get_by_label("Title")).to_have_value("Lost update check, A's title")
    expect(a.get_by_label("Body (markdown)")).to_have_value("Words typed in A.")
    assert saved_body(b, edit_url) == "Words saved from B."

    # Leaving would lose A's words: the page asks (the form differs from the saved version).
    asked: list[str] = []

    def stay(dialog) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    a.on("dialog", stay)
    a.get_by_role("link", name="Cancel").click()
    assert asked == ["beforeunload"] and a.url == edit_url
    a.remove_listener("dialog", stay)

    # Knowing, A keeps its words and saves them.
    card.get_by_role("button", name="Keep mine").click()
    expect(card).to_have_count(0)
    a.locator("#post-form").get_by_role("button", name="Save").click()
    a.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(post_item(a, "Lost update check, A's title")).to_be_visible()
    assert saved_body(b, edit_url) == "Words typed in A."
    assert errors == []


def test_without_javascript_a_stale_save_is_refused_with_the_words_kept_and_the_member_named(
    server_factory, browser, page
):
    """Alice edits with JavaScript off; bob saves the same post meanwhile; alice's Save shows his words
    against hers, names him, keeps hers in the form; her second Save keeps hers."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    login(page, base, "alice")
    edit_url = new_draft(page, base, "No script check", "The first words.")
    plain = browser.new_context(java_script_enabled=False)
    try:
        alice = plain.new_page()
        alice.goto(f"{base}/accounts/login/")
        alice.get_by_label("Username").fill("alice")
        alice.get_by_label("Password").fill("demo-pass-1234")
        alice.locator("main").get_by_role("button", name="Sign in").click()
        alice.goto(edit_url)
        alice.get_by_label("Body (markdown)").fill("Alice's words.")

        save_as_bob(browser, base, edit_url, "Body (markdown)", "Bob's words.")

        alice.locator("#post-form").get_by_role("button", name="Save").click()
        expect(alice.locator("p.error[role=alert]")).to_contain_text(
            "bob changed this post since you opened it, so nothing was saved."
        )
        card = alice.locator("#incoming .incoming")
        expect(card.locator(".diff-line.added")).to_contain_text(["Bob's words."])
        expect(card.get_by_role("button", name="Keep mine")).to_be_hidden()  # (they need the script)
        expect(alice.get_by_label("Body (markdown)")).to_have_value("Alice's words.")
        assert saved_body(page, edit_url) == "Bob's words."

        alice.locator("#post-form").get_by_role("button", name="Save").click()
        alice.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
        assert saved_body(page, edit_url) == "Alice's words."
    finally:
        plain.close()


def test_a_change_by_another_member_heard_live_is_named_and_a_save_after_it_is_not_refused(
    server_factory, browser, context
):
    """Nothing typed: bob's save appears in alice's open editor, the note naming bob (it said "The
    assistant" whoever made it); her Save then saves (the form's version moved on with the words)."""
    base, alice, edit_url = alice_editing_a_new_draft(server_factory, context, "Named change check")

    save_as_bob(browser, base, edit_url, "Body (markdown)", "Bob's words.")

    expect(alice.get_by_label("Body (markdown)")).to_have_value("Bob's words.")
    expect(alice.locator(".incoming-note")).to_have_text("bob changed this post; the editor shows the saved version.")
    alice.get_by_label("Title").fill("Named change check, renamed")
    alice.locator("#post-form").get_by_role("button", name="Save").click()
    alice.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(post_item(alice, "Named change check, renamed")).to_be_visible()


def test_a_change_heard_while_the_body_is_too_long_to_compare_says_so_not_that_the_post_is_gone(
    server_factory, browser, context
):
    """The editor's look at its post answers 413 when the form's body is over the limit (nothing to compare):
    that is said as it is, and the words stay. It said the post could no longer be edited here."""
    base, alice, edit_url = alice_editing_a_new_draft(server_factory, context, "Too long to compare check")
    long_body = "x" * (MAX_BODY_CHARS + 1)
    alice.get_by_label("Body (markdown)").fill(long_body)
    expect(alice.locator("#preview")).to_contain_text("This post is too long")

    save_as_bob(browser, base, edit_url, "Title", "Too long to compare check, renamed")

    expect(alice.locator("#incoming")).to_have_text(TOO_LONG_TO_COMPARE)
    assert alice.get_by_label("Body (markdown)").input_value() == long_body

    alice.get_by_label("Body (markdown)").fill("Shorter words.")  # and as it says: a Save shows both
    alice.locator("#post-form").get_by_role("button", name="Save").click()
    expect(alice.get_by_role("heading", name="This post changed while you were editing")).to_be_visible()
    expect(alice.get_by_label("Body (markdown)")).to_have_value("Shorter words.")


def test_the_assistant_deleting_the_open_post_is_said_quietly_and_a_save_gives_the_words_back(demo_server, page):
    """Beside the editor, the person asks the assistant to delete the post they are editing, words typed and
    not saved. The editor says the post can no longer be edited here, with no error in the browser's console
    (the editor's look at its post answered 404, logged as a failed resource, once per announcement); a Save
    then gives the words back to copy. Before, it showed the site's bare "Not found" page and the words were
    gone."""
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    base = demo_server.url
    login(page, base, "alice")
    new_draft(page, base, "Doomed while open", "Saved words.")
    typed = "Words typed and not saved."
    page.get_by_label("Body (markdown)").fill(typed)
    send(page, "delete Doomed while open")
    page.locator("#chat-log").get_by_role("button", name="Approve").click()
    expect(page.locator("#incoming")).to_have_text(
        "This post can no longer be edited here (it was deleted, or your access changed)."
    )
    wait_turn_finished(page)
    assert console_errors == []

    page.locator("#post-form").get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="Not saved")).to_be_visible()
    expect(page.get_by_role("alert")).to_have_text(
        "This post was deleted while you were editing, so nothing was saved. "
        "Your words are below: copy them to keep them, or start a new post with them."
    )
    expect(page.get_by_label("Body (markdown)")).to_have_value(typed)


def test_alice_chooses_a_cover_in_the_editor_sees_it_and_removes_it(server_factory, page):
    """The editor's "Cover image" field: a PNG chosen with Create draft becomes the post's cover, shown in
    the editor (loaded from the server) and on the post list; "Remove the cover" takes it away."""
    base = server_factory("editor-saves", AGENT_BACKEND="demo", **NO_LIMITS).url
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill("Cover by hand check")
    page.get_by_label("Body (markdown)").fill("A sunset.")
    page.get_by_label("Cover image").set_input_files(
        {"name": "sunset.png", "mimeType": "image/png", "buffer": files.png()}
    )
    page.locator("#post-form").get_by_role("button", name="Create draft").click()
    page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    item = post_item(page, "Cover by hand check")
    expect(item.locator("img.post-thumb")).to_have_count(1)

    item.get_by_role("link", name="Edit", exact=True).click()
    cover = page.locator("#post-cover")
    expect(cover).to_be_visible()
    assert cover.evaluate("img => img.complete && img.naturalWidth === 64")
    page.get_by_label("Remove the cover").check()
    page.locator("#post-form").get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
    expect(post_item(page, "Cover by hand check").locator("img.post-thumb")).to_have_count(0)
    assert errors == []
