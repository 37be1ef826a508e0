"""An offline, deterministic model for `make run`: understands a few plain requests and calls real tools.

It streams at a human pace so a newcomer sees tokens arrive, tool chips and live effects
without any provider keys. It reads only the neutral messages and the offered tools. It knows the
blog's requests and tool names, so it lives with the blog; `AGENT_BACKEND_CLASSES` registers it
with the engine as the `demo` backend. What it understands is blog.demo_grammar; what it does to a
post's words, blog.demo_writing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from agent import approvals
from agent.attachments import is_note
from agent.backends.base import Backend, call_context
from agent.backends.fake import summary_events
from agent.budget import estimate_tokens
from agent.tools import not_available
from agent.values import ModelEvent, NeutralMessage, ToolSpec
from blog import demo_writing as writing
from blog.access import SCOPE_WORDS
from blog.demo_grammar import (
    CONFIRM_DELETE,
    END,
    HELP,
    NEEDS,
    OPEN,
    OPEN_POST,
    PRONOUN,
    intent,
    requests,
    search_args,
)
from blog.models import Post
from blog.operations import OPERATIONS

LONG_TEXT = "\n\n".join(
    f"Paragraph {i}: the field notes keep growing, one small observation at a time, and the assistant keeps writing."
    for i in range(1, 41)
)


def not_allowed(tool: str) -> str:
    """Why a request's tool was not offered, in the words of the Clients screen, not the tool's name."""
    doing = SCOPE_WORDS[OPERATIONS[tool].scope]
    return (
        f"I'm not allowed to {doing} posts on this blog for you. "
        "The Clients screen shows what I may do, and lets you change it."
    )


def last_post_title(messages: list[NeutralMessage]) -> str | None:
    """The title of the post a tool last drafted, changed or read in these messages (not one it deleted)."""
    for message in reversed(messages):
        for part in reversed(message["parts"]):
            result = part.get("result") if part["type"] == "tool_result" and part.get("status") == "ok" else None
            if isinstance(result, dict) and "id" in result and result.get("title") and "deleted" not in result:
                return str(result["title"])
    return None


def named_post(messages: list[NeutralMessage], last_user: NeutralMessage, title: str, step: int = 0) -> str | None:
    """The title a request names: as typed, or for "it"/"this post" the chat's last post before the
    request (for a later request of several, "draft X and publish it", also what the earlier ones did)."""
    if not PRONOUN.match(title):
        return title
    if step:
        return last_post_title(messages)
    before = next(i for i in range(len(messages) - 1, -1, -1) if messages[i] is last_user)
    return last_post_title(messages[:before])


def progress(messages: list[NeutralMessage], asked: list[str]) -> tuple[int, bool]:
    """Which of the requests the turn is on, read from the tool results since the person spoke (each
    request ends with its kind's tool: a publish first finds its post), and whether the latest result
    just finished one."""
    step, finished = 0, False
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and _text_of(m))
    for message in messages[start + 1 :]:
        for part in message["parts"]:
            if part["type"] != "tool_result" or step >= len(asked):
                continue
            finished = part.get("name") == NEEDS.get(intent(asked[step])[0])
            step += finished
    return step, finished


def _text_of(message: NeutralMessage) -> str:
    """The person's own words (not the lines that introduce their attachments)."""
    return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text" and not is_note(p))


NOTE = re.compile(r"^\[Attachment #(?P<id>\d+): (?P<facts>[^\n]*)\]")
MEDIA_TYPE = re.compile(r"^[a-z]+/[a-z0-9.+-]+$")
DIMENSIONS = re.compile(r"^(?P<w>\d+)×(?P<h>\d+)$")
KINDS = {
    "image/png": "a PNG image",
    "image/jpeg": "a JPEG image",
    "image/gif": "a GIF image",
    "image/webp": "a WebP image",
}
KINDS |= {"application/pdf": "a PDF document", "text/plain": "a text file", "text/markdown": "a Markdown file"}


def attachments_of(message: NeutralMessage) -> list[dict[str, Any]]:
    """The attachments of a user message, read from the lines that introduce them to the model
    (`agent.attachments.describe`): id, name, media type, size, and dimensions or pages."""
    found = []
    for part in message["parts"]:
        m = NOTE.match(part["text"]) if part["type"] == "text" and is_note(part) else None
        if m is None:
            continue
        facts = m["facts"].removesuffix(" (not shown: this model takes no images)").split(", ")
        at = next((i for i in range(len(facts) - 1, -1, -1) if MEDIA_TYPE.match(facts[i])), None)
        if at is None:
            continue
        item = {"id": int(m["id"]), "name": ", ".join(facts[:at]), "media_type": facts[at], "size": facts[-1]}
        for fact in facts[at + 1 : -1]:
            dims = DIMENSIONS.match(fact)
            if dims:
                item["width"], item["height"] = int(dims["w"]), int(dims["h"])
            elif "page" in fact:
                item["pages"] = fact
        found.append(item)
    return found


def acknowledge(items: list[dict[str, Any]]) -> str:
    """One line per attachment: its name, type, size and (an image's) dimensions or (a PDF's) pages."""
    lines = []
    for a in items:
        extra = f", {a['width']}×{a['height']} pixels" if "width" in a else (f", {a['pages']}" if "pages" in a else "")
        kind = KINDS.get(a["media_type"], a["media_type"])
        lines.append(f"- **{a['name']}** (attachment #{a['id']}): {kind}{extra}, {a['size']}")
    n = len(items)
    return f"I received {n} attachment{'s' if n != 1 else ''}:\n\n" + "\n".join(lines) + "\n\n"


def title_from(name: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", name)
    words = re.sub(r"[_\-.]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else "A new photo"


class DemoBackend(Backend):
    name = "demo"
    offline = True
    uses_call_index = True  # its tool-call ids name the call's place in the session
    default_model = "demo"

    def stream(
        self,
        *,
        system: str,
        messages: list[NeutralMessage],
        tools: list[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[ModelEvent]:
        offered = {t["name"] for t in tools}
        ctx = call_context.get()
        if ctx is not None and ctx.purpose == "summary":
            yield from summary_events(messages)
            return
        text, calls = self._answer(messages, offered, system)
        out_tokens = 0
        for word in re.findall(r"\S+\s*", text):
            self._pause()
            out_tokens += 1
            yield {"kind": "text", "text": word}
        for i, (name, args) in enumerate(calls):
            self._pause()
            yield {"kind": "tool_use", "id": self._call_id(i), "name": name, "input": args}
        in_tokens = estimate_tokens(system, messages, [])  # (attachments by their size, not their bytes' repr)
        yield {
            "kind": "done",
            "stop_reason": "tool_use" if calls else "end_turn",
            "usage": {
                "input_tokens": in_tokens,
                "output_tokens": out_tokens + 10 * len(calls),
                "cache_read_tokens": 0,
                "cache_write_tokens": 0,
            },
        }

    def _pause(self) -> None:
        delay = settings.AGENT_DEMO_DELAY_MS
        if delay:
            time.sleep(delay / 1000)

    def _call_id(self, i: int) -> str:
        ctx = call_context.get()
        return f"demo_{ctx.session_id[:8]}_{ctx.call_index}_{i}" if ctx else f"demo_{i}"

    def _answer(
        self, messages: list[NeutralMessage], offered: set[str], system: str = ""
    ) -> tuple[str, list[tuple[str, dict]]]:
        users = [m for m in messages if m["role"] == "user" and _text_of(m)]
        if not users:
            return HELP, []
        if messages[-1]["role"] == "tool":
            return self._after_tool(messages, users[-1], offered, system)
        text, calls = self._reply(messages, users[-1], offered, system, requests(_text_of(users[-1]))[0])
        items = attachments_of(users[-1]) if users[-1] is messages[-1] else []
        return (acknowledge(items) + text if items else text), calls

    def _reply(
        self,
        messages: list[NeutralMessage],
        last_user: NeutralMessage,
        offered: set[str],
        system: str = "",
        text: str | None = None,
        step: int = 0,
    ) -> tuple[str, list[tuple[str, dict]]]:
        """The answer to one request: `text` (by default the person's whole message), the `step`-th of
        what they asked at once."""
        text = _text_of(last_user) if text is None else text
        kind, title = intent(text)
        if kind == "photo_post" and NEEDS[kind] in offered:
            return self._photo_post(messages, text)
        if kind == "yes":
            return self._confirmed(messages, offered)
        if kind == "help":
            return HELP, []
        if kind == "long":
            return LONG_TEXT, []
        needed = NEEDS[kind]
        if needed not in offered:
            return not_allowed(needed), []
        if kind == "list":
            return f"Let me look at your {LISTED[title]}.", [("list_posts", {"status": title} if title else {})]
        if kind == "search":  # posts by their words: list_posts' query (titles and texts), and a status if named
            args = search_args(text)
            return f"Looking for {LISTED[args.get('status', '')]} that mention “{title}”.", [("list_posts", args)]
        if kind in ("titles", "tighten"):
            return self._read_open_post(offered, system)
        if kind == "rename":
            open_post = OPEN_POST.search(system or "")
            if open_post is None:
                return "Which post? Open it in the editor and ask me there.", []
            return f"Renaming it to “{title}”.", [("update_post", {"post_id": int(open_post["id"]), "title": title})]
        if kind == "uncover" and PRONOUN.match(title) and (open_post := OPEN_POST.search(system or "")):
            # Beside an editor "this post" is the open one: no need to look it up.
            return "Removing its cover.", [("update_post", {"post_id": int(open_post["id"]), "remove_cover": True})]
        if kind == "draft":
            body = "A first draft, written by the demo assistant. Edit me!"  # (the post's page heads it with its title)
            return f"Drafting “{title}”.", [("create_post", {"title": title, "body": body})]
        named = named_post(messages, last_user, title, step)
        if named is None:
            return f"Which post? Say its title, like “{ASKED_AS.get(kind, kind)} Morning light”.", []
        title = named
        if kind == "delete" and "delete_post" not in settings.AGENT_CONFIRM_TOOLS:
            # Without the approval buttons the model itself must ask first.
            return f"Delete “{title}”? This can't be undone. Reply “yes” to confirm.", []
        return f"Looking for “{title}”.", [("list_posts", {"query": title})]

    def _read_open_post(self, offered: set[str], system: str) -> tuple[str, list[tuple[str, dict]]]:
        """The first step of a request about the post open in the editor: read it (its body is in the result)."""
        if "get_post" not in offered:
            return not_allowed("get_post"), []
        open_post = OPEN_POST.search(system or "")
        if open_post is None:
            return "Which post? Open it in the editor and ask me there.", []
        return "Let me read the post.", [("get_post", {"post_id": int(open_post["id"])})]

    def _photo_post(self, messages: list[NeutralMessage], text: str) -> tuple[str, list[tuple[str, dict]]]:
        """A draft with the chat's latest image as its cover, titled as asked or after the photo."""
        images = [
            a
            for m in messages
            if m["role"] == "user"
            for a in attachments_of(m)
            if a["media_type"].startswith("image/")
        ]
        if not images:
            return "Attach a photo first (the Attach button, or drop or paste it here), then ask me again.", []
        photo = images[-1]
        titled = re.search(rf"\b(?:titled|called|named)\s+{OPEN}(?P<t>.+?){END}", " ".join(text.split()), re.I)
        title = titled["t"].strip() if titled else title_from(photo["name"])
        size = f" ({photo['width']}×{photo['height']})" if "width" in photo else ""
        body = f"A first draft around the photo {photo['name']}{size}, written by the demo assistant. Edit me!"
        args = {"title": title, "body": body, "cover_attachment_id": photo["id"]}
        return f"Drafting “{title}” with your photo as its cover.", [("create_post", args)]

    def _confirmed(self, messages: list[NeutralMessage], offered: set[str]) -> tuple[str, list[tuple[str, dict]]]:
        for m in reversed(messages[:-1]):
            if m["role"] == "assistant":
                found = CONFIRM_DELETE.search(_text_of(m))
                if found and "list_posts" in offered:
                    return "Deleting it.", [("list_posts", {"query": found["t"]})]
                break
        return "Yes to what? " + HELP, []

    def _after_tool(
        self, messages: list[NeutralMessage], last_user: NeutralMessage, offered: set[str], system: str = ""
    ) -> tuple[str, list[tuple[str, dict]]]:
        result: dict[str, Any] = {}
        name, failed = "", False
        last = messages[-1]["parts"][-1]
        if last["type"] == "tool_result":  # (always: a tool message carries only results)
            result, name, failed = last["result"] or {}, last.get("name", ""), last["status"] == "error"
        if failed:
            error = result.get("error", "the tool failed")
            if error in (approvals.REJECTED, approvals.NOT_APPROVED):  # (words for the model, not for people)
                return "All right, I left it as it was.", []
            if name in OPERATIONS and error == not_available(name):  # the grant changed since it was offered
                return not_allowed(name), []
            return f"That didn't work: {error}", []
        asked = requests(_text_of(last_user))
        step, finished = progress(messages, asked)
        if finished:  # that request is done: say so, then start the next one asked for, if any
            said = self._finished(messages, name, result, asked[step - 1])
            if step == len(asked):
                return said, []
            text, calls = self._reply(messages, last_user, offered, system, asked[step], step)
            return said + "\n\n" + text, calls
        kind, title = intent(asked[step])
        if kind == "yes":
            kind = "delete"
            title = next(
                (
                    found["t"]
                    for m in reversed(messages)
                    if m["role"] == "assistant" and (found := CONFIRM_DELETE.search(_text_of(m)))
                ),
                "",
            )
        if name == "get_post" and kind == "tighten":
            return writing.tighten_reply(result, title)
        if name == "list_posts" and kind in ("publish", "unpublish", "delete", "uncover"):
            title = named_post(messages, last_user, title, step) or title
            return self._act_on(kind, title, result.get("items", []), offered)
        return self._done(name, result, title), []

    def _finished(self, messages: list[NeutralMessage], name: str, result: dict[str, Any], request: str) -> str:
        """What the tool that ends this request did."""
        kind, title = intent(request)
        if kind == "search" and name == "list_posts":
            return self._found(result, search_args(request))
        if kind == "titles" and name == "get_post":
            return writing.titles_reply(result)
        if kind == "tighten" and name == "update_post":
            return writing.tightened_reply(messages, result, title)
        return self._done(name, result, title)

    def _done(self, name: str, result: dict[str, Any], title: str) -> str:
        """What a tool's result did, in a sentence (a list, as the list; `title`, a list's status)."""
        if name == "list_posts":
            items = result.get("items", [])
            listed = LISTED.get(title, LISTED[""])
            if not items:
                return (
                    f"You have no {listed}." if listed != LISTED[""] else "You have no posts yet. Ask me to draft one!"
                )
            return f"Here are your {listed}:\n\n{_lines(items)}\n{_more(result, items)}"
        verbs = {
            "create_post": "drafted",
            "publish_post": "published",
            "unpublish_post": "unpublished",
            "delete_post": "deleted",
            "update_post": "updated",
        }
        if name == "update_post" and "cover_removed" in result:  # (blog.operations: remove_cover's answer)
            titled = result.get("title", title)
            if not result["cover_removed"]:
                return f"“{titled}” has no cover, so there was nothing to remove."
            return f"Done: I removed the cover of “{titled}”."
        # (a result says whether the post has a cover; only the draft made from a photo set it)
        cover = " with your photo as its cover" if name == "create_post" and result.get("cover") else ""
        done = f"Done: I {verbs.get(name, 'finished')} “{result.get('title', title)}”{cover}."
        others = result.get("shares_title_with") or []
        if others:  # (blog.operations: titles may repeat, and the result says so)
            ids = ", ".join(str(o.get("id")) for o in others)
            done += (
                f" Note: {'another post has' if len(others) == 1 else 'other posts have'} this title too (id {ids}); "
                "a different title would tell them apart."
            )
        return done

    def _found(self, result: dict[str, Any], args: dict[str, str]) -> str:
        """What a search found (`list_posts`' query: titles and texts), listed as a list is, each post found
        by its text with the line that holds the words."""
        items, listed, words = result.get("items", []), LISTED[args.get("status", "")], args.get("query", "")
        if not items:
            return f"No {listed} mention “{words}”."
        return f"Here are your {listed} that mention “{words}”:\n\n{_lines(items)}\n{_more(result, items)}"

    def _act_on(self, kind, title, items, offered) -> tuple[str, list[tuple[str, dict]]]:
        """Act on the listed post titled `title` (or the one post the search found). Titles may repeat:
        of several, the one the request fits (a draft to publish, a published post to unpublish), else
        the one edited most recently, whatever the list's order; the answer says which and why."""
        exact = [p for p in items if p["title"].casefold() == title.casefold()]
        titled = [p for p in items if "excerpt" not in p]  # (a post found by its text alone is not the one named)
        if not exact and len(titled) == 1:
            exact = titled
        if not exact:
            return f"I couldn't find a post titled “{title}”.", []
        tool = NEEDS[kind]
        if tool not in offered:
            return not_allowed(tool), []
        if kind == "uncover":  # the one with a cover to remove (a listed post says `"cover": true`)
            candidates = [p for p in exact if p.get("cover")] or exact
        else:
            fits = {"publish": Post.DRAFT, "unpublish": Post.PUBLISHED}.get(kind)
            candidates = [p for p in exact if p.get("status") == fits] or exact
        candidates.sort(key=lambda p: (_edited(p), p["id"]), reverse=True)
        match, said = candidates[0], ""
        if len(exact) > 1:
            doing = DOING[kind]
            fitting = "the one that has one" if kind == "uncover" else STATE_WORDS.get(match["status"], "it")
            which = "the one edited most recently" if len(candidates) > 1 else fitting
            said = f"{len(exact)} posts are titled “{match['title']}”: I'm {doing} {which} (id {match['id']})."
        args = {"post_id": match["id"], "remove_cover": True} if kind == "uncover" else {"post_id": match["id"]}
        return said, [(tool, args)]


#: What a list of posts of a status is called.
LISTED = {"": "posts", Post.DRAFT: "drafts", Post.PUBLISHED: "published posts"}
#: What the demo says it is doing to one of several posts of a title.
DOING = {
    "publish": "publishing",
    "unpublish": "unpublishing",
    "delete": "deleting",
    "uncover": "removing the cover of",
}
#: How a request of a kind is asked for, when the demo asks which post it means.
ASKED_AS = {"uncover": "remove the cover of"}
#: A post named by its state, among posts of one title.
STATE_WORDS = {Post.DRAFT: "the draft", Post.PUBLISHED: "the published one"}


def _lines(items: list[dict[str, Any]]) -> str:
    """Listed posts, one line each: the title, then the status, then a search's line of its text if any."""
    return "\n".join(
        f"- **{p['title']}** ({p['status']})" + (f": “{p['excerpt']}”" if p.get("excerpt") else "") for p in items
    )


def _more(result: dict[str, Any], items: list[dict[str, Any]]) -> str:
    """What a list leaves out (`list_posts` lists 100 at a time and says how many match in all, and in a
    `note` when a search could not count them all), else ""."""
    total, note = result.get("total"), result.get("note")
    if isinstance(note, str) and note:
        return f"\n{note}\n"
    if not isinstance(total, int) or total <= len(items):
        return ""
    return f"\nThese are the {len(items):,} most recently changed of {total:,}.\n"


def _edited(summary: dict[str, Any]) -> datetime:
    """When a listed post was last changed (its summary's `updated_at`); the oldest time when not given."""
    try:
        return datetime.fromisoformat(summary["updated_at"])
    except (KeyError, TypeError, ValueError):
        return datetime.min.replace(tzinfo=UTC)
