"""A person finds their own chats on the chats page, by a chat's name or by what was said in it."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from agent.models import Session
from agent.state import Run
from agent.transcript import add_message
from blog import chat_panel
from tests.blog.conftest import browser, make_post, said_chat

pytestmark = pytest.mark.django_db


def labels(html: str) -> list[str]:
    """The names of the chats a chats page lists, in order."""
    return re.findall(r'<span class="chat-label">([^<]*)</span>', html)


def snippets(html: str) -> list[str]:
    return re.findall(r'<p class="chat-snippet" dir="auto">(.*?)</p>', html)


def answer(session: Session, text: str) -> None:
    add_message(Run(session), "assistant", [{"type": "text", "text": text}])


def search(client, q: str, url: str = "/blogs/notes/chats/", **more) -> str:
    response = client.get(url, {"q": q, **more})
    assert response.status_code == 200
    return response.content.decode()


def aged(session: Session, minutes: int) -> Session:
    Session.objects.filter(pk=session.pk).update(updated_at=timezone.now() - timedelta(minutes=minutes))
    return session


def test_the_chats_page_has_a_search_form_that_works_without_scripts(team):
    said_chat(team.editor, team.blog, text="hello")
    html = browser(team.editor).get("/blogs/notes/chats/").content.decode()
    assert '<form method="get" action="/blogs/notes/chats/" class="chat-search" role="search"' in html
    assert (
        '<label for="chat-search-q">Search your chats</label><input type="search" id="chat-search-q" name="q"' in html
    )
    assert '<button type="submit" class="primary">Search</button>' in html


def test_a_search_finds_chats_by_what_the_person_or_the_assistant_said_or_by_name_latest_first(team):
    herons = aged(said_chat(team.editor, team.blog, text="Draft a post about HERONS at dawn"), 30)
    answered = said_chat(team.editor, team.blog, text="What birds wade?")
    answer(answered, "Egrets and herons wade in the shallows.")
    aged(answered, 20)
    named = aged(said_chat(team.editor, team.blog, text="something else"), 10)
    Session.objects.filter(pk=named.pk).update(title="Heron photos")
    aged(said_chat(team.editor, team.blog, text="About owls"), 5)
    html = search(browser(team.editor), "  heron  ")
    assert labels(html) == ["Heron photos", "What birds wade?", "Draft a post about HERONS at dawn"]
    assert '3 chats match “<span dir="auto">heron</span>”, the latest first.' in html
    assert snippets(html) == [
        "<mark>Heron</mark> photos",
        "Egrets and <mark>heron</mark>s wade in the shallows.",
        "Draft a post about <mark>HERON</mark>S at dawn",
    ]
    assert 'value="heron"' in html  # (the words as searched, in the box)
    assert f'href="/blogs/notes/?chat={herons.pk}"' in html


def test_only_text_is_searched_not_tool_calls_nor_thinking(team):
    chat = said_chat(team.editor, team.blog, text="hello")
    add_message(
        Run(chat),
        "assistant",
        [
            {"type": "reasoning", "text": "The person wants kingfishers."},
            {"type": "tool_use", "id": "c1", "name": "list_posts", "input": {"q": "kingfisher"}},
        ],
    )
    assert "No chats match" in search(browser(team.editor), "kingfisher")


def test_a_search_finds_only_the_persons_own_chats_of_that_panel(team, other_team):
    post = make_post(team.blog)
    said_chat(team.editor, team.blog, text="heron on the blog page")
    said_chat(team.editor, team.blog, text="owls on the blog page")
    said_chat(team.editor, team.blog, post, text="heron beside the post")
    said_chat(team.owner, team.blog, text="heron of the owner")
    said_chat(other_team.editor, other_team.blog, text="heron elsewhere")
    said_chat(team.author, team.blog, text="heron of the author")
    client = browser(team.editor)
    assert labels(search(client, "heron")) == ["heron on the blog page"]
    assert labels(search(client, "heron", f"/blogs/notes/posts/{post.pk}/chats/")) == ["heron beside the post"]
    assert browser(team.outsider).get("/blogs/notes/chats/", {"q": "heron"}).status_code == 404


def test_nothing_found_says_so_and_an_empty_search_is_the_whole_list(team):
    said_chat(team.editor, team.blog, text="one")
    said_chat(team.editor, team.blog, text="two")
    client = browser(team.editor)
    html = search(client, "heron")
    assert 'No chats match “<span dir="auto">heron</span>”. <a href="/blogs/notes/chats/">Clear the search</a>' in html
    assert labels(html) == []
    for empty in ("", "   \t "):
        html = search(client, empty)
        assert labels(html) == ["two", "one"] and "search-summary" not in html and "chat-snippet" not in html


def test_words_are_collapsed_and_a_search_too_long_is_refused_and_kept(team):
    chat = said_chat(team.editor, team.blog, text="the grey   heron\nstood still")
    client = browser(team.editor)
    assert labels(search(client, " grey \n heron ")) == []  # (the text's own spaces are not collapsed)
    assert labels(search(client, "heron")) == [chat.title or "the grey heron stood still"]
    typed = "x" * 201
    html = search(client, typed)
    said = "A search can be at most 200 characters, and this one has 201: shorten it."
    assert f'<p class="error field-error" id="chat-search-problem" role="alert">{said}</p>' in html
    assert f'value="{typed}" aria-invalid="true" aria-describedby="chat-search-problem"' in html
    assert labels(html) == [] and "No chats match" not in html
    assert labels(search(client, "x" * 200)) == []  # (200 is searched: nothing found)
    assert "No chats match" in search(client, "x" * 200)


def test_a_search_with_markup_is_shown_as_text(team):
    said_chat(team.editor, team.blog, text='a <b>bold</b> "quote" & <script>alert(1)</script> here')
    html = search(browser(team.editor), "<script>")
    assert "<script>alert" not in html
    assert snippets(html) == [
        "a &lt;b&gt;bold&lt;/b&gt; &quot;quote&quot; &amp; <mark>&lt;script&gt;</mark>alert(1)&lt;/script&gt; here"
    ]
    assert '“<span dir="auto">&lt;script&gt;</span>”' in html
    html = search(browser(team.editor), "<img src=x onerror=alert(1)>")
    assert "<img src=x" not in html and 'value="&lt;img src=x onerror=alert(1)&gt;"' in html


def test_a_snippet_is_short_around_the_first_match_and_cut_at_words(team):
    text = " ".join(f"word{i}" for i in range(100)) + " the heron " + " ".join(f"tail{i}" for i in range(100))
    chat = said_chat(team.editor, team.blog, text="first")
    answer(chat, text)
    answer(chat, "a second heron, later")
    (shown,) = snippets(search(browser(team.editor), "HERON"))
    assert shown == "…word95 word96 word97 word98 word99 the <mark>heron</mark> " + (
        "tail0 tail1 tail2 tail3 tail4 tail5 tail6 tail7 tail8 tail9 tail10…"
    )
    assert len(re.sub(r"<[^>]+>", "", shown)) <= 125


def test_a_search_is_kept_through_the_pages_and_a_rename(team, monkeypatch):
    monkeypatch.setattr(chat_panel, "CHATS_PER_PAGE", 2)
    chats = [aged(said_chat(team.editor, team.blog, text=f"heron & egret {i}"), 10 - i) for i in range(3)]
    said_chat(team.editor, team.blog, text="owl")
    client = browser(team.editor)
    html = search(client, "heron & egret")
    assert '<a rel="next" href="?q=heron+%26+egret&amp;page=2">Older →</a>' in html
    assert '<input type="hidden" name="q" value="heron &amp; egret">' in html
    assert labels(search(client, "heron & egret", page="2")) == ["heron &amp; egret 0"]
    rename = f"/blogs/notes/chats/{chats[0].pk}/rename"
    response = client.post(rename, {"title": "First heron", "page": "2", "q": "heron & egret"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/chats/?q=heron+%26+egret&page=2"
    refused = client.post(rename, {"title": " ", "page": "2", "q": "heron & egret"})
    html = refused.content.decode()
    assert refused.status_code == 400 and 'value="heron &amp; egret"' in html
    assert labels(html) == ["First heron"] and "3 chats match" in html


def test_a_nul_or_letters_beyond_ascii_are_searched_safely(team):
    """A NUL is never sent to the database (PostgreSQL refuses one); words beyond ASCII are found as
    written, and marked whatever their case (the database folds only ASCII letters on SQLite)."""
    said_chat(team.editor, team.blog, text="Un café noir, s'il vous plaît")
    client = browser(team.editor)
    assert "No chats match" in search(client, "caf\x00é")
    assert snippets(search(client, "café")) == ["Un <mark>café</mark> noir, s&#x27;il vous plaît"]
    assert snippets(search(client, "cafe\u0301")) == ["Un <mark>café</mark> noir, s&#x27;il vous plaît"]  # (NFC)


def test_letters_beyond_ascii_are_found_whatever_their_case_in_text_and_name(team):
    """SQLite's LIKE folds the case of A to Z only: a search with other letters is matched here, so
    "ärger" finds "ÄRGER" and "Ärger" on either database, and each is marked as written."""
    loud = aged(said_chat(team.editor, team.blog, text="So viel ÄRGER mit dem Wehr"), 30)
    answered = aged(said_chat(team.editor, team.blog, text="Was nun?"), 20)
    answer(answered, "Ärger vergeht.")
    named = aged(said_chat(team.editor, team.blog, text="nichts"), 10)
    Session.objects.filter(pk=named.pk).update(title="ÄRGERLICH")
    aged(said_chat(team.editor, team.blog, text="Arger without an umlaut"), 5)
    said_chat(team.owner, team.blog, text="ärger of another person")
    client = browser(team.editor)
    for words in ("ärger", "ÄRGER", "A\u0308rger"):
        html = search(client, words)
        assert labels(html) == ["ÄRGERLICH", "Was nun?", "So viel ÄRGER mit dem Wehr"], words
        assert snippets(html) == [
            "<mark>ÄRGER</mark>LICH",
            "<mark>Ärger</mark> vergeht.",
            "So viel <mark>ÄRGER</mark> mit dem Wehr",
        ], words
        assert "3 chats match" in html
    assert loud.pk


def test_a_search_beyond_ascii_reads_the_chats_twice_and_the_shown_texts_once(team):
    """The titles in the list's order and the texts of the person's chats, each once, then the page's
    texts: a fixed number of statements, whatever the chats."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for n in range(3):
        said_chat(team.editor, team.blog, text=f"Ärger {n}")
    client = browser(team.editor)
    search(client, "x")  # (the session's first read)

    def queries(words: str) -> int:
        with CaptureQueriesContext(connection) as seen:
            search(client, words)
        return len(seen)

    ascii_words, beyond = queries("rger"), queries("ärger")
    for n in range(5):
        said_chat(team.editor, team.blog, text=f"ÄRGER {n}")
    assert queries("rger") == ascii_words and queries("ärger") == beyond


def test_a_search_beyond_ascii_keeps_the_latest_it_may_and_says_so(team, monkeypatch):
    from blog import chat_search

    monkeypatch.setattr(chat_search, "MATCHES_MAX", 2)
    for n in range(2):
        aged(said_chat(team.editor, team.blog, text=f"Ärger {n}"), 10 - n)
    client = browser(team.editor)
    html = search(client, "ärger")  # (as many as it keeps is all of them: nothing to say)
    assert labels(html) == ["Ärger 1", "Ärger 0"] and "letters beyond A to Z" not in html
    aged(said_chat(team.editor, team.blog, text="Ärger 2"), 8)
    html = search(client, "ärger")
    assert labels(html) == ["Ärger 2", "Ärger 1"]
    assert "A search with letters beyond A to Z finds at most the 2 latest chats; add more words to narrow it." in html
    assert "letters beyond A to Z" not in search(client, "rger")  # (the database matched it: every one)
    assert labels(search(client, "rger")) == ["Ärger 2", "Ärger 1", "Ärger 0"]
