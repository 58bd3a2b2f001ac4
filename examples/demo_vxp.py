"""VXP building blocks, end to end: an SD-JWT statement and the Merkle log that records it.

python examples/demo_vxp.py
"""

from __future__ import annotations

from joserfc.jwk import ECKey, OKPKey

import vxp

NOW = 1_800_000_000


def main() -> None:
    print("== SD-JWT (RFC 9901) ==")
    company = ECKey.generate_key("P-256")
    agent = ECKey.generate_key("P-256")
    claims = vxp.sdjwt.mark_disclosable(
        {
            "iss": "https://store.example",
            "iat": NOW,
            "exp": NOW + 3600,
            "pedido": "P-1042",
            "despacho_nuevo": "2026-10-28",
            "cliente": {"nombre": "Ada", "telefono": "+34 600 000 000"},
        },
        [["cliente"], ["cliente", "telefono"]],
    )
    token = vxp.issue_sd_jwt(claims, company, typ="vxp-stmt+sd-jwt", decoys=1, holder_key=agent)
    print(f"issued: {len(token.serialize())} characters, {len(token.disclosures)} disclosures")
    print(f"header kid = RFC 7638 thumbprint of the company key: {company.thumbprint()[:16]}...")

    shown = vxp.present_sd_jwt(
        token,
        disclose=[["cliente", "nombre"]],  # the name, but not the phone number beside it
        holder_key=agent,
        aud="https://verifier.example",
        nonce="nonce-7",
        iat=NOW + 5,
    )
    policy = vxp.KeyBinding(aud="https://verifier.example", nonce="nonce-7")
    result = vxp.verify_sd_jwt(
        shown, company, typ="vxp-stmt+sd-jwt", now=NOW + 10, key_binding=policy
    )
    print("the verifier sees:", result.claims["cliente"], "| order", result.claims["pedido"])

    tampered = shown.replace("~", "~" + token.disclosures[0].encoded + "~", 1)
    try:
        vxp.verify_sd_jwt(
            tampered, company, typ="vxp-stmt+sd-jwt", now=NOW + 10, key_binding=policy
        )
    except vxp.VxpError as exc:
        print("adding back the hidden phone number after binding ->", exc.code)

    print()
    print("== Merkle log (RFC 9162) ==")
    log_key = OKPKey.generate_key("Ed25519")
    witness_key = ECKey.generate_key("P-256")
    log = vxp.MerkleLog("log.store.example/vxp")
    index = log.append(token.jws.encode())
    log.extend([b"statement 2", b"statement 3"])
    witness = vxp.checkpoints.Witness(witness_key, {log.origin: log_key})
    first = witness.cosign(log.checkpoint(log_key), time=NOW)
    print(f"checkpoint {first.checkpoint.tree_size} signed by the log, cosigned by a witness")
    log.extend([b"statement 4", b"statement 5"])
    second = witness.cosign(log.checkpoint(log_key), proof=log.consistency_proof(3), time=NOW + 60)
    checkpoint = vxp.checkpoints.verify_checkpoint(second.to_json(), log_key, origin=log.origin)
    vxp.checkpoints.verify_cosignatures(second, [witness_key], quorum=1)
    proof = log.inclusion_proof(index, checkpoint.tree_size)
    vxp.merkle.verify_inclusion(
        vxp.merkle.leaf_hash(token.jws.encode()),
        index,
        checkpoint.tree_size,
        proof,
        checkpoint.root,
    )
    print(
        f"the statement is leaf {index} of {checkpoint.tree_size}: "
        f"inclusion proof of {len(proof)} hashes verifies against the cosigned root"
    )
    fork = vxp.MerkleLog(log.origin)
    fork.extend([b"statement 1 (rewritten)"] + [f"statement {i}".encode() for i in range(2, 7)])
    try:
        witness.cosign(fork.checkpoint(log_key), proof=fork.consistency_proof(5), time=NOW + 120)
    except vxp.VxpError as exc:
        print("a rewritten history cannot get the witness's cosignature ->", exc.code)


if __name__ == "__main__":
    main()
