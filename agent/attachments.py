"""Attachments as the model meets them, decided here and not in the adapters.

Each attachment is introduced by a line naming its id (`[Attachment #12: photo.jpg, image/jpeg,
640×480, 52 KB]`), so the model can name it to a tool. Plain-text and Markdown documents are
delivered as text (every provider reads text; few take `.md` files); images are dropped with a
note when the model takes none (`AGENT_MODEL_IMAGES=0`); PDFs stay `document` parts for the
adapter. The budget's input estimate reads `tokens(part)`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agent.conf import settings
from agent.values import NeutralMessage, Part

NOTE_PREFIX = "[Attachment #"
TEXT_TYPES = ("text/plain", "text/markdown")
#: Input tokens a PDF page costs at most (its text plus the page as an image, as Claude reads them).
PDF_PAGE_TOKENS = 3000
#: When the page count is unknown: about this many bytes a page.
PDF_BYTES_PER_PAGE = 50_000


def is_note(part: Mapping[str, Any]) -> bool:
    """Whether a text part is an attachment's introduction line (not the person's words)."""
    return part.get("type") == "text" and str(part.get("text", "")).startswith(NOTE_PREFIX)


def describe(part: Mapping[str, Any]) -> str:
    """`[Attachment #12: photo.jpg, image/jpeg, 640×480, 52 KB]`."""
    bits = [str(part.get("name") or part["type"]), str(part.get("media_type") or "")]
    if part.get("width") and part.get("height"):
        bits.append(f"{part['width']}×{part['height']}")
    if part.get("pages"):
        bits.append(f"{part['pages']} page{'s' if part['pages'] != 1 else ''}")
    if part.get("size") is not None:
        bits.append(human_size(part["size"]))
    return f"{NOTE_PREFIX}{part.get('id', '?')}: {', '.join(b for b in bits if b)}]"


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def for_model(messages: list[NeutralMessage]) -> list[NeutralMessage]:
    """The messages with each attachment introduced and shaped for the model (see the module)."""
    if not any(p["type"] in ("image", "document") for m in messages for p in m["parts"]):
        return messages
    return [{**m, "parts": [q for p in m["parts"] for q in _shaped(p)]} for m in messages]


def _shaped(part: Part) -> list[Part]:
    if part["type"] != "image" and part["type"] != "document":
        return [part]
    note = describe(part)
    if part["type"] == "image" and not settings.AGENT_MODEL_IMAGES:
        return [{"type": "text", "text": f"{note} (not shown: this model takes no images)"}]
    if part["type"] == "document" and part.get("media_type") in TEXT_TYPES:
        text = bytes(part.get("data") or b"").decode("utf-8-sig", "replace")
        return [{"type": "text", "text": f"{note}\n<document>\n{text}\n</document>"}]
    return [{"type": "text", "text": note}, part]


def image_tokens(width: int, height: int) -> int:
    """Input tokens an image costs at most: the larger of OpenAI's high-detail tiles and Claude's pixels."""
    # OpenAI: fit in 2048×2048, then the shorter side down to 768; 85 + 170 per 512-pixel tile.
    w, h = float(width), float(height)
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h)) if min(w, h) else 1.0
    w, h = w * scale, h * scale
    openai = 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
    # Claude: the long edge down to 1568 pixels and at most ~1.15 megapixels; pixels / 750.
    w, h = float(width), float(height)
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)) if w * h else 1.0)
    claude = math.ceil(w * scale * h * scale / 750)
    return max(openai, claude)


def tokens(part: Mapping[str, Any]) -> int:
    """A realistic upper estimate of one image or document part's input tokens."""
    if part["type"] == "image":
        if part.get("width") and part.get("height"):
            return image_tokens(int(part["width"]), int(part["height"]))
        return image_tokens(2048, 2048)
    size = int(part.get("size") or len(part.get("data") or b""))
    if part.get("media_type") in TEXT_TYPES:
        return size // 3 + 1
    pages = part.get("pages") or max(1, math.ceil(size / PDF_BYTES_PER_PAGE))
    return int(pages) * PDF_PAGE_TOKENS


def pdf_text(data: bytes, limit: int = 200_000) -> str | None:
    """A PDF's text (pypdf, within `agent.pdfs`' bounds), for a provider that takes no PDF files;
    None when none can be read. Read in gevent's thread pool: the turn's greenlet waits, the
    worker's other streams go on."""
    from agent import pdfs
    from agent.runtime import off_the_loop

    return off_the_loop(pdfs.text, data, limit)
