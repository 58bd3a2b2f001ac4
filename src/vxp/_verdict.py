"""The verdict of the VXP Proof verifier, and the assurance derivation table (P7).

The assurance a package supports is derived from the evidence only (:func:`derive_assurance`);
the issuer's ``claimed_assurance`` is compared with it and never copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import VxpError

__all__ = ["ASSURANCES", "Evidence", "Verdict", "derive_assurance"]

ASSURANCES = (
    "issuer_key_attested",
    "operator_observed",
    "operator_reported_read_back",
    "operator_reported_agent_approval",
    "user_signed_approval",
    "company_reviewed",
    "witnessed_log",
)
"""Every assurance the verifier can derive, in the order a verdict lists them."""


@dataclass(frozen=True)
class Evidence:
    """The facts of an intact chain that the assurance table reads."""

    issuer_keys: bool
    executed: bool
    read_back_matches: bool
    read_back_complete: bool
    read_back_hidden: bool
    approval_method: str | None
    review_approved: bool
    logged: bool


def derive_assurance(ev: Evidence) -> tuple[tuple[str, ...], frozenset[str]]:
    """Return (derived assurances in :data:`ASSURANCES` order, assurances left undecidable).

    An assurance is undecidable when only a withheld disclosure could show whether it
    holds; it is then neither derived nor counted against the issuer's claim.
    """
    if not isinstance(ev, Evidence):
        raise VxpError("argument_invalid", "derive_assurance takes an Evidence")
    read_back = ev.executed and ev.read_back_matches
    held = {
        "issuer_key_attested": ev.issuer_keys,
        "operator_observed": ev.executed,
        "operator_reported_read_back": read_back and ev.read_back_complete,
        "operator_reported_agent_approval": ev.approval_method == "agent_asserted",
        "user_signed_approval": ev.approval_method == "user_signed",
        "company_reviewed": ev.review_approved,
        "witnessed_log": ev.logged,
    }
    derived = tuple([name for name in ASSURANCES if held[name]])
    if read_back and not ev.read_back_complete and ev.read_back_hidden:
        return derived, _READ_BACK_UNDECIDABLE
    return derived, _NONE_UNDECIDABLE


_READ_BACK_UNDECIDABLE = frozenset({"operator_reported_read_back"})
_NONE_UNDECIDABLE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Verdict:
    """What :func:`vxp.verify` concludes about a package (see docs/spec/vxp-proof.md §10).

    ``valid`` is integrity; ``company``, ``anchor`` and ``key_source`` are provenance;
    ``approval`` the approval method; ``final_state`` what the company asserts;
    ``derived_assurance``, ``single_root`` and ``logged`` how much supports it. When
    ``valid`` is false, ``failure`` holds ``{"code", "reason"?, "message"}`` and every
    other field is empty (``None``, ``[]`` or ``0``): nothing is reported about a
    package that failed.

    A verdict is a report, not a truth value: ``bool(verdict)`` (and so ``if verdict:``)
    raises :class:`TypeError`; read :attr:`valid`.
    """

    valid: bool
    final_state: str | None = None
    revision: int | None = None
    approval: str | None = None
    derived_assurance: tuple[str, ...] = ()
    single_root: str | None = None
    custody_declared: str | None = None
    logged: bool = False
    company: str | None = None
    anchor: str | None = None
    key_source: str | None = None
    profile: str | None = None
    statements: int = 0
    log_inclusion: str | None = None
    tree_size: int | None = None
    live_tree_size: int | None = None
    consistency: str | None = None
    witnesses: int = 0
    operation: str | None = None
    failure: dict[str, str] | None = field(default=None)

    def __bool__(self) -> bool:
        """Refused: a verdict is a report, never a truth value (``if verdict:`` would
        accept a failed package). Read :attr:`valid`."""
        raise TypeError("a Verdict is a report; read .valid")

    def to_json(self) -> dict[str, Any]:
        """Return the verdict as JSON: the draft's fields in its order, then ``failure``."""
        out: dict[str, Any] = {
            "valid": self.valid,
            "final_state": self.final_state,
            "revision": self.revision,
            "approval": self.approval,
            "derived_assurance": list(self.derived_assurance),
            "single_root": self.single_root,
            "custody_declared": self.custody_declared,
            "logged": self.logged,
            "company": self.company,
            "anchor": self.anchor,
            "key_source": self.key_source,
            "profile": self.profile,
            "statements": self.statements,
            "log_inclusion": self.log_inclusion,
            "tree_size": self.tree_size,
            "live_tree_size": self.live_tree_size,
            "consistency": self.consistency,
            "witnesses": self.witnesses,
            "operation": self.operation,
        }
        if self.failure is not None:
            out["failure"] = dict(self.failure)
        return out
