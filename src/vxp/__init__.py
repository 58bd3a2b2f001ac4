"""VXP Proof: what an agent was asked, approved, executed and read back, as signed evidence.

A chain of SD-JWT statements (RFC 9901, ES256, JCS payloads) logged in an RFC 9162 Merkle
log, and a verifier that derives a verdict and an assurance level from the evidence,
never from the issuer's own claims.

The five things you most likely want:

1. :class:`Verifier` (or the one-shot :func:`verify`): a package in, a :class:`Verdict` out.
   A verdict is a report: read ``verdict.valid``; ``if verdict:`` raises ``TypeError``.
2. :class:`OperationBuilder`: sign an operation's statements as they happen, log them in a
   :class:`MerkleLog` (:func:`open_log_store` picks its store) and seal the package;
   :func:`build_metadata` and :func:`build_jwks` publish the issuer's material.
3. :func:`issue_sd_jwt`, :func:`present_sd_jwt`, :func:`verify_sd_jwt`: SD-JWT (RFC 9901)
   on its own; :func:`verify_sd_jwt` returns the verified token or raises.
4. :mod:`vxp.merkle` and :mod:`vxp.checkpoints`: RFC 9162 proofs, signed tree heads, witnesses.
5. :class:`VxpError`: every error, with a stable ``code`` (``docs/codes/vxp.md``);
   :class:`VxpUsageError` is the caller's mistake, :class:`VxpProtocolError` a peer's bad data.

Quick start: issue the draft's example operation with demo keys, then verify it::

    >>> import vxp
    >>> op = vxp.demo_operation("succeeded")
    >>> verdict = vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now)
    >>> verdict.valid, verdict.final_state, verdict.single_root, verdict.logged
    (True, 'succeeded', 'operator', False)

A server verifying many packages of one issuer builds one ``Verifier`` and reuses it
(nothing is remembered anywhere else)::

    >>> verifier = vxp.Verifier(op.metadata, op.jwks)
    >>> verifier.verify(op.package, now=op.now).final_state
    'succeeded'
    >>> tampered = dict(op.package, company="https://other.example")
    >>> verdict = verifier.verify(tampered, now=op.now)
    >>> verdict.valid, verdict.failure["code"]
    (False, 'company_mismatch')
    >>> bool(verdict)
    Traceback (most recent call last):
    TypeError: a Verdict is a report; read .valid

The building blocks: an SD-JWT (RFC 9901) and a Merkle log (RFC 9162)::

    >>> from joserfc.jwk import ECKey
    >>> from vxp import merkle
    >>> issuer = ECKey.generate_key("P-256")
    >>> claims = {"iss": "https://co.example", "name": vxp.Sd("Ada")}
    >>> token = vxp.issue_sd_jwt(claims, issuer, typ="example+sd-jwt")
    >>> shown = vxp.present_sd_jwt(token, disclose=[])
    >>> keys = vxp.IssuerKeys([issuer])  # resolved once, held by the caller
    >>> vxp.verify_sd_jwt(shown, keys, typ="example+sd-jwt", now=0).claims
    {'iss': 'https://co.example'}
    >>> log = vxp.MerkleLog("log.example/vxp")
    >>> log.extend([b"a", b"b", b"c"])
    range(0, 3)
    >>> proof = log.inclusion_proof(1)
    >>> merkle.verify_inclusion(merkle.leaf_hash(b"b"), 1, 3, proof, log.root()) == log.root()
    True

``__all__`` lists the top-level names; the public submodules :mod:`vxp.merkle`,
:mod:`vxp.checkpoints`, :mod:`vxp.sdjwt`, :mod:`vxp.statements`, :mod:`vxp.trust`,
:mod:`vxp.stores`, :mod:`vxp.fetch`, :mod:`vxp.codec` and :mod:`vxp.errors` hold the
rest (:func:`schema_names` and :func:`load_schema` stay at the top, as in every package
of this distribution: the conformance runner reads them there). Modules whose name starts
with ``_`` are private.
"""

from __future__ import annotations

from . import checkpoints as checkpoints
from . import codec as codec
from . import errors as errors
from . import fetch as fetch
from . import merkle as merkle
from . import sdjwt as sdjwt
from . import statements as statements
from . import stores as stores
from . import trust as trust
from ._builder import OperationBuilder
from ._keys import IssuerKeys, KeyLike, key_thumbprint
from ._log import MerkleLog
from ._metadata import KeyRecord, build_jwks, build_metadata
from ._proof_demo import DemoOperation, demo_key, demo_operation
from ._schemas import load_schema, schema_names
from ._sdjwt import (
    KeyBinding,
    Sd,
    SdJwt,
    VerifiedSdJwt,
    issue_sd_jwt,
    present_sd_jwt,
    verify_sd_jwt,
)
from ._stores import open_log_store
from ._verdict import Verdict
from ._verifier import Verifier, verify
from .errors import VxpError, VxpProtocolError, VxpUsageError

__all__ = [
    "DemoOperation",
    "IssuerKeys",
    "KeyBinding",
    "KeyLike",
    "KeyRecord",
    "MerkleLog",
    "OperationBuilder",
    "Sd",
    "SdJwt",
    "Verdict",
    "VerifiedSdJwt",
    "Verifier",
    "VxpError",
    "VxpProtocolError",
    "VxpUsageError",
    "build_jwks",
    "build_metadata",
    "demo_key",
    "demo_operation",
    "issue_sd_jwt",
    "key_thumbprint",
    "load_schema",
    "open_log_store",
    "present_sd_jwt",
    "schema_names",
    "verify",
    "verify_sd_jwt",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
