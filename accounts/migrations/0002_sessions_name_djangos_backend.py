"""Sessions signed in through the retired `accounts.backends.ModelBackend` now name Django's own
`ModelBackend`, so nobody is signed out when the custom backend goes (Django signs out a session
whose backend is no longer in AUTHENTICATION_BACKENDS). The rows keep their table and encoding:
the retired session engine wrote Django's database sessions unchanged."""

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations
from django.utils import timezone

RETIRED = "accounts.backends.ModelBackend"
DJANGO = "django.contrib.auth.backends.ModelBackend"


def name_djangos_backend(apps, schema_editor):
    Session = apps.get_model("sessions", "Session")
    rows = Session.objects.using(schema_editor.connection.alias)
    store = SessionStore()
    for key, data in rows.filter(expire_date__gt=timezone.now()).values_list("session_key", "session_data").iterator():
        decoded = store.decode(data)  # {} for a row signed with another SECRET_KEY: left as it is
        if decoded.get(BACKEND_SESSION_KEY) == RETIRED:
            decoded[BACKEND_SESSION_KEY] = DJANGO
            rows.filter(session_key=key).update(session_data=store.encode(decoded))


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("sessions", "0001_initial"),
    ]

    operations = [migrations.RunPython(name_djangos_backend, migrations.RunPython.noop)]
