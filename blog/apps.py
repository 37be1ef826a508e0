from django.apps import AppConfig


class BlogConfig(AppConfig):
    name = "blog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from blog.chat import register_tools

        register_tools()
