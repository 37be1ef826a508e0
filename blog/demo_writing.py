"""What the offline demo model does to a post's words: tighten a paragraph, suggest titles.

Pure functions of a post's title and markdown body, deterministic and conservative: a filler word
goes only where it plainly modifies the next word, never inside code, links' addresses or markup,
and a title is made only of the post's own words (no fact the post does not state).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent.markdown import MARKDOWN
from agent.values import NeutralMessage

#: The filler words taken out, as the demo names them to a person.
FILLERS = ("very", "really", "just", "quite", "actually", "basically", "simply", "in order to")
FILLER = re.compile(
    r"(?<![\w\-'’*_~`])(?P<word>very|really|just|quite|actually|basically|simply|in\s+order\s+to)"
    r"(?P<space>[ \t]+)(?=[*_\[“‘\"'(]*\w)",
    re.I,
)
#: Where the word says something after all: "not very", "isn't really", "quite a few", "thank you very
#: much", "simply put", "just as well", "the very end".
KEEPS_BEFORE = re.compile(r"(?:\bnot|n['’]t|\bnever|\bthe)\s+$", re.I)
KEEPS_AFTER = {
    "very": re.compile(r"(?:much|many|well)\b", re.I),
    "quite": re.compile(r"(?:a|an|so)\b", re.I),
    "just": re.compile(r"(?:as\s+well|about|in\s+case|now|then|so)\b", re.I),
    "simply": re.compile(r"put\b", re.I),
}
#: What is not prose inside a paragraph: code spans, links' addresses, autolinks and HTML, bare URLs.
PROTECTED = re.compile(r"(`+).*?\1|\]\([^)]*\)|<[^>\n]*>|https?://\S+")
LINE_END = re.compile(r"\r\n?|\n")
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8}
ORDINAL_WORDS = {v: k for k, v in ORDINALS.items()}


@dataclass
class Tightened:
    """The body with the filler taken out (None when there is no such paragraph), the words taken out in
    order, and how many paragraphs the post has."""

    body: str | None
    removed: list[str] = field(default_factory=list)
    paragraphs: int = 0


def paragraphs(body: str, *, nested: bool = False) -> list[tuple[int, int]]:
    """The paragraphs of a markdown body as (start, end) offsets, as the page shows them (markdown-it,
    as agent.markdown renders): not headings, code, tables, rules or link definitions. These are the
    top-level ones, those a person counts ("the second paragraph"); with `nested`, those inside lists
    and quotes too, in order."""
    starts = [0] + [m.end() for m in LINE_END.finditer(body)]  # (markdown-it's lines: \n, \r\n or \r)
    found = []
    for token in MARKDOWN.parse(body):
        if token.type == "paragraph_open" and token.map and (nested or token.level == 0):
            first, end = token.map
            found.append((starts[first], starts[end] if end < len(starts) else len(body)))
    return [(start, start + len(body[start:end].rstrip("\r\n"))) for start, end in found]


def which_paragraph(which: str, count: int) -> int | None:
    """The index of the paragraph a person named ("second", "last", "2"), or None when there is none."""
    n = count if which == "last" else ORDINALS.get(which) or int(re.sub(r"\D", "", which) or 0)
    return n - 1 if 1 <= n <= count else None


def tighten(body: str, which: str = "") -> Tightened:
    """Take the filler words out of one paragraph (`which`: "first", "second", "last", "2", …) or, with
    `which` empty, of every paragraph, those in lists and quotes too."""
    counted = paragraphs(body)
    spans = paragraphs(body, nested=True)
    if which:
        index = which_paragraph(which, len(counted))
        if index is None:
            return Tightened(None, [], len(counted))
        spans = [counted[index]]
    removed: list[str] = []
    out, at = [], 0
    for start, end in spans:
        text, words = tighten_text(body[start:end])
        out += [body[at:start], text]
        removed += words
        at = end
    return Tightened("".join(out) + body[at:], removed, len(counted))


def tighten_text(text: str) -> tuple[str, list[str]]:
    """One paragraph without its filler words, and the words taken out; code, addresses and markup stay."""
    out, removed, at = [], [], 0
    for m in PROTECTED.finditer(text):
        prose, words = _tighten_prose(text[at : m.start()])
        out += [prose, m.group()]
        removed += words
        at = m.end()
    prose, words = _tighten_prose(text[at:])
    return "".join(out) + prose, removed + words


def _tighten_prose(text: str) -> tuple[str, list[str]]:
    out, removed, at = [], [], 0
    for m in FILLER.finditer(text):
        word = " ".join(m["word"].split()).lower()
        after = text[m.end() :]
        keeps = KEEPS_AFTER.get(word)
        if KEEPS_BEFORE.search(text[: m.start()]) or (keeps and keeps.match(after)):
            continue
        out.append(text[at : m.start()])
        if word == "in order to":  # "to", "To" for "In order to"
            out.append(("T" if m["word"][0].isupper() else "t") + "o" + m["space"])
        elif m["word"][:1].isupper():  # a sentence's first word: the next one starts it now
            follow = re.match(r"[*_\[“‘\"'(]*", after)
            lead = follow.end() if follow else 0
            out.append(after[:lead] + after[lead : lead + 1].upper())
            at = m.end() + lead + 1
            removed.append(word)
            continue
        removed.append(word)
        at = m.end()
    return "".join(out) + text[at:], removed


def ordinal(which: str) -> str:
    """The paragraph's place as a person says it: "second" for "second", "2" or "2nd"."""
    if which in ORDINALS or which == "last":
        return which
    n = int(re.sub(r"\D", "", which) or 0)
    return ORDINAL_WORDS.get(n, f"{n}th")


# Titles -----------------------------------------------------------------------------------------------------------

#: Words that carry no subject of their own ("the", "back", "soon"), left out of a title's key words.
COMMON = set(
    """a about above after again all also am an and any are as at back be been before being below but by can
    could did do does doing down during each even ever few for from further had has have having he her here
    hers him his how i if in into is it its just last like made make many may me might more most much must my
    next no nor not now of off often on once one only or other our out over own same she should so some soon
    still such than that the their them then there these they this those through to too under until up upon us
    very was we were what when where which while who why will with would yet you your""".split()
)
MARKUP = re.compile(r"`[^`]*`|!?\[([^\]]*)\]\([^)]*\)|<[^>\n]*>|https?://\S+|[*_~#>|]")
SENTENCE = re.compile(r"[^.!?。！？]+")


def _plain(markdown: str) -> str:
    return " ".join(MARKUP.sub(lambda m: m.group(1) or " ", markdown).split())


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _sentence_case(phrase: str) -> str:
    """A phrase's first letter in lower case when only a sentence's start made it a capital."""
    return phrase[:1].lower() + phrase[1:] if phrase[1:] == phrase[1:].lower() else phrase


WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def key_phrases(text: str) -> list[str]:
    """The runs of words of `text` that are not common words ("morning light", "heron"), the most
    frequent first, then in order of appearance; only runs with a word of four letters or more."""
    runs: list[str] = []
    run: list[str] = []
    last_end = 0
    for m in WORD.finditer(text):
        if m.group().casefold() in COMMON or text[last_end : m.start()].strip():
            if run:
                runs.append(" ".join(run))
            run = [] if m.group().casefold() in COMMON else [m.group()]
        else:
            run.append(m.group())
        last_end = m.end()
    if run:
        runs.append(" ".join(run))
    runs = [r for r in runs if any(len(w) >= 4 for w in r.split())]
    counted = Counter(r.casefold() for r in runs)
    first: dict[str, str] = {}
    for r in runs:
        first.setdefault(r.casefold(), r)
    return sorted(first.values(), key=lambda r: -counted[r.casefold()])


def suggest_titles(title: str, body: str) -> list[str]:
    """Three titles made of the post's own words, none its present title: its headings and short
    sentences first, then its key words, then its title set a little differently."""
    tokens = MARKDOWN.parse(body)
    headings = [_plain(inline.content) for opens, inline in itertools.pairwise(tokens) if opens.type == "heading_open"]
    sentences = []
    for start, end in paragraphs(body):
        for sentence in SENTENCE.findall(_plain(body[start:end])):
            words = sentence.split()
            if len(words) > 8:  # a long sentence's first words, not ending on "the" or "of"
                words = words[:6]
                while words and words[-1].casefold() in COMMON:
                    words.pop()
            if len(words) >= 3:
                sentences.append(" ".join(words).strip(",;:—– "))
    phrases = key_phrases(". ".join(_plain(line) for line in body.splitlines()))
    key_titles = [_capital(" and ".join([phrases[0], *map(_sentence_case, phrases[1:2])]))] if phrases else []
    short = title[:180]
    reshaped = [f"{short}, revisited", f"{short}, again", f"{short}, in short"]
    families = [[_capital(h) for h in headings if h] + [_capital(s) for s in sentences], key_titles, reshaped]
    chosen: list[str] = []
    seen = {title.casefold()}
    # One of each kind first, then more of the kinds that have more, until there are three.
    for pick in [[f[:1] for f in families], families]:
        for family in pick:
            for candidate in family:
                if len(chosen) < 3 and candidate.casefold() not in seen and 0 < len(candidate) <= 200:
                    chosen.append(candidate)
                    seen.add(candidate.casefold())
    return chosen


# The demo's answers ---------------------------------------------------------------------------------------------


def _where(which: str) -> str:
    return f"the {ordinal(which)} paragraph" if which else "the post"


def tighten_reply(post: dict[str, Any], which: str) -> tuple[str, list[tuple[str, dict]]]:
    """The answer to "tighten …" once the post is read (`post`: get_post's result): the edit through
    update_post and what it takes out, or why there is nothing to do."""
    done = tighten(str(post.get("body") or ""), which)
    title = post.get("title", "")
    if done.body is None:
        if not done.paragraphs:
            return f"“{title}” has no paragraphs to tighten yet.", []
        n = done.paragraphs
        return (
            f"“{title}” has {n} paragraph{'s' if n != 1 else ''}, so there is no {ordinal(which)} one to tighten.",
            [],
        )
    if not done.removed:
        names = ", ".join(f"“{w}”" if " " in w else w for w in FILLERS)
        return f"{_capital(_where(which))} has none of the filler words I remove ({names}), so I left it as it is.", []
    n, words = len(done.removed), ", ".join(dict.fromkeys(done.removed))
    said = f"Tightening {_where(which)}: {n} filler word{'s' if n != 1 else ''} to remove ({words})."
    return said, [("update_post", {"post_id": post["id"], "body": done.body})]


def tightened_reply(messages: list[NeutralMessage], result: dict[str, Any], which: str) -> str:
    """What "tighten …" did once update_post wrote it, counted again from the post as it was read."""
    read = next(
        (
            part["result"]
            for message in reversed(messages)
            for part in reversed(message["parts"])
            if part["type"] == "tool_result" and part.get("name") == "get_post" and part.get("status") == "ok"
        ),
        {},
    )
    n = len(tighten(str(read.get("body") or ""), which).removed)
    where = f"{_where(which)} of “{result.get('title', '')}”" if which else f"“{result.get('title', '')}”"
    return f"Done: I removed {n} filler word{'s' if n != 1 else ''} from {where}."


def titles_reply(post: dict[str, Any]) -> str:
    """Three titles for the post read (get_post's result), and how to use one; nothing is written."""
    titles = suggest_titles(str(post.get("title") or ""), str(post.get("body") or ""))
    lines = "\n".join(f"{i}. {t}" for i, t in enumerate(titles, 1))
    return f"Three titles made of the post's own words:\n\n{lines}\n\nTo use one, say “rename this post to …” with it."
