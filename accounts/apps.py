from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Sign-in"
    default_auto_field = "django.db.models.BigAutoField"
