"""Proxy Exchange Protocol (PXP v0): two proxies negotiate for their principals in a room.

Sealed intent cards, envelopes whose claims are tagged stated/sourced/assumed, reviews,
escalation to the principal, a hash-chained ledger, agreement by proposal hash, and a
decision brief a principal can act on without reading the transcript.

Quick start::

    >>> import pxp
    >>> issubclass(pxp.PxpError, ValueError)
    True
    >>> len(pxp.schema_names()) >= 0
    True

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._errors import PxpError
from ._schemas import load_schema, schema_names

__all__ = [
    "PxpError",
    "load_schema",
    "schema_names",
]
