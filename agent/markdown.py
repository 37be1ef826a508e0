"""Markdown to safe HTML: markdown-it renders (raw HTML off), nh3 sanitises what remains; and to the plain
words its page reads (`plain_text`)."""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable
from typing import TypeVar

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

from agent.runtime import off_the_loop, timed

T = TypeVar("T")

#: The parser the site renders with (blog.demo_writing reads a post's paragraphs with it too, so a
#: paragraph there is one the page shows).
MARKDOWN = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable("table")
    .enable("strikethrough")
)

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "img",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "th": {"align"},
    "td": {"align"},
    "ol": {"start"},
}


def render_markdown(text: str, *, top_heading: int = 1) -> SafeString:
    """`text` as sanitised HTML. With `top_heading` (2: under a page's own h1, such as a post's title),
    headings above that level are moved down, the rest with them so their outline stays (`#`, `##`
    become h2, h3), none below h6; a text whose headings start at that level or under keeps them."""
    tokens = MARKDOWN.parse(text or "")
    headings = [token for token in tokens if token.type in ("heading_open", "heading_close")]
    shift = top_heading - min((int(token.tag[1]) for token in headings), default=top_heading)
    if shift > 0:
        for token in headings:
            token.tag = f"h{min(int(token.tag[1]) + shift, 6)}"
    html = MARKDOWN.renderer.render(tokens, MARKDOWN.options, {})
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


#: A text at least this long is rendered, and read for its words, in gevent's thread pool
#: (`agent.runtime.off_the_loop`), so the worker's other streams go on meanwhile: markdown-it is linear
#: but slow in Python on a text built to make many tokens (a line of 2,000 `[` takes about 30 ms to
#: render, one of 50,000 about a second). A shorter text is rendered inline: the hand-off would cost
#: more than it spares.
OFF_THE_LOOP_CHARS = 2_000


def rendered(text: str, *, top_heading: int = 1) -> tuple[SafeString, float]:
    """`render_markdown(text, top_heading=…)` and the CPU seconds it took in the thread that rendered it
    (what a budget of rendering charges): off the event loop when long (`OFF_THE_LOOP_CHARS`)."""
    render = functools.partial(render_markdown, top_heading=top_heading)
    return off_the_loop_if_long(functools.partial(timed, render), text)


def words_of(text: str) -> str:
    """`plain_text(text)`, off the event loop when long (`OFF_THE_LOOP_CHARS`; not inside a SQLite
    transaction, where `off_the_loop` keeps work inline: read them ahead of one)."""
    return off_the_loop_if_long(plain_text, text)


def off_the_loop_if_long(fn: Callable[[str], T], text: str) -> T:
    """`fn(text)`: off the event loop when `text` is long (`OFF_THE_LOOP_CHARS`), else inline."""
    return fn(text) if len(text) < OFF_THE_LOOP_CHARS else off_the_loop(fn, text)


#: What a line of a block is made of (markdown-it's inline tokens whose `content` is read): the words, a
#: code span's text, an image's alternative text. A line break stays one; markup (emphasis, a link's
#: address) is left out.
INLINE_WORDS = {"text", "code_inline", "image"}
INLINE_BREAKS = {"softbreak", "hardbreak"}


def plain_text(text: str) -> str:
    """The words of the markdown `text` as its rendered page reads them, without markup: each block (a
    paragraph, heading, list item, table cell, code block) on lines of its own, so the words of two blocks
    never run together; a link's words without its address, an image's alternative text, entities as the
    characters they stand for; composed (NFC), as a search compares words. What the site searches and
    quotes a post's text by (`blog.models.Post.text`)."""
    lines: list[str] = []
    for token in MARKDOWN.parse(text or ""):
        if token.type == "inline":
            lines.append("".join(_inline_words(child) for child in token.children or ()))
        elif token.type in ("fence", "code_block"):
            lines.append(token.content.rstrip("\n"))
    return unicodedata.normalize("NFC", "\n".join(line for line in lines if line.strip()))


def _inline_words(token: Token) -> str:
    if token.type in INLINE_BREAKS:
        return "\n"
    return token.content if token.type in INLINE_WORDS else ""
