"""A blog's import: the way back in for an export (`blog/export.py`), or another Markdown blog's files.

The upload is a ZIP or one Markdown file. Every `.md` / `.markdown` entry of a ZIP, in whatever folder,
is a post: an optional front matter block (`---`, YAML, `---`), then its body, kept exactly
(`clean_body` aside). Its title is the front matter's `title`, else its first `# Heading`, else its file
name; its `cover` names another entry of the archive. Entry names are only ever compared with other
names, never used as paths, and an archive holding one that looks like a path out (`..`, absolute, a
backslash, a drive) is refused whole.

Before anything is read, the archive's own records are checked against the caps below: its end record
(the number of entries and the size of its directory, before `zipfile` builds an object per entry), then
each entry's declared size and their total. Every read is bounded by the declared size as well.

The posts are created in one transaction through the one write path (`services.post_create`, then
`post_publish` for a post whose status was published when the owner keeps those published): each has
its revision and its own address, and the blog's open pages hear of them all in one message once the
import is committed (`live.Batch`). A post that cannot be imported
(not UTF-8, front matter that is not a YAML mapping, a title refused) refuses the whole import,
naming it: nothing is created, and the covers stored for it are deleted again. A cover that cannot be
used (missing, too large, not an image) is left out and said so; its post is imported without it.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import yaml
from django.core.files.storage import default_storage
from django.db import transaction

from agent.runtime import let_others_run
from agent.uploads import MB, Limits
from blog import covers, live, services
from blog.access import PUBLISH, WRITE
from blog.grants import Actor
from blog.models import Blog, Post
from blog.services import OperationError

logger = logging.getLogger("blog.imports")

#: The largest upload the Import page takes (its own cap: AGENT_MAX_UPLOAD_MB is for a chat's attachments).
MAX_UPLOAD_BYTES = 50 * MB
#: The most posts one import creates.
MAX_POSTS = 2000
#: The most entries an archive may hold (each post and its cover, a README and a few more).
MAX_ENTRIES = 2 * MAX_POSTS + 16
#: The largest archive directory read (about 1 KB an entry): `zipfile` makes an object of each record.
MAX_DIRECTORY_BYTES = MAX_ENTRIES * 1024
#: One post's file, uncompressed: a body's 100,000 characters are at most 400,000 bytes of UTF-8.
MAX_POST_BYTES = 1 * MB
#: All of an archive's entries together, uncompressed (as their records declare them).
MAX_TOTAL_BYTES = 256 * MB
#: Skipped covers named one by one in the report; the rest are counted.
SKIPPED_SHOWN = 10

MARKDOWN_SUFFIXES = (".md", ".markdown")


class ImportRefused(Exception):
    """The upload cannot be imported and nothing was; `message` is safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Source:
    """One post as read from the upload: where it came from, what the write path is given."""

    name: str
    title: str
    body: str
    published: bool
    cover: str  # the archive name its front matter gives, "" for none


@dataclass
class Report:
    posts: int = 0
    published: int = 0
    covers: int = 0
    skipped: list[str] = field(default_factory=list)

    def message(self) -> str:
        """Imported N posts (M kept published) or as drafts; K covers; skipped: … (each part only when it
        has something to say)."""
        drafts = " as a draft" if self.posts == 1 else " as drafts"
        kept = f" ({self.published:,} kept published)" if self.published else drafts
        parts = [f"Imported {_count(self.posts, 'post')}{kept}"]
        if self.covers:
            parts.append(_count(self.covers, "cover"))
        if self.skipped:
            shown = self.skipped[:SKIPPED_SHOWN]
            if len(self.skipped) > SKIPPED_SHOWN:
                shown.append(f"{len(self.skipped) - SKIPPED_SHOWN} more")
            parts.append(f"skipped: {'; '.join(shown)}")
        return "; ".join(parts) + "."


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def shown_name(name: str) -> str:
    """An entry's name as a message shows it: no control characters, at most 120 characters."""
    name = "".join(c if c.isprintable() else "?" for c in name)
    return name if len(name) <= 120 else name[:119] + "…"


def import_upload(*, blog: Blog, actor: Actor, upload: IO[bytes], name: str, keep_published: bool) -> Report:
    """Import the uploaded ZIP or Markdown file `name` into the blog, all or nothing (ImportRefused)."""
    if WRITE not in actor.scopes or (keep_published and PUBLISH not in actor.scopes):
        raise ImportRefused("You can't create or publish posts on this blog.")
    if zipfile.is_zipfile(upload):
        upload.seek(0)
        check_end_record(upload)
        try:
            archive = zipfile.ZipFile(upload)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            raise ImportRefused("That file is not a ZIP archive that can be read.") from None
        with archive:
            posts, entries, report = plan(archive)
            sources = (read_post(archive, info) for info in posts)
            return _write(blog, actor, sources, archive, entries, report, keep_published)
    upload.seek(0)
    if not name.lower().endswith(MARKDOWN_SUFFIXES):
        raise ImportRefused("Choose a ZIP archive (such as an export) or a Markdown file (.md).")
    data = upload.read(MAX_POST_BYTES + 1)
    if len(data) > MAX_POST_BYTES:
        raise ImportRefused(f"“{shown_name(name)}” is larger than the {MAX_POST_BYTES // MB} MB a post's file may be.")
    return _write(blog, actor, iter([parse(name, data)]), None, {}, Report(), keep_published)


def check_end_record(upload: IO[bytes]) -> None:
    """Refuse an archive whose end record declares more entries, or a larger directory, than the caps,
    before `zipfile` reads its directory (ZIP's APPNOTE 4.3.16, and 4.3.14 for ZIP64)."""
    upload.seek(0, os.SEEK_END)
    size = upload.tell()
    tail_size = min(size, 22 + 0xFFFF)  # the record, then a comment of at most 65,535 bytes
    upload.seek(size - tail_size)
    tail = upload.read(tail_size)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        raise ImportRefused("That file is not a ZIP archive that can be read.")
    entries, directory = struct.unpack("<HI", tail[at + 10 : at + 16])
    locator = at - 20
    if (entries == 0xFFFF or directory == 0xFFFFFFFF) and locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        (offset,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
        upload.seek(offset)
        record = upload.read(56)
        if len(record) < 56 or record[:4] != b"PK\x06\x06":
            raise ImportRefused("That file is not a ZIP archive that can be read.")
        entries, directory = struct.unpack("<QQ", record[32:48])
    if entries > MAX_ENTRIES or directory > MAX_DIRECTORY_BYTES:
        raise ImportRefused(f"That archive holds too many files: an import takes at most {MAX_ENTRIES:,}.")


def unsafe(name: str) -> bool:
    """Whether an entry's name would lead out of a folder if it were ever used as a path (it never is)."""
    parts = name.split("/")
    return name.startswith("/") or "\\" in name or "\x00" in name or ".." in parts or bool(re.match(r"[A-Za-z]:", name))


def plan(archive: zipfile.ZipFile) -> tuple[list[zipfile.ZipInfo], dict[str, zipfile.ZipInfo], Report]:
    """The archive's posts and its entries by name, checked from its records alone (nothing is read)."""
    infos = archive.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ImportRefused(f"That archive holds too many files: an import takes at most {MAX_ENTRIES:,}.")
    entries: dict[str, zipfile.ZipInfo] = {}
    posts, others, total = [], 0, 0
    for info in infos:
        name = info.filename
        if unsafe(name):
            raise ImportRefused(
                f"That archive holds a file named “{shown_name(name)}”, which is not safe: nothing was imported."
            )
        if name in entries:
            raise ImportRefused(f"That archive holds “{shown_name(name)}” twice: nothing was imported.")
        entries[name] = info
        total += info.file_size
        if info.is_dir():
            continue
        if name.lower().endswith(MARKDOWN_SUFFIXES):
            if info.file_size > MAX_POST_BYTES:
                limit = MAX_POST_BYTES // MB
                raise ImportRefused(f"“{shown_name(name)}” is larger than the {limit} MB a post's file may be.")
            posts.append(info)
        elif not name.startswith("covers/") and name != "README.txt":
            others += 1
    if total > MAX_TOTAL_BYTES:
        raise ImportRefused(f"That archive unpacks to more than the {MAX_TOTAL_BYTES // MB} MB an import takes.")
    if not posts:
        raise ImportRefused("That archive holds no Markdown files (.md), so there are no posts in it.")
    if len(posts) > MAX_POSTS:
        raise ImportRefused(f"That archive holds {len(posts):,} posts: an import takes at most {MAX_POSTS:,}.")
    report = Report()
    if others:
        report.skipped.append(f"{_count(others, 'other file')} (neither a post nor a cover)")
    return posts, entries, report


def read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """An entry's bytes, reading at most `limit` (an entry larger than its record says is refused)."""
    try:
        with archive.open(info) as fh:
            data = fh.read(min(limit, info.file_size) + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError):
        raise ImportRefused(f"“{shown_name(info.filename)}” could not be read from the archive.") from None
    if len(data) > min(limit, info.file_size):
        raise ImportRefused(f"“{shown_name(info.filename)}” is larger than its archive says.")
    return data


def read_post(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Source:
    return parse(info.filename, read_entry(archive, info, MAX_POST_BYTES))


_OPEN = re.compile(r"---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.M)
_HEADING = re.compile(r"^#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*\r?$", re.M)


def parse(name: str, data: bytes) -> Source:
    """A post's file: its front matter's title, status and cover, and its body as written."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ImportRefused(f"“{shown_name(name)}” is not UTF-8 text: nothing was imported.") from None
    fields, body = split_front_matter(name, text)
    heading = _HEADING.search(body)
    stem = name.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    title = fields.get("title", "").strip() or (heading[1] if heading else "") or stem
    return Source(name, title, body, fields.get("status") == Post.PUBLISHED, fields.get("cover", ""))


def split_front_matter(name: str, text: str) -> tuple[dict[str, str], str]:
    """The front matter's `title`, `status` and `cover` and the body after it, byte for byte. The block is
    YAML (PyYAML's safe loader, its C one where built; an export writes each value as a JSON string, which
    is YAML too); other keys (tags, dates) are passed over. A file whose first `---` is never closed has
    none (Markdown reads that line as a rule): it is all body."""
    opened = _OPEN.match(text)
    closed = _CLOSE.search(text, opened.end()) if opened else None
    if not opened or not closed:
        return {}, text
    block, body = text[opened.end() : closed.start()], text[closed.end() :]
    if len(block) > MAX_FRONT_MATTER_CHARS:
        raise ImportRefused(
            f"The front matter of “{shown_name(name)}” is longer than {MAX_FRONT_MATTER_CHARS:,} characters: "
            "nothing was imported."
        )
    try:
        loaded = yaml.load(block, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader: plain data, no objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)  # (PyYAML's documented position of the error)
        at = min(mark.line, len(block.splitlines()) - 1) if mark is not None else 0  # (not past the block's end)
        raise ImportRefused(_not_front_matter(name, 2 + max(at, 0))) from None
    if loaded is None:
        return {}, body
    if not isinstance(loaded, dict):
        raise ImportRefused(_not_front_matter(name, 2))
    return {key: _text(loaded[key]) for key in FRONT_MATTER_KEYS if key in loaded}, body


#: The front matter's keys an import reads; the rest (dates, author, tags) is not trusted or not kept.
FRONT_MATTER_KEYS = ("title", "status", "cover")
#: The longest front matter block read (a post's own is a few lines); a longer one refuses its file.
MAX_FRONT_MATTER_CHARS = 64 * 1024
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # (libyaml's, when PyYAML was built with it)


def _not_front_matter(name: str, line: int) -> str:
    return f"Line {line} of “{shown_name(name)}” is not a front matter line (`key: value`): nothing was imported."


def _text(value: object) -> str:
    """A front matter value as text: a string as it is, a number or date as YAML wrote it, nothing else."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, list | dict):
        return ""
    return str(value)


def _write(
    blog: Blog,
    actor: Actor,
    sources: Iterator[Source],
    archive: zipfile.ZipFile | None,
    entries: dict[str, zipfile.ZipInfo],
    report: Report,
    keep_published: bool,
) -> Report:
    """Create the posts in one transaction; on any failure, none, and their covers deleted from storage."""
    stored: list[str] = []
    news = live.Batch(blog)  # (one message to the blog's open pages for the whole import, once committed)
    try:
        with transaction.atomic():
            for source in sources:
                cover = _cover(blog, source, archive, entries, report)
                if cover:
                    stored.append(cover[0])
                try:
                    post = services.post_create(
                        blog=blog,
                        actor=actor,
                        title=source.title,
                        body=source.body,
                        cover=cover,
                        announce=news.announce,
                    )
                except OperationError as exc:
                    raise ImportRefused(
                        f"“{shown_name(source.name)}”: {exc.public_message} Nothing was imported."
                    ) from None
                report.posts += 1
                if keep_published and source.published:
                    services.post_publish(post=post, actor=actor, announce=news.announce)
                    report.published += 1
                let_others_run()  # (between posts, on PostgreSQL; on SQLite this transaction holds the write lock)
            news.send()
    except BaseException:
        for key in stored:  # (post_create's own clean-up waits for a commit that will never come)
            _delete(key)
        raise
    return report


def _cover(
    blog: Blog, source: Source, archive: zipfile.ZipFile | None, entries: dict[str, zipfile.ZipInfo], report: Report
) -> services.Cover | None:
    """The post's cover stored from the archive, or None (and a line of the report saying why)."""
    if not source.cover:
        return None
    info = entries.get(source.cover)
    limit = Limits.from_settings().per_file
    why = ""
    if archive is None:
        why = "a Markdown file alone brings no images"
    elif info is None or info.is_dir():
        why = "not in the archive"
    elif info.file_size > limit:
        why = f"larger than the {limit // MB} MB a cover may be"
    else:
        try:
            data = read_entry(archive, info, limit)
            cover = covers.store_image(blog, source.cover.rsplit("/", 1)[-1], data)
        except (ImportRefused, OperationError) as exc:
            why = exc.message if isinstance(exc, ImportRefused) else exc.public_message
        else:
            report.covers += 1
            return cover
    report.skipped.append(f"the cover of “{shown_name(source.name)}” ({why.rstrip('.')})")
    return None


def _delete(key: str) -> None:
    try:
        default_storage.delete(key)
    except Exception:
        logger.warning("import: could not delete cover %s", key, exc_info=True)
