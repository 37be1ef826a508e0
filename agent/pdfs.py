"""Reading a PDF someone uploaded — its page count, its text — within bounds a crafted file cannot stretch.

pypdf's own limits let one stream decode to 75 MB and a page tree hold 100,000 pages. A PDF of a few
KB whose pages all draw one stream of megabytes of operators costs seconds a page to read, and a 10 MB
file of bare page objects costs seconds to count: CPU taken from every other request of the worker,
at upload and, for a model that takes no PDF files, on every model call of the chat. Here a stream
decodes to at most STREAM_BYTES (a page whose content is larger is left out), a document has at most
MAX_PAGES, and reading text stops after OPERATIONS drawing operators with what was read. The limits
are counts, not times, so a PDF gives the same text on any host under any load (a model shown a
different part of it at each call would be confused, and its prompt cache missed). The first two are
pypdf's documented configuration (`pypdf.apply_configuration`); the operators are counted by the
documented visitor of `PageObject.extract_text`.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pypdf import PdfReader, apply_configuration

#: The most one stream of a PDF decodes to here (a page of text needs a few dozen KB).
STREAM_BYTES = 1_000_000
#: The most pages a PDF is read for (its count is then unknown: the budget estimates from its size).
MAX_PAGES = 2000
#: The most drawing operators one PDF's text is read through; pages past them are left out. A page
#: of text draws a few hundred (`BT`, `Tf`, `Td`, `Tj`, `ET` a line), so this reads hundreds of
#: pages (the character limit comes first), while a crafted page of operators that draw nothing
#: stops within a second or two of pypdf's work.
OPERATIONS = 200_000


#: How many PDFs' text a process keeps: a chat sends its PDF again at every model call.
KEPT = 16
_texts: OrderedDict[tuple[bytes, int], str | None] = OrderedDict()
_texts_lock = threading.Lock()


class OutOfOperations(Exception):
    """Reading the text went through its OPERATIONS."""


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
    """The PDF's text, up to `limit` characters and OPERATIONS; None when none can be read.

    Read once per process for the last KEPT PDFs (by their bytes' digest): a chat sends its PDF at
    every model call, and reading one can take a second or two of pypdf's work.
    """
    key = (hashlib.sha256(data).digest(), limit)
    with _texts_lock:
        if key in _texts:
            _texts.move_to_end(key)
            return _texts[key]
    found, _ = read_text(data, limit)
    with _texts_lock:
        _texts[key] = found
        while len(_texts) > KEPT:
            _texts.popitem(last=False)
    return found


def read_text(data: bytes, limit: int) -> tuple[str | None, int]:
    """The PDF's text as `text` gives it, read now, and how many drawing operators reading it took."""
    left = OPERATIONS

    def counted(*_args: Any) -> None:  # called before each operator, so a long page is cut short too
        nonlocal left
        left -= 1
        if left < 0:
            raise OutOfOperations

    out: list[str] = []
    total = 0
    with bounded():
        try:
            pages = PdfReader(io.BytesIO(data), strict=False).pages
            for page in pages:
                try:
                    found = page.extract_text(visitor_operand_before=counted) or ""
                except OutOfOperations:
                    raise
                except Exception:  # a page past a bound, or broken: the others may still read
                    continue
                out.append(found)
                total += len(found)
                if total >= limit:
                    break
        except OutOfOperations:
            pass
        except Exception:  # a PDF pypdf cannot parse has no text to offer
            return None, OPERATIONS - left
    joined = "\n\n".join(out).strip()[:limit]
    return joined or None, min(OPERATIONS, OPERATIONS - left)
