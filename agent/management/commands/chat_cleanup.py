"""Prune old chat sessions (with their messages, turns, approvals and attachment files), expired approvals and
old ledger rows."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from agent import approvals, media
from agent.budget import MONTH
from agent.models import RateEvent, Session, Spend


class Command(BaseCommand):
    help = "Delete chat sessions not updated for DAYS days, in batches; expire stale approvals; prune old ledgers."

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=int, required=True, metavar="DAYS")
        parser.add_argument("--batch-size", type=int, default=500)
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args, older_than: int, batch_size: int, dry_run: bool, **options):
        if older_than < 1:
            raise CommandError("--older-than must be at least 1 day.")
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        cutoff = timezone.now() - timedelta(days=older_than)
        # Never a chat with a running turn; one whose turn's worker died (its lease ran out) is idle.
        idle = Q(turn__isnull=True) | Q(lease_until__lt=timezone.now())
        old = Session.objects.filter(idle, updated_at__lt=cutoff)
        if dry_run:
            self.stdout.write(f"Would delete {old.count()} sessions older than {older_than} days.")
            return
        deleted = files = 0
        while True:
            # Locked while they are deleted: a message that claims one of these chats meanwhile (its
            # conditional UPDATE) waits, then finds it gone, instead of its running turn being deleted.
            with transaction.atomic():
                ids = list(old.select_for_update().values_list("pk", flat=True)[:batch_size])
                if not ids:
                    break
                # Their files are read in one query for the batch and go once this commits
                # (`agent.media.deleting`): the rows first, so a failure between leaves an unlisted
                # file, never a transcript pointing at nothing.
                with media.deleting(ids) as keys:
                    Session.objects.filter(pk__in=ids).delete()
                files += len(keys)
            deleted += len(ids)
        expired = approvals.expire_stale()
        now = timezone.now()
        spend = _delete_in_batches(Spend.objects.filter(created_at__lt=now - MONTH), batch_size)
        rate = _delete_in_batches(RateEvent.objects.filter(created_at__lt=now - timedelta(minutes=5)), batch_size)
        self.stdout.write(
            f"Deleted {deleted} sessions ({files} attachment files), expired {expired} approvals, pruned {spend} ledger rows "
            f"and {rate} rate-limit rows."
        )


def _delete_in_batches(queryset, batch_size: int) -> int:
    total = 0
    while True:
        ids = list(queryset.values_list("pk", flat=True)[:batch_size])
        if not ids:
            return total
        queryset.model.objects.filter(pk__in=ids).delete()
        total += len(ids)
