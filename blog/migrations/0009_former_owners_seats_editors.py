"""A former owner's seat left an owner's by the admin's change of a blog's owner (before it made it an
editor's: `team.owner_changed`) becomes an editor's, keeping whether it may use the assistant: a blog has
one owner's seat, its owner's. Going back changes nothing (which seats were owners' is not kept)."""

from django.db import migrations
from django.db.models import F


def former_owners_editors(apps, schema_editor):
    Seat = apps.get_model("blog", "Seat")
    Seat.objects.filter(role="owner").exclude(user=F("blog__owner")).update(role="editor")


class Migration(migrations.Migration):
    dependencies = [
        ("blog", "0008_post_title_upper_idx"),
    ]

    operations = [migrations.RunPython(former_owners_editors, migrations.RunPython.noop)]
