"""A blog's description, what it is about: empty for every blog there is (`blogs.clean_description`)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("blog", "0009_former_owners_seats_editors"),
    ]

    operations = [
        migrations.AddField(
            model_name="blog",
            name="description",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
    ]
