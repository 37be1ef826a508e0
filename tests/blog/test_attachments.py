"""Attachments on a blog: the chat panel's uploads, the demo model's photo posts, and post covers."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from agent.models import Message, Part, RateEvent, Session
from blog.models import Post
from tests import files
from tests.blog.conftest import ALL, PASSWORD, blog_chat

pytestmark = pytest.mark.django_db


@pytest.fixture
def media(tmp_path, settings) -> Path:
    root = tmp_path / "media"
    settings.MEDIA_ROOT = str(root)
    settings.AGENT_BACKEND = "demo"
    settings.AGENT_DEMO_DELAY_MS = 0
    return root


def stored(root: Path, under: str = "") -> list[Path]:
    base = root / under
    return sorted(p for p in base.rglob("*") if p.is_file()) if base.exists() else []


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def send(client: Client, url: str, text: str, *named: tuple[str, bytes]):
    data = {"text": text, "files": [SimpleUploadedFile(name, body) for name, body in named]}
    return client.post(url, data=data, HTTP_HX_REQUEST="true")


def assistant_text(session: Session) -> str:
    return " ".join(
        p.text for p in Part.objects.filter(message__session=session, message__role="assistant", type="text")
    )


def test_the_demo_acknowledges_each_attachment(team, consent, media):
    consent(team.owner, team.blog, ALL)
    chat = blog_chat(team.owner, team.blog)
    client = signed_in(team.owner)
    response = send(
        client, f"/chat/{chat.pk}/send", "what are these?", ("beach.png", files.png(640, 480)), ("r.pdf", files.pdf())
    )
    assert response.status_code == 200
    image, pdf = Part.objects.filter(type__in=("image", "document")).order_by("position")
    text = assistant_text(chat)
    assert "I received 2 attachments:" in text
    assert f"**beach.png** (attachment #{image.pk}): a PNG image, 640×480 pixels, " in text
    assert f"**r.pdf** (attachment #{pdf.pk}): a PDF document, 1 page, " in text
    # The sent bubble shows a thumbnail and a file chip linking to the attachments.
    html = response.content.decode()
    assert f'<img src="/api/agent/sessions/{chat.pk}/attachments/{image.pk}" alt="beach.png"' in html
    assert f'href="/api/agent/sessions/{chat.pk}/attachments/{pdf.pk}"' in html


def test_make_a_post_from_this_photo_drafts_it_with_a_copied_cover(
    team, consent, media, django_capture_on_commit_callbacks
):
    consent(team.owner, team.blog, ALL)
    client = signed_in(team.owner)
    response = send(
        client,
        f"/blogs/{team.blog.slug}/chats/send",
        "make a post from this photo",
        ("sunset_at-sea.jpg", files.jpeg_with_gps()),
    )
    assert response.status_code == 200
    post = Post.objects.get(blog=team.blog)
    assert (post.title, post.status, post.cover_type) == ("Sunset at sea", "draft", "image/jpeg")
    assert not post.body.startswith("#")  # (the page's heading is the title: not said twice)
    assert post.cover_ref.startswith(f"covers/{team.blog.pk}/")
    chat = Session.objects.get(user=team.owner)
    attachment = Part.objects.get(type="image")
    assert post.cover_ref != attachment.media_ref
    assert "Done: I drafted “Sunset at sea” with your photo as its cover." in assistant_text(chat)

    # Members see the cover (draft or not); the public only once the post is published.
    cover_url = f"/blogs/{team.blog.slug}/posts/{post.pk}/cover"
    got = client.get(cover_url)
    assert (got.status_code, got["Content-Type"], got["X-Content-Type-Options"]) == (200, "image/jpeg", "nosniff")
    assert "sandbox" in got["Content-Security-Policy"]
    assert b"SecretCam" not in b"".join(got.streaming_content)
    assert signed_in(team.viewer).get(cover_url).status_code == 200
    assert signed_in(team.outsider).get(cover_url).status_code == 404
    public = f"/read/{team.blog.slug}/{post.slug}/cover"
    assert Client().get(public).status_code == 404
    post.status = Post.PUBLISHED
    post.published_at = post.updated_at
    post.save()
    assert Client().get(public).status_code == 200
    page = Client().get(f"/read/{team.blog.slug}/{post.slug}/").content.decode()
    assert f'<img class="post-cover" src="{public}?v={post.cover_version}"' in page
    assert (
        f'src="{cover_url}?v={post.cover_version}"'
        in client.get(f"/blogs/{team.blog.slug}/posts/{post.pk}/edit/").content.decode()
    )

    # Deleting the chat (here by chat_cleanup) deletes the attachment, never the post's copy.
    Session.objects.filter(pk=chat.pk).update(updated_at="2000-01-01T00:00:00Z", turn=None)
    with django_capture_on_commit_callbacks(execute=True):  # (the files go once the deletion commits)
        call_command("chat_cleanup", "--older-than", "30", stdout=io.StringIO())
    assert stored(media, "agent") == []
    assert [str(p.relative_to(media)) for p in stored(media, "covers")] == [post.cover_ref]
    assert client.get(cover_url).status_code == 200


def test_a_cover_must_be_an_image_of_the_same_chat(team, consent, media, django_capture_on_commit_callbacks):
    from blog.grants import assistant
    from blog.operations import perform_json
    from blog.services import OperationError

    consent(team.owner, team.blog, ALL)
    chat, other_chat = blog_chat(team.owner, team.blog), blog_chat(team.owner, team.blog)
    client = signed_in(team.owner)
    send(client, f"/chat/{chat.pk}/send", "hello", ("notes.md", b"# Notes"), ("p.png", files.png()))
    send(client, f"/chat/{other_chat.pk}/send", "hello", ("q.png", files.png()))
    doc, image = Part.objects.filter(message__session=chat, type__in=("image", "document")).order_by("position")
    elsewhere = Part.objects.get(message__session=other_chat, type="image")
    actor = assistant(team.owner, team.blog, chat)

    def refused(attachment_id: int) -> str:
        with pytest.raises(OperationError) as caught:
            perform_json("create_post", actor, team.blog, {"title": "T", "cover_attachment_id": attachment_id})
        return caught.value.public_message

    assert refused(doc.pk) == f"Attachment #{doc.pk} is not an image: only an image can be a cover."
    assert refused(elsewhere.pk) == f"There is no attachment #{elsewhere.pk} in this chat."
    no_chat = assistant(team.owner, team.blog)  # e.g. a connected client, outside any chat
    with pytest.raises(OperationError, match="only in the chat they were attached to"):
        perform_json("create_post", no_chat, team.blog, {"title": "T", "cover_attachment_id": image.pk})
    assert not Post.objects.exists() and stored(media, "covers") == []

    post, _ = perform_json("create_post", actor, team.blog, {"title": "T"})
    updated, effects = perform_json(
        "update_post", actor, team.blog, {"post_id": post["id"], "cover_attachment_id": image.pk}
    )
    assert (updated["cover"], effects) == (True, [{"type": "post.updated", "id": post["id"]}])
    first = Post.objects.get().cover_ref
    with django_capture_on_commit_callbacks(execute=True):  # the replaced cover goes once the change commits
        perform_json("update_post", actor, team.blog, {"post_id": post["id"], "cover_attachment_id": image.pk})
    assert [str(p.relative_to(media)) for p in stored(media, "covers")] == [Post.objects.get().cover_ref] != [first]


def test_a_first_messages_files_are_checked_once_before_its_chat_and_stored_in_it(team, consent, media, monkeypatch):
    """The panel checks a first message's files before it makes the chat, and hands them on checked:
    each image decoded once, not again when the message is stored."""
    from agent import intake

    consent(team.owner, team.blog, ALL)
    opened: list[int] = []
    real = intake.check_all
    monkeypatch.setattr(intake, "check_all", lambda named, *a: opened.append(len(named)) or real(named, *a))
    response = send(signed_in(team.owner), f"/blogs/{team.blog.slug}/chats/send", "look", ("beach.png", files.png()))
    assert response.status_code == 200 and opened == [1]
    [image] = Part.objects.filter(type="image", message__session=Session.objects.get(user=team.owner))
    assert stored(media) == [media / image.media_ref]


def test_a_refused_upload_in_the_panel_is_a_calm_notice_and_stores_nothing(team, consent, media):
    consent(team.owner, team.blog, ALL)
    client = signed_in(team.owner)
    response = send(client, f"/blogs/{team.blog.slug}/chats/send", "look", ("setup.png", files.exe_as_png()))
    assert response.status_code == 200
    assert "“setup.png” can&#x27;t be attached: only PNG, JPEG, GIF and WebP images" in response.content.decode()
    assert (Session.objects.count(), Message.objects.count(), stored(media)) == (0, 0, [])
    assert not RateEvent.objects.exists()  # (refused files take no slot of the rate limit)
    chat = blog_chat(team.owner, team.blog)
    response = send(client, f"/chat/{chat.pk}/send", "look", ("bomb.png", files.png_bomb()))
    assert "“bomb.png” is too large an image" in response.content.decode()
    assert (Message.objects.count(), stored(media)) == (0, [])
