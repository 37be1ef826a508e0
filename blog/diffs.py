"""Readable differences between two versions of a post, line by line (Python's `difflib`).

The result is data, not HTML: templates render each line's text with autoescaping, so nothing in a
post's title or body can become markup on the history page.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

#: Unchanged lines kept around each change; longer unchanged runs fold into one "…" line.
CONTEXT = 2
#: A line found more often than this in the newer version anchors no match (see `diff_lines`).
COMMON = 8


@dataclass(frozen=True)
class Line:
    kind: str  # "same", "added", "removed" or "skip" (unchanged lines left out)
    text: str
    old_number: int | None = None
    new_number: int | None = None


def diff_lines(old: str, new: str, context: int = CONTEXT) -> list[Line]:
    """The lines of `old` and `new` as one list, removed and added lines marked, long same runs folded."""
    a, b = (old or "").splitlines(), (new or "").splitlines()
    out: list[Line] = []
    seen = Counter(b)

    def common(line: str) -> bool:
        # Blank lines and lines repeated all over (a code fence, a rule) anchor no match: difflib's time
        # grows with the square of such repeats (a form of 100,000 blank lines held a worker 19 s).
        # They still show, carried along with the matches beside them.
        return not line.strip() or seen[line] > COMMON

    opcodes = difflib.SequenceMatcher(common, a=a, b=b, autojunk=False).get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            lines = [Line("same", a[i], i + 1, j1 + (i - i1) + 1) for i in range(i1, i2)]
            head = lines[:context] if index > 0 else []
            tail = lines[-context:] if index < len(opcodes) - 1 else []
            if len(lines) <= len(head) + len(tail) + 1:
                out.extend(lines)
            else:
                out.extend(head)
                out.append(Line("skip", f"{len(lines) - len(head) - len(tail)} unchanged lines"))
                out.extend(tail)
            continue
        out.extend(Line("removed", a[i], old_number=i + 1) for i in range(i1, i2))
        out.extend(Line("added", b[j], new_number=j + 1) for j in range(j1, j2))
    return out


def version_diff(old: dict | None, new: dict | None) -> dict:
    """Title, status, body and cover of two post snapshots (`Post.snapshot()`; None for "nothing yet") compared."""
    old, new = old or {}, new or {}
    old_title, new_title = old.get("title", ""), new.get("title", "")
    body = diff_lines(old.get("body", ""), new.get("body", ""))
    return {
        "title_changed": old_title != new_title,
        "old_title": old_title,
        "new_title": new_title,
        "status_changed": old.get("status") != new.get("status"),
        "old_status": old.get("status"),
        "new_status": new.get("status"),
        "body": body,
        "body_changed": any(line.kind in ("added", "removed") for line in body),
        # The cover, by its storage key (each new cover has its own): added, replaced or removed.
        "cover_changed": old.get("cover", "") != new.get("cover", ""),
        "old_cover": bool(old.get("cover")),
        "new_cover": bool(new.get("cover")),
    }
