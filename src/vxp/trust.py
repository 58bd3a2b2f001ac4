"""Issuer trust material beyond the basics: parsing it, and rotating its keys.

:func:`vxp.build_metadata`, :func:`vxp.build_jwks` and :class:`vxp.KeyRecord` publish an
issuer's material; :class:`vxp.Verifier` reads it. Here: :func:`load_trust` (parse and
cross-check metadata and JWKS into a :class:`TrustMaterial`, or raise
:class:`~vxp.VxpProtocolError` ``metadata_invalid``), key rotation (:func:`rotate_key`,
:func:`retire_key`, :func:`unpublish_key`: each returns new metadata) and the custody
values (:data:`CUSTODY_VALUES`).

>>> import vxp
>>> from vxp.trust import load_trust
>>> op = vxp.demo_operation("succeeded")
>>> load_trust(op.metadata, op.jwks).custody
'operator_hosted'
"""

from __future__ import annotations

from ._metadata import (
    CUSTODY_VALUES,
    TrustMaterial,
    load_trust,
    retire_key,
    rotate_key,
    unpublish_key,
)

__all__ = [
    "CUSTODY_VALUES",
    "TrustMaterial",
    "load_trust",
    "retire_key",
    "rotate_key",
    "unpublish_key",
]
