"""A terminal surface: chat with the assistant on a blog, rendering the same engine tuples as the web.

A call that waits for a person (`AGENT_CONFIRM_TOOLS`: publishing, deleting) is put to the person
at the terminal, as the chat panel's Approve and Reject buttons put it: "y" runs it, anything else
(or the end of input) refuses it, and the turn goes on with the answer.
"""

from __future__ import annotations

import json
import sys

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from agent import approvals, turns
from agent.exceptions import NothingToResume, TurnInProgress
from agent.models import Session
from agent.policy import get_policy
from agent.templatetags.agent_waits import wait
from agent.values import ApprovalPayload
from blog.chat import BlogChatPolicy, blog_of

STYLE = {"reasoning": "\033[2m", "tool": "\033[36m", "error": "\033[31m", "reset": "\033[0m"}


class Command(BaseCommand):
    help = "Chat with the assistant in the terminal: python manage.py chat --user alice --blog field-notes"
    stealth_options = ("stdin",)  # call_command(..., stdin=...): where answers come from (as for createsuperuser)

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True)
        parser.add_argument("--blog", required=True)
        parser.add_argument("--session", help="continue this chat session id")
        parser.add_argument("-m", "--message", action="append", help="send this message (repeatable); else read stdin")

    def handle(self, *args, **opts):
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None:
            raise CommandError(f"No user named {opts['user']!r}.")
        session = self._session(user, opts)
        self.color = self.stdout.isatty()  # (this command's own output, which may be a file)
        self.stdin = opts.get("stdin") or sys.stdin
        self.stdout.write(f"Chat {session.pk} on {opts['blog']} as {user.username}. Ctrl-D to leave.\n")
        if waiting := approvals.pending(session):  # (a chat continued from the web, say)
            name, payload = approvals.as_event(waiting)
            self.stdout.write(self._render(name, payload) + "\n")
            self._decide(session, payload["approvals"])
        for text in opts["message"] or self._prompt():
            self._turn(session, text)

    def _session(self, user, opts) -> Session:
        if opts["session"]:
            session = Session.objects.filter(pk=opts["session"], user=user).first()
            if session is None:
                raise CommandError("No such chat session for that user.")
            blog = blog_of(session)
            if blog is None or blog.slug != opts["blog"]:
                where = f"on {blog.slug!r}" if blog else "on no blog"
                raise CommandError(f"That chat is {where}, not {opts['blog']!r}.")
            return session
        try:
            return BlogChatPolicy().create(user, {"blog": opts["blog"]})
        except Http404:
            raise CommandError(f"{user.username} is not a member of a blog {opts['blog']!r}.") from None
        except PermissionDenied:
            raise CommandError(f"{user.username} may not use the assistant on {opts['blog']!r}.") from None

    def _prompt(self):
        while True:
            try:
                text = self._read("you> ")
            except EOFError:
                self.stdout.write("\n")
                return
            if text.strip():
                yield text

    def _read(self, prompt: str) -> str:
        """One line from the person: with line editing at a terminal, else from `stdin` as it comes."""
        if self.stdin is sys.stdin and sys.stdin.isatty():
            return input(prompt)
        self.stdout.write(prompt, ending="")
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")

    def _turn(self, session: Session, text: str) -> None:
        try:
            run, _ = turns.begin(session, text)
        except TurnInProgress:
            self.stderr.write("A turn is already running in this chat.")
            return
        self._follow(run)

    def _follow(self, run) -> None:
        """Show the turn as it runs; then put the calls it left waiting to the person, and go on."""
        waiting: list[ApprovalPayload] = []
        self.last_call = None  # the tool call shown last in this turn, whose result goes on its line
        self.stdout.write("assistant> ", ending="")
        for item in turns.drive(run, watched=True):  # (its lease kept while the model thinks)
            if isinstance(item, tuple):  # (a driver's phase marks are not events)
                if item[0] == "confirm":
                    waiting = item[1]["approvals"]
                self.stdout.write(self._render(*item), ending="")
                self.stdout.flush()
        self.stdout.write("\n")
        if waiting:
            self._decide(run.session, waiting)

    def _decide(self, session: Session, waiting: list[ApprovalPayload]) -> None:
        """Each waiting call approved or refused, as the chat panel's buttons do (`agent.views.resolve_approval`)."""
        if not get_policy().access(session).use:
            self.stderr.write("You may no longer use the assistant here.")
            return
        for call in waiting:
            question = f"Allow: {call['description']}?" if call.get("description") else f"Allow {call['name']}?"
            if call.get("detail"):
                self.stdout.write(call["detail"])
            try:
                approve = self._read(self._paint("tool", question) + " [y/N] ").strip().lower() in ("y", "yes")
            except EOFError:
                self.stdout.write("\n")
                approve = False
            result = approvals.decide(session, call["id"], session.user, approve)
            if result != "decided":
                self.stderr.write(approvals.NOT_DECIDED[result])
                return
        try:
            run = turns.resume(session)
        except NothingToResume:
            self.stderr.write(approvals.TAKEN_UP)
            return
        except TurnInProgress:
            self.stderr.write(approvals.STILL_ANSWERING)
            return
        self._follow(run)

    def _paint(self, style: str, text: str) -> str:
        return f"{STYLE[style]}{text}{STYLE['reset']}" if self.color else text

    def _render(self, name: str, payload) -> str:
        match name:
            case "token":
                return payload["text"]
            case "reasoning":
                return self._paint("reasoning", payload["text"])
            case "tool_use":
                self.last_call = payload["id"]
                return self._paint(
                    "tool", f"\n  [{payload['name']} {json.dumps(payload['input'], ensure_ascii=False)}]"
                )
            case "tool_result" if payload["id"] == self.last_call:
                return self._paint("tool", f" → {payload['status']}\n")
            case "tool_result":  # a call decided by a person: its request was shown before
                return self._paint("tool", f"\n  [{payload['name']}] → {payload['status']}\n")
            case "effects":
                return self._paint("tool", "  (" + ", ".join(f"{e['type']} #{e['id']}" for e in payload) + ")\n")
            case "error":
                seconds = payload.get("retry_after_seconds")
                when = f" Try again in {wait(seconds)}." if seconds else ""
                return self._paint("error", f"\n{payload['message']}{when}")
            case "confirm":
                return "".join(
                    self._paint("tool", f"\n  (waiting for you: {call.get('description') or call['name']})")
                    for call in payload["approvals"]
                )
            case "done":
                return "" if payload["stop_reason"] != "stopped" else " (stopped)"
        return ""
