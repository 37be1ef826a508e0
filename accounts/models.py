"""Failed sign-ins, kept briefly so password guessing can be slowed down across workers."""

from django.db import models


class FailedLogin(models.Model):
    username = models.CharField(max_length=150)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["username", "created_at"], name="accounts_failed_user_time_idx")]

    def __str__(self) -> str:
        # What the admin's title and breadcrumbs name a failure by ("FailedLogin object (3)" said nothing).
        return f"{self.username} from {self.ip or 'an unknown address'}"
