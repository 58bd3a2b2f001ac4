"""Vector operations of Parley's authorization core: canonical JSON to grants and consent."""

from __future__ import annotations

from typing import Any

import parley

from .._registry import handler


def _seed(value: Any) -> parley.Key:
    return parley.key_from_seed(parley.wire.b64url_decode(value, what="seed"))


@handler("parley.canonical")
def canonical(input_: dict[str, Any]) -> dict[str, Any]:
    return {"canonical": parley.canonical(input_["value"])}


@handler("parley.proposal_hash")
def proposal_hash(input_: dict[str, Any]) -> dict[str, Any]:
    return {"hash": parley.proposal_hash(input_["proposal"])}


@handler("parley.b64url_decode")
def b64url_decode(input_: dict[str, Any]) -> dict[str, Any]:
    return {"hex": parley.wire.b64url_decode(input_["text"]).hex()}


@handler("parley.public_key")
def public_key(input_: dict[str, Any]) -> dict[str, Any]:
    return {"public": _seed(input_["seed"]).public}


@handler("parley.proof_target")
def proof_target(input_: dict[str, Any]) -> dict[str, Any]:
    target = parley.grants.proof_target(
        input_["verb"],
        capability=input_.get("capability"),
        proposal_hash=input_.get("proposal_hash"),
        receipt=input_.get("receipt"),
        handle=input_.get("handle"),
        auto=input_.get("auto", False),
        frame_id=input_.get("frame_id"),
    )
    return {"target": target}


@handler("parley.proof_sign")
def proof_sign(input_: dict[str, Any]) -> dict[str, Any]:
    proof = parley.sign_proof(
        _seed(input_["seed"]),
        aud=input_["aud"],
        verb=input_["verb"],
        target=input_["target"],
        ts=input_["ts"],
    )
    return {"proof": proof}


@handler("parley.proof_verify")
def proof_verify(input_: dict[str, Any]) -> dict[str, Any]:
    key = parley.verify_proof(
        input_["proof"],
        aud=input_["aud"],
        verb=input_["verb"],
        target=input_["target"],
        now=input_["now"],
    )
    return {"key": key}


@handler("parley.grant_mint")
def grant_mint(input_: dict[str, Any]) -> dict[str, Any]:
    token = parley.mint_grant(
        _seed(input_["issuer_seed"]),
        input_["sub"],
        input_["caveats"],
        iat=input_["iat"],
        nonce=input_["nonce"],
    )
    grant = parley.decode_grant(token)
    return {"token": token, "grant": grant.id}


@handler("parley.grant_delegate")
def grant_delegate(input_: dict[str, Any]) -> dict[str, Any]:
    token = parley.delegate(
        input_["token"],
        _seed(input_["holder_seed"]),
        input_["sub"],
        input_["caveats"],
        iat=input_["iat"],
    )
    return {"token": token, "blocks": list(parley.decode_grant(token).block_ids)}


@handler("parley.grant_inspect")
def grant_inspect(input_: dict[str, Any]) -> dict[str, Any]:
    return dict(parley.inspect_grant(input_["token"]))


@handler("parley.grant_verify")
def grant_verify(input_: dict[str, Any]) -> dict[str, Any]:
    ctx = parley.GrantContext.from_json(input_["ctx"])
    result = parley.verify_grant(
        input_["tokens"], trusted=input_["trusted"], proof_key=input_["proof_key"], ctx=ctx
    )
    return result.as_json()


@handler("parley.consent_request")
def consent_request(input_: dict[str, Any]) -> dict[str, Any]:
    consent = parley.consent_request(
        input_["proposal"], service=input_["service"], principal=input_["principal"]
    )
    return {"consent": consent}


@handler("parley.consent_grant")
def consent_grant(input_: dict[str, Any]) -> dict[str, Any]:
    token = parley.mint_consent_grant(
        _seed(input_["principal_seed"]),
        input_["consent"],
        input_["agent"],
        iat=input_["iat"],
        nonce=input_["nonce"],
    )
    return {"token": token, "caveats": parley.decode_grant(token).blocks[0].raw_caveats}


@handler("parley.consent_check")
def consent_check(input_: dict[str, Any]) -> dict[str, Any]:
    consent = parley.grants.consent_for_shown(
        input_["shown"],
        service=input_["service"],
        request=input_["request"],
        principals=input_.get("principals"),
    )
    return {"consent": consent}


@handler("parley.spend_ledger")
def spend_ledger(input_: dict[str, Any]) -> dict[str, Any]:
    ledger = parley.stores.MemorySpendLedger()
    caps = [parley.grants.SpendCap(c["block"], c["max"], c["currency"]) for c in input_["caps"]]
    results: list[Any] = []
    for op in input_["ops"]:
        try:
            if op["op"] == "reserve":
                results.append(ledger.reserve(op["key"], caps, op["amount"], op["currency"]))
            elif op["op"] == "commit":
                ledger.commit(op["key"])
                results.append(None)
            else:
                results.append(ledger.release(op["key"]))
        except parley.ParleyError as exc:
            results.append({"code": exc.code, "reason": exc.reason})
    totals = ledger.totals([c.block for c in caps])
    return {"results": results, "totals": totals}
