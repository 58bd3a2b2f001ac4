"""The one error hierarchy of :mod:`vxp`."""

from __future__ import annotations

__all__ = ["VxpError"]


class VxpError(ValueError):
    """Raised for bad input or a failed check anywhere in :mod:`vxp`.

    ``code`` is a short, stable machine code naming the failing stage and check (for
    example ``parse``-stage codes come before ``signature``-stage codes, so a later stage
    never masks an earlier one); it also appears in vectors and CLI output. ``reason`` is an
    optional finer, equally stable code. The message is one sentence that says what was
    wrong and where.
    """

    def __init__(self, code: str, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        tag = self.code if self.reason is None else f"{self.code}/{self.reason}"
        return f"{tag}: {self.message}"
