"""Owners manage members; every member manages what the assistant may do for them (the Clients screen)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods, require_safe

from accounts.http import AuthenticatedHttpRequest
from agent.models import Session
from agent.upload_handler import OVERHEAD, UploadLimitHandler, refusal_of
from agent.uploads import MB, Limits
from blog import blogs, export, grants, imports, team
from blog.access import scope_choices
from blog.chat_panel import labelled
from blog.models import Blog, Consent, PostRevision, Seat
from blog.views import membership
from config.cache import RETRY_SECONDS, CacheUnavailable


@require_http_methods(["GET", "POST"])
@login_required
def members(request: HttpRequest, slug: str) -> HttpResponse:
    blog = _owned_blog(request, slug)
    adding = {"username": "", "role": Seat.EDITOR, "error": ""}
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "remove":  # a form from before removing asked first: ask now
            return redirect("blog:member_remove", slug=blog.slug, pk=posted_seat(request))
        if action != "add":
            if not _update_member(request, blog):
                return redirect("blog:detail", slug=blog.slug)
            return redirect("blog:members", slug=blog.slug)
        adding = _add_member(request, blog)
        if not adding["error"]:
            return redirect("blog:members", slug=blog.slug)
    seats = Seat.objects.filter(blog=blog).select_related("user").order_by("user__username")
    return render(
        request,
        "blog/members.html",
        {"blog": blog, "seats": seats, "roles": _GRANTABLE_ROLES, "adding": adding},
    )


@require_http_methods(["GET", "POST"])
@login_required
def member_remove(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Removing a member asks first (as deleting a post does); the POST removes them."""
    blog = _owned_blog(request, slug)
    target = get_object_or_404(Seat.objects.select_related("user").exclude(role=Seat.OWNER), blog=blog, pk=pk)
    if request.method == "POST":
        with transaction.atomic():
            if not blogs.still_owned(blog, request.user):  # (handed over from another tab meanwhile)
                messages.error(request, blogs.NO_LONGER_OWNER)
                return redirect("blog:detail", slug=blog.slug)
            team.seat_remove(seat=target)
        messages.success(request, f"Removed {target.user.username}.")
        return redirect("blog:members", slug=blog.slug)
    return render(request, "blog/member_confirm_remove.html", {"blog": blog, "seat": target})


# The whole blog, drafts included, is its owner's to take: the export is theirs alone, as the Members screen
# is (404 for everyone else). A GET, since it changes nothing; never kept by a browser or a proxy. One at a
# time a person: each holds its request and a database connection until its ZIP is written.
@never_cache
@require_safe
@login_required
def blog_export(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse | FileResponse:
    """Every post of the blog as Markdown, with its cover, in one ZIP (`blog/export.py`)."""
    blog = _owned_blog(request, slug)
    try:
        with export.one_at_a_time(request.user.pk):
            archive, name = export.blog_archive(blog)
    except export.ExportRunning:
        busy = render(request, "blog/export_running.html", {"blog": blog}, status=429)
        busy["Retry-After"] = str(export.RETRY_SECONDS)
        return busy
    except CacheUnavailable:  # (the cache that holds the place does not answer: no export starts meanwhile)
        paused = render(request, "blog/export_unavailable.html", {"blog": blog}, status=503)
        paused["Retry-After"] = str(RETRY_SECONDS)
        return paused
    return FileResponse(archive, as_attachment=True, filename=name, content_type="application/zip")


# The upload is read by this view's own handlers (the import's cap, not a chat's attachment limits), which
# must be in place before the form is read: so the CSRF check, which reads it, comes after (`csrf_protect`),
# as Django's documentation on modifying upload handlers shows. The owner check comes first: no one else's
# upload is read at all.
@csrf_exempt
@require_http_methods(["GET", "POST"])
@login_required
def blog_import(request: HttpRequest, slug: str) -> HttpResponse:
    """Posts from an export's ZIP or Markdown files (`blog/imports.py`), for the blog's owner."""
    blog, actor = ownership(request, slug)
    if request.method == "POST" and _content_length(request) > imports.MAX_UPLOAD_BYTES + OVERHEAD:
        return _import_page(request, blog, _too_large(), status=413)  # (its body is never read)
    handler = UploadLimitHandler(request)
    cap = imports.MAX_UPLOAD_BYTES
    handler.limits = Limits(per_file=cap, per_message=cap, files=1, pixels=handler.limits.pixels)
    others = [h for h in request.upload_handlers if not isinstance(h, UploadLimitHandler)]
    request.upload_handlers = [handler, *others]
    return _blog_import(request, blog, actor)


@csrf_protect
def _blog_import(request: HttpRequest, blog: Blog, actor: grants.Actor) -> HttpResponse:
    if request.method != "POST":
        return _import_page(request, blog, "")
    upload = request.FILES.get("file")  # (read here: the handler's refusal is known once the form is read)
    refused = refusal_of(request)
    if refused and refused[0] == "too_many_files":  # (the page's form sends one; a crafted one can send more)
        return _import_page(request, blog, "Choose one file to import: nothing was imported.", status=400)
    if refused:
        return _import_page(request, blog, _too_large(), status=413)
    if upload is None:
        return _import_page(request, blog, "Choose a file to import.", status=400)
    keep = request.POST.get("keep_published") == "on"
    try:
        report = imports.import_upload(
            blog=blog, actor=actor, upload=upload, name=upload.name or "", keep_published=keep
        )
    except imports.ImportRefused as exc:
        return _import_page(request, blog, exc.message, status=400)
    messages.success(request, report.message())
    return redirect("blog:detail", slug=blog.slug)


def _import_page(request: HttpRequest, blog: Blog, error: str, status: int = 200) -> HttpResponse:
    context = {
        "blog": blog,
        "error": error,
        "max_mb": imports.MAX_UPLOAD_BYTES // MB,
        "max_posts": f"{imports.MAX_POSTS:,}",
    }
    return render(request, "blog/blog_import.html", context, status=status)


def _too_large() -> str:
    return f"That file is larger than the {imports.MAX_UPLOAD_BYTES // MB} MB an import takes: nothing was imported."


def _content_length(request: HttpRequest) -> int:
    length = request.META.get("CONTENT_LENGTH") or "0"
    return int(length) if length.isascii() and length.isdigit() else 0


#: The roles an owner gives on the Members screen (a blog has one owner).
_GRANTABLE_ROLES = [(value, label) for value, label in Seat.ROLES if value != Seat.OWNER]


def ownership(request: HttpRequest, slug: str) -> tuple[Blog, grants.Actor]:
    """The blog and its owner's Actor, for its owner; 404 for everyone else (the Members screen, Export,
    Import and the blog's Settings do not exist for them). The owner is the blog's (`Blog.owner`), holding
    its owner's seat: not a former owner whose seat an admin's change of owner left an owner's (blog/0009
    made those editors' and `team.owner_changed` does now; this holds whatever a seat says)."""
    blog, seat, actor = membership(request, slug)
    if seat.role != Seat.OWNER or blog.owner_id != request.user.pk:
        raise Http404("Not found.")
    return blog, actor


def _owned_blog(request: HttpRequest, slug: str) -> Blog:
    return ownership(request, slug)[0]


def _add_member(request: HttpRequest, blog: Blog) -> dict[str, str]:
    """Add the named user; what was asked for and, when it failed, why (shown beside the field)."""
    username, role = request.POST.get("username", "").strip(), request.POST.get("role", Seat.AUTHOR)
    adding = {"username": username, "role": role, "error": ""}
    # (no username has a NUL, which PostgreSQL could not look up: a 500)
    user = get_user_model().objects.filter(username=username).first() if username and "\x00" not in username else None
    if role not in dict(_GRANTABLE_ROLES):
        adding["error"] = "Choose editor, author or viewer."
    elif not username:
        adding["error"] = "Enter the username of the person to add."
    elif user is None:
        adding["error"] = f"There is no user named “{username}”."
    elif Seat.objects.filter(blog=blog, user=user).exists():
        adding["error"] = f"{user.username} is already a member."
    else:
        try:
            team.seat_add(blog=blog, user=user, role=role)
        except IntegrityError:  # added by another request (a second tab, a double click) since the check
            adding["error"] = f"{user.username} is already a member."
        else:
            messages.success(request, f"Added {user.username} as {role}.")
    return adding


def posted_seat(request: HttpRequest) -> int:
    """The posted seat's id; 0 (no seat) for anything that is not one."""
    seat = request.POST.get("seat", "")
    return int(seat) if seat.isascii() and seat.isdigit() and len(seat) < 19 else 0


def _update_member(request: HttpRequest, blog: Blog) -> bool:
    """Change a member's role and assistant from the Members screen; False when the blog is no longer the
    requester's (handed over from another tab meanwhile: the change waited for it, then made none)."""
    role = request.POST.get("role", Seat.AUTHOR)
    if role not in dict(_GRANTABLE_ROLES):
        messages.error(request, "Choose editor, author or viewer.")
        return True
    with transaction.atomic():
        if not blogs.still_owned(blog, request.user):
            messages.error(request, blogs.NO_LONGER_OWNER)
            return False
        target = Seat.objects.filter(blog=blog, pk=posted_seat(request)).exclude(role=Seat.OWNER).first()
        if target is None:
            messages.error(request, "That member can't be changed.")
            return True
        may_use = request.POST.get("may_use_assistant") == "on"
        seat = team.seat_update(seat=target, role=role, may_use_assistant=may_use)
    messages.success(request, _now_said(seat))
    return True


def _now_said(seat: Seat) -> str:
    """What a Save made of the member, so the owner hears what the form did ("Updated bob." said nothing)."""
    name = seat.user.username
    if seat.role == Seat.VIEWER:
        return f"{name} is now a viewer (viewers never use the assistant)."
    may = "may" if seat.may_use_assistant else "may not"
    return f"{name} is now an {seat.role} and {may} use the assistant."


def chat_page(blog: Blog, post_id: int | None, chat_id: object) -> str:
    """The page a chat opens on: the blog page, or (a chat about a post) beside that post's editor."""
    page = (
        reverse("blog:detail", args=[blog.slug])
        if post_id is None
        else reverse("blog:post_edit", args=[blog.slug, post_id])
    )
    return f"{page}?chat={chat_id}"


@require_http_methods(["GET", "POST"])
@login_required
def clients(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """Your own grants only: the assistant's scopes on this blog, never beyond your seat."""
    blog, seat, actor = membership(request, slug)
    consent = Consent.objects.filter(user=request.user, blog=blog, client=grants.ASSISTANT).first()
    grantable = grants.assistant_grantable(seat)
    if request.method == "POST":
        wanted = set(request.POST.getlist("scopes"))
        if request.POST.get("action") == "revoke" or not wanted:
            if consent is not None:
                team.consent_revoke(consent=consent)
            messages.success(request, "The assistant can no longer act for you on this blog.")
        elif not grantable:
            messages.error(request, "Viewers can't use the assistant, so there is nothing to allow it.")
        elif not wanted <= grantable:
            messages.error(request, "You can only grant what you can do yourself.")
        else:
            team.consent_grant(user=request.user, blog=blog, client=grants.ASSISTANT, scopes=wanted)
            messages.success(request, "Saved what the assistant may do for you.")
        return redirect("blog:clients", slug=blog.slug)
    live_consent = consent if consent is not None and consent.active else None
    granted = set(live_consent.scopes) if live_consent else set()
    effective = grants.assistant_scopes(seat, live_consent)  # (the seat and grant just read, not read again)
    scopes = scope_choices(grantable, granted)
    used_in = _chats_acted_in(blog, consent) if consent else []
    return render(
        request,
        "blog/clients.html",
        {
            "blog": blog,
            "seat": seat,
            "consent": consent,
            "scopes": scopes,
            "effective": sorted(effective),
            "may_summon": grants.may_summon(seat),
            "grantable": bool(grantable),
            "sessions_used": used_in,
        },
    )


def _chats_acted_in(blog: Blog, consent: Consent) -> list[dict[str, object]]:
    """The latest chats where the assistant changed posts under `consent`, each named as the panel's
    "Earlier chats" names it (its title, else the start of its first message) with when it last acted
    there: an id's first characters told a person nothing of which chat it was."""
    # Grouped, not .distinct(): the model's default ordering would add created_at to SELECT DISTINCT
    # and list a chat once per change the assistant made in it.
    rows = list(
        PostRevision.objects.filter(consent=consent)
        .exclude(chat_session=None)
        .values("chat_session", "chat_session__blog_link__post")
        .annotate(last=Max("created_at"))
        .order_by("-last")[:20]
    )
    # Each Session as `labelled` gives it back carries `label`, an attribute the model does not declare.
    chats: list[Any] = labelled(Session.objects.filter(pk__in=[row["chat_session"] for row in rows]))
    labels = {chat.pk: chat.label for chat in chats}
    # Each chat's link opens it where it lives: on the blog page, or beside its post's editor.
    return [
        {
            "url": chat_page(blog, row["chat_session__blog_link__post"], row["chat_session"]),
            "label": labels.get(row["chat_session"], ""),
            "last": row["last"],
        }
        for row in rows
    ]
