"""The two spellings of a time a caller passes: an aware ``datetime``, or epoch seconds.

Every :mod:`vxp` call that takes ``now`` (or another time of the caller's) reads it here:
an aware :class:`~datetime.datetime` is always accepted; a naive one is the caller's
mistake (``time_naive``); anything else that is not the call's other spelling is
``now_invalid``. Both are usage errors. An aware datetime is read once, here, as UTC: one
whose ``tzinfo`` fails (``utcoffset()`` raising or returning something else than a
timedelta) or that has no UTC spelling (year 1 with a positive offset, year 9999 with a
negative one) is ``now_invalid`` too, so no later step meets it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from .errors import VxpError

__all__ = ["aware", "epoch_seconds", "whole_seconds"]

MAX_TIME = 2**53
"""Largest magnitude of a time in seconds since the epoch (**ours**)."""


def aware(value: object, where: str = "now") -> datetime:
    """``value`` as a plain UTC datetime if it is an aware datetime; else ``time_naive``
    or ``now_invalid`` (see the module docstring)."""
    if not isinstance(value, datetime):
        raise VxpError("now_invalid", f"{where} is not a timezone-aware datetime")
    try:
        # the caller's tzinfo runs here and only here (it may raise anything)
        offset = datetime.utcoffset(value)
        utc = None if offset is None else datetime.astimezone(value, UTC)
    except (OverflowError, ValueError) as exc:
        raise VxpError("now_invalid", f"{where} has no UTC time in the years 1 to 9999") from exc
    except Exception as exc:
        raise VxpError("now_invalid", f"{where} has a tzinfo whose utcoffset() fails") from exc
    if utc is None:
        raise VxpError("time_naive", f"{where} is a naive datetime; give it a timezone")
    return datetime(
        utc.year, utc.month, utc.day, utc.hour, utc.minute, utc.second, utc.microsecond, UTC
    )


def epoch_seconds(value: object, where: str = "now") -> float:
    """Seconds since the epoch of an aware datetime or of a finite number (int or float,
    not bool) no larger than :data:`MAX_TIME` in magnitude."""
    if isinstance(value, datetime):
        return aware(value, where).timestamp()
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not -MAX_TIME <= value <= MAX_TIME  # (refuses NaN and the infinities too)
    ):
        raise VxpError(
            "now_invalid",
            f"{where} is an aware datetime or a finite number of seconds since the epoch",
        )
    return value


def whole_seconds(value: object, where: str = "now") -> int:
    """Integer seconds since the epoch of an aware datetime (rounded down) or of an
    integer (not bool) no larger than :data:`MAX_TIME` in magnitude; anything else is
    ``now_invalid``."""
    if isinstance(value, datetime):
        return math.floor(aware(value, where).timestamp())
    if not isinstance(value, int) or isinstance(value, bool) or not -MAX_TIME <= value <= MAX_TIME:
        raise VxpError(
            "now_invalid",
            f"{where} is an aware datetime or integer seconds since the epoch (at most 2**53)",
        )
    return value
