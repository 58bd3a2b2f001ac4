"""The helpers at each seam of the errand: what one protocol's record gives the next.

Each function builds, from the records a party already holds, the record the next step
needs, exactly as docs/spec/bindings.md §5 says; the audit (:func:`ppbind.verify_errand`)
recomputes the same values with the same functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ParamSpec, TypeVar

import handoff
import parley
import pxp
import vxp

from ._digests import PROFILE, record_digest, statement_body, statement_digest
from ._keys import PersonKey, same_key
from ._terms import MachineTerms, price_text, read_terms
from .errors import BindingError

__all__ = [
    "LATE_MARGIN",
    "READ_BACK_TERMS",
    "act_terms",
    "approval_for",
    "check_conforming",
    "commit_binding",
    "consent_grant",
    "decision_terms",
    "is_late",
    "note_from_receipt",
    "proposal_expires",
    "release_object",
    "rfc3339",
    "sign_approval_unchecked",
    "sign_on_approval",
    "terms_object",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _guarded(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn a lookup into a malformed record into this package's error (fail closed).

    The helpers read nested members of records that another party wrote; a member that is
    missing or of another type is ``binding_input_invalid``, never a ``KeyError``.
    """

    @functools.wraps(fn)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise BindingError(
                "binding_input_invalid",
                f"{fn.__name__}: a record is not in the profile's shape ({type(exc).__name__}: "
                f"{str(exc)[:80]})",
                reason="shape",
                link="input",
            ) from None
        except (parley.ParleyError, vxp.VxpError, handoff.HandoffError, pxp.PxpError) as exc:
            raise BindingError(
                "binding_input_invalid",
                f"{fn.__name__}: a record is refused by its own protocol: {exc}",
                reason=str(getattr(exc, "reason", None) or getattr(exc, "code", "invalid")),
                link="input",
            ) from None

    return guarded


LATE_MARGIN = 30
"""Seconds before ``consent.expires`` after which the principal's side signs nothing."""
READ_BACK_TERMS = ("amount", "currency", "item")
"""The members of T the shop reads back after executing (VXP ``read_back_terms``)."""


def _seconds(now: object) -> int:
    """``now`` as whole Unix seconds: an ``int``, or an aware ``datetime`` (rounded down).

    ``now`` is the caller's clock, so anything else (a naive ``datetime``, a float, a
    string, a bool) is :class:`ppbind.BindingUsageError` ``binding_argument_invalid``.
    """
    if isinstance(now, datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise _argument("now is a naive datetime; pass an aware one or Unix seconds", "now")
        return math.floor(now.timestamp())
    if type(now) is not int:
        raise _argument(f"now is Unix seconds or an aware datetime, not {_kind(now)}", "now")
    return now


def _person(key: object) -> PersonKey:
    if not isinstance(key, PersonKey):
        raise _argument(f"key is the principal's PersonKey, not {_kind(key)}", "key")
    return key


def _argument(message: str, reason: str) -> BindingError:
    """The caller's own argument is wrong: a usage error."""
    return BindingError("binding_argument_invalid", message, reason=reason)


def _kind(value: object) -> str:
    return type(value).__name__


def rfc3339(seconds: int) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` of a Unix time (the Decision's ``due``).

    ``seconds`` comes from a record (a consent's ``expires``): anything but an integer from
    0 to 253402300799 (year 9999) is ``binding_input_invalid``.
    """
    if type(seconds) is not int or not 0 <= seconds <= 253_402_300_799:
        raise BindingError(
            "binding_input_invalid",
            "a time in a record is integer Unix seconds from 0 to the year 9999",
            reason="seconds",
            link="input",
        )
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def proposal_expires(now: int | datetime, ttl: int = 600) -> int:
    """When a Parley proposal made at ``now`` with ``ttl`` expires (the runtime's rule).

    ``now`` is Unix seconds or an aware ``datetime``; a naive one is
    ``binding_argument_invalid`` (a usage error), as is a ``ttl`` that is not an ``int``.
    """
    if type(ttl) is not int:
        raise _argument(f"ttl is integer seconds, not {_kind(ttl)}", "ttl")
    return math.ceil((_seconds(now) + ttl) / 60) * 60


@_guarded
def terms_object(
    *,
    agreement: str,
    principal: str,
    client: str,
    service: str,
    capability: str,
    machine: MachineTerms,
    expires: int,
) -> dict[str, Any]:
    """The VXP terms object T the shop signs per proposal (``terms_digest`` = its JCS digest)."""
    return {
        "profile": PROFILE,
        "agreement": agreement,
        "principal": principal,
        "client": client,
        "service": service,
        "capability": capability,
        "item": machine.item,
        "amount": machine.amount,
        "currency": machine.currency,
        "expires": expires,
    }


@_guarded
def release_object(*, service: str, proposal: str, hash: str, grant: str) -> dict[str, Any]:
    """The release object R behind the VXP execution's ``release`` (``grant`` is the token)."""
    return {
        "profile": PROFILE,
        "service": service,
        "proposal": proposal,
        "hash": hash,
        "grant": parley.decode_grant(grant).id,
    }


def _mismatch(code: str, message: str, reason: str, link: str) -> BindingError:
    return BindingError(code, message, reason=reason, link=link)


@_guarded
def check_conforming(proposal: Mapping[str, Any], machine: MachineTerms, capability: str) -> None:
    """Refuse a Parley proposal that is not the agreed purchase (§4.2).

    Its ``capability`` must be ``capability``, its ``cost`` exactly the agreed price, and
    one effect must target ``item/<item>``. Raises ``binding_consent_mismatch``
    (``not_conforming``).
    """
    effects = proposal.get("effects")
    targets = (
        {e.get("target") for e in effects if isinstance(e, Mapping)}
        if isinstance(effects, list)
        else set()
    )
    if proposal.get("capability") != capability:
        member = "capability"
    elif proposal.get("cost") != {"amount": machine.amount, "currency": machine.currency}:
        member = "cost"
    elif f"item/{machine.item}" not in targets:
        member = "effects"
    else:
        return
    raise _mismatch(
        "binding_consent_mismatch",
        f"the proposal is not the agreed purchase ({member})",
        member,
        "decision->parley",
    )


@_guarded
def decision_terms(
    *,
    proposal: Mapping[str, Any],
    service: str,
    capability: str,
    principal: str,
    agent: str,
    brief: Mapping[str, Any],
    ledger_head: str,
) -> dict[str, Any]:
    """The terms of the Handoff Decision an agent raises from a Parley consent request.

    ``proposal`` is the proposal as received (with ``data`` holding the shop's VXP
    statements), ``brief`` the PXP decision brief of the agreement, ``agent`` the agent's
    Parley key. Options ``approve``/``reject`` (assumed ``reject``), ``due`` from the
    consent's expiry, the proposal hash in ``x_binding.parley``.
    """
    agreement = brief.get("agreement")
    if not isinstance(agreement, Mapping):
        raise _mismatch(
            "binding_terms_unreadable", "the brief holds no agreement", "no_agreement", "pxp"
        )
    terms = agreement.get("terms")
    machine = read_terms(terms)
    check_conforming(proposal, machine, capability)
    shown = {k: v for k, v in proposal.items() if k != "data"}
    consent = parley.consent_request(shown, service=service, principal=principal)
    data = proposal.get("data")
    x_vxp = data.get("x_binding", {}).get("vxp") if isinstance(data, Mapping) else None
    if not isinstance(x_vxp, Mapping):
        raise _mismatch(
            "binding_consent_mismatch",
            "the proposal's data does not carry the shop's VXP statements",
            "data",
            "parley->vxp",
        )
    price = price_text(machine.amount, machine.currency)
    due = rfc3339(consent["expires"])
    return {
        "text": f"Buy {machine.item} from {service} for {price}?",
        "options": [
            {"id": "approve", "text": f"Buy it: {consent['summary']}, {price}"},
            {"id": "reject", "text": "Do not buy it"},
        ],
        "assumption": f"Nothing is bought until you approve; the offer lapses at {due}.",
        "assumed_option": "reject",
        "due": due,
        "x_binding": {
            "profile": PROFILE,
            "principal": principal,
            "agent": agent,
            "terms": machine.to_json(),
            "pxp": {
                "proposal_hash": agreement.get("proposal_hash"),
                "ledger_head": ledger_head,
                "brief": dict(brief),
            },
            "parley": {"consent": consent, "proposal": shown},
            "vxp": dict(x_vxp),
        },
    }


def is_late(consent: Mapping[str, Any], now: int | datetime) -> bool:
    """Whether it is too late to sign for ``consent`` at ``now`` (``expires − 30`` or later).

    ``now`` is Unix seconds or an aware ``datetime`` (a naive one is
    ``binding_argument_invalid``); a consent without an integer ``expires`` is
    ``binding_input_invalid``. An agent that sees a late answer does not commit: it sends a
    fresh INTENT with the same params and amends the Decision (docs/spec/bindings.md §6).
    """
    at = _seconds(now)
    expires = consent.get("expires") if isinstance(consent, Mapping) else None
    if type(expires) is not int:
        raise BindingError(
            "binding_input_invalid",
            "the consent request has no integer expires",
            reason="expires",
            link="input",
        )
    return at >= expires - LATE_MARGIN


def _binding(terms: Mapping[str, Any]) -> Mapping[str, Any]:
    x = terms.get("x_binding")
    if not isinstance(x, Mapping) or x.get("profile") != PROFILE:
        raise BindingError(
            "binding_input_invalid",
            f"the decision's terms carry no {PROFILE} x_binding",
            reason="x_binding",
            link="decision",
        )
    return x


def _consistent(x: Mapping[str, Any]) -> None:
    """Her side's own check before signing: the decision says what the agreement says.

    The machine terms are the brief's agreed terms, the cited agreement hash is theirs, and
    the decided proposal is the agreed purchase. Nothing is signed otherwise.
    """
    agreed = x["pxp"]["brief"]["agreement"]["terms"]
    machine = read_terms(agreed)
    if x["pxp"]["proposal_hash"] != pxp.proposal_hash(agreed):
        raise BindingError(
            "binding_agreement_mismatch",
            "the decision cites another PXP agreement than its brief's",
            reason="proposal_hash",
            link="pxp->decision",
        )
    if x["terms"] != machine.to_json():
        raise BindingError(
            "binding_terms_not_agreed",
            "the decision's machine terms are not the agreed terms",
            reason="terms",
            link="pxp->decision",
        )
    proposal = x["parley"]["proposal"]
    check_conforming(proposal, machine, proposal["capability"])


def _approved(settlement: Mapping[str, Any]) -> None:
    if settlement.get("type") != "settled" or settlement.get("outcome") != "approve":
        raise BindingError(
            "binding_not_approved",
            "the principal's settlement is not an approval",
            link="decision",
        )


def consent_grant(
    key: PersonKey,
    settlement: Mapping[str, Any],
    terms: Mapping[str, Any],
    *,
    now: int | datetime,
) -> str:
    """Mint the consent grant C from an ``approve`` settlement of the Decision (§5.3).

    ``terms`` are the decided terms (the need at the settlement's ``terms_rev``). The grant's
    caveats are the five of Parley's consent plus a spend cap of the agreed price; its
    ``nonce`` is the settlement's record digest. Refused: a settlement that is not
    ``approve`` (``binding_not_approved``), a key that is not the consent's principal or a
    consent that is not the decided proposal's (``binding_consent_mismatch``), and
    ``now`` at or after ``consent.expires − 30`` (``binding_late``). ``now`` is Unix
    seconds or an aware ``datetime``; a naive one, or a ``key`` that is not a
    :class:`PersonKey`, is ``binding_argument_invalid`` (a usage error).
    """
    return _consent_grant(_person(key), settlement, terms, _seconds(now))


@_guarded
def _consent_grant(
    key: PersonKey, settlement: Mapping[str, Any], terms: Mapping[str, Any], now: int
) -> str:
    _approved(settlement)
    x = _binding(terms)
    _consistent(x)
    consent = x["parley"]["consent"]
    again = parley.consent_request(
        x["parley"]["proposal"], service=consent["service"], principal=consent["principal"]
    )
    if again != consent:
        raise _mismatch(
            "binding_consent_mismatch",
            "the consent request is not the one the decided proposal gives",
            "consent",
            "decision->parley",
        )
    if not same_key(key.public, consent["principal"]):
        raise _mismatch(
            "binding_consent_mismatch",
            "this key is not the consent's principal",
            "principal",
            "decision->parley",
        )
    if is_late(consent, now):
        raise BindingError(
            "binding_late",
            "the offer lapses within 30 s: sign nothing; the agent asks for a fresh offer",
            link="decision->parley",
        )
    m = x["terms"]
    caveats = [
        *parley.grants.consent_caveats(consent),
        {"spend": {"max": m["amount"], "currency": m["currency"]}},
    ]
    return parley.mint_grant(
        key.parley, x["agent"], caveats, iat=now, nonce=record_digest(settlement)
    )


def approval_for(key: PersonKey, terms: Mapping[str, Any]) -> dict[str, Any]:
    """Sign the VXP approval of the decided terms: ``{"user_key", "signature"}`` (§5.3).

    Her side rebuilds T from what she was shown and refuses (``binding_proof_terms_mismatch``)
    when the shop's terms statement signs another ``terms_digest``; ``signature`` is the
    raw Ed25519 signature (base64url) over :func:`vxp.statements.approval_signing_input`.
    """
    return _approval_for(_person(key), terms)


@_guarded
def _approval_for(key: PersonKey, terms: Mapping[str, Any]) -> dict[str, Any]:
    x = _binding(terms)
    _consistent(x)
    request_body = statement_body(x["vxp"]["request"])
    terms_body = statement_body(x["vxp"]["terms"])
    proposal = x["parley"]["proposal"]
    t = terms_object(
        agreement=x["pxp"]["proposal_hash"],
        principal=x["principal"],
        client=x["agent"],
        service=x["parley"]["consent"]["service"],
        capability=proposal["capability"],
        machine=read_terms(x["pxp"]["brief"]["agreement"]["terms"]),
        expires=proposal["expires"],
    )
    if (
        terms_body.get("terms_digest") != vxp.statements.digest_of(t)
        or request_body.get("client_id") != x["agent"]
    ):
        raise _mismatch(
            "binding_proof_terms_mismatch",
            "the shop's terms statement does not sign the terms she was shown",
            "terms_digest",
            "parley->vxp",
        )
    return _sign_approval(key, x["vxp"]["request"], x["vxp"]["terms"])


def sign_approval_unchecked(key: PersonKey, request: str, terms: str) -> dict[str, Any]:
    """Sign the VXP approval of the ``terms`` statement without rebuilding T first.

    :func:`approval_for` is what a principal's side calls; this lower step exists for
    tests and vectors that play an attacker holding her key.
    """
    return _sign_approval(_person(key), request, terms)


@_guarded
def _sign_approval(key: PersonKey, request: str, terms: str) -> dict[str, Any]:
    request_body = statement_body(request)
    terms_body = statement_body(terms)
    payload = vxp.statements.approval_payload(
        request_body["request_digest"],
        terms_body["revision"],
        terms_body["terms_digest"],
        statement_digest(terms),
    )
    user_key = key.public_jwk
    signature = key.sign(vxp.statements.approval_signing_input(user_key, payload))
    return {"user_key": user_key, "signature": vxp.codec.b64url_encode(signature)}


def sign_on_approval(
    key: PersonKey,
    settlement: Mapping[str, Any],
    terms: Mapping[str, Any],
    *,
    now: int | datetime,
) -> dict[str, Any]:
    """On one confirmation, both signatures: ``{"grant": C, "vxp_approval": {...}}``.

    ``now`` is Unix seconds or an aware ``datetime`` (a naive one is
    ``binding_argument_invalid``), as for :func:`consent_grant`.
    """
    grant = consent_grant(key, settlement, terms, now=now)
    return {"grant": grant, "vxp_approval": approval_for(key, terms)}


def commit_binding(vxp_approval: Mapping[str, Any]) -> dict[str, Any]:
    """The ``x_binding`` member an agent adds to its COMMIT frame (unknown members ignored).

    ``vxp_approval`` is the object :func:`approval_for` returned; anything but an object is
    ``binding_input_invalid``.
    """
    if not isinstance(vxp_approval, Mapping):
        raise BindingError(
            "binding_input_invalid",
            "the VXP approval is an object {user_key, signature}",
            reason="vxp_approval",
            link="input",
        )
    return {"profile": PROFILE, "vxp_approval": dict(vxp_approval)}


@_guarded
def act_terms(
    *,
    machine: MachineTerms,
    text: str,
    decision: Mapping[str, Any],
    settlement: Mapping[str, Any],
    service: str,
    proposal: Mapping[str, Any],
    receipt: Mapping[str, Any],
    package: Mapping[str, Any],
) -> dict[str, Any]:
    """The terms of the Act an agent raises after a verified proof (§5.6).

    ``decision`` is ``{"project", "key"}`` of the Decision; ``package`` the VXP package the
    agent verified (its statement count and last statement digest are recorded).
    """
    statements = package["statements"]
    return {
        "text": text,
        "x_binding": {
            "profile": PROFILE,
            "item": machine.item,
            "decision": {
                "project": decision["project"],
                "key": decision["key"],
                "settlement": record_digest(settlement),
            },
            "parley": {
                "service": service,
                "proposal": proposal["id"],
                "hash": proposal["hash"],
                "receipt": receipt["id"],
            },
            "vxp": {
                "company": package["company"],
                "request_id": package["op"]["id"],
                "statements": len(statements),
                "last": statement_digest(statements[-1]),
            },
        },
    }


@_guarded
def note_from_receipt(
    registry: handoff.Registry,
    item: handoff.ItemId,
    receipt: Mapping[str, Any],
    *,
    by: str,
    ts: str,
    record_id: str | None = None,
) -> dict[str, Any]:
    """A Handoff ``note`` on the Decision saying what was bought, from a Parley receipt.

    The note carries a top-level ``x_binding`` with the receipt's id, proposal, time and
    cost (unknown record members are kept); it changes no register.
    """
    cost = receipt.get("cost") or {}
    amount = cost.get("amount")
    currency = cost.get("currency")
    price = (
        price_text(amount, currency)
        if isinstance(currency, str) and type(amount) is int
        else "no cost"
    )
    what = receipt.get("summary", receipt.get("proposal"))
    text = f"Bought: {what} (receipt {receipt['id']}, {price})"
    note = handoff.make_note(registry, item, text, by=by, ts=ts, record_id=record_id)
    note["x_binding"] = {
        "profile": PROFILE,
        "receipt": {
            "id": receipt["id"],
            "proposal": receipt.get("proposal"),
            "at": receipt.get("at"),
            "cost": receipt.get("cost"),
        },
    }
    return note
