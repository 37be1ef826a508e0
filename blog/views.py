"""People's pages: your blogs, a blog with its posts and assistant, post forms, history, public reading."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe
from django_htmx.http import HttpResponseClientRedirect

from accounts.http import HtmxHttpRequest
from blog import blogs, cover_form, covers, diffs, grants, live, post_search, previews, reading, services
from blog.access import DELETE, PUBLISH, READ, ROLE_SCOPES, WRITE
from blog.chat_panel import panel_context
from blog.models import Blog, Post, PostRevision, Seat
from blog.pieces import piece_of_page
from blog.services import OperationError
from config.cache import RETRY_SECONDS, CacheUnavailable


def membership(request: HttpRequest, slug: str) -> tuple[Blog, Seat, grants.Actor]:
    """The blog, the user's seat and their Actor; 404 for anyone who is not a member."""
    found = grants.member_blog(request.user, slug)
    if found is None:
        raise Http404("No such blog.")
    blog, seat = found
    return blog, seat, grants.Actor(request.user, ROLE_SCOPES[seat.role])


#: The posts a blog's page lists at first (the most recently changed), and how many more each
#: "Show more posts" adds; it lists POSTS_SHOWN_MAX at the most.
POSTS_SHOWN = 50
POSTS_SHOWN_MAX = 1000
#: The page of all a blog's posts (past what the blog page's list shows) lists this many at a time.
ALL_POSTS_PER_PAGE = 100
#: A post's history page lists this many revisions, the latest first; older ones are on the next pages.
REVISIONS_PER_PAGE = 50


def posts_shown(request: HttpRequest) -> int:
    """How many posts the list shows: `?shown=` rounded up to a step of POSTS_SHOWN, within the limits."""
    try:
        asked = int(request.GET.get("shown", POSTS_SHOWN))
    except ValueError:
        asked = POSTS_SHOWN
    return min(max(POSTS_SHOWN, -(-asked // POSTS_SHOWN) * POSTS_SHOWN), POSTS_SHOWN_MAX)


def post_list_context(request: HttpRequest, blog: Blog, actor: grants.Actor) -> dict:
    """The post list as the page shows it: `?shown=` of the blog's posts (in steps of POSTS_SHOWN, up
    to POSTS_SHOWN_MAX), the most recently changed first; `more` when the blog has others."""
    shown = posts_shown(request)
    posts = list(Post.objects.filter(blog=blog)[: shown + 1])  # one more says whether there are others
    more = len(posts) > shown
    return {
        "blog": blog,
        "scopes": actor.scopes,
        "posts": posts[:shown],
        "shown": shown,
        "more": more,
        "next_shown": shown + POSTS_SHOWN if more and shown < POSTS_SHOWN_MAX else None,
        # After "Show more posts", focus goes to the first post it added (not on a redraw).
        "first_added": shown - POSTS_SHOWN if "more" in request.GET else None,
    }


def require_scope(actor: grants.Actor, scope: str) -> None:
    if scope not in actor.scopes:
        raise Http404("Not found.")  # a page you may not use does not exist for you


def _post(blog: Blog, pk: int) -> Post:
    return get_object_or_404(Post, blog=blog, pk=pk)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Your blogs, signed in; a visitor gets the front page of public reading."""
    if not request.user.is_authenticated:
        return reading.front_page(request)
    seats = Seat.objects.filter(user=request.user).select_related("blog").order_by("blog__title")
    context = {
        "seats": seats,
        "blogs": reading.public_blogs_page(request),
        "may_start_blogs": blogs.blogs_allowed() > 0,
    }
    return render(request, "blog/home.html", context)


# The pages with the post list and the chat are never kept by the browser: going back to one, it showed
# the page as first loaded (an empty chat, an answer that was streaming then, the posts of then).
@never_cache
@require_GET
@login_required
def blog_detail(request: HttpRequest, slug: str) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    drawn = live.page_mark(blog)  # (before the posts it vouches for: blog/live.py)
    head = live.head_mark(blog, seat)
    context = {"seat": seat, "drawn": drawn, "head": head, **post_list_context(request, blog, actor)}
    context.update(panel_context(request, blog, seat, request.GET.get("chat")))
    return render(request, "blog/blog_detail.html", context)


@piece_of_page
@require_GET
@login_required
def post_list(request: HttpRequest, slug: str) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    return render(request, "blog/_post_list.html", post_list_context(request, blog, actor))


@require_GET
@login_required
def all_posts(request: HttpRequest, slug: str) -> HttpResponse:
    """Every post of the blog, the most recently changed first, a page at a time: the blog page's list
    stops at POSTS_SHOWN_MAX, and an older post stays a link away. Its form narrows them to words of a
    title or a text, and a status (`blog/post_search.py`); a page past the last shows the last."""
    blog, seat, actor = membership(request, slug)
    search = post_search.read(request.GET)
    posts, cut = search.posts(blog)
    page = Paginator(posts, ALL_POSTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "blog": blog,
        "scopes": actor.scopes,
        "page": page,
        "search": search,
        "statuses": post_search.STATUSES,
        "found": search.noun(page.paginator.count),
        "rows": [(post, search.line(post)) for post in page.object_list],
        "capped": cut,
        "matches_max": services.MATCHES_MAX,
        "max_query": post_search.MAX_QUERY_CHARS,
    }
    return render(request, "blog/all_posts.html", context)


# The editor's form may carry a cover image, read with the cover's cap (`blog/cover_form.py`), which
# must be in place before the form is read: so the CSRF check, which reads it, comes after
# (`csrf_protect`), as Django's documentation on modifying upload handlers shows (and as Import does).
# Only the upload of someone who may write here is read at all.
@csrf_exempt
@require_http_methods(["GET", "POST"])
@login_required
def post_new(request: HttpRequest, slug: str) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    require_scope(actor, WRITE)
    if request.method == "POST":
        unread = cover_form.unreadable(request)
        if unread:  # (its body is never read, nor its CSRF token: nothing is written)
            return _new_page(request, blog, actor, {}, cover_error=unread, status=413)
        cover_form.accept(request)
    return _post_new(request, blog, actor)


@csrf_protect
def _post_new(request: HttpRequest, blog: Blog, actor: grants.Actor) -> HttpResponse:
    error, cover_error, invalid, preview_html = None, "", False, ""
    if previewing(request):
        preview_html, cover_error = previewed(request)
    elif request.method == "POST":
        title, body = request.POST.get("title", ""), request.POST.get("body", "")
        try:
            services.clean_title(title)  # (a title or body refused before any image is stored)
            services.clean_body(body)
            cover = cover_form.store(request, blog)
            post = services.post_create(blog=blog, actor=actor, title=title, body=body, cover=cover)
        except cover_form.CoverRefused as exc:
            cover_error, invalid = cover_form.refusal(exc.message), True
        except OperationError as exc:
            error = exc.public_message
            cover_error = cover_form.not_kept() if cover_form.chosen(request) else ""
        else:
            messages.success(request, f"Draft “{post.title}” created.")
            warn_of_namesakes(request, post)
            return redirect("blog:detail", slug=blog.slug)
    return _new_page(
        request,
        blog,
        actor,
        request.POST,
        error=error,
        cover_error=cover_error,
        invalid=invalid,
        preview_html=preview_html,
    )


def _new_page(
    request: HttpRequest,
    blog: Blog,
    actor: grants.Actor,
    data: Any,
    *,
    error: str | None = None,
    cover_error: str = "",
    invalid: bool = False,
    preview_html: str = "",
    status: int = 200,
) -> HttpResponse:
    # (a Create refused comes back with the typed title and its note; a new form, with no title, has none)
    note = title_note(actor, blog, data.get("title", ""))
    context = {
        "blog": blog,
        "post": None,
        "error": error,
        "data": data,
        "title_note": note,
        "preview_html": preview_html,
    }
    context.update(cover_error=cover_error, cover_invalid=invalid or status == 413, **cover_form.field_context())
    return render(request, "blog/post_form.html", context, status=status)


@never_cache
@csrf_exempt  # (checked by `_post_edit`, once the upload's cap is in place: see `post_new`)
@require_http_methods(["GET", "POST"])
@login_required
def post_edit(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The editor. Its form carries the version of the post it opened (`services.post_version`): a Save
    after the post was saved elsewhere writes nothing and shows the page again with the person's words
    in the form, the saved version against them, and the form at the saved version, so that a second
    Save, now knowing, keeps theirs."""
    blog, seat, actor = membership(request, slug)
    require_scope(actor, WRITE)
    if request.method == "POST":
        unread = cover_form.unreadable(request)
        if unread:  # (its body is never read, nor its CSRF token: nothing is written)
            drawn = live.page_mark(blog)
            post = Post.objects.filter(blog=blog, pk=pk).first()
            if post is None or not grants.may_change(actor, post):
                raise Http404("Not found.")
            saved = {"title": post.title, "body": post.body}
            return _edit_page(request, blog, seat, actor, post, drawn, saved, cover_error=unread, status=413)
        cover_form.accept(request)
    return _post_edit(request, blog, seat, actor, pk)


@csrf_protect
def _post_edit(request: HttpRequest, blog: Blog, seat: Seat, actor: grants.Actor, pk: int) -> HttpResponse:
    drawn = live.page_mark(blog)  # (before the post it vouches for: blog/live.py)
    mine = {"title": request.POST.get("title", ""), "body": request.POST.get("body", "")}
    post = Post.objects.filter(blog=blog, pk=pk).first()
    if post is None or not grants.may_change(actor, post):
        return uneditable(request, blog, post, mine)
    error, incoming, cover_error, invalid = None, None, "", False  # (incoming: the saved version, when changed)
    preview_html, version = "", None  # (version: the form's, when not the post's as saved now)
    if previewing(request):  # (the form keeps the version it opened: a Save after it still sees a change meanwhile)
        preview_html, cover_error = previewed(request)
        version = request.POST.get("version")
    elif request.method == "POST":
        try:
            services.clean_title(mine["title"])  # (a title or body refused before any image is stored)
            services.clean_body(mine["body"])
            cover = cover_form.store(request, blog)
            services.post_update(
                post=post,
                actor=actor,
                title=mine["title"],
                body=mine["body"],
                cover=cover,
                clear_cover=request.POST.get(cover_form.REMOVE) == "on",
                version=request.POST.get("version"),
            )
        except cover_form.CoverRefused as exc:
            cover_error, invalid = cover_form.refusal(exc.message), True
        except services.PostChanged:
            post = _post(blog, pk)  # as saved now: the form takes its version, the card shows it
            incoming = incoming_context(request, post, mine)
            error = f"{incoming['saved']['changed']} since you opened it, so nothing was saved. " + (
                "Your words are still in the form; the saved version is shown against them. "
                "Save again to replace it with yours."
                if incoming["differs"]
                else "The form holds the saved words; Save again to save them."
            )
            cover_error = cover_form.not_kept() if cover_form.chosen(request) else ""
        except OperationError as exc:
            error = exc.public_message
            cover_error = cover_form.not_kept() if cover_form.chosen(request) else ""
        else:
            messages.success(request, f"Saved “{post.title}”.")
            warn_of_namesakes(request, post)
            return redirect("blog:detail", slug=blog.slug)
    data = request.POST or {"title": post.title, "body": post.body}
    return _edit_page(
        request,
        blog,
        seat,
        actor,
        post,
        drawn,
        data,
        error=error,
        incoming=incoming,
        cover_error=cover_error,
        invalid=invalid,
        preview_html=preview_html,
        version=version,
    )


def _edit_page(
    request: HttpRequest,
    blog: Blog,
    seat: Seat,
    actor: grants.Actor,
    post: Post,
    drawn: str,
    data: Any,
    *,
    error: str | None = None,
    incoming: dict | None = None,
    cover_error: str = "",
    invalid: bool = False,
    preview_html: str = "",
    version: str | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "blog": blog,
        "post": post,
        "error": error,
        **(incoming or {}),
        "conflict": incoming is not None,
        "drawn": drawn,
        "seat": seat,  # (the note in the assistant's place says why: blog/_assistant_off.html)
        "head": live.head_mark(blog, seat),  # (the column's mark, which the page's stream answers: blog/live.py)
        "editable": True,  # (it could not be drawn otherwise; blog_views.post_head says when that changes)
        "version": version or services.post_version(post),
        "preview_html": preview_html,
        # (the note on the title in the box: the saved one, or the one typed when a Save was refused)
        "title_note": title_note(actor, blog, data.get("title", ""), exclude=post.pk),
        "data": data,
        "cover_error": cover_error,
        "cover_invalid": invalid or status == 413,
        **cover_form.field_context(),
    }
    context.update(panel_context(request, blog, seat, request.GET.get("chat"), post=post))
    return render(request, "blog/post_form.html", context, status=status)


def title_note(actor: grants.Actor, blog: Blog, typed: str, exclude: int | None = None) -> dict[str, Any]:
    """What the editor's note on a shared title (`blog/_title_shared.html`) says of `typed`: the title as
    Save reads it, and the blog's other posts with it, letter case aside, but post `exclude` (each with
    whether this person may open it in the editor; else its history is the link). A title that could
    not be saved (none, or too long) has no note."""
    try:
        title = services.clean_title(typed)
    except OperationError:
        return {"title": "", "namesakes": []}
    others = services.posts_titled(blog.pk, title, exclude=exclude)
    return {"title": title, "namesakes": [(other, grants.may_change(actor, other)) for other in others]}


def warn_of_namesakes(request: HttpRequest, post: Post) -> None:
    """A saved post whose title another post of the blog has too: saved, and the person is told (a
    warning, not a refusal: each post has its own address)."""
    warning = services.namesakes_warning(post)
    if warning:
        messages.warning(request, warning)


def uneditable(request: HttpRequest, blog: Blog, post: Post | None, mine: dict[str, str]) -> HttpResponse:
    """The editor's answer for a post it may not edit: gone (None), or published and the person may not
    publish (a published post is changed only with the publish scope: README). A Save from an editor
    that opened it (its form carries a version), deleted or published meanwhile (by the assistant
    beside it, in another tab), gives the person's words back to copy, not a bare "Not found"."""
    if request.method == "POST" and "version" in request.POST:
        if post is None:
            return render(request, "blog/post_edit_refused.html", {"blog": blog, "post": None, **mine}, status=404)
        if post.status == Post.PUBLISHED:
            return render(request, "blog/post_edit_refused.html", {"blog": blog, "post": post, **mine}, status=409)
    raise Http404("Not found.")


# What a change of the post's state is called; any other change "changed" it.
STATE_CHANGES = {"publish": "published", "unpublish": "unpublished"}


def changed_by(post: Post, user: Any) -> str:
    """Who made the post's latest change, and which (published, unpublished, else changed), as the start of
    a sentence for the person editing it."""
    revision = PostRevision.objects.filter(post=post).select_related("user", "consent").first()
    if revision is None:
        return "Someone changed this post"
    did = STATE_CHANGES.get(revision.action, "changed")
    mine = revision.user_id == user.pk
    if revision.via_assistant:
        who = revision.assistant_label if mine else revision.actor_label
        return f"{who[:1].upper()}{who[1:]} {did} this post"
    if mine:
        return f"You {did} this post in another tab or window"
    return f"{revision.user.username if revision.user else 'Someone'} {did} this post"


def incoming_context(request: HttpRequest, post: Post, mine: dict[str, str]) -> dict:
    """What `blog/_incoming.html` shows: the saved version (with its version and who changed it) against
    the words in the form."""
    saved = {
        "title": post.title,
        "body": post.body,
        "status": post.status,
        "version": services.post_version(post),
        "changed": changed_by(post, request.user),
    }
    return {
        "saved": saved,
        "differs": not _same(mine, post),
        "diff": diffs.version_diff(mine, saved),
    }


@require_POST
@login_required
def post_incoming(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The editor's view of a change made to its post meanwhile (by the assistant beside it, or in
    another tab): the saved version against what the form holds now, as a diff, with the saved
    title and body for the page to take if the person chooses to. Nothing is written.

    A post of the blog that is no longer there (deleted meanwhile, the change the editor just heard of)
    answers 204: an answer, not an error, so the browser's console stays quiet; the page says the post
    can no longer be edited here. Someone who is no longer a member still gets 404, as for any blog."""
    blog, seat, actor = membership(request, slug)
    require_scope(actor, READ)
    post = Post.objects.filter(blog=blog, pk=pk).first()
    if post is None:
        return HttpResponse(status=204)
    mine = {"title": request.POST.get("title", ""), "body": services.as_typed(request.POST.get("body", ""))}
    if len(mine["body"]) > services.MAX_BODY_CHARS:  # (it could not be saved; nothing to compare)
        return HttpResponse(status=413)
    # (with the cover as saved now, which the editor puts in place of the one it shows: `blog/_cover.html`)
    context = {"blog": blog, "post": post, **incoming_context(request, post, mine), **cover_form.field_context()}
    return render(request, "blog/_incoming.html", context)


def _same(mine: dict[str, str], post: Post) -> bool:
    return mine["title"] == post.title and _lines(mine["body"]) == _lines(post.body)


def _lines(text: str) -> list[str]:
    """A body as its lines (one saved before `services.as_typed` may still have CR LF)."""
    return text.splitlines()


@require_POST
@login_required
def post_preview(request: HttpRequest, slug: str) -> HttpResponse:
    """The editor's live preview: the body rendered by the same markdown and sanitiser as the public page,
    from the same cache; a person whose previews spent their share of rendering this minute gets 429."""
    blog, seat, actor = membership(request, slug)
    require_scope(actor, WRITE)
    context, status = preview_of(request, request.POST.get("body", ""))
    return render(request, "blog/_preview.html", context, status=status)


def preview_of(request: HttpRequest, typed: str) -> tuple[dict[str, Any], int]:
    """What `blog/_preview.html` shows of a body as typed, and the status of an answer of it alone: 429
    while this person's previews are paused (they spent their share of rendering this minute, or the cache
    that keeps it does not answer)."""
    body = services.as_typed(typed)
    if len(body) > services.MAX_BODY_CHARS:
        return {"too_long": True, "max_chars": f"{services.MAX_BODY_CHARS:,}"}, 200
    try:
        html, wait = previews.render(request.user, body)
    except CacheUnavailable:  # (the budget cannot be read: previews pause rather than go unlimited)
        return {"unavailable": True, "retry_after": RETRY_SECONDS}, 429
    if html is None:  # this person's previews spent their rendering for now (blog/previews.py)
        return {"paused": True, "retry_after": wait}, 429
    return {"body_html": html}, 200


#: The editor's Preview (drawn only without scripts, which preview as the person types) sends the form
#: with this field: the page comes back with the words in the form and their preview, nothing saved.
PREVIEW = "preview"


def previewing(request: HttpRequest) -> bool:
    return request.method == "POST" and request.POST.get(PREVIEW) == "1"


def previewed(request: HttpRequest) -> tuple[str, str]:
    """For a Preview pressed (`previewing`): the typed body's preview, drawn in the page's preview, and
    what the cover field says of an image chosen (a preview keeps no file), else ""."""
    context, _ = preview_of(request, request.POST.get("body", ""))
    context["pressed"] = True  # (a pause then waits for the button, not for the next change typed)
    messages.info(request, "This is a preview: nothing is saved yet. Save to keep your changes.")
    chosen = f"The image you chose is not kept by a preview: {cover_form.AGAIN} when you save."
    return render_to_string("blog/_preview.html", context, request), chosen if cover_form.chosen(request) else ""


@require_POST
@login_required
def post_namesakes(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    """The editor's note on a shared title as the person types it (the note the editor of a saved post
    shows, `blog/_title_shared.html`): the blog's other posts with the typed title, letter case aside,
    the post being edited (`pk`) aside; nothing when there are none. For members who may edit the post."""
    blog, seat, actor = membership(request, slug)
    require_scope(actor, WRITE)
    if pk is not None:
        post = Post.objects.filter(blog=blog, pk=pk).first()
        if post is None or not grants.may_change(actor, post):
            raise Http404("Not found.")
    return render(
        request,
        "blog/_title_shared.html",
        {"blog": blog, **title_note(actor, blog, request.POST.get("title", ""), exclude=pk)},
    )


def _state_change(request: HtmxHttpRequest, slug: str, pk: int, scope: str, mutate) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    require_scope(actor, scope)
    post = _post(blog, pk)
    try:
        mutate(post=post, actor=actor)
    except OperationError as exc:
        messages.error(request, exc.public_message)
    if request.htmx:
        return render(request, "blog/_post_list.html", post_list_context(request, blog, actor))
    # A press before the page's scripts ran (a plain form): the blog's page again, as much of the list
    # shown as before, at the post.
    query = f"?shown={posts_shown(request)}" if "shown" in request.GET else ""
    return redirect(f"{reverse('blog:detail', args=[blog.slug])}{query}#post-{post.pk}")


@require_POST
@login_required
def post_publish(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    return _state_change(request, slug, pk, PUBLISH, services.post_publish)


@require_POST
@login_required
def post_unpublish(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    return _state_change(request, slug, pk, PUBLISH, services.post_unpublish)


@require_http_methods(["GET", "POST"])
@login_required
def post_delete(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    require_scope(actor, DELETE)
    post = _post(blog, pk)
    if request.method == "POST":
        title = post.title
        services.post_delete(post=post, actor=actor)
        messages.success(request, f"Deleted “{title}”.")
        if request.htmx:
            return HttpResponseClientRedirect(reverse("blog:detail", args=[blog.slug]))
        return redirect("blog:detail", slug=blog.slug)
    return render(request, "blog/post_confirm_delete.html", {"blog": blog, "post": post})


@require_GET
@login_required
def post_history(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    require_scope(actor, READ)
    post = _post(blog, pk)
    history = PostRevision.objects.filter(post=post)
    page = Paginator(history.select_related("user", "consent"), REVISIONS_PER_PAGE).get_page(request.GET.get("page"))
    revisions = list(page.object_list)
    # Each revision's change is its own before → after; versions are numbered from the oldest, 1.
    # Restoring from a revision gives back what it changed from: the version before it.
    newest = page.paginator.count - page.start_index() + 1
    for number, revision in enumerate(revisions):
        revision.version = newest - number
        revision.restore_label = (
            f"Restore version {revision.version - 1}" if revision.version > 1 else "Restore the version before it"
        )
        # (a publish or unpublish changed no words: the next change's row offers the same ones)
        revision.restorable = bool(revision.before) and revision.action not in ("create", "publish", "unpublish")
    # The compare form names every version, read without their texts (which may be long).
    picks = list(history.values_list("pk", "action", "created_at"))
    versions = [
        {"pk": pk, "version": len(picks) - i, "action": action, "created_at": at}
        for i, (pk, action, at) in enumerate(picks)
    ]
    may_revert = seat.role in (Seat.OWNER, Seat.EDITOR)
    context = {"blog": blog, "post": post, "revisions": revisions, "versions": versions, "page": page}
    return render(request, "blog/post_history.html", {**context, "may_revert": may_revert})


@require_GET
@login_required
def post_compare(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Two versions of a post side by side as a readable diff: `?change=<revision>` shows what one
    revision changed; `?from=<revision>&to=<revision>` compares the versions two revisions left."""
    blog, seat, actor = membership(request, slug)
    require_scope(actor, READ)
    post = _post(blog, pk)
    revisions = PostRevision.objects.filter(post=post).select_related("user", "consent")  # (`actor_label`)

    def revision(name: str) -> PostRevision:
        raw = request.GET.get(name, "")
        if not raw.isascii() or not raw.isdigit() or len(raw) > 18:  # (a bigger number is no row's id)
            raise Http404("No such revision.")
        return get_object_or_404(revisions, pk=int(raw))

    if "change" in request.GET:
        change = revision("change")
        old, new, older, newer = change.before, change.after, None, change
    else:
        older, newer = revision("from"), revision("to")
        if (older.created_at, older.pk) > (newer.created_at, newer.pk):
            older, newer = newer, older
        old, new, change = older.after, newer.after, None
    # Named by their numbers, as the history page and its compare form name them: two changes in the
    # same minute by the same person read alike otherwise.
    for shown in (older, newer):
        if shown is not None:
            shown.version = version_number(post, shown)
    context = {
        "blog": blog,
        "post": post,
        "change": change,
        "older": older,
        "newer": newer,
        "diff": diffs.version_diff(old, new),
    }
    return render(request, "blog/post_compare.html", context)


def version_number(post: Post, revision: PostRevision) -> int:
    """The version a revision left, numbered from the post's oldest, 1 (as `post_history` numbers them)."""
    at = revision.created_at
    return PostRevision.objects.filter(
        Q(created_at__lt=at) | Q(created_at=at, pk__lte=revision.pk), post=post
    ).count()  # (one COUNT: the history's order is created_at, then pk)


@require_POST
@login_required
def post_revert(request: HttpRequest, slug: str, pk: int, rev: int) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    if seat.role not in (Seat.OWNER, Seat.EDITOR):
        raise Http404("Not found.")
    post = _post(blog, pk)
    revision = get_object_or_404(PostRevision, pk=rev, post=post)
    try:
        services.post_revert(post=post, actor=actor, revision=revision)
        # Which one, by the number the history page shows it under (the restore is itself the newest version).
        restored, now = version_number(post, revision) - 1, PostRevision.objects.filter(post=post).count()
        messages.success(request, f"Restored version {restored}, now version {now}.")
    except OperationError as exc:
        messages.error(request, exc.public_message)
    return redirect("blog:history", slug=blog.slug, pk=post.pk)


@require_GET
@login_required
def post_cover(request: HttpRequest, slug: str, pk: int) -> HttpResponseBase:
    """A post's cover image, for any member of its blog (drafts too); 404 for everyone else."""
    blog, _, _ = membership(request, slug)
    return covers.cover_response(_post(blog, pk), request.GET.get("v", ""))
