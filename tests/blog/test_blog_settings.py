"""Starting a blog on the site (`/blogs/new/`), and its owner's Settings: its title, and deleting it
(`blog/blogs.py`, `blog/blog_views.py`)."""

from __future__ import annotations

from html import unescape

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from agent import events
from agent.models import Message, Part, Session
from blog import blogs, live
from blog.models import Blog, ChatLink, Consent, Post, PostRevision, Seat
from tests.blog.conftest import ALL, READ, blog_chat, browser, make_post, set_consent

pytestmark = pytest.mark.django_db

NEW = "/blogs/new/"


@pytest.fixture
def person(django_user_model):
    return django_user_model.objects.create_user("starter", password="pw-starter-12345")


def text(response) -> str:
    """The page as its reader reads it (the template escapes `'` as `&#x27;`)."""
    return unescape(response.content.decode())


def start(client, title: str, slug: str = ""):
    return client.post(NEW, {"title": title, "slug": slug})


# --- New blog ---------------------------------------------------------------------------------------


def test_a_person_starts_a_blog_and_owns_it_with_the_owners_seat(person):
    client = browser(person)
    home = client.get("/").content.decode()
    assert f'href="{NEW}"' in home and "New blog" in home
    assert client.get(NEW).status_code == 200
    response = start(client, "  Garden diary  ")
    assert response.status_code == 302 and response["Location"] == "/blogs/garden-diary/"
    blog = Blog.objects.get(slug="garden-diary")
    assert (blog.title, blog.owner) == ("Garden diary", person)
    seat = Seat.objects.get(blog=blog)
    assert (seat.user, seat.role, seat.may_use_assistant) == (person, Seat.OWNER, True)
    page = client.get("/blogs/garden-diary/")
    assert page.status_code == 200 and "Started Garden diary." in page.content.decode()


def test_the_typed_address_is_used_lowercased(person):
    assert start(browser(person), "Notes from the coast", "Coast-Notes").status_code == 302
    assert Blog.objects.get(owner=person).slug == "coast-notes"


def test_an_address_made_from_a_title_is_a_free_one(person, team):
    """`notes` is the team's: a blog titled "Notes" takes `notes-2`, then `notes-3`."""
    client = browser(person)
    assert start(client, "Notes")["Location"] == "/blogs/notes-2/"
    assert start(client, "Notes")["Location"] == "/blogs/notes-3/"


def test_titles_in_other_scripts_get_an_address_of_their_own(person):
    client = browser(person)
    assert start(client, "Café crème")["Location"] == "/blogs/cafe-creme/"
    assert start(client, "Заметки о природе")["Location"] == "/blogs/blog/"
    assert start(client, "山の日記")["Location"] == "/blogs/blog-2/"
    assert start(client, "New")["Location"] == "/blogs/blog-3/"  # ("new" is the New blog page's)
    assert Blog.objects.get(slug="blog").title == "Заметки о природе"


def test_a_taken_address_is_a_form_error_that_keeps_what_was_typed(person, team):
    """No check before the insert: the unique slug decides, so a blog made meanwhile by someone else
    (the race) is refused the same way, not as a 500."""
    response = start(browser(person), "My own notes", "notes")
    assert response.status_code == 400
    page = response.content.decode()
    assert "The address “notes” is taken: choose another." in unescape(page)
    assert 'value="My own notes"' in page and 'value="notes"' in page
    assert not Blog.objects.filter(owner=person).exists()
    assert not Seat.objects.filter(user=person).exists()


@pytest.mark.parametrize("slug", ["Bad slug!", "über", "-edge", "two--hyphens", "new", "a" * 101])
def test_an_address_that_will_not_do_is_a_form_error(person, slug):
    response = start(browser(person), "Fine title", slug)
    assert response.status_code == 400
    assert 'aria-invalid="true"' in response.content.decode()
    assert not Blog.objects.exists()


@pytest.mark.parametrize(
    ("title", "said"),
    [("", "Give the blog a title."), ("   \u200b ", "Give the blog a title."), ("x" * 201, "at most 200 characters")],
)
def test_a_title_that_will_not_do_is_a_form_error(person, title, said):
    response = start(browser(person), title, "fine")
    assert response.status_code == 400 and said in response.content.decode()
    assert not Blog.objects.exists()


def test_markup_in_a_title_is_text(person):
    client = browser(person)
    start(client, "<b>Bold</b> & co", "bold")
    assert Blog.objects.get(slug="bold").title == "<b>Bold</b> & co"
    assert "&lt;b&gt;Bold&lt;/b&gt; &amp; co" in client.get("/").content.decode()
    assert "<b>Bold</b>" not in start(client, "<b>Again</b>", "bold").content.decode()


def test_past_blogs_per_person_the_page_says_so_and_makes_none(person, other_team, settings):
    settings.BLOGS_PER_PERSON = 2
    client = browser(person)
    assert start(client, "One")["Location"] == "/blogs/one/"
    assert start(client, "Two")["Location"] == "/blogs/two/"  # (other people's blogs do not count)
    page = client.get(NEW)
    assert page.status_code == 200
    said = "One person may own at most 2 blogs here, and you have that many"
    assert said in text(page) and 'name="title"' not in text(page)
    refused = start(client, "Three")
    assert refused.status_code == 403 and said in text(refused)
    assert Blog.objects.filter(owner=person).count() == 2


def test_with_blogs_per_person_zero_only_the_admin_makes_blogs(person, settings):
    settings.BLOGS_PER_PERSON = 0
    client = browser(person)
    home = client.get("/").content.decode()
    assert NEW not in home and "New blog" not in home
    for response in (client.get(NEW), start(client, "Mine")):
        assert response.status_code == 403
        assert "Blogs are started by the site's administrator here." in text(response)
    assert not Blog.objects.exists()


def test_starting_a_blog_needs_signing_in_and_the_csrf_token(person):
    anonymous = browser()
    assert anonymous.get(NEW)["Location"].startswith("/accounts/login/")
    assert start(anonymous, "Nobody's")["Location"].startswith("/accounts/login/")
    assert start(browser(person, csrf=True), "Forged").status_code == 403
    assert not Blog.objects.exists()


def test_blog_create_gives_the_owner_the_seat_the_admin_gives(person):
    """One way an owner's seat is made (`team.owner_seat`), the admin's and the site's."""
    blog = blogs.blog_create(owner=person, title="Direct", slug="")
    assert list(Seat.objects.filter(blog=blog).values_list("user", "role", "may_use_assistant")) == [
        (person.pk, Seat.OWNER, True)
    ]


# --- Settings: the title ------------------------------------------------------------------------------


def test_the_owner_renames_the_blog_and_its_address_stays(team):
    client = browser(team.owner)
    assert 'href="/blogs/notes/settings/"' in client.get("/blogs/notes/").content.decode()
    page = client.get("/blogs/notes/settings/")
    assert page.status_code == 200 and "can't be changed" in text(page)
    response = client.post("/blogs/notes/settings/", {"title": "  Field notes, renamed ", "slug": "stolen"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/settings/"
    team.blog.refresh_from_db()
    assert (team.blog.title, team.blog.slug) == ("Field notes, renamed", "notes")


def test_a_blank_title_is_refused_and_kept_on_the_page(team):
    response = browser(team.owner).post("/blogs/notes/settings/", {"title": "   "})
    assert response.status_code == 400 and "Give the blog a title." in response.content.decode()
    team.blog.refresh_from_db()
    assert team.blog.title == "Notes"


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_settings_and_deleting_are_not_there_for_anyone_but_the_owner(team, role):
    client = browser(team.user(role))
    assert 'href="/blogs/notes/settings/"' not in client.get("/blogs/notes/").content.decode()
    assert client.get("/blogs/notes/settings/").status_code == 404
    assert client.post("/blogs/notes/settings/", {"title": "Taken over"}).status_code == 404
    assert client.post("/blogs/notes/delete/", {"confirm": "notes"}).status_code == 404
    team.blog.refresh_from_db()
    assert team.blog.title == "Notes"


def test_settings_need_signing_in_and_the_csrf_token(team):
    anonymous = browser()
    assert anonymous.get("/blogs/notes/settings/")["Location"].startswith("/accounts/login/")
    assert anonymous.post("/blogs/notes/delete/", {"confirm": "notes"})["Location"].startswith("/accounts/login/")
    forged = browser(team.owner, csrf=True)
    assert forged.post("/blogs/notes/settings/", {"title": "Forged"}).status_code == 403
    assert forged.post("/blogs/notes/delete/", {"confirm": "notes"}).status_code == 403
    assert Blog.objects.get(pk=team.blog.pk).title == "Notes"


# --- Deleting -----------------------------------------------------------------------------------------


def stored(key: str) -> str:
    return default_storage.save(key, ContentFile(b"bytes"))


@pytest.fixture
def full_blog(team, other_team):
    """The team's blog with a post with a cover, a grant, and a chat with an attachment; and what the
    other blog has, which stays."""
    post = make_post(team.blog, "Covered")
    post.cover_ref, post.cover_type = stored(f"covers/{team.blog.pk}/c.png"), "image/png"
    post.save()
    PostRevision.objects.create(post=post, blog=team.blog, action="create", user=team.owner)
    set_consent(team.editor, team.blog, ALL)
    chat = blog_chat(team.editor, team.blog)
    message = Message.objects.create(session=chat, role="user", position=0)
    attachment = stored(f"agent/{chat.pk}/a.png")
    Part.objects.create(message=message, position=0, type="image", media_ref=attachment)
    kept_post = make_post(other_team.blog, "Elsewhere")
    kept_chat = blog_chat(other_team.editor, other_team.blog)
    set_consent(other_team.editor, other_team.blog, [READ])
    return {"files": [post.cover_ref, attachment], "kept": (kept_post, kept_chat)}


def test_a_wrong_confirmation_deletes_nothing(team, full_blog, django_capture_on_commit_callbacks):
    client = browser(team.owner)
    for typed in ("", "Notes", "note", "notes-"):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/blogs/notes/delete/", {"confirm": typed})
        assert response.status_code == 400
        assert "Type the blog's address, notes, to delete it. Nothing was deleted." in text(response)
    assert client.get("/blogs/notes/delete/").status_code == 405
    assert Blog.objects.filter(pk=team.blog.pk).exists()
    assert Post.objects.filter(blog=team.blog).count() == 1
    assert Seat.objects.filter(blog=team.blog).count() == 4
    assert ChatLink.objects.filter(blog=team.blog).count() == 1
    assert all(default_storage.exists(key) for key in full_blog["files"])


def test_the_owner_deletes_the_blog_with_everything_it_holds(team, full_blog, django_capture_on_commit_callbacks):
    client = browser(team.owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/blogs/notes/delete/", {"confirm": " notes "})
    assert response.status_code == 302 and response["Location"] == "/"
    assert not Blog.objects.filter(pk=team.blog.pk).exists()
    for model in (Post, Seat, Consent, ChatLink, PostRevision):
        assert not model.objects.filter(blog=team.blog.pk).exists(), model
    assert not Session.objects.filter(user=team.editor).exists()  # (the chat, not only its link)
    assert not any(default_storage.exists(key) for key in full_blog["files"])
    kept_post, kept_chat = full_blog["kept"]
    assert Post.objects.filter(pk=kept_post.pk).exists() and Session.objects.filter(pk=kept_chat.pk).exists()
    assert Consent.objects.filter(blog=kept_post.blog).count() == 1
    home = client.get("/").content.decode()
    assert "Deleted Notes, with its posts and chats." in home and "/blogs/notes/" not in home


def test_a_deletion_that_fails_deletes_no_file(team, full_blog, monkeypatch, django_capture_on_commit_callbacks):
    def failing(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(Blog, "delete", failing)
    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError):
        blogs.blog_delete(blog=team.blog, actor=team.owner)
    assert callbacks == []
    assert all(default_storage.exists(key) for key in full_blog["files"])


def test_the_blogs_open_pages_are_told_as_for_the_admins_deletion(team, django_capture_on_commit_callbacks):
    """Each seat deleted wakes the blog's channel (`live.seat_changed`): an open page checks its
    member's seat at once, finds none, and says it no longer has access."""
    probe = events.subscribe(live.channel_name(team.blog))
    viewer_page = browser(team.viewer).get("/blogs/notes/events/", HTTP_ACCEPT="text/event-stream")
    chunks = iter(viewer_page.streaming_content)
    try:
        assert next(chunks) == b": keep-alive\n\n"
        assert next(chunks).startswith(b"event: mark\n")
        with django_capture_on_commit_callbacks(execute=True):
            browser(team.owner).post("/blogs/notes/delete/", {"confirm": "notes"})
        assert probe.wait(0.0) == [[], [], [], []]  # (one a seat)
        closing = next(chunks)
        assert closing.startswith(b"event: superseded\n") and b"no longer have access" in closing
    finally:
        events.unsubscribe(probe)
        viewer_page.close()


def test_the_admins_deletion_takes_the_covers_too(
    team, full_blog, django_user_model, django_capture_on_commit_callbacks
):
    """The admin deletes a blog through `blogs.blog_delete`: its posts' covers, which only the owner's
    deletion removed, go from storage too."""
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    with django_capture_on_commit_callbacks(execute=True):
        response = browser(root).post(f"/admin/blog/blog/{team.blog.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Blog.objects.filter(pk=team.blog.pk).exists()
    assert not any(default_storage.exists(key) for key in full_blog["files"])


def test_the_admin_makes_no_blog_at_the_new_blog_pages_address(person, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    fields = {"title": "Shadowed", "slug": "new", "owner": person.pk}
    fields.update({"seats-TOTAL_FORMS": "0", "seats-INITIAL_FORMS": "0"})
    response = browser(root).post("/admin/blog/blog/add/", fields)
    assert response.status_code == 200 and "is reserved" in text(response)
    assert not Blog.objects.exists()
