"""Checking an attachment from its bytes, never its name, before anything is stored.

Accepted: PNG, JPEG, GIF and WebP images (opened by Pillow with only those decoders, the pixel
and frame counts checked before any decoding, then re-encoded: EXIF orientation applied and
every metadata chunk — EXIF, GPS, XMP, comments, text chunks — left behind; animation kept), PDF
(the `%PDF-` header) and plain-text or Markdown documents (UTF-8 without NULs, named `.txt`, `.md`
or `.markdown`). SVG and HTML are refused by name and by sniffing the leading bytes as a browser
would. Every refusal is `UploadRefused` with one calm sentence; nothing here touches storage.
"""

from __future__ import annotations

import io
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError

from agent.conf import settings

MB = 1024 * 1024

#: Pillow format name → (media type, file extension).
IMAGE_FORMATS = {
    "PNG": ("image/png", "png"),
    "JPEG": ("image/jpeg", "jpg"),
    "GIF": ("image/gif", "gif"),
    "WEBP": ("image/webp", "webp"),
}
TEXT_EXTENSIONS = {".txt": "text/plain", ".text": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown"}
MARKUP_EXTENSIONS = frozenset(
    {".svg", ".svgz", ".html", ".htm", ".xhtml", ".xht", ".shtml", ".xml", ".mht", ".mhtml", ".hta"}
)
# The leading tags by which a browser sniffs HTML (WHATWG MIME Sniffing, "rules for identifying an
# unknown MIME type"), plus XML and SVG.
_MARKUP_START = re.compile(
    rb"<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|!--|\?xml|svg)[\s>/]",
    re.I,
)
# (Pillow keeps only these of an image's `info` when re-encoding; the rest is metadata.)
_KEEP_INFO = frozenset({"transparency", "duration", "loop", "background", "disposal"})
_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")

IMAGES_ACCEPTED = "only PNG, JPEG, GIF and WebP images are accepted"
ACCEPTED = "only PNG, JPEG, GIF and WebP images, PDFs, and plain-text or Markdown files can be attached"


class UploadRefused(Exception):
    """An attachment (or a message's attachments together) refused; `message` is safe to show."""

    def __init__(self, message: str, code: str = "bad_attachment", status: int = 400) -> None:
        super().__init__(message)
        self.message, self.code, self.status = message, code, status


@dataclass(frozen=True)
class Limits:
    per_file: int
    per_message: int
    files: int
    pixels: int
    frames: int = 1000

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            per_file=int(settings.AGENT_MAX_UPLOAD_MB * MB),
            per_message=int(settings.AGENT_MAX_UPLOAD_MB_PER_MESSAGE * MB),
            files=settings.AGENT_MAX_UPLOAD_FILES,
            pixels=settings.AGENT_MAX_IMAGE_PIXELS,
            frames=settings.AGENT_MAX_IMAGE_FRAMES,
        )


@dataclass(frozen=True)
class Upload:
    """One checked attachment, ready to store: the bytes to keep and what the model is told."""

    name: str
    kind: Literal["image", "document"]
    media_type: str
    extension: str
    data: bytes
    width: int | None = None
    height: int | None = None
    pages: int | None = None

    @property
    def meta(self) -> dict[str, int]:
        meta = {"size": len(self.data)}
        for key in ("width", "height", "pages"):
            if getattr(self, key) is not None:
                meta[key] = getattr(self, key)
        return meta


def mb(n_bytes: int) -> str:
    return f"{n_bytes / MB:.3g}"


def clean_name(name: Any) -> str:
    """The file's own name, shown back to people: no folders, no control characters, at most 120 characters."""
    base = re.split(r"[\\/]", str(name or ""))[-1]
    base = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    if len(base) > 120:
        stem, ext = os.path.splitext(base)
        base = stem[: 120 - len(ext[:10])] + ext[:10]
    return base or "attachment"


def check_all(files: Iterable[tuple[str, bytes]], limits: Limits | None = None) -> list[Upload]:
    """Check a message's attachments, all or none: (name, bytes) in, Uploads out; else UploadRefused."""
    limits = limits or Limits.from_settings()
    files = list(files)
    if len(files) > limits.files:
        raise UploadRefused(too_many_files(limits), "too_many_files")
    if sum(len(data) for _, data in files) > limits.per_message:
        raise UploadRefused(too_large_total(limits), "too_large", 413)
    return [check_one(name, data, limits) for name, data in files]


def too_many_files(limits: Limits) -> str:
    if limits.files == 1:
        return "Attach at most one file to one message."
    return f"Attach at most {limits.files} files to one message."


def too_large_total(limits: Limits) -> str:
    return f"These files add up to more than the {mb(limits.per_message)} MB allowed in one message."


def too_large_file(name: str, limits: Limits) -> str:
    return f"“{clean_name(name)}” is larger than the {mb(limits.per_file)} MB allowed for one file."


def check_one(raw_name: str, data: bytes, limits: Limits) -> Upload:
    name = _checked_name(raw_name, data, limits)
    ext = os.path.splitext(name)[1].lower()
    if _looks_like_image(data):
        return _image(name, data, limits)
    if data.startswith(b"%PDF-"):
        return Upload(name, "document", "application/pdf", "pdf", data, pages=pdf_pages(data))
    if ext in TEXT_EXTENSIONS and _is_text(data):
        return Upload(name, "document", TEXT_EXTENSIONS[ext], ext.lstrip("."), data)
    raise UploadRefused(f"“{name}” can't be attached: {ACCEPTED}.", "unsupported_type")


def check_image(raw_name: str, data: bytes, limits: Limits) -> Upload:
    """One image, checked exactly as an attached image is (the same refusals, the pixel and frame caps
    before decoding, re-encoded without its metadata); anything that is not one is refused."""
    name = _checked_name(raw_name, data, limits)
    if not _looks_like_image(data):
        raise UploadRefused(f"“{name}” is not an image: {IMAGES_ACCEPTED}.", "unsupported_type")
    return _image(name, data, limits)


def _checked_name(raw_name: str, data: bytes, limits: Limits) -> str:
    """The file's shown name, once the refusals every file meets first are passed (markup, empty, too large)."""
    name = clean_name(raw_name)
    ext = os.path.splitext(name)[1].lower()
    if ext in MARKUP_EXTENSIONS or _MARKUP_START.match(data.lstrip(b"\xef\xbb\xbf \t\r\n\x0c")[:64]):
        raise UploadRefused(f"“{name}” can't be attached: SVG and HTML files are not accepted.", "unsupported_type")
    if not data:
        raise UploadRefused(f"“{name}” is empty.", "empty_file")
    if len(data) > limits.per_file:
        raise UploadRefused(too_large_file(name, limits), "too_large", 413)
    return name


def _looks_like_image(data: bytes) -> bool:
    return data.startswith(_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def _is_text(data: bytes) -> bool:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return False
    return "\x00" not in text


def pdf_pages(data: bytes) -> int | None:
    """The PDF's page count when pypdf can read it within `agent.pdfs`' bounds (for the budget's
    estimate); None otherwise: such a PDF is still sent as bytes, only the estimate is rougher."""
    from agent import pdfs

    return pdfs.page_count(data)


def _image(name: str, data: bytes, limits: Limits) -> Upload:
    unreadable = UploadRefused(f"“{name}” couldn't be read as an image.", "bad_image")
    try:
        im = Image.open(io.BytesIO(data), formats=list(IMAGE_FORMATS))
    except Image.DecompressionBombError:
        raise _too_many_pixels(name, None, limits) from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        raise unreadable from None
    with im:
        width, height = im.size
        if width * height > limits.pixels:  # from the header: nothing is decoded yet
            raise _too_many_pixels(name, (width, height), limits)
        try:
            # Counted without decoding (a GIF's by skipping from frame to frame). Each frame costs its
            # own decoding and re-encoding whatever its size, so pixels alone do not bound the work.
            frames = getattr(im, "n_frames", 1)
            if frames > limits.frames:
                raise UploadRefused(
                    f"“{name}” has too many frames ({frames}): the limit is {limits.frames} frames.", "too_many_frames"
                )
            if width * height * frames > limits.pixels:
                raise _too_many_pixels(name, (width, height), limits)
            assert im.format is not None  # (opened with `formats=` these: it is one of them)
            media_type, extension = IMAGE_FORMATS[im.format]
            out, size = reencode(im)
        except UploadRefused:
            raise
        except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
            raise unreadable from None
    return Upload(name, "image", media_type, extension, out, width=size[0], height=size[1])


def _too_many_pixels(name: str, size: tuple[int, int] | None, limits: Limits) -> UploadRefused:
    shown = f" ({size[0]}×{size[1]} pixels)" if size else ""
    return UploadRefused(
        f"“{name}” is too large an image{shown}: the limit is {limits.pixels / 1e6:g} megapixels.", "too_many_pixels"
    )


def reencode(im: Image.Image) -> tuple[bytes, tuple[int, int]]:
    """The image in its own format with no metadata: EXIF orientation applied, animation kept."""
    fmt = im.format
    params: dict[str, Any] = {"quality": 90} if fmt in ("JPEG", "WEBP") else {}
    out = io.BytesIO()
    if getattr(im, "n_frames", 1) > 1:
        frames = [_bare(frame.copy()) for frame in ImageSequence.Iterator(im)]
        durations = [frame.info.get("duration", 100) for frame in frames]
        frames[0].save(
            out,
            fmt,
            save_all=True,
            append_images=frames[1:],
            duration=durations,
            loop=im.info.get("loop", 0),
            **params,
        )
        return out.getvalue(), frames[0].size
    clean = _bare(ImageOps.exif_transpose(im))
    if fmt == "JPEG" and clean.mode not in ("RGB", "L", "CMYK"):
        clean = clean.convert("RGB")
    clean.save(out, fmt, **params)
    return out.getvalue(), clean.size


def _bare(im: Image.Image) -> Image.Image:
    im.info = {k: v for k, v in im.info.items() if k in _KEEP_INFO}
    return im
