"""Parley authorization core, end to end: grants, delegation, proofs, consent, spend caps.

A principal (the human) grants an agent a scoped, capped grant. The agent delegates a
narrower one to a helper. A shop service checks the helper's proof of possession and the
grant. A purchase over the cap stops with consent_required, the principal approves that
one proposal, and the commit goes through. A retry is not counted twice.

    python examples/demo_parley.py
"""

from __future__ import annotations

import parley

NOW = 1790000000
SERVICE = "shop.example"


def main() -> None:
    """Walk through the authorization core with fixed keys and a fixed clock."""
    principal = parley.key_from_seed(bytes([1]) * 32)
    agent = parley.key_from_seed(bytes([2]) * 32)
    helper = parley.key_from_seed(bytes([3]) * 32)
    print("principal", principal.public)
    print("agent    ", agent.public)
    print("helper   ", helper.public)

    token = parley.mint_grant(
        principal,
        agent.public,
        [
            {"svc": [SERVICE]},
            {"can": ["shop.*"]},
            {"exp": NOW + 3600},
            {"per": {"max": 2000, "currency": "USD"}},
            {"spend": {"max": 5000, "currency": "USD"}},
            {"risk": "low"},
        ],
        iat=NOW,
        nonce="demo",
    )
    print("\n1. The principal grants the agent shop.* at shop.example, <= 20.00 USD per order,")
    print("   <= 50.00 USD in total, low risk, for one hour:", token[:40] + "...")

    narrower = parley.delegate(token, agent, helper.public, [{"can": ["shop.order"]}], iat=NOW)
    info = parley.inspect_grant(narrower)
    print("\n2. The agent delegates only shop.order to a helper. Effective caveats:")
    for caveat in info["caveats"]:
        print("     ", caveat)
    try:
        parley.delegate(token, agent, helper.public, [{"risk": "high"}], iat=NOW)
    except parley.ParleyError as exc:
        print("   A wider delegation is refused:", exc)

    ledger = parley.stores.MemorySpendLedger()

    def commit(proposal: dict[str, object], tokens: list[str], key: parley.Key) -> str:
        digest = parley.proposal_hash(proposal)
        proof = parley.sign_proof(key, aud=SERVICE, verb="COMMIT", target=digest, ts=NOW)
        holder = parley.verify_proof(proof, aud=SERVICE, verb="COMMIT", target=digest, now=NOW)
        pid = str(proposal["id"])
        # Spend already attributed to the blocks of the presented grants, without this
        # proposal's own reservation (so a retry is not refused by its own spend).
        blocks = [b for t in tokens for b in parley.decode_grant(t).block_ids]
        result = parley.verify_grant(
            tokens,
            trusted=[principal.public],
            proof_key=holder,
            ctx=parley.GrantContext(
                SERVICE,
                "COMMIT",
                str(proposal["capability"]),
                NOW,
                parley.ProposalFacts.from_json({**proposal, "hash": digest}),
                spent=ledger.totals(blocks, excluding=pid),
            ),
        )
        if not result.ok:
            return f"{result.code} ({result.reason}, need {list(result.need)})"
        amount = proposal["cost"]["amount"] if proposal["cost"] else 0  # type: ignore[index]
        new = ledger.reserve(pid, result.spend_caps, amount, "USD")
        ledger.commit(pid)
        return "committed" if new else "already committed (retry, not counted again)"

    def order(pid: str, cents: int) -> dict[str, object]:
        return {
            "id": pid,
            "capability": "shop.order",
            "summary": f"Order coffee beans for {cents / 100:.2f} USD",
            "effects": [{"op": "charge", "target": "card/4242", "to": cents}],
            "cost": {"amount": cents, "currency": "USD"},
            "risk": "low",
            "undo": {"window": 600},
            "expires": NOW + 600,
        }

    print("\n3. The helper commits orders with proofs of possession:")
    small = order("p_1", 1500)
    print("   p_1 15.00 USD:", commit(small, [narrower], helper))
    print("   p_1 again    :", commit(small, [narrower], helper))
    big = order("p_2", 4500)
    print("   p_2 45.00 USD:", commit(big, [narrower], helper))

    print("\n4. The service asks for consent; the agent checks it is about what it showed:")
    consent = parley.consent_request(big, service=SERVICE, principal=principal.public)
    shown = parley.grants.consent_for_shown(big, service=SERVICE, request=consent)
    forged = {**consent, "service": "bank.example"}
    try:
        parley.grants.consent_for_shown(big, service=SERVICE, request=forged)
    except parley.ParleyError as exc:
        print("   A consent request for another service is refused:", exc)
    approval = parley.mint_consent_grant(principal, shown, agent.public, iat=NOW)
    caveats = parley.decode_grant(approval).blocks[0].raw_caveats
    print("   The principal signs a one-shot consent grant:", caveats)
    print("   p_2 with consent:", commit(big, [approval, token], agent))
    other = order("p_3", 1800)
    print("   p_3 with only the consent grant:", commit(other, [approval], agent))
    print("   spent on the agent's grant so far:", ledger.totals([parley.decode_grant(token).id]))


if __name__ == "__main__":
    main()
