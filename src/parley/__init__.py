"""Parley: INTENT, PROPOSALS, COMMIT for agents acting for people.

Proposal hashes, undo, Ed25519 capability-chain grants with fail-closed caveats, proof of
possession, consent bound to one proposal, token budgets, and Lens, a byte-exact compact
text rendering for models.

Quick start::

    >>> import parley
    >>> issubclass(parley.ParleyError, ValueError)
    True
    >>> len(parley.schema_names()) >= 0
    True

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._errors import ParleyError
from ._schemas import load_schema, schema_names

__all__ = [
    "ParleyError",
    "load_schema",
    "schema_names",
]
