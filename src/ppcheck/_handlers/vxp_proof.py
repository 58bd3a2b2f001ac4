"""Vector operations of VXP Proof: issue an operation, verify a package, fetch a proof."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import vxp

from .._registry import handler
from .._runner import RunnerError


def _time(value: object, where: str) -> datetime:
    if not isinstance(value, str) or not value.endswith("Z"):
        raise RunnerError(f"the input's {where} is not an RFC 3339 UTC time")
    try:
        return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)
    except ValueError as exc:
        raise RunnerError(f"the input's {where} is not a time") from exc


def _rng(seed: str) -> Callable[[int], bytes]:
    """Draw ``n`` = SHA-256(UTF-8(seed + "/" + counter)) cut to the size asked (counter from 1)."""
    counter = [0]

    def draw(size: int) -> bytes:
        counter[0] += 1
        return hashlib.sha256(f"{seed}/{counter[0]}".encode()).digest()[:size]

    return draw


def _call(builder: vxp.OperationBuilder, step: dict[str, Any]) -> None:
    args = dict(step)
    name = args.pop("step", None)
    now = _time(args.pop("now", None), f"step {name} now")
    if name == "request":
        builder.request(
            channel=args["channel"], client_id=args["client_id"], request=args["request"], now=now
        )
    elif name == "terms":
        builder.terms(
            capability=args["capability"],
            terms=args["terms"],
            expires_at=_time(args["expires_at"], "terms expires_at"),
            read_back_terms=args["read_back_terms"],
            user_approval_required=args.get("user_approval_required", True),
            company_review_required=args.get("company_review_required", False),
            requires=args.get("requires", []),
            now=now,
        )
    elif name == "counter":
        builder.counter(proposal=args["proposal"], now=now)
    elif name == "approve":
        builder.approve(now=now)
    elif name == "approve_signed":
        builder.approve_signed(user_key=args["user_key"], now=now)
    elif name == "approve_with_signature":
        signature = vxp.codec.b64url_decode(
            args["signature"], "step approve_with_signature signature"
        )
        builder.approve_with_signature(user_key=args["user_key"], signature=signature, now=now)
    elif name == "review":
        builder.review(decision=args["decision"], reviewer=args["reviewer"], now=now)
    elif name == "execute":
        builder.execute(release=args["release"], now=now)
    elif name == "read_back":
        builder.read_back(observed=args["observed"], personal=args.get("personal"), now=now)
    elif name == "outcome":
        builder.outcome(state=args["state"], result_summary=args["result_summary"], now=now)
    elif name == "correct":
        builder.correct(state=args["state"], fact=args["fact"], now=now)
    elif name == "revoke":
        builder.revoke(reason=args["reason"], now=now)
    else:
        raise RunnerError(f"the input names an unknown step {name!r}")


@handler("vxp.issue_operation")
def issue_operation(input_: dict[str, Any]) -> dict[str, Any]:
    """Walk the builder through ``steps``; answer the sealed package or the refusal."""
    keys = input_["keys"]
    builder = vxp.OperationBuilder(
        company=input_["company"],
        op_id=input_["op_id"],
        operator_key=keys["operator"],
        company_key=keys["company"],
        log=vxp.MerkleLog(input_["log_origin"]),
        rng=_rng(input_["salt_seed"]),
    )
    for step in input_["steps"]:
        _call(builder, step)
    return {"package": builder.package(log_key=keys["log"])}


@handler("vxp.verify_proof")
def verify_proof(input_: dict[str, Any]) -> dict[str, Any]:
    """Verify a package; answer the verdict (a failed one carries ``failure.code``)."""
    verdict = vxp.verify(
        input_["package"],
        input_["metadata"],
        input_["jwks"],
        live=input_.get("live"),
        now=_time(input_["now"], "now"),
        request_id=input_.get("request_id"),
        request=input_.get("request"),
        max_statements=input_.get("max_statements", vxp.statements.MAX_STATEMENTS),
    )
    out = verdict.to_json()
    if "failure" in out:
        out["failure"] = {k: v for k, v in out["failure"].items() if k != "message"}
    return out


@handler("vxp.fetch_proof")
def fetch_proof(input_: dict[str, Any]) -> dict[str, Any]:
    """Run a sequence of requests against one proof endpoint; answer every response."""
    endpoint = input_["endpoint"]
    tokens = {
        token: vxp.fetch.AccessToken(t["client_id"], t["jkt"], t["exp"])
        for token, t in endpoint["tokens"].items()
    }
    packages = {rid: (p["owner"], p["package"]) for rid, p in endpoint["packages"].items()}
    server = vxp.fetch.ProofEndpoint(
        base_url=endpoint["base_url"], tokens=tokens, packages=packages, window=endpoint["window"]
    )
    responses = []
    for r in input_["requests"]:
        answer = server.handle(method=r["method"], url=r["url"], headers=r["headers"], now=r["now"])
        out = answer.to_json()
        out["body"] = {k: v for k, v in out["body"].items() if k != "error_description"}
        responses.append(out)
    return {"responses": responses}
