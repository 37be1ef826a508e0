"""A blog's export: its owner downloads every post as Markdown with its cover, in one ZIP."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime

import pytest
import yaml
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from blog import services
from blog.access import ROLE_SCOPES
from blog.grants import Actor
from blog.models import Post
from tests import files
from tests.blog.conftest import browser, make_post

URL = "/blogs/notes/export/"


def download(client) -> zipfile.ZipFile:
    response = client.get(URL)
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def split(md: bytes) -> tuple[dict, bytes]:
    """The front matter as YAML reads it, and the body's bytes after it."""
    assert md.startswith(b"---\n")
    head, body = md[4:].split(b"\n---\n", 1)
    return yaml.safe_load(head.decode()), body


def with_cover(post: Post, data: bytes, media_type: str = "image/png") -> Post:
    post.cover_ref = default_storage.save(f"covers/{post.blog_id}/c.png", ContentFile(data))
    post.cover_type = media_type
    post.save(update_fields=["cover_ref", "cover_type"])
    return post


def test_the_owner_downloads_every_post_with_its_front_matter_body_and_cover(team, media):
    owner = Actor(team.owner, ROLE_SCOPES["owner"])
    draft = services.post_create(blog=team.blog, actor=owner, title="Ärger über Äpfel", body="Noch nicht.\r\n\n  ")
    body = "# Heading\n\nA line with trailing spaces  \r\nand «ünïcödé», tabs\tand a last line without newline"
    published = make_post(team.blog, 'Quotes "here": colons: and \\ # too', body, published=True, author=team.editor)
    cover = files.png()
    with_cover(published, cover)
    script = services.post_create(blog=team.blog, actor=owner, title="秋の鳥", body="")
    published.refresh_from_db()

    response = browser(team.owner).get(URL)
    assert response.status_code == 200
    today = timezone.now().astimezone(UTC).date().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="notes-{today}.zip"'
    assert "no-cache" in response["Cache-Control"] and "private" in response["Cache-Control"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.testzip() is None
    assert draft.slug == "arger-uber-apfel" and script.slug == "秋の鳥"
    assert sorted(archive.namelist()) == sorted(
        [
            "README.txt",
            "covers/quotes-here-colons-and-too.png",
            "posts/arger-uber-apfel.md",
            f"posts/{script.pk}.md",  # (no ASCII letter in its slug: its pk names it)
            "posts/quotes-here-colons-and-too.md",
        ]
    )

    meta, got = split(archive.read("posts/arger-uber-apfel.md"))
    assert got == draft.body.encode()  # (as stored: the form's line endings are the service's to keep)
    assert meta == {
        "title": "Ärger über Äpfel",
        "status": "draft",
        "created": draft.created_at.isoformat(),
        "updated": draft.updated_at.isoformat(),
        "author": "owner",
    }
    meta, got = split(archive.read("posts/quotes-here-colons-and-too.md"))
    assert got == body.encode()
    assert meta == {
        "title": 'Quotes "here": colons: and \\ # too',
        "status": "published",
        "created": published.created_at.isoformat(),
        "updated": published.updated_at.isoformat(),
        "published": published.published_at.isoformat(),
        "author": "editor",
        "cover": "covers/quotes-here-colons-and-too.png",
    }
    assert archive.read("covers/quotes-here-colons-and-too.png") == cover
    assert split(archive.read(f"posts/{script.pk}.md"))[0]["title"] == "秋の鳥"

    readme = archive.read("README.txt").decode()
    assert "Blog: Notes\n" in readme and "Posts: 3\n" in readme
    exported = re.search(r"^Exported: (\S+)$", readme, re.M)
    assert exported and datetime.fromisoformat(exported[1]).utcoffset().total_seconds() == 0


def test_file_names_are_plain_and_unique_whatever_the_titles_and_slugs(team, media):
    hostile = make_post(team.blog, "../../etc/passwd", "x")
    Post.objects.filter(pk=hostile.pk).update(slug="../../etc/passwd")  # (as if set by hand: the app never makes it)
    absolute = make_post(team.blog, "/root/.ssh", "y")
    Post.objects.filter(pk=absolute.pk).update(slug="/root/.ssh")
    with_cover(absolute, files.png())
    Post.objects.filter(pk=absolute.pk).update(cover_type="", cover_ref="covers/1/../../x.PNG/..")
    plain = make_post(team.blog, "arger", "z")  # (its slug "arger" first: the other keeps its pk)
    accented = make_post(team.blog, "Ärger 2", "w")
    Post.objects.filter(pk=accented.pk).update(slug="ärger")
    names = download(browser(team.owner)).namelist()
    for name in names:
        assert re.fullmatch(r"README\.txt|(posts|covers)/[a-z0-9-]+\.[a-z0-9]+", name), name
    assert sorted(names) == sorted(
        [
            "README.txt",
            f"posts/{hostile.pk}-etcpasswd.md",
            f"posts/{absolute.pk}-rootssh.md",
            "posts/arger.md",
            f"posts/{accented.pk}-arger.md",
        ]
    )  # (a cover whose file is gone is left out, and the post still exported)
    assert plain.slug == "arger"


class BrokenFile(io.RawIOBase):
    """A cover whose storage fails after its first 64 KB (a connection reset mid-object, a bad disk)."""

    def __init__(self) -> None:
        self.sent = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.sent:
            raise OSError("connection reset reading s3://bucket/c.png?X-Amz-Signature=SECRET-SIG")
        self.sent = True
        buffer[: len(buffer)] = b"\x89PNG" + b"\0" * (len(buffer) - 4)
        return len(buffer)


def test_a_cover_that_cannot_be_read_is_left_out_named_and_logged(team, media, monkeypatch, caplog):
    """A cover whose file failed partway through its reading ended the export with a 500 (half its entry
    written): now it is left out, its post exported without it, the README names it, and the server's log
    says which post, without the storage's words (which may carry a signed address)."""
    from blog import export

    with_cover(make_post(team.blog, "Kept"), files.png())
    broken = with_cover(make_post(team.blog, "Broken"), files.png())
    gone = with_cover(make_post(team.blog, "Gone"), files.png())
    Post.objects.filter(pk=gone.pk).update(cover_ref="covers/1/never-saved.png")
    real = export.default_storage.open

    def opening(name, mode="rb"):
        return io.BufferedReader(BrokenFile()) if name == broken.cover_ref else real(name, mode)

    monkeypatch.setattr(export.default_storage, "open", opening)
    with caplog.at_level("WARNING", logger="blog.export"):
        archive = download(browser(team.owner))
    assert archive.testzip() is None
    assert sorted(archive.namelist()) == [
        "README.txt",
        "covers/kept.png",
        "posts/broken.md",
        "posts/gone.md",
        "posts/kept.md",
    ]
    assert archive.read("covers/kept.png") == files.png()
    assert "cover" not in split(archive.read("posts/broken.md"))[0]
    assert "cover" not in split(archive.read("posts/gone.md"))[0]
    readme = archive.read("README.txt").decode()
    assert "Covers not included (their files could not be read): posts/broken.md, posts/gone.md\n" in readme
    logged = [r.getMessage() for r in caplog.records if r.name == "blog.export"]
    assert logged == [
        f"export: the cover of post {broken.pk} ({broken.cover_ref}) was left out: OSError",
        f"export: the cover of post {gone.pk} (covers/1/never-saved.png) was left out: FileNotFoundError",
    ]
    assert "SECRET" not in caplog.text


def test_an_export_whose_covers_all_arrive_says_nothing_of_covers_left_out(team, media):
    with_cover(make_post(team.blog, "Kept"), files.png())
    assert "not included" not in download(browser(team.owner)).read("README.txt").decode()


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_only_the_owner_exports_as_only_the_owner_sees_the_members_screen(team, role):
    client = browser(team.user(role))
    assert client.get("/blogs/notes/members/").status_code == 404
    assert client.get(URL).status_code == 404
    assert 'href="/blogs/notes/export/"' not in client.get("/blogs/notes/").content.decode()


def test_signed_out_is_sent_to_sign_in_and_a_post_is_refused(team):
    response = browser().get(URL)
    assert (response.status_code, response["Location"]) == (302, f"/accounts/login/?next={URL}")
    assert browser(team.owner).post(URL).status_code == 405
    assert 'href="/blogs/notes/export/">Export</a>' in browser(team.owner).get("/blogs/notes/").content.decode()


@pytest.mark.parametrize("posts", [3, 30])
def test_the_exports_queries_do_not_grow_with_its_posts(team, media, posts, django_assert_max_num_queries):
    for n in range(posts):
        post = make_post(team.blog, f"Post {n}", f"Body {n}", published=n % 2 == 0, author=team.editor)
        if n % 3 == 0:
            with_cover(post, files.png())
    client = browser(team.owner)
    client.get("/blogs/notes/")  # (the session's first use, a login's queries, is not the export's)
    with django_assert_max_num_queries(5):
        archive = download(client)
    assert len(archive.namelist()) == 1 + posts + len(range(0, posts, 3))


GEVENT_EXPORT = """
from gevent import monkey; monkey.patch_all()
import io, os, types, zipfile
from datetime import UTC, datetime
import django, gevent
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
django.setup()
from blog.export import write_archive

when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
posts = [
    types.SimpleNamespace(pk=n, slug=f"post-{n}", title=f"Post {n}", body="word " * 2000, status="draft",
                          created_at=when, updated_at=when, published_at=None, author=None, cover_ref="")
    for n in range(200)
]
ticks = []
def other_request():
    while True:
        ticks.append(1)
        gevent.sleep(0)
gevent.spawn(other_request)
gevent.sleep(0)
out = io.BytesIO()
before = len(ticks)
write_archive(out, types.SimpleNamespace(title="T", slug="t", description=""), posts, when)
print(len(ticks) - before, len(zipfile.ZipFile(out).namelist()))
"""


def test_a_long_export_lets_the_gevent_workers_other_requests_run_between_posts():
    """Zipping posts is CPU work: under gevent nothing else would run until the whole archive is written."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", GEVENT_EXPORT], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ran, entries = map(int, done.stdout.split())
    assert entries == 201
    assert ran >= 199  # (once after each post)


def test_one_person_runs_one_export_at_a_time(team, other_team, media, monkeypatch):
    """Nothing limited how many exports ran at once, each holding a request and a database connection
    until its ZIP was written. A second export of the same person while one runs (another tab, a double
    click) is answered 429 with a calm page and Retry-After; another person's is not held up, and the
    person's next export, once the first is written (or has failed), runs."""
    from blog import export

    make_post(team.blog, "Kept")
    owner = browser(team.owner)
    real, during = export.blog_archive, {}

    def meanwhile(blog):
        if not during:  # (the first export only: the others run as they are)
            during["started"] = True
            during["again"] = browser(team.owner).get(URL)  # (a second tab of the same person)
            during["other"] = browser(other_team.owner).get(f"/blogs/{other_team.blog.slug}/export/")
        return real(blog)

    monkeypatch.setattr(export, "blog_archive", meanwhile)
    archive = download(owner)
    assert "posts/kept.md" in archive.namelist()
    again = during["again"]
    assert (again.status_code, again["Retry-After"]) == (429, str(export.RETRY_SECONDS))
    text = again.content.decode()
    assert "still being written" in text and 'href="/blogs/notes/"' in text
    assert "no-cache" in again["Cache-Control"]
    assert during["other"].status_code == 200

    monkeypatch.setattr(export, "blog_archive", real)
    download(owner)  # (the first one's lock released once its ZIP was written)

    def failing(blog):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(export, "blog_archive", failing)
    with pytest.raises(RuntimeError):
        owner.get(URL)
    monkeypatch.setattr(export, "blog_archive", real)
    download(owner)  # (and released when it failed)
