"""VXP Proof end to end: issue an operation, fetch its proof with DPoP, verify it, attack it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import vxp


def main() -> None:
    """Walk through one operation like the draft's, printing what each step shows."""
    print("== VXP Proof ==")
    op = vxp.demo_operation("succeeded")
    print(f"1. The operator and the company signed {len(op.package['statements'])} statements:")
    for i, statement in enumerate(op.package["statements"]):
        shown = statement.count("~") - 1
        print(f"   seq {i}: {len(statement):4} characters, {shown} disclosure(s)")

    print("2. The agent fetches its proof with a DPoP-bound token (RFC 9449).")
    agent_key = vxp.demo_key("agent-dpop")
    base = "https://store.example"
    url = f"{base}/v1/requests/{op.package['op']['id']}/proof"
    endpoint = vxp.fetch.ProofEndpoint(
        base_url=base,
        tokens={
            "tok": vxp.fetch.AccessToken("agent", vxp.key_thumbprint(agent_key), 2_000_000_000)
        },
        packages={op.package["op"]["id"]: ("agent", op.package)},
    )
    now = 1_900_000_000
    proof = vxp.fetch.make_dpop_proof(
        agent_key,
        method="GET",
        url=url,
        iat=now,
        jti="demo-1",
        access_token="tok",  # noqa: S106
    )
    answer = endpoint.handle(
        method="GET", url=url, headers={"Authorization": "DPoP tok", "DPoP": proof}, now=now
    )
    print(f"   GET {url} -> {answer.status}")
    replay = endpoint.handle(
        method="GET", url=url, headers={"Authorization": "DPoP tok", "DPoP": proof}, now=now
    )
    print(f"   the same DPoP proof again -> {replay.status} {replay.body['error']}")

    print("3. Anyone verifies it with the issuer's metadata and keys (live):")
    verdict = vxp.verify(answer.body, op.metadata, op.jwks, live=op.live, now=op.now)
    for name, value in verdict.to_json().items():
        print(f"   {name}: {value}")

    print("4. Tampering never passes (one Verifier per issuer, built once and reused):")
    verifier = vxp.Verifier(
        op.metadata, op.jwks, live_metadata=op.live["metadata"], live_jwks=op.live["jwks"]
    )
    live_log = {"checkpoint": op.live["checkpoint"], "consistency": op.live["consistency"]}
    attacks: dict[str, Callable[[dict[str, Any]], object]] = {
        "drop the approval": lambda p: (p["statements"].pop(2), p["log"]["entries"].pop(2)),
        "swap two statements": lambda p: p["statements"].reverse(),
        "change the capability": lambda p: p["op"].update(capability="pedido.cancelar"),
    }
    for label, attack in attacks.items():
        package = copy.deepcopy(op.package)
        attack(package)
        bad = verifier.verify(package, now=op.now, live_log=live_log)
        assert bad.failure is not None
        print(f"   {label}: valid={bad.valid} ({bad.failure['code']})")

    print("5. The builder refuses to sign a rule break (P4: only corrections after the outcome):")
    try:
        op.builder.execute(release={"again": True}, now=op.now + timedelta(seconds=1))
    except vxp.VxpError as exc:
        print(f"   refused: {exc}")
    print("VXP Proof demo: ok")


if __name__ == "__main__":
    main()
