"""The transcript's and the ledger's indexes: each one earns the page every turn's commit writes of it."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db


def indexes(table: str) -> list[tuple[tuple[str, ...], bool]]:
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
    return [(tuple(c["columns"]), c["unique"]) for c in found.values() if c["index"] or c["unique"]]


@pytest.mark.parametrize(
    "model", ["Message", "Part", "Spend", "Session", "Turn", "Approval", "RateEvent", "ContextSummary", "SpendDay"]
)
def test_no_plain_index_repeats_the_leading_columns_of_another(model):
    """An index on (a) beside one on (a, b) costs a page per write and serves nothing the other does not."""
    table = apps.get_model("agent", model)._meta.db_table
    found = indexes(table)
    for columns, unique in found:
        if unique:
            continue  # (a unique constraint says something besides)
        wider = [other for other, _ in found if other != columns and other[: len(columns)] == columns]
        assert not wider, f"{table}: the index on {columns} repeats the start of {wider}"


def test_lookups_by_session_message_and_user_have_an_index_to_use():
    assert (("session_id", "position"), True) in indexes("agent_message")
    assert (("message_id", "position"), True) in indexes("agent_part")
    assert any(columns[0] == "user_id" for columns, _ in indexes("agent_spend"))
