"""Signals other apps may listen to; sent with `session` and the named extras."""

from django.dispatch import Signal

message_received = Signal()  # session, message
tool_called = Signal()  # session, name, status
agent_error = Signal()  # session, code
