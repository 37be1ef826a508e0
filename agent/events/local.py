"""The in-process bus (the default): one worker, nothing to install.

A turn's events reach the streams of its own process through `agent.hub`; a stream on another
worker follows the turn from the transcript, Stop reaches it through the database flag, and a
named channel's messages reach the listeners of the publishing process only.
"""

from __future__ import annotations

from agent.events.base import EventBus


class LocalBus(EventBus):
    """Everything the base class does: in-process only."""
