"""Starting a blog (New blog, from the home page), and its owner's Settings: its title and description,
handing it over to a member, and deleting it; and the blog page's header (and the editor's top line),
which follow them live, the assistant's column with them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.http import AuthenticatedHttpRequest
from blog import blogs, grants, live
from blog.access import WRITE
from blog.chat_panel import panel_context
from blog.models import Blog, Post, Seat
from blog.pieces import piece_of_page
from blog.services import OperationError
from blog.team_views import ownership, posted_seat
from blog.views import membership


@piece_of_page
@require_GET
@login_required
def blog_head(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The blog page's header as its member sees it now (title, description, the links their seat opens)
    and the page's title: what an open page redraws when the blog is renamed, described or handed over
    (`live.blog_updated`), or its member's seat is saved (`live.seat_changed`). Members only, as the page
    (anyone else: 404). The assistant's column follows the seat with it (`column_context`)."""
    blog, seat, actor = membership(request, slug)
    context = {**column_context(request, blog, seat), "scopes": actor.scopes}
    return render(request, "blog/_blog_head.html", {**context, "redrawn": True})


@piece_of_page
@require_GET
@login_required
def post_head(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    """The editor's top line (back to the blog, the post's history, the link to the assistant beside it),
    redrawn as the blog page's header is, and for the same reasons: the assistant's column beside the
    editor follows the seat with it (`column_context`, the panel of chats about this post). The post's
    form is never part of the answer: what is typed in it stays the page's. Members only, posts of this
    blog only (anything else: 404).

    Whether the member may still edit the post is decided here too (the editor's Save asks the same:
    the write scope, and the publish scope for a published post, `grants.may_change`): the line says
    it (`data-editable`, which the editor's form follows, editor.js) and brings out of band the notice
    that says why, or the notice's empty place once they may again."""
    blog, seat, actor = membership(request, slug)
    post = get_object_or_404(Post, blog=blog, pk=pk)
    may_write = WRITE in actor.scopes
    context = {
        **column_context(request, blog, seat, post),
        "post": post,
        "editable": may_write and grants.may_change(actor, post),
        "published_only": may_write,  # (what stops them then: the post is published, their role does not publish)
        "redrawn": True,
    }
    return render(request, "blog/_editor_head.html", context)


def column_context(request: AuthenticatedHttpRequest, blog: Blog, seat: Seat, post: Post | None = None) -> dict:
    """The assistant's column as a redrawn header brings it, decided here: the page says which it shows
    (`?assistant=1` the panel, `0` the note in its place). When the seat no longer matches it (the
    assistant taken away, or allowed again), the other column comes out of band, with the page's stream
    naming the chat the new panel shows (the latest of its panel, as a page load resumes it) and the
    header's mark (`live.head_mark`, read from what is drawn: no query), which the stream's first answers.
    A note, which holds nothing of the person's, is drawn again each time (the blog's title in it); a
    panel that stays is never touched here: words may be typed in it, an answer streaming. Asked without
    either (a page drawn before), the header alone, its assistant's link as the page's column has it
    (`assistant` present: the panel)."""
    shown = request.GET.get("assistant")
    context = {"blog": blog, "seat": seat, "assistant": shown is not None, "head": live.head_mark(blog, seat)}
    if shown in ("0", "1"):
        allowed, drawn = grants.may_summon(seat), shown == "1"
        context["assistant"] = allowed
        if allowed != drawn:
            context.update(oob_column="#assistant" if drawn else "#assistant-off", oob_stream=True)
            if allowed:
                context.update(panel_context(request, blog, seat, None, post=post))
        elif not allowed:
            context["oob_column"] = "#assistant-off"
    return context


@require_http_methods(["GET", "POST"])
@login_required
def blog_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The New blog form; its POST makes the blog, its person the owner, and opens it."""
    if blogs.blogs_allowed() == 0:  # (only the admin makes blogs: no form at all)
        return render(request, "blog/blog_new.html", {"refusal": blogs.limit_reached()}, status=403)
    typed = {name: request.POST.get(name, "") for name in ("title", "slug", "description")}
    context = {"typed": typed, "description_max": blogs.DESCRIPTION_MAX}
    if request.method != "POST":
        refusal = "" if blogs.may_start(request.user) else blogs.limit_reached()
        return render(request, "blog/blog_new.html", {**context, "refusal": refusal})
    try:
        blog = blogs.blog_create(owner=request.user, **typed)
    except blogs.BlogRefused as exc:
        context.update(error=exc.public_message, field=exc.field)
        return render(request, "blog/blog_new.html", context, status=400)
    except OperationError as exc:  # (past BLOGS_PER_PERSON)
        return render(request, "blog/blog_new.html", {"refusal": exc.public_message}, status=403)
    messages.success(request, f"Started {blog.title}.")
    return redirect("blog:detail", slug=blog.slug)


#: What Settings says it saved, by the fields that changed (`blogs.blog_update`).
SAVED = {
    ("title",): "Saved the title.",
    ("description",): "Saved the description.",
    ("title", "description"): "Saved the title and the description.",
    (): "Saved: nothing had changed.",
}


@require_http_methods(["GET", "POST"])
@login_required
def blog_settings(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The owner's: change the blog's title (its address never changes) and what it is about. A form
    without the description (a page opened before it was there) leaves the description as it is."""
    blog, _actor = ownership(request, slug)
    if request.method != "POST":
        return _settings_page(request, blog)
    title, description = request.POST.get("title", ""), request.POST.get("description")
    try:
        changed = blogs.blog_update(blog=blog, title=title, description=description)
    except blogs.BlogRefused as exc:  # (nothing saved: `blog_update` checks both first)
        shown = {"title": title, "description": blog.description if description is None else description}
        return _settings_page(request, blog, status=400, **shown, **{f"{exc.field}_error": exc.public_message})
    messages.success(request, SAVED[tuple(changed)])
    return redirect("blog:settings", slug=blog.slug)


@require_POST
@login_required
def blog_delete(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The owner's, from Settings: deletes the blog once its address is typed to confirm."""
    blog, _actor = ownership(request, slug)
    confirm = request.POST.get("confirm", "")
    if confirm.strip() != blog.slug:
        said = f"Type the blog's address, {blog.slug}, to delete it. Nothing was deleted."
        return _settings_page(request, blog, confirm=confirm, delete_error=said, status=400)
    title = blog.title
    try:
        blogs.blog_delete(blog=blog, actor=request.user)
    except OperationError as exc:  # (handed over meanwhile, from another tab: not hers to delete any more)
        messages.error(request, exc.public_message)
        return redirect("blog:detail", slug=blog.slug)
    messages.success(request, f"Deleted {title}, with its posts and chats.")
    return redirect("blog:home")


@require_POST
@login_required
def blog_hand_over(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The owner's, from Settings: makes the chosen member the owner once their username is typed to
    confirm; the former owner stays on as an editor and lands on the blog's page."""
    blog, _actor = ownership(request, slug)
    chosen, confirm = request.POST.get("seat", ""), request.POST.get("confirm", "")
    shown = {"chosen": chosen, "hand_over_confirm": confirm}
    seat = _other_members(request, blog).filter(pk=posted_seat(request)).first()
    if seat is None:
        return _hand_over_refused(request, blog, blogs.NOT_A_MEMBER, "seat", shown)
    username = seat.user.username
    if confirm.strip() != username:
        said = f"Type {username}'s username, {username}, to hand the blog over to them. Nothing changed."
        return _hand_over_refused(request, blog, said, "confirm", shown)
    try:
        blogs.blog_hand_over(blog=blog, to_seat=seat, actor=request.user)
    except blogs.HandOverRefused as exc:
        if exc.field == "owner":  # (handed over meanwhile, from another tab: not hers to give any more)
            messages.error(request, exc.public_message)
            return redirect("blog:detail", slug=blog.slug)
        return _hand_over_refused(request, blog, exc.public_message, exc.field, shown)
    messages.success(request, f"Handed {blog.title} over to {username}: you are an editor here now.")
    return redirect("blog:detail", slug=blog.slug)


def _hand_over_refused(
    request: AuthenticatedHttpRequest, blog: Blog, said: str, field: str, shown: dict[str, str]
) -> HttpResponse:
    """The Settings page again, the refusal beside the field it is about (`seat` or `confirm`), what was
    chosen and typed kept."""
    return _settings_page(request, blog, status=400, hand_over_error=said, hand_over_field=field, **shown)


def _settings_page(request: AuthenticatedHttpRequest, blog: Blog, status: int = 200, **shown: str) -> HttpResponse:
    members = _other_members(request, blog).order_by("user__username")
    context = {
        "blog": blog,
        "title": shown.get("title", blog.title),
        "description": shown.get("description", blog.description),
        "description_max": blogs.DESCRIPTION_MAX,
        "members": members,
        **shown,
    }
    return render(request, "blog/blog_settings.html", context, status=status)


def _other_members(request: AuthenticatedHttpRequest, blog: Blog) -> QuerySet[Seat]:
    """The seats the owner may hand the blog over to: every member's but their own."""
    return Seat.objects.filter(blog=blog).exclude(user=request.user).select_related("user")
