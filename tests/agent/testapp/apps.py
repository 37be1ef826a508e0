from django.apps import AppConfig


class NotesConfig(AppConfig):
    """A toy domain that plugs into the engine the way `blog` does: tools registered at start-up,
    sessions tied to a notebook, and a policy that says who may read and use them."""

    name = "tests.agent.testapp"
    label = "notes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tests.agent.testapp.tools import register_tools

        register_tools()
