"""Proof of possession (SPEC.md section 6.5): the holder key signs what it asks for.

The signed bytes are ``utf8(canonical({"aud", "verb", "target", "ts"}))``: the service's
audience id, the verb, the verb's target from :func:`proof_target`, and the time. A proof
is valid for 300 seconds either side of the verifier's clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ._canonical import MAX_SAFE_INTEGER, canonical_bytes
from ._keys import PUBLIC_KEY_PREFIX, Key, _signature_ok
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = ["PROOF_WINDOW", "proof_payload", "proof_target", "sign_proof", "verify_proof"]

PROOF_WINDOW = 300
"""Seconds a proof stays valid either side of the verifier's clock."""

_VERBS_WITH_TARGETS = ("COMMIT", "UNDO", "ASK", "INTENT", "EXPAND")


def _need(value: object, name: str, verb: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParleyError(
            "invalid_params",
            f"the proof target of {verb} needs a non-empty {name}",
            reason="bad_target",
        )
    return value


def proof_target(
    verb: str,
    *,
    capability: str | None = None,
    proposal_hash: str | None = None,
    receipt: str | None = None,
    handle: str | None = None,
    auto: bool = False,
    frame_id: str | None = None,
) -> str:
    """Return the proof target of a request (the table of SPEC.md section 6.5).

    ``COMMIT``: the proposal hash; ``UNDO``: the receipt id; ``ASK`` and ``INTENT``: the
    capability; ``INTENT`` with ``auto``: ``auto:{capability}:{frame id}``; ``EXPAND``: the
    handle. Any other verb, or a missing part, raises :class:`ParleyError`.

    >>> proof_target("INTENT", capability="cal.move", auto=True, frame_id="f1")
    'auto:cal.move:f1'
    """
    if auto and verb != "INTENT":  # checked first: COMMIT, UNDO, EXPAND would ignore it
        raise ParleyError("invalid_params", "only INTENT may carry auto", reason="bad_target")
    if verb == "COMMIT":
        return _need(proposal_hash, "proposal hash", verb)
    if verb == "UNDO":
        return _need(receipt, "receipt id", verb)
    if verb == "EXPAND":
        return _need(handle, "handle", verb)
    if verb in ("ASK", "INTENT"):
        name = _need(capability, "capability", verb)
        # **Ours:** the auto target joins capability and frame id with ':', so a ':' in the
        # capability, or a plain INTENT capability spelled 'auto:...', would let one signed
        # target stand for two requests ('auto:a:b:c' is capability 'a' frame 'b:c' and
        # capability 'a:b' frame 'c'). Such names are refused, so every target is unambiguous.
        if auto:
            if ":" in name:
                raise ParleyError(
                    "invalid_params",
                    "an auto INTENT capability must not contain ':' (its proof target would "
                    "be ambiguous)",
                    reason="bad_target",
                )
            return f"auto:{name}:{_need(frame_id, 'frame id', verb)}"
        if verb == "INTENT" and name.startswith("auto:"):
            raise ParleyError(
                "invalid_params",
                "an INTENT capability must not start with 'auto:' (its proof target would "
                "read as an auto-commit target)",
                reason="bad_target",
            )
        return name
    raise ParleyError(
        "invalid_params",
        f"verb {verb!r} has no proof target; one of {', '.join(_VERBS_WITH_TARGETS)} does",
        reason="bad_target",
    )


def proof_payload(*, aud: str, verb: str, target: str, ts: int) -> bytes:
    """Return the bytes a proof signs: ``utf8(canonical({aud, verb, target, ts}))``."""
    return canonical_bytes({"aud": aud, "verb": verb, "target": target, "ts": ts})


def sign_proof(key: Key, *, aud: str, verb: str, target: str, ts: int | datetime) -> dict[str, Any]:
    """Return the ``proof`` object ``{"key", "ts", "sig"}`` for one request signed by ``key``.

    ``aud`` is the service id, ``target`` comes from :func:`parley.grants.proof_target`,
    ``ts`` is the current time (passed in): integer epoch seconds or an aware datetime (a
    naive one is the usage error ``bad_argument``). Every argument is the caller's, so a
    wrong one is a :class:`parley.ParleyUsageError`.
    """
    if not isinstance(key, Key):
        raise ParleyError("bad_argument", "a proof is signed by a Key", reason="bad_key")
    for name, value in (("aud", aud), ("verb", verb), ("target", target)):
        if not isinstance(value, str):
            raise ParleyError(
                "bad_argument", f"the proof's {name} must be a string", reason="bad_proof"
            )
    ts = epoch_seconds(ts, "ts")
    sig = key.sign(proof_payload(aud=aud, verb=verb, target=target, ts=ts))
    return {"key": key.public, "ts": ts, "sig": sig}


def verify_proof(
    proof: object,
    *,
    aud: str,
    verb: str,
    target: str,
    now: int | datetime,
    window: int = PROOF_WINDOW,
) -> str:
    """Check a request's ``proof`` object; return its key (the claimed grant holder).

    ``now`` is the service clock: integer epoch seconds or an aware datetime. The caller's
    own arguments (``now``, ``window``, the expected ``aud``, ``verb``, ``target``) raise
    :class:`parley.ParleyUsageError` (``bad_argument``) when wrong; the proof is a peer's
    data, so everything about it raises :class:`parley.ParleyProtocolError`.

    Fails with :class:`ParleyError` code ``unauthorized`` and reason ``bad_proof`` (not an
    object with a key, an integer ``ts`` and a signature), ``proof_expired`` (``|now - ts|``
    exceeds ``window``) or ``bad_proof_signature`` (the signature does not cover exactly
    ``aud``, ``verb``, ``target`` and ``ts`` under ``key``). The caller's arguments are
    checked first. Never raises anything else.
    """
    now = epoch_seconds(now, "now")
    if type(window) is not int or window < 0:
        raise ParleyError(
            "bad_argument", "window is a non-negative integer of seconds", reason="bad_clock"
        )
    for name, value in (("aud", aud), ("verb", verb), ("target", target)):
        if not isinstance(value, str):
            raise ParleyError(
                "bad_argument", f"the expected {name} must be a string", reason="bad_target"
            )
    if not isinstance(proof, dict):
        raise ParleyError("unauthorized", "the proof must be a JSON object", reason="bad_proof")
    key, ts, sig = proof.get("key"), proof.get("ts"), proof.get("sig")
    if not isinstance(key, str) or not key.startswith(PUBLIC_KEY_PREFIX):
        raise ParleyError(
            "unauthorized", "proof.key must be an 'ed25519:' public key", reason="bad_proof"
        )
    if type(ts) is not int or abs(ts) > MAX_SAFE_INTEGER:
        raise ParleyError(
            "unauthorized", "proof.ts must be a safe integer of unix seconds", reason="bad_proof"
        )
    if not isinstance(sig, str):
        raise ParleyError("unauthorized", "proof.sig must be a string", reason="bad_proof")
    if abs(now - ts) > window:
        raise ParleyError(
            "unauthorized",
            f"the proof is {abs(now - ts)} s away from the service clock (at most {window})",
            reason="proof_expired",
        )
    if not _signature_ok(key, proof_payload(aud=aud, verb=verb, target=target, ts=ts), sig):
        raise ParleyError(
            "unauthorized",
            "the proof signature does not match its key, service, verb, target and time",
            reason="bad_proof_signature",
        )
    return key
