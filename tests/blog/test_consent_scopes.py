"""A Consent holds only the blog operations' scope names (CONTRACT §6), and the database says so."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction

from blog.access import ALL_SCOPES, READ, WRITE
from blog.models import Consent
from tests.blog.conftest import make_blog

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "scopes",
    [["posts:admin"], [READ, "posts:readx"], [READ, "*"], READ, {READ: True}, [[READ]]],
    ids=["unknown", "a known name's prefix", "a wildcard beside a known one", "no list", "an object", "nested"],
)
def test_the_database_refuses_a_consent_scope_it_does_not_know(django_user_model, scopes):
    team = make_blog(django_user_model)
    with pytest.raises(IntegrityError), transaction.atomic():
        Consent.objects.create(user=team.editor, blog=team.blog, client="some-app", scopes=scopes)
    consent = Consent.objects.create(user=team.editor, blog=team.blog, client="some-app", scopes=[READ])
    with pytest.raises(IntegrityError), transaction.atomic():
        Consent.objects.filter(pk=consent.pk).update(scopes=scopes)


@pytest.mark.parametrize("scopes", [[], [READ], sorted(ALL_SCOPES), list(ALL_SCOPES), [WRITE, READ]])
def test_any_known_scopes_in_any_order_are_stored(django_user_model, scopes):
    team = make_blog(django_user_model)
    Consent.objects.create(user=team.editor, blog=team.blog, client="some-app", scopes=scopes)
    assert Consent.objects.get(client="some-app").scopes == scopes


@pytest.mark.django_db(transaction=True)
def test_the_constraint_is_added_to_a_database_that_holds_consents(django_user_model):
    """The rows the site writes (a grant, a revoked one, the assistant's with every scope) all pass it."""
    team = make_blog(django_user_model)
    call_command("migrate", "blog", "0006", verbosity=0)
    try:
        rows = [
            Consent.objects.create(user=team.owner, blog=team.blog, client="", scopes=list(ALL_SCOPES)),
            Consent.objects.create(user=team.editor, blog=team.blog, client="app", scopes=sorted([WRITE, READ])),
            Consent.objects.create(user=team.author, blog=team.blog, client="app", scopes=[]),
        ]
    finally:
        call_command("migrate", "blog", verbosity=0)
    assert [c.scopes for c in Consent.objects.order_by("pk")] == [c.scopes for c in rows]
    with pytest.raises(IntegrityError), transaction.atomic():
        Consent.objects.filter(pk=rows[0].pk).update(scopes=["posts:admin"])
