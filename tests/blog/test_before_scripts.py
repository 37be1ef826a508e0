"""Forms pressed before the page's scripts have run: ordinary POSTs, answered with a page.

A browser sends a plain form as a navigation (`Sec-Fetch-Mode: navigate`): the chat's message, an
approval's decision and Publish are then answered with a redirect to the page they were on, never with a
fragment drawn as a page of its own, and a message's words never go into a URL.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agent.models import Approval, Message, Session, Turn
from agent.turns import claim
from blog.chat import start_session
from blog.models import Post
from tests.blog.conftest import ALL, blog_chat, browser, make_post, said_chat, set_consent
from tests.blog.test_assistant_turns import publish_awaiting_approval, say
from tests.chats import long_chat

pytestmark = pytest.mark.django_db

AS_PAGE = {"HTTP_SEC_FETCH_MODE": "navigate", "HTTP_SEC_FETCH_DEST": "document"}


class Forms(HTMLParser):
    """Every form's attributes, and the names of the fields in it."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str | None]] = []
        self.fields: list[set[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "form":
            self.forms.append(dict(attrs))
            self.fields.append(set())
        elif tag in ("input", "textarea", "button") and self.fields:
            name = dict(attrs).get("name")
            if name:
                self.fields[-1].add(name)


def forms(html: str) -> Forms:
    parser = Forms()
    parser.feed(html)
    return parser


def posting_to(html: str, url: str) -> tuple[dict[str, str | None], set[str]]:
    found = forms(html)
    [(form, fields)] = [
        (f, names) for f, names in zip(found.forms, found.fields, strict=True) if f.get("hx-post") == url
    ]
    return form, fields


@pytest.mark.parametrize("has_chat", [False, True])
def test_the_chat_form_is_a_post_to_where_htmx_sends_it_with_its_token(team, has_chat):
    if has_chat:
        chat = said_chat(team.owner, team.blog)
        url, page = f"/chat/{chat.pk}/send", f"/blogs/notes/?chat={chat.pk}"
    else:
        url, page = "/blogs/notes/chats/send", "/blogs/notes/"
    form, fields = posting_to(browser(team.owner).get(page).content.decode(), url)
    assert form["method"] == "post" and form["action"] == url
    assert {"csrfmiddlewaretoken", "text", "files"} <= fields
    # (As htmx sends it: without it a browser sends the chosen files' names alone, and the message went
    # without them, saying nothing.)
    assert form["enctype"] == form["hx-encoding"] == "multipart/form-data"


@pytest.mark.parametrize("has_chat", [False, True])
def test_the_chat_box_promises_nothing_of_enter_before_the_scripts(team, has_chat):
    """It said "Enter sends, Shift+Enter for a new line": before the scripts have run (or without them) Enter
    adds a line to a box like any other, and on a phone the scripts then took the promise back."""
    page = f"/blogs/notes/?chat={said_chat(team.owner, team.blog).pk}" if has_chat else "/blogs/notes/"
    html = browser(team.owner).get(page).content.decode()
    assert (
        '<textarea id="chat-text" name="text" dir="auto" rows="2" maxlength="20000" placeholder="Message the assistant…" required>'
        in html
    )
    assert "Enter sends" not in html
    assert '<label class="attach-button" title="Attach images, PDFs or text files">' in html  # (dropping: scripts)


def test_publish_and_unpublish_are_forms_of_their_own(team):
    draft, live = make_post(team.blog, "A draft"), make_post(team.blog, "Live post", published=True)
    html = browser(team.owner).get("/blogs/notes/").content.decode()
    for post, verb in ((draft, "publish"), (live, "unpublish")):
        url = f"/blogs/notes/posts/{post.pk}/{verb}/?shown=50"
        form, fields = posting_to(html, url)
        assert form["method"] == "post" and form["action"] == url and "csrfmiddlewaretoken" in fields


def test_publish_pressed_before_the_scripts_comes_back_to_the_blogs_page_at_the_post(team):
    draft = make_post(team.blog, "A draft")
    client = browser(team.owner, csrf=True)
    client.get("/blogs/notes/")  # (the page sets the token's cookie)
    token = client.cookies["csrftoken"].value
    url = f"/blogs/notes/posts/{draft.pk}/publish/?shown=100"
    response = client.post(url, {"csrfmiddlewaretoken": token}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/?shown=100#post-{draft.pk}"
    assert Post.objects.get(pk=draft.pk).status == Post.PUBLISHED
    response = client.post(f"/blogs/notes/posts/{draft.pk}/unpublish/", {"csrfmiddlewaretoken": token}, **AS_PAGE)
    assert response["Location"] == f"/blogs/notes/#post-{draft.pk}"
    assert Post.objects.get(pk=draft.pk).status == Post.DRAFT


def test_a_first_message_sent_as_a_page_starts_the_chat_and_shows_it(team, script, django_capture_on_commit_callbacks):
    script([say("Hello there.")])
    client = browser(team.owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/blogs/notes/chats/send", {"text": "hi from a slow phone", "drawn": ""}, **AS_PAGE)
    chat = Session.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/?chat={chat.pk}"
    assert list(Message.objects.filter(session=chat, role="user").values_list("position", flat=True)) == [0]
    page = client.get(response["Location"]).content.decode()
    assert "hi from a slow phone" in page and "Hello there." in page


def test_a_message_sent_as_a_page_beside_the_editor_goes_back_to_the_editor(
    team, script, django_capture_on_commit_callbacks
):
    post = make_post(team.blog, "A draft")
    chat = start_session(team.owner, team.blog, post)
    script([say("Tightened.")])
    with django_capture_on_commit_callbacks(execute=True):
        response = browser(team.owner).post(f"/chat/{chat.pk}/send", {"text": "tighten it"}, **AS_PAGE)
    assert response.status_code == 302
    assert response["Location"] == f"/blogs/notes/posts/{post.pk}/edit/?chat={chat.pk}"
    assert Message.objects.filter(session=chat, role="user").count() == 1


@pytest.mark.parametrize("where", ["first", "chat"])
def test_a_refused_message_sent_as_a_page_says_why_on_the_page_and_stores_nothing(team, where):
    chat = said_chat(team.owner, team.blog) if where == "chat" else None
    url = "/blogs/notes/chats/send" if chat is None else f"/chat/{chat.pk}/send"
    client = browser(team.owner)
    before = Message.objects.count()
    response = client.post(url, {"text": "x" * 20_001}, **AS_PAGE)
    assert response.status_code == 302
    assert response["Location"] == ("/blogs/notes/" if chat is None else f"/blogs/notes/?chat={chat.pk}")
    assert Message.objects.count() == before and Session.objects.count() == (0 if chat is None else 1)
    page = client.get(response["Location"]).content.decode()
    assert re.search(r'class="flash-error"[^>]*>Your message was not sent. Write a message of up to 20,000', page)


def test_a_chat_form_sent_by_a_script_is_answered_with_the_fragment_as_before(team, script):
    chat = said_chat(team.owner, team.blog)
    script([say("Hi.")])
    response = browser(team.owner).post(f"/chat/{chat.pk}/send", {"text": "hello"})  # (no Sec-Fetch-Mode)
    assert response.status_code == 200 and "sse-connect" in response.content.decode()
    htmx = browser(team.owner).post(
        f"/chat/{chat.pk}/send", {"text": "again"}, HTTP_HX_REQUEST="true", **AS_PAGE
    )  # (htmx never navigates; a header says it is htmx whatever else is said)
    assert htmx.status_code == 200 and "/blogs/notes/" not in htmx.get("Location", "")


def test_an_approval_decided_as_a_page_goes_back_to_the_chat(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    _api, chat, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    client = browser(team.owner)
    response = client.post(f"/chat/{chat.pk}/approvals/{approval_id}", {"approve": "0"}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/?chat={chat.pk}"
    assert Approval.objects.get(pk=approval_id).status == Approval.REJECTED
    again = client.post(f"/chat/{chat.pk}/approvals/{approval_id}", {"approve": "1"}, **AS_PAGE)
    assert again["Location"] == f"/blogs/notes/?chat={chat.pk}"
    page = client.get(again["Location"]).content.decode()
    assert 'class="flash-error"' in page  # (decided already: said on the page)
    assert Post.objects.get(pk=draft.pk).status == Post.DRAFT


# --- A refused message's words, back in the box -----------------------------------------------------

TYPED = "x" * 20_001 + "\n<b>tomatoes & “basil”</b>\r\n\n"  # (too long, and what a template must escape)


def chat_box(page: str) -> str:
    """What the chat's box holds as a browser reads it: its line breaks made LF (as a browser reads any
    page's), less the one line break a browser drops after `<textarea>`, unescaped."""
    page = page.replace("\r\n", "\n").replace("\r", "\n")
    found = re.search(r'<textarea id="chat-text"[^>]*>\n?(.*?)</textarea>', page, re.DOTALL)
    assert found is not None
    return html.unescape(found.group(1))


@pytest.mark.parametrize("where", ["first", "chat", "first beside a post", "chat beside a post"])
def test_a_refused_message_sent_as_a_page_has_its_words_back_in_the_box_once(team, where):
    post = make_post(team.blog, "A draft") if "post" in where else None
    chat = said_chat(team.owner, team.blog, post) if where.startswith("chat") else None
    panel = "/blogs/notes/" if post is None else f"/blogs/notes/posts/{post.pk}/edit/"
    url = (panel.removesuffix("edit/") + "chats/send") if chat is None else f"/chat/{chat.pk}/send"
    client = browser(team.owner)
    response = client.post(url, {"text": TYPED, "drawn": ""}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == panel + ("" if chat is None else f"?chat={chat.pk}")
    page = client.get(response["Location"]).content.decode()
    assert "Your message was not sent." in page
    assert posting_to(page, url)[0]["action"] == url  # (the box is the form's that was sent)
    assert chat_box(page) == TYPED.replace("\r\n", "\n")  # (sent again, a browser makes each line break CR LF)
    assert "&lt;b&gt;tomatoes &amp; “basil”&lt;/b&gt;" in page and "<b>tomatoes" not in page
    assert chat_box(client.get(response["Location"]).content.decode()) == ""  # (read once: a reload is empty)


@pytest.mark.parametrize("where", ["first", "chat"])
def test_the_words_are_kept_for_their_form_and_person_alone(team, where):
    chat = said_chat(team.owner, team.blog) if where == "chat" else None
    url = "/blogs/notes/chats/send" if chat is None else f"/chat/{chat.pk}/send"
    page = "/blogs/notes/" if chat is None else f"/blogs/notes/?chat={chat.pk}"
    owner = browser(team.owner)
    owner.post(url, {"text": TYPED, "drawn": ""}, **AS_PAGE)
    assert chat_box(browser(team.editor).get("/blogs/notes/").content.decode()) == ""  # (another person)
    post = make_post(team.blog, "A draft")  # (another panel's form, on the post's editor)
    assert chat_box(owner.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()) == ""
    if chat is not None:  # (another chat of theirs)
        other = said_chat(team.owner, team.blog, text="another")
        assert chat_box(owner.get(f"/blogs/notes/?chat={other.pk}").content.decode()) == ""
    assert chat_box(owner.get(page).content.decode()).startswith("x" * 20_001)


@pytest.mark.parametrize("where", ["first", "chat"])
def test_an_accepted_message_sent_as_a_page_leaves_nothing_kept(
    team, script, where, django_capture_on_commit_callbacks
):
    chat = said_chat(team.owner, team.blog) if where == "chat" else None
    url = "/blogs/notes/chats/send" if chat is None else f"/chat/{chat.pk}/send"
    script([say("Planted.")])
    client = browser(team.owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"text": "plant tomatoes", "drawn": ""}, **AS_PAGE)
    assert response.status_code == 302 and "tomatoes" not in response["Location"]
    assert chat_box(client.get(response["Location"]).content.decode()) == ""
    assert [key for key in client.session.keys() if key.startswith("agent.")] == []


def test_a_first_message_meeting_the_other_tabs_answer_has_its_words_in_that_chats_box(team):
    """A first message sent as a page from a page drawn with no chat, while the chat another tab made
    meanwhile still answers: it goes back to that chat, whose form (not the first message's) has the words."""
    chat = blog_chat(team.owner, team.blog)
    claim(chat)  # (its first answer running)
    client = browser(team.owner)
    response = client.post("/blogs/notes/chats/send", {"text": "from tab B", "drawn": ""}, **AS_PAGE)
    assert response["Location"] == f"/blogs/notes/?chat={chat.pk}" and not chat.messages.exists()
    page = client.get(response["Location"]).content.decode()
    assert posting_to(page, f"/chat/{chat.pk}/send") and "still answering" in page
    assert chat_box(page) == "from tab B"


def test_a_first_message_refused_with_files_says_to_attach_them_again(team):
    note = SimpleUploadedFile("plan.txt", b"beds by the wall", content_type="text/plain")
    client = browser(team.owner)
    response = client.post("/blogs/notes/chats/send", {"text": TYPED, "drawn": "", "files": [note]}, **AS_PAGE)
    page = client.get(response["Location"]).content.decode()
    assert "Write a message of up to 20,000 characters. Attach the files again: they were not kept." in page
    assert chat_box(page) == TYPED.replace("\r\n", "\n")


# --- Stop and "Earlier messages", pressed before the scripts ----------------------------------------


class Buttons(HTMLParser):
    """Every button's attributes, by id."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str | None]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "button" and dict(attrs).get("id"):
            self.by_id[str(dict(attrs)["id"])] = dict(attrs)


def stop_button(page: str) -> dict[str, str | None]:
    parser = Buttons()
    parser.feed(page)
    return parser.by_id["chat-stop"]


@pytest.mark.parametrize("where", ["blog", "beside a post"])
def test_stop_shows_while_an_answer_runs_and_sends_the_chat_form_to_stop_it(team, where):
    """Drawn with the page, not only by its script: a submit button of the chat's form whose press, before
    the scripts ran, sends the form to the chat's stop (`formaction`, unchecked: an empty box is fine)."""
    post = make_post(team.blog, "A draft") if where != "blog" else None
    chat = said_chat(team.owner, team.blog, post)
    panel = "/blogs/notes/" if post is None else f"/blogs/notes/posts/{post.pk}/edit/"
    client = browser(team.owner)
    resting = stop_button(client.get(f"{panel}?chat={chat.pk}").content.decode())
    assert "hidden" in resting
    Turn.objects.create(session=chat, status=Turn.RUNNING)
    page = client.get(f"{panel}?chat={chat.pk}").content.decode()
    stop = stop_button(page)
    assert "hidden" not in stop and stop["type"] == "submit" and "formnovalidate" in stop
    assert stop["formaction"] == stop["hx-post"] == f"/chat/{chat.pk}/stop"
    assert posting_to(page, f"/chat/{chat.pk}/send")[0]["data-running"] == "1"
    # No script follows the answer: the page says to read it again.
    assert '<noscript><p class="notice">The assistant is answering. Reload this page in a moment' in page


def test_stop_pressed_before_the_scripts_stops_the_answer_and_comes_back_with_the_words(team):
    chat = said_chat(team.owner, team.blog)
    turn = Turn.objects.create(session=chat, status=Turn.RUNNING)
    client = browser(team.owner)
    response = client.post(f"/chat/{chat.pk}/stop", {"text": "and the weir"}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == f"/blogs/notes/?chat={chat.pk}"
    turn.refresh_from_db()
    assert turn.stop_requested
    page = client.get(response["Location"]).content.decode()
    assert "Stopped: the answer ends where it had got to." in page
    assert chat_box(page) == "and the weir"
    assert "Stopping the answer. Reload this page in a moment to read where it ended." in page  # (not yet ended)


def test_stop_is_the_chats_own_persons_alone(team):
    chat = said_chat(team.owner, team.blog)
    turn = Turn.objects.create(session=chat, status=Turn.RUNNING)
    assert browser(team.editor).post(f"/chat/{chat.pk}/stop", {"text": "x"}, **AS_PAGE).status_code == 404
    turn.refresh_from_db()
    assert not turn.stop_requested


@pytest.mark.parametrize("where", ["blog", "beside a post"])
def test_earlier_messages_pressed_before_the_scripts_draw_them_on_the_chats_page(team, where):
    post = make_post(team.blog, "A draft") if where != "blog" else None
    chat = start_session(team.owner, team.blog, post)
    long_chat(chat, 45)
    panel = "/blogs/notes/" if post is None else f"/blogs/notes/posts/{post.pk}/edit/"
    client = browser(team.owner)
    page = client.get(f"{panel}?chat={chat.pk}").content.decode()
    assert re.findall(r"question \d+", page) == [f"question {n}" for n in range(25, 45)]
    [(form, fields)] = [
        (f, names)
        for f, names in zip(forms(page).forms, forms(page).fields, strict=True)
        if f.get("class") == "earlier"
    ]
    assert form["method"] == "get" and form["action"] == f"/chat/{chat.pk}/earlier" and fields == {"before"}
    before = re.search(r'name="before" value="(\d+)"', page).group(1)

    response = client.get(form["action"], {"before": before}, **AS_PAGE)
    assert response.status_code == 302 and response["Location"] == f"{panel}?chat={chat.pk}&before={before}"
    earlier = client.get(response["Location"]).content.decode()
    assert re.findall(r"question \d+", earlier) == [f"question {n}" for n in range(5, 25)]
    assert f'<a href="{panel}?chat={chat.pk}">Back to the latest messages</a>' in earlier
    further = re.search(r'name="before" value="(\d+)"', earlier).group(1)
    oldest = client.get(f"{panel}?chat={chat.pk}&before={further}").content.decode()
    assert re.findall(r"question \d+", oldest) == [f"question {n}" for n in range(5)]
    assert 'class="earlier"' not in oldest
    # Not a position: the latest, as without it.
    assert (
        re.findall(r"question \d+", client.get(f"{panel}?chat={chat.pk}&before=x").content.decode())[0] == "question 25"
    )


def test_a_piece_of_a_page_opened_as_a_page_goes_to_the_page(team):
    """The pieces of the blog's page and the editor its scripts ask for (the post list, the header, the
    assistant's panel, its list of chats, the grant's line, the editor's top line) are no page of their own:
    an address of one opened in the browser (typed, or kept from somewhere) goes to the page it is a piece
    of, which checks who may see it, instead of the bare piece without the site's styles. The page's own
    requests get the piece as before."""
    post = make_post(team.blog, "A draft")
    blog, editor = "/blogs/notes/", f"/blogs/notes/posts/{post.pk}/edit/"
    pieces = {
        "/blogs/notes/posts/": blog,
        "/blogs/notes/posts/?shown=40": blog,
        "/blogs/notes/head/?assistant=1": blog,
        "/blogs/notes/chats/panel": blog,
        "/blogs/notes/chats/list": blog,
        "/blogs/notes/chats/grant/": blog,
        f"/blogs/notes/posts/{post.pk}/head/?assistant=1": editor,
        f"/blogs/notes/posts/{post.pk}/chats/panel": editor,
        f"/blogs/notes/posts/{post.pk}/chats/list": editor,
    }
    owner = browser(team.owner)
    for piece, page in pieces.items():
        opened = owner.get(piece, **AS_PAGE)
        assert opened.status_code == 302 and opened["Location"] == page, piece
        assert owner.get(piece, HTTP_HX_REQUEST="true").status_code in (200, 204), piece  # (204: nothing to take up)
    assert browser(team.outsider).get(editor).status_code == 404  # (the page says who may see it)
