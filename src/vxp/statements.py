"""VXP Proof statements and the facts the verifier derives from them.

What a port or a user's device needs beside :class:`vxp.OperationBuilder` and
:class:`vxp.Verifier`: the statement ``typ``, the statement kinds and the role that signs
each (:data:`KIND_SIGNER`), the final states, the bytes a user signs to approve a revision
(:func:`approval_payload`, :func:`approval_signing_input`), one statement verified on its
own (:func:`verify_statement`, giving a :class:`ParsedStatement`) and its name
(:func:`jwt_digest`, what ``prev`` and ``terms_statement`` carry), the log entry of a
statement (:func:`leaf_data`), the JCS digest VXP uses (:func:`digest_of`), the statement cap
(:data:`MAX_STATEMENTS`) and the assurance table (:data:`ASSURANCES`, :class:`Evidence`,
:func:`derive_assurance`).

>>> from vxp.statements import KIND_SIGNER, digest_of
>>> KIND_SIGNER["terms"]
'company'
>>> digest_of({"a": 1})[:8]
'sha-256:'
"""

from __future__ import annotations

from ._builder import digest_of
from ._chain import FINAL_STATES, KIND_SIGNER
from ._statements import (
    STATEMENT_TYP,
    ParsedStatement,
    approval_payload,
    approval_signing_input,
    jwt_digest,
    verify_statement,
)
from ._verdict import ASSURANCES, Evidence, derive_assurance
from ._verifier import MAX_STATEMENTS, leaf_data

__all__ = [
    "ASSURANCES",
    "FINAL_STATES",
    "KIND_SIGNER",
    "MAX_STATEMENTS",
    "STATEMENT_TYP",
    "Evidence",
    "ParsedStatement",
    "approval_payload",
    "approval_signing_input",
    "derive_assurance",
    "digest_of",
    "jwt_digest",
    "leaf_data",
    "verify_statement",
]
