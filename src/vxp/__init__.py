"""VXP Proof: what an agent was asked, approved, executed and read back, as signed evidence.

A chain of SD-JWT statements (RFC 9901, ES256, JCS payloads) logged in an RFC 9162 Merkle
log, and a verifier that derives a verdict and an assurance level from the evidence,
never from the issuer's own claims.

Quick start::

    >>> import vxp
    >>> issubclass(vxp.VxpError, ValueError)
    True
    >>> len(vxp.schema_names()) >= 0
    True

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._errors import VxpError
from ._schemas import load_schema, schema_names

__all__ = [
    "VxpError",
    "load_schema",
    "schema_names",
]
