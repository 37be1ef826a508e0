"""People who write right to left (Arabic, Hebrew): what they type and read runs right to left,
paragraph by paragraph, beside text in other scripts that keeps running left to right."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.ui import BLOG, chat_input, login, new_chat, send, user_messages, wait_turn_finished

ARABIC = "مرحبا! هل يمكنك مساعدتي؟"
HEBREW = "שלום עולם, מה שלומך?"

# Where a block's text sits inside it: the gaps (px) between the block's edges and its text's.
GAPS = """
(el) => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const text = range.getBoundingClientRect(), box = el.getBoundingClientRect();
  return {left: text.left - box.left, right: box.right - text.right};
}
"""


def runs_right_to_left(locator) -> bool:
    return locator.evaluate("el => el.matches(':dir(rtl)')")


def hugs_right(locator) -> bool:
    gaps = locator.evaluate(GAPS)
    return gaps["right"] < 20 < gaps["left"]


def hugs_left(locator) -> bool:
    gaps = locator.evaluate(GAPS)
    return gaps["left"] < 20 < gaps["right"]


def test_a_message_typed_right_to_left_reads_right_to_left_sent_and_after_a_reload(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    new_chat(page, base)
    chat_input(page).fill(ARABIC)
    assert runs_right_to_left(chat_input(page))  # as it is typed
    send(page, ARABIC)
    bubble = user_messages(page).last.locator(".bubble")
    expect(bubble).to_have_text(ARABIC)
    assert runs_right_to_left(bubble)
    wait_turn_finished(page)
    send(page, "list my posts")
    assert not runs_right_to_left(user_messages(page).last.locator(".bubble"))
    wait_turn_finished(page)
    page.reload()
    assert runs_right_to_left(user_messages(page).first.locator(".bubble"))
    assert not runs_right_to_left(user_messages(page).last.locator(".bubble"))


def test_each_paragraph_of_a_post_runs_in_its_own_direction(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    title = page.get_by_label("Title")
    title.fill(HEBREW)
    assert runs_right_to_left(title)
    page.get_by_label("Body (markdown)").fill(f"{ARABIC}\n\nA paragraph in English.\n\n- {HEBREW}\n- one item")
    preview = page.locator("#preview .md")
    expect(preview.locator("p")).to_have_count(2)
    assert hugs_right(preview.locator("p").first)
    assert hugs_left(preview.locator("p").last)
    assert hugs_right(preview.locator("li").first)
    assert hugs_left(preview.locator("li").last)
    page.get_by_role("button", name="Create draft").click()
    link = page.locator("#post-list a.post-title", has_text=HEBREW)
    assert runs_right_to_left(link)
