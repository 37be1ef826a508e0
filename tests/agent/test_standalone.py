"""The engine stands alone: these tests run with `blog` not installed, and no engine module needs it."""

from __future__ import annotations

import importlib
import pkgutil
import sys

from django.apps import apps

import agent


def test_blog_is_not_installed_and_the_policy_is_the_test_apps():
    from agent.policy import get_policy
    from tests.agent.testapp.policy import NotebookPolicy

    assert not apps.is_installed("blog")
    assert isinstance(get_policy(), NotebookPolicy)


def test_every_engine_module_imports_without_blog():
    for module in pkgutil.walk_packages(agent.__path__, "agent."):
        importlib.import_module(module.name)
    assert [name for name in sys.modules if name == "blog" or name.startswith("blog.")] == []
