"""Exporting a blog, in Chromium: its owner clicks Export and the ZIP arrives; an editor has no such link."""

from __future__ import annotations

import re
import zipfile

from playwright.sync_api import expect

from tests.e2e.ui import BLOG, login, signed_in


def test_the_owner_exports_the_blog_and_an_editor_sees_no_export(demo_server, page, browser, tmp_path):
    base = demo_server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/")
    with page.expect_download() as arrived:
        page.get_by_role("navigation", name="Blog").get_by_role("link", name="Export").click()
    download = arrived.value
    assert re.fullmatch(rf"{BLOG}-\d{{4}}-\d{{2}}-\d{{2}}\.zip", download.suggested_filename)
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        assert "README.txt" in archive.namelist()
        assert any(name.startswith("posts/") and name.endswith(".md") for name in archive.namelist())
    expect(page).to_have_url(f"{base}/blogs/{BLOG}/")  # (the page stays; the file is a download)

    with signed_in(browser, base, "bob") as bobs:
        bobs.goto(f"{base}/blogs/{BLOG}/")
        nav = bobs.get_by_role("navigation", name="Blog")
        expect(nav.get_by_role("link", name="All posts")).to_be_visible()
        expect(nav.get_by_role("link", name="Export")).to_have_count(0)
