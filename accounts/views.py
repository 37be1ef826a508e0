"""The site's sign-in, with guesses at the password limited (`accounts.throttle`)."""

from __future__ import annotations

from django.contrib.auth.views import LoginView

from accounts import throttle


def unchecked_form(form, error: str | None = None, field: str | None = None):
    """`form`, unbound and never validated (validating it would check the password), with `error`."""
    if error:
        form.cleaned_data = {}  # an unbound form's errors start empty: adding one validates nothing
        form.add_error(field, error)
    return form


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
