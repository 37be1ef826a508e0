"""The engine's two error families: run-level errors end a turn; tool errors become results."""

from __future__ import annotations


class BackendError(Exception):
    """A transport or provider failure; `retryable` says whether trying again may succeed."""

    def __init__(
        self, message: str, *, retryable: bool = False, retry_after: float | None = None, context_too_long: bool = False
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.context_too_long = context_too_long


class BudgetExceeded(Exception):
    """A spending or token limit would be passed by the next model call."""

    def __init__(self, bucket: str, message: str, retry_after_seconds: int) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.message = message
        self.retry_after_seconds = retry_after_seconds


class TurnInProgress(Exception):
    """Another turn holds this session's lease."""


class NothingToResume(Exception):
    """No call waits on a person's decision any more: another request's turn took them all up."""


class NothingToRetry(Exception):
    """The chat's latest answer did not fail in a way that trying again may clear (`turns.retry`)."""


class ToolInputError(Exception):
    """A tool's input failed validation; the model gets the message as an error result."""
