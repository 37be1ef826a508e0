"""Every post has a first revision: posts made without one (the demo's, before history existed)
get a "create" revision holding the post as it is now, dated when the post was created."""

from django.db import migrations


def first_revisions(apps, schema_editor):
    Post = apps.get_model("blog", "Post")
    PostRevision = apps.get_model("blog", "PostRevision")
    for post in Post.objects.filter(revisions__isnull=True).iterator():
        snapshot = {
            "title": post.title,
            "slug": post.slug,
            "body": post.body,
            "status": post.status,
            "published_at": post.published_at.isoformat() if post.published_at else None,
        }
        revision = PostRevision.objects.create(
            post=post, blog_id=post.blog_id, action="create", before=None, after=snapshot, user_id=post.author_id
        )
        PostRevision.objects.filter(pk=revision.pk).update(created_at=post.created_at)


class Migration(migrations.Migration):
    dependencies = [("blog", "0001_initial")]

    operations = [migrations.RunPython(first_revisions, migrations.RunPython.noop)]
