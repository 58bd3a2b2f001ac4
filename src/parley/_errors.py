"""The one error hierarchy of :mod:`parley`."""

from __future__ import annotations

__all__ = ["ParleyError"]


class ParleyError(ValueError):
    """Raised for bad input or a failed check anywhere in :mod:`parley`.

    ``code`` is the closed wire code of SPEC.md section 7 (for example ``bad_frame`` or
    ``unauthorized``); ``reason`` names the precise failing check (for example
    ``bad_signature``) and is stable across releases, so vectors and callers may match on it.
    The message is one sentence that says what was wrong and where.
    """

    def __init__(self, code: str, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        tag = self.code if self.reason is None else f"{self.code}/{self.reason}"
        return f"{tag}: {self.message}"
