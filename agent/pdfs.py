"""Reading a PDF someone uploaded — its page count, its text — within bounds a crafted file cannot stretch.

pypdf's own limits let one stream decode to 75 MB and a page tree hold 100,000 pages. A PDF of a few
KB whose pages all draw one stream of megabytes of operators costs seconds a page to read, and a 10 MB
file of bare page objects costs seconds to count: CPU taken from every other request of the worker,
at upload and, for a model that takes no PDF files, on every model call of the chat. Here a stream
decodes to at most STREAM_BYTES (a page whose content is larger is left out), a document has at most
MAX_PAGES, and reading text stops after TEXT_SECONDS with what was read. The limits are pypdf's
documented configuration (`pypdf.apply_configuration`).
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pypdf import PdfReader, apply_configuration

#: The most one stream of a PDF decodes to here (a page of text needs a few dozen KB; parsing 1 MB
#: of text operators takes pypdf about two seconds).
STREAM_BYTES = 1_000_000
#: The most pages a PDF is read for (its count is then unknown: the budget estimates from its size).
MAX_PAGES = 2000
#: The longest one PDF's text is read for, in seconds; pages past it are left out.
TEXT_SECONDS = 2.0


class OutOfTime(Exception):
    """Reading the text took its TEXT_SECONDS."""


@contextmanager
def bounded() -> Iterator[None]:
    """pypdf, within this module's bounds, for the code inside the block (its configuration is a context variable)."""
    with apply_configuration(
        zlib_maximum_output_length=STREAM_BYTES,
        lzw_maximum_output_length=STREAM_BYTES,
        run_length_maximum_output_length=STREAM_BYTES,
        brotli_maximum_output_length=STREAM_BYTES,
        array_based_stream_maximum_output_length=STREAM_BYTES,
        page_tree_maximum_entries=MAX_PAGES,
    ):
        yield


def page_count(data: bytes) -> int | None:
    """How many pages, when pypdf can tell within the bounds; None otherwise."""
    with bounded():
        try:
            return len(PdfReader(io.BytesIO(data), strict=False).pages)
        except Exception:  # unreadable, or past a bound: only the budget's estimate is rougher
            return None


def text(data: bytes, limit: int) -> str | None:
    """The PDF's text, up to `limit` characters and TEXT_SECONDS; None when none can be read."""
    deadline = time.monotonic() + TEXT_SECONDS

    def in_time(*_args: Any) -> None:  # called before each operator, so a slow page is cut short too
        if time.monotonic() > deadline:
            raise OutOfTime

    out: list[str] = []
    total = 0
    with bounded():
        try:
            pages = PdfReader(io.BytesIO(data), strict=False).pages
            for page in pages:
                in_time()
                try:
                    found = page.extract_text(visitor_operand_before=in_time) or ""
                except OutOfTime:
                    raise
                except Exception:  # a page past a bound, or broken: the others may still read
                    continue
                out.append(found)
                total += len(found)
                if total >= limit:
                    break
        except OutOfTime:
            pass
        except Exception:  # a PDF pypdf cannot parse has no text to offer
            return None
    joined = "\n\n".join(out).strip()[:limit]
    return joined or None
