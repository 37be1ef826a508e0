"""Notebooks and their notes; a chat session may be tied to one notebook."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Notebook(models.Model):
    OPEN, ARCHIVED, SEALED = "open", "archived", "sealed"
    STATES = [(OPEN, "Open"), (ARCHIVED, "Archived: readable, the assistant may not be used"), (SEALED, "Sealed")]

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notebooks")
    name = models.CharField(max_length=40)
    state = models.CharField(max_length=10, choices=STATES, default=OPEN)


class Note(models.Model):
    notebook = models.ForeignKey(Notebook, on_delete=models.CASCADE, related_name="notes")
    title = models.CharField(max_length=200)
    body = models.TextField(blank=True)


class NotebookLink(models.Model):
    """Ties a chat session to a notebook; the engine knows nothing of notebooks."""

    session = models.OneToOneField("agent.Session", on_delete=models.CASCADE, related_name="notebook_link")
    notebook = models.ForeignKey(Notebook, on_delete=models.CASCADE, related_name="chat_links")
