"""The Decisions extension (``decisions/0.3``): choices only the principal may make.

:data:`DECISIONS` is the extension (also in :data:`handoff.EXTENSIONS`); the other names are
its vocabularies, the rules its schemas cannot express, and how a chosen option fares when
the terms change (:func:`option_status`).
"""

from __future__ import annotations

from ._decisions import (
    DECISIONS,
    DECISIONS_REASONS,
    RESERVED_OUTCOMES,
    check_decision_outcome,
    check_decision_terms,
    option_status,
)

__all__ = [
    "DECISIONS",
    "DECISIONS_REASONS",
    "RESERVED_OUTCOMES",
    "check_decision_outcome",
    "check_decision_terms",
    "option_status",
]
