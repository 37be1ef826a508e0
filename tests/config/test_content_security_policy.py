"""The site's pages load only their own scripts and styles (`config/middleware.py`'s policy:
`script-src 'self'`, `style-src 'self'`): a template with an inline `<style>`, a `style` attribute,
an inline `<script>` or an event handler attribute would be refused by the browser, silently."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from config.middleware import POLICY

# Each a thing the policy refuses: inline style (element or attribute), an inline script (a <script> with
# no src), a handler attribute (onclick=...), htmx's hx-on (eval'd) and a javascript: URL.
REFUSED = {
    "a <style> element": re.compile(r"<style\b", re.I),
    "a style attribute": re.compile(r"\sstyle\s*=", re.I),
    "an inline script": re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.I),
    "an event handler attribute": re.compile(r"\son[a-z]+\s*=", re.I),
    "an hx-on attribute": re.compile(r"\s(?:data-)?hx-on\b", re.I),
    "a javascript: URL": re.compile(r"javascript:", re.I),
}


def site_templates() -> list[Path]:
    """Every template the site's pages are drawn from; the admin's are left out (the policy skips /admin/)."""
    base = Path(settings.BASE_DIR)
    found = [*base.glob("templates/**/*.html"), *base.glob("*/templates/**/*.html")]
    return sorted(p for p in found if "admin" not in p.relative_to(base).parts)


def test_the_templates_are_found():
    names = {p.name for p in site_templates()}
    assert {"base.html", "500.html", "_chat_form.html", "_streaming.html"} <= names


@pytest.mark.parametrize("template", site_templates(), ids=lambda p: str(p.relative_to(settings.BASE_DIR)))
def test_no_template_has_what_the_policy_refuses(template):
    text = template.read_text()
    found = [what for what, pattern in REFUSED.items() if pattern.search(text)]
    assert found == [], f"{template}: {', '.join(found)}"


@pytest.mark.django_db
def test_the_500_page_is_styled_by_the_sites_stylesheet_under_the_policy(api, monkeypatch):
    def fail(view, request, *args, **kwargs):
        raise RuntimeError("the page could not be drawn")

    monkeypatch.setattr("django.contrib.auth.views.LoginView.get", fail)
    api.client.raise_request_exception = False
    response = api.get("/accounts/login/")
    assert response.status_code == 500
    assert response["Content-Security-Policy"] == POLICY
    html = response.content.decode()
    assert '<link rel="stylesheet" href="/static/css/site.css">' in html
    assert "<style" not in html
