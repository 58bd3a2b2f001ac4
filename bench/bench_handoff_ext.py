"""Handoff extensions: proof verification and the Markdown binding, as ratios to baselines.

- verify_proof (parse header, find the key by thumbprint, JCS the record, verify) against a
  bare ``cryptography`` verify of the same signing input with an already-parsed key;
- sync_state_document of a 500-act STATE.md against adding the same raised records to a
  registry directly (the fold it cannot avoid).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from joserfc.jwk import ECKey, OKPKey

import handoff

ROLES = handoff.Roles.from_json(
    {
        "principal": "alice",
        "principal_side": ["alice-desk"],
        "requesters": {"web": ["registrar"]},
        "roles": {"registrar": ["registrar"]},
    }
)
NOW = "2026-11-30T09:00:00Z"


def _timed(fn: Callable[[], object], rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def bench_proofs() -> None:
    ed = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(32))
    p256 = ec.derive_private_key(7, ec.SECP256R1())
    keys = {
        "Ed25519": dict(OKPKey.import_key(ed).as_dict(private=True)),
        "ES256": dict(ECKey.import_key(p256).as_dict(private=True)),
    }
    jwks = handoff.public_jwks(*keys.values())
    record = {
        "ph": "0.3",
        "ext": "acts/0.3",
        "id": "s1",
        "type": "settled",
        "origin": "principal",
        "by": "alice-desk",
        "key": "k1",
        "project": "web",
        "ts": NOW,
        "terms_rev": 1,
        "outcome": "done",
        "authority": {"kind": "principal", "decider": "alice"},
        "evidence": {"presented": "sha-256:" + "ab" * 32},
    }
    for alg, jwk in keys.items():
        signed = handoff.attach_proof(record, jwk)
        head, _, sig = signed["evidence"]["proof"].split(".")
        payload = base64.urlsafe_b64encode(handoff.digests.signing_input(signed)).rstrip(b"=")
        message = head.encode() + b"." + payload
        raw = _unb64(sig)
        if alg == "Ed25519":
            public = ed.public_key()

            def baseline(
                public: ed25519.Ed25519PublicKey = public,
                raw: bytes = raw,
                message: bytes = message,
            ) -> None:
                public.verify(raw, message)
        else:
            from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

            der = encode_dss_signature(int.from_bytes(raw[:32]), int.from_bytes(raw[32:]))
            ec_public = p256.public_key()

            def baseline(
                public: ec.EllipticCurvePublicKey = ec_public,
                der: bytes = der,
                message: bytes = message,
            ) -> None:
                public.verify(der, message, ec.ECDSA(hashes.SHA256()))

        rounds = 400
        base = _timed(baseline, rounds)
        ours = _timed(lambda s=signed: handoff.verify_proof(s, jwks), rounds)
        print(
            f"verify_proof {alg}: {ours * 1e6:8.1f} us vs bare verify {base * 1e6:8.1f} us"
            f"  ratio {ours / base:5.2f}x"
        )


def bench_markdown(acts: int = 500) -> None:
    document = "# Project\n\n## Acts\n\n" + "".join(f"- [ ] Pay invoice {i}\n" for i in range(acts))

    def sync() -> None:
        registry = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
        handoff.markdown.sync_state_document(
            document, registry, project="web", registrar="registrar", now=NOW
        )

    registry = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    records = handoff.markdown.read_state_document(
        document, registry, project="web", registrar="registrar", now=NOW
    )

    def add_only() -> None:
        fresh = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
        fresh.add_many(records)
        fresh.states()

    base = _timed(add_only, 5)
    ours = _timed(sync, 5)
    print(
        f"md sync of {acts} new acts: {ours * 1e3:7.1f} ms vs adding their records "
        f"{base * 1e3:7.1f} ms  ratio {ours / base:5.2f}x"
    )


def main() -> None:
    bench_proofs()
    bench_markdown()


if __name__ == "__main__":
    main()
