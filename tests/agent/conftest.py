"""Fixtures of the engine's chat pages, with the test app's notebooks (`tests/agent/testapp`)."""

from __future__ import annotations

import pytest
from django.test import Client

from agent.models import Session
from tests.agent.testapp.models import Notebook, NotebookLink


@pytest.fixture
def browser(user) -> Client:
    """The test's user, signed in (Django's test client: no CSRF checks)."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def notebook_chat(user) -> Session:
    """A chat of the user's notebook "garden", whose page the test app's policy names."""
    notebook = Notebook.objects.create(owner=user, name="garden")
    session = Session.objects.create(user=user, purpose="chat")
    NotebookLink.objects.create(session=session, notebook=notebook)
    return session
