"""The authorization server through HTTP: registration, the consent page, tokens, and what each refuses."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_application_model

from blog.models import Consent
from tests.connectors.conftest import (
    ALL,
    REDIRECT,
    RESOURCE,
    approve,
    authorize_query,
    connect,
    exchange,
    pkce,
    redirect_params,
    register,
)

pytestmark = pytest.mark.django_db
INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def test_metadata_documents_agree():
    prm = Client().get("/.well-known/oauth-protected-resource/mcp").json()
    assert prm["resource"] == RESOURCE
    assert prm["authorization_servers"] == ["http://testserver"]
    assert prm["scopes_supported"] == ALL
    assert Client().get("/.well-known/oauth-protected-resource").json()["resource"] == RESOURCE
    asm = Client().get("/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == "http://testserver"
    assert asm["authorization_endpoint"] == "http://testserver/oauth/authorize/"
    assert asm["token_endpoint"] == "http://testserver/oauth/token/"
    assert asm["registration_endpoint"] == "http://testserver/oauth/register/"
    assert asm["revocation_endpoint"] == "http://testserver/oauth/revoke/"
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert asm["response_types_supported"] == ["code"]
    assert asm["authorization_response_iss_parameter_supported"] is True


def test_a_call_without_a_token_is_told_where_to_authorise():
    response = Client().post("/mcp", data=json.dumps(INIT), content_type="application/json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == (
        'Bearer resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.parametrize(
    "uri",
    [
        "http://example.com/callback",  # plain http off loopback
        "ftp://127.0.0.1/cb",
        "javascript:alert(1)",
        "https://example.com/cb#frag",
        "https://user:pw@example.com/cb",
        "/relative/cb",
        "https://example.com/a b",
        "",
        # A host that is no host name: the consent page puts the redirect origin into its CSP header
        # (`form-action`), where `,` starts a second policy and `;` another directive.
        "https://evil.example,x;sandbox/cb",
        "https://evil.example;script-src/cb",
        "https://evil.example'/cb",
        "https://exa%2fmple.com/cb",
        "https://-evil.example/cb",
        "https://[fe80::1%a,b;sandbox]/cb",  # an IPv6 zone id may hold anything
    ],
)
def test_registration_refuses_bad_redirect_uris(uri):
    response = Client().post(
        "/oauth/register/", data=json.dumps({"redirect_uris": [uri]}), content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize(
    "uri",
    [
        # (JSON escapes: a NUL, a lone surrogate; PostgreSQL can hold neither, so each was a 500)
        "http://127.0.0.1:5999/cb\\u0000",
        "http://127.0.0.1:5999/c\\u0000b?x=1",
        "https://app.example/cb\\ud800",
        "https://app.example/cb\\u001b[2J",  # a terminal's escape
        "https://app.example/cb\\u202e",  # a bidirectional override
    ],
)
def test_registration_refuses_a_redirect_uri_with_control_characters(uri):
    body = '{"redirect_uris": ["' + uri + '"]}'  # (written out: json.dumps would escape the backslashes)
    response = Client().post("/oauth/register/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_client_metadata",
        "error_description": "Invalid redirect URI: a redirect URI may not contain control characters.",
    }
    assert not get_application_model().objects.exists()


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("Desk\\u0000Bot", "DeskBot"),
        ("Desk\\ud800Bot", "DeskBot"),
        ("\\u001b[31mDesk\\u001b[0m Bot", "[31mDesk[0m Bot"),  # no escape sequence reaches the log line
        ("Desk Bot\\u202e\\u0000", "Desk Bot"),
        ("\\u0000\\u200b", "Unnamed client"),
    ],
)
def test_a_clients_name_keeps_no_control_or_format_characters(name, kept, caplog):
    """The name is shown on the consent page and the Clients screen, and logged: a NUL or a lone
    surrogate (PostgreSQL holds neither) was a 500 for anyone, a terminal's escape reached the
    operator's log line as it was, a right-to-left override turned the rest of the name around."""
    body = '{"client_name": "' + name + '", "redirect_uris": ["' + REDIRECT + '"]}'
    response = Client().post("/oauth/register/", data=body, content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["client_name"] == kept
    assert get_application_model().objects.get().name == kept
    assert not [r for r in caplog.records if "\x1b" in r.getMessage()]


ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"  # 🏴 + tags "gbeng" + cancel tag


def registered_name(name: str) -> str:
    response = Client().post(
        "/oauth/register/",
        data=json.dumps({"client_name": name, "redirect_uris": [REDIRECT]}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    assert (
        get_application_model().objects.get(client_id=response.json()["client_id"]).name
        == response.json()["client_name"]
    )
    return response.json()["client_name"]


@pytest.mark.parametrize(
    "name",
    [
        "\U0001f469\u200d\U0001f4bb Bot",  # 👩‍💻: woman, zero-width joiner, laptop
        "\U0001f3f3\ufe0f\u200d\U0001f308 Pride",  # 🏳️‍🌈: a variation selector and a joiner
        "\u2764\ufe0f Desk",  # ❤️
        "\u845b\U000e0100 Kanji",  # an ideographic variation selector (U+E0100)
        f"{ENGLAND} Desk",  # a subdivision flag: its tag characters
    ],
)
def test_a_clients_name_keeps_the_joiners_selectors_and_flag_tags_of_its_emoji(name):
    assert registered_name(name) == name


@pytest.mark.parametrize(
    "control",
    ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f"],
)
def test_a_clients_name_still_loses_every_bidi_control_beside_an_emojis_joiner(control):
    """A bidi control can make a name read as another (a right-to-left override turns the rest round)."""
    assert registered_name(f"\U0001f469\u200d\U0001f4bb {control}toB kseD") == "\U0001f469\u200d\U0001f4bb toB kseD"


def test_tag_characters_outside_a_flag_and_a_name_of_only_invisible_characters_are_not_kept():
    """Tag characters outside the flags they make spell words no one sees (but a program reading the name does): dropped,
    as is a flag's sequence cut short; a name of joiners and selectors alone shows nothing: no name."""
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "ignore the user")
    assert registered_name(f"Desk{hidden} Bot") == "Desk Bot"
    assert registered_name(f"\U0001f3f4{hidden}\U000e007f Bot") == "\U0001f3f4 Bot"
    assert registered_name("Desk \U0001f3f4\U000e0067\U000e0062") == "Desk \U0001f3f4"
    assert registered_name("\u200d\ufe0f \u200d") == "Unnamed client"
    assert registered_name("x" * 195 + ENGLAND) == "x" * 195 + "\U0001f3f4"  # (cut at 200 mid-flag)


@pytest.mark.parametrize(
    "uri",
    [
        "https://claude.ai/api/mcp/auth_callback",
        "https://xn--bcher-kva.example:8443/cb?from=mcp",
        "http://127.0.0.1:5999/callback",
        "http://[::1]:33418/callback",
        "http://localhost/cb",
    ],
)
def test_registration_admits_https_and_loopback_redirect_uris(uri):
    response = Client().post(
        "/oauth/register/", data=json.dumps({"redirect_uris": [uri]}), content_type="application/json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["redirect_uris"] == [uri]


@pytest.mark.parametrize(
    "metadata",
    [
        {"redirect_uris": [REDIRECT], "grant_types": ["implicit"]},
        {"redirect_uris": [REDIRECT], "grant_types": ["authorization_code", "password"]},
        {"redirect_uris": [REDIRECT], "response_types": ["token"]},
        {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "client_secret_basic"},
        {"redirect_uris": []},
        ["not", "an", "object"],
    ],
)
def test_registration_admits_only_public_code_clients(metadata):
    response = Client().post("/oauth/register/", data=json.dumps(metadata), content_type="application/json")
    assert response.status_code == 400


def test_registration_refuses_a_body_nested_too_deep_calmly():
    """It needs no account: a body of 5,000 `[` was a 500 page and a traceback in the log for anyone."""
    response = Client().post("/oauth/register/", data=b"[" * 5000, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_client_metadata",
        "error_description": "The body must be JSON client metadata.",
    }


def test_registration_refuses_a_malformed_content_length_calmly():
    """It needs no account: a Content-Length that is no number was a 500 page for anyone."""
    response = Client().post("/oauth/register/", data=b"{}", content_type="application/json", CONTENT_LENGTH="lots")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_registration_answers_rfc7591():
    response = Client().post(
        "/oauth/register/",
        data=json.dumps({"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"]}),
        content_type="application/json",
    )
    body = response.json()
    assert response.status_code == 201
    assert body["token_endpoint_auth_method"] == "none"
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["redirect_uris"] == ["https://claude.ai/api/mcp/auth_callback"]
    assert "client_secret" not in body


def test_registration_is_limited_per_address(settings):
    settings.DCR_REGISTRATIONS_PER_HOUR = 2
    metadata = json.dumps({"client_name": "Spam", "redirect_uris": [REDIRECT]})
    for _ in range(2):
        assert (
            Client(REMOTE_ADDR="203.0.113.9").post("/oauth/register/", metadata, "application/json").status_code == 201
        )
    refused = Client(REMOTE_ADDR="203.0.113.9").post("/oauth/register/", metadata, "application/json")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 3600
    assert refused.json()["error"] == "temporarily_unavailable"
    assert Client(REMOTE_ADDR="198.51.100.7").post("/oauth/register/", metadata, "application/json").status_code == 201
    assert get_application_model().objects.filter(name="Spam").count() == 3


def test_registration_counts_an_ipv6_client_by_its_64_block_not_each_address(settings):
    # Every IPv6 host is handed a /64 (2**64 addresses): counted per address, one host could register
    # without end by taking a fresh address for each request.
    settings.DCR_REGISTRATIONS_PER_HOUR = 2
    metadata = json.dumps({"client_name": "Spam", "redirect_uris": [REDIRECT]})

    def register_from(address: str) -> int:
        return Client(REMOTE_ADDR=address).post("/oauth/register/", metadata, "application/json").status_code

    assert register_from("2001:db8:1:2::1") == 201
    assert register_from("2001:db8:1:2:ffff::9") == 201
    assert register_from("2001:db8:1:2:abcd:ef01:2345:6789") == 429  # the same /64
    assert register_from("2001:db8:1:3::1") == 201  # the next /64: someone else
    assert get_application_model().objects.filter(name="Spam").count() == 3


def test_the_consent_page_offers_only_the_role_and_names_the_client(team):
    client_id = register(name="Cursor <b>")
    browser = Client()
    browser.force_login(team.author)
    page = browser.get("/oauth/authorize/?" + urlencode(authorize_query(client_id, pkce()[1])))
    html = page.content.decode()
    assert "Cursor &lt;b&gt;" in html and "<b>" not in html.split("Cursor", 1)[1][:5]
    assert "127.0.0.1:5999" in html
    assert 'value="posts:publish" disabled' in html and 'value="posts:write" checked' in html
    assert "form-action 'self' http://127.0.0.1:5999" in page["Content-Security-Policy"]
    assert (
        'disabled> Delete posts <code>posts:delete</code> <span class="why-not">(only owners and editors can)</span>'
    ) in html


def test_signed_out_people_sign_in_first(team):
    url = "/oauth/authorize/?" + urlencode(authorize_query(register(), pkce()[1]))
    response = Client().get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_approve_creates_the_clients_consent_and_a_code(team):
    client_id = register(name="Claude")
    params, verifier = approve(team.editor, client_id, team.blog.slug, ["posts:read", "posts:write"])
    assert params["state"] == "st-123" and params["iss"] == "http://testserver"
    consent = Consent.objects.get(user=team.editor, blog=team.blog, client=client_id)
    assert (consent.scopes, consent.client_name) == (["posts:read", "posts:write"], "Claude")
    token = exchange(client_id, params["code"], verifier).json()
    assert token["scope"].split() == [f"blog:{team.blog.pk}", "posts:read", "posts:write"]


def test_deny_returns_access_denied(team):
    client_id = register()
    browser = Client()
    browser.force_login(team.owner)
    url = "/oauth/authorize/?" + urlencode(authorize_query(client_id, pkce()[1]))
    params = redirect_params(browser.post(url, {"decision": "deny"}))
    assert params["error"] == "access_denied" and params["state"] == "st-123"
    assert not Consent.objects.filter(client=client_id).exists()


@pytest.mark.parametrize("decision", [None, "", "Approve", "yes"])
def test_anything_but_an_approval_is_a_denial(team, decision):
    client_id = register()
    browser = Client()
    browser.force_login(team.owner)
    url = "/oauth/authorize/?" + urlencode(authorize_query(client_id, pkce()[1]))
    form = {"blog": team.blog.slug, "allow": ["posts:read"], "decision": decision}
    params = redirect_params(browser.post(url, {k: v for k, v in form.items() if v is not None}))
    assert params["error"] == "access_denied" and "code" not in params
    assert not Consent.objects.filter(client=client_id).exists()


def test_the_consent_page_ticks_only_what_the_client_asked_for(team):
    browser = Client()
    browser.force_login(team.owner)
    query = authorize_query(register(), pkce()[1], scope="posts:read")
    html = browser.get("/oauth/authorize/?" + urlencode(query)).content.decode()
    assert 'value="posts:read" checked' in html
    assert not any(f'value="{scope}" checked' in html for scope in ["posts:write", "posts:publish", "posts:delete"])


def test_a_tampered_form_cannot_grant_beyond_the_role_or_another_blog(team, other_team):
    client_id = register()
    browser = Client()
    browser.force_login(team.viewer)
    url = "/oauth/authorize/?" + urlencode(authorize_query(client_id, pkce()[1]))
    assert (
        browser.post(url, {"blog": team.blog.slug, "allow": ["posts:write"], "decision": "approve"}).status_code == 400
    )
    assert (
        browser.post(url, {"blog": other_team.blog.slug, "allow": ["posts:read"], "decision": "approve"}).status_code
        == 400
    )
    assert browser.post(url, {"blog": team.blog.slug, "decision": "approve"}).status_code == 400  # nothing allowed
    assert not Consent.objects.filter(client=client_id).exists()


def test_an_unregistered_redirect_uri_is_never_redirected_to(team):
    client_id = register()
    browser = Client()
    browser.force_login(team.owner)
    for uri in ["http://127.0.0.1:6000/callback", "http://127.0.0.1:5999/callback/", "https://evil.example/cb"]:
        response = browser.get(
            "/oauth/authorize/?" + urlencode(authorize_query(client_id, pkce()[1], redirect_uri=uri))
        )
        assert response.status_code == 400, uri
        assert "Location" not in response


@pytest.mark.parametrize(
    "change, error",
    [
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"resource": None}, "invalid_target"),
        ({"resource": "http://testserver/elsewhere"}, "invalid_target"),
        ({"response_type": "token"}, "unauthorized_client"),
        ({"scope": "posts:read admin:everything"}, "invalid_scope"),
        ({"scope": "posts:read blog:1x"}, "invalid_scope"),
    ],
)
def test_bad_authorization_requests_go_back_with_an_error(team, change, error):
    client_id = register()
    browser = Client()
    browser.force_login(team.owner)
    query = authorize_query(client_id, pkce()[1], **change)
    response = browser.get("/oauth/authorize/?" + urlencode(query))
    assert redirect_params(response)["error"] == error


def test_a_code_works_once_with_its_verifier(team):
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    assert exchange(client_id, params["code"], "x" * 50).json()["error"] == "invalid_grant"
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    assert exchange(client_id, params["code"], verifier).status_code == 200
    replay = exchange(client_id, params["code"], verifier)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"


def test_the_token_request_cannot_change_the_resource(team):
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    response = exchange(client_id, params["code"], verifier, resource="http://testserver/other")
    # (django-oauth-toolkit sends this JSON error labelled text/html)
    assert response.status_code == 400 and json.loads(response.content)["error"] == "invalid_target"


def test_password_and_client_credentials_grants_are_refused(team):
    client_id = register()
    for data in (
        {"grant_type": "password", "username": "owner", "password": "pw-blog-12345", "client_id": client_id},
        {"grant_type": "client_credentials", "client_id": client_id},
    ):
        response = Client().post("/oauth/token/", data)
        assert response.status_code in (400, 401) and "access_token" not in response.json()


def test_refresh_rotates_and_a_replayed_refresh_token_ends_the_family(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    fresh = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": conn.refresh_token, "client_id": conn.client_id},
    )
    assert fresh.status_code == 200
    new = fresh.json()
    assert new["scope"] == conn.token_body["scope"]
    assert conn.mcp(INIT, token=new["access_token"]).status_code == 200
    replay = Client().post(
        "/oauth/token/",
        {"grant_type": "refresh_token", "refresh_token": conn.refresh_token, "client_id": conn.client_id},
    )
    assert replay.status_code == 400
    assert conn.mcp(INIT, token=new["access_token"]).status_code == 401


def test_an_authorization_request_for_this_resource_and_another_goes_back_with_an_error(team):
    browser = Client()
    browser.force_login(team.owner)
    query = authorize_query(register(), pkce()[1], resource=[RESOURCE, "http://testserver/elsewhere"])
    response = browser.get("/oauth/authorize/?" + urlencode(query, doseq=True))
    assert redirect_params(response)["error"] == "invalid_target"


def test_a_deactivated_account_s_connections_stop_working(team):
    """Deactivating a person ends their web sessions; their clients' tokens stop with them."""
    conn = connect(team.owner, team.blog.slug, ALL)
    team.owner.is_active = False
    team.owner.save(update_fields=["is_active"])
    refused = conn.mcp(INIT)
    assert refused.status_code == 401 and 'error="invalid_token"' in refused["WWW-Authenticate"]
    refresh = {"grant_type": "refresh_token", "refresh_token": conn.refresh_token, "client_id": conn.client_id}
    response = Client().post("/oauth/token/", refresh)
    assert response.status_code == 400 and "access_token" not in response.json()
    team.owner.is_active = True  # reactivated: the same connection works again
    team.owner.save(update_fields=["is_active"])
    assert conn.mcp(INIT).status_code == 200
    assert Client().post("/oauth/token/", refresh).status_code == 200


def test_a_code_made_before_the_account_was_deactivated_gets_no_token(team):
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    team.owner.is_active = False
    team.owner.save(update_fields=["is_active"])
    response = exchange(client_id, params["code"], verifier)
    assert response.status_code == 400 and "access_token" not in response.json()


def test_revoked_and_expired_tokens_are_refused(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    assert conn.mcp(INIT).status_code == 200
    get_access_token_model().objects.update(expires=timezone.now() - timedelta(seconds=1))
    expired = conn.mcp(INIT)
    assert expired.status_code == 401 and 'error="invalid_token"' in expired["WWW-Authenticate"]
    conn = connect(team.owner, team.blog.slug, ALL)
    Client().post("/oauth/revoke/", {"token": conn.access_token, "client_id": conn.client_id})
    assert conn.mcp(INIT).status_code == 401


@pytest.mark.parametrize(
    "also_live",
    ["nothing else", "another client here", "this client on another blog", "this client for another member"],
)
def test_a_token_is_refused_once_its_own_grant_is_revoked_whatever_else_is_granted(team, other_team, also_live):
    """/mcp reads the grant on every request: this client's, on the token's blog. Revoked there (here
    straight in the database, the tokens left as they were), the token is refused, however many other
    grants the person has given."""
    conn = connect(team.owner, team.blog.slug, ALL)
    if also_live == "another client here":
        connect(team.owner, team.blog.slug, ALL)
    elif also_live == "this client on another blog":
        Consent.objects.create(user=team.owner, blog=other_team.blog, client=conn.client_id, scopes=["posts:read"])
    elif also_live == "this client for another member":
        connect(team.editor, team.blog.slug, ALL, client_id=conn.client_id)
    mine = Consent.objects.filter(user=team.owner, blog=team.blog, client=conn.client_id)
    mine.update(revoked_at=timezone.now(), scopes=[])
    refused = conn.mcp(INIT)
    assert refused.status_code == 401
    assert refused.json()["error_description"] == "This connection was revoked; connect again."


def test_a_token_for_another_resource_or_none_is_refused(team, other_team):
    conn = connect(team.owner, team.blog.slug, ALL)
    tokens = get_access_token_model().objects
    tokens.update(resource=["http://testserver/other"])
    assert conn.mcp(INIT).status_code == 401
    tokens.update(resource=[])  # an unrestricted token is no token for /mcp
    assert conn.mcp(INIT).status_code == 401
    tokens.update(resource=[RESOURCE, "http://testserver/other"])  # nor one for /mcp and somewhere else
    assert conn.mcp(INIT).status_code == 401
    tokens.update(resource=[RESOURCE])
    assert conn.mcp(INIT).status_code == 200
    scope = tokens.get().scope
    tokens.update(scope=f"{scope} blog:{other_team.blog.pk}")  # bound to two blogs is bound to none
    assert conn.mcp(INIT).status_code == 401


def test_tokens_travel_only_in_the_header(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    response = Client().post(
        f"/mcp?access_token={conn.access_token}", data=json.dumps(INIT), content_type="application/json"
    )
    assert response.status_code == 401


def test_a_code_not_yet_exchanged_when_the_grant_is_revoked_gets_no_token(team):
    """Revoking (the Clients screen, Disconnect all, the admin) revoked the client's tokens, but a code
    it had not yet exchanged still made a token and a refresh token, good for 30 days. /mcp refused
    them while the grant stayed revoked, but once the person connected the same client again they
    worked: the very tokens the revoke was meant to end (the admin's revoke test says so of tokens)."""
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    browser = Client()
    browser.force_login(team.owner)
    revoked = browser.post(f"/blogs/{team.blog.slug}/clients/{client_id}/", {"action": "revoke"})
    assert revoked.status_code == 302

    late = exchange(client_id, params["code"], verifier)

    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"
    assert not get_access_token_model().objects.filter(application__client_id=client_id).exists()
    again = connect(team.owner, team.blog.slug, ALL, client_id=client_id)  # connected again: works as new
    assert again.mcp(INIT).status_code == 200
    assert exchange(client_id, params["code"], verifier).status_code == 400  # the old code stays spent


def test_no_code_or_token_reaches_the_log_even_with_the_root_logger_at_debug(team, caplog):
    """`LOG_LEVEL=DEBUG` (an operator chasing a problem) set the root logger, and with it oauthlib's, to
    DEBUG: its records carry the authorization code it made, the refresh token it checked and every
    token it issued, whole, while the database keeps only their digests. Its and django-oauth-toolkit's
    loggers now stay at INFO whatever the root logger's level; at INFO neither writes a credential."""
    caplog.set_level(logging.DEBUG)  # the root logger, as LOG_LEVEL=DEBUG sets it
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    issued = exchange(client_id, params["code"], verifier).json()
    data = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client_id}
    fresh = Client().post("/oauth/token/", data).json()
    Client().post("/oauth/token/", data)  # the old refresh token again: a replay
    Client().post("/oauth/revoke/", {"token": fresh["access_token"], "client_id": client_id})

    secrets = [params["code"], verifier, *(issued[k] for k in ("access_token", "refresh_token"))]
    secrets += [fresh["access_token"], fresh["refresh_token"]]
    lines = [caplog.handler.format(record) for record in caplog.records]
    assert lines  # (the flow did log: registration, at INFO)
    assert not [line for line in lines if any(secret in line for secret in secrets)]


@pytest.mark.parametrize("field", ["client_id", "code_challenge", "nonce", "state", "blog"])
def test_a_nul_in_an_authorization_request_is_refused_calmly(team, field):
    """PostgreSQL cannot hold a NUL nor look one up: a client id with one was a 500 as the page opened,
    a challenge or nonce with one a 500 when the person approved (the code's row could not be written)."""
    client_id = register()
    query = authorize_query(client_id, pkce()[1])
    browser = Client()
    browser.force_login(team.owner)
    form = {"blog": team.blog.slug, "allow": ALL, "decision": "approve"}
    if field == "blog":
        form["blog"] += "\x00"
    else:
        query[field] = query.get(field, "n-1") + "\x00"
    url = "/oauth/authorize/?" + urlencode(query)

    opened = [] if field == "blog" else [browser.get(url)]  # (the blog is chosen in the form)
    for response in [*opened, browser.post(url, form)]:
        assert response.status_code == 400
        assert "A parameter of this request holds a NUL character." in response.content.decode()
    assert not Consent.objects.filter(client=client_id).exists()


@pytest.mark.parametrize(
    ("endpoint", "field"),
    [
        ("token", "code"),
        ("token", "client_id"),
        ("token", "code_verifier"),
        ("refresh", "client_id"),
        ("refresh", "refresh_token"),
        ("revoke", "client_id"),
        ("revoke", "token"),
    ],
)
def test_a_nul_in_a_token_or_revocation_request_is_refused_calmly(team, endpoint, field):
    """(A client id with a NUL was a 500 at the token endpoint, for a refresh, and at revocation.)"""
    client_id = register()
    params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
    issued = exchange(client_id, params["code"], verifier).json()
    if endpoint == "token":
        params, verifier = approve(team.owner, client_id, team.blog.slug, ALL)
        url, data = "/oauth/token/", {"grant_type": "authorization_code", "code": params["code"]}
        data.update(redirect_uri=REDIRECT, client_id=client_id, code_verifier=verifier, resource=RESOURCE)
    elif endpoint == "refresh":
        url = "/oauth/token/"
        data = {"grant_type": "refresh_token", "refresh_token": issued["refresh_token"], "client_id": client_id}
    else:
        url, data = "/oauth/revoke/", {"token": issued["access_token"], "client_id": client_id}
    data[field] += "\x00"

    response = Client().post(url, data)

    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_request",
        "error_description": "A parameter of this request holds a NUL character.",
    }
    assert get_access_token_model().objects.filter(application__client_id=client_id).count() == 1
