"""Each post's `text` (0012) read from its body, 500 posts at a time, each batch its own transaction: the
site's writes to posts (an older release's workers may serve while this runs: README, "Upgrading") wait for
one batch at most, never for the whole table. Run again after a failure, it reads every post again."""

from django.db import migrations

from agent.markdown import plain_text

#: Posts read and written back at a time.
BATCH = 500


def fill_texts(apps, schema_editor):
    # By id, never writing the table while a cursor reads it (which SQLite does not isolate within one
    # connection); outside a transaction (`atomic = False`), each `bulk_update` commits on its own.
    posts = apps.get_model("blog", "Post").objects.using(schema_editor.connection.alias)
    last = 0
    while batch := list(posts.filter(pk__gt=last).only("pk", "body").order_by("pk")[:BATCH]):
        for post in batch:
            post.text = plain_text(post.body)
        posts.bulk_update(batch, ["text"])
        last = batch[-1].pk


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("blog", "0012_post_text"),
    ]

    operations = [
        migrations.RunPython(fill_texts, migrations.RunPython.noop, elidable=True),
    ]
