"""The offline demo model's grammar: which request a person's words make, and what each one names.

Pure text matching, no queries and no tools: `intent` reads one request ("publish Morning light",
"tighten the second paragraph") as its kind and its title or detail, `requests` splits a message into
the requests it makes, and the patterns beside them say what a title, a courteous request and the
chat's own earlier questions look like. blog.demo answers with them; `NEEDS` names the tool each kind
of request ends with.
"""

from __future__ import annotations

import re

from blog.models import Post

HELP = (
    "I'm the offline demo assistant. Try: “list my posts” (or “list my drafts”), “find posts about birds”, "
    "“draft a post titled Morning light”, “write a post about autumn birds”, “publish Morning light” (or "
    "“publish it” after a draft), several at once (“write a post about autumn birds and publish it”), "
    "“unpublish Morning light”, “delete Morning light”, “remove the cover of Morning light”, “write something long”, "
    "or attach a photo and say “make a post from this photo”; beside a post's editor, “rename this post to "
    "Evening light”, “remove the cover”, “tighten the second paragraph” or “suggest three titles”."
)

#: Quotation marks around a title, as each language writes them: “…” "…" '…' ‘…’ „…“ ‚…‘ «…» « … »
#: »…« 「…」 『…』 ＂…＂.
OPEN = r"(?:[\"'“”„‚‘’«»「『＂]\s*)?"
CLOSE = r"(?:\s*[\"'“”‘’«»」』＂])?"
#: A request to see what is drafted or done, after the subject or title it is about, which is not part of
#: it: "…about tide pools and show me the draft", "…, then let me see it". Only these words, only at the end.
SHOW_ME = (
    r"(?:\s*,)?\s+(?:and\s+(?:then\s+)?|then\s+)(?:show\s+(?:me|us)|let\s+(?:me|us)\s+(?:see|read))"
    r"(?:\s+(?:it|the\s+(?:draft|post)))?"
)
#: A post's title after its verb: "publish Morning light", "publish the post “Morning light”".
#: A title ends the request, or a request to see it does ("publish Morning light and show me it").
END = rf"{CLOSE}(?:{SHOW_ME})?\s*$"
TITLE = rf"(?:(?:(?:the|my)\s+)?post\s+)?{OPEN}(?P<t>.+?){END}"
#: Courtesy around a request, which the patterns do not need: "Could you publish it, please?"
COURTESY = re.compile(
    r"^(?:(?:hi|hey|ok|okay)\b[,!]?\s*)?(?:(?:please|kindly)\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?)?"
    r"(?P<request>.*?)(?:[\s,]+(?:please|thanks|thank you))?[\s.!?。！？]*$",
    re.I,
)

#: "tighten the second paragraph" (`t`: which one), "tighten paragraph 2" (`n`), "tighten it" (all of it).
TIGHTEN = re.compile(
    r"^tighten\s+(?:up\s+)?(?:(?:(?:the|this|my)\s+)?(?:(?P<t>first|second|third|fourth|fifth|sixth|seventh|eighth|last"
    r"|\d+(?:st|nd|rd|th)?)\s+paragraph|paragraph\s+(?P<n>\d+))|it|this|(?:(?:the|this|my)\s+)?(?:open\s+)?"
    r"(?:post|draft|text))(?:\s+up)?$",
    re.I,
)
#: Which posts a list asks for: "list my drafts", "list my published posts".
STATUS_WORDS = (
    (re.compile(r"\b(?:drafts?|unpublished)\b", re.I), Post.DRAFT),
    (re.compile(r"\bpublished\b", re.I), Post.PUBLISHED),
)

#: Posts asked for by their words, then the words (`t`): "search my posts for birds", "find drafts about
#: birds", "which posts mention birds", "posts about birds". Each form starts the request, so "write a post
#: about autumn birds" stays a draft. A status is read from the words before the subject (`search_args`).
POSTS = r"(?:(?:all|any)\s+)?(?:(?:of\s+)?(?:the|my|our)\s+)?(?:(?:draft|published|unpublished)\s+)?(?:posts?|drafts?)"
SEARCH = re.compile(
    rf"^(?:search\s+(?:(?:through|in)\s+)?{POSTS}\s+for"
    rf"|(?:find|search\s+for|look\s+(?:for|up)|list|show(?:\s+me)?|get(?:\s+me)?)\s+{POSTS}\s+"
    r"(?:about|mentioning|(?:that|which)\s+mentions?|titled|called|named)"
    rf"|(?:which|what)\s+{POSTS}\s+(?:mentions?|(?:is|are)\s+about|talks?\s+about)"
    rf"|{POSTS}\s+(?:about|mentioning|(?:that|which)\s+mentions?)"
    r"|search\s+(?:(?:the|my|this)\s+blog\s+)?for"
    rf")\s+{OPEN}(?P<t>.+?){END}",
    re.I,
)

#: How much of a message the grammar reads: its first requests, however long the message. The patterns
#: are matched by backtracking; on the whole of a 20,000-character message (the chat's limit) some took
#: minutes of a worker's CPU, and a gevent worker serves nobody else meanwhile. A request, its title
#: (200 characters at most) and a few more after it fit in this.
READ_CHARS = 500

#: Each pattern's words in order ("make … post … photo"): an atomic group `(?>.*?\bword\b)` takes each
#: word's first place after the one before and never tries a later one, which could only match where the
#: first did; without it a message of many such words, none completing the pattern, was tried in every
#: combination of their places (cubic in its length).
PATTERNS = [
    (
        "photo_post",
        re.compile(
            r"^(?>.*?\b(make|create|draft|write|turn|start)\b)(?>.*?\bposts?\b).*\b(photo|picture|image|pic|snapshot)s?\b"
            r"|^(?>.*?\b(photo|picture|image|pic)\b).*\binto an? (blog )?post\b",
            re.I,
        ),
    ),
    # Beside an editor, about its post: "suggest three titles", "tighten the second paragraph".
    ("titles", re.compile(r"^(?:suggest|propose|give\s+me|come\s+up\s+with|brainstorm)\b.*\btitles?\b", re.I)),
    ("tighten", TIGHTEN),
    ("search", SEARCH),  # (before "list": "list my posts about birds" is a search)
    ("list", re.compile(r"^(?>.*?\b(list|show)\b).*\b(?:posts?|drafts)\b", re.I)),
    (
        "draft",
        re.compile(
            rf"^(?>.*?\b(draft|write|create)\b)(?>.*?\bpost\b).*\b(?:titled|called|named)\s+{OPEN}(?P<t>.+?){END}", re.I
        ),
    ),
    (  # "write a short draft about autumn birds": titled after its subject
        "draft_about",
        re.compile(
            r"\b(?:draft|write|create|start)\b(?:\s+\S+){0,3}?\s+(?:post|draft|piece|article|entry)\s+"
            rf"(?:about|on)\s+{OPEN}(?P<t>.+?){CLOSE}(?:{SHOW_ME})?[.!。！]*\s*$",
            re.I,
        ),
    ),
    (  # before "delete": "delete the cover of Old notes" keeps the post
        "uncover",
        re.compile(
            rf"^\s*(?:remove|delete|drop|take\s+off)\s+(?:the\s+)?cover(?:\s+(?:image|photo|picture))?\s+(?:of|from)\s+{TITLE}",
            re.I,
        ),
    ),
    (  # no post named, "remove the cover", "remove its cover": read as "of it" (blog.demo: beside an editor,
        # its post; else the chat's last one, or it asks which). Also before "delete": "delete the cover".
        "uncover_it",
        re.compile(
            r"^\s*(?:remove|delete|drop|take\s+off)\s+(?:(?:the|its|(?:this|the|my)\s+(?:post|draft)['’]s)\s+)?"
            r"cover(?:\s+(?:image|photo|picture))?\s*$",
            re.I,
        ),
    ),
    ("unpublish", re.compile(rf"^\s*unpublish\s+{TITLE}", re.I)),
    ("publish", re.compile(rf"^\s*publish\s+{TITLE}", re.I)),
    ("delete", re.compile(rf"^\s*delete\s+{TITLE}", re.I)),
    ("yes", re.compile(r"^\s*(yes|y|yes please|confirm|do it)[.!]?\s*$", re.I)),
    ("list", re.compile(r"^(?>.*?\bwhat\b).*\b(?:posts?|drafts)\b|^(?>.*?\b(?:posts?|drafts)\b).*\bdo i have\b", re.I)),
    (
        "rename",
        re.compile(rf"\b(?:rename|retitle)\s+(?:this|the open)\s+post\s+(?:to\s+)?{OPEN}(?P<t>.+?){END}", re.I),
    ),
    (
        "long",
        re.compile(r"\b(long|story)\b", re.I),
    ),  # (after the rest: "publish A long walk" publishes, "rename this post to A long walk" renames)
]
#: Where the chat beside an editor names its post (blog.chat.EDITOR_PROMPT).
OPEN_POST = re.compile(r"\(post_id (?P<id>\d+)\) open in the editor")

NEEDS = {
    "photo_post": "create_post",
    "list": "list_posts",
    "search": "list_posts",
    "draft": "create_post",
    "publish": "publish_post",
    "unpublish": "unpublish_post",
    "delete": "delete_post",
    "uncover": "update_post",
    "rename": "update_post",
    "titles": "get_post",
    "tighten": "update_post",
}
#: The demo's own question before a delete, read back when the person answers "yes".
CONFIRM_DELETE = re.compile(r"Delete “(?P<t>.+)”\? This can't be undone")


#: A post named by what the chat last did with it ("publish it"), not by its title.
PRONOUN = re.compile(
    r"^(?:it|this|that|(?:this|that) one|(?:this|that|the|my) (?:post|draft))(?: now| please)?[.!]?$", re.I
)


def plain(text: str) -> str:
    """A request without its line breaks and courtesy: "Could you publish it,\nplease?" is "publish it"."""
    text = " ".join(text.split())[:READ_CHARS]  # a request typed over several lines reads as one
    courteous = COURTESY.fullmatch(text)
    assert courteous is not None  # (every one-line text matches: each of the pattern's parts may be empty)
    return courteous["request"] or text


def search_args(text: str) -> dict[str, str]:
    """What `list_posts` is asked for a search request ("find drafts about birds"): its words as the query,
    and the status its posts are named by, if any (never read from the words searched for)."""
    m = SEARCH.search(plain(text))
    if m is None:
        return {}
    before = m.string[: m.start("t")]
    status = next((status for words, status in STATUS_WORDS if words.search(before)), "")
    return {"query": m["t"].strip(), "status": status} if status else {"query": m["t"].strip()}


def intent(text: str) -> tuple[str, str]:
    """One request's kind ("publish", "tighten", "help" when none fits) and what it names: a title, which
    paragraph, a list's status, or the words a search looks for."""
    text = plain(text)
    for name, pattern in PATTERNS:
        m = pattern.search(text)
        if m:
            title = (m.groupdict().get("t") or "").strip()
            if name == "uncover_it":
                return "uncover", "it"
            if name == "draft_about":
                return "draft", title[:1].upper() + title[1:]
            if name == "tighten":
                return name, (m["t"] or m["n"] or "").lower()
            if name == "list":  # the status asked for, if any
                return name, next((status for words, status in STATUS_WORDS if words.search(text)), "")
            return name, title
    return "help", ""


#: Where one request may end and the next begin: "draft X and publish it", "…, then list my posts".
JOINS = re.compile(r"(\s*,?\s+(?:and then|and|then)\s+|\s*;\s*)", re.I)


def requests(text: str) -> list[str]:
    """The requests in what the person typed, in order: split at "and"/"then" only where what follows
    is a request of its own, so "draft a post titled Salt and pepper" stays one. Of the message's first
    READ_CHARS characters."""
    text = " ".join(text.split())[:READ_CHARS]
    pieces = JOINS.split(text)
    found = [pieces[0]]
    for join, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        if intent(piece)[0] in NEEDS and intent(found[-1])[0] in NEEDS:
            found.append(piece)
        else:
            found[-1] += join + piece
    return found
