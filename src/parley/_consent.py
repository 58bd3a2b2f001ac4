"""Consent (SPEC.md section 6.6): the request a service makes and the grant a principal signs.

A service that would authorize a ``COMMIT`` except for a ``per``, ``spend`` or ``risk``
caveat answers ``consent_required`` with a :func:`consent_request`. The principal, after
seeing it, signs a consent grant (:func:`mint_consent_grant`): a root grant to the agent with
exactly the five scoping caveats of :func:`consent_caveats`, so it authorizes one
``COMMIT`` of one proposal at one service and nothing else.

On the agent side, :func:`consent_for_shown` builds the consent from the proposal the agent
itself showed and received from that service, and refuses a request that names another
service, capability, proposal or hash (a service must not get a human to sign consent for a
different proposal behind a friendly summary).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from ._canonical import MAX_SAFE_INTEGER, proposal_hash
from ._grants import mint_grant
from ._keys import Key, parse_public_key
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = [
    "CONSENT_FIELDS",
    "consent_caveats",
    "consent_for_shown",
    "consent_request",
    "mint_consent_grant",
]

CONSENT_FIELDS = ("proposal", "hash", "service", "capability", "principal", "summary", "expires")
"""The members of a ``consent`` object, in the order of SPEC.md section 6.6."""


def _bad(message: str, reason: str = "bad_consent") -> ParleyError:
    return ParleyError("invalid_params", message, reason=reason)


def _checked_proposal(proposal: object) -> tuple[dict[str, Any], str]:
    if isinstance(proposal, Mapping) and not isinstance(proposal, dict):
        proposal = dict(proposal)
    if not isinstance(proposal, dict):
        raise _bad("a proposal must be a JSON object")
    digest = proposal_hash(proposal)
    if "hash" in proposal and proposal["hash"] != digest:
        raise ParleyError(
            "conflict",
            "the proposal's hash does not match its content",
            reason="hash_mismatch",
        )
    for name in ("id", "capability", "summary"):
        if not isinstance(proposal.get(name), str):
            raise _bad(f"the proposal needs a string {name}")
    expires = proposal.get("expires")
    if type(expires) is not int or abs(expires) > MAX_SAFE_INTEGER:
        raise _bad("the proposal needs an integer expires")
    return proposal, digest


def consent_request(proposal: Mapping[str, Any], *, service: str, principal: str) -> dict[str, Any]:
    """Return the ``consent`` object a service sends with ``consent_required``.

    ``principal`` is the key the consent must come from (the principal of the grant that
    fell short). The hash is recomputed from the proposal; a proposal whose ``hash`` field
    disagrees with its content is refused (``conflict``/``hash_mismatch``).
    """
    checked, digest = _checked_proposal(proposal)
    if not isinstance(service, str) or not service:
        raise _bad("the service id must be a non-empty string")
    parse_public_key(principal)
    return {
        "proposal": checked["id"],
        "hash": digest,
        "service": service,
        "capability": checked["capability"],
        "principal": principal,
        "summary": checked["summary"],
        "expires": checked["expires"],
    }


def _checked_consent(consent: object) -> dict[str, Any]:
    if isinstance(consent, Mapping) and not isinstance(consent, dict):
        consent = dict(consent)
    if not isinstance(consent, dict):
        raise _bad("a consent is a JSON object")
    for name in CONSENT_FIELDS:
        if name not in consent:
            raise _bad(f"the consent has no {name}")
    for name in ("proposal", "hash", "service", "capability", "summary"):
        if not isinstance(consent[name], str) or not consent[name]:
            raise _bad(f"consent.{name} must be a non-empty string")
    if type(consent["expires"]) is not int or abs(consent["expires"]) > MAX_SAFE_INTEGER:
        raise _bad("consent.expires must be an integer")
    parse_public_key(consent["principal"])
    return consent


def consent_caveats(consent: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return the five scoping caveats of a consent grant, in the order of section 6.6.

    ``[{"svc": [service]}, {"verbs": ["COMMIT"]}, {"can": [capability]}, {"only": hash},
    {"exp": expires}]``.
    """
    checked = _checked_consent(consent)
    return [
        {"svc": [checked["service"]]},
        {"verbs": ["COMMIT"]},
        {"can": [checked["capability"]]},
        {"only": checked["hash"]},
        {"exp": checked["expires"]},
    ]


def mint_consent_grant(
    principal: Key,
    consent: Mapping[str, Any],
    agent: str,
    *,
    iat: int | datetime,
    nonce: str | None = None,
) -> str:
    """Sign the consent grant for ``consent`` with the principal's key, to holder ``agent``.

    This is the principal's act: run it where the principal key lives (``parley approve``
    asks for an interactive confirmation first). Refuses a consent addressed to another
    principal. ``iat`` is integer epoch seconds or an aware :class:`~datetime.datetime`.
    """
    if not isinstance(principal, Key):
        raise ParleyError("bad_argument", "a consent grant is signed by a Key", reason="bad_key")
    issued = epoch_seconds(iat, "iat")
    checked = _checked_consent(consent)
    if principal.public != checked["principal"]:
        raise ParleyError(
            "invalid_params",
            "the consent asks for another principal's approval than this key's",
            reason="principal_mismatch",
        )
    return mint_grant(principal, agent, consent_caveats(checked), iat=issued, nonce=nonce)


def consent_for_shown(
    shown: Mapping[str, Any],
    *,
    service: str,
    request: object,
    principals: Collection[str] | None = None,
) -> dict[str, Any]:
    """Agent side: return the consent to show the principal, built from the shown proposal.

    ``shown`` is the proposal exactly as the agent received it from ``service`` (the id it
    connected to) and showed; ``request`` is the service's ``consent`` object. The result is
    rebuilt from ``shown``, never copied from ``request``; a request whose service,
    proposal, capability or hash differs is refused with ``conflict``/``consent_mismatch``.
    ``principals``, when given, are the principals of the grants the agent presented: a
    request naming another principal (a service steering the approval to someone else) is
    refused the same way.
    """
    checked, digest = _checked_proposal(shown)
    asked = _checked_consent(request)
    if principals is not None:
        if isinstance(principals, (str, bytes)) or not isinstance(principals, Collection):
            raise ParleyError(
                "bad_argument",
                "principals must be a collection of public keys",
                reason="bad_argument",
            )
        if asked["principal"] not in principals:
            raise ParleyError(
                "conflict",
                "the consent request names a principal none of the presented grants has",
                reason="consent_mismatch",
            )
    expected = {
        "service": service,
        "proposal": checked["id"],
        "capability": checked["capability"],
        "hash": digest,
    }
    for name, value in expected.items():
        if asked[name] != value:
            raise ParleyError(
                "conflict",
                f"the consent request's {name} is not the {name} of the proposal shown",
                reason="consent_mismatch",
            )
    return consent_request(checked, service=service, principal=asked["principal"])
