"""Connected clients on the Clients screen: what each may do for you on this blog, narrowed or revoked here.

Each member sees and edits only their own grants. Revoking clears the grant and revokes the client's
tokens for this blog, so its next call is refused with 401; narrowing bites on its next call.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from accounts.http import AuthenticatedHttpRequest
from blog import grants, team
from blog.access import ROLE_SCOPES, scope_choices
from blog.models import Blog, Consent, Seat
from blog.views import membership
from connectors.models import McpCall
from connectors.oauth import blog_of_scopes

RECENT_ACTIONS = 5


def rows(user: Any, blog: Blog, seat: Seat) -> list[dict[str, Any]]:
    """The person's live client grants on the blog, newest first, with what each may do now."""
    mine = ROLE_SCOPES[seat.role]
    consents = list(
        Consent.objects.filter(user=user, blog=blog, revoked_at__isnull=True)
        .exclude(client=grants.ASSISTANT)
        .order_by("-created_at")
    )
    recent = recent_calls(user, blog, [consent.client for consent in consents]) if consents else {}
    return [
        {
            "consent": consent,
            "scopes": scope_choices(mine, set(consent.scopes)),
            "effective": sorted(grants.client_scopes(seat, consent)),
            "recent": recent.get(consent.client, []),
        }
        for consent in consents
    ]


def recent_calls(user: Any, blog: Blog, clients: list[str]) -> dict[str, list[McpCall]]:
    """The RECENT_ACTIONS latest calls of each of `clients` for this user on this blog, newest first:
    one query for them all (each client's calls numbered in their own window), not one per client."""
    latest = Window(RowNumber(), partition_by=[F("client_id")], order_by=[F("created_at").desc(), F("pk").desc()])
    calls = (
        McpCall.objects.filter(blog=blog, user=user, client_id__in=clients)
        .annotate(nth=latest)
        .filter(nth__lte=RECENT_ACTIONS)
    )
    found: dict[str, list[McpCall]] = defaultdict(list)
    for call in calls:  # (the model's order: the newest first)
        found[call.client_id].append(call)
    return found


def revoke_tokens(user: Any, blog: Blog, client: str | None = None) -> int:
    """Revoke a client's (or, with None, every client's) tokens for this user on this blog; how many."""
    revoked = 0
    mine = {"user": user} if client is None else {"user": user, "application__client_id": client}
    refresh_tokens = (
        get_refresh_token_model().objects.filter(**mine, revoked__isnull=True).select_related("access_token")
    )
    for token in refresh_tokens:
        if token.access_token is None or blog_of_scopes(token.access_token.scope) == blog.pk:
            token.revoke()  # revokes its access token too
            revoked += 1
    for token in get_access_token_model().objects.filter(**mine):
        if blog_of_scopes(token.scope) == blog.pk:
            token.revoke()
            revoked += 1
    return revoked


def consent_revoked(sender: Any, consent: Consent, **kwargs: Any) -> None:
    """A connected client's grant was revoked (on the Clients screen or in the admin): its tokens on
    that blog are revoked with it, so its next call is refused with 401, and a token it held stays
    dead if the person connects it again."""
    if consent.client != grants.ASSISTANT:
        revoke_tokens(consent.user, consent.blog, consent.client)


def connected_everywhere(user: Any) -> list[Consent]:
    """The person's live client grants on every blog, by blog then newest first (each with its blog)."""
    consents = Consent.objects.filter(user=user, revoked_at__isnull=True).exclude(client=grants.ASSISTANT)
    return list(consents.select_related("blog").order_by("blog__title", "-created_at"))


def connected_counts(users: list[Any]) -> dict[Any, int]:
    """How many live client grants each of `users` has, on every blog, by the user's pk (one query;
    a person with none is absent)."""
    consents = Consent.objects.filter(user__in=users, revoked_at__isnull=True).exclude(client=grants.ASSISTANT)
    return dict(consents.order_by().values("user").annotate(n=Count("pk")).values_list("user", "n"))


def disconnect_everywhere(user: Any) -> int:
    """Every client the person connected may do nothing more for them, on any blog: each grant revoked,
    then every token of theirs, on any blog. How
    many grants were revoked."""
    consents = connected_everywhere(user)
    with transaction.atomic():
        for consent in consents:
            team.consent_revoke(consent=consent)
        for token in get_refresh_token_model().objects.filter(user=user, revoked__isnull=True):
            token.revoke()  # revokes its access token too
        for token in get_access_token_model().objects.filter(user=user):
            token.revoke()
    return len(consents)


@require_POST
@login_required
def disconnect_all(request: HttpRequest) -> HttpResponse:
    """Revoke every connected client of the signed-in person (offered after a password change)."""
    count = disconnect_everywhere(request.user)
    if count:
        what = "1 client: it" if count == 1 else f"{count} clients: they"
        messages.success(request, f"Disconnected {what} can no longer act for you.")
    else:
        messages.info(request, "No clients were connected.")
    return redirect("password_change_done")


def seat_removed(sender: Any, instance: Seat, **kwargs: Any) -> None:
    """A member is leaving the blog: their connected clients' tokens there stop working now.

    (`pre_delete`: the blog then deletes their Consents there, which alone already refuses every call.)
    """
    revoke_tokens(instance.user, instance.blog)


@require_POST
@login_required
def client_grant(request: AuthenticatedHttpRequest, slug: str, client: str) -> HttpResponse:
    """Save or revoke one connected client's grant: your own only, never beyond your seat."""
    blog, seat, _actor = membership(request, slug)
    consent = grants.client_consent(request.user, blog, client)
    if consent is None:
        raise Http404("No such client.")
    wanted = set(request.POST.getlist("scopes"))
    if request.POST.get("action") == "revoke" or not wanted:
        team.consent_revoke(consent=consent)
        messages.success(request, f"{consent.client_name} can no longer act for you on this blog.")
    elif not wanted <= ROLE_SCOPES[seat.role]:
        messages.error(request, "You can only grant what you can do yourself.")
    else:
        consent = team.consent_grant(user=request.user, blog=blog, client=client, scopes=wanted)
        messages.success(request, f"Saved what {consent.client_name} may do for you.")
    return redirect("blog:clients", slug=blog.slug)
