"""A chat's notices (agent/notices.py) on its person's blog pages (blog/live.py), and what a page then
fetches (agent.chat_views.news): another tab of the same chat learns of a turn started or a call decided
there; no other member, nor another chat's page, hears anything of it. A page showing no chat learns of a
chat its person starts in another tab (blog.live.chat_opened) and fetches it (blog.chat_panel.panel_chat)."""

from __future__ import annotations

import json
import uuid

import pytest

from agent import intake
from agent.models import Approval, Session, Turn
from agent.state import Run
from agent.transcript import add_message
from blog import live, services
from blog.chat import start_session
from blog.grants import Actor
from blog.models import Seat
from tests.blog.conftest import ALL, blog_chat, browser, make_post, set_consent
from tests.blog.test_assistant_turns import publish_awaiting_approval, say

pytestmark = pytest.mark.django_db


EVENT_SOURCE = {"HTTP_ACCEPT": "text/event-stream"}
NO_ACCESS = b"event: superseded\ndata: "


@pytest.fixture
def open_stream():
    """A page's stream of the blog (with `?chat=`, of that chat too); all are closed at the end."""
    opened = []

    def open_stream(client, slug: str, chat=None, panel=None, page=None):
        said = {"chat": chat, "panel": panel, "page": page}
        query = "&".join(f"{name}={value}" for name, value in said.items() if value is not None)
        response = client.get(f"/blogs/{slug}/events/?{query}", **EVENT_SOURCE)
        assert response.status_code == 200
        opened.append(response)
        chunks = iter(response.streaming_content)
        assert next(chunks) == b": keep-alive\n\n"
        assert next(chunks).startswith(b"event: mark\ndata: {")  # what it listens from (blog/live.py)
        return chunks

    yield open_stream
    for response in opened:
        response.close()


def notice(**said: str) -> bytes:
    return f"event: chat\ndata: {json.dumps(said, separators=(',', ':'))}\n\n".encode()


def heard(chunks) -> bytes:
    """The stream's next event, past its keep-alive comments."""
    chunk = next(chunks)
    while chunk == b": keep-alive\n\n":
        chunk = next(chunks)
    return chunk


def send_in_panel(user, chat, text: str, capture) -> Turn:
    """The person sends a message from the chat panel of one tab; the turn runs (inline here)."""
    with capture(execute=True):
        assert browser(user).post(f"/chat/{chat.pk}/send", {"text": text}).status_code == 200
    return Turn.objects.filter(session=chat).latest("created_at")


def test_the_chats_other_page_hears_a_turn_started_in_it(team, script, django_capture_on_commit_callbacks, open_stream):
    chat = blog_chat(team.owner, team.blog)
    chunks = open_stream(browser(team.owner), team.blog.slug, chat.pk)
    script([say("Hello.")])
    turn = send_in_panel(team.owner, chat, "hi", django_capture_on_commit_callbacks)
    assert next(chunks) == notice(chat=str(chat.pk))  # (its first message: its panel's pages hear it too)
    assert heard(chunks) == notice(turn=str(turn.pk))


def test_a_decision_and_the_answer_it_resumes_are_heard(
    team, script, approvals_on, django_capture_on_commit_callbacks, open_stream
):
    set_consent(team.owner, team.blog, ALL)
    _api, chat, _draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    chunks = open_stream(browser(team.owner), team.blog.slug, chat.pk)
    with django_capture_on_commit_callbacks(execute=True):
        decided = browser(team.owner).post(f"/chat/{chat.pk}/approvals/{approval_id}", {"approve": "1"})
    assert decided.status_code == 200
    resumed = Turn.objects.filter(session=chat).latest("created_at")
    heard = [next(chunks) for _ in range(3)]  # (the publish's effects too, as every page of the blog hears)
    assert [chunk for chunk in heard if chunk.startswith(b"event: chat")] == [
        notice(approval=approval_id),
        notice(turn=str(resumed.pk)),
    ]


@pytest.mark.parametrize("who", ["editor", "owner_elsewhere", "owner_other_chat"])
def test_no_other_page_hears_a_chats_notices(team, who, script, django_capture_on_commit_callbacks, open_stream):
    """Another member naming the owner's chat in the address, the owner's page with no chat or another
    of their chats: the message sent in the chat is not heard there; the blog's next change is."""
    chat = blog_chat(team.owner, team.blog)
    if who == "editor":
        chunks = open_stream(browser(team.editor), team.blog.slug, chat.pk)
    elif who == "owner_elsewhere":
        chunks = open_stream(browser(team.owner), team.blog.slug)
    else:
        chunks = open_stream(browser(team.owner), team.blog.slug, blog_chat(team.owner, team.blog).pk)
    script([say("Hello.")])
    send_in_panel(team.owner, chat, "a private question", django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        post = services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Then this")
    assert next(chunks) == f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()


def test_a_chats_notice_after_its_person_left_the_blog_is_never_relayed(
    team, script, django_capture_on_commit_callbacks, open_stream
):
    """Checked per message, as the blog's own changes: the editor's seat went (its wake-up lost here),
    then a turn starts in their chat (by the API's hand, say): the page's stream ends saying why."""
    chat = blog_chat(team.editor, team.blog)
    chunks = open_stream(browser(team.editor), team.blog.slug, chat.pk)
    Seat.objects.filter(blog=team.blog, user=team.editor).delete()
    from agent import notices

    with django_capture_on_commit_callbacks(execute=True):
        notices.turn_started(chat.pk, uuid.uuid4())
    assert next(chunks).startswith(NO_ACCESS)
    assert list(chunks) == []


# What the page fetches on a notice -------------------------------------------------------------------------


def test_a_turns_news_is_its_message_and_its_answer_followed_on_its_stream(
    team, script, django_capture_on_commit_callbacks
):
    chat = blog_chat(team.owner, team.blog)
    script([say("Hello.")])
    turn = send_in_panel(team.owner, chat, "hi <b>there</b>", django_capture_on_commit_callbacks)
    page = browser(team.owner).get(f"/chat/{chat.pk}/news?turn={turn.pk}")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<div class="bubble" dir="auto">hi &lt;b&gt;there&lt;/b&gt;</div>' in html
    assert f'id="turn-{turn.pk}"' in html and f"/turns/{turn.pk}/" in html and "sse-connect=" in html


def test_a_decided_cards_news_says_how_it_was_decided(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    _api, chat, _draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    ask = f"/chat/{chat.pk}/news?approval={approval_id}"
    assert browser(team.owner).get(ask).status_code == 204  # not decided yet: nothing to draw
    Approval.objects.filter(pk=approval_id).update(status=Approval.REJECTED)
    html = browser(team.owner).get(ask).content.decode()
    assert f'id="approval-{approval_id}" hx-swap-oob="true"' in html and "Rejected." in html
    assert "autofocus" not in html  # focus stays where the person is in this tab


def test_a_page_that_may_have_missed_notices_asks_for_the_turns_after_the_last_it_shows(
    team, script, django_capture_on_commit_callbacks
):
    """Its stream (re)opened: the chat's first turn after none, each turn's next, then nothing (204)."""
    chat = blog_chat(team.owner, team.blog)
    owner = browser(team.owner)
    assert owner.get(f"/chat/{chat.pk}/news?after=").status_code == 204  # no turn yet
    script([say("One."), say("Two.")])
    first = send_in_panel(team.owner, chat, "first", django_capture_on_commit_callbacks)
    second = send_in_panel(team.owner, chat, "second <i>one</i>", django_capture_on_commit_callbacks)
    html = owner.get(f"/chat/{chat.pk}/news?after=").content.decode()
    assert f'id="turn-{first.pk}"' in html and ">first</div>" in html and "second" not in html
    html = owner.get(f"/chat/{chat.pk}/news?after={first.pk}").content.decode()
    assert f'id="turn-{second.pk}"' in html and "second &lt;i&gt;one&lt;/i&gt;" in html and ">first<" not in html
    assert f"/turns/{second.pk}/" in html and "sse-connect=" in html
    assert owner.get(f"/chat/{chat.pk}/news?after={second.pk}").status_code == 204
    for asker in (browser(team.editor), browser(team.outsider)):  # the chat is its person's only
        assert asker.get(f"/chat/{chat.pk}/news?after=").status_code == 204
    other = blog_chat(team.owner, team.blog)  # their own chat, after a turn of another: nothing
    assert owner.get(f"/chat/{other.pk}/news?after={first.pk}").status_code == 204
    assert owner.get(f"/chat/{chat.pk}/news?after=nope").status_code == 204


def test_the_news_of_an_answer_resumed_after_a_decision_turns_the_decided_calls_chip_done(
    team, script, approvals_on, django_capture_on_commit_callbacks
):
    """Drawn after it ended (its stream then gives only its end), the answer still brings the result of
    the call it ran, made in the turn before: that turn's chip reads "done", not "awaiting your OK"."""
    set_consent(team.owner, team.blog, ALL)
    _api, chat, _draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    paused = Turn.objects.filter(session=chat).latest("created_at")
    with django_capture_on_commit_callbacks(execute=True):
        browser(team.owner).post(f"/chat/{chat.pk}/approvals/{approval_id}", {"approve": "1"})
    html = browser(team.owner).get(f"/chat/{chat.pk}/news?after={paused.pk}").content.decode()
    assert '<span class="chip-status" id="chip-p1-status" hx-swap-oob="true" data-status="ok">done</span>' in html


def test_news_of_a_chat_is_for_its_person_only(team, client, script, django_capture_on_commit_callbacks):
    chat = blog_chat(team.owner, team.blog)
    script([say("Hello.")])
    turn = send_in_panel(team.owner, chat, "a private question", django_capture_on_commit_callbacks)
    ask = f"/chat/{chat.pk}/news?turn={turn.pk}"
    for asker in (browser(team.editor), browser(team.outsider), client):  # (client: signed out)
        answer = asker.get(ask)
        assert (answer.status_code, answer.content) == (204, b"")
    other = blog_chat(team.owner, team.blog)  # their own chat, naming a turn of another: nothing
    assert browser(team.owner).get(f"/chat/{other.pk}/news?turn={turn.pk}").status_code == 204
    for query in ("turn=nope", "approval=", ""):
        assert browser(team.owner).get(f"/chat/{chat.pk}/news?{query}").status_code == 204


def test_the_page_of_a_chat_names_it_to_its_stream(team):
    chat = blog_chat(team.owner, team.blog)
    page = browser(team.owner).get(f"/blogs/{team.blog.slug}/?chat={chat.pk}").content.decode()
    assert f'sse-connect="/blogs/{team.blog.slug}/events/?chat={chat.pk}"' in page
    assert 'sse-swap="chat"' in page and f'data-news-url="/chat/{chat.pk}/news"' in page


def test_with_redis_a_notice_from_another_worker_reaches_the_chats_page(team, redis_server, settings, open_stream):
    """One subscription hears the blog's channel and the chat's, on Redis as in-process."""
    from agent import notices
    from agent.events.redis import RedisBus

    settings.AGENT_EVENTS_URL = redis_server.url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    elsewhere = RedisBus(redis_server.url)  # another worker
    chat = blog_chat(team.owner, team.blog)
    chunks = open_stream(browser(team.owner), team.blog.slug, chat.pk)
    elsewhere.publish(notices.channel_name(chat.pk), {"turn": "t-1"})
    assert next(chunks) == notice(turn="t-1")
    elsewhere.publish(f"blog:{team.blog.pk}", [{"type": "post.updated", "id": 7}])
    assert next(chunks) == b'event: effects\ndata: [{"type":"post.updated","id":7}]\n\n'


# A page showing no chat: a chat its person starts elsewhere ----------------------------------------------


def blog_changes(team, capture) -> bytes:
    """The blog's next change, and the chunk every page of it hears for it."""
    with capture(execute=True):
        post = services.post_create(blog=team.blog, actor=Actor(team.owner, frozenset(ALL)), title="Then this")
    return f'event: effects\ndata: [{{"type":"post.created","id":{post.pk}}}]\n\n'.encode()


def first_message(user, blog, capture, post=None) -> Session:
    """The person's first message from a panel showing no chat (the blog's, or beside `post`'s editor)."""
    where = f"/blogs/{blog.slug}/" + ("" if post is None else f"posts/{post.pk}/")
    with capture(execute=True):
        assert browser(user).post(f"{where}chats/send", {"text": "hi"}).status_code == 200
    return Session.objects.filter(user=user).latest("created_at")


@pytest.mark.parametrize("how", ["first_message", "new_chat"])
def test_a_page_showing_no_chat_hears_a_chat_its_person_starts_in_another_tab(
    team, how, script, django_capture_on_commit_callbacks, open_stream
):
    chunks = open_stream(browser(team.owner), team.blog.slug, panel="blog")
    script([say("Hello.")])
    if how == "first_message":
        chat = first_message(team.owner, team.blog, django_capture_on_commit_callbacks)
    else:
        with django_capture_on_commit_callbacks(execute=True):
            assert browser(team.owner).post(f"/blogs/{team.blog.slug}/chats/new/").status_code == 302
        chat = Session.objects.get(user=team.owner)
    assert next(chunks) == notice(chat=str(chat.pk))
    changed = blog_changes(team, django_capture_on_commit_callbacks)
    assert heard(chunks) == changed  # (heard once)


def test_a_chat_started_elsewhere_with_nothing_said_is_heard_again_with_its_first_message_only(
    team, script, django_capture_on_commit_callbacks, open_stream
):
    """A page showing a chat lists a chat started elsewhere only once something is said in it
    (`chat_panel.listed`): New chat there is heard, and so is that chat's first message (the page reads
    its list again, static/js/chat/history.js), not its later ones. Before, the first message went
    unheard: a list that had left the empty chat out would never have named it until a reload."""
    shown = blog_chat(team.owner, team.blog)
    chunks = open_stream(browser(team.owner), team.blog.slug, chat=shown.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert browser(team.owner).post(f"/blogs/{team.blog.slug}/chats/new/").status_code == 302
    started = Session.objects.filter(user=team.owner).exclude(pk=shown.pk).get()
    assert next(chunks) == notice(chat=str(started.pk))
    script([say("Hello."), say("Again.")])
    send_in_panel(team.owner, started, "hello", django_capture_on_commit_callbacks)
    assert next(chunks) == notice(chat=str(started.pk))
    send_in_panel(team.owner, started, "again", django_capture_on_commit_callbacks)
    changed = blog_changes(team, django_capture_on_commit_callbacks)
    assert heard(chunks) == changed


def test_a_first_messages_notice_costs_no_query(team, django_assert_num_queries):
    """Heard from `agent.signals.message_received` in the message's request: the chat's link is read with
    the session (or made with it), so the notice adds nothing to the turn's queries."""
    chat = blog_chat(team.owner, team.blog)
    chat = Session.objects.select_related("blog_link").get(pk=chat.pk)
    first = add_message(Run(chat), "user", [{"type": "text", "text": "hi"}])
    with django_assert_num_queries(0):
        live.first_message(Session, session=chat, message=first)


def test_beside_a_posts_editor_the_panel_hears_the_chats_about_that_post_only(
    team, script, django_capture_on_commit_callbacks, open_stream
):
    post, other_post = make_post(team.blog), make_post(team.blog, "Another")
    about_post = open_stream(browser(team.owner), team.blog.slug, panel=post.pk)
    about_other = open_stream(browser(team.owner), team.blog.slug, panel=other_post.pk)
    on_blog = open_stream(browser(team.owner), team.blog.slug, panel="blog")
    script([say("Hello.")])
    chat = first_message(team.owner, team.blog, django_capture_on_commit_callbacks, post=post)
    assert next(about_post) == notice(chat=str(chat.pk))
    changed = blog_changes(team, django_capture_on_commit_callbacks)
    assert next(about_other) == changed and next(on_blog) == changed  # (nothing of the chat before it)


@pytest.mark.parametrize("about_post", [False, True])
def test_a_page_showing_a_chat_hears_a_chat_its_person_starts_in_the_same_panel(
    team, about_post, script, django_capture_on_commit_callbacks, open_stream
):
    """The panel of the chat the page shows (the blog page's, or beside a post's editor): the chat started
    there elsewhere joins the page's list of earlier chats (static/js/chat/history.js), the chat shown stays."""
    post = make_post(team.blog) if about_post else None
    shown = start_session(team.owner, team.blog, post)
    chunks = open_stream(browser(team.owner), team.blog.slug, chat=shown.pk)
    script([say("Hello.")])
    chat = first_message(team.owner, team.blog, django_capture_on_commit_callbacks, post=post)
    assert next(chunks) == notice(chat=str(chat.pk))


@pytest.mark.parametrize(
    "who", ["editor", "editor_showing_a_chat", "owner_showing_a_chat_about_a_post", "post_of_another_blog"]
)
def test_no_other_page_hears_of_a_chat_started(
    team, other_team, who, script, django_capture_on_commit_callbacks, open_stream
):
    """Another member's page showing no chat, or one of their own chats; the person's own page showing a
    chat of another panel (beside a post's editor); a panel naming a post of another blog: none hears the
    chat the owner starts on the blog page, only the blog's next change."""
    if who == "editor":
        chunks = open_stream(browser(team.editor), team.blog.slug, panel="blog")
    elif who == "editor_showing_a_chat":
        chunks = open_stream(browser(team.editor), team.blog.slug, chat=blog_chat(team.editor, team.blog).pk)
    elif who == "owner_showing_a_chat_about_a_post":
        shown = start_session(team.owner, team.blog, make_post(team.blog))
        chunks = open_stream(browser(team.owner), team.blog.slug, chat=shown.pk, panel="blog")
    else:
        chunks = open_stream(browser(team.owner), team.blog.slug, panel=make_post(other_team.blog).pk)
    script([say("Hello.")])
    first_message(team.owner, team.blog, django_capture_on_commit_callbacks)
    changed = blog_changes(team, django_capture_on_commit_callbacks)
    assert next(chunks) == changed


def test_a_refused_first_message_starts_no_chat_for_other_pages(
    team, script, settings, django_capture_on_commit_callbacks, open_stream
):
    """Over the message rate, the message is refused and the chat made for it removed: nothing to take up."""
    settings.AGENT_MESSAGES_PER_MINUTE = 1
    intake.rate_slot(team.owner)  # (the minute's one message)
    chunks = open_stream(browser(team.owner), team.blog.slug, panel="blog")
    with django_capture_on_commit_callbacks(execute=True):
        browser(team.owner).post(f"/blogs/{team.blog.slug}/chats/send", {"text": "hi"})
    assert not Session.objects.filter(user=team.owner).exists()
    changed = blog_changes(team, django_capture_on_commit_callbacks)
    assert next(chunks) == changed


def test_a_chat_started_after_its_person_left_the_blog_is_never_relayed(
    team, django_capture_on_commit_callbacks, open_stream
):
    chunks = open_stream(browser(team.editor), team.blog.slug, panel="blog")
    Seat.objects.filter(blog=team.blog, user=team.editor).delete()
    with django_capture_on_commit_callbacks(execute=True):
        live.chat_opened(start_session(team.editor, team.blog), team.blog)
    assert next(chunks).startswith(NO_ACCESS)
    assert list(chunks) == []


def test_a_page_showing_no_chat_names_its_panel_to_its_stream(team):
    post = make_post(team.blog)
    page = browser(team.owner).get(f"/blogs/{team.blog.slug}/").content.decode()
    assert f'sse-connect="/blogs/{team.blog.slug}/events/?panel=blog"' in page
    assert f'data-panel-url="/blogs/{team.blog.slug}/chats/panel"' in page
    editor = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/edit/").content.decode()
    assert f'sse-connect="/blogs/{team.blog.slug}/events/?panel={post.pk}"' in editor
    assert f'data-panel-url="/blogs/{team.blog.slug}/posts/{post.pk}/chats/panel"' in editor


def test_the_first_messages_answer_names_the_new_chat_to_the_pages_stream(
    team, script, django_capture_on_commit_callbacks
):
    """The tab that started the chat hears its other tabs' messages in it from then on."""
    script([say("Hello.")])
    with django_capture_on_commit_callbacks(execute=True):
        answer = browser(team.owner).post(f"/blogs/{team.blog.slug}/chats/send", {"text": "hi"})
    chat = Session.objects.get(user=team.owner)
    html = answer.content.decode()
    assert (
        f'<div id="page-stream" hidden hx-ext="sse" sse-connect="/blogs/{team.blog.slug}/events/?chat={chat.pk}"'
        in html
    )
    assert 'hx-swap-oob="true"><div class="sink"' in html


def test_the_panel_taking_up_a_chat_shows_it_and_its_form_and_stream_name_it(
    team, script, django_capture_on_commit_callbacks
):
    script([say("Hello.")])
    with django_capture_on_commit_callbacks(execute=True):
        browser(team.owner).post(f"/blogs/{team.blog.slug}/chats/send", {"text": "hi <b>there</b>"})
    chat = Session.objects.get(user=team.owner)
    answer = browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/panel?chat={chat.pk}")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert '<div class="bubble" dir="auto">hi &lt;b&gt;there&lt;/b&gt;</div>' in html and "Hello." in html
    assert f'hx-post="/chat/{chat.pk}/send"' in html and f'data-news-url="/chat/{chat.pk}/news"' in html
    assert 'id="chat-form"' in html and f'sse-connect="/blogs/{team.blog.slug}/events/?chat={chat.pk}"' in html
    assert html.count('hx-swap-oob="true"') == 2  # the form and the page's stream
    assert "Ask me to list your posts" not in html


def test_the_panel_with_a_chat_is_for_its_person_only(team, client, script, django_capture_on_commit_callbacks):
    post = make_post(team.blog)
    chat = blog_chat(team.owner, team.blog)
    ask = f"/blogs/{team.blog.slug}/chats/panel?chat={chat.pk}"
    for asker in (browser(team.editor), browser(team.outsider), client):  # (client: signed out)
        answer = asker.get(ask)
        assert (answer.status_code, answer.content) == (204, b"")
    about_post = start_session(team.owner, team.blog, post)  # theirs, but of the editor's panel, not this one
    assert browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/panel?chat={about_post.pk}").status_code == 204
    assert (
        browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/chats/panel?chat={chat.pk}").status_code
        == 204
    )
    for query in ("chat=nope", "chat=", ""):
        assert browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/panel?{query}").status_code == 204
    assert browser(team.owner).get(ask).status_code == 200


def test_a_page_showing_no_chat_whose_stream_was_down_asks_for_the_latest_chat_of_its_panel(team, client):
    """`?latest=1`: the person's latest chat of that panel (the blog's, or one post's editor's), drawn as
    `?chat=` draws it; none there, anyone else, or signed out: 204."""
    post = make_post(team.blog)
    ask = f"/blogs/{team.blog.slug}/chats/panel?latest=1"
    beside = f"/blogs/{team.blog.slug}/posts/{post.pk}/chats/panel?latest=1"
    assert browser(team.owner).get(ask).status_code == 204  # no chat yet
    earlier, latest = blog_chat(team.owner, team.blog), blog_chat(team.owner, team.blog)
    Session.objects.filter(pk=earlier.pk).update(updated_at=latest.updated_at.replace(year=2000))
    about_post = start_session(team.owner, team.blog, post)
    blog_chat(team.editor, team.blog)  # (another member's: never theirs to take up)
    html = browser(team.owner).get(ask).content.decode()
    assert f'hx-post="/chat/{latest.pk}/send"' in html and f'?chat={latest.pk}"' in html
    assert str(earlier.pk) not in html and str(about_post.pk) not in html
    assert f'hx-post="/chat/{about_post.pk}/send"' in browser(team.owner).get(beside).content.decode()
    for asker in (browser(team.outsider), client):  # (client: signed out)
        answer = asker.get(ask)
        assert (answer.status_code, answer.content) == (204, b"")
    assert str(latest.pk) not in browser(team.editor).get(ask).content.decode()
    assert browser(team.editor).get(beside).status_code == 204  # none of theirs beside that post


# The list of earlier chats, read again by a page showing a chat ------------------------------------------


def test_the_panels_list_names_the_persons_chats_there_the_one_shown_marked(team):
    post = make_post(team.blog)
    shown = blog_chat(team.owner, team.blog)
    with_words = blog_chat(team.owner, team.blog)
    with_words.title = "Started in <b>B</b>"
    with_words.save()
    add_message(Run(with_words), "user", [{"type": "text", "text": "hello"}])  # (an empty one is not listed)
    about_post = start_session(team.owner, team.blog, post)
    blog_chat(team.editor, team.blog)  # (another member's: never listed)
    answer = browser(team.owner).get(f"/blogs/{team.blog.slug}/chats/list?chat={shown.pk}")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.count('<li><a href="?chat=') == 2 and str(about_post.pk) not in html
    assert '<li><a href="/blogs/notes/chats/" class="all-chats">All chats…</a></li>' in html  # (renamed there)
    assert (
        f'<a href="?chat={shown.pk}" aria-current="true"><span class="chat-label" data-untitled>Untitled chat' in html
    )
    assert f'<a href="?chat={with_words.pk}"><span class="chat-label">Started in &lt;b&gt;B&lt;/b&gt;</span>' in html
    beside = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/chats/list?chat={about_post.pk}")
    assert '<details class="history">' not in beside.content.decode()  # one chat there: no list


def test_the_panels_list_is_for_its_person_only(team, client):
    chat, other = blog_chat(team.owner, team.blog), blog_chat(team.owner, team.blog)
    ask = f"/blogs/{team.blog.slug}/chats/list?chat={chat.pk}"
    for asker in (browser(team.outsider), client):  # (client: signed out)
        answer = asker.get(ask)
        assert (answer.status_code, answer.content) == (204, b"")
    html = browser(team.editor).get(ask).content.decode()  # their own list, which has none of the owner's
    assert str(chat.pk) not in html and str(other.pk) not in html


def test_a_page_showing_a_chat_knows_where_its_list_is_read_again(team):
    chat = blog_chat(team.owner, team.blog)
    page = browser(team.owner).get(f"/blogs/{team.blog.slug}/?chat={chat.pk}").content.decode()
    assert f'<div class="assistant-tools" data-list-url="/blogs/{team.blog.slug}/chats/list">' in page
    assert f'data-chat="{chat.pk}"' in page


# A page pointing its stream elsewhere -----------------------------------------------------------------------


def test_a_pages_stream_opened_again_under_its_key_frees_its_earlier_ones_place_at_once(team, open_stream):
    """Taking up a chat (or reconnecting), the page opens its stream anew naming itself: its earlier
    stream ends at once and leaves its place among the person's open pages, which it held until its
    next heartbeat (the first write to find its page gone). Another page's stream, or one naming no
    page or a key that is no key, keeps its own."""
    from agent import streams

    owner = browser(team.owner)
    chat = blog_chat(team.owner, team.blog)
    first = open_stream(owner, team.blog.slug, panel="blog", page="k1")
    open_stream(owner, team.blog.slug, chat=chat.pk, page="k2")
    open_stream(owner, team.blog.slug, chat=chat.pk)
    open_stream(owner, team.blog.slug, chat=chat.pk, page="k1.")
    assert streams.open_count(team.owner.pk, live.STREAM_KIND) == 4
    open_stream(owner, team.blog.slug, chat=chat.pk, page="k1")
    assert streams.open_count(team.owner.pk, live.STREAM_KIND) == 4  # freed before the first sends a byte
    assert next(first).startswith(b"event: superseded\ndata: ")
    assert list(first) == []
    open_stream(browser(team.editor), team.blog.slug, page="k2")  # (another person's page)
    assert streams.open_count(team.owner.pk, live.STREAM_KIND) == 4


# Hostile review, session 29 --------------------------------------------------------------------------------


def test_what_a_page_fetches_of_its_persons_chats_is_never_kept_by_a_cache(
    team, client, script, django_capture_on_commit_callbacks
):
    """The panel's list, the panel with a chat and a chat's news are one person's (their chats' words,
    a stream pass): no cache, shared or the browser's, keeps them, as none keeps the page they are on.
    `Vary: Cookie` alone relied on every cache between to honour it. The quiet 204s too."""
    chat = blog_chat(team.owner, team.blog)
    script([say("Hello.")])
    turn = send_in_panel(team.owner, chat, "a private question", django_capture_on_commit_callbacks)
    slug = team.blog.slug
    asks = [
        f"/blogs/{slug}/chats/list?chat={chat.pk}",
        f"/blogs/{slug}/chats/panel?chat={chat.pk}",
        f"/blogs/{slug}/chats/panel?latest=1",
        f"/chat/{chat.pk}/news?turn={turn.pk}",
        f"/chat/{chat.pk}/news?after=",
    ]
    for asker, status in ((browser(team.owner), 200), (browser(team.outsider), 204), (client, 204)):
        for ask in asks:
            answer = asker.get(ask)
            assert answer.status_code == status, ask
            kept = answer.get("Cache-Control", "")
            assert "private" in kept and "no-store" in kept, (ask, kept)


def test_distinct_page_keys_do_not_lift_the_persons_limit_of_open_pages(team, settings, open_stream):
    """A script opening stream after stream, each naming a page of its own (`?page=`): the oldest ends
    past AGENT_MAX_STREAMS_PER_USER as without keys; a key that is no key (too long) names no page."""
    from agent import streams

    settings.AGENT_MAX_STREAMS_PER_USER = 3
    owner = browser(team.owner)
    first = open_stream(owner, team.blog.slug, page="p0")
    for n in range(1, 6):
        open_stream(owner, team.blog.slug, page=f"p{n}")
    open_stream(owner, team.blog.slug, page="x" * 5000)
    assert streams.open_count(team.owner.pk, live.STREAM_KIND) == 3
    assert next(first).startswith(b"event: superseded\ndata: ")


def test_a_chat_of_another_blog_of_theirs_is_not_this_blogs_panels(team, other_team):
    """Named in this blog's panel, list or page stream, the person's own chat of another blog is no chat
    of this one: 204, left out, and the stream hears this blog alone (its chat notices and panel not)."""
    Seat.objects.create(blog=other_team.blog, user=team.owner, role=Seat.EDITOR, may_use_assistant=True)
    elsewhere = blog_chat(team.owner, other_team.blog)
    owner, slug = browser(team.owner), team.blog.slug
    assert owner.get(f"/blogs/{slug}/chats/panel?chat={elsewhere.pk}").status_code == 204
    assert str(elsewhere.pk) not in owner.get(f"/blogs/{slug}/chats/list?chat={elsewhere.pk}").content.decode()
    assert owner.get(f"/blogs/{slug}/chats/panel?latest=1").status_code == 204  # none of theirs here
    from django.test import RequestFactory

    asked = RequestFactory().get(f"/blogs/{slug}/events/?chat={elsewhere.pk}")
    asked.user = team.owner
    assert live.own_chat(asked, team.blog) is None and live.own_chat(asked, other_team.blog) == (
        str(elsewhere.pk),
        None,
    )
