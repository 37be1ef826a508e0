"""A post's cover chosen by hand in the editor (new post and edit): checked as the chat's image
attachments are, stored as the post's own copy, saved through the write path (history, live
announcements, the old cover's file deleted after commit), removed the same way; a refused image
keeps the words typed and stores nothing."""

from __future__ import annotations

import io
import os
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image

from blog.models import Post, PostRevision
from tests import files
from tests.blog.conftest import browser, covers_stored, make_post
from tests.gevent_probe import ticks_while

pytestmark = pytest.mark.django_db

NEW = "/blogs/notes/posts/new/"


def edit_url(post: Post) -> str:
    return f"/blogs/notes/posts/{post.pk}/edit/"


def version_of(client, post: Post) -> str:
    html = client.get(edit_url(post)).content.decode()
    found = re.search(r'<input type="hidden" name="version" value="([^"]+)">', html)
    assert found
    return found.group(1)


def image(name: str = "beach.png", data: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, files.png(64, 48) if data is None else data, content_type="image/png")


def noise_png(side: int = 100) -> bytes:
    """A PNG that does not compress (random pixels): side × side × 3 bytes and a little more."""
    out = io.BytesIO()
    Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(out, "PNG")
    return out.getvalue()


def field_error(html: str) -> str:
    found = re.search(r'<p class="error field-error" id="cover-error" role="alert">([^<]*)</p>', html)
    assert found, "no error beside the cover field"
    return found.group(1)


def test_the_editor_offers_a_cover_field_and_removing_only_when_there_is_one(team, media):
    client = browser(team.owner)
    html = client.get(NEW).content.decode()
    assert 'enctype="multipart/form-data"' in html
    assert '<label for="cover-file">Cover image</label>' in html
    assert 'type="file" id="cover-file" name="cover" accept="image/png,image/jpeg,image/gif,image/webp"' in html
    assert "Remove the cover" not in html
    post = make_post(team.blog, "Plain")
    html = client.get(edit_url(post)).content.decode()
    assert 'enctype="multipart/form-data"' in html and 'name="cover"' in html and "Remove the cover" not in html
    Post.objects.filter(pk=post.pk).update(cover_ref="covers/1/x.png", cover_type="image/png")
    html = client.get(edit_url(post)).content.decode()
    assert '<input type="checkbox" name="remove_cover" id="remove-cover"> Remove the cover' in html


def test_a_new_post_gets_the_cover_chosen_in_the_editor(team, media):
    client = browser(team.owner)
    data = {"title": "Sunset", "body": "Red sky.", "cover": image("sunset.jpg", files.jpeg_with_gps())}
    response = client.post(NEW, data)
    assert response.status_code == 302
    post = Post.objects.get()
    assert (post.title, post.cover_type) == ("Sunset", "image/jpeg")
    assert post.cover_ref.startswith(f"covers/{team.blog.pk}/") and post.cover_ref.endswith(".jpg")
    assert covers_stored(media) == [post.cover_ref]
    stored = (media / post.cover_ref).read_bytes()
    assert b"SecretCam" not in stored and Image.open(io.BytesIO(stored)).size == (20, 40)  # re-encoded, turned
    assert PostRevision.objects.get(post=post).after["cover"] == post.cover_ref
    # The editor shows it to members; the public page once the post is published.
    cover_url = f"/blogs/notes/posts/{post.pk}/cover"
    assert f'src="{cover_url}?v={post.cover_version}"' in client.get(edit_url(post)).content.decode()
    assert client.get(cover_url).status_code == 200
    public = f"/read/notes/{post.slug}/cover"
    assert browser().get(public).status_code == 404
    assert client.post(f"/blogs/notes/posts/{post.pk}/publish/").status_code == 302
    assert (
        f'<img class="post-cover" src="{public}?v={post.cover_version}"'
        in browser().get(f"/read/notes/{post.slug}/").content.decode()
    )
    assert browser().get(public).status_code == 200


def test_an_edit_sets_a_cover_and_the_history_says_so(team, media):
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.editor)
    data = {"title": "Walk", "body": "Words.", "version": version_of(client, post), "cover": image()}
    assert client.post(edit_url(post), data).status_code == 302
    post.refresh_from_db()
    assert post.cover_type == "image/png" and covers_stored(media) == [post.cover_ref]
    assert (
        f'src="/blogs/notes/posts/{post.pk}/cover?v={post.cover_version}"'
        in client.get(edit_url(post)).content.decode()
    )
    revision = PostRevision.objects.filter(post=post).first()
    assert (revision.action, "cover" in revision.before, revision.after["cover"]) == ("update", False, post.cover_ref)
    compare = client.get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={revision.pk}").content.decode()
    assert '<p class="meta">Cover: added</p>' in compare


def test_a_new_cover_replaces_the_old_whose_file_goes_after_the_commit(team, media, django_capture_on_commit_callbacks):
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.owner)
    data = {"title": "Walk", "body": "Words.", "version": version_of(client, post), "cover": image("one.png")}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(edit_url(post), data)
    post.refresh_from_db()
    first = post.cover_ref
    data = {
        "title": "Walk",
        "body": "Words.",
        "version": version_of(client, post),
        "cover": image("two.gif", files.gif_animated()),
    }
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert client.post(edit_url(post), data).status_code == 302
        assert first in covers_stored(media)  # (not before the change is committed)
    post.refresh_from_db()
    assert callbacks and post.cover_type == "image/gif" and covers_stored(media) == [post.cover_ref] != [first]
    revision = PostRevision.objects.filter(post=post).first()
    assert (revision.before["cover"], revision.after["cover"]) == (first, post.cover_ref)
    compare = client.get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={revision.pk}").content.decode()
    assert '<p class="meta">Cover: replaced</p>' in compare


def test_removing_the_cover_deletes_its_file_and_the_history_shows_it(team, media, django_capture_on_commit_callbacks):
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.owner)
    data = {"title": "Walk", "body": "Words.", "version": version_of(client, post), "cover": image()}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(edit_url(post), data)
    post.refresh_from_db()
    old = post.cover_ref
    data = {"title": "Walk", "body": "Words.", "version": version_of(client, post), "remove_cover": "on"}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(edit_url(post), data).status_code == 302
    post.refresh_from_db()
    assert (post.cover_ref, post.cover_type, covers_stored(media)) == ("", "", [])
    revision = PostRevision.objects.filter(post=post).first()
    assert (revision.action, revision.before["cover"], "cover" in revision.after) == ("update", old, False)
    compare = client.get(f"/blogs/notes/posts/{post.pk}/history/compare/?change={revision.pk}").content.decode()
    assert '<p class="meta">Cover: removed</p>' in compare
    assert client.get(f"/blogs/notes/posts/{post.pk}/cover").status_code == 404
    assert "post-cover" not in client.get(edit_url(post)).content.decode()


def test_removing_the_cover_through_the_write_path_announces_the_change(team, media, monkeypatch):
    from blog import live, services
    from blog.grants import Actor
    from tests.blog.conftest import ALL

    post = make_post(team.blog, "Walk", "Words.")
    Post.objects.filter(pk=post.pk).update(cover_ref="covers/1/x.png", cover_type="image/png")
    post.refresh_from_db()
    heard: list[dict] = []
    monkeypatch.setattr(live, "announce", lambda blog, effect: heard.append(effect))
    services.post_update(post=post, actor=Actor(team.owner, frozenset(ALL)), clear_cover=True)
    post.refresh_from_db()
    assert (post.cover_ref, heard) == ("", [{"type": "post.updated", "id": post.pk}])


REFUSED = [
    ("notes.png", b"Just a text file, renamed.\n", "“notes.png” is not an image: only PNG, JPEG, GIF and WebP images"),
    ("broken.png", b"\x89PNG\r\n\x1a\nnot really", "“broken.png” couldn't be read as an image."),
    ("bomb.png", files.png_bomb(), "“bomb.png” is too large an image: the limit is 25 megapixels."),
    ("big.png", noise_png(), "“big.png” is larger than the 0.0195 MB allowed for one file."),
    ("logo.png", files.svg_with_script(), "“logo.png” can't be attached: SVG and HTML files are not accepted."),
]


@pytest.mark.parametrize(("name", "data", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_image_keeps_the_words_and_stores_nothing(team, media, settings, name, data, said):
    if name == "big.png":
        settings.AGENT_MAX_UPLOAD_MB = 20 / 1024  # 20 KB: big.png is 30 KB
    client = browser(team.owner)
    # (the image first: the editor's form sends it before the words, which are kept all the same)
    response = client.post(NEW, {"cover": image(name, data), "title": "My title", "body": "My words."})
    assert response.status_code in (200, 413)
    html = response.content.decode()
    assert said.replace("'", "&#x27;") in field_error(html)
    assert "choose the image again" in field_error(html)
    assert 'value="My title"' in html and ">My words.</textarea>" in html
    assert 'aria-describedby="cover-hint cover-error" aria-invalid="true"' in html
    assert (Post.objects.count(), covers_stored(media)) == (0, [])

    post = make_post(team.blog, "Walk", "Words.")
    data = {"cover": image(name, data), "title": "New title", "body": "New words.", "version": version_of(client, post)}
    response = client.post(edit_url(post), data)
    html = response.content.decode()
    assert said.replace("'", "&#x27;") in field_error(html)
    assert 'value="New title"' in html and ">New words.</textarea>" in html
    post.refresh_from_db()
    assert (post.title, post.cover_ref, covers_stored(media)) == ("Walk", "", [])


def test_a_crafted_form_with_two_images_is_told_a_cover_is_one_and_keeps_the_words(team, media):
    client = browser(team.owner)
    response = client.post(NEW, {"cover": [image("a.png"), image("b.png")], "title": "My title", "body": "My words."})
    html = response.content.decode()
    assert field_error(html).startswith("A cover is one image: choose one. Nothing was saved")
    assert "message" not in field_error(html)
    assert 'value="My title"' in html and ">My words.</textarea>" in html
    assert (Post.objects.count(), covers_stored(media)) == (0, [])


def test_a_body_far_over_the_cap_is_not_read_and_stores_nothing(team, media, settings):
    settings.AGENT_MAX_UPLOAD_MB = 20 / 1024
    client = browser(team.owner)
    huge = b"\x89PNG\r\n\x1a\n" + b"\x00" * (2 * 1024 * 1024)
    response = client.post(NEW, {"title": "My title", "body": "My words.", "cover": image("huge.png", huge)})
    assert response.status_code == 413
    assert "is larger than the 0.0195 MB a cover may be" in field_error(response.content.decode())
    assert (Post.objects.count(), covers_stored(media)) == (0, [])


def test_a_refused_title_with_a_good_image_stores_nothing_and_asks_for_the_image_again(team, media):
    response = browser(team.owner).post(NEW, {"title": "   ", "body": "Words.", "cover": image()})
    html = response.content.decode()
    assert "A post needs a title." in html and "choose the image again" in field_error(html)
    assert (Post.objects.count(), covers_stored(media)) == (0, [])


@pytest.mark.parametrize("role", ["viewer", "outsider"])
def test_a_viewer_or_outsider_cannot_set_or_remove_a_cover(team, media, role):
    post = make_post(team.blog, "Walk", "Words.")
    Post.objects.filter(pk=post.pk).update(cover_ref="covers/1/x.png", cover_type="image/png")
    client = browser(team.user(role))
    assert client.post(NEW, {"title": "Mine", "cover": image()}).status_code == 404
    data = {"title": "Walk", "body": "Words.", "version": "x", "cover": image()}
    assert client.post(edit_url(post), data).status_code == 404
    data = {"title": "Walk", "body": "Words.", "version": "x", "remove_cover": "on"}
    assert client.post(edit_url(post), data).status_code == 404
    post.refresh_from_db()
    assert (Post.objects.count(), post.cover_ref, covers_stored(media)) == (1, "covers/1/x.png", [])


def test_a_cover_without_the_csrf_token_is_refused(team, media):
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.owner, csrf=True)
    assert client.post(NEW, {"title": "Mine", "cover": image()}).status_code == 403
    assert client.post(edit_url(post), {"title": "Walk", "cover": image()}).status_code == 403
    post.refresh_from_db()
    assert (Post.objects.count(), post.cover_ref, covers_stored(media)) == (1, "", [])


def test_an_edit_conflict_saves_nothing_and_leaves_no_stray_file(team, media, django_capture_on_commit_callbacks):
    post = make_post(team.blog, "Walk", "First words.")
    mine = browser(team.owner)
    version = version_of(mine, post)
    other = browser(team.editor)
    other.post(edit_url(post), {"title": "Walk", "body": "Editor's words.", "version": version_of(other, post)})
    data = {"title": "My title", "body": "My words.", "version": version, "cover": image()}
    with django_capture_on_commit_callbacks(execute=True):
        response = mine.post(edit_url(post), data)
    html = response.content.decode()
    assert response.status_code == 200 and "so nothing was saved." in html
    assert "choose the image again" in field_error(html) and 'value="My title"' in html
    post.refresh_from_db()
    assert (post.body, post.cover_ref, covers_stored(media)) == ("Editor's words.", "", [])


def test_restoring_a_version_brings_back_its_words_and_leaves_the_cover_as_it_is(
    team, media, django_capture_on_commit_callbacks
):
    """A revision records the cover's key, but a removed cover's file is gone: restoring the version
    before the removal brings back its title and body, not the cover, and the history says so."""
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.owner)
    data = {"title": "Walk", "body": "Words.", "version": version_of(client, post), "cover": image()}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(edit_url(post), data)
    data = {"title": "Walk, renamed", "body": "Other.", "version": version_of(client, post), "remove_cover": "on"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(edit_url(post), data)
    removal = PostRevision.objects.filter(post=post).first()
    history = f"/blogs/notes/posts/{post.pk}/history/"
    assert "Restoring brings back a version's title and text; whether the post is published, and its cover," in (
        client.get(history).content.decode()
    )
    assert client.post(f"/blogs/notes/posts/{post.pk}/revert/{removal.pk}/").status_code == 302
    post.refresh_from_db()
    assert (post.title, post.body, post.cover_ref, covers_stored(media)) == ("Walk", "Words.", "", [])


def test_a_large_cover_is_checked_without_stalling_the_worker_s_other_streams(tmp_path):
    """The editor's and an import's covers are decoded and re-encoded (`covers.store_image`) in gevent's
    thread pool, as the chat's attachments are: the worker's other greenlets run meanwhile (none would,
    if it ran on the event loop), and the cover is stored as before."""
    setup = (
        "import io\nfrom types import SimpleNamespace\nfrom PIL import Image\nfrom blog import covers\n"
        "out = io.BytesIO()\n"
        "Image.linear_gradient('L').resize((4000, 4000)).convert('RGB').save(out, 'PNG')\n"
        "DATA = out.getvalue()"
    )
    work = "key, media_type = covers.store_image(SimpleNamespace(pk=7), 'holiday.png', DATA)\nprint(key, media_type)"
    env = {**os.environ, "MEDIA_ROOT": str(tmp_path)}
    assert ticks_while(setup, work, env) >= 10
    (stored,) = (tmp_path / "covers" / "7").iterdir()
    assert stored.suffix == ".png" and Image.open(stored).size == (4000, 4000)
