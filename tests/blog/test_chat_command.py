"""`manage.py chat`: the assistant in a terminal, with the same turns, tools and approvals as the web."""

from __future__ import annotations

import io
import threading

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from agent.backends import reset_backends
from agent.models import Approval
from blog.models import Post
from tests.blog.conftest import ALL, make_post, set_consent

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def demo(settings):
    settings.AGENT_BACKEND, settings.AGENT_DEMO_DELAY_MS = "demo", 0
    settings.AGENT_CONFIRM_TOOLS = ["delete_post", "publish_post"]
    reset_backends()
    yield
    reset_backends()


def chat(team, *messages: str, answers: str = "", role: str = "owner") -> str:
    set_consent(team.user(role), team.blog, ALL)  # the assistant may do all the owner may
    out = io.StringIO()
    options = {"message": list(messages)} if messages else {}
    call_command(
        "chat", user=team.user(role).username, blog=team.blog.slug, stdin=io.StringIO(answers), stdout=out, **options
    )
    return out.getvalue()


def test_a_call_that_waits_for_a_person_is_put_to_them_and_runs_when_allowed(team):
    post = make_post(team.blog, "River notes")
    shown = chat(team, "publish River notes", answers="y\n")
    assert "(waiting for you: Publish the post “River notes”)" in shown
    assert "Allow: Publish the post “River notes”? [y/N]" in shown
    assert "[publish_post] → ok" in shown and "I published “River notes”" in shown
    post.refresh_from_db()
    assert post.status == Post.PUBLISHED
    assert Approval.objects.get().status == Approval.APPROVED


@pytest.mark.parametrize("answers", ["n\n", ""])  # a no, or no answer at all (the end of input)
def test_anything_but_yes_refuses_it_and_nothing_changes(team, answers):
    post = make_post(team.blog, "River notes")
    shown = chat(team, "delete River notes", answers=answers)
    assert "[delete_post] → error" in shown and "All right, I left it as it was." in shown
    assert Post.objects.filter(pk=post.pk).exists()
    assert Approval.objects.get().status == Approval.REJECTED


def test_messages_come_from_stdin_without_m(team):
    make_post(team.blog, "River notes")
    shown = chat(team, answers="list my posts\n\nlist my posts\n")
    assert shown.count("you> ") == 4  # two messages, a blank line skipped, then the end of input
    assert shown.count("[list_posts {}] → ok") == 2


def test_who_may_chat_is_checked(team):
    with pytest.raises(CommandError, match="No user named 'nobody'"):
        call_command("chat", user="nobody", blog=team.blog.slug, message=["hi"], stdout=io.StringIO())
    with pytest.raises(CommandError, match="is not a member of a blog"):
        chat(team, "hi", role="outsider")
    with pytest.raises(CommandError, match="may not use the assistant"):
        chat(team, "hi", role="viewer")


def test_a_chat_continued_with_a_call_still_waiting_asks_about_it_first(team):
    """Left waiting on the web, say: continuing the chat in the terminal puts the call to the person
    before anything else (a new message would refuse it unseen)."""
    from agent import turns
    from blog.chat import BlogChatPolicy

    post = make_post(team.blog, "River notes")
    set_consent(team.owner, team.blog, ALL)
    session = BlogChatPolicy().create(team.owner, {"blog": team.blog.slug})
    run, _ = turns.begin(session, "publish River notes")
    assert [item[0] for item in turns.drive(run) if isinstance(item, tuple)][-1] == "confirm"  # left waiting
    out = io.StringIO()
    call_command(
        "chat",
        user="owner",
        blog=team.blog.slug,
        session=str(session.pk),
        message=[],
        stdin=io.StringIO("y\n"),
        stdout=out,
    )
    assert "(waiting for you: Publish the post “River notes”)" in out.getvalue()
    post.refresh_from_db()
    assert post.status == Post.PUBLISHED
    assert Approval.objects.get().status == Approval.APPROVED


@pytest.mark.django_db(transaction=True, databases="__all__")  # (the watcher has a connection of its own)
def test_the_terminals_turn_keeps_its_chat_while_the_model_is_silent(team, script, settings):
    """The process watcher renews the lease of the terminal's turn as for a web turn: a model silent
    for longer than the lease does not let the chat be taken from it (by a message sent on the web)."""
    from agent.models import Session

    settings.AGENT_TURN_LEASE_SECONDS, settings.AGENT_STOP_POLL_SECONDS = 2, 0.2
    script(
        [[{"kind": "text", "text": "Thought it over.", "delay_ms": 3_500}, {"kind": "done", "stop_reason": "end_turn"}]]
    )
    seen = []

    def look() -> None:  # (as another worker would: a connection of its own)
        from django.db import connections

        try:
            seen.append(Session.objects.filter(lease_until__gt=timezone.now()).exists())
        finally:
            connections.close_all()

    looks = [threading.Timer(at, look) for at in (2.5, 3.2)]  # past the lease taken at the start
    for timer in looks:
        timer.start()
    shown = chat(team, "hello")
    for timer in looks:
        timer.join()
    assert "Thought it over." in shown
    assert seen == [True, True]


def test_a_full_budget_is_said_with_when_to_try_again(team, settings):
    """The terminal says what is full and, from the refusal's `retry_after_seconds`, when to try
    again, as the chat page counts it down."""
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = 1  # (an empty bucket admits one call, which fills it)
    shown = chat(team, "list my posts", "list my posts")
    assert "You've sent a lot in the last minute. Try again in " in shown
    wait = shown.split("Try again in ", 1)[1].split(".", 1)[0]
    assert wait.endswith(" s") and 1 <= int(wait[:-2]) <= 60


def test_a_chat_continued_must_be_on_the_blog_named(team):
    """`--session` on another blog of the person's than `--blog` named: the banner named `--blog`
    while the chat went on in the other. Refused, saying which blog the chat is on."""
    from blog.chat import BlogChatPolicy
    from blog.models import Blog, Seat

    other = Blog.objects.create(owner=team.owner, title="Other", slug="other")
    Seat.objects.create(blog=other, user=team.owner, role=Seat.OWNER, may_use_assistant=True)
    session = BlogChatPolicy().create(team.owner, {"blog": team.blog.slug})
    out = io.StringIO()
    with pytest.raises(CommandError, match=r"^That chat is on 'notes', not 'other'\.$"):
        call_command("chat", user="owner", blog="other", session=str(session.pk), message=["hi"], stdout=out)
    assert out.getvalue() == ""
