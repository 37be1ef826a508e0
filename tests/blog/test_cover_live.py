"""An open editor follows its post's cover: the editor's look at its changed post (`post_incoming`) brings
the cover as saved now (the picture, the Remove box, the field's hint), and every cover URL names the
cover it shows, so that a browser never shows a replaced cover from its cache."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client

from blog.models import Post
from tests import files
from tests.blog.conftest import browser, make_post

pytestmark = pytest.mark.django_db

REMOVE_BOX = (
    '<label class="check"><input type="checkbox" name="remove_cover" id="remove-cover"> Remove the cover</label>'
)
REPLACES = "A new image replaces the cover."


def with_cover(post: Post, name: str, image: bytes | None = None) -> str:
    """Give `post` a stored PNG cover; the version its URLs carry (a short digest of its key)."""
    key = default_storage.save(f"covers/{post.blog_id}/{name}.png", ContentFile(image or files.png()))
    Post.objects.filter(pk=post.pk).update(cover_ref=key, cover_type="image/png")
    post.refresh_from_db()
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def incoming_cover(html: str) -> tuple[str, str]:
    """The cover part of the editor's look at its post: (its version, what it holds)."""
    found = re.search(r'<template id="incoming-cover" data-cover="([0-9a-f]*)">(.*?)</template>', html, re.S)
    assert found, "no cover in the answer"
    return found.group(1), found.group(2)


def test_every_cover_url_names_the_cover_it_shows(team, media):
    post = make_post(team.blog, "Walk")
    first = with_cover(post, "a")
    url = f"/blogs/notes/posts/{post.pk}/cover?v={first}"
    client = browser(team.owner)
    editor = client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert f'<img class="post-cover" id="post-cover" src="{url}"' in editor
    assert f'data-cover="{first}"' in editor  # (the form knows which cover it shows)
    assert f'<img class="post-thumb" src="{url}"' in client.get("/blogs/notes/").content.decode()
    got = client.get(url)
    assert (got.status_code, got["Content-Type"]) == (200, "image/png")

    second = with_cover(post, "b")  # (a new cover: a new URL, which no cache holds)
    assert second != first
    assert f"cover?v={second}" in client.get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()

    Post.objects.filter(pk=post.pk).update(status=Post.PUBLISHED, published_at=post.updated_at)
    public = Client().get(f"/read/notes/{post.slug}/").content.decode()
    assert f'<img class="post-cover" src="/read/notes/{post.slug}/cover?v={second}"' in public
    assert f'<meta property="og:image" content="http://testserver/read/notes/{post.slug}/cover?v={second}">' in public


def test_the_editors_look_at_its_post_brings_its_cover_as_saved_now(team, media):
    post = make_post(team.blog, "Walk", "Words.")
    client = browser(team.owner)
    look = f"/blogs/notes/posts/{post.pk}/incoming/"

    version, held = incoming_cover(client.post(look, {"title": "Walk", "body": "Words."}).content.decode())
    assert (version, "<figure" in held, "remove_cover" in held, REPLACES in held) == ("", False, False, False)

    cover = with_cover(post, "a")
    version, held = incoming_cover(client.post(look, {"title": "Walk", "body": "Mine."}).content.decode())
    assert version == cover
    assert f'<img class="post-cover" id="post-cover" src="/blogs/notes/posts/{post.pk}/cover?v={cover}"' in held
    assert "(shown on the public page once the post is published)" in held
    assert REMOVE_BOX in held  # (never ticked here: a box the editor shows already keeps its own tick)
    assert f'<p class="hint" id="cover-hint">{REPLACES} PNG, JPEG, GIF or WebP' in held

    Post.objects.filter(pk=post.pk).update(cover_ref="", cover_type="")
    version, held = incoming_cover(client.post(look, {"title": "Walk", "body": "Mine."}).content.decode())
    assert (version, "<figure" in held, "remove_cover" in held, REPLACES in held) == ("", False, False, False)
    assert '<p class="hint" id="cover-hint">PNG, JPEG, GIF or WebP' in held


def test_a_cover_key_is_never_shown_in_its_url(team, media):
    post = make_post(team.blog, "Walk")
    with_cover(post, "secretname")
    html = browser(team.owner).get(f"/blogs/notes/posts/{post.pk}/edit/").content.decode()
    assert "secretname" not in html and "covers/" not in html


def test_a_cover_asked_for_by_its_version_is_kept_and_any_other_address_is_asked_again(team, media):
    """Every cover was kept an hour whatever its address: asked for by its version (the only address the
    pages use), the same image was fetched again every hour; by an old version or none (a link kept from
    before a new cover), the old image could be shown for that hour."""
    post = make_post(team.blog, "Walk")
    first = with_cover(post, "a")
    client = browser(team.owner)
    cover = f"/blogs/notes/posts/{post.pk}/cover"
    kept = client.get(f"{cover}?v={first}")
    assert (kept.status_code, kept["Cache-Control"]) == (200, "private, max-age=31536000, immutable")
    second = with_cover(post, "b", files.png(80))
    for address in (f"{cover}?v={first}", cover, f"{cover}?v=nonsense"):
        asked = client.get(address)
        assert (asked.status_code, asked["Cache-Control"]) == (200, "private, no-cache"), address
        assert b"".join(asked.streaming_content) == files.png(80)  # (the cover as it is now)
    assert client.get(f"{cover}?v={second}")["Cache-Control"] == "private, max-age=31536000, immutable"

    Post.objects.filter(pk=post.pk).update(status=Post.PUBLISHED, published_at=post.updated_at)
    public = f"/read/notes/{post.slug}/cover"
    assert Client().get(f"{public}?v={second}")["Cache-Control"] == "private, max-age=31536000, immutable"
    assert Client().get(f"{public}?v={first}")["Cache-Control"] == "private, no-cache"
