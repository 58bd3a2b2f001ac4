"""Vector operations of :mod:`vxp`: Merkle trees and proofs, checkpoints, SD-JWT.

Encodings on the wire of every operation: leaf data is lowercase hex, hashes are
``sha-256:<base64url>``, keys are JWK objects, and randomness is ``random_hex`` consumed
16 bytes at a time in the order :func:`vxp.issue_sd_jwt` documents.
"""

from __future__ import annotations

import json
from typing import Any

import vxp

from .._registry import handler
from .._runner import RunnerError

__all__: list[str] = []


def _fail(message: str) -> RunnerError:
    # Input the suite's schema admits but the operation cannot read: the caller's mistake
    # (ppcheck.run holds every input to its schema first), never a vxp refusal.
    return RunnerError(f"the input is not of its suite's shape: {message}")


def _get(input_: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = input_.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _fail(f"input member {name!r} is missing or has the wrong type")
    return value


def _leaves(input_: dict[str, Any]) -> list[bytes]:
    leaves = _get(input_, "leaves", list)
    out = []
    for i, item in enumerate(leaves):
        try:
            out.append(bytes.fromhex(item))
        except (TypeError, ValueError) as exc:
            raise _fail(f"leaf {i} is not hex") from exc
    return out


def _hashes(values: Any, what: str) -> list[bytes]:
    if not isinstance(values, list):
        raise _fail(f"{what} is not a list")
    return [vxp.codec.decode_hash(v, f"{what}[{i}]") for i, v in enumerate(values)]


@handler("vxp.merkle_tree_hash")
def merkle_tree_hash(input_: dict[str, Any]) -> dict[str, Any]:
    """``{leaves: [hex]}`` -> ``{root, leaf_hashes}``."""
    hashes = [vxp.merkle.leaf_hash(leaf) for leaf in _leaves(input_)]
    return {
        "root": vxp.codec.encode_hash(vxp.merkle.tree_hash(hashes)),
        "leaf_hashes": [vxp.codec.encode_hash(h) for h in hashes],
    }


@handler("vxp.merkle_inclusion_proof")
def merkle_inclusion_proof(input_: dict[str, Any]) -> dict[str, Any]:
    """``{leaves, index, tree_size}`` -> ``{leaf_hash, proof, root}``."""
    hashes = [vxp.merkle.leaf_hash(leaf) for leaf in _leaves(input_)]
    index = _get(input_, "index", int)
    size = _get(input_, "tree_size", int)
    proof = vxp.merkle.inclusion_proof(hashes, index, size)
    return {
        "leaf_hash": vxp.codec.encode_hash(hashes[index]),
        "proof": [vxp.codec.encode_hash(p) for p in proof],
        "root": vxp.codec.encode_hash(vxp.merkle.tree_hash(hashes[:size])),
    }


@handler("vxp.merkle_verify_inclusion")
def merkle_verify_inclusion(input_: dict[str, Any]) -> dict[str, Any]:
    """``{leaf_hash, index, tree_size, proof, root}`` -> ``{valid: true}`` or an error."""
    vxp.merkle.verify_inclusion(
        vxp.codec.decode_hash(input_.get("leaf_hash"), "leaf_hash"),
        _get(input_, "index", int),
        _get(input_, "tree_size", int),
        _hashes(input_.get("proof"), "proof"),
        vxp.codec.decode_hash(input_.get("root"), "root"),
    )
    return {"valid": True}


@handler("vxp.merkle_consistency_proof")
def merkle_consistency_proof(input_: dict[str, Any]) -> dict[str, Any]:
    """``{leaves, size1, size2}`` -> ``{proof, root1, root2}``."""
    hashes = [vxp.merkle.leaf_hash(leaf) for leaf in _leaves(input_)]
    size1 = _get(input_, "size1", int)
    size2 = _get(input_, "size2", int)
    proof = vxp.merkle.consistency_proof(hashes, size1, size2)
    return {
        "proof": [vxp.codec.encode_hash(p) for p in proof],
        "root1": vxp.codec.encode_hash(vxp.merkle.tree_hash(hashes[:size1])),
        "root2": vxp.codec.encode_hash(vxp.merkle.tree_hash(hashes[:size2])),
    }


@handler("vxp.merkle_verify_consistency")
def merkle_verify_consistency(input_: dict[str, Any]) -> dict[str, Any]:
    """``{size1, size2, root1, root2, proof}`` -> ``{valid: true}`` or an error."""
    vxp.merkle.verify_consistency(
        _get(input_, "size1", int),
        _get(input_, "size2", int),
        vxp.codec.decode_hash(input_.get("root1"), "root1"),
        vxp.codec.decode_hash(input_.get("root2"), "root2"),
        _hashes(input_.get("proof"), "proof"),
    )
    return {"valid": True}


@handler("vxp.checkpoint_sign")
def checkpoint_sign(input_: dict[str, Any]) -> dict[str, Any]:
    """``{origin, leaves, log_key, witnesses: [{key, time}]}`` -> ``{signed_checkpoint}``."""
    log = vxp.MerkleLog(_get(input_, "origin", str))
    log.extend(_leaves(input_))
    signed = log.checkpoint(_get(input_, "log_key", dict))
    for i, w in enumerate(_get(input_, "witnesses", list)):
        if not isinstance(w, dict):
            raise _fail(f"witness {i} is not an object")
        signed = vxp.checkpoints.cosign_checkpoint(
            signed, _get(w, "key", dict), time=_get(w, "time", int)
        )
    return {"signed_checkpoint": signed.to_json()}


@handler("vxp.checkpoint_verify")
def checkpoint_verify(input_: dict[str, Any]) -> dict[str, Any]:
    """``{signed_checkpoint, log_key, witness_keys, quorum}`` -> ``{checkpoint, witnesses}``."""
    signed = _get(input_, "signed_checkpoint", dict)
    checkpoint = vxp.checkpoints.verify_checkpoint(signed, _get(input_, "log_key", dict))
    witnesses = vxp.checkpoints.verify_cosignatures(
        signed, _get(input_, "witness_keys", list), quorum=_get(input_, "quorum", int)
    )
    return {"checkpoint": checkpoint.to_json(), "witnesses": list(witnesses)}


class _HexRandom:
    def __init__(self, text: str) -> None:
        try:
            self.data = bytes.fromhex(text)
        except ValueError as exc:
            raise _fail("random_hex is not hex") from exc
        self.pos = 0

    def __call__(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise vxp.VxpError("random_source_invalid", "random_hex ran out of bytes")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


@handler("vxp.sd_jwt_issue")
def sd_jwt_issue(input_: dict[str, Any]) -> dict[str, Any]:
    """``{claims, disclosable, typ, issuer_key, random_hex, decoys, holder_key?}`` ->
    ``{sd_jwt, payload, disclosures}``."""
    claims = vxp.sdjwt.mark_disclosable(
        _get(input_, "claims", dict), _get(input_, "disclosable", list)
    )
    holder = input_.get("holder_key")
    token = vxp.issue_sd_jwt(
        claims,
        _get(input_, "issuer_key", dict),
        typ=_get(input_, "typ", str),
        rng=_HexRandom(_get(input_, "random_hex", str)),
        decoys=_get(input_, "decoys", int),
        holder_key=holder if isinstance(holder, dict) else None,
    )
    payload = vxp.codec.b64url_decode(token.jws.split(".")[1], "payload")
    return {
        "sd_jwt": token.serialize(),
        "payload": json.loads(payload),
        "disclosures": [d.encoded for d in token.disclosures],
    }


@handler("vxp.sd_jwt_present")
def sd_jwt_present(input_: dict[str, Any]) -> dict[str, Any]:
    """``{sd_jwt, disclose, holder_key?, aud?, nonce?, iat?}`` -> ``{presentation}``."""
    disclose = input_.get("disclose")
    if disclose is not None and not isinstance(disclose, list):
        raise _fail("disclose is a list of paths or null")
    holder = input_.get("holder_key")
    presentation = vxp.present_sd_jwt(
        _get(input_, "sd_jwt", str),
        disclose=disclose,
        holder_key=holder if isinstance(holder, dict) else None,
        aud=input_.get("aud"),
        nonce=input_.get("nonce"),
        iat=input_.get("iat"),
    )
    return {"presentation": presentation}


@handler("vxp.sd_jwt_verify")
def sd_jwt_verify(input_: dict[str, Any]) -> dict[str, Any]:
    """``{token, issuer_keys, typ, now, algorithms, key_binding?, leeway?, require_exp?}`` ->
    ``{header, claims, kid, key_binding, disclosed}``."""
    kb = input_.get("key_binding")
    policy = None
    if kb is not None:
        if not isinstance(kb, dict):
            raise _fail("key_binding is an object or null")
        policy = vxp.KeyBinding(
            aud=_get(kb, "aud", str),
            nonce=_get(kb, "nonce", str),
            max_age=kb.get("max_age", 300),
            leeway=kb.get("leeway", 0),
        )
    typ = input_.get("typ")
    result = vxp.verify_sd_jwt(
        _get(input_, "token", str),
        _get(input_, "issuer_keys", list),
        typ=typ if isinstance(typ, str) else None,
        now=_get(input_, "now", (int, float)),
        algorithms=_get(input_, "algorithms", list),
        key_binding=policy,
        leeway=input_.get("leeway", 0),
        require_exp=bool(input_.get("require_exp", False)),
    )
    return {
        "header": result.header,
        "claims": result.claims,
        "kid": result.kid,
        "key_binding": result.key_binding,
        "disclosed": len(result.disclosures),
    }
