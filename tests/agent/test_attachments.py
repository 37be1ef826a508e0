"""Attachments through the engine: checked from their bytes, stored, served only to their chat's people."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from PIL import Image

from agent import attachments, budget, context
from agent.backends import get_backend
from agent.models import Message, Part, RateEvent, Session
from agent.state import Run
from agent.uploads import Limits, UploadRefused, check_all, check_image, check_one
from tests import files

pytestmark = pytest.mark.django_db

LIMITS = Limits(per_file=10 * 2**20, per_message=20 * 2**20, files=8, pixels=25_000_000)
DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}


@pytest.fixture
def media(tmp_path, settings) -> Path:
    root = tmp_path / "media"
    settings.MEDIA_ROOT = str(root)
    return root


def stored(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def upload(api, session, text="Here you go", *named: tuple[str, bytes], **extra):
    data = {"text": text, "files": [SimpleUploadedFile(name, body) for name, body in named], **extra}
    return api.client.post(f"/api/agent/sessions/{session.pk}/messages", data=data, HTTP_X_CSRFTOKEN=api.csrf)


# --- checking the bytes -----------------------------------------------------------------------


def test_a_jpeg_is_turned_upright_and_loses_its_exif_and_gps():
    original = files.jpeg_with_gps(40, 20, orientation=6)
    assert b"SecretCam" in original
    u = check_one("holiday.jpg", original, LIMITS)
    assert (u.kind, u.media_type, u.extension, u.width, u.height) == ("image", "image/jpeg", "jpg", 20, 40)
    assert b"SecretCam" not in u.data and b"Exif" not in u.data
    assert dict(Image.open(io.BytesIO(u.data)).getexif()) == {}


def test_an_animated_gif_keeps_its_frames_and_timing():
    u = check_one("wave.gif", files.gif_animated(3), LIMITS)
    im = Image.open(io.BytesIO(u.data))
    durations = []
    for i in range(im.n_frames):
        im.seek(i)
        durations.append(im.info["duration"])
    assert (u.media_type, im.n_frames, durations) == ("image/gif", 3, [100, 200, 300])


def test_documents_are_recognised_from_their_bytes():
    assert check_one("report.pdf", files.pdf(), LIMITS).meta == {"size": len(files.pdf()), "pages": 1}
    assert check_one("notes.md", b"# Notes\n", LIMITS).media_type == "text/markdown"
    assert check_one("notes.txt", "caf\u00e9".encode(), LIMITS).media_type == "text/plain"
    # An image named as text is still an image.
    assert check_one("pixels.txt", files.png(), LIMITS).media_type == "image/png"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (
            "setup.png",
            files.exe_as_png(),
            "“setup.png” can't be attached: only PNG, JPEG, GIF and WebP images, PDFs, "
            "and plain-text or Markdown files can be attached.",
        ),
        ("logo.svg", files.svg_with_script(), "“logo.svg” can't be attached: SVG and HTML files are not accepted."),
        ("logo.png", files.svg_with_script(), "“logo.png” can't be attached: SVG and HTML files are not accepted."),
        (
            "page.md",
            b"<!DOCTYPE html><script>x()</script>",
            "“page.md” can't be attached: SVG and HTML files are not accepted.",
        ),
        ("page.html", b"hello", "“page.html” can't be attached: SVG and HTML files are not accepted."),
        ("bomb.png", files.png_bomb(), "“bomb.png” is too large an image: the limit is 25 megapixels."),
        (
            "big.png",
            files.png(6000, 5000),
            "“big.png” is too large an image (6000×5000 pixels): the limit is 25 megapixels.",
        ),
        ("torn.png", files.png()[:60], "“torn.png” couldn't be read as an image."),
        # Few pixels, but each frame costs its own decoding and re-encoding (was: 5,000 accepted; 200,000 took
        # 12 s of the worker's CPU and 200 MB, then answered 500).
        (
            "flood.gif",
            files.gif_of_tiny_frames(5000),
            "“flood.gif” has too many frames (5000): the limit is 1000 frames.",
        ),
        (
            "nul.txt",
            b"abc\x00def",
            "“nul.txt” can't be attached: only PNG, JPEG, GIF and WebP images, PDFs, "
            "and plain-text or Markdown files can be attached.",
        ),
        ("empty.txt", b"", "“empty.txt” is empty."),
    ],
)
def test_hostile_or_unsupported_files_are_refused_calmly(name, data, message):
    with pytest.raises(UploadRefused) as caught:
        check_one(name, data, LIMITS)
    assert caught.value.args == (message,)


def test_a_pdf_with_a_flood_of_pages_is_counted_within_bounds():
    """Counting pages is only for the budget's estimate: past the bound it gives up (the estimate goes
    by size) instead of walking every page object (was: 20,000 counted; 9 s of CPU for 60,000)."""
    flood = files.pdf_slow_to_read(20_000)
    upload = check_one("pages.pdf", flood, LIMITS)
    assert upload.meta == {"size": len(flood)}
    assert check_one("fine.pdf", files.pdf_slow_to_read(900), LIMITS).pages == 900


def _lines(page: int, lines: int) -> bytes:
    """A page's content: `lines` lines of text, five drawing operators each."""
    return b"".join(b"BT /F1 12 Tf 72 %d Td (Page %d line %d) Tj ET\n" % (700 - 12 * i, page, i) for i in range(lines))


def test_reading_a_pdfs_text_is_bounded_however_it_was_made(monkeypatch):
    """For a model that takes no PDF files its text is read for the model: a few KB that make each
    page decompress and parse megabytes of operators must not hold the worker. The bounds are
    counts, so the same PDF gives the same text on any host (was: 8 s and 6.6 s of CPU for these two)."""
    from agent import pdfs

    huge = files.pdf_slow_to_read(4, b"BT ET " * 3_000_000)  # 18 MB a page, 20 KB in all
    assert pdfs.read_text(huge, 200_000) == (None, 0)  # every page past the bound of a stream, unparsed
    many = files.pdf_slow_to_read(12, b"BT () Tj ET " * 40_000)  # 480 KB a page, under the bound of a stream
    assert pdfs.read_text(many, 200_000) == (None, pdfs.OPERATIONS)  # (12 pages would be 1,920,000)

    # Cut between pages or within one, it is the same text every time: the whole pages it read.
    monkeypatch.setattr(pdfs, "OPERATIONS", 5 * 40 * 3 + 7)  # three pages of 40 lines, and a little
    pages = [_lines(n, 40) for n in range(10)]
    book = files.pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count 10 >>" % b" ".join(b"%d 0 R" % (3 + 2 * n) for n in range(10)),
            *[
                obj
                for n, content in enumerate(pages)
                for obj in (
                    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 "
                    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> /Contents %d 0 R >>" % (4 + 2 * n),
                    b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
                )
            ],
        ]
    )
    text, used = pdfs.read_text(book, 200_000)
    assert used == pdfs.OPERATIONS
    assert text is not None and "Page 2 line 39" in text and "Page 3" not in text
    assert pdfs.read_text(book, 200_000) == (text, used)
    assert attachments.pdf_text(files.pdf("Still read")) == "Still read"


def test_a_pdfs_text_is_read_once_for_every_call_that_sends_it(monkeypatch):
    from agent import pdfs

    reads = []
    real = pdfs.read_text
    monkeypatch.setattr(pdfs, "read_text", lambda data, limit: reads.append(limit) or real(data, limit))
    document = files.pdf("Read me once")
    for _ in range(3):  # three model calls of one chat
        assert attachments.pdf_text(document) == "Read me once"
    assert reads == [200_000]
    assert attachments.pdf_text(files.pdf("Another one")) == "Another one"
    assert len(reads) == 2


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("r.pdf", files.pdf(), "“r.pdf” is not an image: only PNG, JPEG, GIF and WebP images are accepted."),
        ("notes.png", b"plain text", "“notes.png” is not an image: only PNG, JPEG, GIF and WebP images are accepted."),
        ("logo.png", files.svg_with_script(), "“logo.png” can't be attached: SVG and HTML files are not accepted."),
        ("bomb.png", files.png_bomb(), "“bomb.png” is too large an image: the limit is 25 megapixels."),
        ("big.png", files.png(), "“big.png” is larger than the 9.54e-05 MB allowed for one file."),
    ],
    ids=["pdf", "text", "svg", "bomb", "big"],
)
def test_check_image_takes_an_image_as_an_attachment_is_and_nothing_else(name, data, message):
    """`check_image` (a post's cover chosen in the editor): an attached image's checks, images only."""
    u = check_image("holiday.jpg", files.jpeg_with_gps(40, 20), LIMITS)
    assert (u.kind, u.media_type, u.width, u.height, b"SecretCam" in u.data) == ("image", "image/jpeg", 20, 40, False)
    limits = Limits(per_file=100, per_message=100, files=1, pixels=25_000_000) if name == "big.png" else LIMITS
    with pytest.raises(UploadRefused) as refused:
        check_image(name, data, limits)
    assert refused.value.args == (message,)


def test_limits_per_file_per_message_and_count():
    small = Limits(per_file=1000, per_message=1500, files=2, pixels=1000)
    with pytest.raises(UploadRefused, match="larger than the 0.000954 MB allowed for one file"):
        check_all([("a.txt", b"a" * 1001)], small)
    with pytest.raises(UploadRefused, match="add up to more than"):
        check_all([("a.txt", b"a" * 800), ("b.txt", b"b" * 800)], small)
    with pytest.raises(UploadRefused, match="Attach at most 2 files"):
        check_all([("a.txt", b"a")] * 3, small)
    one = Limits(per_file=1000, per_message=1500, files=1, pixels=1000)
    with pytest.raises(UploadRefused) as refused:
        check_all([("a.txt", b"a")] * 2, one)
    assert refused.value.args == ("Attach at most one file to one message.",)


# --- the API ------------------------------------------------------------------------------------


def test_multipart_message_stores_its_files_and_the_transcript_links_them(api, chat, script, media):
    script([[{"kind": "text", "text": "Nice."}, DONE]])
    response = upload(api, chat, "Look", ("photo.png", files.png(64, 48)), ("report.pdf", files.pdf()))
    assert response.status_code == 202, response.content
    parts = api.transcript(chat)["messages"][0]["parts"]
    assert [p["type"] for p in parts] == ["text", "image", "document"]
    image, document = parts[1], parts[2]
    assert image["url"] == f"/api/agent/sessions/{chat.pk}/attachments/{image['id']}"
    assert (image["name"], image["media_type"], image["width"], image["height"]) == ("photo.png", "image/png", 64, 48)
    assert (document["name"], document["media_type"], document["pages"]) == ("report.pdf", "application/pdf", 1)
    assert len(stored(media)) == 2

    got = api.get(image["url"])
    assert got.status_code == 200
    assert got["Content-Type"] == "image/png"
    assert got["Content-Disposition"] == 'inline; filename="photo.png"'
    assert got["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in got["Content-Security-Policy"] and "default-src 'none'" in got["Content-Security-Policy"]
    assert Image.open(io.BytesIO(b"".join(got.streaming_content))).size == (64, 48)
    got = api.get(document["url"])
    assert (got["Content-Type"], got["Content-Disposition"]) == (
        "application/pdf",
        'attachment; filename="report.pdf"',
    )


def test_json_bodies_keep_working(api, chat, script):
    script([[{"kind": "text", "text": "Hi."}, DONE]])
    assert api.send(chat, "hello").status_code == 202


def test_only_the_chats_user_and_staff_who_may_view_sessions_fetch_an_attachment(
    api, chat, script, media, other_user, django_user_model
):
    script([[DONE]])
    assert upload(api, chat, "Look", ("photo.png", files.png())).status_code == 202
    part = Part.objects.get(type="image")
    url = f"/api/agent/sessions/{chat.pk}/attachments/{part.pk}"
    other = Client()
    other.force_login(other_user)
    assert other.get(url).status_code == 404
    assert Client().get(url).status_code == 404  # signed out
    # Guessed addresses: another session's id, another part's id, a text part's id.
    assert (
        api.get(f"/api/agent/sessions/{Session.objects.create(user=other_user).pk}/attachments/{part.pk}").status_code
        == 404
    )
    assert api.get(f"/api/agent/sessions/{chat.pk}/attachments/{part.pk + 1000}").status_code == 404
    text_part = Part.objects.get(type="text", message__role="user")
    assert api.get(f"/api/agent/sessions/{chat.pk}/attachments/{text_part.pk}").status_code == 404

    staff = django_user_model.objects.create_user("sam", password="pw-sam-12345", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get(url).status_code == 404  # staff without the admin's view permission
    from django.contrib.auth.models import Permission

    staff.user_permissions.add(Permission.objects.get(codename="view_session", content_type__app_label="agent"))
    client.force_login(django_user_model.objects.get(pk=staff.pk))
    assert client.get(url).status_code == 200


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("setup.png", files.exe_as_png(), "unsupported_type"),
        ("bomb.png", files.png_bomb(), "too_many_pixels"),
        ("logo.svg", files.svg_with_script(), "unsupported_type"),
    ],
)
def test_a_refused_file_stores_nothing(api, chat, script, media, name, data, code):
    script([[DONE]])
    response = upload(api, chat, "Look", ("ok.png", files.png()), (name, data))
    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert "\n" not in response.json()["error"]["message"]
    assert (Message.objects.count(), stored(media), RateEvent.objects.count()) == (0, [], 0)


def test_an_oversized_body_is_refused_from_its_content_length(api, chat, script, media, settings):
    settings.AGENT_MAX_UPLOAD_MB_PER_MESSAGE = 0.01  # 10 KB (+256 KB for text and framing)
    script([[DONE]])
    response = upload(api, chat, "Big", ("big.txt", b"a" * 400_000))
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "too_large",
        "message": "These files add up to more than the 0.01 MB allowed in one message.",
    }
    assert (Message.objects.count(), stored(media)) == (0, [])


def test_a_file_over_the_per_file_limit_is_stopped_as_it_arrives(api, chat, script, media, settings):
    settings.AGENT_MAX_UPLOAD_MB = 0.05
    script([[DONE]])
    response = upload(api, chat, "Big", ("big.txt", b"a" * 100_000))
    assert response.status_code == 413
    assert response.json()["error"]["message"] == "“big.txt” is larger than the 0.05 MB allowed for one file."
    assert (Message.objects.count(), stored(media)) == (0, [])


def test_files_past_the_count_are_refused_calmly_whoever_read_the_body_first(chat, script, media):
    """The count is stopped as the body arrives, and the view read that refusal before asking for the
    files; only the CSRF middleware's read of the body had parsed it by then. A view the middleware
    does not read for (exempt, or a client that skips the check, as tests do) was a 500 with nine
    files: the parse stopped, the view read closed files."""
    script([[DONE]])
    client = Client()  # (no CSRF check: nothing reads the body before the view)
    client.force_login(chat.user)
    data = {"text": "Nine", "files": [SimpleUploadedFile(f"n{i}.txt", b"note") for i in range(9)]}
    response = client.post(f"/api/agent/sessions/{chat.pk}/messages", data=data)
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "too_many_files", "message": "Attach at most 8 files to one message."}
    assert (Message.objects.count(), stored(media)) == (0, [])


def test_a_model_without_images_refuses_them_before_any_call(api, chat, script, media, settings):
    settings.AGENT_MODEL_IMAGES = False
    script([[DONE]])
    response = upload(api, chat, "Look", ("photo.png", files.png()))
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "unsupported_attachment",
        "message": "This assistant's model can't read images. Send your message without them, or as a document.",
    }
    assert (Message.objects.count(), stored(media)) == (0, [])
    assert upload(api, chat, "Read", ("notes.md", b"# Notes")).status_code == 202


# --- what the model is given -----------------------------------------------------------------


def test_the_model_learns_each_attachments_id_and_reads_text_documents_as_text(api, chat, script, media, settings):
    script([[DONE]])
    upload(
        api, chat, "Look", ("photo.png", files.png(64, 48)), ("notes.md", b"# Notes\nbuy milk"), ("r.pdf", files.pdf())
    )
    image, note, pdf = Part.objects.filter(type__in=("image", "document")).order_by("position")
    ctx = context.build(Run(chat, None), get_backend(), "fake", [])
    parts = ctx.messages[0]["parts"]
    assert [p["type"] for p in parts] == ["text", "text", "image", "text", "text", "document"]
    assert parts[1]["text"] == f"[Attachment #{image.pk}: photo.png, image/png, 64×48, {len(image_bytes(image))} B]"
    assert parts[2]["data"] == image_bytes(image) and parts[2]["media_type"] == "image/png"
    assert (
        parts[3]["text"]
        == f"[Attachment #{note.pk}: notes.md, text/markdown, 16 B]\n<document>\n# Notes\nbuy milk\n</document>"
    )
    assert parts[4]["text"].startswith(f"[Attachment #{pdf.pk}: r.pdf, application/pdf, 1 page, ")

    settings.AGENT_MODEL_IMAGES = False  # a model switched to one without images after the fact
    parts = context.build(Run(chat, None), get_backend(), "fake", []).messages[0]["parts"]
    assert "image" not in [p["type"] for p in parts]
    assert parts[1]["text"].endswith("(not shown: this model takes no images)")


def image_bytes(part: Part) -> bytes:
    from django.core.files.storage import default_storage

    with default_storage.open(part.media_ref) as fh:
        return fh.read()


def test_attachments_count_toward_the_reserved_input_realistically():
    small = {"type": "image", "width": 64, "height": 48, "data": b""}
    large = {"type": "image", "width": 4000, "height": 3000, "data": b""}
    assert attachments.tokens(small) == 255  # 85 + 170 × one tile (OpenAI), above Claude's 5
    assert attachments.tokens(large) == 1534  # Claude: 1.15 MP / 750, above OpenAI's 4 tiles (765)
    pdf = {"type": "document", "media_type": "application/pdf", "pages": 12, "size": 10_000}
    assert attachments.tokens(pdf) == 36_000
    message = [{"role": "user", "parts": [large, pdf]}]
    assert budget.estimate_tokens("", message, []) >= 1534 + 36_000


def test_chat_cleanup_deletes_the_files_of_the_chats_it_deletes(
    api, chat, script, media, other_user, django_capture_on_commit_callbacks
):
    script([[DONE]])
    upload(api, chat, "Look", ("photo.png", files.png()), ("r.pdf", files.pdf()))
    keep = Session.objects.create(user=other_user)
    kept = media / "agent" / str(keep.pk) / "keep.png"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(files.png())
    Message.objects.filter(session=keep).delete()
    assert len(stored(media)) == 3
    Session.objects.filter(pk=chat.pk).update(updated_at="2000-01-01T00:00:00Z", turn=None)
    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):  # (the files go once the deletion commits)
        call_command("chat_cleanup", "--older-than", "30", stdout=out)
    assert not Session.objects.filter(pk=chat.pk).exists()
    assert stored(media) == [kept]
    assert "Deleted 1 sessions (2 attachment files)" in out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "served"),
    [
        ("invoice.bat", files.pdf() + b"\r\ncalc.exe\r\n", 'attachment; filename="invoice.bat.pdf"'),
        ("setup.ps1", files.pdf(), 'attachment; filename="setup.ps1.pdf"'),
        ("report", files.pdf(), 'attachment; filename="report.pdf"'),
        ("photo.cmd", files.png(), 'inline; filename="photo.cmd.png"'),
        ("photo.PNG", files.png(), 'inline; filename="photo.PNG"'),
        ("photo.png", files.jpeg_with_gps(), 'inline; filename="photo.png.jpg"'),
    ],
)
def test_an_attachment_is_saved_under_a_name_whose_extension_is_its_checked_type(
    api, chat, script, media, name, data, served
):
    """The bytes decide the type (a PDF is anything starting `%PDF-`), but the download kept the name
    sent: a PDF whose later lines are commands, named `invoice.bat`, was accepted and served as
    `attachment; filename="invoice.bat"`, which a browser saves as a batch file that Windows runs
    line by line (the first, `%PDF-1.4`, fails; the rest run), for the chat's person or the staff
    who open it from the admin. The name shown in the chat stays the person's own."""
    script([[DONE]])
    assert upload(api, chat, "Look", (name, data)).status_code == 202
    part = Part.objects.get(type__in=("image", "document"))
    got = api.get(f"/api/agent/sessions/{chat.pk}/attachments/{part.pk}")
    assert got["Content-Disposition"] == served
    assert part.text == name


def test_a_chat_or_account_deleted_takes_its_attachment_files_with_it(
    api, chat, script, media, django_user_model, django_capture_on_commit_callbacks
):
    """Only `chat_cleanup` deleted a chat's files. A superuser deleting a chat in the admin (a person
    asked for it), or deleting a person's account, left every photo and document they had attached
    in storage, unreferenced by anything, never to be removed."""
    script([[DONE]] * 2)
    assert upload(api, chat, "Look", ("photo.png", files.png()), ("r.pdf", files.pdf())).status_code == 202
    assert len(stored(media)) == 2
    admin = Client()
    admin.force_login(django_user_model.objects.create_superuser("root", password="root-pass-12345"))
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(f"/admin/agent/session/{chat.pk}/delete/", {"post": "yes"}).status_code == 302
    assert stored(media) == []

    other = Session.objects.create(user=chat.user, purpose="chat")
    assert upload(api, other, "Again", ("photo.png", files.png())).status_code == 202
    assert len(stored(media)) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(f"/admin/auth/user/{chat.user.pk}/delete/", {"post": "yes"}).status_code == 302
    assert stored(media) == []


def test_a_message_past_the_rate_limit_is_refused_before_its_files_are_opened(
    api, chat, script, media, settings, monkeypatch
):
    """Checking images costs seconds of a worker's time (each decoded and re-encoded; eight large
    WebPs take about 9 s): a message the rate limit refuses must not cost it. Was: the files were
    checked first, so past the limit every request still had them all decoded, without bound."""
    from agent import intake

    settings.AGENT_MESSAGES_PER_MINUTE = 1
    opened = []
    real = intake.check_all
    monkeypatch.setattr(intake, "check_all", lambda files, *a: opened.append(len(files)) or real(files, *a))
    script([[{"kind": "text", "text": "ok"}, DONE]])
    first = upload(api, chat, "One", ("a.png", files.png()))
    assert first.status_code == 202 and opened == [1]
    api.events(first.json()["stream_url"])

    response = upload(api, chat, "Two", *((f"{n}.png", files.png()) for n in range(8)))
    assert (response.status_code, response.json()["error"]["code"]) == (429, "rate_limited")
    assert opened == [1]  # the eight were never opened
    assert (Message.objects.filter(role="user").count(), RateEvent.objects.count()) == (1, 1)


def test_refused_files_give_back_their_own_rate_slot_not_the_latest(chat, media, settings, monkeypatch):
    """Two tabs send at once: the second's slot is taken while the first's files are checked, and the
    first's files are refused. Was: giving the slot back deleted the person's latest one, the second's,
    so the refused message kept a slot and the accepted one had none."""
    from agent import intake
    from agent.api import take_rate_slot

    settings.AGENT_MESSAGES_PER_MINUTE = 5
    others = []
    real = intake.check_all

    def checked_while_another_tab_sends(named, *a):
        take_rate_slot(chat.user)  # (the other tab's message, meanwhile)
        others.append(RateEvent.objects.latest("pk").pk)
        return real(named, *a)

    monkeypatch.setattr(intake, "check_all", checked_while_another_tab_sends)
    with pytest.raises(intake.Refused):
        intake.accept(chat, chat.user, "Look", [("setup.png", files.exe_as_png())])
    assert list(RateEvent.objects.values_list("pk", flat=True)) == others  # the other tab's slot, kept


def test_giving_back_a_rate_slot_removes_that_slot(user, settings):
    """With two slots taken, giving back the first removes the first, not the latest."""
    from agent.api import give_back_rate_slot, take_rate_slot

    settings.AGENT_MESSAGES_PER_MINUTE = 5
    first, second = take_rate_slot(user), take_rate_slot(user)
    give_back_rate_slot(first)
    assert list(RateEvent.objects.values_list("pk", flat=True)) == [second.pk]
    give_back_rate_slot(first)  # (twice: nothing more)
    assert RateEvent.objects.count() == 1


def test_without_a_rate_limit_no_slot_is_recorded(user, settings):
    from agent.api import give_back_rate_slot, take_rate_slot

    settings.AGENT_MESSAGES_PER_MINUTE = 0
    slot = take_rate_slot(user)
    assert slot.pk is None and not RateEvent.objects.exists()
    give_back_rate_slot(slot)
    assert not RateEvent.objects.exists()


def test_a_message_with_files_sent_while_answering_is_refused_before_its_files_are_read(
    api, chat, media, settings, monkeypatch
):
    """Sent again and again while the assistant is still answering, a message with images is refused (409)
    before its rate slot is taken and before its images are decoded: a refusal costs neither. Was (this
    session's first version): the images were decoded, then the slot given back, so resending during an
    answer decoded images without any limit."""
    from agent import intake
    from agent.turns import claim

    settings.AGENT_MESSAGES_PER_MINUTE = 2
    opened = []
    real = intake.check_all
    monkeypatch.setattr(intake, "check_all", lambda files, *a: opened.append(len(files)) or real(files, *a))
    claim(chat)
    for _ in range(5):
        response = upload(api, chat, "Again", *((f"{n}.png", files.png()) for n in range(3)))
        assert (response.status_code, response.json()["error"]["code"]) == (409, "turn_in_progress")
    assert opened == []
    assert not RateEvent.objects.exists()
    assert not Message.objects.filter(session=chat).exists()


def test_files_decoded_before_the_chat_turned_out_to_be_answering_keep_their_slot(
    api, chat, media, settings, monkeypatch
):
    """A turn that takes the chat between the request's read of it and its own claim (another tab): the
    message is refused (409) after its images were decoded, and keeps its slot, so that work still counts
    against the limit; one without files gives its slot back."""
    from agent import intake, turns

    settings.AGENT_MESSAGES_PER_MINUTE = 5
    monkeypatch.setattr(intake, "answering", lambda session: False)  # (the read saw it free)
    turns.claim(chat)
    response = upload(api, chat, "With files", ("a.png", files.png()))
    assert (response.status_code, response.json()["error"]["code"]) == (409, "turn_in_progress")
    assert RateEvent.objects.count() == 1
    assert api.send(chat, "Without").json()["error"]["code"] == "turn_in_progress"
    assert RateEvent.objects.count() == 1
