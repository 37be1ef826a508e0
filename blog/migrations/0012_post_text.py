"""`Post.text`: each post's words as its page reads them, without markup (`agent.markdown.plain_text`), which
the search of posts matches and quotes; 0013 fills it in for the posts there are, and a post saved from now on
keeps its own (`Post.save`). `db_default`: an older release's workers, serving while this runs (README,
"Upgrading"), insert posts without it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("blog", "0011_blog_description_db_default"),
    ]

    operations = [
        migrations.AddField(
            model_name="post",
            name="text",
            field=models.TextField(blank=True, db_default="", default="", editable=False),
        ),
    ]
