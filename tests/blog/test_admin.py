"""The blog's admin as an auditor uses it: it reads grants, links and history, and writes none of them
past the blog's own write paths (revisions, the person's own grants)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from blog.models import Blog, ChatLink, Consent, Post, PostRevision, Seat
from tests.blog.conftest import ALL, READ, blog_chat, browser, make_post, said_chat, set_consent

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(django_user_model):
    return django_user_model.objects.create_superuser("root", password="root-pass-123")


@pytest.fixture
def auditor(root):
    return browser(root)


def test_a_grant_is_neither_made_nor_widened_in_the_admin(team, auditor):
    """A grant is its person's to give (their Clients screen): an admin who could add or edit one
    would let the assistant act for someone beyond what they allowed."""
    consent = set_consent(team.editor, team.blog, [READ])
    assert auditor.get("/admin/blog/consent/add/").status_code == 403
    fields = {"user": team.author.pk, "blog": team.blog.pk, "client": "", "scopes": '["posts:delete"]'}
    auditor.post("/admin/blog/consent/add/", fields)
    assert not Consent.objects.filter(user=team.author).exists()
    auditor.post(f"/admin/blog/consent/{consent.pk}/change/", {**fields, "user": team.editor.pk})
    consent.refresh_from_db()
    assert consent.scopes == [READ]
    assert auditor.post(f"/admin/blog/consent/{consent.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Consent.objects.filter(pk=consent.pk).exists()


def test_an_admin_revokes_a_grant_as_its_person_would(team, auditor):
    consent = set_consent(team.editor, team.blog, ALL)
    kept = set_consent(team.author, team.blog, ALL)
    response = auditor.post("/admin/blog/consent/", {"action": "revoke", "_selected_action": [consent.pk]})
    assert response.status_code == 302
    consent.refresh_from_db()
    assert (consent.scopes, consent.revoked_at is not None) == ([], True)
    assert Consent.objects.get(pk=kept.pk).revoked_at is None


def test_an_admins_bulk_revoke_of_grants_is_all_or_nothing(team, auditor):
    """The action revoked each grant in its own transaction: the second failing (here its announcement's
    receiver, as a client's token revocation could) left the first revoked, half an action done. Each
    revoke is in the admin's log, written in the same transaction."""
    from django.contrib.admin.models import CHANGE, LogEntry

    from blog.signals import consent_revoked

    first = set_consent(team.editor, team.blog, ALL)
    second = set_consent(team.author, team.blog, ALL)
    announced: list[int] = []

    def failing_second(sender, consent, **kwargs):
        announced.append(consent.pk)
        if len(announced) == 2:
            raise RuntimeError("the database went away")

    selected = {"action": "revoke", "_selected_action": [first.pk, second.pk]}
    consent_revoked.connect(failing_second, sender=Consent, dispatch_uid="test.failing_second")
    try:
        with pytest.raises(RuntimeError):
            auditor.post("/admin/blog/consent/", selected)
    finally:
        consent_revoked.disconnect(sender=Consent, dispatch_uid="test.failing_second")
    assert len(announced) == 2
    assert Consent.objects.filter(pk__in=[first.pk, second.pk], revoked_at__isnull=True).count() == 2
    assert list(Consent.objects.filter(pk=first.pk).values_list("scopes", flat=True)) == [ALL]
    assert not LogEntry.objects.exists()  # (nor the admin's log saying they were)

    assert auditor.post("/admin/blog/consent/", selected).status_code == 302
    assert not Consent.objects.filter(pk__in=[first.pk, second.pk], revoked_at__isnull=True).exists()
    logged = LogEntry.objects.filter(action_flag=CHANGE).order_by("object_id")
    assert sorted((e.object_id, e.get_change_message()) for e in logged) == sorted(
        (str(pk), "Revoked.") for pk in (first.pk, second.pk)
    )


def test_a_chat_link_is_not_made_or_changed_in_the_admin(team, auditor):
    """Its add page had no field for the chat or the blog, so saving it was a 500; its change page
    pointed a chat's "this post" at any post."""
    link = ChatLink.objects.get(session=blog_chat(team.owner, team.blog))
    post = make_post(team.blog, "Elsewhere")
    assert auditor.get("/admin/blog/chatlink/add/").status_code == 403
    assert auditor.post("/admin/blog/chatlink/add/", {"post": post.pk}).status_code == 403
    auditor.post(f"/admin/blog/chatlink/{link.pk}/change/", {"post": post.pk})
    link.refresh_from_db()
    assert link.post_id is None
    assert auditor.post(f"/admin/blog/chatlink/{link.pk}/delete/", {"post": "yes"}).status_code == 403
    assert ChatLink.objects.filter(pk=link.pk).exists()


def test_history_is_deleted_only_with_its_blog(team, auditor):
    post = make_post(team.blog, "Kept")
    revision = PostRevision.objects.create(post=post, blog=team.blog, action="create", user=team.owner)
    page = "/admin/blog/postrevision/"
    assert auditor.post(f"{page}{revision.pk}/delete/", {"post": "yes"}).status_code == 403
    auditor.post(page, {"action": "delete_selected", "_selected_action": [revision.pk], "post": "yes"})
    assert PostRevision.objects.filter(pk=revision.pk).exists()
    assert auditor.post(f"/admin/blog/blog/{team.blog.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Blog.objects.exists() and not PostRevision.objects.exists()


def test_a_post_is_written_on_the_blogs_screens_and_an_admins_delete_is_in_its_history(team, auditor, root):
    """Saved in the admin, a post changed with no revision (and could be published with no date)."""
    post = make_post(team.blog, "Draft")
    fields = {
        "blog": team.blog.pk,
        "author": team.owner.pk,
        "title": "Taken over",
        "slug": "draft",
        "status": "published",
    }
    auditor.post(f"/admin/blog/post/{post.pk}/change/", fields)
    post.refresh_from_db()
    assert (post.title, post.status) == ("Draft", Post.DRAFT)
    assert auditor.get("/admin/blog/post/add/").status_code == 403
    assert auditor.post(f"/admin/blog/post/{post.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Post.objects.filter(pk=post.pk).exists()
    deleted = PostRevision.objects.get(action="delete")
    assert (deleted.user, deleted.before["id"], deleted.before["title"]) == (root, post.pk, "Draft")


def test_an_admin_finds_a_blogs_chats_and_what_they_changed(team, other_team, auditor):
    chat = blog_chat(team.editor, team.blog)
    elsewhere = blog_chat(other_team.editor, other_team.blog)
    PostRevision.objects.create(blog=team.blog, post=make_post(team.blog), action="create", chat_session=chat)
    page = auditor.get(f"/admin/blog/chatlink/?blog__id__exact={team.blog.pk}").content.decode()
    assert str(chat.pk) in page and str(elsewhere.pk) not in page
    page = auditor.get("/admin/blog/chatlink/?q=xeditor").content.decode()
    assert str(elsewhere.pk) in page and str(chat.pk) not in page
    page = auditor.get(f"/admin/blog/postrevision/?q={chat.pk}").content.decode()
    assert "1 post revision" in page
    assert f'<a href="/admin/agent/session/{chat.pk}/change/">{str(chat.pk)[:8]}…</a>' in page  # (to its transcript)


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_chat_links_list_takes_the_same_queries_whatever_its_length(team, auditor):
    def chats(count: int, start: int = 0) -> None:
        for i in range(start, start + count):
            link = ChatLink.objects.get(session=blog_chat(team.editor, team.blog))
            link.post = make_post(team.blog, f"Post {i}")
            link.save()

    chats(2)
    few = queries_of(auditor, "/admin/blog/chatlink/")
    chats(18, start=2)
    assert queries_of(auditor, "/admin/blog/chatlink/") == few


def test_the_transcripts_list_names_each_chats_blog_and_finds_a_blogs_chats(team, other_team, auditor):
    """An auditor's "every chat on blog X": the list of chats filters by blog and finds a blog's chats by its slug,
    and names each chat's blog, read with the list (the engine's own admin knows no blogs)."""
    here = said_chat(team.editor, team.blog, text="draft something")
    there = said_chat(other_team.editor, other_team.blog, text="tidy up")
    response = auditor.get(f"/admin/agent/session/?blog_link__blog__id__exact={team.blog.pk}")
    assert [s.pk for s in response.context["cl"].result_list] == [here.pk]
    assert [s.pk for s in auditor.get("/admin/agent/session/?q=elsewhere").context["cl"].result_list] == [there.pk]
    page = auditor.get("/admin/agent/session/").content.decode()
    assert '<td class="field-blog">Elsewhere</td>' in page and '<td class="field-blog">Notes</td>' in page
    assert f"?blog_link__blog__id__exact={other_team.blog.pk}" in page  # (the filter's choice)
    assert "Notes" in auditor.get(f"/admin/agent/session/{here.pk}/change/").content.decode()

    few = queries_of(auditor, "/admin/agent/session/")
    for i in range(12):
        said_chat(team.author if i % 2 else other_team.author, team.blog if i % 2 else other_team.blog, text=f"c{i}")
    assert queries_of(auditor, "/admin/agent/session/") == few


SEATS_NONE = {
    "seats-TOTAL_FORMS": "0",
    "seats-INITIAL_FORMS": "0",
    "seats-MIN_NUM_FORMS": "0",
    "seats-MAX_NUM_FORMS": "1000",
}


def test_a_blog_made_in_the_admin_is_its_owners_to_open(team, auditor):
    """Blogs are made in the admin; access goes by seats, so its owner gets an owner's seat with it."""
    fields = {"title": "Hill notes", "slug": "hill-notes", "owner": team.outsider.pk, **SEATS_NONE}
    assert auditor.post("/admin/blog/blog/add/", fields).status_code == 302
    blog = Blog.objects.get(slug="hill-notes")
    seat = Seat.objects.get(blog=blog, user=team.outsider)
    assert (seat.role, seat.may_use_assistant) == (Seat.OWNER, True)
    assert browser(team.outsider).get("/blogs/hill-notes/").status_code == 200


def test_a_blogs_new_owner_is_raised_to_owner_and_the_former_becomes_an_editor(team, auditor):
    """As a hand-over on the blog's Settings page leaves them (`team.owner_changed`): the former owner kept
    an owner's seat here, so could still open Settings and delete the blog (tests/blog/test_hand_over.py)."""
    fields = {"title": team.blog.title, "slug": team.blog.slug, "owner": team.viewer.pk, **SEATS_NONE}
    assert auditor.post(f"/admin/blog/blog/{team.blog.pk}/change/", fields).status_code == 302
    assert team.seat("viewer").role == Seat.OWNER
    assert (team.seat("owner").role, team.seat("owner").may_use_assistant) == (Seat.EDITOR, True)
    assert Seat.objects.filter(blog=team.blog).count() == 4


def test_a_former_owners_seat_set_in_the_same_save_is_what_the_admin_set(team, auditor):
    """The seats typed below the blog are saved first; a former owner's seat the admin made an author's
    there stays an author's (only an owner's seat left as it was becomes an editor's)."""
    seats = list(Seat.objects.filter(blog=team.blog).order_by("pk"))
    fields = {
        "title": team.blog.title,
        "slug": team.blog.slug,
        "owner": team.editor.pk,
        **SEATS_NONE,
        "seats-TOTAL_FORMS": str(len(seats)),
        "seats-INITIAL_FORMS": str(len(seats)),
    }
    for i, seat in enumerate(seats):
        role = Seat.AUTHOR if seat.user == team.owner else seat.role
        fields |= {f"seats-{i}-id": seat.pk, f"seats-{i}-blog": team.blog.pk, f"seats-{i}-user": seat.user_id}
        fields |= {
            f"seats-{i}-role": role,
            **({f"seats-{i}-may_use_assistant": "on"} if seat.may_use_assistant else {}),
        }
    assert auditor.post(f"/admin/blog/blog/{team.blog.pk}/change/", fields).status_code == 302
    assert (team.seat("owner").role, team.seat("editor").role) == (Seat.AUTHOR, Seat.OWNER)


def test_the_admin_says_its_times_are_utc_until_the_browser_names_its_zone(team, auditor):
    """The admin writes times its own way, with no zone beside them: before the `tz` cookie, a page of it
    says they are UTC; once the browser has named its zone (UTC itself, say) it says nothing."""
    blog_chat(team.owner, team.blog)
    note = "Times on this page are in UTC: your browser tells the site its own zone"
    for url in ("/admin/", "/admin/agent/session/"):
        assert note in auditor.get(url).content.decode()
    auditor.cookies["tz"] = "Not/A_Zone"  # (ignored: still UTC)
    assert note in auditor.get("/admin/").content.decode()
    for zone in ("Asia/Tokyo", "UTC"):  # (a browser in UTC has named its zone too: nothing to say)
        auditor.cookies["tz"] = zone
        page = auditor.get("/admin/agent/session/")
        assert page.status_code == 200
        assert note not in page.content.decode()
    for url in ("/admin/", "/admin/agent/session/"):
        page = auditor.get(url)
        assert page.status_code == 200
        assert note not in page.content.decode()
    assert note not in browser(team.owner).get("/admin/login/").content.decode()  # (no times on it)


def test_an_auditor_reads_grants_and_revisions_by_who_which_client_and_what(team, auditor):
    """The admin named them "Consent object (5)" and "PostRevision object (7)" (titles, breadcrumbs, a
    revision's link to its grant), and the grants' list showed a client as a random id, or "-" for the
    built-in assistant."""
    assistant = set_consent(team.editor, team.blog, [READ])
    connected = Consent.objects.create(
        user=team.editor, blog=team.blog, client="hb7D0vLyZ9Ne9gGU", client_name="Claude desktop", scopes=[READ]
    )
    post = make_post(team.blog, "Morning light")
    revision = PostRevision.objects.create(
        post=post, blog=team.blog, action="publish", user=team.editor, via_assistant=True, consent=connected
    )
    listed = auditor.get("/admin/blog/consent/").content.decode()
    assert '<td class="field-client_label">Built-in assistant</td>' in listed
    assert '<td class="field-client_label">Claude desktop</td>' in listed
    page = auditor.get(f"/admin/blog/consent/{assistant.pk}/change/").content.decode()
    assert "<h2>editor · Built-in assistant on Notes</h2>" in page
    page = auditor.get(f"/admin/blog/postrevision/{revision.pk}/change/").content.decode()
    assert "<h2>publish of “Morning light” by Claude desktop for editor</h2>" in page
    assert f'<a href="/admin/blog/consent/{connected.pk}/change/">editor · Claude desktop on Notes</a>' in page
    assert "object (" not in page
    listed = auditor.get("/admin/blog/postrevision/").content.decode()
    assert '<td class="field-acted_through">Claude desktop</td>' in listed


def test_the_revisions_list_names_what_acted_without_a_query_per_row(team, auditor, django_assert_max_num_queries):
    """The revisions list showed "via assistant" ticked but not which: the built-in assistant or a
    connected client (only the revision's own page said)."""
    connected = Consent.objects.create(
        user=team.editor, blog=team.blog, client="hb7D0vLyZ9Ne9gGU", client_name="Claude desktop", scopes=[READ]
    )
    post = make_post(team.blog, "Morning light")
    for _ in range(10):
        PostRevision.objects.create(post=post, blog=team.blog, action="update", user=team.editor)
        PostRevision.objects.create(post=post, blog=team.blog, action="update", user=team.editor, via_assistant=True)
        PostRevision.objects.create(
            post=post, blog=team.blog, action="update", user=team.editor, via_assistant=True, consent=connected
        )
    auditor.get("/admin/blog/postrevision/")  # (the session's and permission reads, once)
    with django_assert_max_num_queries(12):
        listed = auditor.get("/admin/blog/postrevision/").content.decode()
    assert listed.count('<td class="field-acted_through">Claude desktop</td>') == 10
    assert listed.count('<td class="field-acted_through">the assistant</td>') == 10
    assert listed.count('<td class="field-acted_through">-</td>') == 10


def test_a_seat_edited_in_the_admin_stays_what_its_role_allows(team, auditor):
    """The admin's seat page let a viewer keep "may use the assistant" (the Members screen then showed it
    ticked, and the assistant still refused them) and made a second owner (a row Members gives no controls).
    Both are refused with why, and nothing changes; a change the role allows is saved."""
    viewer, editor = team.seat("viewer"), team.seat("editor")

    def change(seat, **fields):
        data = {"user": seat.user_id, "blog": seat.blog_id, **fields}
        return auditor.post(f"/admin/blog/seat/{seat.pk}/change/", data)

    response = change(viewer, role="viewer", may_use_assistant="on")
    assert response.status_code == 200 and "Viewers never use the assistant." in response.content.decode()
    response = change(editor, role="owner", may_use_assistant="on")
    assert response.status_code == 200
    assert "A blog has one owner" in response.content.decode()
    assert (team.seat("viewer").may_use_assistant, team.seat("editor").role) == (False, Seat.EDITOR)

    assert change(viewer, role="author", may_use_assistant="on").status_code == 302
    assert (team.seat("viewer").role, team.seat("viewer").may_use_assistant) == (Seat.AUTHOR, True)
    # The owner's own seat, and a former owner's kept seat, are saved as they are.
    owner = team.seat("owner")
    assert change(owner, role="owner", may_use_assistant="on").status_code == 302


def test_an_admins_bulk_delete_of_posts_is_all_or_nothing(
    team, auditor, monkeypatch, django_capture_on_commit_callbacks
):
    """The action deleted each post in its own transaction: the second failing left the first deleted
    (its revision written, its pages told) and the rest not, half an action done."""
    from django.contrib.admin.models import DELETION, LogEntry

    from blog import services

    first, second = make_post(team.blog, "First"), make_post(team.blog, "Second")
    real, calls = services.post_delete, []

    def failing_second(**kwargs):
        calls.append(kwargs["post"].pk)
        if len(calls) == 2:
            raise RuntimeError("the database went away")
        return real(**kwargs)

    monkeypatch.setattr(services, "post_delete", failing_second)
    selected = {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"}
    with django_capture_on_commit_callbacks() as announced, pytest.raises(RuntimeError):
        auditor.post("/admin/blog/post/", selected)
    assert len(calls) == 2
    assert Post.objects.filter(pk__in=[first.pk, second.pk]).count() == 2
    assert not PostRevision.objects.filter(action="delete").exists()
    assert not LogEntry.objects.exists()  # (nor the admin's log saying they were)
    assert announced == []  # (nothing told to the blog's pages of a deletion rolled back)

    monkeypatch.setattr(services, "post_delete", real)
    with django_capture_on_commit_callbacks() as announced:
        assert auditor.post("/admin/blog/post/", selected).status_code == 302
    assert not Post.objects.exists()
    assert PostRevision.objects.filter(action="delete").count() == 2
    assert LogEntry.objects.filter(action_flag=DELETION).count() == 2
    assert len(announced) == 1  # (one announcement for the blog, once the action's transaction commits)


def test_an_admins_bulk_delete_tells_each_blogs_pages_once(
    team, other_team, auditor, monkeypatch, django_capture_on_commit_callbacks
):
    """Each post's deletion was its own message on the bus: 500 posts selected were 500 round trips to
    Redis (with `AGENT_EVENTS_URL`) while the admin's request waited, and 500 redraws of each open page."""
    from agent import events

    published: list[tuple[str, list]] = []
    monkeypatch.setattr(events, "publish", lambda channel, message: published.append((channel, message)))
    ours = [make_post(team.blog, f"Ours {n}") for n in range(3)]
    theirs = make_post(other_team.blog, "Theirs")
    selected = [post.pk for post in [*ours, theirs]]
    with django_capture_on_commit_callbacks(execute=True):
        action = {"action": "delete_selected", "_selected_action": selected, "post": "yes"}
        assert auditor.post("/admin/blog/post/", action).status_code == 302
    assert not Post.objects.exists()
    assert sorted(channel for channel, _ in published) == sorted([f"blog:{team.blog.pk}", f"blog:{other_team.blog.pk}"])
    told = {channel: sorted((e["type"], e["id"]) for e in effects) for channel, effects in published}
    assert told == {
        f"blog:{team.blog.pk}": sorted(("post.deleted", post.pk) for post in ours),
        f"blog:{other_team.blog.pk}": [("post.deleted", theirs.pk)],
    }


def test_a_deleted_blog_takes_its_members_chats_and_their_files_with_it(
    team, other_team, auditor, monkeypatch, django_capture_on_commit_callbacks
):
    """Its chats' links went with it, the chats stayed: listed nowhere, unreachable from any blog, their
    files kept, until `chat_cleanup` took them months later."""
    from agent import media
    from agent.models import Message, Part, Session

    gone: list[str] = []
    monkeypatch.setattr(media, "delete", lambda keys: gone.extend(keys) or len(gone))
    chats = [blog_chat(team.editor, team.blog), blog_chat(team.author, team.blog)]
    message = Message.objects.create(session=chats[0], role="user", position=0)
    Part.objects.create(message=message, position=0, type="image", media_ref=f"agent/{chats[0].pk}/a.png")
    kept = blog_chat(other_team.editor, other_team.blog)
    unlinked = Session.objects.create(user=team.editor)  # (a chat of no blog: the engine's own)
    with django_capture_on_commit_callbacks(execute=True):
        assert auditor.post(f"/admin/blog/blog/{team.blog.pk}/delete/", {"post": "yes"}).status_code == 302
    assert set(Session.objects.values_list("pk", flat=True)) == {kept.pk, unlinked.pk}
    assert gone == [f"agent/{chats[0].pk}/a.png"]


MARKUP = "<script>alert(1)</script>"


def test_markup_in_transcripts_tools_clients_and_titles_is_text_on_every_admin_page(team, auditor):
    """Guard: what people, models and connected clients wrote (a chat's title and words, a tool's name,
    input and result, an approval's description, a post's title, a client's name, an audit row) shown
    on every list and change page of the admin, as an auditor opens them, is escaped text."""
    from datetime import timedelta

    from django.apps import apps
    from django.contrib import admin
    from django.utils import timezone
    from oauth2_provider.models import get_application_model

    from agent.models import Approval, Message, Part, Session
    from connectors.models import McpCall

    chat = Session.objects.create(user=team.owner, title=MARKUP)
    said = Message.objects.create(
        session=chat, role="assistant", position=0, model_id=MARKUP, stop_reason=MARKUP[:30], tools_offered=[MARKUP]
    )
    call = {"tool_name": MARKUP, "tool_use_id": MARKUP}
    Part.objects.create(message=said, position=0, type="text", text=MARKUP)
    Part.objects.create(message=said, position=1, type="tool_use", tool_input={MARKUP: MARKUP}, **call)
    Part.objects.create(message=said, position=2, type="tool_result", tool_result={MARKUP: MARKUP}, **call)
    Part.objects.create(message=said, position=3, type="image", text=MARKUP, media_type="image/png", media_ref="k")
    expires = timezone.now() + timedelta(hours=1)
    Approval.objects.create(session=chat, message=said, description=MARKUP, detail=MARKUP, expires_at=expires, **call)
    post = make_post(team.blog, MARKUP, MARKUP, author=team.owner)
    PostRevision.objects.create(post=post, blog=team.blog, action="create", user=team.owner, chat_session=chat)
    Consent.objects.create(user=team.owner, blog=team.blog, client="c-1", client_name=MARKUP, scopes=[READ])
    McpCall.objects.create(client_id=MARKUP, client_name=MARKUP, tool=MARKUP, input={MARKUP: 1}, status="ok")
    get_application_model().objects.create(
        name=MARKUP, client_type="public", authorization_grant_type="authorization-code", redirect_uris="https://a.b/c"
    )

    pages, shown = 0, 0
    for model in (m for m in apps.get_models() if admin.site.is_registered(m)):
        changelist = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for url in [changelist, *(f"{changelist}{pk}/change/" for pk in model.objects.values_list("pk", flat=True))]:
            response = auditor.get(url)
            assert response.status_code == 200, url
            assert MARKUP not in response.content.decode(), url
            pages += 1
            shown += "&lt;script&gt;alert(1)&lt;/script&gt;" in response.content.decode()
    assert pages > 40 and shown > 15  # (every list and each row's page; the text is there, as text)


def test_a_staff_member_who_may_only_look_fires_no_action(team, django_user_model):
    """Guard: actions are offered, and run, only with their permission: a staff member with every view
    permission (an auditor) asks to delete chats, posts and seats, to revoke a grant and to disconnect a
    person's clients, and nothing changes; nor can they edit a seat or a person."""
    from django.contrib.auth.models import Permission

    from agent.models import Session
    from blog.team import consent_grant

    staff = django_user_model.objects.create_user("looker", password="looker-pass-123", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    chat = Session.objects.create(user=team.owner)
    post = make_post(team.blog, author=team.owner)
    consent = set_consent(team.editor, team.blog, ALL)
    connected = consent_grant(user=team.author, blog=team.blog, client="a-client", scopes={READ})
    seat = team.seat("viewer")
    looker = browser(staff)

    for url, action, pk in [
        ("/admin/agent/session/", "delete_selected", chat.pk),
        ("/admin/blog/post/", "delete_selected", post.pk),
        ("/admin/blog/seat/", "delete_selected", seat.pk),
        ("/admin/blog/consent/", "revoke", consent.pk),
        ("/admin/auth/user/", "disconnect_clients", team.author.pk),
    ]:
        assert looker.get(url).status_code == 200  # (they do see the list)
        looker.post(url, {"action": action, "_selected_action": [pk], "post": "yes"})
    edit = {"user": seat.user_id, "blog": team.blog.pk, "role": Seat.OWNER}
    assert looker.post(f"/admin/blog/seat/{seat.pk}/change/", edit).status_code == 403
    promote = {"username": "viewer", "is_staff": "on", "is_superuser": "on"}
    assert looker.post(f"/admin/auth/user/{team.viewer.pk}/change/", promote).status_code == 403

    assert Session.objects.filter(pk=chat.pk).exists() and Post.objects.filter(pk=post.pk).exists()
    assert Seat.objects.get(pk=seat.pk).role == Seat.VIEWER
    assert Consent.objects.get(pk=consent.pk).revoked_at is None
    assert Consent.objects.get(pk=connected.pk).revoked_at is None
    team.viewer.refresh_from_db()
    assert not (team.viewer.is_staff or team.viewer.is_superuser)
