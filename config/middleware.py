"""The deploy layer's middleware: a health check for load balancers, the client's address behind a
proxy, and a strict Content-Security-Policy (the pages load only their own scripts and styles)."""

from __future__ import annotations

import io
import ipaddress
import logging
import threading
from collections.abc import Callable
from time import monotonic

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control

logger = logging.getLogger(__name__)

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(entries: list[str]) -> tuple[bool, list[Network]]:
    """`FORWARDED_ALLOW_IPS` read: (any address is the proxy's, the proxy's networks)."""
    networks = []
    for entry in entries:
        if entry in ("", "*"):
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"FORWARDED_ALLOW_IPS must list addresses or networks (10.0.0.5, 10.0.0.0/24) or *, got {entry!r}."
            ) from None
    return "*" in entries, networks


def client_address(remote: str, forwarded_for: str, any_proxy: bool, proxies: list[Network]) -> str:
    """The address a request came from: `remote` (the socket's peer), unless that is a trusted proxy
    that says, in `X-Forwarded-For`, whom it forwarded for.

    Each proxy appends the address it received from, so the list is read from the right: the first
    address that is not a trusted proxy's is the client's; anything left of it was written by the
    client and proves nothing. A value that is not an address stops the reading there.
    """

    def trusted(address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in proxies)

    if not forwarded_for or not (any_proxy or trusted(remote)):
        return remote
    client = remote
    for hop in reversed([hop.strip() for hop in forwarded_for.split(",")]):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        client = hop
        if not trusted(hop):
            break
    return client


#: The IPv6 prefix one host is handed (RFC 6177, RFC 7421): its every address is that host.
HOST_PREFIX_V6 = 64


def counted_address(address: str) -> str:
    """What a limit per client address counts under: an IPv4 address as it is, an IPv6 one as the
    first address of its /64 (`2001:db8:1:2::`, itself an address, so it fits an address column). One
    IPv6 host holds a whole /64 and may take a fresh address for each request, so counted per address
    it would never meet a limit. Anything unreadable as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv4Address):
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/{HOST_PREFIX_V6}", strict=False).network_address)


HEALTH_PATH = "/healthz"
# While migrations are pending, how long a probe answers from the last look (seconds).
MIGRATIONS_RECHECK = 5.0


class HealthCheckMiddleware:
    """`GET /healthz` for a load balancer or an orchestrator: `200` while this worker serves, its
    database answers and has every migration this worker's code knows; `503` otherwise. Redis is
    reported but never fails it: without Redis streams fall back to the database, and every host
    shares it, so all would be taken out at once.

    In a rolling deploy the new code's workers may start before `migrate` has run: their pages answer
    500 until it has, so until then they say `"migrations": "pending"` and the balancer sends them no one.

    First in the chain, so a probe needs no allowed `Host` (a balancer asks by the host's address), is
    never redirected to HTTPS, and opens no session. The answer names no server, address or error.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.migrated = False  # once true, for the worker's life: migrations are never taken back under it
        self.last_look: tuple[float, str] | None = None  # when a look last found them not all applied, and what
        self.looking = threading.Lock()  # probes arriving together: one looks, the others take its answer
        self.history_broken_said = False  # a broken migration history is logged once per worker
        self.in_service: bool | None = None  # what the last probe answered: a change is logged, not each probe

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info != HEALTH_PATH:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return JsonResponse({"error": {"code": "method_not_allowed"}}, status=405, headers={"Allow": "GET, HEAD"})
        from agent.events import get_bus

        database = database_answers()
        migrations = self.migrations() if database else "unknown"
        healthy = database and migrations == "ok"
        events = "in-process" if not settings.AGENT_EVENTS_URL else "unavailable" if get_bus().check() else "ok"
        body = {
            "status": "ok" if healthy else "unavailable",
            "database": "ok" if database else "unavailable",
            "migrations": migrations,
            "events": events,
        }
        if healthy != self.in_service:
            if not healthy:
                logger.warning("/healthz: out of service (database %s, migrations %s)", body["database"], migrations)
            elif self.in_service is not None:
                logger.info("/healthz: back in service")
            self.in_service = healthy
        response = JsonResponse(body, status=200 if healthy else 503)
        response.headers["Cache-Control"] = "no-store"
        return response

    def migrations(self) -> str:
        """`ok`, `pending`, or `unknown` (the database stopped answering meanwhile, or its record of
        migrations is one `migrate` refuses): looked up at the first probe, one probe at a time, then,
        until all are applied, at most every `MIGRATIONS_RECHECK` seconds; once they are, never again."""
        if self.migrated:
            return "ok"
        with self.looking:
            if self.migrated:
                return "ok"
            now = monotonic()
            if self.last_look is not None and now - self.last_look[0] < MIGRATIONS_RECHECK:
                return self.last_look[1]
            found = self.look()
            self.migrated = found == "ok"
            self.last_look = None if self.migrated else (now, found)
            return found

    def look(self) -> str:
        try:
            return "pending" if migrations_pending() else "ok"
        except DatabaseError:
            return "unknown"
        except Exception as e:  # (an inconsistent history, a conflict: `migrate` itself would refuse)
            if not self.history_broken_said:
                self.history_broken_said = True
                logger.error("/healthz: the database's migration history is one migrate refuses: %s", e)
            return "unknown"


class QuietHealthProbes(logging.Filter):
    """On `django.request`: a probe answered `503` is not logged as an error each time the balancer asks
    (every few seconds, through every rolling deploy); the middleware logs when a worker goes out of
    service and when it comes back."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        return getattr(request, "path_info", None) != HEALTH_PATH


def database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        return False
    return True


def migrations_pending() -> bool:
    """Whether the database lacks migrations this code has: Django's `migrate --check`, which exits
    non-zero when it finds unapplied migrations and changes nothing."""
    try:
        call_command("migrate", "--check", "--noinput", verbosity=0, stdout=io.StringIO(), stderr=io.StringIO())
    except SystemExit as e:
        return e.code != 0
    return False


class ClientAddressMiddleware:
    """Behind a trusted proxy (`FORWARDED_ALLOW_IPS`), `REMOTE_ADDR` becomes the client's address, so
    what is counted per address (failed sign-ins, client registrations) counts people, not the proxy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.any_proxy, self.proxies = trusted_networks(settings.FORWARDED_ALLOW_IPS)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        meta = request.META
        forwarded_for = meta.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded_for:
            meta["REMOTE_ADDR"] = client_address(
                meta.get("REMOTE_ADDR", ""), forwarded_for, self.any_proxy, self.proxies
            )
        return self.get_response(request)


POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith("/admin/"):
            response.headers.setdefault("Content-Security-Policy", POLICY)
        return response


class PrivateByDefaultMiddleware:
    """`Cache-Control: private` on every answer made from a person's session (or an `Authorization`
    header) whose view set no `Cache-Control` of its own: what the site shows one person is never kept
    by a cache between them and it for someone else. `Vary: Cookie` (the session's) alone relied on
    every such cache honouring it. An answer the same for everyone (a public post read signed out,
    static files) reads no session and is left as it is; a view that says more (`never_cache`, the
    streams' `no-store`) keeps its words."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.has_header("Cache-Control"):
            return response
        session = getattr(request, "session", None)
        personal = session is not None and session.accessed and bool(session.keys())
        if personal or "HTTP_AUTHORIZATION" in request.META:
            patch_cache_control(response, private=True)
        return response
