"""The one spelling of time a caller may pass as ``now``/``ts``: RFC 3339 text or aware datetime.

Handoff records carry ``ts`` as RFC 3339 text (informative: nothing is ordered by it). A
caller may pass that text, as before, or an aware :class:`datetime.datetime`, which becomes
UTC text (``2026-10-27T10:00:00Z``, with microseconds only when it has them). A naive
datetime names no instant, so it is refused as :class:`~handoff.HandoffUsageError`
``usage``/``time``, like text that is not RFC 3339 and any other type.
"""

from __future__ import annotations

import datetime

from ._schemas import own_schema
from ._validate import own_pattern
from .errors import HandoffError

__all__ = ["Time", "rfc3339"]

Time = str | datetime.datetime
"""What a caller may pass as ``now``/``ts``: RFC 3339 text or an aware datetime."""


def rfc3339(value: object, name: str = "now") -> str:
    """Return ``value`` as RFC 3339 text; text that is one is returned as given.

    Text is held to the record schemas' own ``ts`` rule (``def.timestamp.json``), so that
    a bad ``now`` is the caller's error here rather than the built record's later.
    """
    if isinstance(value, str):
        if own_pattern(own_schema("def.timestamp.json")["pattern"]).search(value) is None:
            raise HandoffError(
                "usage", f"{name} {value[:40]!r} is not RFC 3339 date-time text", reason="time"
            )
        return value
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise HandoffError(
                "usage",
                f"{name} is a naive datetime; pass an aware one (tzinfo set) or RFC 3339 text",
                reason="time",
            )
        utc = value.astimezone(datetime.UTC)
        text = utc.strftime("%Y-%m-%dT%H:%M:%S")
        if utc.microsecond:
            text += f".{utc.microsecond:06d}".rstrip("0")
        return text + "Z"
    raise HandoffError(
        "usage",
        f"{name} must be RFC 3339 text or an aware datetime, not {type(value).__name__}",
        reason="time",
    )
