"""The editor never saves over a change made elsewhere unseen (a lost update): its form carries the
version of the post it opened, and a Save from an older version writes nothing, shows the saved
version against the person's words and keeps those in the form; a second Save, now knowing, keeps
them. The assistant and the API pass no version and write as before."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection, connections, transaction

from blog import services
from blog.grants import Actor
from blog.models import Post, PostRevision, Seat
from tests.blog.conftest import ALL, browser, make_post
from tests.blog.test_views import tags_of

pytestmark = pytest.mark.django_db


def edit_url(post: Post) -> str:
    return f"/blogs/notes/posts/{post.pk}/edit/"


def opened_version(client, post: Post) -> str:
    """The version the editor form carries, as a browser opening it gets it."""
    html = client.get(edit_url(post)).content.decode()
    found = re.search(r'<input type="hidden" name="version" value="([^"]+)">', html)
    assert found, "the editor form carries no version"
    return found.group(1)


def person(user) -> Actor:
    return Actor(user, frozenset(ALL))


def test_a_save_from_a_version_changed_elsewhere_is_refused_and_keeps_the_words(team):
    post = make_post(team.blog, "Walk notes", "First line.")
    mine = browser(team.owner)
    version = opened_version(mine, post)
    # Meanwhile another member saves the post (another tab, another host: this editor heard nothing).
    browser(team.editor).post(
        edit_url(post),
        {"title": "Walk notes", "body": "Editor's words.", "version": opened_version(browser(team.editor), post)},
    )

    response = mine.post(edit_url(post), {"title": "My title", "body": "My words.\r\nAll of them.", "version": version})

    assert response.status_code == 200  # the editor again, not the blog page
    post.refresh_from_db()
    assert (post.title, post.body) == ("Walk notes", "Editor's words.")  # nothing written over
    html = response.content.decode()
    assert "editor changed this post since you opened it, so nothing was saved." in html
    assert 'value="My title"' in html and ">My words.\r\nAll of them.</textarea>" in html  # the words kept
    card = html[html.index('<section class="card incoming"') :]
    assert "This post changed while you were editing" in card
    assert "changed this post" not in card  # who did is said once, by the message above the form
    assert '<span class="diff-line added"><span class="sign">+</span>Editor&#x27;s words.</span>' in card
    assert '<span class="diff-line removed"><span class="sign">−</span>My words.</span>' in card
    assert f'name="version" value="{services.post_version(post)}"' in html  # the form is at the saved one now
    # The card's heading is under the page's, and the diff's (Title, Body) under the card's.
    assert [tag for tag, _ in tags_of(html[html.index("<main>") :]) if tag in ("h1", "h2", "h3")][:4] == [
        "h1",
        "h2",
        "h3",
        "h3",
    ]

    # A second Save, made knowing, keeps the person's words.
    again = mine.post(
        edit_url(post), {"title": "My title", "body": "My words.", "version": services.post_version(post)}
    )
    assert again.status_code == 302
    post.refresh_from_db()
    assert (post.title, post.body) == ("My title", "My words.")
    assert [r.action for r in PostRevision.objects.filter(post=post)] == ["update", "update"]


def test_a_save_over_a_change_by_the_assistant_or_another_tab_names_who_made_it(team, consent):
    post = make_post(team.blog, "Named", "Body.")
    mine = browser(team.owner)
    version = opened_version(mine, post)
    grant = consent(team.owner, team.blog, ALL)
    assistant = Actor(team.owner, frozenset(ALL), consent=grant, via_assistant=True)
    services.post_update(post=Post.objects.get(pk=post.pk), actor=assistant, title="Renamed by the assistant")
    html = mine.post(edit_url(post), {"title": "Named", "body": "Mine.", "version": version}).content.decode()
    assert "The assistant changed this post since you opened it, so nothing was saved." in html

    version = services.post_version(Post.objects.get(pk=post.pk))
    services.post_update(post=Post.objects.get(pk=post.pk), actor=person(team.owner), body="From my other tab.")
    html = mine.post(edit_url(post), {"title": "Named", "body": "Mine.", "version": version}).content.decode()
    assert "You changed this post in another tab or window since you opened it" in html
    post.refresh_from_db()
    assert (post.title, post.body) == ("Renamed by the assistant", "From my other tab.")


def test_the_editors_look_at_a_change_says_who_made_it_and_carries_the_version(team):
    post = make_post(team.blog, "Looked at", "Body.")
    services.post_update(post=post, actor=person(team.editor), body="Changed by the editor.")
    html = (
        browser(team.owner)
        .post(f"/blogs/notes/posts/{post.pk}/incoming/", {"title": "x", "body": "y"})
        .content.decode()
    )
    assert '"changed": "editor changed this post"' in html
    assert f'"version": "{services.post_version(post)}"' in html


def test_the_editors_look_at_a_change_of_state_says_published_or_unpublished(team):
    """A change of the post's state only is named as such (the editor says it in a note, with no card)."""
    post = make_post(team.blog, "Looked at", "Body.")
    look = browser(team.owner)
    url = f"/blogs/notes/posts/{post.pk}/incoming/"
    services.post_publish(post=Post.objects.get(pk=post.pk), actor=person(team.editor))
    assert '"changed": "editor published this post"' in look.post(url, {"title": "x", "body": "y"}).content.decode()
    services.post_unpublish(post=Post.objects.get(pk=post.pk), actor=person(team.owner))
    html = look.post(url, {"title": "Looked at", "body": "Body."}).content.decode()
    assert '"changed": "You unpublished this post in another tab or window"' in html
    assert 'class="card incoming"' not in html


def test_a_stale_save_of_the_words_already_saved_says_so_and_saves_on_the_second(team):
    """The post was published meanwhile, the form holds its saved words: no card (nothing differs), the
    message, and a second Save saves."""
    post = make_post(team.blog, "Same words", "Unchanged.")
    mine = browser(team.owner)
    version = opened_version(mine, post)
    services.post_publish(post=Post.objects.get(pk=post.pk), actor=person(team.editor))
    response = mine.post(edit_url(post), {"title": "Same words", "body": "Unchanged.", "version": version})
    html = response.content.decode()
    assert response.status_code == 200 and 'class="card incoming"' not in html
    assert "editor published this post since you opened it, so nothing was saved." in html
    assert "The form holds the saved words; Save again to save them." in html
    post.refresh_from_db()
    again = mine.post(
        edit_url(post), {"title": "Same words", "body": "Unchanged.", "version": services.post_version(post)}
    )
    assert again.status_code == 302


def test_a_draft_published_while_an_author_edits_it_refuses_the_save_and_gives_the_words_back(team):
    """An author (no publish scope) edits a draft; an editor publishes it meanwhile: changing it is now
    a publish-level act, so the Save writes nothing, but the page says why and gives the author's words
    back to copy. Before, it answered 404 and the words were gone."""
    post = make_post(team.blog, "Morning draft", "Saved words.", author=team.author)
    mine = browser(team.author)
    version = opened_version(mine, post)
    services.post_publish(post=Post.objects.get(pk=post.pk), actor=person(team.editor))
    typed = "My new paragraph <b>with a tag</b>."
    response = mine.post(edit_url(post), {"title": "Morning draft, renamed", "body": typed, "version": version})
    html = response.content.decode()
    assert response.status_code == 409
    assert "was published while you were editing" in html and "nothing was saved" in html
    assert "My new paragraph &lt;b&gt;with a tag&lt;/b&gt;." in html and "Morning draft, renamed" in html
    assert "<b>with a tag</b>" not in html
    post.refresh_from_db()
    assert (post.title, post.body, post.status) == ("Morning draft", "Saved words.", Post.PUBLISHED)
    # Opening the editor again is still refused, as for any published post the author may not change.
    assert mine.get(edit_url(post)).status_code == 404


@pytest.mark.parametrize("lost", ["demoted to viewer", "removed"])
def test_a_save_after_losing_the_blog_is_not_found_not_the_published_page(team, lost):
    """The 409 page names the post and gives the words back; it is for a member who may still write
    there. One who lost the right while the editor was open gets the 404 anyone else gets."""
    post = make_post(team.blog, "Morning draft", "Saved words.", author=team.author)
    mine = browser(team.author)
    version = opened_version(mine, post)
    services.post_publish(post=Post.objects.get(pk=post.pk), actor=person(team.editor))
    seat = Seat.objects.filter(user=team.author, blog=team.blog)
    if lost == "removed":
        seat.delete()
    else:
        seat.update(role=Seat.VIEWER)
    response = mine.post(edit_url(post), {"title": "Renamed", "body": "Typed.", "version": version})
    assert response.status_code == 404 and "Morning draft" not in response.content.decode()


def test_a_version_that_is_not_one_is_refused_with_the_words_kept(team):
    post = make_post(team.blog, "Garbled", "Saved.")
    response = browser(team.owner).post(edit_url(post), {"title": "Garbled", "body": "Mine.", "version": "yesterday"})
    assert response.status_code == 200 and ">Mine.</textarea>" in response.content.decode()
    post.refresh_from_db()
    assert post.body == "Saved."


def test_the_check_is_on_the_row_not_on_what_the_request_read(team):
    """A change committed after the request read the post (its copy still at the form's version) is
    seen by the write itself: the conditional UPDATE finds the row at another version."""
    post = make_post(team.blog, "Read early", "Saved.")
    read_early = Post.objects.get(pk=post.pk)
    version = services.post_version(read_early)
    services.post_update(post=Post.objects.get(pk=post.pk), actor=person(team.editor), body="Written meanwhile.")
    with pytest.raises(services.PostChanged):
        services.post_update(post=read_early, actor=person(team.owner), body="Mine.", version=version)
    post.refresh_from_db()
    assert post.body == "Written meanwhile."


def test_the_assistant_and_the_api_write_without_a_version_as_before(team):
    post = make_post(team.blog, "Unchecked", "Saved.")
    stale = Post.objects.get(pk=post.pk)
    services.post_update(post=Post.objects.get(pk=post.pk), actor=person(team.editor), body="One.")
    services.post_update(post=stale, actor=person(team.owner), body="Two.")  # no version: no check
    post.refresh_from_db()
    assert post.body == "Two."


@pytest.mark.django_db(transaction=True)
def test_two_saves_from_the_same_version_at_once_write_one(team):
    """Two Saves from the same version race: the second waits on the first's row lock (PostgreSQL) or
    the database's write lock (SQLite), then finds the post changed; exactly one is written."""
    post = make_post(team.blog, "Raced", "Saved.")
    version = services.post_version(post)
    first_holds, results = threading.Event(), {}
    release = threading.Event()

    def first() -> None:
        try:
            with transaction.atomic():
                services.post_update(
                    post=Post.objects.get(pk=post.pk), actor=person(team.owner), body="First.", version=version
                )
                first_holds.set()
                release.wait(5)
            results["first"] = "saved"
        finally:
            connections.close_all()

    def second() -> None:
        try:
            services.post_update(
                post=Post.objects.get(pk=post.pk), actor=person(team.editor), body="Second.", version=version
            )
            results["second"] = "saved"
        except services.PostChanged:
            results["second"] = "refused"
        finally:
            connections.close_all()

    one = threading.Thread(target=first)
    one.start()
    assert first_holds.wait(5)
    two = threading.Thread(target=second)
    two.start()
    two.join(0.5)  # (it waits on the first's lock)
    release.set()
    one.join(5)
    two.join(10)
    assert results == {"first": "saved", "second": "refused"}, connection.vendor
    post.refresh_from_db()
    assert post.body == "First."


def test_the_assistant_and_the_buttons_write_only_what_they_change(team, consent):
    """A post read by a tool (or a Publish button's request) while a person saves new words: the tool's
    change and the publishing write only their own fields, and the person's words stay. Before, each
    wrote the whole post as it had read it, putting the old words back."""
    post = make_post(team.blog, "Read once", "The first words.")
    grant = consent(team.owner, team.blog, ALL)
    assistant = Actor(team.owner, frozenset(ALL), consent=grant, via_assistant=True)

    read_by_the_tool = Post.objects.get(pk=post.pk)
    services.post_update(post=Post.objects.get(pk=post.pk), actor=person(team.owner), body="The owner's words.")
    services.post_update(post=read_by_the_tool, actor=assistant, title="Retitled by the assistant")
    post.refresh_from_db()
    assert (post.title, post.body) == ("Retitled by the assistant", "The owner's words.")

    read_by_the_button = Post.objects.get(pk=post.pk)
    services.post_update(post=Post.objects.get(pk=post.pk), actor=person(team.owner), body="Newer words.")
    services.post_publish(post=read_by_the_button, actor=person(team.editor))
    post.refresh_from_db()
    assert (post.status, post.body) == (Post.PUBLISHED, "Newer words.")
    services.post_unpublish(post=Post.objects.get(pk=post.pk), actor=person(team.editor))
    post.refresh_from_db()
    assert (post.status, post.published_at, post.body) == (Post.DRAFT, None, "Newer words.")


def test_a_save_after_the_post_was_deleted_elsewhere_gives_the_words_back(team):
    """The assistant beside the editor (or another tab) deletes the post while its person is typing: the
    Save has nothing to write into, and the page says so with their words to copy. Before, it answered
    the site's bare "Not found" page and the words were gone."""
    post = make_post(team.blog, "Doomed draft", "Saved words.")
    mine = browser(team.owner)
    version = opened_version(mine, post)
    url = edit_url(post)
    services.post_delete(post=Post.objects.get(pk=post.pk), actor=person(team.owner))
    typed = "Words typed <i>before</i> it went."
    response = mine.post(url, {"title": "Doomed draft, renamed", "body": typed, "version": version})
    html = response.content.decode()
    assert response.status_code == 404
    assert "This post was deleted while you were editing, so nothing was saved." in html
    assert "Words typed &lt;i&gt;before&lt;/i&gt; it went." in html and "Doomed draft, renamed" in html
    assert "<i>before</i>" not in html
    assert not Post.objects.filter(pk=post.pk).exists()
    # Opening it, or a Save from no editor of ours (no version), is the plain "Not found" as before.
    assert mine.get(url).status_code == 404
    plain = mine.post(url, {"title": "x", "body": typed})
    assert plain.status_code == 404 and "Words typed" not in plain.content.decode()
    # The editor's look at its post, gone: an empty answer (the page says it can no longer be edited).
    assert mine.post(f"/blogs/notes/posts/{post.pk}/incoming/", {"title": "x", "body": "y"}).status_code == 204


@pytest.mark.parametrize("action", ["publish", "unpublish"])
def test_two_publish_buttons_pressed_at_once_publish_the_post_once(team, action):
    """Two people (or a person and the assistant) press Publish on the same draft at the same moment,
    each request having read it as a draft: the second is refused as already published, not a second
    publication with its own revision and a later publication date. The same for Unpublish."""
    post = make_post(team.blog, "Pressed twice", "Words.")
    if action == "unpublish":
        services.post_publish(post=Post.objects.get(pk=post.pk), actor=person(team.owner))
    mutate = services.post_publish if action == "publish" else services.post_unpublish
    first, second = Post.objects.get(pk=post.pk), Post.objects.get(pk=post.pk)
    mutate(post=first, actor=person(team.owner))
    with pytest.raises(services.OperationError) as refused:
        mutate(post=second, actor=person(team.editor))
    said = "already published" if action == "publish" else "not published"
    assert (refused.value.code, refused.value.public_message) == ("conflict", f"“Pressed twice” is {said}.")
    post.refresh_from_db()
    assert (post.status, post.published_at) == (first.status, first.published_at)
    assert PostRevision.objects.filter(post=post, action=action).count() == 1


def test_publishing_a_post_deleted_meanwhile_says_so(team):
    """A Publish button (or the assistant) acting on a post another request has just deleted is refused
    with a sentence, not a server error."""
    post = make_post(team.blog, "Gone soon", "Words.")
    read_by_the_button = Post.objects.get(pk=post.pk)
    services.post_delete(post=Post.objects.get(pk=post.pk), actor=person(team.owner))
    with pytest.raises(services.OperationError) as refused:
        services.post_publish(post=read_by_the_button, actor=person(team.editor))
    assert (refused.value.code, refused.value.public_message) == ("not_found", "“Gone soon” was deleted meanwhile.")
    assert not PostRevision.objects.filter(action="publish").exists()
