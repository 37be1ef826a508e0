"""The All posts page's search: what its form asked (`?q=`, `?status=`), read without ever failing,
the posts that match it (by their title or text: `services.posts_matching`, as the assistant's
`list_posts` matches them) and, for each found by its text, the line that holds the words."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import QueryDict
from django.utils.safestring import SafeString

from agent.values import without_nul
from blog import services, snippets
from blog.models import Blog, Post

#: The longest search, as the tool's query: the longest title (`services.clean_title`).
MAX_QUERY_CHARS = 200
#: The status filter's choices, "" for every status; each with what a count of its posts is called.
STATUSES = {
    "": ("All", "post", "posts"),
    Post.DRAFT: ("Draft", "draft", "drafts"),
    Post.PUBLISHED: ("Published", "published post", "published posts"),
}


@dataclass(frozen=True)
class Search:
    """A search as asked: `q` as typed (the form shows it again), the status it filters by, and a
    sentence on what in it could not be used (else "")."""

    q: str
    status: str
    problem: str = ""
    too_long: bool = False

    @property
    def words(self) -> str:
        """The words it looks for, as a title is kept (no spaces around, no NUL: `clean_title`)."""
        return without_nul(self.q.strip())

    @property
    def active(self) -> bool:
        return bool(self.words or self.status or self.too_long)

    @property
    def params(self) -> str:
        """The search as a URL's query, for the pages of its results (empty when it asks for nothing)."""
        return urlencode({k: v for k, v in (("q", self.q), ("status", self.status)) if v})

    def noun(self, count: int) -> str:
        """ "3 drafts", "1 published post", "No posts"."""
        singular, plural = STATUSES[self.status][1:]
        return f"{count:,} {singular if count == 1 else plural}" if count else f"No {plural}"

    def posts(self, blog: Blog) -> tuple[QuerySet[Post], bool]:
        """The blog's posts it finds, the most recently changed first (none for a search too long), and
        whether more matched than a search beyond A to Z keeps (`services.MATCHES_MAX`)."""
        if self.too_long:
            return Post.objects.none(), False
        posts = Post.objects.filter(blog=blog)
        if self.status:
            posts = posts.filter(status=self.status)
        if self.words:
            return services.posts_matching(posts, self.words)
        return posts, False

    def line(self, post: Post) -> SafeString:
        """The line of `post`'s text that holds the words, marked, when its title does not ("" else)."""
        if not self.words:
            return SafeString("")
        words = unicodedata.normalize("NFC", self.words)  # (as the search was made: `posts_matching`)
        return snippets.marked(services.matched_text(post, words), words)


def read(params: QueryDict) -> Search:
    """The search a page's query asks for. A status it does not know searches every status; a search
    longer than a search may be searches nothing; each says so."""
    q, status = params.get("q", ""), params.get("status", "")
    problems = []
    if status not in STATUSES:
        problems.append(f"There is no status “{status[:40]}”, so this is a search of every status.")
        status = ""
    too_long = len(q) > MAX_QUERY_CHARS
    if too_long:
        problems.append(
            f"A search can be at most {MAX_QUERY_CHARS} characters, and this one has {len(q):,}: shorten it."
        )
    return Search(q=q, status=status, problem=" ".join(problems), too_long=too_long)
