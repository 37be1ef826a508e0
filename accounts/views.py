"""The site's sign-in and password change, with guesses at the password limited (`accounts.throttle`)."""

from __future__ import annotations

from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import LoginView, PasswordChangeView

from accounts import throttle


def unchecked_form(form, error: str | None = None, field: str | None = None):
    """`form`, unbound and never validated (validating it would check the password), with `error`."""
    if error:
        form.cleaned_data = {}  # an unbound form's errors start empty: adding one validates nothing
        form.add_error(field, error)
    return form


class SitePasswordChangeForm(PasswordChangeForm):
    """Django's form in the site's words: labels as the sign-in page has them, without colons (the
    admin's own page keeps Django's form)."""

    error_messages = {
        **PasswordChangeForm.error_messages,
        "password_incorrect": "That isn't your current password. Try again.",
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.label_suffix = ""
        self.fields["old_password"].label = "Current password"
        self.fields["new_password2"].label = "New password again"


class ThrottledLoginView(LoginView):
    """Django's LoginView; after too many failures for a username it refuses without checking the password."""

    def post(self, request, *args, **kwargs):
        typed = request.POST.get("username") or ""
        self.attempt = throttle.begin(throttle.counted_username(typed), throttle.address(request))
        if self.attempt.wait:
            form = self.get_form_class()(request, initial={"username": typed[:150]})
            context = self.get_context_data(form=form, locked=throttle.locked_message(self.attempt.wait))
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        throttle.succeeded(self.attempt)
        return super().form_valid(form)

    def form_invalid(self, form):
        throttle.failed(self.attempt)
        return super().form_invalid(form)


class ThrottledPasswordChangeView(PasswordChangeView):
    """Django's PasswordChangeView; a wrong current password counts as a failed sign-in of its user,
    and past the limit the change is refused without checking it."""

    def post(self, request, *args, **kwargs):
        username = throttle.counted_username(request.user.get_username())
        self.attempt = throttle.begin(username, throttle.address(request))
        if self.attempt.wait:
            form = unchecked_form(
                self.get_form_class()(user=request.user), throttle.locked_message(self.attempt.wait), "old_password"
            )
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        throttle.succeeded(self.attempt)
        return super().form_valid(form)

    def form_invalid(self, form):
        if "old_password" in form.errors:
            throttle.failed(self.attempt)
        else:  # the current password was right; new ones that differ or are too weak are no guess
            throttle.succeeded(self.attempt)
        return super().form_invalid(form)
