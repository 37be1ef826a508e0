"""django.contrib.admin's app config with the throttled sign-in site (INSTALLED_APPS names this).

Kept apart from accounts.admin_site: an app config's module must not import models.
"""

from django.contrib.admin.apps import AdminConfig


class ThrottledAdminConfig(AdminConfig):
    default_site = "accounts.admin_site.ThrottledAdminSite"
