"""Signed checkpoints ``{origin, tree_size, root}`` of a Merkle log and witness cosignatures.

The log signs ``JCS({"type": "vxp-checkpoint/v1", "origin", "tree_size", "root"})``; a
witness signs ``JCS({"type": "vxp-cosignature/v1", "checkpoint": {...}, "time"})``. The
distinct ``type`` members keep a log signature from ever passing as a cosignature (or the
reverse). Keys are Ed25519 (``EdDSA``) or P-256 (``ES256``); ``kid`` is the key's RFC 7638
thumbprint.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeGuard

from . import _merkle
from ._codec import b64url_decode, b64url_encode, canonical_json, decode_hash, encode_hash
from ._keys import KeyLike, ResolvedKey, resolve_key
from ._time import whole_seconds
from .errors import VxpError

__all__ = [
    "Checkpoint",
    "Cosignature",
    "SignedCheckpoint",
    "Witness",
    "cosign_checkpoint",
    "sign_checkpoint",
    "verify_checkpoint",
    "verify_cosignatures",
]

_CHECKPOINT_TYPE = "vxp-checkpoint/v1"
_PLAIN = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")
"""Printable ASCII other than quote and backslash: text JCS writes unchanged."""
_COSIGNATURE_TYPE = "vxp-cosignature/v1"
_CHECKPOINT_MEMBERS = frozenset({"origin", "tree_size", "root"})


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, answered at once for a plain dict (the ABC check is
    slow)."""
    return type(value) is dict or isinstance(value, Mapping)


_SIGNED_MEMBERS = frozenset({"checkpoint", "signature", "cosignatures"})
_SIGNATURE_MEMBERS = frozenset({"kid", "alg", "sig"})


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: ``origin`` (the log's name), ``tree_size`` and ``root`` (32 bytes)."""

    origin: str
    tree_size: int
    root: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.origin, str) or not self.origin or "\n" in self.origin:
            raise VxpError(
                "checkpoint_invalid", "a checkpoint origin is a non-empty one-line string"
            )
        size = self.tree_size
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 2**63:
            raise VxpError(
                "checkpoint_invalid", "a checkpoint tree_size is an integer in [0, 2^63)"
            )
        if not isinstance(self.root, bytes) or len(self.root) != 32:
            raise VxpError("checkpoint_invalid", "a checkpoint root is 32 bytes")
        if size == 0 and self.root != _merkle.EMPTY_ROOT:
            # RFC 9162 §2.1.1: the empty tree has exactly one head, SHA-256 of nothing
            raise VxpError("checkpoint_invalid", "a checkpoint of size 0 has the empty-tree root")

    def to_json(self) -> dict[str, Any]:
        """Return the wire form ``{"origin", "tree_size", "root": "sha-256:..."}``."""
        return {"origin": self.origin, "tree_size": self.tree_size, "root": encode_hash(self.root)}

    @classmethod
    def from_json(cls, value: object) -> Checkpoint:
        """Parse the wire form (exactly the three members)."""
        if not _is_mapping(value) or value.keys() != _CHECKPOINT_MEMBERS:
            raise VxpError(
                "checkpoint_invalid", "a checkpoint is an object of origin, tree_size and root"
            )
        return cls(
            value["origin"], value["tree_size"], decode_hash(value["root"], "checkpoint root")
        )

    def signing_input(self) -> bytes:
        """Return the bytes a log key signs for this checkpoint."""
        root = encode_hash(self.root)
        if self.tree_size < 2**53 and _PLAIN.fullmatch(self.origin) is not None:
            # Nothing to escape: exactly the JCS text (members in code-point order).
            return (
                f'{{"origin":"{self.origin}","root":"{root}",'
                f'"tree_size":{self.tree_size},"type":"{_CHECKPOINT_TYPE}"}}'
            ).encode("ascii")
        return canonical_json({"type": _CHECKPOINT_TYPE, **self.to_json()})


@dataclass(frozen=True)
class Cosignature:
    """A witness's signature over a checkpoint at ``time`` (seconds since the epoch)."""

    kid: str
    alg: str
    time: int
    signature: bytes

    def to_json(self) -> dict[str, Any]:
        """Return the wire form ``{"kid", "alg", "time", "sig"}``."""
        return {
            "kid": self.kid,
            "alg": self.alg,
            "time": self.time,
            "sig": b64url_encode(self.signature),
        }

    @classmethod
    def from_json(cls, value: object) -> Cosignature:
        """Parse the wire form."""
        if not isinstance(value, Mapping) or set(value) != {"kid", "alg", "time", "sig"}:
            raise VxpError(
                "cosignature_invalid", "a cosignature is an object of kid, alg, time, sig"
            )
        kid, alg, time = value["kid"], value["alg"], value["time"]
        if not isinstance(kid, str) or alg not in ("EdDSA", "ES256"):
            raise VxpError(
                "cosignature_invalid", "a cosignature needs a string kid and a known alg"
            )
        if not isinstance(time, int) or isinstance(time, bool) or not 0 <= time < 2**63:
            raise VxpError("cosignature_invalid", "a cosignature time is a non-negative integer")
        return cls(kid, alg, time, b64url_decode(value["sig"], "cosignature sig"))


def _cosigning_input(checkpoint: Checkpoint, time: int) -> bytes:
    return canonical_json(
        {"type": _COSIGNATURE_TYPE, "checkpoint": checkpoint.to_json(), "time": time}
    )


@dataclass(frozen=True)
class SignedCheckpoint:
    """A checkpoint with the log's signature and any witness cosignatures."""

    checkpoint: Checkpoint
    kid: str
    alg: str
    signature: bytes
    cosignatures: tuple[Cosignature, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """Return the wire form ``{"checkpoint", "signature": {kid, alg, sig}, "cosignatures"}``."""
        return {
            "checkpoint": self.checkpoint.to_json(),
            "signature": {"kid": self.kid, "alg": self.alg, "sig": b64url_encode(self.signature)},
            "cosignatures": [c.to_json() for c in self.cosignatures],
        }

    @classmethod
    def from_json(cls, value: object) -> SignedCheckpoint:
        """Parse the wire form (unknown members are refused)."""
        if not _is_mapping(value) or value.keys() != _SIGNED_MEMBERS:
            raise VxpError(
                "checkpoint_invalid",
                "a signed checkpoint is an object of checkpoint, signature and cosignatures",
            )
        sig = value["signature"]
        if not _is_mapping(sig) or sig.keys() != _SIGNATURE_MEMBERS:
            raise VxpError("checkpoint_invalid", "a checkpoint signature is {kid, alg, sig}")
        if not isinstance(sig["kid"], str) or sig["alg"] not in ("EdDSA", "ES256"):
            raise VxpError(
                "checkpoint_invalid", "a checkpoint signature needs a kid and a known alg"
            )
        cosigs = value["cosignatures"]
        if not isinstance(cosigs, list):
            raise VxpError("checkpoint_invalid", "cosignatures is a list")
        return cls(
            Checkpoint.from_json(value["checkpoint"]),
            sig["kid"],
            sig["alg"],
            b64url_decode(sig["sig"], "checkpoint sig"),
            tuple([Cosignature.from_json(c) for c in cosigs]) if cosigs else (),
        )


def _as_signed(value: SignedCheckpoint | Mapping[str, Any]) -> SignedCheckpoint:
    return value if isinstance(value, SignedCheckpoint) else SignedCheckpoint.from_json(value)


def sign_checkpoint(checkpoint: Checkpoint, log_key: KeyLike) -> SignedCheckpoint:
    """Sign ``checkpoint`` with the log's private key (ES256 deterministically, or EdDSA)."""
    if not isinstance(checkpoint, Checkpoint):
        raise VxpError("argument_invalid", "sign_checkpoint signs a Checkpoint")
    key = resolve_key(log_key, "log key")
    return SignedCheckpoint(checkpoint, key.kid, key.alg, key.sign(checkpoint.signing_input()))


def verify_checkpoint(
    signed: SignedCheckpoint | Mapping[str, Any], log_key: KeyLike, *, origin: str | None = None
) -> Checkpoint:
    """Verify the log's signature on ``signed`` (and its origin if given); return the checkpoint."""
    if origin is not None and not isinstance(origin, str):
        raise VxpError("argument_invalid", "the origin to expect is a string or None")
    sc = _as_signed(signed)
    key, message = _log_signature(sc, log_key)
    if not key.signature_valid(message, sc.signature):
        raise VxpError("checkpoint_signature_invalid", "the checkpoint signature does not verify")
    if origin is not None:
        _log_origin(sc, origin)
    return sc.checkpoint


def _log_origin(sc: SignedCheckpoint, origin: str) -> None:
    if sc.checkpoint.origin != origin:
        raise VxpError("checkpoint_origin_mismatch", f"the checkpoint is not from log {origin!r}")


def _log_signature(sc: SignedCheckpoint, log_key: KeyLike) -> tuple[ResolvedKey, bytes]:
    """The log key and the bytes its signature on ``sc`` must cover (checks the kid/alg)."""
    key = resolve_key(log_key, "log key")
    if sc.kid != key.kid or sc.alg != key.alg:
        raise VxpError("checkpoint_key_mismatch", "the checkpoint is not signed by this log key")
    return key, sc.checkpoint.signing_input()


def cosign_checkpoint(
    signed: SignedCheckpoint, witness_key: KeyLike, *, time: datetime | int
) -> SignedCheckpoint:
    """Return ``signed`` with a cosignature by ``witness_key`` at ``time`` added.

    ``time`` is an aware :class:`~datetime.datetime` or integer seconds since the epoch,
    not before 1970 (a naive datetime is ``time_naive``, another value ``now_invalid``:
    usage errors). This only signs; a witness must first check the log signature and
    consistency with what it saw before (:class:`Witness` does both).
    """
    if not isinstance(signed, SignedCheckpoint):
        raise VxpError("checkpoint_invalid", "cosign_checkpoint needs a SignedCheckpoint")
    key = resolve_key(witness_key, "witness key")
    time = _cosign_time(time)
    if any(c.kid == key.kid for c in signed.cosignatures):
        raise VxpError("cosignature_duplicate", "this witness already cosigned the checkpoint")
    cosig = Cosignature(key.kid, key.alg, time, key.sign(_cosigning_input(signed.checkpoint, time)))
    return SignedCheckpoint(
        signed.checkpoint, signed.kid, signed.alg, signed.signature, (*signed.cosignatures, cosig)
    )


def _cosign_time(time: object) -> int:
    seconds = whole_seconds(time, "the cosignature time")
    if not 0 <= seconds < 2**63:
        raise VxpError("now_invalid", "the cosignature time is from 1970 on, below 2^63 seconds")
    return seconds


def verify_cosignatures(
    signed: SignedCheckpoint | Mapping[str, Any],
    witness_keys: Iterable[KeyLike],
    *,
    quorum: int = 1,
) -> tuple[str, ...]:
    """Return the kids of the trusted witnesses whose cosignatures verify; need ``quorum``.

    Cosignatures by keys not in ``witness_keys`` are ignored; a cosignature by a trusted key
    that does not verify is an error (it is evidence of tampering).
    """
    sc = _as_signed(signed)
    if isinstance(witness_keys, Mapping | str | bytes) or not isinstance(witness_keys, Iterable):
        raise VxpError("witness_keys_invalid", "witness_keys is a list of keys")
    if not isinstance(quorum, int) or isinstance(quorum, bool) or quorum < 0:
        raise VxpError("witness_keys_invalid", "quorum is a non-negative integer")
    trusted: dict[str, ResolvedKey] = {}
    for i, wk in enumerate(witness_keys):
        key = resolve_key(wk, f"witness key {i}")
        trusted[key.kid] = key
    good: list[str] = []
    for cosig in sc.cosignatures:
        wkey = trusted.get(cosig.kid)
        if wkey is None:
            continue
        if cosig.kid in good:
            raise VxpError("cosignature_duplicate", "a witness cosigned the checkpoint twice")
        if cosig.alg != wkey.alg or not wkey.signature_valid(
            _cosigning_input(sc.checkpoint, cosig.time), cosig.signature
        ):
            raise VxpError("cosignature_invalid", f"the cosignature of witness {cosig.kid} fails")
        good.append(cosig.kid)
    if len(good) < quorum:
        raise VxpError(
            "cosignature_quorum",
            f"{len(good)} trusted witnesses cosigned the checkpoint, {quorum} are needed",
        )
    return tuple(good)


class Witness:
    """A witness: cosigns a log's checkpoint only if it extends the last one it cosigned.

    ``logs`` maps each origin the witness follows to the log's public key. The latest
    checkpoint per origin is kept in memory (``state``); a deployment persists it.
    """

    def __init__(self, key: KeyLike, logs: Mapping[str, KeyLike]) -> None:
        self._key = key
        self.kid = resolve_key(key, "witness key").kid
        if not isinstance(logs, Mapping):
            raise VxpError("witness_keys_invalid", "logs maps each log origin to its key")
        self._logs = dict(logs)
        self.state: dict[str, Checkpoint] = {}

    def cosign(
        self,
        signed: SignedCheckpoint | Mapping[str, Any],
        *,
        proof: Sequence[bytes] = (),
        time: datetime | int,
    ) -> SignedCheckpoint:
        """Check ``signed`` and its consistency ``proof`` from the last checkpoint; cosign it
        at ``time`` (an aware datetime or integer seconds, as :func:`cosign_checkpoint`).

        Returns the cosigned checkpoint or raises :class:`~vxp.VxpProtocolError`."""
        time = _cosign_time(time)
        sc = _as_signed(signed)
        origin = sc.checkpoint.origin
        log_key = self._logs.get(origin)
        if log_key is None:
            raise VxpError("witness_unknown_log", f"this witness does not follow log {origin!r}")
        cp = verify_checkpoint(sc, log_key)
        last = self.state.get(origin)
        if last is not None:
            if cp.tree_size < last.tree_size:
                raise VxpError(
                    "witness_rollback", "the checkpoint is older than one already cosigned"
                )
            if last.tree_size > 0:
                _merkle.verify_consistency(last.tree_size, cp.tree_size, last.root, cp.root, proof)
        result = cosign_checkpoint(sc, self._key, time=time)
        self.state[origin] = cp
        return result
