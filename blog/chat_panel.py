"""The assistant panel on a blog page: the latest chat resumes, earlier ones are listed, a new one starts."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent import budget, display
from agent.models import Session
from blog import grants
from blog.chat import start_session
from blog.models import Blog, Seat


def blog_sessions(user: Any, blog: Blog):
    return Session.objects.filter(user=user, blog_link__blog=blog).order_by("-updated_at")


def panel_context(request: HttpRequest, blog: Blog, seat: Seat, chat_id: str | None) -> dict[str, Any]:
    if not grants.may_summon(seat):
        return {"assistant": False}
    sessions = list(blog_sessions(request.user, blog)[:20])
    current = next((s for s in sessions if str(s.pk) == chat_id), None) if chat_id else None
    current = current or (sessions[0] if sessions else None)
    if current is None:  # the first visit opens an empty chat, so the form is ready to use
        current = start_session(request.user, blog)
        sessions = [current]
    items, running = display.conversation(current) if current else ([], None)
    meter = budget.meter(request.user)
    grant = grants.assistant(request.user, blog)
    return {
        "assistant": True,
        "chat_sessions": sessions,
        "chat": current,
        "items": items,
        "running": running,
        "running_url": reverse("agent:stream", args=[current.pk, running.pk]) if running else "",
        "meter": display.meter_display(meter),
        "grant_scopes": sorted(grant.scopes),
    }


@require_POST
@login_required
def new_chat(request: HttpRequest, slug: str) -> HttpResponse:
    blog = Blog.objects.filter(slug=slug).first()
    seat = grants.seat_of(request.user, blog) if blog else None
    if seat is None or not grants.may_summon(seat):
        raise Http404("No such blog.")
    session = start_session(request.user, blog)
    return redirect(f"{reverse('blog:detail', args=[blog.slug])}?chat={session.pk}")
