"""A reproducible VXP Proof operation like the draft's, for the demo, the CLI and vectors.

Keys are derived from fixed seeds (never use them for anything real), salts come from a
seeded source and ES256 signatures are deterministic (RFC 6979), so every run produces
the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey

from ._builder import OperationBuilder
from ._checkpoint import Checkpoint, sign_checkpoint
from ._codec import encode_hash
from ._keys import resolve_key
from ._log import MerkleLog
from ._metadata import KeyRecord, build_jwks, build_metadata, rotate_key
from ._sdjwt import RandomSource
from .errors import VxpError

__all__ = ["DEMO_VARIANTS", "DemoOperation", "demo_key", "demo_operation", "seeded_rng"]

COMPANY = "https://store.example/e/ferreteria-demo"
LOG_ORIGIN = "store.example/e/ferreteria-demo/vxp-log"
CAPABILITY = "pedido.reprogramar_despacho"
T0 = datetime(2026, 10, 22, 22, 30, 29, 356000, tzinfo=UTC)
"""When the draft's terms were issued (they expire 15 minutes later, at 22:45:29.356Z)."""

DEMO_VARIANTS = (
    "succeeded",
    "failed",
    "cancelled",
    "expired",
    "unknown",
    "corrected",
    "revoked",
    "reviewed",
    "witnessed",
    "rotated",
)
"""The operations :func:`demo_operation` can issue (one per final state, plus variants)."""


def demo_key(seed: str) -> ECKey:
    """Return the P-256 key derived from ``seed`` (for demos and vectors only)."""
    if not isinstance(seed, str):
        raise VxpError("argument_invalid", "the seed of a demo key is a string")
    scalar = int.from_bytes(hashlib.sha256(b"vxp-demo-key/" + seed.encode()).digest(), "big")
    private = ec.derive_private_key(scalar % (2**255 - 19) + 1, ec.SECP256R1())
    return ECKey.import_key(private)


def seeded_rng(seed: str) -> RandomSource:
    """Return a random source whose ``n``-th draw is SHA-256(seed, n), cut to the size asked."""
    counter = [0]

    def draw(size: int) -> bytes:
        counter[0] += 1
        return hashlib.sha256(f"{seed}/{counter[0]}".encode()).digest()[:size]

    return draw


@dataclass(frozen=True)
class DemoOperation:
    """An issued operation: the package, the issuer's material and what a live check sees."""

    package: dict[str, Any]
    metadata: dict[str, Any]
    jwks: dict[str, Any]
    live: dict[str, Any]
    now: datetime
    builder: OperationBuilder

    VARIANTS: ClassVar[tuple[str, ...]] = DEMO_VARIANTS
    """The variants :func:`demo_operation` issues (one per final state, plus variants)."""

    def extend_log(self, entries: int) -> dict[str, Any]:
        """Append ``entries`` unrelated entries to this operation's log (as other operations
        of the shop would) and return the live material a verifier then sees: the new
        checkpoint, signed by the demo log key, and the consistency proof from the packaged
        one."""
        return extend_log(self, entries)

    def inputs(self) -> dict[str, Any]:
        """Return ``{package, metadata, jwks, live, now}`` as JSON values."""
        from ._chain import format_time

        return {
            "package": self.package,
            "metadata": self.metadata,
            "jwks": self.jwks,
            "live": self.live,
            "now": format_time(self.now),
        }


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def demo_operation(
    variant: str = "succeeded",
    *,
    custody: str = "operator_hosted",
    tamper: Callable[[OperationBuilder], None] | None = None,
) -> DemoOperation:
    """Issue the draft's operation (or a ``variant`` of it) with the demo keys.

    ``tamper``, if given, is called instead of the steps after the approval, to let tests
    and vectors sign rule-breaking chains with :meth:`OperationBuilder.unsafe_append`.
    """
    if variant not in DEMO_VARIANTS:
        raise VxpError("variant_unknown", f"{variant!r} is not one of {', '.join(DEMO_VARIANTS)}")
    operator, company, log_key = demo_key("operator"), demo_key("company"), demo_key("log")
    company_next = demo_key("company-2")
    witness = demo_key("witness")
    log = MerkleLog(LOG_ORIGIN)
    builder = OperationBuilder(
        company=COMPANY,
        op_id="req_01JB7Q2X9M",
        operator_key=operator,
        company_key=company,
        log=log,
        rng=seeded_rng(f"vxp-demo/{variant}"),
    )
    request = {
        "request_id": "req_01JB7Q2X9M",
        "capability": CAPABILITY,
        "params": {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"},
    }
    terms = {"capability": CAPABILITY, "pedido": "P-1042", "despacho_nuevo": "2026-10-28"}
    builder.request(
        channel="vxp", client_id="https://agent.example/agent.json", request=request, now=_at(-2)
    )
    builder.terms(
        capability=CAPABILITY,
        terms=terms,
        expires_at=_at(15 * 60),
        read_back_terms=["pedido", "despacho_nuevo"],
        company_review_required=variant == "reviewed",
        now=_at(0),
    )
    end = 5.0
    if tamper is not None:
        builder.approve(now=_at(1))
        tamper(builder)
    elif variant == "cancelled":
        builder.outcome(state="cancelled", result_summary={"reason": "user_declined"}, now=_at(60))
    elif variant == "expired":
        end = 15 * 60 + 1
        builder.outcome(state="expired", result_summary={"reason": "no_approval"}, now=_at(end))
    else:
        if variant == "reviewed":
            builder.review(decision="approved", reviewer={"role": "supervisor"}, now=_at(1))
            builder.approve_signed(user_key=demo_key("user"), now=_at(1.5))
        else:
            builder.approve(now=_at(1))
        builder.execute(release={"order": "P-1042", "nonce": "r-7f3a"}, now=_at(2))
        if variant == "rotated":
            builder.use_key("company", company_next)
        if variant == "failed":
            builder.outcome(state="failed", result_summary={"error": "dock_closed"}, now=_at(4))
        elif variant == "unknown":
            shown = {"pedido": "P-1042", "despacho_nuevo": "2026-10-29"}
            builder.read_back(observed=shown, personal={"receptor": "Ana Pérez"}, now=_at(3))
            builder.outcome(state="unknown", result_summary={"contradiction": True}, now=_at(4))
        elif variant == "corrected":
            builder.outcome(state="unknown", result_summary={"timeout": True}, now=_at(4))
            end = 3600
            builder.correct(state="failed", fact={"ticket": "T-88", "effect": "none"}, now=_at(end))
        else:
            observed = {"pedido": "P-1042", "despacho_nuevo": "2026-10-28"}
            builder.read_back(observed=observed, personal={"receptor": "Ana Pérez"}, now=_at(3))
            builder.outcome(state="succeeded", result_summary={"order": "P-1042"}, now=_at(4))
            if variant == "revoked":
                end = 7200
                builder.revoke(reason={"ticket": "T-91", "cause": "order_reversed"}, now=_at(end))
    witnesses = [(witness, int(_at(end).timestamp()))] if variant == "witnessed" else []
    package = builder.package(log_key=log_key, witnesses=witnesses, require_outcome=tamper is None)
    records = [
        KeyRecord(resolve_key(operator).kid, "operator", T0 - timedelta(days=30), None),
        KeyRecord(resolve_key(company).kid, "company", T0 - timedelta(days=30), None),
    ]
    metadata = build_metadata(
        COMPANY,
        jwks_uri=COMPANY + "/.well-known/vxp-jwks.json",
        keys=records,
        custody=custody,
        log_origin=LOG_ORIGIN,
        log_kid=resolve_key(log_key).kid,
        witnesses=[resolve_key(witness).kid],
    )
    public = [operator, company, log_key, witness]
    if variant == "rotated":
        metadata = rotate_key(metadata, "company", company_next, at=_at(2.5))
        public.append(company_next)
    jwks = build_jwks(public)
    signed = sign_checkpoint(Checkpoint(log.origin, log.size, log.root()), log_key)
    if witnesses:
        from ._checkpoint import cosign_checkpoint

        signed = cosign_checkpoint(signed, witness, time=witnesses[0][1])
    live = {"metadata": metadata, "jwks": jwks, "checkpoint": signed.to_json(), "consistency": []}
    return DemoOperation(package, metadata, jwks, live, _at(end + 60), builder)


def extend_log(op: DemoOperation, entries: int) -> dict[str, Any]:
    """Append ``entries`` unrelated entries to the demo log; return live material for it."""
    if not isinstance(entries, int) or isinstance(entries, bool) or not 0 <= entries <= 10_000:
        raise VxpError("argument_invalid", "entries is an integer from 0 to 10000")
    log = op.builder.log
    size = log.size
    for i in range(entries):
        log.append(f"other operation {i}".encode())
    signed = sign_checkpoint(Checkpoint(log.origin, log.size, log.root()), demo_key("log"))
    proof = [encode_hash(h) for h in log.consistency_proof(size)]
    return {**op.live, "checkpoint": signed.to_json(), "consistency": proof}
