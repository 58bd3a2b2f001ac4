"""The base of Parley's report objects: a report has no truth value.

A report (:class:`parley.GrantCheck`, :class:`parley.Result`,
:class:`parley.conformance.Report`, :class:`parley.service.Outcome`) says how a check or a
request went in its fields. ``if parley.verify_grant(...):`` would read a failed check as
success, so :meth:`Report.__bool__` raises :class:`TypeError` naming the field to read.
"""

from __future__ import annotations

__all__ = ["Report"]


class Report:
    """A result object whose truth value is refused: read its flag instead."""

    __slots__ = ()

    _flag = "ok"

    def __bool__(self) -> bool:
        """Refuse: a report cannot be read as success or failure."""
        raise TypeError(f"{type(self).__name__} is a report; read .{self._flag}")
