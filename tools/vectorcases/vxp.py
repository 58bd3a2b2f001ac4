"""Vector cases of vxp: RFC 9162 Merkle trees, proofs and checkpoints; RFC 9901 SD-JWT.

Keys are derived from fixed labels (never use them elsewhere); randomness is fixed hex;
clocks are fixed. Negative cases come from good ones by :func:`derive`, one per mutation
class; the SD-JWT cases an honest issuer cannot produce (reserved names, duplicate
digests, ...) are signed here with the library's private JWS helper.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from joserfc.jwk import ECKey, OKPKey

from vectorlib import Case, Mutation, derive, flip_char, suite
from vxp import _jws, _keys

_P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def _ec_jwk(label: str) -> dict[str, Any]:
    scalar = int.from_bytes(hashlib.sha256(label.encode()).digest(), "big") % (_P256_N - 1) + 1
    key = ECKey.import_key(ec.derive_private_key(scalar, ec.SECP256R1()))
    return dict(key.as_dict(private=True))


def _ed_jwk(label: str) -> dict[str, Any]:
    seed = hashlib.sha256(label.encode()).digest()
    key = OKPKey.import_key(ed25519.Ed25519PrivateKey.from_private_bytes(seed))
    return dict(key.as_dict(private=True))


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _public(jwk: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in jwk.items() if k != "d"}


ISSUER = _ec_jwk("vxp vectors: issuer")
HOLDER = _ec_jwk("vxp vectors: holder")
OTHER = _ec_jwk("vxp vectors: someone else")
LOG_ED = _ed_jwk("vxp vectors: log (Ed25519)")
LOG_EC = _ec_jwk("vxp vectors: log (P-256)")
WITNESS_A = _ed_jwk("vxp vectors: witness A")
WITNESS_B = _ec_jwk("vxp vectors: witness B")

# The Ed25519 identity point (order 1) and a signature (R = identity, S = 0) that OpenSSL
# accepts for every message under it.
SMALL_ORDER_ED = {"kty": "OKP", "crv": "Ed25519", "x": _b64u(bytes([1]) + bytes(31))}
FORGED_ED_SIG = bytes([1]) + bytes(63)

KEY_NOTES = {
    "derived": "negative case derived mechanically from a good case",
}


def _hex_leaves(n: int) -> list[str]:
    return [hashlib.sha256(f"leaf {i}".encode()).digest()[: (i % 5) * 3].hex() for i in range(n)]


def _h(raw: bytes) -> str:
    return "sha-256:" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _leaf(hex_data: str) -> bytes:
    return hashlib.sha256(b"\x00" + bytes.fromhex(hex_data)).digest()


def _node(a: bytes, b: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + a + b).digest()


# The RFC 6962 test tree of transparency-dev/merkle (testonly/constants.go), as data.
RFC6962_LEAVES = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
]
RFC6962_ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


@suite(
    "vxp.merkle_tree_hash",
    description="RFC 9162 §2.1.1 tree head (MTH) of a list of leaves, with each leaf hash.",
    notes={
        "rfc6962-tree": "the 8-leaf test tree of transparency-dev/merkle; roots transcribed",
        "empty": "the empty tree: SHA-256 of the empty string",
        "large": "a tree whose size is not a power of two and exceeds one level of splits",
    },
)
def tree_hash_cases() -> Iterator[Case]:
    for size in range(9):
        yield Case(
            f"rfc6962-tree-size-{size}",
            {"leaves": RFC6962_LEAVES[:size]},
            output={
                "root": _h(bytes.fromhex(RFC6962_ROOTS[size])),
                "leaf_hashes": [_h(_leaf(x)) for x in RFC6962_LEAVES[:size]],
            },
            comment=f"the first {size} leaves of the RFC 6962 test tree",
            flags=("rfc6962-tree", *(("empty",) if size == 0 else ())),
        )
    leaves = _hex_leaves(21)
    yield Case(
        "twenty-one-leaves",
        {"leaves": leaves},
        comment="21 leaves of varied lengths (0 to 12 bytes); checked by unit tests",
        flags=("large",),
    )


def _inclusion_mutations(size: int) -> list[Mutation]:
    def flip_proof(i: Any) -> None:
        i["proof"][0] = _flip_hash(i["proof"][0])

    return [
        Mutation(
            "flip-proof-byte",
            "one bit of the first proof hash changed",
            flip_proof,
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "flip-root",
            "the root changed",
            lambda i: i.update(root=_flip_hash(i["root"])),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "flip-leaf",
            "the leaf hash changed",
            lambda i: i.update(leaf_hash=_flip_hash(i["leaf_hash"])),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "wrong-index",
            "the index moved by one",
            lambda i: i.update(index=i["index"] ^ 1),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "truncated-proof",
            "the last proof hash removed",
            lambda i: i["proof"].pop(),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "extended-proof",
            "a proof hash appended",
            lambda i: i["proof"].append(i["proof"][0]),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "index-out-of-range",
            "index equal to the tree size",
            lambda i: i.update(index=i["tree_size"]),
            error={"code": "inclusion_index_out_of_range"},
        ),
        Mutation(
            "tree-size-doubled",
            "twice the tree size claimed",
            lambda i: i.update(tree_size=i["tree_size"] * 2),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "padded-hash",
            "base64 padding on the root",
            lambda i: i.update(root=i["root"] + "="),
            error={"code": "malformed_hash"},
        ),
        Mutation(
            "unprefixed-hash",
            "the root without its sha-256: prefix",
            lambda i: i.update(root=i["root"][8:]),
            error={"code": "malformed_hash"},
        ),
    ]


def _flip_hash(text: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(text[8:] + "="))
    raw[0] ^= 1
    return _h(bytes(raw))


def _inclusion_input(leaves: list[str], index: int, size: int) -> dict[str, Any]:
    from ppcheck import run

    out = run("vxp.merkle_inclusion_proof", {"leaves": leaves, "index": index, "tree_size": size})
    assert out.output is not None
    return {"index": index, "tree_size": size, **out.output}


@suite(
    "vxp.merkle_inclusion_proof",
    description="RFC 9162 §2.1.3.1 inclusion proof (audit path) of leaf index in a tree size.",
    notes={
        "rfc6962-tree": "the 8-leaf test tree of transparency-dev/merkle",
        "every-leaf": "one case per leaf of the tree",
        "invalid": "a request the generator must refuse",
        "argument-order": "several arguments are wrong: which check comes first",
    },
)
def inclusion_proof_cases() -> Iterator[Case]:
    for size in (1, 5, 8):
        for index in range(size):
            yield Case(
                f"rfc6962-tree-{size}-leaf-{index}",
                {"leaves": RFC6962_LEAVES, "index": index, "tree_size": size},
                comment=f"leaf {index} of the first {size} leaves; checked against the probes",
                flags=("rfc6962-tree", "every-leaf"),
            )
    yield Case(
        "index-beyond-tree",
        {"leaves": RFC6962_LEAVES, "index": 5, "tree_size": 5},
        error={"code": "inclusion_index_out_of_range"},
        comment="an index must be below the tree size",
        flags=("invalid",),
    )
    yield Case(
        "tree-larger-than-leaves",
        {"leaves": RFC6962_LEAVES, "index": 0, "tree_size": 9},
        error={"code": "tree_size_unknown"},
        comment="the tree size cannot exceed the leaves given",
        flags=("invalid",),
    )
    for name, index, size, code in (
        ("negative-index-in-unknown-tree", -1, 9, "tree_size_unknown"),
        ("negative-index", -1, 5, "merkle_argument_invalid"),
        ("negative-tree-size", 7, -1, "merkle_argument_invalid"),
    ):
        yield Case(
            f"order-{name}",
            {"leaves": RFC6962_LEAVES, "index": index, "tree_size": size},
            error={"code": code},
            comment="Ours: tree_size is checked (sign, then against the leaves) before index",
            flags=("invalid", "argument-order"),
        )


@suite(
    "vxp.merkle_verify_inclusion",
    description="RFC 9162 §2.1.3.2 verification of an inclusion proof against a root.",
    notes={
        **KEY_NOTES,
        **{m.name: m.comment for m in _inclusion_mutations(3)},
        "power-of-two": "the tree size is a power of two",
        "ragged": "the tree size is not a power of two",
        "argument-order": "several arguments are wrong: which check comes first",
    },
)
def verify_inclusion_cases() -> Iterator[Case]:
    leaves = _hex_leaves(13)
    for size, index in ((8, 5), (13, 6), (13, 11)):
        good = Case(
            f"tree-{size}-leaf-{index}",
            _inclusion_input(leaves, index, size),
            output={"valid": True},
            comment=f"leaf {index} of a {size}-leaf tree",
            flags=("power-of-two" if size & (size - 1) == 0 else "ragged",),
        )
        yield good
        yield from derive(good, _inclusion_mutations(size))
    good_input = _inclusion_input(leaves, 6, 13)
    for name, changes, code in (
        ("malformed-leaf-before-bad-index", {"leaf_hash": "x", "index": -1}, "malformed_hash"),
        (
            "negative-size-before-index-range",
            {"index": 20, "tree_size": -1},
            "merkle_argument_invalid",
        ),
        (
            "index-range-before-proof-length",
            {"index": 13, "proof": []},
            "inclusion_index_out_of_range",
        ),
    ):
        yield Case(
            f"order-{name}",
            {**good_input, **changes},
            error={"code": code},
            comment="Ours: members are read in input order, then signs, range, walk, root",
            flags=("argument-order",),
        )


def _consistency_input(leaves: list[str], size1: int, size2: int) -> dict[str, Any]:
    from ppcheck import run

    out = run("vxp.merkle_consistency_proof", {"leaves": leaves, "size1": size1, "size2": size2})
    assert out.output is not None
    return {"size1": size1, "size2": size2, **out.output}


@suite(
    "vxp.merkle_consistency_proof",
    description="RFC 9162 §2.1.4.1 consistency proof between two tree sizes.",
    notes={
        "rfc6962-tree": "the 8-leaf test tree of transparency-dev/merkle",
        "every-pair": "one case per pair of sizes 1 <= size1 <= size2 <= 8",
        "invalid": "a request the generator must refuse",
    },
)
def consistency_proof_cases() -> Iterator[Case]:
    for size2 in range(1, 9):
        for size1 in range(1, size2 + 1):
            yield Case(
                f"rfc6962-tree-{size1}-to-{size2}",
                {"leaves": RFC6962_LEAVES, "size1": size1, "size2": size2},
                comment="checked against the upstream probes and by the verifier",
                flags=("rfc6962-tree", "every-pair"),
            )
    yield Case(
        "from-empty",
        {"leaves": RFC6962_LEAVES, "size1": 0, "size2": 4},
        error={"code": "consistency_sizes_invalid"},
        comment="size1 = 0 proves nothing and is refused",
        flags=("invalid",),
    )
    yield Case(
        "shrinking",
        {"leaves": RFC6962_LEAVES, "size1": 5, "size2": 4},
        error={"code": "consistency_sizes_invalid"},
        comment="a tree cannot be consistent with a larger earlier tree",
        flags=("invalid",),
    )


def _consistency_mutations() -> list[Mutation]:
    def flip_proof(i: Any) -> None:
        i["proof"][-1] = _flip_hash(i["proof"][-1])

    return [
        Mutation(
            "flip-proof-byte",
            "one bit of the last proof hash changed",
            flip_proof,
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "flip-root1",
            "the first root changed",
            lambda i: i.update(root1=_flip_hash(i["root1"])),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "flip-root2",
            "the second root changed",
            lambda i: i.update(root2=_flip_hash(i["root2"])),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "swapped-roots",
            "root1 and root2 exchanged",
            lambda i: i.update(root1=i["root2"], root2=i["root1"]),
            error={"code": "root_mismatch"},
        ),
        Mutation(
            "truncated-proof",
            "the last proof hash removed",
            lambda i: i["proof"].pop(),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "extended-proof",
            "a proof hash appended",
            lambda i: i["proof"].append(i["proof"][0]),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "empty-proof",
            "the proof removed",
            lambda i: i.update(proof=[]),
            error={"code": "proof_wrong_length"},
        ),
        Mutation(
            "size1-zero",
            "size1 set to 0",
            lambda i: i.update(size1=0),
            error={"code": "consistency_sizes_invalid"},
        ),
        Mutation(
            "sizes-reversed",
            "size1 and size2 exchanged",
            lambda i: i.update(size1=i["size2"], size2=i["size1"]),
            error={"code": "consistency_sizes_invalid"},
        ),
    ]


@suite(
    "vxp.merkle_verify_consistency",
    description="RFC 9162 §2.1.4.2 verification of a consistency proof between two roots.",
    notes={
        **KEY_NOTES,
        **{m.name: m.comment for m in _consistency_mutations()},
        "equal-sizes": "size1 = size2: an empty proof and equal roots",
        "power-of-two-size1": "size1 is a power of two (its root is the first proof node)",
        "argument-order": "several arguments are wrong: which check comes first",
    },
)
def verify_consistency_cases() -> Iterator[Case]:
    leaves = _hex_leaves(13)
    for size1, size2 in ((3, 7), (4, 13), (6, 13)):
        good = Case(
            f"tree-{size1}-to-{size2}",
            _consistency_input(leaves, size1, size2),
            output={"valid": True},
            comment=f"a {size2}-leaf tree extends its first {size1} leaves",
            flags=("power-of-two-size1",) if size1 & (size1 - 1) == 0 else (),
        )
        yield good
        yield from derive(good, _consistency_mutations())
    yield Case(
        "equal-sizes",
        {**_consistency_input(leaves, 5, 5), "proof": []},
        output={"valid": True},
        comment="equal sizes, equal roots, empty proof",
        flags=("equal-sizes",),
    )
    equal = _consistency_input(leaves, 5, 5)
    other = _consistency_input(leaves, 6, 6)["root1"]
    for name, changes, code in (
        (
            "equal-sizes-proof-before-roots",
            {"proof": [other], "root2": other},
            "proof_wrong_length",
        ),
        ("equal-sizes-different-roots", {"proof": [], "root2": other}, "root_mismatch"),
        ("sizes-before-proof", {"size1": 0, "proof": [other, other]}, "consistency_sizes_invalid"),
    ):
        yield Case(
            f"order-{name}",
            {**equal, **changes},
            error={"code": code},
            comment="Ours: sizes, then for equal sizes the proof's length, then the roots",
            flags=("argument-order",),
        )


# ---------------------------------------------------------------------------- checkpoints


@suite(
    "vxp.checkpoint_sign",
    description="A log's signed checkpoint {origin, tree_size, root} with witness cosignatures.",
    notes={
        "ed25519": "log key Ed25519 (EdDSA)",
        "es256": "log key P-256 (ES256, RFC 6979 deterministic)",
        "cosigned": "cosigned by witnesses",
    },
)
def checkpoint_sign_cases() -> Iterator[Case]:
    yield Case(
        "ed25519-log-seven-leaves",
        {"origin": "log.example/vxp", "leaves": _hex_leaves(7), "log_key": LOG_ED, "witnesses": []},
        comment="checkpoint of 7 entries signed with an Ed25519 log key",
        flags=("ed25519",),
    )
    yield Case(
        "es256-log-cosigned",
        {
            "origin": "log.example/vxp",
            "leaves": _hex_leaves(7),
            "log_key": LOG_EC,
            "witnesses": [
                {"key": WITNESS_A, "time": 1780000000},
                {"key": WITNESS_B, "time": 1780000001},
            ],
        },
        comment="checkpoint signed with a P-256 log key and cosigned by two witnesses",
        flags=("es256", "cosigned"),
    )


def _signed_checkpoint() -> dict[str, Any]:
    from ppcheck import run

    out = run(
        "vxp.checkpoint_sign",
        {
            "origin": "log.example/vxp",
            "leaves": _hex_leaves(7),
            "log_key": LOG_EC,
            "witnesses": [
                {"key": WITNESS_A, "time": 1780000000},
                {"key": WITNESS_B, "time": 1780000001},
            ],
        },
    )
    assert out.output is not None
    return dict(out.output["signed_checkpoint"])


def _checkpoint_mutations() -> list[Mutation]:
    def flip_sig(i: Any) -> None:
        sig = i["signed_checkpoint"]["signature"]
        sig["sig"] = flip_char(sig["sig"], 3)

    def flip_cosig(i: Any) -> None:
        c = i["signed_checkpoint"]["cosignatures"][0]
        c["sig"] = flip_char(c["sig"], 3)

    def cosig_time(i: Any) -> None:
        i["signed_checkpoint"]["cosignatures"][0]["time"] += 1

    def bigger(i: Any) -> None:
        i["signed_checkpoint"]["checkpoint"]["tree_size"] += 1

    def root(i: Any) -> None:
        cp = i["signed_checkpoint"]["checkpoint"]
        cp["root"] = _flip_hash(cp["root"])

    def origin(i: Any) -> None:
        i["signed_checkpoint"]["checkpoint"]["origin"] = "log.example/other"

    def drop_cosigs(i: Any) -> None:
        i["signed_checkpoint"]["cosignatures"] = []

    def dup_cosig(i: Any) -> None:
        cs = i["signed_checkpoint"]["cosignatures"]
        cs.append(dict(cs[0]))

    def other_key(i: Any) -> None:
        i["log_key"] = _public(OTHER)

    def cosig_as_log(i: Any) -> None:
        sc = i["signed_checkpoint"]
        c = sc["cosignatures"][1]
        sc["signature"] = {"kid": c["kid"], "alg": c["alg"], "sig": c["sig"]}
        i["log_key"] = _public(WITNESS_B)

    def extra_member(i: Any) -> None:
        i["signed_checkpoint"]["checkpoint"]["note"] = "x"

    return [
        Mutation(
            "flip-signature",
            "one character of the log signature changed",
            flip_sig,
            error={"code": "checkpoint_signature_invalid"},
        ),
        Mutation(
            "grown-tree-size",
            "tree_size raised after signing",
            bigger,
            error={"code": "checkpoint_signature_invalid"},
        ),
        Mutation(
            "changed-root",
            "root changed after signing",
            root,
            error={"code": "checkpoint_signature_invalid"},
        ),
        Mutation(
            "changed-origin",
            "origin changed after signing",
            origin,
            error={"code": "checkpoint_signature_invalid"},
        ),
        Mutation(
            "wrong-log-key",
            "verified with another key",
            other_key,
            error={"code": "checkpoint_key_mismatch"},
        ),
        Mutation(
            "cosignature-as-log-signature",
            "a witness cosignature presented as the log's signature, under the witness key",
            cosig_as_log,
            error={"code": "checkpoint_signature_invalid"},
        ),
        Mutation(
            "flip-cosignature",
            "one character of a cosignature changed",
            flip_cosig,
            error={"code": "cosignature_invalid"},
        ),
        Mutation(
            "cosignature-time",
            "a cosignature's time changed",
            cosig_time,
            error={"code": "cosignature_invalid"},
        ),
        Mutation(
            "duplicate-cosignature",
            "the same witness counted twice",
            dup_cosig,
            error={"code": "cosignature_duplicate"},
        ),
        Mutation(
            "no-cosignatures",
            "cosignatures removed (quorum 2)",
            drop_cosigs,
            error={"code": "cosignature_quorum"},
        ),
        Mutation(
            "extra-member",
            "an unknown member added to the checkpoint",
            extra_member,
            error={"code": "checkpoint_invalid"},
        ),
    ]


@suite(
    "vxp.checkpoint_verify",
    description="Verify a signed checkpoint with the log key and a quorum of trusted witnesses.",
    notes={
        **KEY_NOTES,
        **{m.name: m.comment for m in _checkpoint_mutations()},
        "untrusted-witness": "a cosignature by a key not trusted is ignored",
        "small-order-key": "an Ed25519 key of small order, refused as a key",
        "empty-tree": "the empty tree has exactly one root (RFC 9162 §2.1.1)",
    },
)
def checkpoint_verify_cases() -> Iterator[Case]:
    signed = _signed_checkpoint()
    good = Case(
        "es256-log-two-witnesses",
        {
            "signed_checkpoint": signed,
            "log_key": _public(LOG_EC),
            "witness_keys": [_public(WITNESS_A), _public(WITNESS_B)],
            "quorum": 2,
        },
        comment="log signature and both cosignatures verify",
    )
    yield good
    yield from derive(good, _checkpoint_mutations())
    yield Case(
        "untrusted-witness-ignored",
        {
            "signed_checkpoint": signed,
            "log_key": _public(LOG_EC),
            "witness_keys": [_public(WITNESS_B)],
            "quorum": 1,
        },
        comment="only witness B is trusted; A's cosignature is ignored",
        flags=("untrusted-witness",),
    )
    # An Ed25519 key of small order (here the identity point) accepts R = identity, S = 0
    # as a signature of every message under OpenSSL: such a key must be refused.
    forged_cp = {
        "checkpoint": {"origin": "log.example/vxp", "tree_size": 1000, "root": _h(b"\x42" * 32)},
        "signature": {
            "kid": OKPKey.import_key(SMALL_ORDER_ED).thumbprint(),
            "alg": "EdDSA",
            "sig": _b64(FORGED_ED_SIG),
        },
        "cosignatures": [],
    }
    yield Case(
        "small-order-log-key",
        {**good.input, "signed_checkpoint": forged_cp, "log_key": SMALL_ORDER_ED, "quorum": 0},
        error={"code": "key_invalid"},
        comment="an Ed25519 log key of small order, with a signature that verifies for any message",
        flags=("small-order-key",),
    )
    empty = {**signed, "checkpoint": {**signed["checkpoint"], "tree_size": 0}}
    yield Case(
        "empty-tree-wrong-root",
        {**good.input, "signed_checkpoint": empty},
        error={"code": "checkpoint_invalid"},
        comment="a checkpoint of size 0 whose root is not SHA-256 of the empty string",
        flags=("empty-tree",),
    )


# ---------------------------------------------------------------------------- SD-JWT

TYP = "vxp-stmt+sd-jwt"
NOW = 1780000000
RANDOM_HEX = "".join(
    hashlib.sha256(f"vxp vectors: salt {i}".encode()).hexdigest()[:32] for i in range(40)
)

CLAIMS: dict[str, Any] = {
    "iss": "https://issuer.example",
    "iat": 1779990000,
    "exp": 1790000000,
    "sub": "operation-42",
    "given_name": "Ada",
    "address": {"street": "1 Main St", "locality": "Anytown", "country": "ES"},
    "nationalities": ["ES", "PT", "FR"],
}
DISCLOSABLE = [
    ["given_name"],
    ["address"],
    ["address", "street"],
    ["nationalities", 1],
    ["nationalities", 2],
]


@suite(
    "vxp.sd_jwt_issue",
    description="Issue an SD-JWT (RFC 9901): JCS payload, deterministic ES256, fixed salts.",
    notes={
        "decoys": "decoy digests added to every _sd array and hidden array",
        "holder-key": "cnf.jwk of the holder added",
        "recursive": "a disclosure inside a disclosed object",
        "array-elements": "array element disclosures",
        "invalid": "the issuer must refuse",
    },
)
def sd_jwt_issue_cases() -> Iterator[Case]:
    base = {
        "claims": CLAIMS,
        "disclosable": DISCLOSABLE,
        "typ": TYP,
        "issuer_key": ISSUER,
        "random_hex": RANDOM_HEX,
        "decoys": 0,
    }
    yield Case(
        "plain",
        base,
        comment="five disclosures, no decoys, no holder key",
        flags=("recursive", "array-elements"),
    )
    yield Case(
        "decoys-and-holder",
        {**base, "decoys": 2, "holder_key": _public(HOLDER)},
        comment="two decoys per hidden container and a cnf key",
        flags=("decoys", "holder-key", "recursive", "array-elements"),
    )
    yield Case(
        "reserved-claim-name",
        {**base, "claims": {**CLAIMS, "_sd": ["x"]}},
        error={"code": "claim_name_reserved"},
        comment="_sd cannot be a claim name",
        flags=("invalid",),
    )
    yield Case(
        "ellipsis-claim-name",
        {**base, "claims": {**CLAIMS, "...": 1}},
        error={"code": "claim_name_reserved"},
        comment="'...' cannot be a claim name",
        flags=("invalid",),
    )
    yield Case(
        "random-exhausted",
        {**base, "random_hex": RANDOM_HEX[:40]},
        error={"code": "random_source_invalid"},
        comment="the random source runs out",
        flags=("invalid",),
    )
    yield Case(
        "unknown-path",
        {**base, "disclosable": [["nickname"]]},
        error={"code": "sd_path_invalid"},
        comment="a path that is not in the claims",
        flags=("invalid",),
    )


def _issue(**over: Any) -> str:
    from ppcheck import run

    base = {
        "claims": CLAIMS,
        "disclosable": DISCLOSABLE,
        "typ": TYP,
        "issuer_key": ISSUER,
        "random_hex": RANDOM_HEX,
        "decoys": 1,
        "holder_key": _public(HOLDER),
        **over,
    }
    # holder_key=None asks for a token with no holder binding: the member is left out
    base = {k: v for k, v in base.items() if v is not None}
    out = run("vxp.sd_jwt_issue", base)
    assert out.output is not None, out
    return str(out.output["sd_jwt"])


def _present(sd_jwt: str, **kw: Any) -> str:
    from ppcheck import run

    out = run("vxp.sd_jwt_present", {"sd_jwt": sd_jwt, **kw})
    assert out.output is not None, out
    return str(out.output["presentation"])


@suite(
    "vxp.sd_jwt_present",
    description="Build a presentation: chosen disclosures, optionally a KB-JWT (kb+jwt).",
    notes={
        "all": "every disclosure",
        "none": "no disclosure",
        "subset": "the disclosures on and under the chosen paths",
        "key-binding": "with a KB-JWT",
        "invalid": "the holder must refuse",
    },
)
def sd_jwt_present_cases() -> Iterator[Case]:
    sd_jwt = _issue()
    yield Case(
        "all", {"sd_jwt": sd_jwt, "disclose": None}, comment="all disclosures", flags=("all",)
    )
    yield Case(
        "none", {"sd_jwt": sd_jwt, "disclose": []}, comment="only the issuer JWT", flags=("none",)
    )
    yield Case(
        "street-only",
        {"sd_jwt": sd_jwt, "disclose": [["address", "street"]]},
        comment="address (needed to reach street) and street",
        flags=("subset",),
    )
    kb = {"holder_key": HOLDER, "aud": "https://verifier.example", "nonce": "n-1", "iat": NOW}
    yield Case(
        "key-bound",
        {"sd_jwt": sd_jwt, "disclose": [["nationalities", 2]], **kb},
        comment="one array element, bound to the holder key",
        flags=("subset", "key-binding"),
    )
    yield Case(
        "wrong-holder-key",
        {"sd_jwt": sd_jwt, "disclose": [], **kb, "holder_key": OTHER},
        error={"code": "holder_key_mismatch"},
        comment="the holder key is not the cnf key",
        flags=("invalid", "key-binding"),
    )
    yield Case(
        "unknown-path",
        {"sd_jwt": sd_jwt, "disclose": [["iss"]]},
        error={"code": "disclose_path_unknown"},
        comment="iss is always visible: no disclosure lies on it",
        flags=("invalid",),
    )


def _verify_input(token: str, **over: Any) -> dict[str, Any]:
    return {
        "token": token,
        "issuer_keys": [_public(ISSUER)],
        "typ": TYP,
        "now": NOW,
        "algorithms": ["ES256"],
        "key_binding": None,
        **over,
    }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _craft(
    payload: Any, disclosures: list[str], *, header: Any = None, raw_payload: bytes | None = None
) -> str:
    """Sign an arbitrary payload as the issuer (what a malicious or buggy issuer could do)."""
    key = _keys.resolve_key(ISSUER)
    hdr = header if header is not None else {"alg": "ES256", "kid": key.kid, "typ": TYP}
    body = raw_payload if raw_payload is not None else json.dumps(payload).encode()
    signing_input = _b64(json.dumps(hdr).encode()) + "." + _b64(body)
    sig = key.sign(signing_input.encode())
    return signing_input + "." + _b64(sig) + "~" + "".join(d + "~" for d in disclosures)


def _disc(*items: Any) -> str:
    return _b64(json.dumps(list(items)).encode())


def _dig(encoded: str) -> str:
    return _b64(hashlib.sha256(encoded.encode()).digest())


def _crafted_cases() -> Iterator[Case]:
    base = {"iss": "https://issuer.example", "_sd_alg": "sha-256"}
    d_name = _disc("c2FsdA", "name", "Ada")
    d_elem = _disc("c2FsdA", "ES")

    def case(cid: str, token: str, code: str, comment: str) -> Case:
        return Case(
            cid, _verify_input(token), error={"code": code}, comment=comment, flags=("crafted",)
        )

    yield case(
        "digest-duplicate",
        _craft({**base, "_sd": [_dig(d_name), _dig(d_name)]}, [d_name]),
        "digest_duplicate",
        "the same digest twice in one _sd array",
    )
    yield case(
        "digest-duplicate-across-objects",
        _craft({**base, "_sd": [_dig(d_name)], "o": {"_sd": [_dig(d_name)]}}, [d_name]),
        "digest_duplicate",
        "the same digest in two objects",
    )
    d_sd = _disc("c2FsdA", "_sd", ["x"])
    yield case(
        "disclosure-named-sd",
        _craft({**base, "_sd": [_dig(d_sd)]}, [d_sd]),
        "claim_name_reserved",
        "a disclosure whose claim name is _sd",
    )
    d_dots = _disc("c2FsdA", "...", 1)
    yield case(
        "disclosure-named-ellipsis",
        _craft({**base, "_sd": [_dig(d_dots)]}, [d_dots]),
        "claim_name_reserved",
        "a disclosure whose claim name is '...'",
    )
    d_iss = _disc("c2FsdA", "iss", "https://evil.example")
    yield case(
        "name-collides-with-permanent",
        _craft({**base, "_sd": [_dig(d_iss)]}, [d_iss]),
        "claim_name_collision",
        "a disclosure overriding the always-visible iss",
    )
    d_name2 = _disc("c2FsdB", "name", "Eve")
    yield case(
        "name-collides-with-disclosure",
        _craft({**base, "_sd": [_dig(d_name), _dig(d_name2)]}, [d_name, d_name2]),
        "claim_name_collision",
        "two disclosures for the same claim name",
    )
    yield case(
        "array-disclosure-in-sd",
        _craft({**base, "_sd": [_dig(d_elem)]}, [d_elem]),
        "disclosure_kind_mismatch",
        "an array element disclosure referenced from _sd",
    )
    yield case(
        "object-disclosure-in-array",
        _craft({**base, "a": [{"...": _dig(d_name)}]}, [d_name]),
        "disclosure_kind_mismatch",
        "an object member disclosure referenced from '...'",
    )
    d4 = _disc("c2FsdA", "name", "Ada", "extra")
    yield case(
        "disclosure-four-items",
        _craft({**base, "_sd": [_dig(d4)]}, [d4]),
        "disclosure_malformed",
        "a disclosure of four items",
    )
    d1 = _disc("c2FsdA")
    yield case(
        "disclosure-one-item",
        _craft({**base, "_sd": [_dig(d1)]}, [d1]),
        "disclosure_malformed",
        "a disclosure of one item",
    )
    dsalt = _disc(7, "name", "Ada")
    yield case(
        "disclosure-salt-not-string",
        _craft({**base, "_sd": [_dig(dsalt)]}, [dsalt]),
        "disclosure_malformed",
        "a disclosure whose salt is a number",
    )
    dname = _disc("c2FsdA", 7, "Ada")
    yield case(
        "disclosure-name-not-string",
        _craft({**base, "_sd": [_dig(dname)]}, [dname]),
        "disclosure_malformed",
        "a disclosure whose claim name is a number",
    )
    dobj = _b64(b'{"salt": "x"}')
    yield case(
        "disclosure-not-array",
        _craft({**base, "_sd": [_dig(dobj)]}, [dobj]),
        "disclosure_malformed",
        "a disclosure that is a JSON object",
    )
    ddup = _b64(b'["c2FsdA", "name", {"a": 1, "a": 2}]')
    yield case(
        "disclosure-duplicate-member",
        _craft({**base, "_sd": [_dig(ddup)]}, [ddup]),
        "disclosure_malformed",
        "a disclosure value with a repeated member name",
    )
    yield case(
        "sd-alg-unknown",
        _craft({**base, "_sd_alg": "sha-1", "_sd": []}, []),
        "sd_alg_unsupported",
        "_sd_alg names an algorithm we do not support",
    )
    yield case(
        "sd-alg-nested",
        _craft({**base, "address": {"_sd_alg": "sha-256", "city": "x"}}, []),
        "sd_alg_misplaced",
        "_sd_alg below the top level (RFC 9901 §4.1.1)",
    )
    yield case(
        "sd-alg-not-string",
        _craft({**base, "_sd_alg": 256}, []),
        "sd_alg_unsupported",
        "_sd_alg is not a string",
    )
    yield case(
        "sd-not-array",
        _craft({**base, "_sd": _dig(d_name)}, [d_name]),
        "sd_array_invalid",
        "_sd is a string, not an array",
    )
    yield case(
        "digest-padded",
        _craft({**base, "_sd": [_dig(d_name) + "="]}, [d_name]),
        "digest_malformed",
        "a digest with base64 padding",
    )
    yield case(
        "digest-short",
        _craft({**base, "_sd": [_dig(d_name)[:20]]}, []),
        "digest_malformed",
        "a digest of the wrong length",
    )
    yield case(
        "digest-not-string",
        _craft({**base, "_sd": [42]}, []),
        "digest_malformed",
        "a digest that is a number",
    )
    yield case(
        "placeholder-with-extra-member",
        _craft({**base, "a": [{"...": _dig(d_elem), "x": 1}]}, [d_elem]),
        "array_placeholder_invalid",
        "an array placeholder with a second member",
    )
    yield case(
        "ellipsis-as-object-member",
        _craft({**base, "...": "x"}, []),
        "claim_name_reserved",
        "'...' as a claim name in the payload",
    )
    key = _keys.resolve_key(ISSUER)
    yield case(
        "alg-none",
        _craft(base, [], header={"alg": "none", "typ": TYP}),
        "alg_none",
        "alg none is never accepted",
    )
    yield case(
        "alg-hs256",
        _craft(base, [], header={"alg": "HS256", "typ": TYP}),
        "alg_not_allowed",
        "an algorithm outside the allow-list",
    )
    yield case(
        "crit-header",
        _craft(
            base, [], header={"alg": "ES256", "kid": key.kid, "typ": TYP, "crit": ["x"], "x": 1}
        ),
        "crit_unsupported",
        "a critical header extension we do not understand",
    )
    yield case(
        "kid-not-string",
        _craft(base, [], header={"alg": "ES256", "kid": 42, "typ": TYP}),
        "kid_invalid",
        "a numeric kid (RFC 7515 requires a string)",
    )
    yield case(
        "kid-unknown",
        _craft(base, [], header={"alg": "ES256", "kid": "nope", "typ": TYP}),
        "issuer_key_unknown",
        "a kid that names no trusted key",
    )
    yield case(
        "exp-not-number", _craft({**base, "exp": "2030"}, []), "claim_invalid", "exp is a string"
    )
    yield case(
        "payload-duplicate-member",
        _craft(None, [], raw_payload=b'{"iss": "a", "iss": "b"}'),
        "malformed_jwt",
        "the payload repeats a member name",
    )
    yield case("payload-not-object", _craft([1, 2], []), "malformed_jwt", "the payload is an array")
    yield case(
        "exp-beyond-double",
        _craft(None, [], raw_payload=b'{"iss": "a", "exp": 1e400}'),
        "malformed_jwt",
        "exp is 1e400, which a double cannot hold (it would read as infinity: never expiring)",
    )
    hidden_exp = _disc("c2FsdA", "exp", 1700000000)
    yield case(
        "disclosed-exp-expired",
        _craft({**base, "_sd": [_dig(hidden_exp)]}, [hidden_exp]),
        "token_expired",
        "exp is checked after disclosures are processed",
    )


def _kb_token(**kb: Any) -> str:
    """A presentation with a KB-JWT over arbitrary header/payload members."""
    holder = _keys.resolve_key(HOLDER)
    body = _present(_issue(), disclose=[["given_name"]])
    sd_hash = _b64(hashlib.sha256(body.encode()).digest())
    header = {"alg": "ES256", "typ": "kb+jwt", **kb.pop("header", {})}
    payload = {
        "aud": "https://verifier.example",
        "nonce": "n-1",
        "iat": NOW,
        "sd_hash": sd_hash,
        **kb,
    }
    return body + _jws.sign_compact(header, payload, holder, deterministic=True)


def _kb_raw(payload_start: bytes) -> str:
    """A presentation whose KB-JWT payload is raw JSON text: ``payload_start`` + sd_hash."""
    holder = _keys.resolve_key(HOLDER)
    body = _present(_issue(), disclose=[["given_name"]])
    sd_hash = _b64(hashlib.sha256(body.encode()).digest())
    payload = payload_start + b'"sd_hash": "' + sd_hash.encode() + b'"}'
    signing_input = _b64(b'{"alg":"ES256","typ":"kb+jwt"}') + "." + _b64(payload)
    return body + signing_input + "." + _b64(holder.sign(signing_input.encode()))


def _sd_mutations() -> list[Mutation]:
    def tok(fn: Any) -> Any:
        def apply(i: dict[str, Any]) -> None:
            i["token"] = fn(i["token"])

        return apply

    def flip_sig(t: str) -> str:
        jws = t.split("~")[0]
        return flip_char(jws, len(jws) - 10) + t[len(jws) :]

    def flip_header(t: str) -> str:
        return flip_char(t, 5)

    def trailing_bits(t: str) -> str:
        jws = t.split("~")[0]
        last = jws[-1]
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        bumped = alphabet[alphabet.index(last) ^ 1]
        return jws[:-1] + bumped + t[len(jws) :]

    def flip_disclosure(t: str) -> str:
        parts = t.split("~")
        parts[1] = flip_char(parts[1], 11)
        return "~".join(parts)

    def drop_tilde(t: str) -> str:
        return t[:-1]

    def only_jws(t: str) -> str:
        return t.split("~")[0]

    def repeat(t: str) -> str:
        parts = t.split("~")
        return "~".join([*parts[:-1], parts[1], ""])

    def foreign(t: str) -> str:
        return t + _disc("c2FsdA", "nickname", "Eve") + "~"

    def empty(t: str) -> str:
        return t + "~"

    def padded(t: str) -> str:
        parts = t.split("~")
        parts[1] = parts[1] + "=="
        return "~".join(parts)

    def swap_order(t: str) -> str:
        parts = t.split("~")
        return "~".join([parts[0], *reversed(parts[1:-1]), ""])

    def non_ascii(t: str) -> str:
        return t[:-1] + "é~"

    return [
        Mutation(
            "flip-signature",
            "a character of the issuer signature changed",
            tok(flip_sig),
            error={"code": "signature_invalid"},
        ),
        Mutation(
            "flip-header",
            "a character of the header's alg member name changed",
            tok(flip_header),
            error={"code": "alg_not_allowed"},
        ),
        Mutation(
            "trailing-bits",
            "the unused low bits of the last signature character set",
            tok(trailing_bits),
            error={"code": "malformed_jwt"},
        ),
        Mutation(
            "flip-disclosure",
            "a character of a disclosure changed",
            tok(flip_disclosure),
            error={"code": "disclosure_unreferenced"},
        ),
        Mutation(
            "padded-disclosure",
            "base64 padding on a disclosure",
            tok(padded),
            error={"code": "disclosure_malformed"},
        ),
        Mutation(
            "missing-trailing-tilde",
            "the final '~' removed",
            tok(drop_tilde),
            error={"code": "missing_trailing_tilde"},
        ),
        Mutation(
            "bare-jwt",
            "only the issuer-signed JWT, no '~'",
            tok(only_jws),
            error={"code": "missing_trailing_tilde"},
        ),
        Mutation(
            "repeated-disclosure",
            "a disclosure included twice",
            tok(repeat),
            error={"code": "disclosure_repeated"},
        ),
        Mutation(
            "unreferenced-disclosure",
            "a disclosure the issuer never digested",
            tok(foreign),
            error={"code": "disclosure_unreferenced"},
        ),
        Mutation(
            "empty-disclosure",
            "an empty disclosure between two '~'",
            tok(empty),
            error={"code": "disclosure_malformed"},
        ),
        Mutation(
            "non-ascii",
            "a non-ASCII character in the serialization",
            tok(non_ascii),
            error={"code": "sd_jwt_malformed"},
        ),
        Mutation(
            "reordered-disclosures",
            "disclosures reversed (order carries no meaning)",
            tok(swap_order),
            output=None,
        ),
        Mutation(
            "wrong-typ",
            "the verifier expects another typ",
            lambda i: i.update(typ="example+sd-jwt"),
            error={"code": "typ_mismatch"},
        ),
        Mutation(
            "alg-not-allowed",
            "the verifier allows only EdDSA",
            lambda i: i.update(algorithms=["EdDSA"]),
            error={"code": "alg_not_allowed"},
        ),
        Mutation(
            "wrong-issuer-key",
            "verified with another issuer's key",
            lambda i: i.update(issuer_keys=[_public(OTHER)]),
            error={"code": "issuer_key_unknown"},
        ),
        Mutation(
            "expired",
            "now at exp",
            lambda i: i.update(now=CLAIMS["exp"]),
            error={"code": "token_expired"},
        ),
        Mutation(
            "issued-in-future",
            "now before iat",
            lambda i: i.update(now=CLAIMS["iat"] - 1),
            error={"code": "token_issued_in_future"},
        ),
        Mutation(
            "kb-required",
            "the verifier requires key binding",
            lambda i: i.update(key_binding={"aud": "https://verifier.example", "nonce": "n-1"}),
            error={"code": "kb_jwt_missing"},
        ),
    ]


def _kb_mutations() -> list[Mutation]:
    def kb(fn: Any) -> Any:
        def apply(i: dict[str, Any]) -> None:
            i["key_binding"] = fn(dict(i["key_binding"]))

        return apply

    def tok(fn: Any) -> Any:
        def apply(i: dict[str, Any]) -> None:
            i["token"] = fn(i["token"])

        return apply

    def flip_kb_sig(t: str) -> str:
        return flip_char(t, len(t) - 10)

    def strip_kb(t: str) -> str:
        return t[: t.rindex("~") + 1]

    def drop_disclosure(t: str) -> str:
        parts = t.split("~")
        return "~".join([parts[0], *parts[2:]])

    return [
        Mutation(
            "kb-flip-signature",
            "a character of the KB-JWT signature changed",
            tok(flip_kb_sig),
            error={"code": "kb_signature_invalid"},
        ),
        Mutation(
            "kb-stripped", "the KB-JWT removed", tok(strip_kb), error={"code": "kb_jwt_missing"}
        ),
        Mutation(
            "kb-disclosure-dropped",
            "a disclosure removed after binding",
            tok(drop_disclosure),
            error={"code": "kb_sd_hash_mismatch"},
        ),
        Mutation(
            "kb-wrong-nonce",
            "the verifier expects another nonce",
            kb(lambda k: {**k, "nonce": "n-2"}),
            error={"code": "kb_nonce_mismatch"},
        ),
        Mutation(
            "kb-wrong-aud",
            "the verifier is someone else",
            kb(lambda k: {**k, "aud": "https://other.example"}),
            error={"code": "kb_aud_mismatch"},
        ),
        Mutation(
            "kb-too-old",
            "now is past iat + max_age",
            lambda i: i.update(now=NOW + 301),
            error={"code": "kb_iat_invalid"},
        ),
        Mutation(
            "kb-unexpected",
            "the verifier did not ask for key binding",
            lambda i: i.update(key_binding=None),
            error={"code": "kb_jwt_unexpected"},
        ),
    ]


@suite(
    "vxp.sd_jwt_verify",
    description="Verify an SD-JWT or SD-JWT+KB (RFC 9901 §7.1, §7.3) and process its claims.",
    notes={
        **KEY_NOTES,
        **{m.name: m.comment for m in _sd_mutations()},
        **{m.name: m.comment for m in _kb_mutations()},
        "crafted": "signed by the issuer key over a payload an honest issuer never produces",
        "kb": "a KB-JWT is present and required",
        "kb-crafted": "a KB-JWT with a crafted header or payload, signed by the holder key",
        "rfc9901-example": "an example of the RFC 9901 text (draft-22), keys of its Appendix A.5",
    },
)
def sd_jwt_verify_cases() -> Iterator[Case]:
    issued = _issue()
    good = Case(
        "all-disclosed",
        _verify_input(issued),
        comment="every disclosure of a token with decoys and a cnf key",
    )
    yield good
    yield from derive(good, _sd_mutations())
    yield Case(
        "none-disclosed",
        _verify_input(_present(issued, disclose=[])),
        comment="no disclosures: only the always-visible claims",
    )
    policy = {"aud": "https://verifier.example", "nonce": "n-1", "max_age": 300, "leeway": 0}
    bound = _present(
        issued,
        disclose=[["given_name"]],
        holder_key=HOLDER,
        aud=policy["aud"],
        nonce=policy["nonce"],
        iat=NOW,
    )
    kb_good = Case(
        "key-bound",
        _verify_input(bound, key_binding=policy),
        comment="given_name only, bound to the holder key",
        flags=("kb",),
    )
    yield kb_good
    yield from derive(kb_good, _kb_mutations())
    for cid, token, code, comment in (
        ("kb-typ-jwt", _kb_token(header={"typ": "JWT"}), "kb_typ_invalid", "KB-JWT typ is JWT"),
        ("kb-alg-none", _kb_token(header={"alg": "none"}), "kb_alg_none", "KB-JWT alg none"),
        ("kb-iat-missing", _kb_token(iat=None), "kb_iat_invalid", "KB-JWT iat is null"),
        ("kb-iat-future", _kb_token(iat=NOW + 5), "kb_iat_invalid", "KB-JWT issued later"),
        (
            "kb-sd-hash-missing",
            _kb_token(sd_hash=None),
            "kb_sd_hash_mismatch",
            "KB-JWT without sd_hash",
        ),
        ("kb-expired", _kb_token(exp=NOW), "kb_token_expired", "KB-JWT exp is now (RFC 9901 §7.3)"),
        (
            "kb-not-yet-valid",
            _kb_token(nbf=NOW + 1),
            "kb_token_not_yet_valid",
            "KB-JWT nbf is a second after now (RFC 9901 §7.3)",
        ),
        ("kb-exp-not-number", _kb_token(exp=True), "kb_claim_invalid", "KB-JWT exp is true"),
    ):
        yield Case(
            cid,
            _verify_input(token, key_binding=policy),
            error={"code": code},
            comment=comment,
            flags=("kb", "kb-crafted"),
        )
    no_cnf = _issue(holder_key=None)
    holder = _keys.resolve_key(HOLDER)
    body = _present(no_cnf, disclose=[])
    kb_jwt = _jws.sign_compact(
        {"alg": "ES256", "typ": "kb+jwt"},
        {
            "aud": policy["aud"],
            "nonce": "n-1",
            "iat": NOW,
            "sd_hash": _b64(hashlib.sha256(body.encode()).digest()),
        },
        holder,
        deterministic=True,
    )
    yield Case(
        "kb-without-cnf",
        _verify_input(body + kb_jwt, key_binding=policy),
        error={"code": "kb_cnf_missing"},
        comment="the SD-JWT names no holder key",
        flags=("kb", "kb-crafted"),
    )
    huge_iat = _kb_raw(
        b'{"aud": "https://verifier.example", "nonce": "n-1", "iat": 1' + b"0" * 400 + b", "
    )
    yield Case(
        "kb-iat-huge-integer",
        _verify_input(huge_iat, key_binding=policy),
        error={"code": "kb_iat_invalid"},
        comment="KB-JWT iat is a 401-digit integer (no double holds it)",
        flags=("kb", "kb-crafted"),
    )
    # A token whose cnf key is the Ed25519 identity point: anyone could "sign" a KB-JWT.
    base = {"iss": "https://issuer.example", "_sd_alg": "sha-256", "cnf": {"jwk": SMALL_ORDER_ED}}
    weak = _craft(base, [])
    kb_si = (
        _b64(b'{"alg":"EdDSA","typ":"kb+jwt"}')
        + "."
        + _b64(
            json.dumps(
                {
                    "aud": policy["aud"],
                    "iat": NOW,
                    "nonce": "n-1",
                    "sd_hash": _b64(hashlib.sha256(weak.encode()).digest()),
                }
            ).encode()
        )
    )
    yield Case(
        "kb-cnf-small-order-key",
        _verify_input(
            weak + kb_si + "." + _b64(FORGED_ED_SIG),
            key_binding=policy,
            algorithms=["ES256", "EdDSA"],
        ),
        error={"code": "kb_cnf_invalid"},
        comment="cnf.jwk is an Ed25519 key of small order; the KB-JWT signature is a forgery",
        flags=("kb", "kb-crafted"),
    )
    # The holder's own key, its x spelled with a leading zero byte: the same key under
    # another RFC 7638 thumbprint, so refused (one key, one spelling, one kid).
    holder_public = _public(HOLDER)
    respelled = {
        **holder_public,
        "x": _b64(b"\0" + base64.urlsafe_b64decode(holder_public["x"] + "=")),
    }
    body = _craft({**base, "cnf": {"jwk": respelled}}, [])
    holder = _keys.resolve_key(HOLDER)
    kb_claims = {
        "aud": policy["aud"],
        "iat": NOW,
        "nonce": "n-1",
        "sd_hash": _b64(hashlib.sha256(body.encode()).digest()),
    }
    kb_input = _b64(b'{"alg":"ES256","typ":"kb+jwt"}') + "." + _b64(json.dumps(kb_claims).encode())
    yield Case(
        "kb-cnf-key-respelled",
        _verify_input(
            body + kb_input + "." + _b64(holder.sign(kb_input.encode())), key_binding=policy
        ),
        error={"code": "kb_cnf_invalid"},
        comment="cnf.jwk is the holder's key with a 33-byte x (a leading zero byte): not the "
        "canonical encoding of any key (RFC 7518 §6.2.1.2), refused although the KB-JWT "
        "signature is the holder's",
        flags=("kb", "kb-crafted"),
    )
    yield from _crafted_cases()
    yield from _rfc_examples()


def _rfc_examples() -> Iterator[Case]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "vectors" / "third_party" / "sd-jwt"
    keys = json.loads((root / "keys.json").read_text())
    examples = json.loads((root / "rfc9901_draft22_compact_examples.json").read_text())
    for ex in examples["examples"]:
        kb = ex["key_binding"]
        policy = (
            None
            if kb is None
            else {
                "aud": kb["expected_aud"],
                "nonce": kb["expected_nonce"],
                "max_age": 300,
                "leeway": 0,
            }
        )
        yield Case(
            f"rfc9901-{ex['id']}",
            {
                "token": ex["sd_jwt"],
                "issuer_keys": [keys["issuer_public"]],
                "typ": ex["typ"],
                "now": 1748537243,
                "algorithms": ["ES256"],
                "key_binding": policy,
            },
            output={
                "header": {"alg": "ES256", "typ": ex["typ"]},
                "claims": ex["processed_payload"],
                "kid": _keys.resolve_key(keys["issuer_public"]).kid,
                "key_binding": None if kb is None else kb["kb_jwt_payload"],
                "disclosed": ex["n_disclosures"],
            },
            comment=f"RFC 9901 (draft-22) {ex['section'].split('  ')[0]} "
            f"{ex['section'].split('  ')[-1]}",
            flags=("rfc9901-example",) + (("kb",) if kb else ()),
        )
