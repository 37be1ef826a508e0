#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018  (the settings read the environment here)
    except ImproperlyConfigured as e:
        # A value the settings refuse: its one sentence is all there is to say (README, "Configuration").
        sys.exit(str(e))
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
