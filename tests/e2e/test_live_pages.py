"""A blog page listens for the blog's changes on a stream its worker holds open. Past
AGENT_MAX_STREAMS_PER_USER open pages the oldest stops listening, says so, and does not reconnect
(which would only stop another). A member removed while their page is open stops hearing the blog
at once, and the page says so; one whose role changes sees the links of their new role at once."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import NO_LIMITS, SCREENSHOTS
from tests.e2e.ui import BLOG, MARK_BLOG_LIVE, ask, chat_input, expect_blog_live, login, replies, signed_in

# Counts the page's opened SSE connections (htmx's SSE extension fires `htmx:sseOpen` on each) in an
# attribute of <html>, which `expect` reads (the site's CSP lets no test script be evaluated there).
COUNT_OPENS = """
document.addEventListener("htmx:sseOpen", () => {
  const html = document.documentElement;
  html.dataset.opens = String(Number(html.dataset.opens || 0) + 1);
});
"""


def opens(page):
    return expect(page.locator("html"))


def test_opening_the_blog_in_one_tab_too_many_stops_live_updates_in_the_oldest(server_factory, context):
    server = server_factory("demo-one-live-page", AGENT_BACKEND="demo", AGENT_MAX_STREAMS_PER_USER="1", **NO_LIMITS)
    context.add_init_script(COUNT_OPENS)
    first = context.new_page()
    login(first, server.url, "alice")
    first.goto(f"{server.url}/blogs/{BLOG}/")
    opens(first).to_have_attribute("data-opens", "1")
    expect(first.locator("#live-status")).to_be_empty()

    second = context.new_page()
    second.goto(f"{server.url}/blogs/{BLOG}/")
    opens(second).to_have_attribute("data-opens", "1")

    notice = first.locator("#live-status")
    expect(notice).to_contain_text("Live updates stopped in this tab")
    expect(notice).to_contain_text("open in too many tabs")
    expect(notice.get_by_role("link", name="Reload")).to_be_visible()
    first.wait_for_timeout(4_000)  # longer than the extension's reconnect delay
    opens(first).to_have_attribute("data-opens", "1")  # it stopped listening, and did not take the place back
    expect(second.locator("#live-status")).to_be_empty()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    first.screenshot(path=str(SCREENSHOTS / "live_updates_stopped_in_the_oldest_tab.png"))

    first.get_by_role("link", name="Reload").click()  # back on: now the other tab is the oldest
    opens(first).to_have_attribute("data-opens", "1")
    expect(second.locator("#live-status")).to_contain_text("open in too many tabs")


def test_a_member_removed_while_their_page_is_open_stops_hearing_the_blog_at_once(server_factory, browser, context):
    """Alice removes Carol on the Members screen while Carol's blog page is open: Carol's page says it
    no longer has access and stops listening (no reconnection), before any later change."""
    server = server_factory("demo-member-removed", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(COUNT_OPENS)
    carol = context.new_page()
    login(carol, server.url, "carol")
    carol.goto(f"{server.url}/blogs/{BLOG}/")
    opens(carol).to_have_attribute("data-opens", "1")

    with signed_in(browser, server.url, "alice") as alice:
        alice.goto(f"{server.url}/blogs/{BLOG}/members/")
        alice.get_by_role("link", name="Remove carol").click()
        alice.get_by_role("button", name="Remove carol").click()
        expect(alice.get_by_text("Removed carol.")).to_be_visible()

        notice = carol.locator("#live-status")
        expect(notice).to_contain_text("Live updates stopped: you no longer have access to Field Notes")
        alice.goto(f"{server.url}/blogs/{BLOG}/posts/new/")
        alice.get_by_label("Title").fill("Made after Carol left")
        alice.get_by_role("button", name="Create draft").click()
        expect(alice.get_by_text("Made after Carol left").first).to_be_visible()
        carol.wait_for_timeout(4_000)  # longer than the extension's reconnect delay
        opens(carol).to_have_attribute("data-opens", "1")  # it stopped listening
        expect(carol.get_by_text("Made after Carol left")).to_have_count(0)


def _old_drafts(server, n: int) -> None:
    """`n` drafts "Old 0" … "Old n-1" of the demo blog, changed before anything the demo seeded."""
    conn = server.database.connect()
    try:
        mark = "%s" if server.database.postgres else "?"
        blog, owner = conn.execute(f"SELECT id, owner_id FROM blog_blog WHERE slug = {mark}", (BLOG,)).fetchone()
        for i in range(n):
            at = f"2020-01-01 00:{i // 60:02d}:{i % 60:02d}"
            conn.execute(
                "INSERT INTO blog_post (blog_id, author_id, title, slug, body, status, cover_ref, cover_type,"
                f" created_at, updated_at) VALUES ({', '.join([mark] * 10)})",
                (blog, owner, f"Old {i}", f"old-{i}", "x", "draft", "", "", at, at),
            )
        conn.commit()
    finally:
        conn.close()


def test_show_more_posts_moves_focus_to_the_first_added_and_live_redraws_keep_them(server_factory, context):
    server = server_factory("demo-many-posts", AGENT_BACKEND="demo", **NO_LIMITS)
    _old_drafts(server, 60)  # with the demo's two: 62
    page = context.new_page()
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/")
    items = page.locator("#post-list li.post")
    expect(items).to_have_count(50)

    page.get_by_role("link", name="Show more posts").click()
    expect(items).to_have_count(62)
    expect(page.get_by_role("link", name="Old 11", exact=True)).to_be_focused()  # the 51st: the first added
    expect(page.get_by_role("link", name="Show more posts")).to_have_count(0)

    other = context.new_page()  # a change in another tab redraws the list live: all of it still shown
    other.goto(f"{server.url}/blogs/{BLOG}/posts/new/")
    other.get_by_label("Title").fill("Written meanwhile")
    other.get_by_role("button", name="Create draft").click()
    expect(page.locator("#post-list")).to_contain_text("Written meanwhile")
    expect(items).to_have_count(63)


def test_a_member_whose_role_changes_while_their_page_is_open_sees_their_new_links_at_once(
    server_factory, browser, context
):
    """Alice makes Bob a viewer on the Members screen while Bob's blog page is open: without a reload,
    Bob's page loses New post and each post's Edit (a viewer may only read); made an editor again, they
    come back."""
    server = server_factory("demo-role-changed", AGENT_BACKEND="demo", **NO_LIMITS)
    bob = context.new_page()
    login(bob, server.url, "bob")
    bob.goto(f"{server.url}/blogs/{BLOG}/")
    new_post, edits = bob.locator("#blog-nav-new-post"), bob.locator("#post-list").get_by_role("link", name="Edit")
    expect(new_post).to_be_visible()
    expect(edits.first).to_be_visible()

    with signed_in(browser, server.url, "alice") as alice:
        for role, shown in (("viewer", 0), ("editor", 1)):
            alice.goto(f"{server.url}/blogs/{BLOG}/members/")
            alice.get_by_label("Role of bob").select_option(role)
            alice.get_by_role("button", name="Save bob").click()
            expect(alice.locator(".messages, [role=status]").first).to_be_visible()
            expect(new_post).to_have_count(shown)
            if shown:
                expect(edits.first).to_be_visible()
            else:
                expect(edits).to_have_count(0)
        expect(bob.locator("#live-status")).not_to_contain_text("stopped")  # (still listening)


def test_a_members_assistant_column_follows_may_use_the_assistant_without_a_reload(server_factory, browser, context):
    """Bob's blog page is open, words typed in the assistant's box. Alice makes him an author, the assistant
    still allowed: his header is redrawn, his panel is not (the words are still there). She unticks "may
    use the assistant": the note takes the panel's place, keeping his words, said not to have been sent.
    She ticks it again: the panel comes back, and answers."""
    server = server_factory("demo-assistant-follows", AGENT_BACKEND="demo", **NO_LIMITS)
    bob = context.new_page()
    login(bob, server.url, "bob")
    bob.goto(f"{server.url}/blogs/{BLOG}/")
    panel, note = bob.locator("#assistant"), bob.locator("#assistant-off")
    expect(panel).to_be_visible()
    chat_input(bob).fill("words typed before")
    # (marks a redrawing takes away: the header's shows the change was heard, the panel's that it stayed)
    bob.evaluate(
        "document.getElementById('blog-head').dataset.seen = document.getElementById('assistant').dataset.seen = '1'"
    )

    with signed_in(browser, server.url, "alice") as alice:

        def save(role: str, allowed: bool) -> None:
            alice.goto(f"{server.url}/blogs/{BLOG}/members/")
            alice.get_by_label("Role of bob").select_option(role)
            alice.get_by_label("bob may use the assistant").set_checked(allowed)
            alice.get_by_role("button", name="Save bob").click()
            expect(alice.locator(".messages, [role=status]").first).to_be_visible()

        save("author", True)
        expect(bob.locator("#blog-head[data-seen]")).to_have_count(0)  # (heard, the header redrawn)
        expect(bob.locator("#assistant[data-seen]")).to_have_count(1)  # (the panel not)
        expect(chat_input(bob)).to_have_value("words typed before")

        save("author", False)
        expect(note).to_contain_text("The assistant is off for you on Field Notes.")
        expect(panel).to_have_count(0)
        expect(bob.locator("#blog-nav-assistant")).to_have_count(0)
        expect(note.locator("[data-unsent]")).to_contain_text("What you had typed wasn't sent.")
        expect(note.get_by_role("textbox", name="What you had typed wasn't sent.")).to_have_value("words typed before")

        save("author", True)
        expect(panel).to_be_visible()
        expect(note).to_have_count(0)
        expect(bob.locator("#blog-nav-assistant")).to_have_count(1)  # (shown on a narrow screen)
        expect(ask(bob, "list my posts")).to_be_visible()
        expect(replies(bob)).to_have_count(1)
        expect(bob.locator("#live-status")).not_to_contain_text("stopped")  # (still listening)


def test_the_assistant_beside_a_posts_editor_follows_may_use_the_assistant_without_a_reload(
    server_factory, browser, context
):
    """Bob edits a post, words typed in its title and body and in the assistant's box beside it. Alice unticks
    "may use the assistant": the note takes the panel's place, keeping his words for the assistant, said not to
    have been sent; the post's words stay as typed. Another member's seat saved meanwhile draws the note again:
    it keeps them. She ticks it again: the panel comes back, answers, and the post's words are still his."""
    server = server_factory("demo-editor-assistant-follows", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    bob, errors = _page_collecting_errors(context)
    login(bob, server.url, "bob")
    bob.goto(f"{server.url}/blogs/{BLOG}/")
    bob.locator("#post-list li.post").first.get_by_role("link", name="Edit").click()
    bob.wait_for_url(re.compile(r"/posts/\d+/edit/$"))
    panel, note = bob.locator("#assistant"), bob.locator("#assistant-off")
    title, body = bob.locator("#post-form").get_by_label("Title"), bob.get_by_label("Body (markdown)")
    expect(panel).to_be_visible()
    title.fill("Bob's title, not saved")
    body.fill("Bob's words in the post, not saved.")
    chat_input(bob).fill("words for the assistant")
    unsent = note.get_by_role("textbox", name="What you had typed wasn't sent.")
    asked: list[str] = []  # (the line's redraws and the editor's catch-ups)
    bob.on(
        "request", lambda request: asked.append(request.url) if re.search(r"/(head|incoming)/", request.url) else None
    )

    with signed_in(browser, server.url, "alice") as alice:
        save = _seat_saver(alice, server)

        expect_blog_live(bob)
        bob.evaluate("document.documentElement.removeAttribute('data-blog-live')")  # (to see the next stream open)
        save("bob", "editor", False)
        expect(note).to_contain_text("The assistant is off for you on Field Notes.")
        expect(panel).to_have_count(0)
        expect(bob.locator("#editor-nav-assistant")).to_have_count(0)
        expect(unsent).to_have_value("words for the assistant")
        expect(title).to_have_value("Bob's title, not saved")
        expect(body).to_have_value("Bob's words in the post, not saved.")
        expect_blog_live(bob)  # (the stream sent with the note is open, its first mark heard)
        bob.wait_for_timeout(1_000)  # (a catch-up would have asked by now)
        assert [re.sub(r".*/posts/\d+/", "", url) for url in asked] == ["head/?assistant=1"]  # (one redraw, no more)

        bob.evaluate("document.getElementById('assistant-off').dataset.seen = '1'")
        save("carol", "author")
        expect(bob.locator("#assistant-off[data-seen]")).to_have_count(0)  # (the note drawn again)
        expect(unsent).to_have_value("words for the assistant")

        save("bob", "editor", True)
        expect(panel).to_be_visible()
        expect(note).to_have_count(0)
        expect(bob.locator("#editor-nav-assistant")).to_have_count(1)  # (shown on a narrow screen)
        expect(ask(bob, "list my posts")).to_be_visible()
        expect(replies(bob)).to_have_count(1)
        expect(title).to_have_value("Bob's title, not saved")
        expect(body).to_have_value("Bob's words in the post, not saved.")
        expect(bob.locator("#live-status")).not_to_contain_text("stopped")  # (still listening)
        assert errors == []


def _page_collecting_errors(context):
    """A new page of `context`, and the list its script errors are collected in."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page, errors


def _edit_the_draft(bob, server) -> None:
    login(bob, server.url, "bob")
    bob.goto(f"{server.url}/blogs/{BLOG}/")
    bob.locator("#post-list li.post", has_text="Notes from the river").get_by_role("link", name="Edit").click()
    bob.wait_for_url(re.compile(r"/posts/\d+/edit/$"))


def _seat_saver(alice, server):
    def save(who: str, role: str, allowed: bool | None = None) -> None:
        alice.goto(f"{server.url}/blogs/{BLOG}/members/")
        alice.get_by_label(f"Role of {who}").select_option(role)
        if allowed is not None:
            alice.get_by_label(f"{who} may use the assistant").set_checked(allowed)
        alice.get_by_role("button", name=f"Save {who}").click()
        expect(alice.locator(".messages, [role=status]").first).to_be_visible()

    return save


def test_a_posts_editor_says_at_once_when_its_member_may_no_longer_edit_and_keeps_their_words(
    server_factory, browser, context
):
    """Bob edits a draft, words typed. Alice makes him a viewer: without a reload his editor says he can no
    longer edit it and why, his title and body stay as typed, read-only (still selectable, to copy) and Save
    is disabled. She makes him an editor again: the notice goes, the fields are his again, and Save keeps his
    words."""
    from tests.e2e.test_axe import audit

    server = server_factory("demo-editor-role", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    bob, errors = _page_collecting_errors(context)
    _edit_the_draft(bob, server)
    title, body = bob.locator("#post-form").get_by_label("Title"), bob.get_by_label("Body (markdown)")
    save_button, notice = bob.get_by_role("button", name="Save", exact=True), bob.locator("#editor-lock")
    title.fill("Bob's title, not saved")
    body.fill("Bob's words in the post, not saved.")
    expect(notice).to_be_empty()
    expect_blog_live(bob)

    with signed_in(browser, server.url, "alice") as alice:
        save = _seat_saver(alice, server)

        save("bob", "viewer")
        expect(bob.get_by_role("alert")).to_have_text(
            "You can no longer edit this post: your role on Field Notes changed. "
            "What you typed is kept below; copy it before you leave."
        )
        for field in (title, body):
            expect(field).not_to_be_editable()
            expect(field).to_be_enabled()  # (read-only, not disabled: its words can be selected and copied)
        expect(save_button).to_be_disabled()
        expect(title).to_have_value("Bob's title, not saved")
        expect(body).to_have_value("Bob's words in the post, not saved.")
        body.select_text()
        assert bob.evaluate("getSelection().toString() || document.activeElement.value") != ""
        audit(bob, "editor-no-longer-editable")

        save("bob", "editor", True)
        expect(notice).to_be_empty()
        expect(bob.get_by_role("alert")).to_have_count(0)
        expect(title).to_be_editable()
        expect(body).to_be_editable()
        expect(save_button).to_be_enabled()
        expect(title).to_have_value("Bob's title, not saved")
        body.press("End")
        body.press_sequentially(" More.")
        save_button.click()
        expect(bob.locator(".flash")).to_contain_text("Saved “Bob's title, not saved”.")
        assert errors == []


def test_a_role_that_keeps_the_column_redraws_the_editors_line_once_and_a_stream_put_in_later_asks_nothing(
    server_factory, browser, context
):
    """Bob edits a draft, no chat beside it yet. Alice makes him an author (the assistant still his): his
    editor's line is redrawn once, carrying its new mark. His first message then puts a stream naming the chat
    in place of the page's: its first mark is the line's, so nothing more is asked (before, it was compared
    with the mark the page was drawn with: a second line redraw and a look at the post, for nothing)."""
    server = server_factory("demo-editor-line-mark", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    bob = context.new_page()
    _edit_the_draft(bob, server)
    line = bob.locator("#editor-head")
    drawn = line.get_attribute("data-head")
    asked: list[str] = []  # (the line's redraws and the editor's catch-ups)
    bob.on(
        "request", lambda request: asked.append(request.url) if re.search(r"/(head|incoming)/", request.url) else None
    )
    expect_blog_live(bob)

    with signed_in(browser, server.url, "alice") as alice:
        _seat_saver(alice, server)("bob", "author", True)
        expect(line).not_to_have_attribute("data-head", drawn or "")  # (heard, the line redrawn)
        expect(line).to_have_attribute("data-editable", "1")  # (a draft: an author may edit it)
        bob.evaluate("document.documentElement.removeAttribute('data-blog-live')")  # (to see the next stream open)
        expect(ask(bob, "list my posts")).to_be_visible()
        expect(replies(bob)).to_have_count(1)
        expect_blog_live(bob)  # (the stream naming the chat is open, its first mark heard)
        bob.wait_for_timeout(1_000)  # (a catch-up would have asked by now)
        assert [re.sub(r".*/posts/\d+/", "", url) for url in asked] == ["head/?assistant=1"]  # (one redraw, no more)


def test_an_authors_editor_says_at_once_when_the_draft_is_published_elsewhere_and_keeps_their_words(
    server_factory, browser, context
):
    """Bob, an author, edits a draft, words typed. Alice publishes it from the blog page: without a reload his
    editor says he can no longer edit it, since it is published and his role does not publish; his words stay,
    read-only. She unpublishes it: the form is his again, words and all. (Before, the editor said nothing until
    its line was next redrawn for another reason, and his Save was refused.)"""
    server = server_factory("demo-editor-published", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    with signed_in(browser, server.url, "alice") as alice:
        _seat_saver(alice, server)("bob", "author")
        bob = context.new_page()
        _edit_the_draft(bob, server)
        title, body = bob.locator("#post-form").get_by_label("Title"), bob.get_by_label("Body (markdown)")
        save_button = bob.get_by_role("button", name="Save", exact=True)
        body.fill("Bob's words, not saved.")
        expect(bob.locator("#editor-lock")).to_be_empty()
        expect_blog_live(bob)

        alice.goto(f"{server.url}/blogs/{BLOG}/")
        row = alice.locator("#post-list li.post", has_text="Notes from the river")
        row.get_by_role("button", name="Publish").click()
        expect(row.get_by_role("button", name="Unpublish")).to_be_visible()
        expect(bob.get_by_role("alert")).to_have_text(
            "You can no longer edit this post: it is published, and changing a published post needs the permission "
            "to publish, which your role on Field Notes does not give. What you typed is kept below; copy it "
            "before you leave."
        )
        expect(body).not_to_be_editable()
        expect(save_button).to_be_disabled()
        expect(body).to_have_value("Bob's words, not saved.")

        row.get_by_role("button", name="Unpublish").click()
        expect(bob.locator("#editor-lock")).to_be_empty()
        expect(title).to_be_editable()
        expect(body).to_be_editable()
        expect(save_button).to_be_enabled()
        expect(body).to_have_value("Bob's words, not saved.")


def test_an_editor_whose_post_is_only_published_elsewhere_shows_no_card_and_saves_the_typed_words(
    server_factory, browser, context
):
    """Bob, an editor, edits a draft, words typed and not saved. Alice publishes it from the blog page, its words
    untouched: his editor shows no "This post changed while you were editing" card (his own edits against the
    saved words, with a choice to make about nothing), only that she published it; the post's state line says
    it is live, his words stay, and his Save is accepted with them (the form's version moved on with the state).
    Before, the card offered his own edits as a change, and a Save without answering it was refused."""
    server = server_factory("demo-editor-state-only", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    bob, errors = _page_collecting_errors(context)
    _edit_the_draft(bob, server)
    title, body = bob.locator("#post-form").get_by_label("Title"), bob.get_by_label("Body (markdown)")
    title.fill("Notes from the river, retitled")
    body.fill("Bob's words, typed and not saved.")
    expect(bob.locator("#post-state")).to_contain_text("This is a draft")
    expect_blog_live(bob)

    with signed_in(browser, server.url, "alice") as alice:
        alice.goto(f"{server.url}/blogs/{BLOG}/")
        row = alice.locator("#post-list li.post", has_text="Notes from the river")
        row.get_by_role("button", name="Publish").click()
        expect(row.get_by_role("button", name="Unpublish")).to_be_visible()

        expect(bob.locator("#incoming .incoming-note")).to_have_text("alice published this post.")
        expect(bob.locator("#post-state")).to_contain_text("This post is live")
        expect(bob.locator("#incoming .incoming")).to_have_count(0)
        expect(bob.get_by_role("button", name="Keep mine")).to_have_count(0)
        expect(title).to_have_value("Notes from the river, retitled")
        expect(body).to_have_value("Bob's words, typed and not saved.")
        expect(body).to_be_editable()  # (an editor may change a published post)

        body.press("End")
        body.press_sequentially(" More.")
        bob.get_by_role("button", name="Save", exact=True).click()
        expect(bob.locator(".flash")).to_contain_text("Saved “Notes from the river, retitled”.")
        published = alice.locator("#post-list li.post", has_text="Notes from the river, retitled")
        alice.reload()
        expect(published.get_by_role("button", name="Unpublish")).to_be_visible()  # (still published)
        bob.goto(f"{server.url}/blogs/{BLOG}/")
        published_by_bob = bob.locator("#post-list li.post", has_text="Notes from the river, retitled")
        published_by_bob.get_by_role("link", name="Edit").click()
        expect(bob.get_by_label("Body (markdown)")).to_have_value("Bob's words, typed and not saved. More.")
        assert errors == []


def test_an_open_change_card_cannot_be_answered_while_the_editor_is_locked(server_factory, browser, context):
    """Bob, an author, edits a draft, words typed; Alice saves other words in it, and his editor offers the
    change ("Use the saved version" / "Keep mine"). She publishes it: his form is locked, and so are the card's
    buttons (taking the saved words into a read-only form, or answering for a post he may not save, is no
    choice to offer). She unpublishes it: the buttons work again, and "Keep mine" then Save keep his words."""
    server = server_factory("demo-editor-card-locked", AGENT_BACKEND="demo", **NO_LIMITS)
    context.add_init_script(MARK_BLOG_LIVE)
    with signed_in(browser, server.url, "alice") as alice:
        _seat_saver(alice, server)("bob", "author")
        bob, errors = _page_collecting_errors(context)
        _edit_the_draft(bob, server)
        body = bob.get_by_label("Body (markdown)")
        body.fill("Bob's words, not saved.")
        expect_blog_live(bob)

        alice.goto(bob.url)
        alice.get_by_label("Body (markdown)").fill("Alice's words, saved.")
        alice.get_by_role("button", name="Save", exact=True).click()
        alice.wait_for_url(re.compile(rf"/blogs/{BLOG}/$"))
        card = bob.locator("#incoming .incoming")
        take, keep = (
            card.get_by_role("button", name="Use the saved version"),
            card.get_by_role("button", name="Keep mine"),
        )
        expect(card.locator(".diff-line.added")).to_contain_text(["Alice's words, saved."])
        expect(take).to_be_enabled()
        expect(keep).to_be_enabled()

        row = alice.locator("#post-list li.post", has_text="Notes from the river")
        row.get_by_role("button", name="Publish").click()
        expect(row.get_by_role("button", name="Unpublish")).to_be_visible()
        expect(bob.locator("#editor-lock")).to_contain_text("You can no longer edit this post")
        expect(bob.locator("#post-state")).to_contain_text("This post is live")
        expect(card.locator(".diff-line.added")).to_contain_text(["Alice's words, saved."])
        expect(take).to_be_disabled()
        expect(keep).to_be_disabled()
        expect(body).to_have_value("Bob's words, not saved.")

        row.get_by_role("button", name="Unpublish").click()
        expect(bob.locator("#editor-lock")).to_be_empty()
        expect(bob.locator("#post-state")).to_contain_text("This is a draft")
        expect(take).to_be_enabled()
        expect(keep).to_be_enabled()
        keep.click()
        expect(card).to_have_count(0)
        expect(body).to_have_value("Bob's words, not saved.")
        bob.get_by_role("button", name="Save", exact=True).click()
        expect(bob.locator(".flash")).to_contain_text("Saved “Notes from the river”.")
        assert errors == []
