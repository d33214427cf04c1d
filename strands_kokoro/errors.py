"""One base for every error that carries a stable code: what callers switch on, and whether to retry.

Why one base: errors cross layers here (a SageMaker stream's failure becomes a ``speech_error`` event,
a refused payload an ``error`` event, a bad frame a wire ``error``), and each layer needs the same three
facts: a ``code`` a program can switch on, a ``message`` written for a person (never ``str(exc)`` of an
internal exception), and ``retryable``: whether trying again (reconnecting, re-sending) can help. The
retry decision reads ``retryable``, never the exception's class: ``no_credentials`` is a
:class:`~strands_kokoro.sessions.base.SessionClosedError` (the stream is gone) and still not worth a
reconnect.
"""

from __future__ import annotations

__all__ = ["CodedError"]


class CodedError(Exception):
    """An error with a stable ``code``, a human ``message`` and whether a retry can help."""

    retryable: bool = False

    def __init__(self, code: str, message: str, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        self.code = code  # a StrEnum member stays one: a subclass may narrow ``code`` to its table
        self.message = message
        if retryable is not None:
            self.retryable = retryable

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
