"""Vector operations of the Handoff extensions: Acts, Decisions, evidence, Markdown, §12."""

from __future__ import annotations

from typing import Any

import handoff

from .._registry import handler


def _registry(input_: dict[str, Any], member: str = "held") -> handoff.Registry:
    roles = handoff.Roles.from_json(input_["roles"])
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    registry.add_many(input_.get(member, []))
    return registry


def _check(input_: dict[str, Any]) -> dict[str, Any]:
    roles = handoff.Roles.from_json(input_["roles"])
    verdict = handoff.check_record(input_["record"], roles=roles, extensions=handoff.EXTENSIONS)
    return verdict.to_json()


@handler("handoff.acts_check")
def acts_check(input_: dict[str, Any]) -> dict[str, Any]:
    """Admit one ``acts/0.3`` record (schemas, pair table, Acts rules, ownership)."""
    return _check(input_)


@handler("handoff.decisions_check")
def decisions_check(input_: dict[str, Any]) -> dict[str, Any]:
    """Admit one ``decisions/0.3`` record."""
    return _check(input_)


@handler("handoff.decisions_state")
def decisions_state(input_: dict[str, Any]) -> dict[str, Any]:
    """Fold decision records; report staleness and the chosen option's status."""
    registry = _registry(input_, "records")
    items = []
    for entry in handoff.observe([], registry):
        row = {
            "key": entry["key"],
            "state": entry["state"],
            "stale": entry["stale"],
            "need_withdrawn": entry["need_withdrawn"],
        }
        for name in ("outcome", "settled_terms_rev", "held_terms_rev", "option_status"):
            if name in entry:
                row[name] = entry[name]
        items.append(row)
    return {"items": items}


@handler("handoff.evidence_presented")
def evidence_presented(input_: dict[str, Any]) -> dict[str, Any]:
    """Build the §9 presentation and its ``evidence.presented`` digest."""
    shown = handoff.evidence.presentation(
        ext=input_["ext"],
        project=input_["project"],
        key=input_["key"],
        terms_rev=input_["terms_rev"],
        terms=input_["terms"],
        proposal=input_.get("proposal"),
    )
    return {
        "jcs": handoff.digests.canonical(shown).decode("utf-8"),
        "presented": handoff.digests.presented_digest(shown),
    }


@handler("handoff.evidence_sign")
def evidence_sign(input_: dict[str, Any]) -> dict[str, Any]:
    """Sign a settlement's detached JWS proof with the principal's private JWK."""
    signed = handoff.attach_proof(input_["record"], input_["key"])
    return {"record": signed}


@handler("handoff.evidence_verify")
def evidence_verify(input_: dict[str, Any]) -> dict[str, Any]:
    """Verify a settlement's proof against the principal side's JWKS."""
    algorithms = input_.get("algorithms", list(handoff.evidence.PROOF_ALGORITHMS))
    check = handoff.verify_proof(input_["record"], input_["jwks"], algorithms=algorithms)
    return {"kid": check.kid, "alg": check.alg}


@handler("handoff.md_read")
def md_read(input_: dict[str, Any]) -> dict[str, Any]:
    """Document before, records out: what a state document implies."""
    registry = _registry(input_, "records")
    out = handoff.markdown.read_state_document(
        input_["document"],
        registry,
        project=input_["project"],
        registrar=input_["registrar"],
        now=input_["now"],
        section=input_.get("section", "Acts"),
    )
    return {"records": out}


@handler("handoff.md_write")
def md_write(input_: dict[str, Any]) -> dict[str, Any]:
    """Records in, document after: a state document rendered from folded state."""
    registry = _registry(input_, "records")
    document = handoff.markdown.write_state_document(
        input_["document"],
        registry,
        project=input_["project"],
        registrar=input_["registrar"],
        section=input_.get("section", "Acts"),
    )
    return {"document": document}


@handler("handoff.conformance_requester")
def conformance_requester(input_: dict[str, Any]) -> dict[str, Any]:
    """Whether one record conforms to what a requester MUST do (§12)."""
    handoff.check_requester_record(input_["record"], _registry(input_))
    return {"conforms": True}


def _side(input_: dict[str, Any], verifiable: bool) -> handoff.PrincipalSide:
    side = handoff.PrincipalSide.from_json({**input_.get("side", {}), "verifiable": verifiable})
    return side


@handler("handoff.conformance_principal_side")
def conformance_principal_side(input_: dict[str, Any]) -> dict[str, Any]:
    """Whether one record conforms to what a principal side MUST do (§12)."""
    registry = _registry(input_)
    handoff.check_principal_side_record(input_["record"], registry, _side(input_, False))
    return {"conforms": True}


@handler("handoff.conformance_verifiable_principal_side")
def conformance_verifiable_principal_side(input_: dict[str, Any]) -> dict[str, Any]:
    """Whether one record conforms to what a verifiable principal side MUST do (§12)."""
    registry = _registry(input_)
    handoff.check_principal_side_record(input_["record"], registry, _side(input_, True))
    return {"conforms": True}


@handler("handoff.conformance_observer")
def conformance_observer(input_: dict[str, Any]) -> dict[str, Any]:
    """What an observer reports for a set of records (§12)."""
    roles = handoff.Roles.from_json(input_["roles"])
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    items = handoff.observe(input_["records"], registry, jwks=input_.get("jwks"))
    return {"items": items, "ignored": registry.ignored()}
