from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.sitemaps.views import sitemap
from django.urls import include, path

from accounts.views import SitePasswordChangeForm, ThrottledLoginView, ThrottledPasswordChangeView
from blog.reading import SITEMAPS, favicon, robots_txt

# django.contrib.auth.urls without its password reset pages: no mail is set up to send a reset
# link, so they would only offer a form that cannot work (and an unthrottled one). A forgotten
# password is reset by an admin (`/admin/`, or `manage.py changepassword`). Sign-in and password
# change both count guesses at the password (`accounts.throttle`).
accounts = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The site's own pages (the admin's password change keeps Django's `registration/` templates).
    path(
        "password_change/",
        ThrottledPasswordChangeView.as_view(
            template_name="accounts/password_change_form.html", form_class=SitePasswordChangeForm
        ),
        name="password_change",
    ),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="accounts/password_change_done.html"),
        name="password_change_done",
    ),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include(accounts)),
    path("sitemap.xml", sitemap, {"sitemaps": SITEMAPS}, name="sitemap"),
    path("robots.txt", robots_txt, name="robots_txt"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/agent/", include("agent.urls")),
    path("chat/", include("agent.chat_urls")),
    path("", include("connectors.urls")),
    path("", include("connectors.oauth_urls")),  # the namespace django-oauth-toolkit reverses: oauth2_provider
    path("", include("blog.urls")),
]

handler400 = "config.errors.bad_request"  # JSON for the API (a body Django refused to read)
handler500 = "config.errors.server_error"  # a reference for the person and the log; JSON for the API
