"""The data layer under concurrent requests and growing data: check-then-insert races the database's
unique constraints decide, and pages whose query count must not grow with what they list."""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from agent.models import Message, Part, Session
from blog import services
from blog.chat_panel import PANEL_CHATS
from blog.grants import Actor
from blog.models import ChatLink, Consent, Post, PostRevision, Seat
from tests.blog.conftest import ALL, blog_chat, browser, make_blog, make_post

pytestmark = pytest.mark.django_db


# --- check-then-insert races ------------------------------------------------------------------


def race_once(monkeypatch, module, name, before):
    """Make `module.name` run `before(*args)` first, once: what a concurrent request commits between
    this request's check and its write."""
    real, raced = getattr(module, name), []

    def racing(*args, **kwargs):
        if not raced:
            raced.append(True)
            before(*args, **kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, racing)
    return raced


def slug_taken_after_the_check(monkeypatch):
    """Another request creates a post at the slug this one has just found free, before its write."""
    real = services.unique_slug
    raced = []

    def racing(blog, title, exclude=None):
        slug = real(blog, title, exclude)
        if not raced:
            raced.append(Post.objects.create(blog=blog, title=title, slug=slug, author=blog.owner))
        return slug

    monkeypatch.setattr(services, "unique_slug", racing)
    return raced


def test_a_new_post_whose_address_is_taken_meanwhile_gets_the_next_one(team, monkeypatch):
    raced = slug_taken_after_the_check(monkeypatch)
    response = browser(team.owner).post("/blogs/notes/posts/new/", {"title": "Morning light", "body": "mine"})
    assert response.status_code == 302 and response["Location"] == "/blogs/notes/"
    mine = Post.objects.get(body="mine")
    assert raced[0].slug == "morning-light"
    assert (mine.title, mine.slug) == ("Morning light", "morning-light-2")
    assert list(PostRevision.objects.filter(post=mine).values_list("action", "after__slug")) == [
        ("create", "morning-light-2")
    ]


def test_a_rename_whose_address_is_taken_meanwhile_gets_the_next_one(team, monkeypatch):
    post = make_post(team.blog, "Draft")
    raced = slug_taken_after_the_check(monkeypatch)
    response = browser(team.owner).post(f"/blogs/notes/posts/{post.pk}/edit/", {"title": "Evening", "body": "b"})
    assert response.status_code == 302
    post.refresh_from_db()
    assert raced[0].slug == "evening"
    assert (post.title, post.slug, post.body) == ("Evening", "evening-2", "b")
    assert PostRevision.objects.get(post=post).after["slug"] == "evening-2"


def test_the_assistants_create_post_racing_a_person_still_makes_the_post(team, monkeypatch):
    from blog.operations import perform_json

    raced = slug_taken_after_the_check(monkeypatch)
    actor = Actor(team.editor, frozenset(ALL), via_assistant=True)
    result, effects = perform_json("create_post", actor, team.blog, {"title": "Notes"})
    assert raced[0].slug == "notes"
    assert Post.objects.get(pk=result["id"]).slug == "notes-2"
    assert effects == [{"type": "post.created", "id": result["id"]}]


@pytest.mark.django_db(transaction=True)
def test_two_transactions_creating_the_same_title_at_once_both_succeed(django_user_model):
    """The race itself, on PostgreSQL: another transaction holds an uncommitted post at the address
    this one finds free; this one's INSERT waits on the unique index, the other commits, and this
    one takes the next address instead of failing."""
    if connection.vendor != "postgresql":
        pytest.skip(
            "PostgreSQL only (CI runs it there): SQLite runs one writer at a time, so two writes cannot race; the race on SQLite is covered by the tests above"
        )
    team = make_blog(django_user_model)
    holding, release, outcome = threading.Event(), threading.Event(), {}

    def other_request() -> None:
        try:
            with transaction.atomic():
                Post.objects.create(blog=team.blog, title="Race", slug="race", author=team.owner)
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    def this_request() -> None:
        try:
            actor = Actor(team.editor, frozenset(ALL))
            outcome["post"] = services.post_create(blog=team.blog, actor=actor, title="Race")
        except Exception as exc:
            outcome["error"] = exc
        finally:
            connections.close_all()

    other = threading.Thread(target=other_request)
    other.start()
    assert holding.wait(30)
    this = threading.Thread(target=this_request)
    this.start()
    with connection.cursor() as cursor:  # until this request's INSERT waits on the other's row
        waiting = 0
        while not waiting and this.is_alive():
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            waiting = cursor.fetchone()[0]
    release.set()
    other.join(30)
    this.join(30)
    assert "error" not in outcome, outcome
    assert sorted(Post.objects.values_list("slug", flat=True)) == ["race", "race-2"]
    assert outcome["post"].slug == "race-2"


def test_a_member_added_twice_at_once_is_added_once_and_the_second_is_told(team, monkeypatch):
    """Two owners' tabs (or a double click) add the same person: both pass the "already a member"
    check, and the unique (user, blog) seat decides; the loser is told, not shown a server error."""
    from blog import team as team_module

    race_once(
        monkeypatch,
        team_module,
        "seat_add",
        lambda *, blog, user, role: Seat.objects.create(blog=blog, user=user, role=Seat.VIEWER),
    )
    response = browser(team.owner).post(
        "/blogs/notes/members/", {"action": "add", "username": "outsider", "role": "author"}
    )
    assert response.status_code == 200  # the form again, saying why
    assert "outsider is already a member." in response.content.decode()
    assert list(Seat.objects.filter(blog=team.blog, user=team.outsider).values_list("role", flat=True)) == ["viewer"]


# --- query counts that must not grow ----------------------------------------------------------


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


def staff(team):
    team.owner.is_staff = team.owner.is_superuser = True
    team.owner.save()
    return browser(team.owner)


def revisions_by_many(team, count: int, start: int = 0) -> None:
    """`count` posts, each by another author, changed by the assistant in a chat under a grant."""
    from django.contrib.auth import get_user_model

    consent = Consent.objects.get_or_create(user=team.owner, blog=team.blog, client="", defaults={"scopes": ALL})[0]
    for i in range(start, start + count):
        author = get_user_model().objects.create_user(f"writer{i}")
        post = make_post(team.blog, f"Post {i}", author=author)
        PostRevision.objects.create(
            post=post,
            blog=team.blog,
            action="update",
            user=author,
            via_assistant=True,
            consent=consent,
            chat_session=blog_chat(team.owner, team.blog),
        )


@pytest.mark.parametrize("page", ["/admin/blog/post/", "/admin/blog/postrevision/"])
def test_the_admins_post_and_history_lists_take_the_same_queries_whatever_their_length(team, page):
    client = staff(team)
    revisions_by_many(team, 2)
    few = queries_of(client, page)
    revisions_by_many(team, 6, start=2)
    assert queries_of(client, page) == few


def test_the_members_screen_does_not_grow_with_members(team, django_user_model):
    """Already sound (checked with the rest): one read of the seats with their users."""
    client = browser(team.owner)
    few = queries_of(client, "/blogs/notes/members/")
    for i in range(5):
        Seat.objects.create(blog=team.blog, user=django_user_model.objects.create_user(f"extra{i}"), role=Seat.AUTHOR)
    assert queries_of(client, "/blogs/notes/members/") == few


# --- indexes the hot reads use ----------------------------------------------------------------


def test_the_list_of_public_blogs_counts_published_posts_only(team, other_team, django_user_model):
    """The front page's and the home page's list: blogs with something published, the latest first,
    each with its count of published posts and its last publication (a blog of drafts is left out)."""
    drafts_only = make_blog(django_user_model, slug="drafts", title="Drafts", prefix="d")
    make_post(drafts_only.blog, "Unfinished")
    for i in range(3):
        make_post(team.blog, f"Live {i}", published=True)
    make_post(team.blog, "Draft")
    latest = make_post(other_team.blog, "Newest", published=True)
    from blog.reading import public_blogs

    assert [(b.slug, b.published_count, b.last_published) for b in public_blogs()] == [
        ("elsewhere", 1, latest.published_at),
        ("notes", 3, Post.objects.filter(blog=team.blog, status=Post.PUBLISHED).latest("published_at").published_at),
    ]


def test_the_list_of_public_blogs_never_reads_the_drafts(team, django_user_model):
    """Shown on every visitor's front page and every signed-in home page: it reads the published posts
    by index (blog_post_status_idx), never every post of the site, drafts and all. (300,000 posts, a
    tenth published: 256 ms by a sequential scan; 29 ms through the index, index only.)"""
    if connection.vendor != "postgresql":
        pytest.skip(
            "PostgreSQL only (CI runs it there): it reads PostgreSQL's query plan; the list's contents are checked on both databases by test_the_list_of_public_blogs_counts_published_posts_only"
        )
    from blog.reading import public_blogs

    blogs = [make_blog(django_user_model, slug=f"b{i}", title=f"B{i}", prefix=f"b{i}").blog for i in range(10)]
    Post.objects.bulk_create(
        Post(blog=blogs[i % 10], title=f"Draft {i}", slug=f"draft-{i}", status=Post.DRAFT) for i in range(5000)
    )
    for blog in blogs[:3]:
        make_post(blog, "Live", published=True)
    sql, params = public_blogs().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE blog_post")  # the planner sees the table as it is
        cursor.execute("EXPLAIN (COSTS OFF) " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
    reads = [i for i, line in enumerate(plan) if re.search(r" on blog_post\b", line)]
    assert reads, plan
    for i in reads:  # each read of the posts goes straight to the published ones, through an index
        condition = plan[i + 1].strip()
        assert condition.startswith(("Index Cond:", "Recheck Cond:")), plan
        assert re.search(r"\(?status\)?(::text)? = 'published'", condition), plan


def test_the_posts_of_a_title_are_found_through_the_title_index(team, other_team):
    """`services.posts_titled` (each pause in typing a title in the editor, each Save, each post the
    assistant drafts or renames) finds the blog's posts of a title, letter case aside, through the index on
    (blog, UPPER(title)) (blog_post_title_upper_idx), not by reading each of the blog's posts. (10,000
    posts in one blog, the fastest of 30: on PostgreSQL 4.9 ms by the blog's index and a filter, 1.1 ms
    through this one, 0.02 ms of it the query; on SQLite 2.5 and 0.8 ms.)"""
    Post.objects.bulk_create(
        Post(blog=blog, title=f"Post {i}", slug=f"post-{i}")
        for blog in (team.blog, other_team.blog)
        for i in range(3000)
    )
    with CaptureQueriesContext(connection) as run:
        found = services.posts_titled(team.blog.pk, "post 7", exclude=None)
    assert [post.title for post in found] == ["Post 7"]  # letter case aside, the other blog's left out
    (query,) = [q["sql"] for q in run.captured_queries if "blog_post" in q["sql"]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE blog_post")  # the planner sees the table as it is
            cursor.execute("EXPLAIN (COSTS OFF) " + query)
            plan = [row[0] for row in cursor.fetchall()]
            assert any("blog_post_title_upper_idx" in line for line in plan), plan
            conditions = [line.strip() for line in plan if line.strip().startswith(("Index Cond:", "Recheck Cond:"))]
            assert any("upper((title)::text)" in line for line in conditions), plan
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + query)
            plan = [row[-1] for row in cursor.fetchall()]
            # Both columns of the index: the blog, then the title's upper case (not the blog alone).
            assert any("USING INDEX blog_post_title_upper_idx (blog_id=? AND <expr>=?)" in line for line in plan), plan


def test_a_new_posts_address_is_looked_up_by_name_not_by_reading_the_blogs_posts(team, other_team):
    """`services.unique_slug` (each post created, renamed or imported) finds which of a title's addresses are
    taken through the (blog, slug) index, by name. It read the blog's slugs that begin alike: on SQLite, whose
    `LIKE` ignores case, that was every post of the blog, each time (measured: bench/FINDINGS.md, session 50)."""
    Post.objects.bulk_create(
        Post(blog=blog, title=f"Post {i}", slug=f"post-{i}")
        for blog in (team.blog, other_team.blog)
        for i in range(3000)
    )
    with CaptureQueriesContext(connection) as run:
        assert services.unique_slug(team.blog, "Post 7") == "post-7-2"
    (query,) = [q["sql"] for q in run.captured_queries if "blog_post" in q["sql"]]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # (By the blog's index and a filter at this size, well under a millisecond; through the (blog, slug)
            # index from about 10,000 posts a blog. Never the whole table.)
            cursor.execute("ANALYZE blog_post")
            cursor.execute("EXPLAIN (COSTS OFF) " + query)
            plan = [row[0] for row in cursor.fetchall()]
            assert any("Index" in line for line in plan) and not any("Seq Scan" in line for line in plan), plan
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + query)
            plan = [row[-1] for row in cursor.fetchall()]
            # Both columns of the index: the blog, then the address (not the blog alone, then each of its posts).
            assert any(line.startswith("SEARCH") and "(blog_id=? AND slug=?)" in line for line in plan), plan


@pytest.mark.parametrize("taken", [1, services.SLUG_FORMS - 1, services.SLUG_FORMS, 3 * services.SLUG_FORMS, 4000])
def test_a_title_many_posts_share_takes_its_first_free_address_past_every_one_taken(team, other_team, taken):
    """Its forms are read `SLUG_FORMS` at a time, then twice as many, up to `SLUG_FORMS_MAX` a query: the first
    free one is found however many are taken, never one taken (nor another blog's posts counted)."""
    slugs = ["walk"] + [f"walk-{n}" for n in range(2, taken + 1)]
    Post.objects.bulk_create(Post(blog=team.blog, title="Walk", slug=slug) for slug in slugs)
    Post.objects.create(blog=other_team.blog, title="Walk", slug=f"walk-{taken + 1}")
    assert services.unique_slug(team.blog, "Walk") == f"walk-{taken + 1}"
    assert services.unique_slug(team.blog, "Feed") == "feed-2"  # (reserved: the blog's feed)
    assert services.unique_slug(team.blog, "Walk", exclude=Post.objects.get(blog=team.blog, slug="walk").pk) == "walk"


def test_the_panels_list_of_chats_reads_only_the_persons_chats_messages(team, other_team):
    """Every blog page lists the person's latest chats, those something was said in (`chat_panel.listed`):
    PostgreSQL reads each listed chat's first message by the (session, position) index, never every
    message of the site as one set (a hashed subplan over a read of the whole table), which an EXISTS
    under the list's OR let it choose. (3,000 chats of one person among 117,000 messages: the panel's
    query 20.7 ms by that read, 0.44 ms chat by chat.)"""
    if connection.vendor != "postgresql":
        pytest.skip(
            "PostgreSQL only (CI runs it there): it reads PostgreSQL's query plan; the list's contents are checked on both databases by tests/blog/test_chat_notices.py and test_views.py"
        )
    sessions = Session.objects.bulk_create(Session(user=team.editor) for _ in range(300))
    sessions += Session.objects.bulk_create(Session(user=other_team.editor) for _ in range(300))
    ChatLink.objects.bulk_create(
        ChatLink(session=s, blog=team.blog if s.user_id == team.editor.pk else other_team.blog) for s in sessions
    )
    messages = Message.objects.bulk_create(
        Message(session=s, role=Message.USER, position=p) for s in sessions[1:] for p in range(3)
    )
    Part.objects.bulk_create(Part(message=m, position=0, type="text", text="hello") for m in messages)
    with CaptureQueriesContext(connection) as run:
        response = browser(team.editor).get(f"/blogs/{team.blog.slug}/")
    assert response.status_code == 200
    assert len(response.context["chat_sessions"]) == PANEL_CHATS
    (query,) = [q["sql"] for q in run.captured_queries if "agent_message" in q["sql"] and "LIMIT 20" in q["sql"]]
    with connection.cursor() as cursor:
        for table in ("agent_session", "agent_message", "agent_part", "blog_chatlink"):
            cursor.execute(f"ANALYZE {table}")  # the planner sees the tables as they are
        cursor.execute("EXPLAIN (COSTS OFF) " + query)
        plan = [row[0] for row in cursor.fetchall()]
    assert not any("hashed SubPlan" in line for line in plan), plan
    reads = [i for i, line in enumerate(plan) if re.search(r" on agent_message\b", line)]
    assert reads, plan
    for i in reads:  # each read of the messages is one chat's, through the (session, position) index
        assert "agent_message_position_unique" in plan[i], plan
        assert plan[i + 1].strip().startswith("Index Cond: (session_id = "), plan


def test_a_later_chats_page_reads_the_first_words_of_its_own_chats_only(team):
    """The chats page's later page reads each shown chat's first words (its label), not every earlier
    chat's as well before skipping them (the label was in the SELECT of the statement with the OFFSET:
    the last page of 3,000 chats read about 2,950 of them). PostgreSQL's own count of the reads of the
    parts, EXPLAIN ANALYZE of the page's statement: once per chat shown."""
    if connection.vendor != "postgresql":
        pytest.skip(
            "PostgreSQL only (CI runs it there): it reads PostgreSQL's count of a plan's reads; the statement's shape is checked on both databases by tests/blog/test_query_counts.py"
        )
    sessions = Session.objects.bulk_create(Session(user=team.editor) for _ in range(130))
    ChatLink.objects.bulk_create(ChatLink(session=s, blog=team.blog) for s in sessions)
    messages = Message.objects.bulk_create(Message(session=s, role=Message.USER, position=0) for s in sessions)
    Part.objects.bulk_create(Part(message=m, position=0, type="text", text="hello") for m in messages)
    with CaptureQueriesContext(connection) as run:
        response = browser(team.editor).get(f"/blogs/{team.blog.slug}/chats/", {"page": 3})
    assert response.status_code == 200
    assert len(response.context["chat_sessions"]) == 30
    (query,) = [q["sql"] for q in run.captured_queries if "first_words" in q["sql"]]
    with connection.cursor() as cursor:
        for table in ("agent_session", "agent_message", "agent_part", "blog_chatlink"):
            cursor.execute(f"ANALYZE {table}")  # the planner sees the tables as they are
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + query)
        plan = [row[0] for row in cursor.fetchall()]
    reads = [line for line in plan if re.search(r" on agent_part\b", line)]
    assert reads, plan
    for line in reads:  # the label's read of the parts: once per chat shown, or fewer
        loops = re.search(r"loops=(\d+)", line)
        assert loops and int(loops.group(1)) <= 30, plan
