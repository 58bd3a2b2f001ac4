"""VXP Proof verification against the raw ES256 verifications it contains.

Two packages: the draft-sized operation (6 statements) and a 1,000-statement chain
(many counter/terms rounds). For each, measured in the same run in interleaved rounds of
CPU time (process time: steadier than wall time on a shared machine), best and median:

- raw: only the ES256 signatures of its statements and checkpoint, with ``cryptography``
  on pre-parsed keys (the floor no verifier can go under);
- prepared: one :class:`vxp.Verifier` built once, verifying the package (target <= 1.6x);
- cold: a new ``Verifier`` from fresh metadata/JWKS objects for every package (<= 2.2x);
- forged-last: the prepared verifier refusing the package whose last statement carries a
  forged signature (target <= 1.1x the valid package);
- load: building a ``Verifier`` alone (the issuer material's cost, measured apart).

    python bench/bench_vxp_proof.py [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import base64
import copy
import itertools
import json
import time
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

import vxp
from vxp import DemoOperation, demo_key, demo_operation
from vxp._proof_demo import CAPABILITY, T0


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


def long_chain(statements: int) -> DemoOperation:
    """A chain of ``statements`` statements: request, terms, counter/terms rounds, the rest."""
    base = demo_operation("succeeded")
    b = vxp.OperationBuilder(
        company="https://store.example/e/ferreteria-demo",
        op_id="req_long",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog("store.example/e/ferreteria-demo/vxp-log"),
    )
    terms = {"capability": CAPABILITY, "pedido": "P-1042", "despacho_nuevo": "2026-10-28"}
    b.request(channel="vxp", client_id="https://agent.example", request={"r": 1}, now=_at(0))
    rounds = (statements - 6) // 2
    t = 0.0
    for i in range(rounds + 1):
        t += 0.01
        b.terms(
            capability=CAPABILITY,
            terms={**terms, "round": i},
            expires_at=_at(100_000),
            read_back_terms=["pedido", "despacho_nuevo"],
            now=_at(t),
        )
        if i < rounds:
            t += 0.01
            b.counter(proposal={"round": i}, now=_at(t))
    b.approve(now=_at(t + 1))
    b.execute(release={"r": 1}, now=_at(t + 2))
    b.read_back(observed={"pedido": "P-1042", "despacho_nuevo": "2026-10-28"}, now=_at(t + 3))
    b.outcome(state="succeeded", result_summary={}, now=_at(t + 4))
    log_key = demo_key("log")
    package = b.package(log_key=log_key)
    signed = vxp.checkpoints.sign_checkpoint(
        vxp.checkpoints.Checkpoint(b.log.origin, b.log.size, b.log.root()), log_key
    )
    live = {**base.live, "checkpoint": signed.to_json(), "consistency": []}
    return DemoOperation(package, base.metadata, base.jwks, live, _at(t + 60), b)


def _forged_last(op: DemoOperation) -> dict[str, Any]:
    """The package with its last statement's signature replaced by the first's (well
    formed, from the same key set, over other bytes)."""
    statements = list(op.package["statements"])
    first_sig = statements[0].split("~")[0].rsplit(".", 1)[1]
    jws, sep, rest = statements[-1].partition("~")
    statements[-1] = jws.rsplit(".", 1)[0] + "." + first_sig + sep + rest
    return {**op.package, "statements": statements}


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def raw_es256(op: DemoOperation, *, live: bool) -> Callable[[], None]:
    """Verify only the ES256 signatures the verification contains: every statement and the
    packaged checkpoint (and the live checkpoint when ``live``), on pre-parsed keys."""
    names = ("operator", "company", "log")
    keys = {vxp.key_thumbprint(demo_key(n)): demo_key(n).public_key for n in names}
    work = []
    for statement in op.package["statements"]:
        jws = statement.split("~")[0]
        h, p, s = jws.split(".")
        header = json.loads(_b64(h))
        work.append((keys[header["kid"]], _der(_b64(s)), f"{h}.{p}".encode()))
    checkpoints = [op.package["log"]["checkpoint"]] + ([op.live["checkpoint"]] if live else [])
    for cp in checkpoints:
        signed = vxp.checkpoints.SignedCheckpoint.from_json(cp)
        work.append((keys[signed.kid], _der(signed.signature), signed.checkpoint.signing_input()))
    algo = ec.ECDSA(hashes.SHA256())

    def run() -> None:
        for key, der, msg in work:
            key.verify(der, msg, algo)

    return run


def _der(sig: bytes) -> bytes:
    return encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))


def _time(fn: Callable[[], Any], seconds: float) -> float:
    n, start = 0, time.process_time()
    while True:
        fn()
        n += 1
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return elapsed / n


def _best(
    fns: dict[str, Callable[[], Any]], seconds: float, rounds: int = 25
) -> tuple[dict[str, float], dict[str, float]]:
    """Interleave the measurements in many short rounds; return each one's best (least
    disturbed) and median time per call. On a shared machine the quiet moments are short:
    many short rounds catch them for every measurement alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(_time(fn, seconds / rounds))
    best = {name: min(ts) for name, ts in times.items()}
    median = {name: sorted(ts)[len(ts) // 2] for name, ts in times.items()}
    return best, median


def main() -> None:
    """Print per-package timings and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="time per measurement")
    parser.add_argument("--rounds", type=int, default=25, help="alternating rounds")
    args = parser.parse_args()
    cases = (("draft (6 statements)", demo_operation("succeeded")), ("1,000", long_chain(1000)))
    for name, op in cases:
        verifier = vxp.Verifier(op.metadata, op.jwks)
        assert verifier.verify(op.package, now=op.now).valid
        forged = _forged_last(op)
        refused = verifier.verify(forged, now=op.now)
        assert refused.failure is not None
        assert refused.failure["code"] == "signature_invalid"
        # fresh material objects for every cold call (nothing can be matched by identity)
        copies = [(copy.deepcopy(op.metadata), copy.deepcopy(op.jwks)) for _ in range(64)]
        turn = itertools.cycle(copies)

        def cold(op: DemoOperation = op, turn: Any = turn) -> vxp.Verdict:
            metadata, jwks = next(turn)
            return vxp.Verifier(metadata, jwks).verify(op.package, now=op.now)

        def load(turn: Any = turn) -> vxp.Verifier:
            metadata, jwks = next(turn)
            return vxp.Verifier(metadata, jwks)

        fns: dict[str, Callable[[], Any]] = {
            "raw": raw_es256(op, live=False),
            "prepared": partial(verifier.verify, op.package, now=op.now),
            "cold": cold,
            "forged": partial(verifier.verify, forged, now=op.now),
            "load": load,
        }
        t, m = _best(fns, args.seconds, rounds=args.rounds)
        print(f"{name}: raw ES256 {t['raw'] * 1e3:.3f} ms (median {m['raw'] * 1e3:.3f} ms)")
        for label, key, base, target in (
            ("prepared Verifier / raw ES256", "prepared", "raw", 1.6),
            ("cold Verifier / raw ES256", "cold", "raw", 2.2),
            ("forged last signature / valid", "forged", "prepared", 1.1),
        ):
            print(
                f"  {label:32} {t[key] / t[base]:5.2f}x best, {m[key] / m[base]:5.2f}x median"
                f"   (target <= {target}x; {t[key] * 1e3:.3f} ms)"
            )
        print(
            f"  {'issuer material load':32} {t['load'] * 1e6:7.1f} us best, "
            f"{m['load'] * 1e6:7.1f} us median (a Verifier from metadata and JWKS)"
        )


if __name__ == "__main__":
    main()
