"""The notebook's page, where its chat is read (`NotebookPolicy.page_url`): what the engine's chat form
sent before a page's scripts ran comes back to, drawn as a project of its own would draw it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from agent.models import Session
from tests.agent.testapp.models import Notebook


@login_required
def notebook(request: HttpRequest, pk: int) -> HttpResponse:
    """The person's own notebook, with its chat named by `?chat=` (404 for anyone else's)."""
    book = get_object_or_404(Notebook, pk=pk, owner=request.user)
    chat = get_object_or_404(Session, pk=request.GET.get("chat"), user=request.user, notebook_link__notebook=book)
    return render(request, "notes/notebook.html", {"notebook": book, "chat": chat})
