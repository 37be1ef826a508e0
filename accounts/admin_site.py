"""The admin's sign-in and password change, behind the same limit on guesses as the site's (accounts.throttle)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm, AdminPasswordChangeForm
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts import throttle
from accounts.views import ThrottledPasswordChangeView, unchecked_form


class ThrottledAdminSite(admin.AdminSite):
    """Django's AdminSite; its login counts failures and, past the limit, refuses without checking the
    password; its password change counts a wrong current password the same way."""

    def login(self, request, extra_context=None):
        if request.method != "POST":
            return super().login(request, extra_context)
        typed = request.POST.get("username") or ""
        attempt = throttle.begin(throttle.counted_username(typed), throttle.address(request))
        if attempt.wait:
            form_class = self.login_form or AdminAuthenticationForm
            form = unchecked_form(
                form_class(request, initial={"username": typed[:150]}), throttle.locked_message(attempt.wait)
            )
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
        form = (response.context_data or {}).get("form") if isinstance(response, TemplateResponse) else None
        if form is not None and form.is_bound and form.errors:
            throttle.failed(attempt)
        else:
            throttle.succeeded(attempt)
        return response

    def password_change(self, request, extra_context=None):
        """The admin's own page (`AdminSite.password_change`), served by the throttled view."""
        defaults = {
            "form_class": AdminPasswordChangeForm,
            "success_url": reverse("admin:password_change_done", current_app=self.name),
            "extra_context": {**self.each_context(request), **(extra_context or {})},
        }
        if self.password_change_template is not None:
            defaults["template_name"] = self.password_change_template
        request.current_app = self.name
        return ThrottledPasswordChangeView.as_view(**defaults)(request)
