"""A person names their own chats, from the chats page: the name stays theirs, and is no message."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.models import Message, Session
from blog.models import Seat
from tests.blog.conftest import READ, blog_chat, browser, make_post, said_chat, set_consent
from tests.blog.test_assistant_turns import say
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db


def rename_url(session: Session, slug: str = "notes") -> str:
    return f"/blogs/{slug}/chats/{session.pk}/rename"


def labels(html: str) -> list[str]:
    """The names of the chats a chats page lists, in order."""
    return re.findall(r'<span class="chat-label">([^<]*)</span>', html)


def test_the_person_renames_their_chat_and_is_sent_back_to_the_chats_page(team):
    chat = said_chat(team.editor, team.blog, text="Draft something about herons")
    other = said_chat(team.editor, team.blog, text="Another chat")
    client = browser(team.editor)
    html = client.get("/blogs/notes/chats/").content.decode()
    assert f'action="{rename_url(chat)}"' in html and f'<label for="rename-{chat.pk}">' in html
    response = client.post(rename_url(chat), {"title": "  Herons\tand   egrets \n"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/chats/"
    assert Session.objects.get(pk=chat.pk).title == "Herons and egrets"  # (trimmed, spaces collapsed)
    html = client.get("/blogs/notes/chats/").content.decode()
    assert "Renamed the chat “Herons and egrets”." in html
    assert labels(html) == ["Another chat", "Herons and egrets"]
    panel = client.get(f"/blogs/notes/?chat={other.pk}").content.decode()
    assert ">Herons and egrets</span>" in panel  # (the panel's list of earlier chats names it so too)


def test_the_name_field_starts_from_what_names_the_chat_now(team):
    """A chat nobody named offers its first words to edit (as the list shows them), a named one its name:
    a person changes a word or two rather than typing the name again."""
    untitled = said_chat(team.editor, team.blog, text="Draft something about herons")
    named = said_chat(team.editor, team.blog, text="hello")
    Session.objects.filter(pk=named.pk).update(title="Egrets & <co>")
    html = browser(team.editor).get("/blogs/notes/chats/").content.decode()
    assert f'id="rename-{untitled.pk}" name="title"' in html
    field = re.search(rf'<input type="text" id="rename-{untitled.pk}"[^>]*>', html).group(0)
    assert 'value="Draft something about herons"' in field
    field = re.search(rf'<input type="text" id="rename-{named.pk}"[^>]*>', html).group(0)
    assert 'value="Egrets &amp; &lt;co&gt;"' in field


def test_a_named_chat_can_be_named_by_its_first_words_again(team):
    """**Use its first words** (offered only on a chat with a name) takes the person's name away: the lists
    name the chat by its first words again, and the field starts from them."""
    chat = said_chat(team.editor, team.blog, text="Draft something about herons")
    client = browser(team.editor)
    html = client.get("/blogs/notes/chats/").content.decode()
    assert 'value="unname"' not in html  # (named by nobody: nothing to take away)
    assert client.post(rename_url(chat), {"title": "Herons"}).status_code == 302
    assert 'name="action" value="unname"' in client.get("/blogs/notes/chats/").content.decode()
    response = client.post(rename_url(chat), {"title": "", "action": "unname", "page": "1"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/chats/?page=1"
    assert Session.objects.get(pk=chat.pk).title == ""
    html = client.get("/blogs/notes/chats/").content.decode()
    assert "The chat is named by its first words again." in html
    assert labels(html) == ["Draft something about herons"]
    assert 'value="unname"' not in html


def test_a_rename_is_no_message_and_keeps_the_chats_order(team):
    """The name is the chat's, not a turn of it: nothing is added to the transcript, and the chat does
    not become the latest (the one the panel resumes) by being renamed."""
    older = said_chat(team.editor, team.blog, text="older")
    newer = said_chat(team.editor, team.blog, text="newer")
    Session.objects.filter(pk=older.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    before = Session.objects.get(pk=older.pk).updated_at
    client = browser(team.editor)
    assert client.post(rename_url(older), {"title": "Renamed"}).status_code == 302
    assert Session.objects.get(pk=older.pk).updated_at == before
    assert Message.objects.filter(session=older).count() == 1
    assert f'hx-post="/chat/{newer.pk}/send"' in client.get("/blogs/notes/").content.decode()
    assert labels(client.get("/blogs/notes/chats/").content.decode()) == ["newer", "Renamed"]


def test_a_chat_about_a_post_goes_back_to_that_posts_chats_page_and_the_page_number_is_kept(team):
    post = make_post(team.blog)
    chat = said_chat(team.editor, team.blog, post, text="About this draft")
    response = browser(team.editor).post(rename_url(chat), {"title": "Draft notes", "page": "2"})
    assert response["Location"] == f"/blogs/notes/posts/{post.pk}/chats/?page=2"
    response = browser(team.editor).post(rename_url(chat), {"title": "Draft notes", "page": "2&x=1"})
    assert response["Location"] == f"/blogs/notes/posts/{post.pk}/chats/"  # (only a number is kept)
    assert Session.objects.get(pk=chat.pk).title == "Draft notes"


def test_no_one_but_the_chats_person_renames_it(team, other_team):
    chat = said_chat(team.editor, team.blog, text="mine")
    set_consent(team.viewer, team.blog, [READ])
    for user in (team.owner, team.author, team.viewer, team.outsider, other_team.editor):
        client = browser(user)
        assert client.post(rename_url(chat), {"title": "Taken"}).status_code == 404, user
        assert client.get(rename_url(chat)).status_code == 404, user
    theirs = said_chat(other_team.editor, other_team.blog, text="elsewhere")
    editor = browser(team.editor)
    assert editor.post(rename_url(chat, "elsewhere"), {"title": "Taken"}).status_code == 404  # (not a member)
    assert browser(other_team.editor).post(rename_url(theirs, "notes"), {"title": "Taken"}).status_code == 404
    assert editor.post(rename_url(theirs), {"title": "Taken"}).status_code == 404
    assert editor.post(f"/blogs/notes/chats/{chat.pk}x/rename", {"title": "Taken"}).status_code == 404
    assert set(Session.objects.values_list("title", flat=True)) == {""}


def test_a_person_who_may_no_longer_summon_the_assistant_there_gets_404(team):
    chat = said_chat(team.editor, team.blog, text="mine")
    Seat.objects.filter(pk=team.seat("editor").pk).update(may_use_assistant=False)
    assert browser(team.editor).post(rename_url(chat), {"title": "Taken"}).status_code == 404
    assert Session.objects.get(pk=chat.pk).title == ""


def test_renaming_needs_signing_in_and_the_csrf_token(team):
    chat = said_chat(team.editor, team.blog, text="mine")
    signed_out = browser().post(rename_url(chat), {"title": "Forged"})
    assert signed_out.status_code == 302 and signed_out["Location"].startswith("/accounts/login/?next=")
    assert browser(team.editor, csrf=True).post(rename_url(chat), {"title": "Forged"}).status_code == 403
    assert Session.objects.get(pk=chat.pk).title == ""
    # Back from signing in (a GET of the form's address): the chats page the form was on.
    back = browser(team.editor).get(rename_url(chat))
    assert back.status_code == 302 and back["Location"] == "/blogs/notes/chats/"


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("", "Give the chat a name."),
        (" \t\n ", "Give the chat a name."),
        ("\u200b\u200d", "Give the chat a name."),  # (invisible characters only)
        ("x" * 201, "A chat's name can be at most 200 characters."),
        ("bell\x07", "A chat's name can't contain control characters."),
        ("nul\x00here", "A chat's name can't contain control characters."),
        ("esc\x1b[31m", "A chat's name can't contain control characters."),
        ("unit\x1fsep", "A chat's name can't contain control characters."),
    ],
)
def test_a_name_that_will_not_do_is_refused_beside_its_field_with_what_was_typed(team, typed, said):
    chat = said_chat(team.editor, team.blog, text="first words")
    Session.objects.filter(pk=chat.pk).update(title="Kept")
    response = browser(team.editor).post(rename_url(chat), {"title": typed})
    html = response.content.decode()
    assert response.status_code == 400
    assert Session.objects.get(pk=chat.pk).title == "Kept"
    error = f'<p class="error field-error" id="rename-error-{chat.pk}" role="alert">{said}</p>'
    assert error.replace("'", "&#x27;") in html
    field = re.search(rf'<input type="text" id="rename-{chat.pk}"[^>]*>', html)
    assert field is not None
    assert 'aria-invalid="true"' in field.group(0) and f'aria-describedby="rename-error-{chat.pk}"' in field.group(0)
    assert f'value="{typed}"' in field.group(0)  # (what was typed, as it was typed)
    assert '<details class="rename" open>' in html


def test_what_was_typed_is_kept_escaped_in_the_field(team):
    chat = said_chat(team.editor, team.blog, text="first words")
    typed = "x" * 200 + ' "<script>alert(1)</script>&'
    html = browser(team.editor).post(rename_url(chat), {"title": typed}).content.decode()
    assert 'value="' + "x" * 200 + ' &quot;&lt;script&gt;alert(1)&lt;/script&gt;&amp;"' in html
    assert "<script>alert(1)" not in html


def test_a_refusal_for_a_chat_no_longer_on_the_page_asked_for_still_shows_its_field(team):
    """New chats may have pushed the chat to a later page meanwhile: its field and the refusal are shown
    on the page the form came from all the same (first), not lost."""
    chat = said_chat(team.editor, team.blog, text="pushed along")
    said_chat(team.editor, team.blog, text="newer")
    response = browser(team.editor).post(rename_url(chat), {"title": "\x07", "page": "1"})
    html = response.content.decode()
    assert response.status_code == 400 and f'id="rename-error-{chat.pk}"' in html
    response = browser(team.editor).post(rename_url(chat), {"title": "\x07", "page": "7"})
    assert response.status_code == 400 and f'id="rename-error-{chat.pk}"' in response.content.decode()


def test_the_longest_name_is_kept_whole_and_composed(team):
    chat = said_chat(team.editor, team.blog, text="first words")
    longest = "é" * 199 + "e\u0301"  # (the last typed as e + accent: 201 code points, 200 once composed)
    assert browser(team.editor).post(rename_url(chat), {"title": longest}).status_code == 302
    assert Session.objects.get(pk=chat.pk).title == "é" * 200


def test_clean_title_says_exactly_why():
    from agent import titles  # (here: the module is new, the other tests fail on what the site does)

    assert titles.clean_title("  a \u3000 b ") == "a b"
    with pytest.raises(titles.TitleRefused) as refused:
        titles.clean_title("a\x7fb")
    assert refused.value.args == ("A chat's name can't contain control characters.",)
    assert titles.TITLE_MAX == Session._meta.get_field("title").max_length == 200


def test_a_persons_name_is_not_replaced_by_the_chats_first_words(team, script):
    """A chat named before anything was said in it (a New chat, on the chats page as the latest) keeps
    that name once its first message and later ones are answered: nothing names a chat by its words but
    the lists, and only a chat nobody named."""
    set_consent(team.editor, team.blog, [READ])
    script([say("Hello."), say("Again.")])
    chat = blog_chat(team.editor, team.blog)
    client = browser(team.editor)
    assert labels(client.get("/blogs/notes/chats/").content.decode()) == ["Untitled chat"]
    assert client.post(rename_url(chat), {"title": "Heron notes"}).status_code == 302
    api = ApiClient(team.editor)
    for text in ("Write about herons at dawn", "and at dusk"):
        events = api.turn(chat, text)
        assert events[-1][0] == "done"
    assert Session.objects.get(pk=chat.pk).title == "Heron notes"
    assert labels(client.get("/blogs/notes/chats/").content.decode()) == ["Heron notes"]
    other = said_chat(team.editor, team.blog, text="another")
    panel = client.get(f"/blogs/notes/?chat={other.pk}").content.decode()
    assert '<span class="chat-label">Heron notes</span>' in panel  # (no data-untitled: the page names it not)
    transcript = api.transcript(chat)
    said = [p["text"] for m in transcript["messages"] for p in m["parts"] if p["type"] == "text"]
    assert said == ["Write about herons at dawn", "Hello.", "and at dusk", "Again."]  # (the rename is no message)


def test_the_panel_links_to_the_chats_page_whenever_it_lists_earlier_chats(team):
    """Renaming is on the chats page: the panel's list of earlier chats leads there with two chats as with
    more than it lists (before, only then)."""
    first = said_chat(team.editor, team.blog, text="one")
    said_chat(team.editor, team.blog, text="two")
    html = browser(team.editor).get(f"/blogs/notes/?chat={first.pk}").content.decode()
    assert '<a href="/blogs/notes/chats/" class="all-chats">All chats…</a>' in html


def test_the_admin_names_a_renamed_chat_by_its_name_and_keeps_its_transcript(team, auditor):
    chat = said_chat(team.editor, team.blog, text="What the person first said")
    assert browser(team.editor).post(rename_url(chat), {"title": "Audit <me>"}).status_code == 302
    listing = auditor.get("/admin/agent/session/").content.decode()
    assert "Audit &lt;me&gt;" in listing and "What the person first said" not in listing
    page = auditor.get(f"/admin/agent/session/{chat.pk}/change/").content.decode()
    assert "Audit &lt;me&gt;" in page and "What the person first said" in page  # (its first message, as it was)
