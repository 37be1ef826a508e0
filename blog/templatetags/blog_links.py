"""Where a post's title leads, the same in the blog page's list and on the page of all its posts."""

from __future__ import annotations

from collections.abc import Collection

from django import template
from django.urls import reverse

from blog.access import WRITE
from blog.models import Blog, Post

register = template.Library()


@register.simple_tag
def post_href(blog: Blog, post: Post, scopes: Collection[str]) -> str:
    """`{% post_href blog post scopes %}`: a published post's public page; a draft's editor for a member
    who may write, else its history (what a viewer may read of a draft). The blog is given, not read
    from the post, which would cost a query per post."""
    slug = blog.slug
    if post.status == Post.PUBLISHED:
        return reverse("blog:public_post", args=[slug, post.slug])
    if WRITE in scopes:
        return reverse("blog:post_edit", args=[slug, post.pk])
    return reverse("blog:history", args=[slug, post.pk])
