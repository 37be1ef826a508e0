"""A blog's import: its owner uploads an export's ZIP (or Markdown files) and gets its posts back."""

from __future__ import annotations

import io
import json
import os
import zipfile
from datetime import UTC, datetime

import pytest
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from agent import events
from blog import export, imports, live, services
from blog.access import ROLE_SCOPES
from blog.grants import Actor
from blog.models import Post, PostRevision
from tests import files
from tests.blog.conftest import PASSWORD, browser, make_post
from tests.blog.test_export import with_cover
from tests.blog.test_slow_markdown import ON_SQLITE, sqlite_env
from tests.gevent_probe import UNDER_GEVENT, run_probe

URL = "/blogs/notes/import/"


def stored_covers(media) -> list[str]:
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()) if media.exists() else []


def archive(entries: dict[str, bytes | str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return out.getvalue()


def upload(client, data: bytes, name: str = "blog.zip", keep: bool = False):
    form = {"file": SimpleUploadedFile(name, data)}
    if keep:
        form["keep_published"] = "on"
    return client.post(URL, form)


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def titles(blog) -> list[str]:
    return sorted(Post.objects.filter(blog=blog).values_list("title", flat=True))


def test_the_owner_imports_an_archive_as_drafts_with_covers_revisions_and_their_own_addresses(team, media):
    make_post(team.blog, "Taken", "already here")
    cover = files.png()
    response = upload(
        browser(team.owner),
        archive(
            {
                "posts/taken.md": '---\ntitle: "Taken"\nstatus: "published"\ncreated: "1999-01-01T00:00:00+00:00"\n'
                'cover: "covers/taken.png"\n---\nLine one\r\nline two',
                "posts/plain.md": "# A heading title\n\nText.",
                "covers/taken.png": cover,
                "README.txt": "x",
            }
        ),
    )
    assert (response.status_code, response["Location"]) == (302, "/blogs/notes/")
    assert said(response) == ["Imported 2 posts as drafts; 1 cover."]
    imported = Post.objects.filter(blog=team.blog).exclude(body="already here").order_by("title")
    heading, taken = imported
    assert (heading.title, heading.body, heading.status, heading.author) == (
        "A heading title",
        "# A heading title\n\nText.",
        Post.DRAFT,
        team.owner,
    )
    assert (taken.title, taken.slug, taken.body, taken.status) == ("Taken", "taken-2", "Line one\nline two", Post.DRAFT)
    assert taken.created_at.year == datetime.now(UTC).year  # (the file's dates are not trusted)
    assert (taken.cover_type, taken.cover_ref.startswith(f"covers/{team.blog.pk}/")) == ("image/png", True)
    assert PostRevision.objects.filter(post__in=imported, action="create", user=team.owner).count() == 2


def test_kept_published_posts_are_published_through_the_write_path(team, media):
    data = archive(
        {"posts/a.md": '---\ntitle: "A"\nstatus: "published"\n---\nA', "posts/b.md": "---\ntitle: B\n---\nB"}
    )
    response = upload(browser(team.owner), data, keep=True)
    assert said(response) == ["Imported 2 posts (1 kept published)."]
    a, b = Post.objects.filter(blog=team.blog).order_by("title")
    assert (a.status, a.published_at is not None, b.status) == (Post.PUBLISHED, True, Post.DRAFT)
    assert list(PostRevision.objects.filter(post=a).order_by("pk").values_list("action", flat=True)) == [
        "create",
        "publish",
    ]


@pytest.mark.parametrize(
    "name, text, title, body",
    [
        ("first-post.md", "Just words.\n", "first-post", "Just words.\n"),
        ("x.markdown", "Intro\n\n# The Title #\n", "The Title", "Intro\n\n# The Title #\n"),
        (
            "y.md",
            "---\ntitle: 'It''s mine' # a comment\ntags:\n  - a\n  - b\ndate: 2020-01-01\n---\nBody",
            "It's mine",
            "Body",
        ),
        ("z.md", "---\nnot closed\n\nBody", "z", "---\nnot closed\n\nBody"),  # (no closing line: all body)
        ("n.md", "---\ntitle: 2024\nstatus: [draft]\nextra: &a {x: *a}\n---\nBody", "2024", "Body"),  # (YAML as it is)
        ("e.md", "---\n---\n# From the heading\n", "From the heading", "# From the heading\n"),  # (empty front matter)
        ("bom.md", '\ufeff---\ntitle: "Ünï"\n---\r\nBody\r\n', "Ünï", "Body\n"),
    ],
)
def test_one_markdown_file_with_or_without_front_matter(team, media, name, text, title, body):
    response = upload(browser(team.owner), text.encode(), name=name)
    assert response.status_code == 302, response.content.decode()
    post = Post.objects.get(blog=team.blog)
    assert (post.title, post.body, post.status) == (title, body, Post.DRAFT)


@pytest.mark.parametrize("role", ["editor", "author", "viewer", "outsider"])
def test_only_the_owner_imports(team, role, media):
    client = browser(team.user(role))
    assert client.get(URL).status_code == 404
    assert upload(client, archive({"a.md": "x"})).status_code == 404
    assert 'href="/blogs/notes/import/"' not in client.get("/blogs/notes/").content.decode()
    assert not Post.objects.exists()


def test_signed_out_is_sent_to_sign_in_and_the_owner_sees_the_form_and_its_link(team):
    response = browser().get(URL)
    assert (response.status_code, response["Location"]) == (302, f"/accounts/login/?next={URL}")
    assert 'href="/blogs/notes/import/">Import</a>' in browser(team.owner).get("/blogs/notes/").content.decode()
    page = browser(team.owner).get(URL).content.decode()
    assert 'enctype="multipart/form-data"' in page and 'name="csrfmiddlewaretoken"' in page
    assert '<label for="import-file">' in page and 'id="import-file" name="file"' in page
    assert '<input type="checkbox" name="keep_published">' in page  # (not ticked)
    assert "At most 50 MB and 2,000 posts." in page


def test_a_post_without_the_csrf_token_is_refused(team, media):
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=team.owner.username, password=PASSWORD)
    response = upload(client, archive({"a.md": "x"}))
    assert response.status_code == 403
    assert not Post.objects.exists()
    token = client.get(URL).context["csrf_token"]
    form = {"file": SimpleUploadedFile("a.md", b"x"), "csrfmiddlewaretoken": str(token)}
    assert client.post(URL, form).status_code == 302


def refused(client, data: bytes, name: str = "blog.zip") -> str:
    response = upload(client, data, name=name)
    assert response.status_code in (400, 413), response.status_code
    assert not Post.objects.exists()
    return response.context["error"]


def test_files_that_are_neither_zip_nor_utf8_markdown_are_refused(team, media):
    client = browser(team.owner)
    assert (
        refused(client, b"GIF89a...", "x.gif") == "Choose a ZIP archive (such as an export) or a Markdown file (.md)."
    )
    assert refused(client, "é".encode("latin-1"), "x.md") == "“x.md” is not UTF-8 text: nothing was imported."
    assert refused(client, b"PK\x03\x04 broken") == "Choose a ZIP archive (such as an export) or a Markdown file (.md)."
    assert refused(client, archive({"README.txt": "hi"})) == (
        "That archive holds no Markdown files (.md), so there are no posts in it."
    )
    assert refused(client, archive({"posts/a.md": "ok", "posts/b.md": b"\xff\xfe"})) == (
        "“posts/b.md” is not UTF-8 text: nothing was imported."
    )
    assert refused(client, b'---\ntitle: "unclosed\n---\n', "q.md") == (
        "Line 2 of “q.md” is not a front matter line (`key: value`): nothing was imported."
    )
    assert refused(client, b"---\njust words\n---\n", "q.md") == (
        "Line 2 of “q.md” is not a front matter line (`key: value`): nothing was imported."
    )
    assert refused(client, b"---\ntitle: a\n  b: c\n---\n", "q.md") == (  # (an error further down: its line)
        "Line 3 of “q.md” is not a front matter line (`key: value`): nothing was imported."
    )
    assert refused(client, ("---\n" + "x: 1\n" * 20_000 + "---\n").encode(), "big.md") == (
        "The front matter of “big.md” is longer than 65,536 characters: nothing was imported."
    )
    assert refused(client, f'---\ntitle: "{"t" * 201}"\n---\n'.encode(), "long.md") == (
        "“long.md”: A title can be at most 200 characters. Nothing was imported."
    )


@pytest.mark.parametrize(
    "name", ["../evil.md", "/abs.md", "posts\\win.md", "posts/../../x.md", "C:/x.md", "covers/../../a.png"]
)
def test_an_archive_with_a_name_leading_out_is_refused_whole(team, media, name):
    data = archive({"posts/fine.md": "fine", name: "x"})
    assert refused(browser(team.owner), data) == (
        f"That archive holds a file named “{name}”, which is not safe: nothing was imported."
    )
    assert stored_covers(media) == []


def test_a_cover_is_only_ever_looked_up_by_its_name_in_the_archive(team, media):
    data = archive({"posts/a.md": '---\ncover: "../../../etc/passwd"\n---\nA', "covers/a.png": files.png()})
    response = upload(browser(team.owner), data)
    assert said(response) == ["Imported 1 post as a draft; skipped: the cover of “posts/a.md” (not in the archive)."]
    assert Post.objects.get().cover_ref == ""


def huge_entry_archive(declared: int) -> bytes:
    """An archive whose one post declares `declared` bytes uncompressed (its record only: nothing that big exists)."""
    data = bytearray(archive({"posts/a.md": "small"}))
    # The central directory's record of the entry: its uncompressed size is at offset 24 (APPNOTE 4.3.12).
    at = data.rfind(b"PK\x01\x02")
    data[at + 24 : at + 28] = declared.to_bytes(4, "little")
    return bytes(data)


def test_archive_caps_are_checked_from_its_records_before_anything_is_read(team, media, monkeypatch):
    read = []
    monkeypatch.setattr(imports, "read_entry", lambda *a: read.append(a) or b"")
    client = browser(team.owner)
    assert refused(client, huge_entry_archive(4_000_000_000)) == (
        "“posts/a.md” is larger than the 1 MB a post's file may be."
    )
    zeros = archive({"posts/a.md": "a", **{f"covers/{n}.png": bytes(50 * 1024 * 1024) for n in range(6)}})
    assert len(zeros) < 1024 * 1024  # (300 MB of zeros: a bomb, well within the upload's size)
    assert refused(client, zeros) == "That archive unpacks to more than the 256 MB an import takes."
    many = archive({f"posts/{n}.md": "" for n in range(imports.MAX_POSTS + 1)})
    assert refused(client, many) == "That archive holds 2,001 posts: an import takes at most 2,000."
    assert read == []


def test_too_many_entries_are_refused_from_the_end_record_before_zipfile_reads_the_directory(team, media, monkeypatch):
    data = bytearray(archive({"posts/a.md": "a"}))
    at = data.rfind(b"PK\x05\x06")  # the end record declares its entries at 8 and 10 (APPNOTE 4.3.16)
    data[at + 8 : at + 12] = (imports.MAX_ENTRIES + 1).to_bytes(2, "little") * 2
    opened = []
    monkeypatch.setattr(imports.zipfile, "ZipFile", lambda *a, **k: opened.append(a))
    assert (
        refused(browser(team.owner), bytes(data)) == "That archive holds too many files: an import takes at most 4,016."
    )
    assert opened == []


def test_a_crafted_form_with_two_files_is_told_to_choose_one(team, media):
    md = b"# A post\n\nWords.\n"
    response = browser(team.owner).post(URL, {"file": [SimpleUploadedFile("a.md", md), SimpleUploadedFile("b.md", md)]})
    assert response.status_code == 400
    assert response.context["error"] == "Choose one file to import: nothing was imported."
    assert not Post.objects.exists()


def test_an_upload_over_the_imports_cap_is_refused_with_the_cap(team, media, monkeypatch):
    monkeypatch.setattr(imports, "MAX_UPLOAD_BYTES", 1000)
    client = browser(team.owner)
    data = archive({"posts/a.md": os.urandom(2000)})  # (under the content-length cap, over the file's)
    assert refused(client, data) == "That file is larger than the 0 MB an import takes: nothing was imported."
    monkeypatch.setattr("blog.team_views.OVERHEAD", 0)
    assert refused(client, data) == "That file is larger than the 0 MB an import takes: nothing was imported."


def test_a_broken_or_oversized_cover_is_skipped_and_its_post_kept(team, media, settings):
    settings.AGENT_MAX_UPLOAD_MB = 0.01  # 10 KB
    data = archive(
        {
            "posts/a.md": '---\ntitle: "A"\ncover: "covers/a.png"\n---\nA',
            "posts/b.md": '---\ntitle: "B"\ncover: "covers/b.png"\n---\nB',
            "posts/c.md": '---\ntitle: "C"\ncover: "covers/c.svg"\n---\nC',
            "posts/d.md": '---\ntitle: "D"\ncover: "covers/d.png"\n---\nD',
            "covers/a.png": b"\x89PNG\r\n\x1a\nnot really",
            "covers/b.png": os.urandom(20_000),
            "covers/c.svg": b"<svg xmlns='http://www.w3.org/2000/svg'></svg>",
            "covers/d.png": files.png(),
            "notes/other.txt": "ignored",
        }
    )
    response = upload(browser(team.owner), data)
    assert said(response) == [
        "Imported 4 posts as drafts; 1 cover; skipped: 1 other file (neither a post nor a cover); "
        "the cover of “posts/a.md” (“a.png” couldn't be read as an image); "
        "the cover of “posts/b.md” (larger than the 0 MB a cover may be); "
        "the cover of “posts/c.md” (“c.svg” can't be attached: SVG and HTML files are not accepted)."
    ]
    assert titles(team.blog) == ["A", "B", "C", "D"]
    assert list(Post.objects.exclude(cover_ref="").values_list("title", flat=True)) == ["D"]
    assert len(stored_covers(media)) == 1


def test_a_failure_midway_leaves_no_posts_and_no_stored_covers(team, media):
    entries = {f"posts/{n}.md": f'---\ntitle: "P{n}"\ncover: "covers/{n}.png"\n---\nx' for n in range(3)}
    entries.update({f"covers/{n}.png": files.png() for n in range(3)})
    entries["posts/9.md"] = f'---\ntitle: "{"x" * 300}"\n---\n'  # (after the others, in the archive's order)
    assert refused(browser(team.owner), archive(entries)) == (
        "“posts/9.md”: A title can be at most 200 characters. Nothing was imported."
    )
    assert not PostRevision.objects.exists()
    assert stored_covers(media) == []


def test_a_failure_inside_the_write_path_also_leaves_nothing(team, media, monkeypatch):
    entries = {"posts/a.md": '---\ncover: "covers/a.png"\n---\nA', "posts/b.md": "B", "covers/a.png": files.png()}
    calls = []
    real = services.post_create

    def failing(**kwargs):
        calls.append(kwargs["title"])
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        return real(**kwargs)

    monkeypatch.setattr(services, "post_create", failing)
    with pytest.raises(RuntimeError):
        imports.import_upload(
            blog=team.blog,
            actor=Actor(team.owner, ROLE_SCOPES["owner"]),
            upload=io.BytesIO(archive(entries)),
            name="x.zip",
            keep_published=False,
        )
    assert calls == ["a", "b"]
    assert not Post.objects.exists() and stored_covers(media) == []


@pytest.mark.parametrize("posts", [5, 20])
def test_the_imports_queries_grow_linearly_with_its_posts(team, media, posts, django_assert_max_num_queries):
    """Each post costs its own eleven queries (its address, its row and revision, its publication, their savepoints),
    the same for the 20th as for the 5th, titles shared or not: a linear bound, not a quadratic one."""
    entries = {f"posts/{n}.md": f'---\ntitle: "Same"\nstatus: "published"\n---\n{n}' for n in range(posts)}
    client = browser(team.owner)
    client.get("/blogs/notes/")  # (the session's first use, a login's queries, is not the import's)
    with django_assert_max_num_queries(8 + 11 * posts):
        response = upload(client, archive(entries), keep=True)
    assert response.status_code == 302
    assert Post.objects.filter(status=Post.PUBLISHED).count() == posts


def test_an_export_imported_into_another_blog_gives_the_same_posts(team, other_team, media):
    owner = Actor(team.owner, ROLE_SCOPES["owner"])
    body = "# Heading\n\nA line with trailing spaces  \r\nand «ünïcödé», tabs\tand a last line without newline"
    make_post(team.blog, 'Quotes "here": colons: and \\ # too', body, published=True, author=team.editor)
    with_cover(Post.objects.get(title__startswith="Quotes"), files.png(), "image/png")
    services.post_create(blog=team.blog, actor=owner, title="Ärger über Äpfel", body="---\nNoch nicht.\r\n\n  ")
    services.post_create(blog=team.blog, actor=owner, title="秋の鳥", body="")
    make_post(team.blog, "Same", "one", published=True)
    services.post_create(blog=team.blog, actor=owner, title="Same", body="two")
    out = io.BytesIO()
    posts = Post.objects.filter(blog=team.blog).select_related("author").order_by("pk")
    export.write_archive(out, team.blog, posts, datetime.now(UTC))

    client = browser(other_team.owner)
    form = {"file": SimpleUploadedFile("notes.zip", out.getvalue()), "keep_published": "on"}
    response = client.post("/blogs/elsewhere/import/", form)
    assert said(response) == ["Imported 5 posts (2 kept published); 1 cover."]

    def shape(blog):
        rows = Post.objects.filter(blog=blog).order_by("title", "pk")
        return [(p.title, services.clean_body(p.body), p.status, p.cover_type) for p in rows]

    assert shape(other_team.blog) == shape(team.blog)
    assert {p.author for p in Post.objects.filter(blog=other_team.blog)} == {other_team.owner}
    moved = Post.objects.get(blog=other_team.blog, title__startswith="Quotes")
    with open(media / moved.cover_ref, "rb") as fh:
        assert fh.read() == files.png()


def test_the_blogs_open_pages_hear_of_an_import_in_one_message_once_committed(
    team, media, monkeypatch, django_capture_on_commit_callbacks
):
    """Each post created or published tells the blog's open pages, as any change does; an import tells them
    all at once: one message on the bus (one round trip to Redis) and one event a page, not one a post."""
    published: list[tuple[str, list]] = []
    monkeypatch.setattr(events, "publish", lambda channel, message: published.append((channel, message)))
    data = archive({f"posts/{n}.md": f'---\ntitle: "P{n}"\nstatus: "published"\n---\nx' for n in range(30)})
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(browser(team.owner), data, keep=True)
    assert said(response) == ["Imported 30 posts (30 kept published)."]
    ids = list(Post.objects.filter(blog=team.blog).order_by("pk").values_list("pk", flat=True))
    effects = [
        effect for pk in ids for effect in ({"type": "post.created", "id": pk}, {"type": "post.published", "id": pk})
    ]
    assert published == [(live.channel_name(team.blog), effects)]


def test_an_import_refused_midway_tells_the_open_pages_nothing(
    team, media, monkeypatch, django_capture_on_commit_callbacks
):
    published: list[tuple[str, list]] = []
    monkeypatch.setattr(events, "publish", lambda channel, message: published.append((channel, message)))
    entries = {f"posts/{n}.md": f'---\ntitle: "P{n}"\n---\nx' for n in range(3)}
    entries["posts/9.md"] = f'---\ntitle: "{"x" * 300}"\n---\n'
    with django_capture_on_commit_callbacks(execute=True):
        refused(browser(team.owner), archive(entries))
    assert published == [] and not Post.objects.exists()


def test_a_batch_announces_its_own_blogs_changes_only(team, other_team):
    batch = live.Batch(team.blog)
    with pytest.raises(ValueError, match="its own blog only"):
        batch.announce(other_team.blog, {"type": "post.created", "id": 1})


IMPORT_BESIDE_A_WRITE = f"""{UNDER_GEVENT}
import io, json, zipfile
from django.db import OperationalError
{ON_SQLITE}
from blog import imports

upload = io.BytesIO()
with zipfile.ZipFile(upload, "w") as zf:
    for n in range(300):
        zf.writestr(f"posts/post-{{n}}.md", f"---\\ntitle: Post {{n}}\\n---\\nWords of post {{n}}.\\n")

def importing():
    return imports.import_upload(blog=blog, actor=actor, upload=upload, name="blog.zip", keep_published=False)

wrote = []
def another_request(n=0):  # (another person's, on the same worker: a chat's turn writes its messages so)
    while True:
        try:
            get_user_model().objects.create(username=f"bob{{n}}")
            wrote.append("written")
        except OperationalError as exc:
            wrote.append(str(exc))
            return
        n += 1
        if done.ready():
            return
        gevent.sleep(0)

done = gevent.spawn(importing)
other = gevent.spawn(another_request)
gevent.joinall([done, other])
print(json.dumps([done.get().posts, sorted(set(wrote))]))
"""


def test_another_request_writing_while_an_import_runs_on_sqlite_waits_for_it_and_is_written():
    """On SQLite an import's transaction holds the database's write lock from its start. It let the worker's
    other requests run between its posts, and one that wrote waited in SQLite's busy handler, which sleeps
    without yielding: the import could not go on, the whole worker stalled for the busy timeout (20 s), and
    that request failed ("database is locked"). On SQLite the import no longer yields while it holds the lock."""
    out = run_probe(IMPORT_BESIDE_A_WRITE, sqlite_env())
    assert json.loads(out.stdout.splitlines()[-1]) == [300, ["written"]]
