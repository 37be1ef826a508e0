"""The pieces of the blog's pages their scripts ask for (htmx): the post list, the header, the assistant's
panel, its list of chats and its grant's line, the editor's top line. None is a page of its own."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from agent.chat_views import sent_as_page


def piece_of_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """`view` answers with a piece of the blog's page, or of a post's editor when its address names the post
    (`pk`). Opened as a page of its own (`sent_as_page`: its address typed, or followed from somewhere), it
    goes to that page, which checks who may see it, instead of showing the bare piece without the site's
    styles and scripts."""

    @wraps(view)
    def piece(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if sent_as_page(request):
            if kwargs.get("pk") is not None:
                return redirect("blog:post_edit", kwargs["slug"], kwargs["pk"])
            return redirect("blog:detail", kwargs["slug"])
        return view(request, *args, **kwargs)

    return piece
