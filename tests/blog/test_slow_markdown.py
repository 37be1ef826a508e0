"""A body built to be slow to render (a line of `[`: linear in markdown-it, but about a second for
50,000 of them) is rendered and read off the event loop, wherever a person can make the site do it:
the editor's preview, the save that reads its words, a published page's first visit, the assistant's
answer drawn in its chat. Under gevent the worker's other greenlets (every other stream it serves) keep
running meanwhile; on the loop they did not run at all (one tick in the second)."""

from __future__ import annotations

import os
import tempfile

from agent.markdown import plain_text, render_markdown
from tests.gevent_probe import ticks_while

SLOW = "BODY = '[' * 40_000"  # (about half a second of CPU to render, as much to read its words)

ON_SQLITE = (
    "from django.core.management import call_command\n"
    "from django.contrib.auth import get_user_model\n"
    "from blog.access import READ, WRITE\n"
    "from blog.grants import Actor\n"
    "from blog.models import Blog\n"
    "from blog import services\n"
    "call_command('migrate', verbosity=0)\n"
    "user = get_user_model().objects.create(username='ann')\n"
    "blog = Blog.objects.create(title='Notes', slug='notes', owner=user)\n"
    "actor = Actor(user=user, scopes=frozenset({READ, WRITE}))\n"
    "post = services.post_create(blog=blog, actor=actor, title='Walk', body='A short body.')\n"
)


def sqlite_env() -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": "sqlite:///" + os.path.join(tempfile.mkdtemp(), "db.sqlite3")}


def test_a_slow_preview_renders_off_the_loop_and_is_charged_the_cpu_it_took():
    """The preview's budget charges what the render cost in the thread that rendered it: off the loop,
    the calling thread's clock would see almost none of it."""
    setup = (
        f"{SLOW}\n"
        "from types import SimpleNamespace\n"
        "from django.core.cache import cache\n"
        "from blog import previews\n"
        "person = SimpleNamespace(pk=7)\n"
    )
    work = (
        "html, wait = previews.render(person, BODY)\n"
        "import time\n"
        "assert wait == 0 and html.startswith('<p>[[[['), html[:40]\n"
        "assert cache.get(previews.bucket(7, time.time())) >= 100, cache.get(previews.bucket(7, time.time()))\n"
    )
    assert ticks_while(setup, work) >= 10


def test_a_slow_published_body_renders_off_the_loop_at_its_first_visit():
    setup = f"{SLOW}\nfrom blog import reading\n"
    work = "assert reading.rendered_body_html(BODY).startswith('<p>[[[[')\n"
    assert ticks_while(setup, work) >= 10


# Each reading of a body's words notes whether it ran holding SQLite's write lock (inside a transaction on
# the loop's thread, where `off_the_loop` keeps work inline): a save must read none there.
READS_NOTED = (
    "import agent.markdown\n"
    "from agent.runtime import holds_sqlite_write_lock\n"
    "read_holding_the_lock = []\n"
    "def noted(text, read=agent.markdown.plain_text):\n"
    "    read_holding_the_lock.append(holds_sqlite_write_lock())\n"
    "    return read(text)\n"
    "agent.markdown.plain_text = noted\n"
)
NONE_HELD = "assert read_holding_the_lock and not any(read_holding_the_lock), read_holding_the_lock\n"


def test_saving_a_slow_body_on_sqlite_reads_its_words_off_the_loop():
    """The words a search reads (`Post.text`) are read at each save of a body, inside the save's
    transaction, where on SQLite nothing may leave the loop: they are read ahead of it instead, once."""
    setup = f"{SLOW}\n{ON_SQLITE}{READS_NOTED}"
    work = (
        "services.post_update(post=post, actor=actor, body=BODY)\n"
        "post.refresh_from_db()\n"
        "assert post.body == BODY and post.text == BODY, post.text[:40]\n"
        "assert read_holding_the_lock == [False], read_holding_the_lock\n"
    )
    assert ticks_while(setup, work, sqlite_env()) >= 10


def test_a_new_post_and_a_restored_body_read_their_words_off_the_loop_too():
    setup = f"{SLOW}\n{ON_SQLITE}{READS_NOTED}from blog.models import PostRevision\n"
    work = (
        "made = services.post_create(blog=blog, actor=actor, title='Long', body=BODY)\n"
        "services.post_update(post=made, actor=actor, body='Shorter now.')\n"
        "revision = PostRevision.objects.filter(post=made, action='update').get()\n"
        "services.post_revert(post=made, actor=actor, revision=revision)\n"
        "made.refresh_from_db()\n"
        "assert made.text == BODY, made.text[:40]\n"
        f"{NONE_HELD}"
    )
    assert ticks_while(setup, work, sqlite_env()) >= 20


def test_rendered_and_words_of_answer_as_the_inline_functions_do():
    from agent.markdown import OFF_THE_LOOP_CHARS, rendered, words_of

    for text in ("Some *words*.\n\n# A heading", "Some *words* and [a link](https://example.com/). " * 100):
        assert (len(text) >= OFF_THE_LOOP_CHARS) == (len(text) > 100)
        html, seconds = rendered(text, top_heading=2)
        assert html == render_markdown(text, top_heading=2) and seconds >= 0
        assert words_of(text) == plain_text(text)


def test_a_long_answer_is_drawn_off_the_loop():
    """The model writes what it is asked to: an answer of 40,000 `[` is drawn on its chat's page (and at its
    stream's end) off the loop too."""
    setup = (
        f"{SLOW}\n{ON_SQLITE}"
        "from agent.display import turn_blocks\n"
        "from agent.models import Session\n"
        "from agent.state import Run\n"
        "from agent.transcript import add_message\n"
        "chat = Session.objects.create(user=user, purpose='chat')\n"
        "answer = add_message(Run(chat), 'assistant', [{'type': 'text', 'text': BODY}])\n"
    )
    work = "(block,) = turn_blocks([answer], {}, chat)\nassert block['html'].startswith('<p>[[[['), block\n"
    assert ticks_while(setup, work, sqlite_env()) >= 10
