"""`Blog.description` filled in by the database when an INSERT leaves it out, as an older release's
workers do (README, Upgrading: they may keep serving while `migrate` runs and after it). 0010 made the
column NOT NULL with no database default, so their Add blog (admin) and New blog answered 500. On
PostgreSQL a `SET DEFAULT`, no rewrite; SQLite rebuilds the (small) table of blogs."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("blog", "0010_blog_description"),
    ]

    operations = [
        migrations.AlterField(
            model_name="blog",
            name="description",
            field=models.CharField(blank=True, db_default="", default="", max_length=300),
        ),
    ]
