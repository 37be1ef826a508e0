"""People who write in other languages and scripts: their titles keep their letters in the post's
address, and the address opens."""

from __future__ import annotations

from urllib.parse import quote
from xml.etree import ElementTree

import pytest

from blog import grants, operations, reading, services
from blog.models import Post
from blog.services import unique_slug
from tests.blog.conftest import browser

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Über den Café-Tisch", "uber-den-cafe-tisch"),  # every letter has a plain form: as before
        ("Morning light", "morning-light"),
        ("秋の鳥", "秋の鳥"),
        ("Привет, мир", "привет-мир"),
        ("שלום עולם", "שלום-עולם"),
        ("ربيع في المدينة", "ربيع-في-المدينة"),
        ("Straße nach Łódź", "straße-nach-łódź"),  # ß and ł have no plain form: nothing is dropped
        ("Notes on 秋の鳥", "notes-on-秋の鳥"),
        ("🌧️🌧️", "post"),  # no letters at all
        ("हिन्दी ब्लॉग", "हिन्दी-ब्लॉग"),  # vowel signs are marks: kept with their letters
        ("தமிழ் வலைப்பதிவு", "தமிழ்-வலைப்பதிவு"),
        ("বাংলা", "বাংলা"),
        ("a🌧️b 秋🌧️", "ab-秋"),  # an emoji's variation selector is a mark too, but of no letter
    ],
)
def test_a_title_keeps_its_letters_in_the_post_s_address(team, title, slug):
    assert unique_slug(team.blog, title) == slug


def test_titles_in_other_scripts_do_not_share_one_placeholder_address(team):
    assert [unique_slug(team.blog, t) for t in ("秋の鳥", "Привет мир")] == ["秋の鳥", "привет-мир"]


def test_an_address_cut_at_its_length_ends_on_a_word(team):
    """A title of at most 200 characters can still ask for a longer address: compatibility
    characters grow when normalised ("ﬃ" → "ffi", "㍿" → "株式会社")."""
    title = "ﬃ" * 66 + "a bc"
    assert unique_slug(team.blog, title) == "ffi" * 66 + "a"
    services.post_create(actor=grants.person(team.owner, team.blog), blog=team.blog, title=title, body="")
    assert unique_slug(team.blog, title) == "ffi" * 66 + "a-2"


def test_a_post_titled_in_another_script_opens_at_its_public_address(team):
    actor = grants.person(team.owner, team.blog)
    post = services.post_create(actor=actor, blog=team.blog, title="秋の鳥", body="鳥が*南へ*飛ぶ。")
    services.post_publish(actor=actor, post=post)
    assert post.slug == "秋の鳥"
    url = "/read/notes/%E7%A7%8B%E3%81%AE%E9%B3%A5/"  # as a browser sends it
    response = browser().get(url)
    assert response.status_code == 200
    assert "鳥が<em>南へ</em>飛ぶ。" in response.content.decode()
    assert browser().get(url + "cover").status_code == 404  # found, but it has no cover
    index = browser().get("/read/notes/").content.decode()
    assert 'href="/read/notes/%E7%A7%8B%E3%81%AE%E9%B3%A5/"' in index
    feed = ElementTree.fromstring(browser().get("/read/notes/feed/").content)
    assert [e.find(f"{ATOM}link").get("href") for e in feed.iter(f"{ATOM}entry")] == ["http://testserver" + url]
    sitemap = ElementTree.fromstring(browser().get("/sitemap.xml").content)
    assert "http://testserver" + url in {loc.text for loc in sitemap.iter(f"{SITEMAP}loc")}


@pytest.mark.parametrize("title", ["हिन्दी ब्लॉग", "Straße nach Łódź", "🌧️"])
def test_every_address_a_title_gets_opens(team, title):
    actor = grants.person(team.owner, team.blog)
    post = services.post_publish(
        actor=actor, post=services.post_create(actor=actor, blog=team.blog, title=title, body="Words.")
    )
    url = reading.post_url(post)
    assert url == "/read/notes/" + quote(post.slug) + "/"
    assert browser().get(url).status_code == 200
    assert browser().get(url + "cover").status_code == 404  # found, but it has no cover


def test_a_title_is_stored_composed_so_it_is_found_however_it_was_typed(team):
    """Café typed with a combining accent (macOS file names, some keyboards) and Café typed as
    one letter look alike: the title is stored in one form (NFC), so a search for either finds it."""
    actor = grants.person(team.owner, team.blog)
    post = services.post_create(actor=actor, blog=team.blog, title="Cafe\u0301 du matin", body="")
    assert post.title == "Caf\u00e9 du matin"
    for query in ("Caf\u00e9", "Cafe\u0301"):
        found = operations.perform_json("list_posts", actor, team.blog, {"query": query})[0]["items"]
        assert [p["id"] for p in found] == [post.pk]
    services.post_update(actor=actor, post=post, title="Cafe\u0301 du soir")
    assert Post.objects.get(pk=post.pk).title == "Caf\u00e9 du soir"


@pytest.mark.parametrize("title", ["\u200b", "\u200b\u200d\ufeff", " \u2060 ", "\u3000"])
def test_a_title_of_invisible_characters_only_is_no_title(team, title):
    with pytest.raises(services.OperationError) as refused:
        services.post_create(actor=grants.person(team.owner, team.blog), blog=team.blog, title=title, body="")
    assert refused.value.args[0] == "A post needs a title."
    assert not Post.objects.exists()


def test_a_title_keeps_the_joiners_inside_it(team):
    family = "\U0001f469\u200d\U0001f467"  # woman, zero-width joiner, girl: one emoji
    post = services.post_create(actor=grants.person(team.owner, team.blog), blog=team.blog, title=family, body="")
    assert post.title == family


@pytest.mark.parametrize(
    ("title", "query"),
    [
        ("Über den Café-Tisch", "über den café"),
        ("Привет, мир", "ПРИВЕТ"),
        ("Ωmega notes", "ωmega"),
        ("Straße nach Łódź", "łódź"),
    ],
)
def test_a_search_ignores_case_in_every_script_on_every_database(team, title, query):
    """A person (or a model) rarely types a title's capitals: "publish über den café-tisch". SQLite
    folds only ASCII letters in LIKE, so on the default database such a search found nothing."""
    actor = grants.person(team.owner, team.blog)
    post = services.post_create(actor=actor, blog=team.blog, title=title, body="")
    services.post_create(actor=actor, blog=team.blog, title="Something else", body="")
    found = operations.perform_json("list_posts", actor, team.blog, {"query": query})[0]["items"]
    assert [p["id"] for p in found] == [post.pk]
