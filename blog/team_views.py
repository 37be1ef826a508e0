"""Owners manage members; every member manages what the assistant may do for them (the Clients screen)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Max
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from blog import grants
from blog.access import ALL_SCOPES, ROLE_SCOPES, SCOPE_LABELS
from blog.models import Consent, PostRevision, Seat
from blog.views import membership


@require_http_methods(["GET", "POST"])
@login_required
def members(request: HttpRequest, slug: str) -> HttpResponse:
    blog, seat, actor = membership(request, slug)
    if seat.role != Seat.OWNER:
        raise Http404("Not found.")
    if request.method == "POST":
        _apply_member_change(request, blog)
        return redirect("blog:members", slug=blog.slug)
    seats = Seat.objects.filter(blog=blog).select_related("user").order_by("user__username")
    return render(request, "blog/members.html", {"blog": blog, "seats": seats, "roles": Seat.ROLES})


def _apply_member_change(request: HttpRequest, blog) -> None:
    action = request.POST.get("action")
    role = request.POST.get("role", Seat.AUTHOR)
    if role not in dict(Seat.ROLES) or role == Seat.OWNER:
        messages.error(request, "Choose editor, author or viewer.")
        return
    if action == "add":
        user = get_user_model().objects.filter(username=request.POST.get("username", "").strip()).first()
        if user is None:
            messages.error(request, "There is no user with that username.")
        elif Seat.objects.filter(blog=blog, user=user).exists():
            messages.error(request, f"{user.username} is already a member.")
        else:
            Seat.objects.create(blog=blog, user=user, role=role, may_use_assistant=False)
            messages.success(request, f"Added {user.username} as {role}.")
        return
    target = Seat.objects.filter(blog=blog, pk=request.POST.get("seat")).exclude(role=Seat.OWNER).first()
    if target is None:
        messages.error(request, "That member can't be changed.")
        return
    if action == "remove":
        target.delete()
        messages.success(request, f"Removed {target.user.username}.")
        return
    target.role = role
    target.may_use_assistant = request.POST.get("may_use_assistant") == "on" and role != Seat.VIEWER
    target.save()
    messages.success(request, f"Updated {target.user.username}.")


@require_http_methods(["GET", "POST"])
@login_required
def clients(request: HttpRequest, slug: str) -> HttpResponse:
    """Your own grants only: the assistant's scopes on this blog, never beyond your seat."""
    blog, seat, actor = membership(request, slug)
    consent = Consent.objects.filter(user=request.user, blog=blog, client=grants.ASSISTANT).first()
    mine = ROLE_SCOPES[seat.role]
    if request.method == "POST":
        wanted = set(request.POST.getlist("scopes"))
        if request.POST.get("action") == "revoke" or not wanted:
            if consent is not None and consent.revoked_at is None:
                consent.revoked_at = timezone.now()
                consent.scopes = []
                consent.save()
            messages.success(request, "The assistant can no longer act for you on this blog.")
        elif not wanted <= mine:
            messages.error(request, "You can only grant what you can do yourself.")
        else:
            consent = consent or Consent(user=request.user, blog=blog, client=grants.ASSISTANT)
            consent.scopes, consent.revoked_at = sorted(wanted), None
            consent.save()
            messages.success(request, "Saved what the assistant may do for you.")
        return redirect("blog:clients", slug=blog.slug)
    granted = set(consent.scopes) if consent and consent.active else set()
    effective = grants.assistant(request.user, blog).scopes
    scopes = [{"name": s, "label": SCOPE_LABELS[s], "granted": s in granted, "allowed": s in mine} for s in ALL_SCOPES]
    # Grouped, not .distinct(): the model's default ordering would add created_at to SELECT DISTINCT
    # and list a chat once per change the assistant made in it.
    used_in = (
        [
            row["chat_session"]
            for row in PostRevision.objects.filter(consent=consent)
            .exclude(chat_session=None)
            .values("chat_session")
            .annotate(last=Max("created_at"))
            .order_by("-last")[:20]
        ]
        if consent
        else []
    )
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
            "sessions_used": used_in,
        },
    )
