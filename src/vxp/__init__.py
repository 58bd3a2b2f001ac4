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

The building blocks: an SD-JWT (RFC 9901) and a Merkle log (RFC 9162)::

    >>> from joserfc.jwk import ECKey
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
    >>> vxp.verify_inclusion(vxp.leaf_hash(b"b"), 1, 3, log.inclusion_proof(1), log.root())

VXP Proof: issue the draft's example operation with demo keys, then verify it::

    >>> op = vxp.demo_operation("succeeded")
    >>> verdict = vxp.verify(op.package, op.metadata, op.jwks, live=op.live, now=op.now)
    >>> verdict.valid, verdict.final_state, verdict.single_root, verdict.logged
    (True, 'succeeded', 'operator', False)

A server verifying many packages of one issuer builds one ``Verifier`` and reuses it
(nothing is remembered anywhere else)::

    >>> verifier = vxp.Verifier(op.metadata, op.jwks)
    >>> verifier.verify(op.package, now=op.now).final_state
    'succeeded'

Public names are listed in ``__all__``; implementation modules are private.
"""

from __future__ import annotations

from ._builder import OperationBuilder, digest_of
from ._chain import FINAL_STATES, KIND_SIGNER
from ._checkpoint import (
    Checkpoint,
    Cosignature,
    SignedCheckpoint,
    Witness,
    cosign_checkpoint,
    sign_checkpoint,
    verify_checkpoint,
    verify_cosignatures,
)
from ._codec import b64url_decode, b64url_encode, canonical_json, decode_hash, encode_hash
from ._fetch import (
    AccessToken,
    FetchResponse,
    MemoryReplayCache,
    ProofEndpoint,
    ReplayCache,
    SqliteReplayCache,
    make_dpop_proof,
)
from ._keys import IssuerKeys, KeyLike, key_thumbprint
from ._log import LogStore, MemoryLogStore, MerkleLog, SqliteLogStore
from ._merkle import (
    EMPTY_ROOT,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    node_hash,
    root_from_proof,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)
from ._metadata import (
    CUSTODY_VALUES,
    KeyRecord,
    TrustMaterial,
    build_jwks,
    build_metadata,
    load_trust,
    retire_key,
    rotate_key,
    unpublish_key,
)
from ._proof_demo import DemoOperation, demo_key, demo_operation
from ._schemas import load_schema, schema_names
from ._sdjwt import (
    Disclosure,
    KeyBinding,
    RandomSource,
    Sd,
    SdJwt,
    VerifiedSdJwt,
    issue_sd_jwt,
    mark_disclosable,
    present_sd_jwt,
    verify_sd_jwt,
)
from ._statements import STATEMENT_TYP, approval_payload, approval_signing_input
from ._stores import open_log_store, open_replay_cache
from ._verdict import ASSURANCES, Evidence, Verdict, derive_assurance
from ._verifier import MAX_STATEMENTS, Verifier, leaf_data, verify
from .errors import VxpError, VxpProtocolError, VxpUsageError

__all__ = [
    "ASSURANCES",
    "CUSTODY_VALUES",
    "EMPTY_ROOT",
    "FINAL_STATES",
    "KIND_SIGNER",
    "MAX_STATEMENTS",
    "STATEMENT_TYP",
    "AccessToken",
    "Checkpoint",
    "Cosignature",
    "DemoOperation",
    "Disclosure",
    "Evidence",
    "FetchResponse",
    "IssuerKeys",
    "KeyBinding",
    "KeyLike",
    "KeyRecord",
    "LogStore",
    "MemoryLogStore",
    "MemoryReplayCache",
    "MerkleLog",
    "OperationBuilder",
    "ProofEndpoint",
    "RandomSource",
    "ReplayCache",
    "Sd",
    "SdJwt",
    "SignedCheckpoint",
    "SqliteLogStore",
    "SqliteReplayCache",
    "TrustMaterial",
    "Verdict",
    "VerifiedSdJwt",
    "Verifier",
    "VxpError",
    "VxpProtocolError",
    "VxpUsageError",
    "Witness",
    "approval_payload",
    "approval_signing_input",
    "b64url_decode",
    "b64url_encode",
    "build_jwks",
    "build_metadata",
    "canonical_json",
    "consistency_proof",
    "cosign_checkpoint",
    "decode_hash",
    "demo_key",
    "demo_operation",
    "derive_assurance",
    "digest_of",
    "encode_hash",
    "inclusion_proof",
    "issue_sd_jwt",
    "key_thumbprint",
    "leaf_data",
    "leaf_hash",
    "load_schema",
    "load_trust",
    "make_dpop_proof",
    "mark_disclosable",
    "node_hash",
    "open_log_store",
    "open_replay_cache",
    "present_sd_jwt",
    "retire_key",
    "root_from_proof",
    "rotate_key",
    "schema_names",
    "sign_checkpoint",
    "tree_hash",
    "unpublish_key",
    "verify",
    "verify_checkpoint",
    "verify_consistency",
    "verify_cosignatures",
    "verify_inclusion",
    "verify_sd_jwt",
]

# The library logs through `logging` and never configures it: without a handler of the
# application's, nothing is printed (docs/cli.md, "Logging").
import logging as _logging

_logging.getLogger(__name__).addHandler(_logging.NullHandler())
