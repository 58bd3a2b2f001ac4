"""Grant verification cost against the raw Ed25519 verifications it contains.

``verify_grant`` on a root grant does one Ed25519 verification, on a 3-block chain three;
everything else (base64url, JSON, canonical re-encoding, block ids, caveats) is overhead.
Both are timed in the same run, best of several rounds. Target: at most 1.3x.

``verify_grant`` remembers the decoding and caveat parsing of recently seen tokens (never
the signature checks), so two figures are printed: "warm" (the same token again, as a
client presenting its grant on every request) and "cold" (the cache is cleared before
every call, so each call decodes the token from scratch).

    python bench/bench_parley_grants.py [--rounds N] [--number N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import parley
from parley._grants import _prepare

NOW = 1790000000


def best_pair(
    first: Callable[[], object], second: Callable[[], object], number: int, rounds: int
) -> tuple[float, float]:
    """Best per-call microseconds of two functions, timed in alternating rounds.

    Alternating keeps both measured under the same machine load.
    """
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for fn, out in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number)
    return min(times[0]) * 1e6, min(times[1]) * 1e6


def chain(depth: int) -> tuple[str, parley.Key]:
    keys = [parley.key_from_seed(bytes([n + 1]) * 32) for n in range(depth + 1)]
    caveats = [
        {"svc": ["shop.example"]},
        {"verbs": ["ASK", "COMMIT"]},
        {"can": ["shop.*"]},
        {"exp": NOW + 3600},
        {"per": {"max": 5000, "currency": "USD"}},
        {"spend": {"max": 20000, "currency": "USD"}},
        {"risk": "medium"},
    ]
    token = parley.mint_grant(keys[0], keys[1].public, caveats, iat=NOW, nonce="bench")
    for n in range(1, depth):
        token = parley.delegate(token, keys[n], keys[n + 1].public, [{"exp": NOW + 600}], iat=NOW)
    return token, keys[depth]


def raw_verifications(token: str) -> Callable[[], None]:
    """The Ed25519 verifications inside ``token``, with keys and messages prepared."""
    grant = parley.decode_grant(token)
    signers = [grant.principal] + [b.sub for b in grant.blocks[:-1]]
    jobs = []
    for signer, block in zip(signers, grant.blocks, strict=True):
        key = Ed25519PublicKey.from_public_bytes(parley.keys.parse_public_key(signer))
        jobs.append(
            (key, parley.wire.b64url_decode(block.sig), parley.canonical(block.payload).encode())
        )

    def run() -> None:
        for key, sig, msg in jobs:
            key.verify(sig, msg)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()
    facts = parley.ProposalFacts("h", parley.grants.Cost(1250, "USD"), "low")
    trusted = [parley.key_from_seed(b"\x01" * 32).public]
    print("grant verification vs the raw Ed25519 verifications it contains (target <= 1.3x)")
    for label, blocks in (("root grant (1 block)", 1), ("3-block delegation", 3)):
        token, holder = chain(blocks)
        ctx = parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW, facts)

        def verify(
            token: str = token, holder: parley.Key = holder, ctx: parley.GrantContext = ctx
        ) -> None:
            result = parley.verify_grant([token], trusted=trusted, proof_key=holder.public, ctx=ctx)
            assert result.ok

        def verify_cold(verify: Callable[[], None] = verify) -> None:
            _prepare.cache_clear()  # a token never seen before (the clearing is timed too)
            verify()

        raw = raw_verifications(token)
        for kind, fn in (("warm", verify), ("cold", verify_cold)):
            base, full = best_pair(raw, fn, args.number, args.rounds)
            print(
                f"  {label:22s} {kind}  raw {base:7.1f} us  verify_grant {full:7.1f} us"
                f"  ratio {full / base:.2f}x"
            )


if __name__ == "__main__":
    main()
