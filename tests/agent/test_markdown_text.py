"""`agent.markdown.plain_text`: the words of a markdown text as its rendered page reads them."""

from __future__ import annotations

import pytest

from agent.markdown import plain_text


@pytest.mark.parametrize(
    ("markdown", "words"),
    [
        ("A **her**on *stood* ~~still~~.", "A heron stood still."),
        ("By [the weir](https://example.org/weir-walk).", "By the weir."),
        ("![a grey heron](heron.png) at dawn", "a grey heron at dawn"),
        ("Run `make test` first.", "Run make test first."),
        ("Tea &amp; toast \\*not emphasis\\*", "Tea & toast *not emphasis*"),
        ("<b>shown</b> as typed", "<b>shown</b> as typed"),  # (raw HTML is off: the page shows it as text)
        ("", ""),
    ],
)
def test_markup_is_left_out_and_the_words_kept(markdown, words):
    assert plain_text(markdown) == words


def test_each_block_is_its_own_line_so_no_two_run_together():
    markdown = (
        "# Tides\n\nLow water\nat dusk.  \nThen more.\n\n- one\n- two\n\n> quoted\n\n---\n\n"
        "```\ncode line\n```\n\n| a | b |\n|---|---|\n| c | d |\n"
    )
    assert plain_text(markdown).split("\n") == [
        "Tides",
        "Low water",
        "at dusk.",
        "Then more.",
        "one",
        "two",
        "quoted",
        "code line",
        "a",
        "b",
        "c",
        "d",
    ]


def test_the_words_are_composed_as_a_search_compares_them():
    assert plain_text("A\u0308rger am *Wehr*") == "Ärger am Wehr"
