"""Public reading: the front page for visitors, each blog's index, its posts, its Atom feed, the sitemap.

Only published posts are ever shown here; a draft, or a blog with nothing published, does not exist
for a reader (404, from the site's own 404 page). Post bodies go through the same markdown renderer
and sanitiser as everywhere else (`agent.markdown.render_markdown`), in pages and in the feed alike.
"""

from __future__ import annotations

import hashlib
import html
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib.sitemaps import Sitemap
from django.contrib.syndication.views import Feed
from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, Max, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.html import strip_tags
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

from agent.markdown import rendered
from blog import covers
from blog.models import Blog, Post
from config.cache import get_if_answering, set_if_answering

#: Posts per page of a blog's public index.
PER_PAGE = 10
#: Blogs per page of the list of public blogs (the front page, a member's home).
BLOGS_PER_PAGE = 24
#: Words of a post's body in an excerpt (index, description, Open Graph).
EXCERPT_WORDS = 40
#: A heading in a rendered body (the sanitiser closes every element it keeps).
HEADING = re.compile(r"<h[1-6][^>]*>.*?</h[1-6]>", re.S)


def published(blog: Blog | None = None):
    """Published posts, newest first (of one blog, when given)."""
    posts = Post.objects.filter(status=Post.PUBLISHED).select_related("blog", "author").order_by("-published_at", "-pk")
    return posts.filter(blog=blog) if blog is not None else posts


#: How long a rendered body stays cached (its key is its text, so an edit is never served stale).
RENDERED_SECONDS = 24 * 3600
#: While the cache does not answer, bodies are rendered at each visit: the cache only saves that work.
WITHOUT_CACHE = "post bodies are rendered at each visit"


def body_html(post: Post) -> SafeString:
    """A published post's body rendered and sanitised, once per text rather than once per visit.

    Visitors are anonymous and many, and a long body takes a second to render; the cache is keyed by
    the text's digest, so an edited post is rendered afresh and nothing needs invalidating.
    """
    return rendered_body_html(post.body)


def _body_key(body: str) -> str:
    return "blog:body-html:2:" + hashlib.sha256(body.encode("utf-8", "replace")).hexdigest()


def cached_body_html(body: str) -> SafeString | None:
    """A body's rendering if the cache has it (the editor's preview asks this before it spends a render)."""
    kept = get_if_answering(_body_key(body), WITHOUT_CACHE)
    return None if kept is None else mark_safe(kept)  # noqa: S308 - render_body's, as it was kept


def rendered_body_html(body: str, seconds: int = RENDERED_SECONDS) -> SafeString:
    """A post body as its page shows it, from the cache or rendered (`render_body`) and kept there: the
    public page and the editor's preview share it, so a preview is what the page will show, and a text
    previewed is not rendered again."""
    cached = cached_body_html(body)
    if cached is not None:
        return cached
    html, _ = render_body(body)
    keep_body_html(body, html, seconds)
    return html


def render_body(body: str) -> tuple[SafeString, float]:
    """A post body rendered as its page shows it (under the page's h1, its title), and the CPU seconds
    that took; a long body off the event loop (`agent.markdown.rendered`)."""
    return rendered(body, top_heading=2)


def keep_body_html(body: str, html: str, seconds: int = RENDERED_SECONDS) -> None:
    """Keep a body's rendering (`render_body`'s) in the cache for `seconds`, when the cache answers."""
    set_if_answering(_body_key(body), str(html), seconds, WITHOUT_CACHE)


def excerpt(body_html: str, words: int = EXCERPT_WORDS) -> str:
    """The opening words of a rendered (sanitised) post body, as plain text.

    Headings are left out: run together with the paragraph after them they read as one sentence
    ("Welcome Short notes from…"), and the title is shown beside the excerpt anyway. A body of
    nothing but headings keeps them.
    """
    text = _plain(HEADING.sub(" ", body_html)) or _plain(body_html)
    return Truncator(text).words(words, truncate="…")


def _plain(body_html: str) -> str:
    return " ".join(html.unescape(strip_tags(body_html)).split())


class PublicBlogFigures(TypedDict):
    """What `public_blogs` annotates each blog with."""

    published_count: int
    last_published: datetime


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    PublicBlog = WithAnnotations[Blog, PublicBlogFigures]


def public_blogs():
    """Blogs with at least one published post, the most recently published first.

    Read on every front page and home page: each blog's published posts are counted through the
    (blog, status, published_at) index, never by joining every post of the site, drafts and all."""
    published = Post.objects.filter(blog=OuterRef("pk"), status=Post.PUBLISHED).order_by().values("blog")
    return (
        Blog.objects.filter(Exists(published))
        .annotate(
            published_count=Subquery(published.annotate(n=Count("*")).values("n")),
            last_published=Subquery(published.annotate(last=Max("published_at")).values("last")),
        )
        .order_by("-last_published", "title")
    )


def public_blogs_page(request: HttpRequest) -> Page:
    """The page of `public_blogs` that `?page=` asks for (the first for none or a bad one, the last
    past the end): the list grows with the site, the page does not."""
    return Paginator(public_blogs(), BLOGS_PER_PAGE).get_page(request.GET.get("page"))


def front_page(request: HttpRequest) -> HttpResponse:
    """What a visitor sees at `/`: the blogs there are to read, and a way to sign in."""
    return render(request, "blog/front_page.html", {"blogs": public_blogs_page(request)})


def _readable_blog(slug: str) -> Blog:
    """The blog, if it has anything published; else 404 (an empty or unknown blog is not public)."""
    return get_object_or_404(Blog.objects.filter(posts__status=Post.PUBLISHED).distinct(), slug=slug)


@require_safe
def public_index(request: HttpRequest, slug: str) -> HttpResponse:
    blog = _readable_blog(slug)
    page = Paginator(published(blog), PER_PAGE).get_page(request.GET.get("page"))
    entries = [{"post": post, "excerpt": excerpt(body_html(post))} for post in page]
    return render(request, "blog/public_index.html", {"blog": blog, "page": page, "entries": entries})


def neighbours(post: Post) -> tuple[Post | None, Post | None]:
    """The published posts of `post`'s blog just newer and just older than it, in the index's order
    (`published`: the latest first, ties by id), for a reader going on from one post to the next. Two
    short reads along the blog's index of published posts, whatever the blog's size."""
    same_time = Q(published_at=post.published_at)
    posts = Post.objects.filter(blog_id=post.blog_id, status=Post.PUBLISHED).only("blog", "slug", "title")
    newer = posts.filter(Q(published_at__gt=post.published_at) | same_time & Q(pk__gt=post.pk))
    older = posts.filter(Q(published_at__lt=post.published_at) | same_time & Q(pk__lt=post.pk))
    return newer.order_by("published_at", "pk").first(), older.order_by("-published_at", "-pk").first()


@require_safe
def public_post(request: HttpRequest, slug: str, post_slug: str) -> HttpResponse:
    post = get_object_or_404(published(), blog__slug=slug, slug=post_slug)
    rendered = body_html(post)
    newer, older = neighbours(post)
    context = {
        "blog": post.blog,
        "post": post,
        "newer": newer,
        "older": older,
        "body_html": rendered,
        "description": excerpt(rendered, 30),
        "canonical": request.build_absolute_uri(post_url(post)),
        "cover_url": request.build_absolute_uri(reverse("blog:public_cover", args=[slug, post_slug]))
        + f"?v={post.cover_version}",
    }
    return render(request, "blog/public_post.html", context)


@require_safe
def public_cover(request: HttpRequest, slug: str, post_slug: str) -> HttpResponseBase:
    """A published post's cover, for anyone; a draft's is not public (members see it in the editor)."""
    post = get_object_or_404(published(), blog__slug=slug, slug=post_slug)
    return covers.cover_response(post, request.GET.get("v", ""))


def post_url(post: Post) -> str:
    return reverse("blog:public_post", args=[post.blog.slug, post.slug])


#: What XML 1.0 has no place for: the C0 control characters but tab, line feed and carriage return, and
#: U+FFFE, U+FFFF (a lone surrogate never reaches here: the write path replaces it).
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` without what XML 1.0 cannot carry: a control character pasted into a title or a body would
    otherwise make Django's feed writer refuse the blog's whole feed."""
    return NOT_XML.sub("", text)


class BlogFeed(Feed):
    """A blog's published posts as Atom (`/read/<slug>/feed/`), newest first, bodies as sanitised HTML;
    every text without what XML cannot carry (`xml_text`)."""

    feed_type = Atom1Feed
    limit = 20

    def get_object(self, request: HttpRequest, slug: str) -> Blog:
        return _readable_blog(slug)

    def title(self, blog: Blog) -> str:
        return xml_text(blog.title)

    def link(self, blog: Blog) -> str:
        return reverse("blog:public_index", args=[blog.slug])

    def subtitle(self, blog: Blog) -> str:
        """What the blog is about (Atom's `<subtitle>`, escaped as XML text), else a sentence naming it."""
        return xml_text(blog.description or f"Posts published on {blog.title}")

    def items(self, blog: Blog):
        return published(blog)[: self.limit]

    def item_title(self, post: Post) -> str:
        return xml_text(post.title)

    def item_description(self, post: Post) -> str:
        return xml_text(body_html(post))

    def item_link(self, post: Post) -> str:
        return post_url(post)

    def item_author_name(self, post: Post) -> str | None:
        return post.author.get_username() if post.author else None

    def item_pubdate(self, post: Post) -> Any:
        return post.published_at

    def item_updateddate(self, post: Post) -> Any:
        return post.updated_at


class PostSitemap(Sitemap):
    """Every published post's public page."""

    changefreq = "weekly"

    def items(self):
        return published()

    def location(self, post: Post) -> str:
        return post_url(post)

    def lastmod(self, post: Post) -> Any:
        return post.updated_at


class BlogSitemap(Sitemap):
    """Each public blog's index."""

    changefreq = "daily"

    def items(self):
        return public_blogs()

    def location(self, blog: Blog) -> str:
        return reverse("blog:public_index", args=[blog.slug])

    def lastmod(self, blog: PublicBlog) -> Any:
        return blog.last_published


SITEMAPS = {"blogs": BlogSitemap, "posts": PostSitemap}

#: What crawlers are asked to leave alone: everything but the public reading pages needs signing in
#: (or is an API, or an OAuth endpoint), so a crawl of it would only collect redirects to the sign-in page.
ROBOTS_DISALLOW = ("/accounts/", "/admin/", "/api/", "/blogs/", "/chat/", "/mcp", "/oauth/")


@require_safe
def robots_txt(request: HttpRequest) -> HttpResponse:
    """robots.txt: the public pages open to crawlers, the rest asked to be left alone, and the sitemap named."""
    lines = ["User-agent: *", *(f"Disallow: {path}" for path in ROBOTS_DISALLOW), "Allow: /read/", ""]
    lines.append(f"Sitemap: {request.build_absolute_uri(reverse('sitemap'))}")
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")


@require_safe
@cache_control(max_age=24 * 3600)
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on a page that names no icon (the feed, the sitemap): the
    site's icon, at its static address (which changes with its content, so this is not permanent)."""
    return HttpResponseRedirect(static("favicon.svg"))
