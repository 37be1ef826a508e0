"""A blog's export: every post as Markdown with its cover, in one ZIP its owner downloads and keeps.

The archive is written into a spooled temporary file (in memory up to SPOOL_BYTES, on disk past it)
while the posts are read a chunk at a time, so a blog of thousands of posts is never held whole in
memory, neither as rows nor as bytes. Each post's file name is its slug when that is plain ASCII
(`[a-z0-9-]`), else `<pk>-<its ASCII letters>`; either way unique in the archive and never a path.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO

from django.core.cache import cache
from django.core.files.storage import default_storage
from django.utils import timezone
from django.utils.text import slugify

from agent.runtime import let_others_run
from blog.covers import EXTENSIONS
from blog.models import Blog, Post
from config.cache import UNAVAILABLE, health, needed

logger = logging.getLogger("blog.export")

#: The archive stays in memory up to this size, then spills to a temporary file on disk.
SPOOL_BYTES = 4 * 1024 * 1024
#: Posts read from the database at a time.
CHUNK = 500

#: One export a person at a time: the longest an export holds its place (one whose worker died gives it
#: up then), and the wait a second one is told (Retry-After).
RUNNING_SECONDS = 15 * 60
RETRY_SECONDS = 15

_PLAIN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def archive_name(blog: Blog, now: datetime) -> str:
    return f"{blog.slug}-{now.date().isoformat()}.zip"


def file_stem(post: Post, taken: set[str]) -> str:
    """The post's name in the archive, only `[a-z0-9-]`, not in `taken` (to which it is added)."""
    stem = post.slug if _PLAIN.fullmatch(post.slug) else ""
    if not stem:  # a slug in another script, or one made by hand: the pk keeps it unique, its letters readable
        letters = slugify(post.slug or post.title).replace("_", "-")
        stem = "-".join(part for part in (str(post.pk), *letters.split("-")) if part)
    while stem in taken:  # ("ärger" and "arger" read alike in ASCII; the pk tells them apart)
        stem = f"{stem}-{post.pk}"
    taken.add(stem)
    return stem


def cover_extension(post: Post) -> str:
    ext = EXTENSIONS.get(post.cover_type) or post.cover_ref.rsplit(".", 1)[-1].lower()
    return ext if re.fullmatch(r"[a-z0-9]{1,8}", ext) else "bin"


def front_matter(post: Post, cover: str) -> str:
    """YAML front matter; every string is a JSON string, which is valid YAML whatever it holds."""
    fields: dict[str, object] = {
        "title": post.title,
        "status": post.status,
        "created": post.created_at.isoformat(),
        "updated": post.updated_at.isoformat(),
    }
    if post.status == Post.PUBLISHED and post.published_at:
        fields["published"] = post.published_at.isoformat()
    fields["author"] = post.author.username if post.author else None
    if cover:
        fields["cover"] = cover
    lines = [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()]
    return "---\n" + "\n".join(lines) + "\n---\n"


def _add_cover(archive: zipfile.ZipFile, post: Post, stem: str) -> str | None:
    """The cover copied into the archive (stored as is: images are compressed already); its archive
    name, "" when the post has none, or None when its file cannot be read, gone from storage or failing
    partway through (the post is exported without it, and the server's log says so).

    The file is read whole into a spooled copy before its entry is begun: an entry cut off midway
    could not be taken out of the archive again."""
    if not post.cover_ref:
        return ""
    name = f"covers/{stem}.{cover_extension(post)}"
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as copy:
        try:
            with default_storage.open(post.cover_ref, "rb") as source:
                shutil.copyfileobj(source, copy)
        except Exception as exc:  # (any storage's failure: a missing file, a reset connection, a bad disk)
            # The failure's kind only: a storage's message may carry a signed address or a bucket's credentials.
            logger.warning(
                "export: the cover of post %s (%s) was left out: %s", post.pk, post.cover_ref, type(exc).__name__
            )
            return None
        copy.seek(0)
        with archive.open(_entry(name, post.updated_at, zipfile.ZIP_STORED), "w") as target:
            shutil.copyfileobj(copy, target)
    return name


def _entry(name: str, when: datetime, compress_type: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """An archive entry dated `when` (UTC), readable by all once unpacked (a bare ZipInfo has no mode bits)."""
    t = when.astimezone(UTC)
    info = zipfile.ZipInfo(name, (max(t.year, 1980), t.month, t.day, t.hour, t.minute, t.second))
    info.compress_type = compress_type
    info.external_attr = 0o644 << 16
    return info


def write_archive(out: IO[bytes], blog: Blog, posts: Iterable[Post], now: datetime) -> int:
    """Write the blog's archive to `out`; the number of posts in it."""
    taken: set[str] = set()
    count = 0
    left_out: list[str] = []  # the posts whose cover could not be read
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for post in posts:
            stem = file_stem(post, taken)
            cover = _add_cover(archive, post, stem)
            if cover is None:
                left_out.append(f"posts/{stem}.md")
            text = front_matter(post, cover or "").encode() + post.body.encode()
            archive.writestr(_entry(f"posts/{stem}.md", post.updated_at), text)
            count += 1
            # Compressing thousands of posts is CPU work that would otherwise hold the worker throughout.
            let_others_run()
        about = f"Description: {blog.description}\n" if blog.description else ""  # (one line: `clean_description`)
        readme = (
            f"Blog: {blog.title}\nAddress: {blog.slug}\n{about}Exported: {now.isoformat(timespec='seconds')}\n"
            f"Posts: {count}\n\nposts/ holds each post as Markdown after a YAML front matter block;\n"
            "covers/ holds the cover images the front matter names.\n"
        )
        if left_out:
            readme += f"\nCovers not included (their files could not be read): {', '.join(left_out)}\n"
        archive.writestr(_entry("README.txt", now), readme)
    return count


def blog_archive(blog: Blog) -> tuple[IO[bytes], str]:
    """The blog's archive as an open file at its start, and the name to download it by."""
    now = timezone.now().astimezone(UTC)
    posts = Post.objects.filter(blog=blog).select_related("author").order_by("pk").iterator(chunk_size=CHUNK)
    out = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    try:
        write_archive(out, blog, posts, now)
    except BaseException:
        out.close()
        raise
    out.seek(0)
    return out, archive_name(blog, now)


class ExportRunning(Exception):
    """The person's previous export is still being written."""


@contextmanager
def one_at_a_time(user_id: int) -> Iterator[None]:
    """Hold the person's one place for an export while the block runs; ExportRunning when another holds it.

    In Django's cache (`cache.add`, which sets a key only when absent): shared by every worker and host
    with `CACHE_URL`, else per worker process. While that cache does not answer no place can be taken,
    and none is: CacheUnavailable (the limit holds; the export waits for the cache). A place that cannot
    be given back once the export is written (the cache went away meanwhile) lapses by itself after
    RUNNING_SECONDS; the export is not failed for it."""
    key, mine = f"blog:export-running:{user_id}", uuid.uuid4().hex
    with needed("exports are refused until it answers"):
        taken = cache.add(key, mine, RUNNING_SECONDS)
    if not taken:
        raise ExportRunning
    try:
        yield
    finally:
        try:  # (tried even in the moment the process leaves the cache alone: else the place stays taken)
            if cache.get(key) == mine:  # (not a later export's place, should this one have outlived its own)
                cache.delete(key)
        except UNAVAILABLE as exc:
            health.failed("an export's place is left to lapse", exc)
