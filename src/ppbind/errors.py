"""The errors of the binding profile pp-bind/1: one table of codes, three classes.

Every error :mod:`ppbind` raises carries a code of :data:`CODES` (rendered in
``docs/codes/ppbind.md``), the ``link`` of the errand that broke and a sentence.
:class:`BindingProtocolError` is about the records of an errand (what another party
wrote: a brief, a Decision, a grant, a proof, a key in a record); :class:`BindingUsageError`
is the caller's own mistake (a ``now`` that is not a time, a key of the wrong kind, a
schema name the package does not ship). Both derive from :class:`BindingError`, a
:class:`ValueError`; building ``BindingError(code, …)`` gives the class the code's kind
names.

The codes of the audit are in the order its checks run (docs/spec/bindings.md §7); the
stage of each is the link of the errand it belongs to.
"""

from __future__ import annotations

from _ppcodes import Code, CodedError, CodeTable

__all__ = ["CODES", "BindingError", "BindingProtocolError", "BindingUsageError"]

CODES = CodeTable(
    "ppbind",
    [
        # the caller's mistakes
        Code(
            "binding_argument_invalid",
            "usage",
            "call",
            "An argument the caller holds (a key, a seed, `now`, a demo option) has the wrong "
            "type or value; `reason` names it.",
        ),
        Code(
            "schema_unknown",
            "usage",
            "call",
            "The schema name is not one of the schemas ppbind ships.",
        ),
        Code(
            "schemas_missing",
            "usage",
            "call",
            "The ppbind JSON Schemas are neither installed with the package nor in a checkout.",
        ),
        Code(
            "binding_demo_failed",
            "usage",
            "demo",
            "The in-process demo errand could not complete (the proxies given did not agree, "
            "or the shop refused).",
        ),
        # stage 0: the audit input and the principal key
        Code(
            "binding_input_invalid",
            "protocol",
            "input",
            "A record is not in the profile's shape, or is refused by its own protocol where "
            "a helper reads it; `reason` names the member or the protocol's code.",
        ),
        Code(
            "binding_key_unsupported",
            "protocol",
            "principal",
            "A public key is not an Ed25519 key in either spelling (`ed25519:…` or an OKP "
            "JWK), or the principal's key is not in her side's key set.",
        ),
        # stage 1: each protocol's own verification, in errand order
        Code("pxp_invalid", "protocol", "pxp", "PXP refused the ledger or the brief."),
        Code("handoff_invalid", "protocol", "handoff", "Handoff refused a record or its evidence."),
        Code("parley_invalid", "protocol", "parley", "Parley refused a frame, proof or grant."),
        Code("vxp_invalid", "protocol", "vxp", "VXP refused the proof package."),
        # stage 2: the links
        Code(
            "binding_terms_unreadable",
            "protocol",
            "pxp",
            "The agreed terms are not the profile's machine terms (item, price, service).",
        ),
        Code(
            "binding_over_limit",
            "protocol",
            "pxp",
            "The agreed price is above the errand's limit, or in another currency.",
        ),
        Code(
            "binding_not_approved",
            "protocol",
            "decision",
            "The principal has not approved the Decision.",
        ),
        Code(
            "binding_terms_changed",
            "protocol",
            "decision",
            "The Decision's terms changed after the principal settled it.",
        ),
        Code(
            "binding_wrong_key",
            "protocol",
            "decision",
            "The Decision was not settled with the errand principal's key.",
        ),
        Code(
            "binding_agreement_mismatch",
            "protocol",
            "pxp->decision",
            "The Decision cites another PXP agreement than the room's.",
        ),
        Code(
            "binding_terms_not_agreed",
            "protocol",
            "pxp->decision",
            "The Decision's machine terms are not the agreed terms, or are for another principal.",
        ),
        Code(
            "binding_consent_mismatch",
            "protocol",
            "decision->parley",
            "The consent request in the Decision is not the one the decided proposal gives.",
        ),
        Code(
            "binding_wrong_proposal",
            "protocol",
            "decision->parley",
            "The commit is of another proposal than the decided one.",
        ),
        Code(
            "binding_grant_mismatch",
            "protocol",
            "decision->parley",
            "The commit's grant is not the consent grant the principal's decision gives.",
        ),
        Code(
            "binding_late",
            "protocol",
            "decision->parley",
            "The offer lapses within 30 seconds: the principal's side signs nothing.",
        ),
        Code(
            "binding_receipt_mismatch",
            "protocol",
            "parley",
            "The receipt does not describe the decided proposal committed within its life.",
        ),
        Code(
            "binding_wrong_company",
            "protocol",
            "parley->vxp",
            "The proof is not from the issuer configured for the service, or not under its "
            "pinned keys.",
        ),
        Code(
            "binding_proof_terms_mismatch",
            "protocol",
            "parley->vxp",
            "The proof's terms are not the terms the principal was shown.",
        ),
        Code(
            "binding_forged_approval",
            "protocol",
            "parley->vxp",
            "The proof's approval was not signed by the errand principal's key.",
        ),
        Code(
            "binding_release_mismatch",
            "protocol",
            "parley->vxp",
            "The proof's execution is not the commit of the decided proposal.",
        ),
        Code(
            "binding_not_proven",
            "protocol",
            "vxp",
            "The proof does not show a witnessed, successful execution.",
        ),
        Code(
            "binding_act_changed",
            "protocol",
            "act",
            "The Act changed after the principal confirmed it.",
        ),
        Code(
            "binding_act_item",
            "protocol",
            "vxp->act",
            "There is no Act for the item bought, or it is about another item.",
        ),
        Code(
            "binding_act_mismatch",
            "protocol",
            "vxp->act",
            "The Act cites another Decision or commit.",
        ),
        Code(
            "binding_log_truncated",
            "protocol",
            "vxp->act",
            "The proof presented is shorter than, or not an extension of, the proof the "
            "agent verified.",
        ),
        Code(
            "binding_act_wrong_key",
            "protocol",
            "act",
            "The Act was not settled `done` with the errand principal's key.",
        ),
        Code(
            "binding_act_open",
            "protocol",
            "act",
            "The policy requires the Act confirmed, and the principal has not confirmed it.",
        ),
    ],
)
"""Every code :mod:`ppbind` raises, with its kind, stage (the errand's link) and meaning."""


class BindingError(CodedError):
    """A binding check failed, or an input is not what the profile expects (a ValueError).

    ``code`` is stable (``binding_*`` for a link between two protocols, ``pxp_invalid``,
    ``handoff_invalid``, ``parley_invalid``, ``vxp_invalid`` when one protocol's own
    verification refused its record; every code is in :data:`CODES`); ``reason`` names the
    failing member or the protocol's own code; ``link`` names the link of the errand that
    broke (``"pxp"``, ``"pxp->decision"``, ``"decision->parley"``, ``"parley->vxp"``,
    ``"vxp->act"``, …). The code's kind decides the class built:
    :class:`BindingProtocolError` or :class:`BindingUsageError`.
    """

    codes = CODES

    link: str | None
    """The link of the errand that broke, or None."""

    def __init__(
        self, code: str, message: str, *, reason: str | None = None, link: str | None = None
    ) -> None:
        super().__init__(code, message, reason=reason)
        self.link = link

    def to_json(self) -> dict[str, str]:
        """Return ``{"code", "reason"?, "link"?, "message"}``."""
        out = {"code": self.code}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.link is not None:
            out["link"] = self.link
        out["message"] = self.message
        return out


class BindingUsageError(BindingError):
    """The caller's own mistake: an argument it holds (a key, ``now``, an option) is wrong."""

    kind = "usage"


class BindingProtocolError(BindingError):
    """An errand's record (what another party wrote) breaks the profile or its protocol."""

    kind = "protocol"
