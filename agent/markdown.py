"""Markdown to safe HTML: markdown-it renders (raw HTML off), nh3 sanitises what remains."""

from __future__ import annotations

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

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
