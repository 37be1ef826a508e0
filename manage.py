#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)  # (it reads `--settings` before it loads them)
    except ImproperlyConfigured as e:
        if settings.configured:  # (raised by a command, not by the settings: its traceback helps)
            raise
        # A value the settings refuse: its one sentence is all there is to say (README, "Configuration").
        sys.exit(str(e))


if __name__ == "__main__":
    main()
