"""Evidence of a person's decision, piece by piece: presentations, proofs, what is checked.

The top level has what most callers want (:func:`handoff.attach_proof`,
:func:`handoff.verify_proof`, :func:`handoff.settlement_evidence`); this module holds the
parts: the presentation a ``presented`` digest covers (:func:`presentation`,
:func:`presentation_for`), the terms a settlement was made against (:func:`terms_at`,
:func:`presented_terms`), a bare proof (:func:`sign_proof`), the check of one settled
record (:func:`evidence_verdict`) and what claims rest on (:func:`claim_evidence`).
"""

from __future__ import annotations

from ._conformance import (
    claim_evidence,
    evidence_verdict,
    presentation_for,
    presented_terms,
    terms_at,
)
from ._evidence import PROOF_ALGORITHMS, PROOF_TYP, presentation, sign_proof

__all__ = [
    "PROOF_ALGORITHMS",
    "PROOF_TYP",
    "claim_evidence",
    "evidence_verdict",
    "presentation",
    "presentation_for",
    "presented_terms",
    "sign_proof",
    "terms_at",
]
