"""A terminal surface: chat with the assistant on a blog, rendering the same engine tuples as the web."""

from __future__ import annotations

import json
import sys

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from agent import turns
from agent.exceptions import TurnInProgress
from agent.models import Session
from blog.chat import BlogChatPolicy

STYLE = {"reasoning": "\033[2m", "tool": "\033[36m", "error": "\033[31m", "reset": "\033[0m"}


class Command(BaseCommand):
    help = "Chat with the assistant in the terminal: python manage.py chat --user alice --blog field-notes"

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
        self.color = sys.stdout.isatty()
        self.stdout.write(f"Chat {session.pk} on {opts['blog']} as {user.username}. Ctrl-D to leave.\n")
        for text in opts["message"] or self._prompt():
            self._turn(session, text)

    def _session(self, user, opts) -> Session:
        if opts["session"]:
            session = Session.objects.filter(pk=opts["session"], user=user).first()
            if session is None:
                raise CommandError("No such chat session for that user.")
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
                text = input("you> ")
            except EOFError:
                self.stdout.write("\n")
                return
            if text.strip():
                yield text

    def _turn(self, session: Session, text: str) -> None:
        try:
            run, _ = turns.begin(session, text)
        except TurnInProgress:
            self.stderr.write("A turn is already running in this chat.")
            return
        self.stdout.write("assistant> ", ending="")
        for name, payload in turns.drive(run):
            self.stdout.write(self._render(name, payload), ending="")
            self.stdout.flush()
        self.stdout.write("\n")

    def _paint(self, style: str, text: str) -> str:
        return f"{STYLE[style]}{text}{STYLE['reset']}" if self.color else text

    def _render(self, name: str, payload) -> str:
        match name:
            case "token":
                return payload["text"]
            case "reasoning":
                return self._paint("reasoning", payload["text"])
            case "tool_use":
                return self._paint(
                    "tool", f"\n  [{payload['name']} {json.dumps(payload['input'], ensure_ascii=False)}]"
                )
            case "tool_result":
                return self._paint("tool", f" → {payload['status']}\n")
            case "effects":
                return self._paint("tool", "  (" + ", ".join(f"{e['type']} #{e['id']}" for e in payload) + ")\n")
            case "error":
                return self._paint("error", f"\n{payload['message']}")
            case "done":
                return "" if payload["stop_reason"] != "stopped" else " (stopped)"
        return ""
