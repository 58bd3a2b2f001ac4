"""Principal Handoff: items only the principal may settle leave the agents and come back settled.

Acts (work only the principal can do) and Decisions (choices only the principal may make)
are carried as append-only, attributable records in two registers per item, folded into
a current state regardless of arrival order.

Quick start::

    >>> import handoff
    >>> issubclass(handoff.HandoffError, ValueError)
    True
    >>> len(handoff.schema_names()) >= 0
    True

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._errors import HandoffError
from ._schemas import load_schema, schema_names

__all__ = [
    "HandoffError",
    "load_schema",
    "schema_names",
]
