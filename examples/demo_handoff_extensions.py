"""Acts and Decisions: an act and a decision travel from an agent to the principal and back.

An agent keeps a project's STATE.md; the registrar turns its new checkbox line into an act.
The agent also raises a decision. The principal side shows each item to the principal,
records exactly what was shown (its digest) and signs the settlement with the principal's
own key; an observer verifies everything. Run: python examples/demo_handoff_extensions.py
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from joserfc.jwk import OKPKey

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-desk"],
        "requesters": {"web": ["builder", "registrar"]},
        "roles": {"registrar": ["registrar"]},
    }
)
TS = "2026-11-30T09:00:00Z"


def principal_key() -> dict[str, Any]:
    """Alice's own Ed25519 key: it lives on her desk, never with an agent (fixed for the demo)."""
    private = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    return dict(OKPKey.import_key(private).as_dict(private=True))


def settle(
    registry: handoff.Registry,
    item: handoff.ItemId,
    outcome: str,
    key: dict[str, Any],
    rid: str,
) -> dict[str, Any]:
    """What the principal side does: present, record the digest, sign, check, add."""
    state = registry.state(item)
    assert state.terms is not None
    assert state.terms_rev is not None
    shown = handoff.evidence.presentation(
        ext=f"{item.ext}/0.3",
        project=item.project,
        key=item.key,
        terms_rev=state.terms_rev,
        terms=state.terms,
    )
    print(f"  shown to alice: {handoff.digests.canonical(shown).decode()[:88]}...")
    record = handoff.make_settlement(registry, item, outcome, by="alice-desk", ts=TS, record_id=rid)
    signed = handoff.attach_proof(record, key)
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(key), verifiable=True)
    handoff.check_principal_side_record(signed, registry, side)
    registry.add(signed)
    print(f"  alice settled {item.key} as {outcome!r}; proof {signed['evidence']['proof'][:24]}...")
    return signed


def main() -> None:
    """Walk an act and a decision from the agent to the principal and back."""
    key = principal_key()
    registry = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)

    print("1. The agent adds a line to STATE.md; the registrar raises an act.")
    document = "# Website\n\n## Acts\n\n- [ ] Pay the hosting invoice (120 EUR)\n"
    result = handoff.markdown.sync_state_document(
        document, registry, now=TS, project="web", registrar="registrar"
    )
    act_key = result.records[0]["key"]
    print(f"  records: {[r['type'] for r in result.records]} for key {act_key}")
    print("  " + result.document.strip().replace("\n", "\n  "))

    print("2. The agent raises a decision and proceeds on its working assumption.")
    registry.add(
        {
            "ph": "0.3",
            "ext": "decisions/0.3",
            "id": "d1",
            "type": "raised",
            "origin": "requester",
            "by": "builder",
            "key": "plan",
            "project": "web",
            "ts": TS,
            "terms_rev": 1,
            "terms": {
                "text": "Which hosting plan?",
                "options": [{"id": "small", "text": "Small"}, {"id": "large", "text": "Large"}],
                "assumption": "Build for the small plan.",
                "assumed_option": "small",
            },
        }
    )

    print("3. The principal side presents both; alice decides and signs.")
    settle(registry, handoff.ItemId("acts", "web", act_key), "done", key, "s1")
    settle(registry, handoff.ItemId("decisions", "web", "plan"), "large", key, "s2")

    print("4. Back at the project: the registrar rewrites STATE.md from state.")
    result = handoff.markdown.sync_state_document(
        result.document, registry, now=TS, project="web", registrar="registrar"
    )
    print("  " + result.document.strip().split("\n")[-2])

    print("5. The agent later changes the options: the answer is reported stale.")
    registry.add(
        {
            "ph": "0.3",
            "ext": "decisions/0.3",
            "id": "d2",
            "type": "amended",
            "origin": "requester",
            "by": "builder",
            "key": "plan",
            "project": "web",
            "ts": TS,
            "terms_rev": 2,
            "supersedes": ["d1"],
            "terms": {
                "text": "Which hosting plan?",
                "options": [{"id": "small", "text": "Small"}, {"id": "medium", "text": "Medium"}],
                "assumption": "Build for the small plan.",
            },
        }
    )

    print("6. An observer with alice's public keys checks everything:")
    for item in handoff.observe([], registry, jwks=handoff.public_jwks(key)):
        extra = f", option {item['option_status']}" if "option_status" in item else ""
        print(
            f"  {item['ext']}/{item['key']}: {item['state']} {item.get('outcome')!r}, "
            f"stale={item['stale']}, evidence={item['evidence']}{extra}"
        )


if __name__ == "__main__":
    main()
