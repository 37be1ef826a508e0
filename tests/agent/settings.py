"""Engine-only test settings: the project's test settings with `blog` not installed.

`tests/agent` runs under these (`make test` passes `--ds=tests.agent.settings`), so the engine's
own tests prove it needs nothing of the blog: a toy notebook app (tests/agent/testapp) registers
its tools and supplies the session policy instead.
"""

from tests.settings import *  # noqa: F403

# (and without what is built on the blog: the connectors and their OAuth server)
WITHOUT = ("blog", "connectors", "oauth2_provider")
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in WITHOUT] + ["tests.agent.testapp"]  # noqa: F405
ROOT_URLCONF = "tests.agent.urls"
AGENT_SESSION_POLICY = "tests.agent.testapp.policy.NotebookPolicy"
AGENT_BACKEND = "fake"
AGENT_CONFIRM_TOOLS = ["delete_note"]
AGENT_BACKEND_CLASSES: dict[str, str] = {}  # the engine's own backends only (the demo is the blog's)
