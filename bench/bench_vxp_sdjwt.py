"""SD-JWT verification per token against two floors and the PyPI ``sd-jwt`` verifier.

Tokens with 0, 5 and 50 disclosures, each without key binding and with a KB-JWT by a
holder key not seen before (a fresh holder key per token, cycled through a pool). All
rows are measured in the same run, in interleaved rounds of CPU time (process time);
best and median are printed.

- floor 1: the raw ES256 verifications the token contains (issuer, and KB-JWT), with
  ``cryptography`` on keys parsed up front (the holder key parsed inside: a verifier
  cannot know it in advance);
- floor 2: floor 1 plus the decoding no verifier can skip: split, base64url of every
  part, JSON of header, payload and disclosures, SHA-256 of each disclosure;
- vxp: :func:`vxp.verify_sd_jwt` with the issuer's keys resolved once
  (:class:`vxp.IssuerKeys`, built by the caller); target <= 1.25x floor 2;
- sd-jwt: the ``sd-jwt`` package's ``SDJWTVerifier`` on the same tokens; target: vxp at
  least 2x faster.

Loading the issuer's key (``vxp.IssuerKeys`` from a JWK) is measured apart.

    python bench/bench_vxp_sdjwt.py [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import itertools
import json
import time
from collections.abc import Callable
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from joserfc.jwk import ECKey

import vxp

TYP = "example+sd-jwt"
NOW = 1_780_000_000
POOL = 64
ALGORITHM = ec.ECDSA(hashes.SHA256())


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _der(raw: bytes) -> bytes:
    return encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))


def _claims(n: int) -> dict[str, Any]:
    claims: dict[str, Any] = {"iss": "https://issuer.example", "iat": NOW - 60, "exp": NOW + 3600}
    for i in range(n):
        claims[f"claim_{i:02d}"] = vxp.Sd({"value": i, "note": "x" * 8})
    return claims


def _tokens(issuer: ECKey, n: int, bound: bool) -> list[str]:
    """``POOL`` presentations of one issuer's token shape, each with its own holder key."""
    out = []
    for _ in range(POOL):
        holder = ECKey.import_key(ec.generate_private_key(ec.SECP256R1()))
        token = vxp.issue_sd_jwt(_claims(n), issuer, typ=TYP, holder_key=holder)
        if bound:
            out.append(vxp.present_sd_jwt(token, holder_key=holder, aud="v", nonce="n", iat=NOW))
        else:
            out.append(token.serialize())
    return out


def _floor1(issuer_public: Any, tokens: list[str], bound: bool) -> Callable[[], None]:
    """Only the signatures (issuer key parsed up front, the holder key parsed inside)."""
    prepared = []
    for token in tokens:
        jws = token.split("~", 1)[0]
        h, p, s = jws.split(".")
        item: list[Any] = [_der(_b64(s)), f"{h}.{p}".encode()]
        if bound:
            kb = token.rsplit("~", 1)[1]
            kh, kp, ks = kb.split(".")
            jwk = json.loads(_b64(p))["cnf"]["jwk"]
            item += [jwk, _der(_b64(ks)), f"{kh}.{kp}".encode()]
        prepared.append(item)
    turn = itertools.cycle(prepared)
    curve = ec.SECP256R1()

    def run() -> None:
        item = next(turn)
        issuer_public.verify(item[0], item[1], ALGORITHM)
        if bound:
            jwk = item[2]
            holder = ec.EllipticCurvePublicNumbers(
                int.from_bytes(_b64(jwk["x"]), "big"), int.from_bytes(_b64(jwk["y"]), "big"), curve
            ).public_key()
            holder.verify(item[3], item[4], ALGORITHM)

    return run


def _floor2(issuer_public: Any, tokens: list[str], bound: bool) -> Callable[[], None]:
    """The signatures plus the decoding a verifier cannot skip."""
    turn = itertools.cycle(tokens)
    curve = ec.SECP256R1()
    sha256 = hashlib.sha256

    def run() -> None:
        token = next(turn)
        parts = token.split("~")
        h, p, s = parts[0].split(".")
        json.loads(_b64(h))
        payload = json.loads(_b64(p))
        for d in parts[1:-1]:
            json.loads(_b64(d))
            sha256(d.encode()).digest()
        issuer_public.verify(_der(_b64(s)), f"{h}.{p}".encode(), ALGORITHM)
        if bound:
            kh, kp, ks = parts[-1].split(".")
            json.loads(_b64(kh))
            json.loads(_b64(kp))
            jwk = payload["cnf"]["jwk"]
            holder = ec.EllipticCurvePublicNumbers(
                int.from_bytes(_b64(jwk["x"]), "big"), int.from_bytes(_b64(jwk["y"]), "big"), curve
            ).public_key()
            sha256(token[: token.rindex("~") + 1].encode()).digest()
            holder.verify(_der(_b64(ks)), f"{kh}.{kp}".encode(), ALGORITHM)

    return run


def _ours(keys: vxp.IssuerKeys, tokens: list[str], bound: bool) -> Callable[[], None]:
    turn = itertools.cycle(tokens)
    policy = vxp.KeyBinding("v", "n") if bound else None

    def run() -> None:
        vxp.verify_sd_jwt(next(turn), keys, typ=TYP, now=NOW, key_binding=policy)

    return run


def _peer(issuer: ECKey, tokens: list[str], bound: bool) -> Callable[[], None] | None:
    try:
        from jwcrypto.jwk import JWK
        from sd_jwt.verifier import SDJWTVerifier
    except ImportError:  # pragma: no cover - the peer is a test dependency
        return None
    key = JWK.from_json(json.dumps(issuer.as_dict(private=False)))
    turn = itertools.cycle(tokens)

    def run() -> None:
        if bound:
            SDJWTVerifier(
                next(turn), lambda _i, _h: key, expected_aud="v", expected_nonce="n"
            ).get_verified_payload()
        else:
            SDJWTVerifier(next(turn), lambda _i, _h: key).get_verified_payload()

    return run


def _per_call(fn: Callable[[], Any], seconds: float) -> float:
    n, start = 0, time.process_time()
    while True:
        fn()
        n += 1
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return elapsed / n


def _rounds(
    fns: dict[str, Callable[[], Any]], seconds: float, rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(_per_call(fn, seconds / rounds))
    best = {name: min(ts) for name, ts in times.items()}
    median = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
    return best, median


def main() -> None:
    """Print the table of per-token times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    args = parser.parse_args()
    issuer = ECKey.generate_key("P-256")
    issuer_jwk = dict(issuer.as_dict(private=False))
    keys = vxp.IssuerKeys([issuer_jwk])
    print(
        f"{'case':24} {'floor1 us':>10} {'floor2 us':>10} {'vxp us':>9} {'vxp/f1':>7} "
        f"{'vxp/f2':>7} {'sd-jwt/vxp':>11}   (best; median in brackets)"
    )
    for n in (0, 5, 50):
        for bound in (False, True):
            tokens = _tokens(issuer, n, bound)
            fns: dict[str, Callable[[], Any]] = {
                "floor1": _floor1(issuer.public_key, tokens, bound),
                "floor2": _floor2(issuer.public_key, tokens, bound),
                "vxp": _ours(keys, tokens, bound),
            }
            peer = _peer(issuer, tokens, bound)
            if peer is not None:
                fns["peer"] = peer
            t, m = _rounds(fns, args.seconds, args.rounds)
            peer_ratio = (
                f"{t['peer'] / t['vxp']:5.2f}x ({m['peer'] / m['vxp']:4.2f})" if peer else "-"
            )
            name = f"{n} disclosures" + (" + KB" if bound else "")
            print(
                f"{name:24} {t['floor1'] * 1e6:10.1f} {t['floor2'] * 1e6:10.1f} "
                f"{t['vxp'] * 1e6:9.1f} {t['vxp'] / t['floor1']:6.2f}x "
                f"{t['vxp'] / t['floor2']:6.2f}x "
                f"{peer_ratio:>11}   ({m['vxp'] / m['floor1']:.2f}x, {m['vxp'] / m['floor2']:.2f}x)"
            )
    copies = itertools.cycle([dict(issuer_jwk) for _ in range(POOL)])
    load, load_median = _rounds({"load": lambda: vxp.IssuerKeys([next(copies)])}, 1.0, 5)
    print(
        f"issuer key load (vxp.IssuerKeys from a JWK): {load['load'] * 1e6:.1f} us best, "
        f"{load_median['load'] * 1e6:.1f} us median; targets: vxp/f2 <= 1.25x, sd-jwt/vxp >= 2x"
    )


if __name__ == "__main__":
    main()
