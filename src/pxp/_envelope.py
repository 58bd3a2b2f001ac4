"""Envelopes: validation (schema plus protocol rules), envelope and proposal hashes, claim ids.

Envelopes travel as JSON objects (``dict``); the stored envelope (after enforcement) is
what ``envelope_hash`` covers, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._canonical import canonical, sha256_hex
from ._card import _schema_check
from ._jsstr import js_trim
from .errors import PxpError

__all__ = [
    "MAX_CLAIMS",
    "SEATS",
    "claim_id",
    "envelope_hash",
    "parse_claim_id",
    "proposal_hash",
    "validate_draft",
    "validate_envelope",
]

MAX_CLAIMS = 8
"""At most this many claims in one envelope."""

SEATS = ("A", "B")
"""The two seats of a v0 room."""

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_CLAIM_ID = re.compile(r"^([AB])([1-9][0-9]{0,5})\.([1-8])$")
_NEW_REF = re.compile(r"^new([1-8])$")
_STORED_KEYS = {
    "pxp",
    "room",
    "seq",
    "from",
    "intent_hash",
    "message",
    "claims",
    "reviews",
    "proposal",
    "status",
    "escalation",
    "accepts",
    "protocol_flags",
    "proposal_hash",
}
_DRAFT_KEYS = {"message", "claims", "reviews", "proposal", "status", "escalation", "accepts"}


def claim_id(seat: str, seq: int, index: int) -> str:
    """Return the id of claim ``index`` (from 1) of envelope ``seq`` sent by ``seat``: ``A1.1``."""
    return f"{seat}{seq}.{index}"


def parse_claim_id(text: str) -> tuple[str, int, int] | None:
    """Return ``(seat, seq, index)`` of a claim id such as ``B3.2``, or ``None``."""
    match = _CLAIM_ID.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def proposal_hash(terms: Sequence[str]) -> str:
    """Return ``sha256hex(canonical(terms))``: the hash of a proposal's terms only.

    ``depends_on`` is not covered: an agreement accepts the terms.
    """
    if isinstance(terms, str | bytes) or not isinstance(terms, Sequence):
        raise PxpError("proposal_invalid", "the proposal terms are not a list of strings")
    if not all(isinstance(t, str) for t in terms):
        raise PxpError("proposal_invalid", "a proposal term is not a string")
    return sha256_hex(canonical(list(terms)))


def envelope_hash(envelope: Mapping[str, Any]) -> str:
    """Return ``sha256hex(canonical(envelope))`` over the envelope exactly as stored."""
    if not isinstance(envelope, Mapping):
        raise PxpError("envelope_invalid", "the envelope is not a JSON object")
    return sha256_hex(canonical(envelope))


def _fail(message: str, reason: str, code: str = "envelope_invalid") -> PxpError:
    return PxpError(code, message, reason=reason)


def _check_reviews(reviews: list[Any], where: str, strict: bool = True) -> None:
    seen: set[str] = set()
    for i, review in enumerate(reviews):
        extra = sorted(set(review) - {"claim_id", "verdict", "reason"})
        if extra and strict:
            raise _fail(f"{where} reviews[{i}] has unknown member {extra[0]!r}", "unknown_member")
        if parse_claim_id(review["claim_id"]) is None:
            raise _fail(
                f"{where} reviews[{i}] names {review['claim_id']!r}, which is not a claim id",
                "review_claim_id",
            )
        if review["claim_id"] in seen and strict:
            raise _fail(f"{where} reviews claim {review['claim_id']} twice", "review_duplicate")
        seen.add(review["claim_id"])


def _check_escalation(env: Mapping[str, Any], where: str, strict: bool = True) -> None:
    escalation = env.get("escalation")
    if env["status"] == "escalate":
        if not isinstance(escalation, Mapping) or not js_trim(str(escalation.get("question", ""))):
            raise _fail(
                f"{where} escalates without a question for the principal",
                "escalation_question_missing",
            )
    elif escalation is not None:
        raise _fail(
            f"{where} carries an escalation but its status is {env['status']!r}",
            "escalation_without_escalate",
        )
    if isinstance(escalation, Mapping):
        extra = sorted(set(escalation) - {"question", "reason"})
        if extra and strict:
            raise _fail(f"{where} escalation has unknown member {extra[0]!r}", "unknown_member")


def _check_proposal(proposal: Any, where: str, strict: bool = True) -> None:
    if proposal is None:
        return
    extra = sorted(set(proposal) - {"terms", "depends_on"})
    if extra and strict:
        raise _fail(f"{where} proposal has unknown member {extra[0]!r}", "unknown_member")
    terms = proposal.get("terms")
    # the reference keeps a proposal whose terms were all blank as ``terms: []``
    if not isinstance(terms, list) or (strict and not terms):
        raise _fail(f"{where} proposal has no terms", "proposal_terms_missing")
    if any(not js_trim(t) for t in terms):
        raise _fail(f"{where} proposal has an empty term", "proposal_term_empty")


def validate_draft(draft: Any) -> dict[str, Any]:
    """Validate what a proxy submits (the ``send_envelope`` fields) and return a copy.

    A draft holds ``message``, ``status`` and optionally ``claims`` (``text``, ``origin``,
    ``ref``, ``backs``), ``reviews``, ``proposal`` (``terms``, ``depends_on`` with ``newN``
    allowed), ``escalation`` and ``accepts`` (``{"proposal_hash"}``). The room fills in the
    rest. Raises :class:`PxpError` (``envelope_invalid``) naming the first problem.
    """
    if not isinstance(draft, Mapping):
        raise _fail("the envelope draft is not a JSON object", "not_object")
    extra = sorted(set(draft) - _DRAFT_KEYS)
    if extra:
        raise _fail(f"the envelope draft has unknown member {extra[0]!r}", "unknown_member")
    _schema_check(
        "envelope-draft.schema.json", dict(draft), "the envelope draft", "envelope_invalid"
    )
    # Strings are trimmed and absent optional members filled as the reference stores them
    # (a review's and an escalation's ``reason`` default to "", ``depends_on`` to []).
    claims: list[dict[str, Any]] = []
    for i, claim in enumerate(draft.get("claims", []), start=1):
        item = {k: (js_trim(v) if isinstance(v, str) else v) for k, v in claim.items()}
        if not item["text"]:
            raise _fail(f"the envelope draft claim {i} has no text", "claim_text_empty")
        if "ref" in item and not item["ref"]:
            del item["ref"]
        claims.append(item)
    out: dict[str, Any] = {
        "message": js_trim(draft["message"]),
        "claims": claims,
        "reviews": [
            {
                "claim_id": js_trim(r["claim_id"]),
                "verdict": r["verdict"],
                "reason": js_trim(r.get("reason", "")),
            }
            for r in draft.get("reviews", [])
        ],
        "status": draft["status"],
    }
    if "proposal" in draft:
        out["proposal"] = {
            "terms": [js_trim(t) for t in draft["proposal"]["terms"]],
            "depends_on": [js_trim(d) for d in draft["proposal"].get("depends_on", [])],
        }
    if "escalation" in draft:
        out["escalation"] = {
            "question": js_trim(draft["escalation"]["question"]),
            "reason": js_trim(draft["escalation"].get("reason", "")),
        }
    if "accepts" in draft:
        out["accepts"] = dict(draft["accepts"])
    if len(out["claims"]) > MAX_CLAIMS:
        raise _fail(
            f"the envelope draft has {len(out['claims'])} claims; at most {MAX_CLAIMS} are allowed",
            "too_many_claims",
        )
    _check_reviews(out["reviews"], "the envelope draft")
    _check_escalation(out, "the envelope draft")
    _check_proposal(out.get("proposal"), "the envelope draft")
    if "accepts" in out and out["status"] != "agree":
        raise _fail(
            "the envelope draft names a proposal to accept but does not agree", "accepts_not_agree"
        )
    for dep in out.get("proposal", {}).get("depends_on", []):
        match = _NEW_REF.fullmatch(dep)
        if match is None and parse_claim_id(dep) is None:
            raise _fail(
                f"the envelope draft depends on {dep!r}, neither a claim id nor newN",
                "depends_on_invalid",
            )
        if match is not None and int(match.group(1)) > len(out["claims"]):
            raise _fail(
                f"the envelope draft depends on {dep} but carries {len(out['claims'])} claims",
                "depends_on_invalid",
            )
    return out


def validate_envelope(envelope: Any, *, strict: bool = True) -> dict[str, Any]:
    """Validate a stored envelope: ``envelope.schema.json`` plus the protocol rules.

    Rules on top of the schema: no unknown members; ``pxp`` is ``"0"``; at most 8 claims,
    with ids ``<seat><seq>.<i>`` numbered from 1 in order; ``stated`` and ``sourced`` claims
    carry a ``ref``; reviews name claim ids, each at most once; ``escalate`` carries a
    question and only ``escalate`` carries an escalation; ``agree`` carries ``accepts`` and
    no proposal; ``accepts`` only on ``agree``. Returns the envelope (unchanged).

    ``strict=False`` (used when importing a room exported by another implementation)
    tolerates unknown members; they are still covered by the envelope hash.
    """
    if not isinstance(envelope, Mapping):
        raise _fail("the envelope is not a JSON object", "not_object")
    extra = sorted(set(envelope) - _STORED_KEYS)
    if extra and strict:
        raise _fail(f"the envelope has unknown member {extra[0]!r}", "unknown_member")
    _schema_check("envelope.schema.json", dict(envelope), "the envelope", "envelope_invalid")
    sender = envelope["from"]
    seat, seq = sender["seat"], envelope["seq"]
    where = f"envelope {seq}"
    if seat not in SEATS:
        raise _fail(f"{where} comes from seat {seat!r}; a v0 room has seats A and B", "seat")
    if not _HEX64.fullmatch(envelope["intent_hash"]):
        raise _fail(f"{where} intent_hash is not 64 lowercase hex digits", "intent_hash")
    claims = envelope["claims"]
    if len(claims) > MAX_CLAIMS:
        raise _fail(f"{where} has {len(claims)} claims; at most 8 are allowed", "too_many_claims")
    last = 0
    for i, claim in enumerate(claims, start=1):
        extra = sorted(set(claim) - {"id", "text", "origin", "ref", "backs"})
        if extra and strict:
            raise _fail(f"{where} claim {i} has unknown member {extra[0]!r}", "unknown_member")
        # The reference numbers claims before dropping those with empty text, so an
        # imported envelope may skip numbers (A3.1, A3.3); ours never does.
        parsed = parse_claim_id(claim["id"])
        in_order = (
            claim["id"] == claim_id(seat, seq, i)
            if strict
            else parsed is not None and parsed[:2] == (seat, seq) and parsed[2] > last
        )
        if not in_order:
            raise _fail(
                f"{where} claim {i} has id {claim['id']!r}, expected {claim_id(seat, seq, i)}",
                "claim_id",
            )
        last = parsed[2] if parsed is not None else i
        if claim["origin"] in ("stated", "sourced") and not js_trim(str(claim.get("ref", ""))):
            raise _fail(
                f"{where} claim {claim['id']} is {claim['origin']} without a ref", "ref_missing"
            )
    _check_reviews(envelope["reviews"], where, strict)
    _check_escalation(envelope, where, strict)
    _check_proposal(envelope.get("proposal"), where, strict)
    status = envelope["status"]
    accepts = envelope.get("accepts")
    if status == "agree":
        if "proposal" in envelope:
            raise _fail(f"{where} agrees and carries a proposal", "agree_with_proposal")
        if not isinstance(accepts, Mapping) or not _HEX64.fullmatch(
            str(accepts.get("proposal_hash", ""))
        ):
            raise _fail(f"{where} agrees without naming the accepted proposal", "accepts_missing")
    elif accepts is not None:
        raise _fail(f"{where} names an accepted proposal but does not agree", "accepts_not_agree")
    proposal = envelope.get("proposal")
    if "proposal_hash" in envelope:
        terms = proposal.get("terms") if isinstance(proposal, Mapping) else None
        if not isinstance(terms, list) or envelope.get("proposal_hash") != proposal_hash(terms):
            raise _fail(
                f"{where} proposal_hash is not the hash of its proposal's terms", "proposal_hash"
            )
    flags = envelope.get("protocol_flags", [])
    if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
        raise _fail(f"{where} protocol_flags is not a list of strings", "protocol_flags")
    return dict(envelope)
