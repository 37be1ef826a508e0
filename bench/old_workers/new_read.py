"""The new release reads what an older release's workers wrote: every chat's and post's pages answer 200.

cd <new checkout> && DEBUG=1 DATABASE_URL=... python /tmp/upg/new_read.py
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

setup_test_environment()
settings.ALLOWED_HOSTS = ["*"]

from agent.models import Session  # noqa: E402
from blog.models import Blog, ChatLink, Post  # noqa: E402

User = get_user_model()
urls: list[tuple[Client, str]] = []
people: dict[int, Client] = {}


def as_(user) -> Client:
    if user.pk not in people:
        people[user.pk] = Client()
        people[user.pk].force_login(user)
    return people[user.pk]


anonymous = Client()
for blog in Blog.objects.all():
    owner = as_(blog.owner)
    urls += [
        (owner, f"/blogs/{blog.slug}/"),
        (owner, f"/blogs/{blog.slug}/posts/"),
        (owner, f"/blogs/{blog.slug}/chats/"),
    ]
    urls += [(owner, f"/blogs/{blog.slug}/members/"), (owner, f"/blogs/{blog.slug}/clients/")]
    urls.append((owner, f"/blogs/{blog.slug}/settings/"))
    if Post.objects.filter(blog=blog, status="published").exists():  # (an empty blog is not public: 404)
        urls += [(anonymous, f"/read/{blog.slug}/"), (anonymous, f"/read/{blog.slug}/feed/")]
    for post in Post.objects.filter(blog=blog):
        urls += [
            (owner, f"/blogs/{blog.slug}/posts/{post.pk}/edit/"),
            (owner, f"/blogs/{blog.slug}/posts/{post.pk}/history/"),
        ]
        if post.status == "published":
            urls.append((anonymous, f"/read/{blog.slug}/{post.slug}/"))
for session in Session.objects.all():
    person = as_(session.user)
    link = ChatLink.objects.filter(session=session).select_related("blog").first()
    urls.append((person, f"/api/agent/sessions/{session.pk}"))
    if link is not None and link.post_id:
        urls.append((person, f"/blogs/{link.blog.slug}/posts/{link.post_id}/edit/?chat={session.pk}"))
    elif link is not None:
        urls.append((person, f"/blogs/{link.blog.slug}/?chat={session.pk}"))
staff = as_(User.objects.get(username="admin"))
index = staff.get("/admin/")
for path in sorted(set(re.findall(r'href="(/admin/[a-z_]+/[a-z_]+/)"', index.content.decode()))):
    urls.append((staff, path))
urls += [(staff, f"/admin/agent/session/{s.pk}/change/") for s in Session.objects.all()]
urls += [(anonymous, "/"), (anonymous, "/sitemap.xml"), (anonymous, "/healthz")]

bad = {}
for client, url in urls:
    code = client.get(url).status_code
    if code != 200:
        bad[url] = code
print(
    f"{len(urls) - len(bad)} of {len(urls)} pages answered 200 ({Session.objects.count()} chats, {Post.objects.count()} posts)"
)
for url, code in bad.items():
    print(f"  {code} {url}")
sys.exit(1 if bad else 0)
