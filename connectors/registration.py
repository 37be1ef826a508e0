"""Dynamic client registration (RFC 7591): a client connects without anyone setting it up by hand.

django-oauth-toolkit ships a registration view too, but it registers confidential clients by default,
admits every grant type it knows and issues RFC 7592 management tokens; MCP clients need none of
that. This endpoint registers exactly one kind of client: a public one (no secret) using the
authorization code grant with PKCE, with exact redirect URIs that are https, or http on a loopback
host (RFC 8252 §7.3), and nothing else.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import time
import unicodedata
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from oauth2_provider.models import get_application_model

from config.cache import RETRY_SECONDS, CacheUnavailable, needed
from config.middleware import counted_address

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
#: A DNS host name as a URI carries it (ASCII, an internationalised one in its `xn--` form), lower-cased.
HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")
MAX_BODY_BYTES = 16_384
MAX_REDIRECT_URIS = 5
MAX_URI_LENGTH = 2000
GRANT_TYPES = ["authorization_code", "refresh_token"]


class InvalidMetadata(Exception):
    """Client metadata this server will not register; the message is safe to return."""


def is_ip_address(host: str) -> bool:
    """Whether `host` is an IPv4 or IPv6 address (without an IPv6 zone id, which may hold anything)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return "%" not in host


def unprintable(char: str) -> bool:
    """Whether `char` is a control, format, surrogate, private-use or unassigned code point (Unicode's
    "other" categories): a NUL or a lone surrogate (which PostgreSQL cannot hold), a terminal's escape,
    a right-to-left override."""
    return unicodedata.category(char).startswith("C")


#: A client's name keeps these of Unicode's invisible characters: the zero-width joiner of an emoji
#: sequence ("👩‍💻" is woman, joiner, laptop). Variation selectors ("❤️", U+FE00–U+FE0F and U+E0100–U+E01EF)
#: are marks, not "other" characters, and are kept as any mark is. Every other format character goes,
#: the bidi controls first of all (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F: a right-to-left
#: override makes a name read as another).
NAME_JOINER = "\u200d"
#: The emoji tag sequences in use, the flags of England, Scotland and Wales (🏴, the tag letters of
#: "gbeng", "gbsct" or "gbwls", the cancel tag): a name keeps their tag characters. Any other tag
#: character is dropped: tags outside a flag spell text that no one sees, but a program reading the name does.
FLAG_TAG_SEQUENCE = re.compile(
    "\U0001f3f4\U000e0067\U000e0062(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    "|\U000e0077\U000e006c\U000e0073)\U000e007f"
)
TAG_CHARACTERS = re.compile("[\U000e0000-\U000e007f]+")
MAX_NAME_LENGTH = 200


def clean_name(name: str) -> str:
    """A client's name as it is shown on the consent page and the Clients screen, and logged: its
    printable characters, the joiners of its emoji and the tags of its flags (not a terminal's escape,
    a NUL, a lone surrogate or a bidi control), its runs of white space as one space; "" for a name
    with nothing to see."""
    kept = " ".join(outside_flags(name, printable).split())[:MAX_NAME_LENGTH]
    # (a flag cut short at the limit leaves tag characters that make no flag)
    kept = outside_flags(kept, lambda text: TAG_CHARACTERS.sub("", text))
    if all(c.isspace() or c == NAME_JOINER or unicodedata.category(c) == "Mn" for c in kept):
        return ""
    return kept


def printable(text: str) -> str:
    return "".join(c for c in text if c.isspace() or c == NAME_JOINER or not unprintable(c))


def outside_flags(text: str, change: Callable[[str], str]) -> str:
    """`text` with `change` made to all but its flags' tag sequences (FLAG_TAG_SEQUENCE)."""
    parts = FLAG_TAG_SEQUENCE.split(text)
    flags = FLAG_TAG_SEQUENCE.findall(text)
    return change(parts[0]) + "".join(flag + change(part) for flag, part in zip(flags, parts[1:], strict=True))


def redirect_uri_problem(uri: Any) -> str | None:
    """Why `uri` cannot be a redirect URI here, or None when it can."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_LENGTH or uri != uri.strip():
        return "each redirect URI must be a non-empty string"
    if any(c.isspace() for c in uri):
        return "a redirect URI may not contain whitespace"
    if any(unprintable(c) for c in uri):
        return "a redirect URI may not contain control characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        return f"{uri!r} is not a valid URI"
    if parts.fragment or "#" in uri:
        return "a redirect URI may not have a fragment"
    if parts.username is not None or parts.password is not None:
        return "a redirect URI may not carry user information"
    if not parts.hostname:
        return f"{uri!r} is not an absolute URI with a host"
    if not (HOST_NAME.fullmatch(parts.hostname) or is_ip_address(parts.hostname)):
        # (its origin goes into the consent page's CSP header, where `,` and `;` would be syntax)
        return f"{parts.hostname!r} is not a host name (letters, digits, hyphens and dots) or an IP address"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return None
    return "redirect URIs must use https, or http on a loopback host (127.0.0.1, [::1], localhost)"


def clean_metadata(data: Any) -> dict[str, Any]:
    """The application fields for valid client metadata; raises InvalidMetadata otherwise."""
    if not isinstance(data, dict):
        raise InvalidMetadata("The body must be a JSON object.")
    uris = data.get("redirect_uris")
    if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
        raise InvalidMetadata(f"redirect_uris must list between 1 and {MAX_REDIRECT_URIS} URIs.")
    for uri in uris:
        if problem := redirect_uri_problem(uri):
            raise InvalidMetadata(f"Invalid redirect URI: {problem}.")
    grant_types = data.get("grant_types", ["authorization_code"])
    if not isinstance(grant_types, list) or "authorization_code" not in grant_types:
        raise InvalidMetadata("grant_types must include authorization_code.")
    if set(grant_types) - set(GRANT_TYPES):
        raise InvalidMetadata("Only the authorization_code and refresh_token grants are offered.")
    response_types = data.get("response_types", ["code"])
    if response_types != ["code"]:
        raise InvalidMetadata('response_types must be ["code"].')
    if data.get("token_endpoint_auth_method", "none") not in ("none", None):
        raise InvalidMetadata('Only public clients are registered: token_endpoint_auth_method must be "none".')
    name = data.get("client_name") or "Unnamed client"
    if not isinstance(name, str):
        raise InvalidMetadata("client_name must be a string.")
    return {"name": clean_name(name) or "Unnamed client", "redirect_uris": list(dict.fromkeys(uris))}


def seconds_limited(request: HttpRequest) -> int:
    """Seconds until the request's address may register again (0: now), counting this attempt.

    Registration needs no account, so without a limit anyone could fill the database with clients.
    Counted per address (an IPv6 client per /64: `config.middleware.counted_address`) and clock hour
    in Django's cache: shared by every worker and host with `CACHE_URL`, else each worker counts its own.
    While that cache does not answer nothing can be counted, and nothing is registered: CacheUnavailable.
    """
    limit = settings.DCR_REGISTRATIONS_PER_HOUR
    if not limit:
        return 0
    now = time.time()
    key = f"connectors:registrations:{counted_address(request.META.get('REMOTE_ADDR', ''))}:{int(now // 3600)}"
    with needed("client registrations are refused until it answers"):
        cache.add(key, 0, 3600)
        try:
            count = cache.incr(key)
        except ValueError:  # (gone between the two calls: evicted or expired)
            cache.set(key, count := 1, 3600)
    return 0 if count <= limit else max(1, int(3600 - now % 3600))


def _error(description: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": "invalid_client_metadata", "error_description": description}, status=status)


@csrf_exempt  # an OAuth endpoint called by programs, without cookies (RFC 7591)
@require_POST
def register(request: HttpRequest) -> JsonResponse:
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:  # (not a number: Django reads no body then, and the JSON check below refuses it)
        declared = 0
    if declared > MAX_BODY_BYTES:
        return _error("The registration request is too large.", 413)
    try:
        wait = seconds_limited(request)
    except CacheUnavailable:  # (the count cannot be kept: the limit holds by registering no one meanwhile)
        paused = {
            "error": "temporarily_unavailable",
            "error_description": "Registration is unavailable for a moment; try again later.",
        }
        return JsonResponse(paused, status=503, headers={"Retry-After": str(RETRY_SECONDS)})
    if wait:
        body: dict[str, Any] = {
            "error": "temporarily_unavailable",
            "error_description": "Too many registrations; try again later.",
        }
        return JsonResponse(body, status=429, headers={"Retry-After": str(wait)})
    try:
        fields = clean_metadata(json.loads(request.body or b"null"))
    except (ValueError, UnicodeDecodeError, RecursionError):  # (RecursionError: nested past Python's limit)
        return _error("The body must be JSON client metadata.")
    except InvalidMetadata as exc:
        return _error(str(exc))
    Application = get_application_model()
    app = Application(
        name=fields["name"],
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(fields["redirect_uris"]),
        skip_authorization=False,
        algorithm=Application.NO_ALGORITHM,
    )
    try:
        app.full_clean(exclude=["client_secret", "user"])
    except ValidationError as exc:
        return _error(" ".join(exc.messages)[:300])
    app.save()
    log.info("connectors: registered client %s (%s)", app.client_id, app.name)
    body = {
        "client_id": app.client_id,
        "client_id_issued_at": int(app.created.timestamp()),
        "client_name": app.name,
        "redirect_uris": fields["redirect_uris"],
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    return JsonResponse(body, status=201, headers={"Cache-Control": "no-store"})
