"""Screens as a person meets them in Chromium: the Members table, laid out, named and confirmed; a
chat's transcript in the admin, fitting a 1280 px window."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.ui import BLOG, ask, loads, login, new_chat
from tests.servers import ARTIFACTS

SHOTS = ARTIFACTS / "screenshots"


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: these tests remove and add members of the demo blog."""
    return server_factory("screens", AGENT_BACKEND="demo")


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def column_of(page: Page, locator) -> str:
    """The header text of the Members table's column whose span holds the element's centre."""
    box = locator.bounding_box()
    centre = box["x"] + box["width"] / 2
    for header in page.locator(".members thead th").all():
        head = header.bounding_box()
        if head["x"] <= centre < head["x"] + head["width"]:
            return header.inner_text().strip()
    raise AssertionError(f"no column under x={centre}")


def test_members_table_lines_up_and_names_each_members_controls(server, page):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    bob = page.locator(".members tbody tr").filter(has=page.locator("th", has_text="bob"))
    assert column_of(page, bob.locator("th")) == "Member"
    assert column_of(page, bob.get_by_label("Role of bob")) == "Role"
    assert column_of(page, bob.get_by_role("checkbox", name="bob may use the assistant")) == "May use the assistant"
    assert column_of(page, bob.get_by_role("button", name="Save bob")) == "Actions"
    assert column_of(page, bob.get_by_role("link", name="Remove bob")) == "Actions"
    # Every row's controls are its member's, whatever the row: no two share a name.
    expect(page.get_by_role("link", name="Remove carol")).to_have_count(1)
    expect(page.get_by_role("button", name="Save carol")).to_have_count(1)
    shot(page, "members-table")

    # A control in its own column still belongs to the row's form: Save sends the role chosen beside it.
    bob.get_by_label("Role of bob").select_option("author")
    bob.get_by_role("button", name="Save bob").click()
    expect(page.get_by_role("status")).to_have_text("bob is now an author and may use the assistant.")
    expect(page.get_by_label("Role of bob")).to_have_value("author")
    page.get_by_label("Role of bob").select_option("editor")
    page.get_by_role("button", name="Save bob").click()
    expect(page.get_by_label("Role of bob")).to_have_value("editor")


def test_a_viewer_made_an_editor_may_be_allowed_the_assistant_in_the_same_save(server, page):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    box = page.get_by_role("checkbox", name="carol may use the assistant")
    expect(box).to_be_disabled()
    page.get_by_label("Role of carol").select_option("editor")
    expect(box).to_be_enabled()
    box.check()
    with loads(page):  # (its scripts too: members.js makes the box follow the role chosen below)
        page.get_by_role("button", name="Save carol").click()
    expect(page.get_by_role("status")).to_have_text("carol is now an editor and may use the assistant.")
    expect(page.get_by_label("Role of carol")).to_have_value("editor")
    expect(page.get_by_role("checkbox", name="carol may use the assistant")).to_be_checked()

    hint = page.locator("tr").filter(has=page.locator("th", has_text="carol")).get_by_text("(viewers can't)")
    expect(hint).to_have_count(0)  # saved as an editor: no hint drawn

    page.get_by_label("Role of carol").select_option("viewer")  # and back: the box follows, unticked
    expect(box).to_be_disabled()
    expect(box).not_to_be_checked()
    expect(hint).to_be_visible()  # and says why, as it does for a saved viewer
    page.get_by_label("Role of carol").select_option("author")
    expect(hint).to_be_hidden()
    page.get_by_label("Role of carol").select_option("viewer")
    page.get_by_role("button", name="Save carol").click()
    expect(page.get_by_label("Role of carol")).to_have_value("viewer")


def test_a_long_title_stays_inside_the_post_list_and_its_notice(server, page):
    """A title of one long word (a pasted URL, say) wraps inside its card and inside the "created"
    notice: that one ran under the assistant's panel."""
    login(page, server.url, "alice")
    title = "Riverwalk" * 12 + " and more"
    page.goto(f"{server.url}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Create draft").click()
    notice = page.locator(".flash li").filter(has_text="created")
    expect(notice).to_be_visible()
    row = page.locator("li.post").filter(has_text="and more")
    for box in (notice, row.locator(".post-title"), row.locator(".badge")):
        assert box.evaluate("el => el.scrollWidth <= el.clientWidth"), box
    pane, badge = page.locator("#post-list").bounding_box(), row.locator(".badge").bounding_box()
    assert badge["x"] + badge["width"] <= pane["x"] + pane["width"]
    shot(page, "post-list-long-title")


def test_a_failed_addition_keeps_the_name_and_focus_in_the_field(server, page):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    field = page.get_by_label("Username")
    field.fill("dvae")
    page.get_by_label("Role", exact=True).select_option("author")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("There is no user named “dvae”.")
    expect(field).to_have_value("dvae")
    expect(field).to_be_focused()
    expect(field).to_have_accessible_description("There is no user named “dvae”.")
    expect(page.get_by_label("Role", exact=True)).to_have_value("author")
    shot(page, "members-failed-add")


def test_removing_a_member_asks_first(server, page):
    login(page, server.url, "alice")
    page.goto(f"{server.url}/blogs/{BLOG}/members/")
    page.get_by_role("link", name="Remove carol").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Remove carol from Field Notes?")
    shot(page, "members-confirm-remove")
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("link", name="Remove carol")).to_be_visible()  # nobody removed

    page.get_by_role("link", name="Remove carol").click()
    page.get_by_role("button", name="Remove carol").click()
    expect(page.get_by_role("status")).to_have_text("Removed carol.")
    expect(page.locator(".members tbody th", has_text="carol")).to_have_count(0)

    page.get_by_label("Username").fill("carol")  # back as she was, for the tests after this one
    page.get_by_label("Role", exact=True).select_option("viewer")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Added carol as viewer.")


FITS = """(selector) => {
  const page = document.documentElement;
  const tables = [...document.querySelectorAll(selector)].map(t => {
    const box = t.getBoundingClientRect(), holder = t.parentElement.getBoundingClientRect();
    return box.right <= holder.right + 1;
  });
  return {page: page.scrollWidth <= window.innerWidth, tables};
}"""


def test_the_admin_transcript_fits_1280_px(server, page):
    login(page, server.url, "alice")
    new_chat(page, server.url)
    ask(page, "list my posts")
    ask(page, "and this one: https://example.com/" + "x" * 240)  # one long word, nowhere to break it
    chat = re.search(r"chat=([0-9a-f-]+)", page.url).group(1)
    page.context.clear_cookies()
    login(page, server.url, "admin")

    page.goto(f"{server.url}/admin/agent/session/{chat}/change/")
    messages = page.locator("#messages-group table")
    expect(messages).to_contain_text("Welcome to Field Notes")  # the tool's result, there to read
    expect(messages).to_contain_text("https://example.com/" + "x" * 240)
    assert page.evaluate(FITS, "#messages-group table") == {"page": True, "tables": [True]}
    expect(page.locator("#turns-group table")).to_contain_text("end_turn")  # how each turn ended
    assert page.evaluate(FITS, "#turns-group table") == {"page": True, "tables": [True]}
    messages.locator("summary", has_text="tools").first.click()
    expect(messages.locator("details[open]").first).to_contain_text("list_posts")
    shot(page, "admin-session-transcript")

    page.locator("#messages-group tr", has_text="tool_result").first.get_by_role("link", name="View").click()
    parts = page.locator("#parts-group table")
    expect(parts).to_contain_text('"title": "Welcome to Field Notes"')
    assert page.evaluate(FITS, "#parts-group table") == {"page": True, "tables": [True]}
    shot(page, "admin-message-parts")

    # The list of turns: each row names its turn and its chat shortly, and the times are in sight.
    page.goto(f"{server.url}/admin/agent/turn/?q={chat}")
    turns = page.locator("#result_list")
    expect(turns).to_contain_text("a message")
    expect(turns.locator("th.field-__str__ a").first).to_have_text(re.compile(r"^Turn [0-9a-f]{8} \(done\)$"))
    shot(page, "admin-turns-list")
    assert page.evaluate(FITS, "#result_list") == {"page": True, "tables": [True]}

    # And the list of messages: each named by its role and place, its call and usage in two columns.
    page.goto(f"{server.url}/admin/agent/message/?q={chat}")
    listed = page.locator("#result_list")
    expect(listed.locator("th.field-__str__ a").first).to_have_text(re.compile(r"^(user|assistant|tool) #\d+$"))
    expect(listed).to_contain_text("demo / demo")
    shot(page, "admin-messages-list")
    assert page.evaluate(FITS, "#result_list") == {"page": True, "tables": [True]}
