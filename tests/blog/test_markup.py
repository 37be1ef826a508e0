"""What every site template keeps to, read from the templates themselves."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from tests.config.test_content_security_policy import site_templates

UNTYPED_BUTTON = re.compile(r"<button\b(?![^>]*\btype=)[^>]*>")


@pytest.mark.parametrize("template", site_templates(), ids=lambda p: str(p.relative_to(settings.BASE_DIR)))
def test_every_button_says_what_it_does(template):
    """`type="submit"` or `type="button"`, never the default: a button with none submits the form it sits in,
    which a button meant only for htmx or a script, put into a form later, would do unasked."""
    assert UNTYPED_BUTTON.findall(template.read_text()) == []
