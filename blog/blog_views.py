"""Starting a blog (New blog, from the home page), and its owner's Settings: its title, and deleting it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from accounts.http import AuthenticatedHttpRequest
from blog import blogs
from blog.models import Blog
from blog.services import OperationError
from blog.team_views import ownership


@require_http_methods(["GET", "POST"])
@login_required
def blog_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The New blog form; its POST makes the blog, its person the owner, and opens it."""
    if blogs.blogs_allowed() == 0:  # (only the admin makes blogs: no form at all)
        return render(request, "blog/blog_new.html", {"refusal": blogs.limit_reached()}, status=403)
    typed = {"title": request.POST.get("title", ""), "slug": request.POST.get("slug", "")}
    if request.method != "POST":
        refusal = "" if blogs.may_start(request.user) else blogs.limit_reached()
        return render(request, "blog/blog_new.html", {"typed": typed, "refusal": refusal})
    try:
        blog = blogs.blog_create(owner=request.user, title=typed["title"], slug=typed["slug"])
    except blogs.BlogRefused as exc:
        context = {"typed": typed, "error": exc.public_message, "field": exc.field}
        return render(request, "blog/blog_new.html", context, status=400)
    except OperationError as exc:  # (past BLOGS_PER_PERSON)
        return render(request, "blog/blog_new.html", {"refusal": exc.public_message}, status=403)
    messages.success(request, f"Started {blog.title}.")
    return redirect("blog:detail", slug=blog.slug)


@require_http_methods(["GET", "POST"])
@login_required
def blog_settings(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """The owner's: change the blog's title (its address never changes)."""
    blog, _actor = ownership(request, slug)
    if request.method != "POST":
        return _settings_page(request, blog)
    title = request.POST.get("title", "")
    try:
        blogs.blog_rename(blog=blog, title=title)
    except OperationError as exc:  # (the blog's title unchanged: `blog_rename` checks it first)
        return _settings_page(request, blog, title=title, title_error=exc.public_message, status=400)
    messages.success(request, "Saved the title.")
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
    blogs.blog_delete(blog=blog, actor=request.user)
    messages.success(request, f"Deleted {title}, with its posts and chats.")
    return redirect("blog:home")


def _settings_page(request: AuthenticatedHttpRequest, blog: Blog, status: int = 200, **shown: str) -> HttpResponse:
    context = {"blog": blog, "title": shown.get("title", blog.title), **shown}
    return render(request, "blog/blog_settings.html", context, status=status)
