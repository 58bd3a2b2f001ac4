"""Parley's one spelling of time: integer epoch seconds; an aware datetime is accepted too.

Every API where a caller passes ``now`` (or a timestamp such as a proof's ``ts`` or a
grant's ``iat``) takes integer Unix seconds or an aware :class:`datetime.datetime`, which
becomes the whole seconds at or before it. A naive datetime names no instant, so it is the
caller's mistake: ``bad_argument`` with reason ``naive_datetime``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ._canonical import MAX_SAFE_INTEGER
from .errors import ParleyError

__all__ = ["as_epoch", "epoch_seconds"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)


def as_epoch(value: object, name: str) -> object:
    """Return an aware datetime as integer epoch seconds (floored); anything else as given.

    A naive datetime raises the usage error ``bad_argument``/``naive_datetime``.
    """
    if not isinstance(value, datetime):
        return value
    try:
        offset = None if value.tzinfo is None else value.utcoffset()
        if offset is not None:
            return (value - _EPOCH) // _SECOND
    except (TypeError, ValueError, ArithmeticError):  # a broken tzinfo of the caller's
        raise ParleyError(
            "bad_argument", f"{name} has a time zone that gives no offset", reason="bad_clock"
        ) from None
    raise ParleyError(
        "bad_argument",
        f"{name} is a naive datetime; give it a time zone (or pass epoch seconds)",
        reason="naive_datetime",
    )


def epoch_seconds(value: object, name: str) -> int:
    """Return ``value`` (an int or an aware datetime) as safe-integer epoch seconds.

    Anything else is the usage error ``bad_argument`` (reason ``bad_clock``, or
    ``naive_datetime`` for a naive datetime).
    """
    seconds = as_epoch(value, name)
    if type(seconds) is not int or abs(seconds) > MAX_SAFE_INTEGER:
        raise ParleyError(
            "bad_argument",
            f"{name} must be integer epoch seconds or an aware datetime",
            reason="bad_clock",
        )
    return seconds
