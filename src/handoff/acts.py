"""The Acts extension (``acts/0.3``): work only the principal can do.

:data:`ACTS` is the extension (also in :data:`handoff.EXTENSIONS`); the other names are its
vocabularies and the rule its schemas cannot express (:func:`check_act_terms`).
"""

from __future__ import annotations

from ._acts import ACTS, ACTS_CLAIM_OUTCOMES, ACTS_OUTCOMES, ACTS_REASONS, check_act_terms

__all__ = ["ACTS", "ACTS_CLAIM_OUTCOMES", "ACTS_OUTCOMES", "ACTS_REASONS", "check_act_terms"]
