"""The admin's sign-in, behind the same limit on failed attempts as the site's (accounts.views)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.template.response import TemplateResponse

from accounts.views import address, attempted_username, locked_message, record_failure, seconds_locked, unchecked_form


class ThrottledAdminSite(admin.AdminSite):
    """Django's AdminSite; its login counts failures and, past the limit, refuses without checking the password."""

    def login(self, request, extra_context=None):
        if request.method == "POST":
            wait = seconds_locked(attempted_username(request), address(request))
            if wait:
                form = unchecked_form(self.login_form or AdminAuthenticationForm, request, locked_message(wait))
                context = {
                    **self.each_context(request),
                    "title": "Log in",
                    "subtitle": None,
                    "app_path": request.get_full_path(),
                    "form": form,
                    **(extra_context or {}),
                }
                request.current_app = self.name
                return TemplateResponse(request, self.login_template or "admin/login.html", context, status=429)
        response = super().login(request, extra_context)
        if request.method == "POST" and isinstance(response, TemplateResponse):
            form = (response.context_data or {}).get("form")
            if form is not None and form.is_bound and form.errors:
                record_failure(request)
        return response
