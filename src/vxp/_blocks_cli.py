"""Command line for the building blocks: SD-JWT and Merkle log subcommands of ``vxp``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, cast

from _ppcli.rules import read_input

from ._checkpoint import verify_checkpoint, verify_cosignatures
from ._codec import b64url_decode, decode_hash, encode_hash, parse_json
from ._merkle import leaf_hash, tree_hash, verify_consistency, verify_inclusion
from ._sdjwt import KeyBinding, SdJwt, verify_sd_jwt
from .errors import VxpError

__all__ = ["add_block_commands"]


def _read(path: str) -> bytes:
    try:
        return read_input(path)  # "-": standard input; at most MAX_INPUT_BYTES
    except OSError as exc:
        raise VxpError("file_unreadable", f"cannot read {path}") from exc


def _json_file(path: str) -> Any:
    return parse_json(_read(path), path, code="file_invalid")


def _print(value: Any) -> None:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except (UnicodeEncodeError, LookupError):
        # a lone surrogate ("\ud800" in the JSON) or a narrow terminal: escape it all
        text = json.dumps(value, indent=2)
    print(text)


def _sdjwt_decode(args: argparse.Namespace) -> int:
    token = SdJwt.parse(_read(args.token).decode("ascii", "replace").strip())
    head, payload, _ = [*token.jws.split("."), "", ""][:3]
    _print(
        {
            "header": parse_json(b64url_decode(head, "header"), "header"),
            "payload": parse_json(b64url_decode(payload, "payload"), "payload"),
            "disclosures": [
                {"salt": d.salt, "name": d.name, "value": d.value, "digest": d.digest()}
                for d in token.disclosures
            ],
            "kb_jwt": token.kb_jwt,
        }
    )
    return 0


def _sdjwt_verify(args: argparse.Namespace) -> int:
    keys = _json_file(args.issuer_jwk)
    if isinstance(keys, dict) and isinstance(keys.get("keys"), list):
        keys = keys["keys"]
    policy = None
    if args.aud is not None or args.nonce is not None:
        if args.aud is None or args.nonce is None:
            raise VxpError("cli_usage", "key binding needs both --aud and --nonce")
        policy = KeyBinding(args.aud, args.nonce, max_age=args.kb_max_age)
    result = verify_sd_jwt(
        _read(args.token).decode("ascii", "replace").strip(),
        keys,
        typ=args.typ,
        now=time.time() if args.now is None else args.now,
        algorithms=args.alg or ("ES256",),
        key_binding=policy,
    )
    _print({"header": result.header, "claims": result.claims, "key_binding": result.key_binding})
    return 0


def _merkle_root(args: argparse.Namespace) -> int:
    hashes = [leaf_hash(_read(p)) for p in args.files]
    _print({"tree_size": len(hashes), "root": encode_hash(tree_hash(hashes))})
    return 0


def _merkle_verify(args: argparse.Namespace) -> int:
    spec = _json_file(args.proof)
    if not isinstance(spec, dict):
        raise VxpError("file_invalid", f"{args.proof} is not a JSON object")
    proof = spec.get("proof")
    if not isinstance(proof, list):
        raise VxpError("file_invalid", f"{args.proof} has no proof list")
    nodes = [decode_hash(p, f"proof[{i}]") for i, p in enumerate(proof)]
    if "leaf_hash" in spec:
        verify_inclusion(
            decode_hash(spec["leaf_hash"], "leaf_hash"),
            cast(int, spec.get("index")),  # verify_inclusion checks the types
            cast(int, spec.get("tree_size")),
            nodes,
            decode_hash(spec.get("root"), "root"),
        )
    else:
        verify_consistency(
            cast(int, spec.get("size1")),
            cast(int, spec.get("size2")),
            decode_hash(spec.get("root1"), "root1"),
            decode_hash(spec.get("root2"), "root2"),
            nodes,
        )
    print("ok")
    return 0


def _checkpoint_verify(args: argparse.Namespace) -> int:
    signed = _json_file(args.checkpoint)
    checkpoint = verify_checkpoint(signed, _json_file(args.log_jwk), origin=args.origin)
    witnesses = [_json_file(p) for p in args.witness_jwk]
    cosigners = verify_cosignatures(signed, witnesses, quorum=args.quorum)
    _print({"checkpoint": checkpoint.to_json(), "witnesses": list(cosigners)})
    return 0


def add_block_commands(sub: Any) -> None:
    """Register the SD-JWT and Merkle subcommands on the ``vxp`` subparsers object ``sub``."""
    dec = sub.add_parser(
        "sd-jwt-decode",
        help="show the header, payload and disclosures of an SD-JWT (no verification)",
        description="Decode a compact SD-JWT without verifying anything.",
    )
    dec.add_argument("token", help="file with the SD-JWT ('-' for standard input)")
    dec.set_defaults(handler=_sdjwt_decode)

    ver = sub.add_parser(
        "sd-jwt-verify",
        help="verify an SD-JWT (RFC 9901 §7) and print its processed claims",
        description="Verify a compact SD-JWT or SD-JWT+KB; exit status 1 with the error code.",
    )
    ver.add_argument("token", help="file with the SD-JWT ('-' for standard input)")
    ver.add_argument("--issuer-jwk", required=True, help="issuer public JWK or JWKS JSON file")
    ver.add_argument("--typ", required=True, help="the expected typ header")
    ver.add_argument("--now", type=float, help="verification time, seconds (default: clock)")
    ver.add_argument("--alg", action="append", help="allowed algorithm (default: ES256)")
    ver.add_argument("--aud", help="require key binding for this audience")
    ver.add_argument("--nonce", help="require key binding with this nonce")
    ver.add_argument("--kb-max-age", type=int, default=300, help="KB-JWT max age, seconds")
    ver.set_defaults(handler=_sdjwt_verify)

    root = sub.add_parser(
        "merkle-root",
        help="print the RFC 9162 tree head of files taken as leaves, in order",
        description="Compute the Merkle tree head of the given files (each file is one leaf).",
    )
    root.add_argument("files", nargs="*", help="leaf files, in order")
    root.set_defaults(handler=_merkle_root)

    mv = sub.add_parser(
        "merkle-verify",
        help="verify an inclusion or consistency proof given as JSON",
        description=(
            "Verify {leaf_hash, index, tree_size, proof, root} (inclusion) or "
            "{size1, size2, root1, root2, proof} (consistency); hashes are sha-256:<b64url>."
        ),
    )
    mv.add_argument("proof", help="the proof JSON file")
    mv.set_defaults(handler=_merkle_verify)

    cv = sub.add_parser(
        "checkpoint-verify",
        help="verify a signed checkpoint and its witness cosignatures",
        description="Verify a signed checkpoint with the log's key and a quorum of witnesses.",
    )
    cv.add_argument("checkpoint", help="signed checkpoint JSON file")
    cv.add_argument("--log-jwk", required=True, help="the log's public JWK file")
    cv.add_argument("--origin", help="the expected log origin")
    cv.add_argument("--witness-jwk", action="append", default=[], help="a trusted witness JWK")
    cv.add_argument("--quorum", type=int, default=0, help="cosignatures needed (default 0)")
    cv.set_defaults(handler=_checkpoint_verify)
