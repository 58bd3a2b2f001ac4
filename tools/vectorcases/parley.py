"""Parley authorization core: canonical JSON, hashes, keys, proofs, grants, consent, spend.

Fixed clock ``NOW = 1790000000`` and seeds of repeated bytes (principal 0x01, agent 0x02,
sub-agent 0x03, sub-sub-agent 0x04, another principal 0x05, a stranger 0x09), as in the
reference's own conformance files. Expected values are computed here independently of the
library where possible (Python's ``json.dumps`` with sorted keys equals canonical JSON for
the BMP keys and integer values used, ``hashlib`` gives block ids) and stated explicitly.

The same fixtures also produce ``vectors/parley/upstream-format/``: files in the format of
the Parley reference's ``conformance/`` folder, so another implementation can run them with
its own reference harness.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import parley
from vectorlib import Case, Mutation, derive, flip_char, raw_file, suite

NOW = 1790000000
TOP = Path(__file__).resolve().parents[2]
THIRD_PARTY = TOP / "vectors" / "third_party" / "parley"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def seed(byte: int) -> str:
    return b64(bytes([byte]) * 32)


SEEDS = {
    "principal": seed(1),
    "agent": seed(2),
    "subagent": seed(3),
    "subsubagent": seed(4),
    "other_principal": seed(5),
    "stranger": seed(9),
}
KEYS = {
    name: parley.key_from_seed(bytes([b]) * 32)
    for name, b in zip(SEEDS, (1, 2, 3, 4, 5, 9), strict=True)
}
PUB = {name: key.public for name, key in KEYS.items()}
P, A, S, SS, OP, X = (KEYS[n] for n in SEEDS)

IDENTITY_POINT = bytes([1]) + bytes(31)
"""The Ed25519 identity point, a small-order key: OpenSSL accepts ``R = it, S = 0`` for it."""
WEAK_PUB = "ed25519:" + base64.urlsafe_b64encode(IDENTITY_POINT).rstrip(b"=").decode("ascii")
FORGED_SIG = base64.urlsafe_b64encode(IDENTITY_POINT + bytes(32)).rstrip(b"=").decode("ascii")
"""A "signature" of every message under WEAK_PUB, made without any private key."""


def oracle_canonical(value: Any) -> str:
    """Independent canonical JSON for BMP keys and integers: Python's own encoder."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def oracle_hash(proposal: dict[str, Any]) -> str:
    hashed = {k: v for k, v in proposal.items() if k not in ("hash", "data")}
    return b64(hashlib.sha256(oracle_canonical(hashed).encode("utf-8")).digest())


def sign_block(key: parley.Key, payload: dict[str, Any]) -> dict[str, Any]:
    return {"p": payload, "s": key.sign(oracle_canonical(payload).encode("utf-8"))}


def encode(blocks: list[dict[str, Any]]) -> str:
    return "pg1." + b64(oracle_canonical(blocks).encode("utf-8"))


def bid(sig: str) -> str:
    return b64(hashlib.sha256(sig.encode("utf-8")).digest())


def ids_of(token: str) -> tuple[str | None, list[str]]:
    """The grant id and block ids of a token, decoded here without the library."""
    try:
        body = token[4:]
        blocks = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        sigs = [b["s"] for b in blocks]
    except (ValueError, KeyError, TypeError):
        return None, []
    out = [bid(s) for s in sigs]
    return out[0], out


def root(
    caveats: list[Any],
    *,
    issuer: parley.Key = P,
    sub: str | None = None,
    nonce: str = "n-root",
    iat: int = NOW - 60,
) -> list[dict[str, Any]]:
    payload = {
        "iss": issuer.public,
        "sub": PUB["agent"] if sub is None else sub,
        "caveats": caveats,
        "iat": iat,
        "nonce": nonce,
    }
    return [sign_block(issuer, payload)]


def extend(
    blocks: list[dict[str, Any]],
    signer: parley.Key,
    sub: str,
    caveats: list[Any],
    *,
    prev: str | None = None,
) -> list[dict[str, Any]]:
    payload = {
        "prev": bid(blocks[-1]["s"]) if prev is None else prev,
        "sub": sub,
        "caveats": caveats,
        "iat": NOW - 30,
    }
    return [*blocks, sign_block(signer, payload)]


SAMPLE_PROPOSAL: dict[str, Any] = {
    "id": "p_order1",
    "capability": "shop.order",
    "summary": "Order 2 coffees for pickup at 09:00",
    "effects": [
        {"op": "create", "target": "order/o1", "detail": "2 x coffee"},
        {"op": "charge", "target": "card/visa-4242", "from": 0, "to": 1250},
    ],
    "cost": {"amount": 1250, "currency": "USD"},
    "risk": "low",
    "undo": {"window": 600},
    "expires": NOW + 600,
}
HASH = oracle_hash(SAMPLE_PROPOSAL)
OTHER_HASH = oracle_hash({**SAMPLE_PROPOSAL, "summary": "Order 20 coffees"})

EVERY_CAVEAT = [
    {"svc": ["shop.example"]},
    {"verbs": ["ASK", "INTENT", "COMMIT", "UNDO"]},
    {"can": ["shop.*"]},
    {"exp": NOW + 3600},
    {"nbf": NOW - 3600},
    {"per": {"max": 5000, "currency": "USD"}},
    {"spend": {"max": 10000, "currency": "USD"}},
    {"risk": "medium"},
]
BASE = root(EVERY_CAVEAT)
BASE_TOKEN = encode(BASE)
ROOT_ID = bid(BASE[0]["s"])


def ctx(**changes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "service": "shop.example",
        "verb": "COMMIT",
        "capability": "shop.order",
        "now": NOW,
        "proposal": {"hash": HASH, "cost": {"amount": 1250, "currency": "USD"}, "risk": "low"},
    }
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def cost(amount: int | None, currency: str = "USD", risk: str = "low", hash_: str = HASH) -> Any:
    return {
        "hash": hash_,
        "cost": None if amount is None else {"amount": amount, "currency": currency},
        "risk": risk,
    }


# --------------------------------------------------------------------------- canonical

CANONICAL_NOTES = {
    "reference": "the value of a case of the Parley reference's canonical.json",
    "escapes": "control characters and the characters next to the escape boundary",
    "order": "key order by code point",
    "astral": "keys outside the Basic Multilingual Plane: code point order, not UTF-16 order",
    "boundary": "the largest and smallest safe integers",
    "refused": "a value canonical JSON refuses",
}


@suite(
    "parley.canonical",
    description="canonical(value): the canonical JSON text of SPEC.md section 10, or a refusal",
    notes=CANONICAL_NOTES,
)
def canonical_cases() -> Iterator[Case]:
    for name, value, flags in (
        ("scalars", [None, True, False, 0, -1, 9007199254740991, ""], ("reference",)),
        ("key-order", {"b": 1, "a": 2, "A": 3, "_": 4, "aa": 5, "a b": 6}, ("order",)),
        ("nested", {"z": {"y": [3, {"x": None}], "a": []}, "m": {}}, ()),
        (
            "every-control",
            {"s": "".join(chr(c) for c in range(0x20)) + '"\\/\x7f\xa0\u2028'},
            ("escapes",),
        ),
        ("unicode", {"s": "café — 東京 🎉  "}, ()),
        ("slash-and-html", {"s": "a/b<c>&"}, ()),
        ("safe-integer-bounds", [9007199254740991, -9007199254740991], ("boundary",)),
        ("empty-containers", [{}, [], ""], ()),
        ("keys-sort-uppercase-first", {"b": 0, "B": 0, "é": 0, "e": 0, "~": 0}, ("order",)),
    ):
        yield Case(
            f"canonical-{name}",
            {"value": value},
            output={"canonical": oracle_canonical(value)},
            comment=f"canonical JSON of the {name.replace('-', ' ')} value",
            flags=flags,
        )
    astral = {"\U0001f600": 1, "\ue000": 2, "z": 3}
    yield Case(
        "canonical-astral-key-order",
        {"value": astral},
        output={"canonical": '{"z":3,"\ue000":2,"\U0001f600":1}'},
        comment="U+E000 sorts before U+1F600 by code point (JCS's UTF-16 order would swap them)",
        flags=("astral", "order"),
    )
    refused = {"code": "invalid_params"}
    for name, value, reason in (
        ("float", {"n": 1.5}, "not_integer"),
        ("float-in-list", [1, 2.25], "not_integer"),
        ("above-safe", {"n": 9007199254740992}, "unsafe_integer"),
        ("below-safe", {"n": -9007199254740992}, "unsafe_integer"),
        ("int64", {"max": 9223372036854775808}, "unsafe_integer"),
        ("lone-surrogate", {"s": "\ud800"}, "not_canonical"),
        ("lone-surrogate-key", {"\udc00": 1}, "not_canonical"),
    ):
        yield Case(
            f"canonical-refuses-{name}",
            {"value": value},
            error={**refused, "reason": reason},
            comment=f"canonical JSON refuses a {name.replace('-', ' ')}",
            flags=("refused",),
        )


# --------------------------------------------------------------------------- proposal hash


@suite(
    "parley.proposal_hash",
    description="proposal_hash(proposal): b64url(sha256(canonical(proposal minus hash, data)))",
    notes={
        "reference": "a proposal of the Parley reference's hash.json",
        "excluded": "a field that is not hashed changes nothing",
        "bound": "a hashed field changes the hash",
        "refused": "the proposal cannot be hashed",
    },
)
def proposal_hash_cases() -> Iterator[Case]:
    good = Case(
        "hash-sample",
        {"proposal": SAMPLE_PROPOSAL},
        output={"hash": HASH},
        comment="the sample order proposal",
    )
    yield good
    yield Case(
        "hash-data-and-hash-excluded",
        {"proposal": {**SAMPLE_PROPOSAL, "data": {"n": 1.5}, "hash": "whatever"}},
        output={"hash": HASH},
        comment="data (even with a float) and hash are not covered",
        flags=("excluded",),
    )
    for name, change in (
        ("summary", {"summary": "Order 20 coffees"}),
        ("cost", {"cost": {"amount": 1251, "currency": "USD"}}),
        ("risk", {"risk": "medium"}),
        ("undo", {"undo": None}),
        ("expires", {"expires": NOW + 660}),
        ("effects", {"effects": SAMPLE_PROPOSAL["effects"][:1]}),
    ):
        changed = {**SAMPLE_PROPOSAL, **change}
        yield Case(
            f"hash-binds-{name}",
            {"proposal": changed},
            output={"hash": oracle_hash(changed)},
            comment=f"changing {name} changes the hash",
            flags=("bound",),
        )
    yield Case(
        "hash-refuses-float-effect",
        {"proposal": {**SAMPLE_PROPOSAL, "effects": [{"op": "charge", "target": "c", "to": 12.5}]}},
        error={"code": "invalid_params", "reason": "not_integer"},
        comment="numbers inside hashed fields must be integers",
        flags=("refused",),
    )
    yield Case(
        "hash-refuses-non-object",
        {"proposal": ["p_1"]},
        error={"code": "invalid_params", "reason": "bad_proposal"},
        comment="a proposal is an object",
        flags=("refused",),
    )


# --------------------------------------------------------------------------- base64url


@suite(
    "parley.b64url_decode",
    description="strict base64url decoding: no padding, only the alphabet, zero trailing bits",
    notes={"refused": "a spelling Python's lenient decoder would accept but Parley refuses"},
)
def b64_cases() -> Iterator[Case]:
    for text, data in (("", b""), ("AQ", b"\x01"), ("AQI", b"\x01\x02"), ("AQID", b"\x01\x02\x03")):
        yield Case(f"b64-{len(data)}-bytes", {"text": text}, output={"hex": data.hex()})
    yield Case("b64-url-alphabet", {"text": "-_8"}, output={"hex": "fbff"})
    for name, text in (
        ("padding", "AQ=="),
        ("padding-single", "AQI="),
        ("standard-alphabet", "+/8"),
        ("whitespace", "AQ ID"),
        ("newline", "AQID\n"),
        ("length-one", "A"),
        ("trailing-bits-2", "AR"),
        ("trailing-bits-3", "AQJ"),
        ("non-ascii", "AQé"),
    ):
        yield Case(
            f"b64-refuses-{name}",
            {"text": text},
            error={"code": "bad_frame", "reason": "bad_base64url"},
            comment=f"{name.replace('-', ' ')} is not canonical unpadded base64url",
            flags=("refused",),
        )


# --------------------------------------------------------------------------- keys


def reference_file(name: str) -> Any:
    return json.loads((THIRD_PARTY / name).read_text(encoding="utf-8"))


@suite(
    "parley.public_key",
    description="the public key 'ed25519:' + b64url(raw) of a 32-byte seed given in b64url",
    notes={
        "reference": "a seed of the Parley reference's keys.json",
        "refused": "not a 32-byte seed",
    },
)
def key_cases() -> Iterator[Case]:
    for index, item in enumerate(reference_file("keys.json")):
        yield Case(
            f"key-reference-{index}",
            {"seed": item["seed"]},
            output={"public": item["public"]},
            flags=("reference",),
        )
    for name, s in SEEDS.items():
        yield Case(
            f"key-{name.replace('_', '-')}",
            {"seed": s},
            output={"public": PUB[name]},
            comment=f"the {name.replace('_', ' ')} key of these vectors",
        )
    yield Case(
        "key-refuses-short-seed",
        {"seed": b64(b"\x01" * 31)},
        error={"code": "bad_argument", "reason": "bad_key"},
        comment="a seed is the caller's own key: a usage error, never sent on the wire",
        flags=("refused",),
    )
    yield Case(
        "key-refuses-padded-seed",
        {"seed": seed(1) + "="},
        error={"code": "bad_frame", "reason": "bad_base64url"},
        flags=("refused",),
    )


# --------------------------------------------------------------------------- proofs


@suite(
    "parley.proof_target",
    description="the proof target of a request by verb (SPEC.md section 6.5)",
    notes={"refused": "no target can be formed, or it would be ambiguous"},
)
def target_cases() -> Iterator[Case]:
    rows: list[tuple[str, dict[str, Any], str]] = [
        ("commit", {"verb": "COMMIT", "proposal_hash": HASH}, HASH),
        ("undo", {"verb": "UNDO", "receipt": "r_91"}, "r_91"),
        ("ask", {"verb": "ASK", "capability": "shop.search"}, "shop.search"),
        ("intent", {"verb": "INTENT", "capability": "shop.order"}, "shop.order"),
        (
            "intent-auto",
            {"verb": "INTENT", "capability": "shop.order", "auto": True, "frame_id": "f_9b2"},
            "auto:shop.order:f_9b2",
        ),
        ("expand", {"verb": "EXPAND", "handle": "h_3kd"}, "h_3kd"),
    ]
    for name, input_, target in rows:
        yield Case(f"target-{name}", input_, output={"target": target})
    for name, input_ in (
        ("hello", {"verb": "HELLO"}),
        ("commit-without-hash", {"verb": "COMMIT"}),
        ("auto-without-frame", {"verb": "INTENT", "capability": "shop.order", "auto": True}),
        ("auto-on-ask", {"verb": "ASK", "capability": "s", "auto": True, "frame_id": "f"}),
        ("auto-on-commit", {"verb": "COMMIT", "proposal_hash": HASH, "auto": True}),
        ("auto-on-undo", {"verb": "UNDO", "receipt": "r_1", "auto": True}),
        ("auto-on-expand", {"verb": "EXPAND", "handle": "h_1", "auto": True}),
        ("lowercase-verb", {"verb": "commit", "proposal_hash": HASH}),
        (
            "auto-capability-colon",
            {"verb": "INTENT", "capability": "shop:order", "auto": True, "frame_id": "f"},
        ),
        ("intent-auto-prefix", {"verb": "INTENT", "capability": "auto:shop.order:f"}),
    ):
        yield Case(
            f"target-refuses-{name}",
            input_,
            error={"code": "invalid_params", "reason": "bad_target"},
            flags=("refused",),
        )


@suite(
    "parley.proof_sign",
    description="sign_proof: {key, ts, sig} over canonical({aud, verb, target, ts})",
    notes={"reference": "a case of the Parley reference's proof.json"},
)
def proof_sign_cases() -> Iterator[Case]:
    for index, item in enumerate(reference_file("proof.json")):
        yield Case(
            f"proof-sign-reference-{index}",
            {k: item[k] for k in ("seed", "aud", "verb", "target", "ts")},
            output={"proof": {"key": item["key"], "ts": item["ts"], "sig": item["sig"]}},
            flags=("reference",),
        )
    for verb, target in (("COMMIT", HASH), ("UNDO", "r_91"), ("ASK", "shop.search")):
        yield Case(
            f"proof-sign-{verb.lower()}",
            {
                "seed": SEEDS["agent"],
                "aud": "shop.example",
                "verb": verb,
                "target": target,
                "ts": NOW,
            },
        )


def _proof(verb: str = "COMMIT", target: str = HASH, ts: int = NOW, key: parley.Key = A) -> Any:
    return parley.sign_proof(key, aud="shop.example", verb=verb, target=target, ts=ts)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(case: dict[str, Any]) -> None:
        node = case
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value

    return apply


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def apply(case: dict[str, Any]) -> None:
        node = case
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        del node[parts[-1]]

    return apply


def _flip_sig(case: dict[str, Any]) -> None:
    case["proof"]["sig"] = flip_char(case["proof"]["sig"], 10)


@suite(
    "parley.proof_verify",
    description="verify_proof: the proof's key, or unauthorized with the failing check",
    notes={
        "derived": "derived from a good case by one mutation",
        "window": "the +-300 second window edge",
        "wrong-aud": "the proof was made for another service",
        "wrong-verb": "the proof was made for another verb",
        "wrong-target": "the proof was made for another target",
        "ts-edited": "ts was changed after signing",
        "sig-flipped": "one signature character changed",
        "sig-truncated": "the signature lost its last character",
        "key-swapped": "the key claims another holder",
        "ts-string": "ts is a string",
        "ts-float": "ts is a non-integer number",
        "key-missing": "the proof has no key",
        "key-unprefixed": "the key lacks its 'ed25519:' prefix",
        "stale": "301 seconds before the service clock",
        "small-order": "a small-order public key, under which signatures can be forged",
        "future": "301 seconds after the service clock",
        "not-object": "the proof is a list",
    },
)
def proof_verify_cases() -> Iterator[Case]:
    good = Case(
        "proof-commit",
        {"proof": _proof(), "aud": "shop.example", "verb": "COMMIT", "target": HASH, "now": NOW},
        output={"key": PUB["agent"]},
        comment="a COMMIT proof checked at the second it was made",
    )
    yield good
    for delta in (300, -300):
        yield Case(
            f"proof-window-{'plus' if delta > 0 else 'minus'}-300",
            {**good.input, "now": NOW + delta},
            output={"key": PUB["agent"]},
            comment="exactly 300 seconds apart is still valid",
            flags=("window",),
        )
    bad = {"code": "unauthorized"}
    yield from derive(
        good,
        [
            Mutation(
                "wrong-aud",
                "",
                _set("aud", "evil.example"),
                {**bad, "reason": "bad_proof_signature"},
            ),
            Mutation(
                "wrong-verb", "", _set("verb", "UNDO"), {**bad, "reason": "bad_proof_signature"}
            ),
            Mutation(
                "wrong-target",
                "",
                _set("target", OTHER_HASH),
                {**bad, "reason": "bad_proof_signature"},
            ),
            Mutation(
                "ts-edited", "", _set("proof.ts", NOW + 1), {**bad, "reason": "bad_proof_signature"}
            ),
            Mutation("sig-flipped", "", _flip_sig, {**bad, "reason": "bad_proof_signature"}),
            Mutation(
                "sig-truncated",
                "",
                lambda c: c["proof"].__setitem__("sig", c["proof"]["sig"][:-1]),
                {**bad, "reason": "bad_proof_signature"},
            ),
            Mutation(
                "key-swapped",
                "",
                _set("proof.key", PUB["stranger"]),
                {**bad, "reason": "bad_proof_signature"},
            ),
            Mutation("ts-string", "", _set("proof.ts", str(NOW)), {**bad, "reason": "bad_proof"}),
            Mutation("ts-float", "", _set("proof.ts", NOW + 0.5), {**bad, "reason": "bad_proof"}),
            Mutation("key-missing", "", _drop("proof.key"), {**bad, "reason": "bad_proof"}),
            Mutation(
                "key-unprefixed",
                "",
                _set("proof.key", PUB["agent"][len("ed25519:") :]),
                {**bad, "reason": "bad_proof"},
            ),
            Mutation("stale", "", _set("now", NOW + 301), {**bad, "reason": "proof_expired"}),
            Mutation("future", "", _set("now", NOW - 301), {**bad, "reason": "proof_expired"}),
            Mutation("not-object", "", _set("proof", ["x"]), {**bad, "reason": "bad_proof"}),
        ],
    )
    yield Case(
        "proof-small-order-key-forgery",
        {
            "proof": {"key": WEAK_PUB, "ts": NOW, "sig": FORGED_SIG},
            "aud": "shop.example",
            "verb": "COMMIT",
            "target": HASH,
            "now": NOW,
        },
        error={"code": "unauthorized", "reason": "bad_proof_signature"},
        comment=(
            "the identity point as key with R = identity, S = 0: valid for every message under "
            "the unbatched Ed25519 equation; small-order keys are refused"
        ),
        flags=("small-order",),
    )


# --------------------------------------------------------------------------- grants: mint, delegate

MALFORMED: list[tuple[str, Any, str]] = [
    ("svc-string", {"svc": "shop.example"}, "caveat_malformed"),
    ("verbs-string", {"verbs": "COMMIT"}, "caveat_malformed"),
    ("can-number-item", {"can": ["shop.*", 7]}, "caveat_malformed"),
    ("risk-extreme", {"risk": "extreme"}, "caveat_malformed"),
    ("risk-tostring", {"risk": "toString"}, "caveat_malformed"),
    ("risk-uppercase", {"risk": "LOW"}, "caveat_malformed"),
    ("exp-string", {"exp": "1"}, "caveat_malformed"),
    ("exp-bool", {"exp": True}, "caveat_malformed"),
    ("nbf-null", {"nbf": None}, "caveat_malformed"),
    ("null-caveat", None, "caveat_malformed"),
    ("list-caveat", [{"exp": NOW}], "caveat_malformed"),
    ("string-caveat", "exp", "caveat_malformed"),
    ("empty-object", {}, "caveat_malformed"),
    ("two-keys", {"exp": NOW + 60, "risk": "low"}, "caveat_malformed"),
    ("per-negative", {"per": {"max": -1, "currency": "USD"}}, "caveat_malformed"),
    ("per-string-max", {"per": {"max": "5000", "currency": "USD"}}, "caveat_malformed"),
    ("per-no-currency", {"per": {"max": 5000}}, "caveat_malformed"),
    ("per-extra-member", {"per": {"max": 5000, "currency": "USD", "x": 1}}, "caveat_malformed"),
    ("spend-negative", {"spend": {"max": -100, "currency": "USD"}}, "caveat_malformed"),
    ("spend-number", {"spend": 100}, "caveat_malformed"),
    ("only-list", {"only": [HASH]}, "caveat_malformed"),
    ("unknown-kind", {"geo": ["EU"]}, "caveat_unknown"),
    ("unknown-uppercase", {"SVC": ["shop.example"]}, "caveat_unknown"),
]


@suite(
    "parley.grant_mint",
    description="mint_grant: a root grant token; malformed and unknown caveats are refused",
    notes={"every-caveat": "one caveat of every kind", "refused": "the caveat fails closed"},
)
def mint_cases() -> Iterator[Case]:
    base = {
        "issuer_seed": SEEDS["principal"],
        "sub": PUB["agent"],
        "caveats": EVERY_CAVEAT,
        "iat": NOW - 60,
        "nonce": "n-root",
    }
    yield Case(
        "mint-every-caveat",
        base,
        output={"token": BASE_TOKEN, "grant": ROOT_ID},
        comment="byte-equal to the token built by hand from the specification",
        flags=("every-caveat",),
    )
    blank = root([])
    yield Case(
        "mint-no-caveats",
        {**base, "caveats": []},
        output={"token": encode(blank), "grant": bid(blank[0]["s"])},
        comment="a root grant without caveats authorizes everything for its principal",
    )
    for name, caveat, reason in MALFORMED:
        yield Case(
            f"mint-refuses-{name}",
            {**base, "caveats": [{"exp": NOW + 60}, caveat]},
            error={"code": "invalid_params", "reason": reason},
            flags=("refused",),
        )
    for name, caveat in (
        ("float-max", {"per": {"max": 12.5, "currency": "USD"}}),
        ("int64-max", {"spend": {"max": 2**63, "currency": "USD"}}),
    ):
        yield Case(
            f"mint-refuses-{name}",
            {**base, "caveats": [caveat]},
            error={"code": "invalid_params", "reason": "caveat_malformed"},
            flags=("refused",),
        )
    yield Case(
        "mint-refuses-bad-sub",
        {**base, "sub": "ed25519:abc"},
        error={"code": "invalid_params", "reason": "bad_key"},
        flags=("refused",),
    )
    yield Case(
        "mint-refuses-small-order-sub",
        {**base, "sub": WEAK_PUB},
        error={"code": "invalid_params", "reason": "bad_key"},
        comment="a grant held by the identity point could be used by anyone who sees it",
        flags=("refused",),
    )


DEPTH2 = extend(
    BASE, A, PUB["subagent"], [{"can": ["shop.order"]}, {"per": {"max": 2000, "currency": "USD"}}]
)
DEPTH3 = extend(DEPTH2, S, PUB["subsubagent"], [{"risk": "low"}, {"exp": NOW + 600}])


@suite(
    "parley.grant_delegate",
    description="delegate: append a block; a caveat wider than the chain's is refused",
    notes={
        "depth": "a chain of two or three blocks",
        "wider": "the new caveat is wider than the chain's effective caveat of its kind",
        "refused": "the delegation is refused for another reason",
        "narrower": "the new caveat is narrower or equal, so it is allowed",
    },
)
def delegate_cases() -> Iterator[Case]:
    base = {
        "token": BASE_TOKEN,
        "holder_seed": SEEDS["agent"],
        "sub": PUB["subagent"],
        "caveats": DEPTH2[1]["p"]["caveats"],
        "iat": NOW - 30,
    }
    yield Case(
        "delegate-depth-2",
        base,
        output={"token": encode(DEPTH2), "blocks": [bid(b["s"]) for b in DEPTH2]},
        flags=("depth",),
    )
    yield Case(
        "delegate-depth-3",
        {
            "token": encode(DEPTH2),
            "holder_seed": SEEDS["subagent"],
            "sub": PUB["subsubagent"],
            "caveats": DEPTH3[2]["p"]["caveats"],
            "iat": NOW - 30,
        },
        output={"token": encode(DEPTH3), "blocks": [bid(b["s"]) for b in DEPTH3]},
        flags=("depth",),
    )
    empty = extend(BASE, A, PUB["subagent"], [])
    yield Case(
        "delegate-empty-inherits",
        {**base, "caveats": []},
        output={"token": encode(empty), "blocks": [bid(b["s"]) for b in empty]},
        comment="an empty caveat list is allowed: the delegate inherits the chain's caveats",
    )
    for name, caveat in (
        ("equal-exp", {"exp": NOW + 3600}),
        ("exact-under-prefix", {"can": ["shop.order.fast"]}),
        ("subprefix", {"can": ["shop.order.*"]}),
        ("per-other-currency", {"per": {"max": 99999, "currency": "EUR"}}),
        ("later-nbf", {"nbf": NOW}),
        ("lower-risk", {"risk": "low"}),
        ("only", {"only": HASH}),
    ):
        allowed = extend(BASE, A, PUB["subagent"], [caveat])
        yield Case(
            f"delegate-allows-{name}",
            {**base, "caveats": [caveat]},
            output={"token": encode(allowed), "blocks": [bid(b["s"]) for b in allowed]},
            flags=("narrower",),
        )
    wider = {"code": "invalid_params", "reason": "caveat_wider"}
    for name, caveat in (
        ("exp", {"exp": NOW + 3601}),
        ("nbf", {"nbf": NOW - 3601}),
        ("per", {"per": {"max": 5001, "currency": "USD"}}),
        ("spend", {"spend": {"max": 10001, "currency": "USD"}}),
        ("risk", {"risk": "high"}),
        ("svc", {"svc": ["shop.example", "bank.example"]}),
        ("verbs", {"verbs": ["COMMIT", "EXPAND"]}),
        ("can-other", {"can": ["bank.transfer"]}),
        ("can-star", {"can": ["*"]}),
        ("can-shorter-prefix", {"can": ["sh*"]}),
    ):
        yield Case(
            f"delegate-refuses-wider-{name}",
            {**base, "caveats": [caveat]},
            error=wider,
            flags=("wider",),
        )
    yield Case(
        "delegate-refuses-wider-than-middle-block",
        {
            "token": encode(DEPTH2),
            "holder_seed": SEEDS["subagent"],
            "sub": PUB["subsubagent"],
            "caveats": [{"per": {"max": 3000, "currency": "USD"}}],
            "iat": NOW - 30,
        },
        error=wider,
        comment="3000 is under the root's 5000 but over block 1's 2000",
        flags=("wider", "depth"),
    )
    yield Case(
        "delegate-refuses-non-holder",
        {**base, "holder_seed": SEEDS["stranger"]},
        error={"code": "invalid_params", "reason": "holder_mismatch"},
        comment="only the current holder can append a block",
        flags=("refused",),
    )
    yield Case(
        "delegate-refuses-malformed",
        {**base, "caveats": [{"risk": "toString"}]},
        error={"code": "invalid_params", "reason": "caveat_malformed"},
        flags=("refused",),
    )
    yield Case(
        "delegate-refuses-bad-token",
        {**base, "token": "pg1.!!"},
        error={"code": "unauthorized", "reason": "bad_token"},
        flags=("refused",),
    )


@suite(
    "parley.grant_inspect",
    description="inspect_grant: ids, principal, holder, blocks and the chain's effective caveats",
    notes={"tampered": "a signature does not verify"},
)
def inspect_cases() -> Iterator[Case]:
    yield Case("inspect-root", {"token": BASE_TOKEN})
    yield Case(
        "inspect-depth-3", {"token": encode(DEPTH3)}, comment="caveats narrow to one per kind"
    )
    forged = copy.deepcopy(DEPTH2)
    forged[1]["p"]["caveats"] = []
    yield Case("inspect-tampered", {"token": encode(forged)}, flags=("tampered",))
    yield Case(
        "inspect-refuses-garbage",
        {"token": "pg1.e30"},
        error={"code": "unauthorized", "reason": "bad_token"},
    )


# --------------------------------------------------------------------------- grant verification

VERIFY_NOTES = {
    "every-caveat": "the root grant carries one caveat of every kind but only",
    "caveat": "one caveat kind satisfied or not",
    "boundary": "the exact edge of a caveat's condition",
    "soft": "only per, spend or risk fail: consent_required",
    "malformed": "a malformed or unknown caveat fails closed (forbidden)",
    "signature": "a block signature does not verify",
    "small-order": "a small-order public key, under which signatures can be forged",
    "chain": "the prev links of a delegation chain",
    "trust": "the principal is not trusted",
    "holder": "the proof key is not the grant's holder",
    "token": "the token cannot be decoded",
    "depth": (
        "a chain with 1 to 3 delegations after the root (grant_inspect's depth counts "
        "every block, the root included)"
    ),
    "reason-priority": "hard failures of different reasons in one grant",
    "number-spelling": "a number section 10 forbids, spelled as a lenient signer spells it",
    "multi": "several grants: precedence of the results",
    "consent": "a consent grant's scoping",
    "principal": "the operation must be rooted in a given principal",
    "commit-only": "per, spend, risk, only: satisfied for other verbs, failing without a proposal",
    "undo": "UNDO checks can against the capability of the receipt being undone",
    "spend": "spend totals attributed to a block id",
}

_VERIFY: list[dict[str, Any]] = []
"""Every grant_verify case, also used to write upstream-format/grants.json."""


def _expect(
    tokens: list[str], ok: bool, code: str | None, reason: str | None, need: list[Any], which: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"ok": ok}
    if code is not None:
        out["code"] = code
    if reason is not None:
        out["reason"] = reason
    out["need"] = need
    if reason in ("bad_token", "no_grant"):
        out["grant"], out["blocks"] = None, []
    else:
        gid, blocks = ids_of(tokens[which])
        out["grant"], out["blocks"] = gid, blocks
    return out


def vcase(
    name: str,
    tokens: list[str] | str,
    context: dict[str, Any],
    result: tuple[bool, str | None, str | None],
    *,
    need: list[Any] | None = None,
    which: int = 0,
    proof_key: str | None = None,
    trusted: list[str] | None = None,
    comment: str = "",
    flags: tuple[str, ...] = (),
) -> Case:
    toks = [tokens] if isinstance(tokens, str) else tokens
    input_ = {
        "tokens": toks,
        "trusted": [PUB["principal"]] if trusted is None else trusted,
        "proof_key": PUB["agent"] if proof_key is None else proof_key,
        "ctx": context,
    }
    case = Case(
        f"verify-{name}",
        input_,
        output=_expect(toks, *result, need or [], which),
        comment=comment,
        flags=flags,
    )
    _VERIFY.append({"name": case.id, **input_, "expect": case.output})
    return case


OK = (True, None, None)
FORBID = (False, "forbidden", "caveat_failed")
CONSENT = (False, "consent_required", "caveat_failed")
MALF = (False, "forbidden", "caveat_malformed")


def verify_case_list() -> list[Case]:
    _VERIFY.clear()
    out: list[Case] = []
    add = out.append
    ec = ("every-caveat",)
    add(vcase("commit-ok", BASE_TOKEN, ctx(), OK, comment="every caveat satisfied", flags=ec))
    add(
        vcase(
            "ask-ok",
            BASE_TOKEN,
            ctx(verb="ASK", capability="shop.search", proposal=None),
            OK,
            flags=ec,
        )
    )
    add(vcase("intent-ok", BASE_TOKEN, ctx(verb="INTENT", proposal=None), OK, flags=ec))
    # one caveat at a time, on a root grant holding only it
    single: list[
        tuple[str, Any, dict[str, Any], tuple[bool, str | None, str | None], tuple[str, ...]]
    ] = [
        ("svc-listed", {"svc": ["a.example", "shop.example"]}, ctx(), OK, ()),
        ("svc-unlisted", {"svc": ["a.example"]}, ctx(), FORBID, ()),
        ("svc-substring", {"svc": ["shop.example.evil"]}, ctx(), FORBID, ()),
        ("verbs-listed", {"verbs": ["COMMIT"]}, ctx(), OK, ()),
        ("verbs-unlisted", {"verbs": ["ASK", "INTENT"]}, ctx(), FORBID, ()),
        ("verbs-case", {"verbs": ["commit"]}, ctx(), FORBID, ()),
        ("can-exact", {"can": ["shop.order"]}, ctx(), OK, ()),
        ("can-prefix", {"can": ["shop.*"]}, ctx(), OK, ()),
        ("can-star", {"can": ["*"]}, ctx(), OK, ()),
        ("can-prefix-other", {"can": ["bank.*"]}, ctx(), FORBID, ()),
        ("can-exact-other", {"can": ["shop.order.fast"]}, ctx(), FORBID, ()),
        ("can-inner-star-literal", {"can": ["shop.*der"]}, ctx(), FORBID, ()),
        ("can-empty-list", {"can": []}, ctx(), FORBID, ()),
        ("exp-before", {"exp": NOW + 1}, ctx(), OK, ("boundary",)),
        ("exp-at", {"exp": NOW}, ctx(), FORBID, ("boundary",)),
        ("nbf-at", {"nbf": NOW}, ctx(), OK, ("boundary",)),
        ("nbf-after", {"nbf": NOW + 1}, ctx(), FORBID, ("boundary",)),
        ("per-equal", {"per": {"max": 1250, "currency": "USD"}}, ctx(), OK, ("boundary",)),
        (
            "per-over",
            {"per": {"max": 1249, "currency": "USD"}},
            ctx(),
            CONSENT,
            ("soft", "boundary"),
        ),
        ("per-currency", {"per": {"max": 99999, "currency": "EUR"}}, ctx(), CONSENT, ("soft",)),
        ("per-free", {"per": {"max": 0, "currency": "USD"}}, ctx(proposal=cost(None)), OK, ()),
        ("spend-equal", {"spend": {"max": 1250, "currency": "USD"}}, ctx(), OK, ("boundary",)),
        ("spend-over", {"spend": {"max": 1249, "currency": "USD"}}, ctx(), CONSENT, ("soft",)),
        ("spend-currency", {"spend": {"max": 99999, "currency": "EUR"}}, ctx(), CONSENT, ("soft",)),
        ("risk-equal", {"risk": "low"}, ctx(), OK, ("boundary",)),
        (
            "risk-above",
            {"risk": "low"},
            ctx(proposal=cost(1250, risk="medium")),
            CONSENT,
            ("soft",),
        ),
        ("risk-high-ok", {"risk": "high"}, ctx(proposal=cost(1250, risk="high")), OK, ()),
        ("only-match", {"only": HASH}, ctx(), OK, ()),
        ("only-other", {"only": OTHER_HASH}, ctx(), FORBID, ()),
    ]
    for name, caveat, context, result, extra in single:
        token = encode(root([caveat], nonce=f"n-{name}"))
        need = [] if result[0] else [caveat]
        add(vcase(f"caveat-{name}", token, context, result, need=need, flags=("caveat", *extra)))
    for name, caveat in (
        ("per", {"per": {"max": 1, "currency": "USD"}}),
        ("spend", {"spend": {"max": 1, "currency": "USD"}}),
        ("risk", {"risk": "low"}),
        ("only", {"only": OTHER_HASH}),
    ):
        token = encode(root([caveat], nonce=f"n-commit-only-{name}"))
        add(
            vcase(
                f"commit-only-{name}-ignored-for-ask",
                token,
                ctx(verb="ASK", proposal=None),
                OK,
                flags=("commit-only",),
            )
        )
    add(
        vcase(
            "commit-without-proposal",
            BASE_TOKEN,
            ctx(proposal=None),
            FORBID,
            need=[c for c in EVERY_CAVEAT if next(iter(c)) in ("per", "spend", "risk")],
            comment="**Ours:** COMMIT caveats cannot hold without the proposal: hard failure",
            flags=("commit-only",),
        )
    )
    # spend totals by block id
    spent_token = encode(root([{"spend": {"max": 10000, "currency": "USD"}}], nonce="n-spend"))
    spent_id = ids_of(spent_token)[0]
    add(
        vcase(
            "spend-with-total-fits", spent_token, ctx(spent={spent_id: 8750}), OK, flags=("spend",)
        )
    )
    add(
        vcase(
            "spend-with-total-over",
            spent_token,
            ctx(spent={spent_id: 8751}),
            CONSENT,
            need=[{"spend": {"max": 10000, "currency": "USD"}}],
            flags=("spend", "soft"),
        )
    )
    add(
        vcase(
            "spend-total-of-other-block-ignored",
            spent_token,
            ctx(spent={ROOT_ID: 999999}),
            OK,
            flags=("spend",),
        )
    )
    two = [{"per": {"max": 1000, "currency": "USD"}}, {"svc": ["other.example"]}]
    add(
        vcase(
            "soft-and-hard-is-forbidden",
            encode(root(two, nonce="n-two")),
            ctx(),
            FORBID,
            need=[two[1], two[0]],
            comment="a hard failure wins over a soft one in the same grant; need lists both",
            flags=("soft",),
        )
    )
    # malformed caveats fail closed, whatever the verb
    for name, caveat, reason in MALFORMED:
        token = encode(root([{"exp": NOW + 60}, caveat], nonce=f"n-{name}"))
        add(
            vcase(
                f"malformed-{name}",
                token,
                ctx(verb="ASK", proposal=None),
                (False, "forbidden", reason),
                need=[caveat],
                flags=("malformed",),
            )
        )
    deep: Any = "x"
    for _ in range(40):
        deep = [deep]
    add(
        vcase(
            "malformed-deep-caveat",
            encode(root([{"svc": deep}], nonce="n-deep")),
            ctx(verb="ASK", proposal=None),
            MALF,
            need=[{"nested": "too deep to show"}],
            comment=(
                "Ours: a malformed caveat nested more than 16 levels deep is shown in need "
                "as a placeholder, so no reply carries the token's nesting"
            ),
            flags=("malformed",),
        )
    )
    # Float and int64 money have no section 10 form, but a lenient signer may still have
    # signed the text; the signature then verifies and the caveat fails closed.
    for name, value, text in (
        ("float-money", 12.5, "12.5"),
        ("int64-money", 2**63, str(2**63)),
        # ECMAScript spells 1e-7 as "1e-7" (Python: "1e-07"): a reference-signed token
        # carrying it must reach the caveat check, not fail as a re-spelled token.
        ("js-exponent-money", 1e-7, "1e-7"),
    ):
        payload = {
            "iss": PUB["principal"],
            "sub": PUB["agent"],
            "caveats": [{"per": {"max": 0, "currency": "USD"}}],
            "iat": NOW,
            "nonce": f"n-{name}",
        }
        signed = oracle_canonical(payload).replace('"max":0', f'"max":{text}')
        blocks_text = '[{"p":' + signed + ',"s":"' + P.sign(signed.encode()) + '"}]'
        token = "pg1." + b64(blocks_text.encode())
        add(
            vcase(
                f"malformed-{name}",
                token,
                ctx(verb="ASK", proposal=None),
                MALF,
                need=[{"per": {"currency": "USD", "max": value}}],
                comment="a money cap that is not a safe integer fails closed",
                flags=("malformed",),
            )
        )
        respelled = "pg1." + b64(blocks_text.replace(f'"max":{text}', '"max":1.25e1').encode())
        add(
            vcase(
                f"respelled-{name}",
                respelled,
                ctx(verb="ASK", proposal=None),
                (False, "unauthorized", "bad_token"),
                comment="**Ours:** a token that is not in canonical text form is refused",
                flags=("token",),
            )
        )
    # signatures, chain, trust, holder
    forged = copy.deepcopy(BASE)
    forged[0]["p"]["caveats"] = []
    add(
        vcase(
            "payload-edited",
            encode(forged),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            comment="caveats removed after signing",
            flags=("signature",),
        )
    )
    flipped = copy.deepcopy(BASE)
    flipped[0]["s"] = flip_char(flipped[0]["s"], 20)
    add(
        vcase(
            "sig-flipped",
            encode(flipped),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            flags=("signature",),
        )
    )
    wrong_signer = root(EVERY_CAVEAT)
    wrong_signer[0] = sign_block(A, wrong_signer[0]["p"])
    add(
        vcase(
            "root-signed-by-holder",
            encode(wrong_signer),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            comment="the agent signed a root naming the principal as iss",
            flags=("signature",),
        )
    )
    by_principal = extend(BASE, P, PUB["subagent"], [])
    add(
        vcase(
            "delegation-signed-by-wrong-key",
            encode(by_principal),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            proof_key=PUB["subagent"],
            comment="block 1 must be signed by block 0's sub (the agent), not the principal",
            flags=("signature", "chain"),
        )
    )
    to_weak = root(EVERY_CAVEAT, sub=WEAK_PUB, nonce="n-weak")
    forged_block = {
        "p": {"prev": bid(to_weak[0]["s"]), "sub": PUB["stranger"], "caveats": [], "iat": NOW},
        "s": FORGED_SIG,
    }
    add(
        vcase(
            "small-order-holder-forged-delegation",
            encode([*to_weak, forged_block]),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            proof_key=PUB["stranger"],
            comment=(
                "the root hands the grant to the identity point; a stranger appends a block "
                "'signed' by it with R = identity, S = 0 (accepted by the unbatched Ed25519 "
                "equation for every message). Ours: small-order keys never verify"
            ),
            flags=("signature", "small-order"),
        )
    )
    stray_prev = extend(BASE, A, PUB["subagent"], [], prev=bid("another block"))
    add(
        vcase(
            "prev-mismatch",
            encode(stray_prev),
            ctx(),
            (False, "unauthorized", "broken_chain"),
            proof_key=PUB["subagent"],
            flags=("chain",),
        )
    )
    other_root = root(EVERY_CAVEAT, nonce="n-other")
    spliced = [*other_root, DEPTH2[1]]
    add(
        vcase(
            "block-spliced-onto-other-root",
            encode(spliced),
            ctx(),
            (False, "unauthorized", "broken_chain"),
            proof_key=PUB["subagent"],
            comment="a delegation block moved onto another grant of the same holder",
            flags=("chain",),
        )
    )
    reordered = [DEPTH3[0], DEPTH3[2], DEPTH3[1]]
    add(
        vcase(
            "blocks-reordered",
            encode(reordered),
            ctx(),
            (False, "unauthorized", "bad_signature"),
            proof_key=PUB["subagent"],
            flags=("chain",),
        )
    )
    truncated = DEPTH3[:2]
    add(
        vcase(
            "truncated-chain-needs-its-holder",
            encode(truncated),
            ctx(),
            (False, "unauthorized", "holder_mismatch"),
            proof_key=PUB["subsubagent"],
            comment="dropping the last block hands the grant back to the sub-agent",
            flags=("chain", "holder"),
        )
    )
    add(
        vcase(
            "untrusted-issuer",
            encode(root(EVERY_CAVEAT, issuer=X, nonce="n-x")),
            ctx(),
            (False, "unauthorized", "untrusted_issuer"),
            flags=("trust",),
        )
    )
    add(
        vcase(
            "no-trusted-principals",
            BASE_TOKEN,
            ctx(),
            (False, "unauthorized", "untrusted_issuer"),
            trusted=[],
            flags=("trust",),
        )
    )
    add(
        vcase(
            "holder-is-principal",
            BASE_TOKEN,
            ctx(),
            (False, "unauthorized", "holder_mismatch"),
            proof_key=PUB["principal"],
            flags=("holder",),
        )
    )
    add(
        vcase(
            "holder-is-stranger",
            BASE_TOKEN,
            ctx(),
            (False, "unauthorized", "holder_mismatch"),
            proof_key=PUB["stranger"],
            flags=("holder",),
        )
    )
    add(
        vcase(
            "middle-holder-cannot-use-delegated",
            encode(DEPTH2),
            ctx(),
            (False, "unauthorized", "holder_mismatch"),
            comment="after delegating, the agent is no longer the holder of the longer token",
            flags=("holder", "depth"),
        )
    )
    # tokens that do not decode
    bad_token = (False, "unauthorized", "bad_token")
    base_body = BASE_TOKEN[4:]
    for name, token in (
        ("no-prefix", base_body),
        ("pg2-prefix", "pg2." + base_body),
        ("uppercase-prefix", "PG1." + base_body),
        ("padded", BASE_TOKEN + "="),
        ("not-json", "pg1." + b64(b"not json")),
        ("empty-list", "pg1." + b64(b"[]")),
        ("object-not-list", "pg1." + b64(oracle_canonical(BASE[0]).encode())),
        ("block-without-s", "pg1." + b64(oracle_canonical([{"p": BASE[0]["p"]}]).encode())),
        ("block-extra-member", encode([{**BASE[0], "x": 1}])),
        ("caveats-not-list", encode([sign_block(P, {**BASE[0]["p"], "caveats": {"exp": NOW}})])),
        ("iat-string", encode([sign_block(P, {**BASE[0]["p"], "iat": str(NOW)})])),
        ("iss-not-key", encode([sign_block(P, {**BASE[0]["p"], "iss": "principal"})])),
        (
            "root-without-nonce",
            encode([sign_block(P, {k: v for k, v in BASE[0]["p"].items() if k != "nonce"})]),
        ),
        ("truncated", BASE_TOKEN[:-7]),
        (
            "duplicate-member",
            "pg1."
            + b64(
                (
                    '[{"p":'
                    + oracle_canonical(BASE[0]["p"])
                    + ',"s":"x","s":"'
                    + BASE[0]["s"]
                    + '"}]'
                ).encode()
            ),
        ),
    ):
        add(vcase(f"token-{name}", token, ctx(), bad_token, flags=("token",)))
    add(vcase("token-not-string", [12], ctx(), bad_token, flags=("token",)))  # type: ignore[list-item]
    add(vcase("no-grant", [], ctx(), (False, "unauthorized", "no_grant"), flags=("multi",)))
    # delegation depth 1..3
    d1 = encode(DEPTH2)
    d2 = encode(DEPTH3)
    d3 = encode(extend(DEPTH3, SS, PUB["stranger"], [{"svc": ["shop.example"]}]))
    add(vcase("depth-1-ok", d1, ctx(), OK, proof_key=PUB["subagent"], flags=("depth",)))
    add(
        vcase(
            "depth-1-parent-caveat-binds",
            d1,
            ctx(capability="shop.refund"),
            FORBID,
            need=[{"can": ["shop.order"]}],
            proof_key=PUB["subagent"],
            comment="block 1 narrows can to shop.order",
            flags=("depth",),
        )
    )
    add(
        vcase(
            "depth-1-narrower-per-asks-consent",
            d1,
            ctx(proposal=cost(2500)),
            CONSENT,
            need=[{"per": {"max": 2000, "currency": "USD"}}],
            proof_key=PUB["subagent"],
            comment="2500 passes the root's per of 5000 but not block 1's 2000",
            flags=("depth", "soft"),
        )
    )
    add(vcase("depth-2-ok", d2, ctx(), OK, proof_key=PUB["subsubagent"], flags=("depth",)))
    add(
        vcase(
            "depth-2-root-exp-binds",
            d2,
            ctx(now=NOW + 700, proposal=cost(1250)),
            FORBID,
            need=[{"exp": NOW + 600}],
            proof_key=PUB["subsubagent"],
            flags=("depth",),
        )
    )
    add(vcase("depth-3-ok", d3, ctx(), OK, proof_key=PUB["stranger"], flags=("depth",)))
    widened = encode(
        extend(
            DEPTH2,
            S,
            PUB["subsubagent"],
            [{"can": ["*"]}, {"per": {"max": 10**6, "currency": "USD"}}],
        )
    )
    add(
        vcase(
            "depth-2-wider-block-has-no-effect",
            widened,
            ctx(capability="shop.refund", proposal=cost(4000)),
            FORBID,
            need=[{"can": ["shop.order"]}, {"per": {"max": 2000, "currency": "USD"}}],
            proof_key=PUB["subsubagent"],
            comment="a hand-made block wider than its parent cannot widen: every block is checked",
            flags=("depth",),
        )
    )
    spend_block = encode(
        extend(BASE, A, PUB["subagent"], [{"spend": {"max": 3000, "currency": "USD"}}])
    )
    child_id = ids_of(spend_block)[1][1]
    add(
        vcase(
            "depth-1-spend-per-block",
            spend_block,
            ctx(spent={ROOT_ID: 8000, child_id: 2000}),
            CONSENT,
            need=[{"spend": {"max": 3000, "currency": "USD"}}],
            proof_key=PUB["subagent"],
            comment="the child's own total (2000 + 1250 > 3000) blocks; the root's (9250) fits",
            flags=("depth", "spend", "soft"),
        )
    )
    # several grants
    narrow = encode(root([{"svc": ["other.example"]}], nonce="n-narrow"))
    soft = encode(root([{"per": {"max": 100, "currency": "USD"}}], nonce="n-soft"))
    stranger = encode(root([], issuer=X, nonce="n-stranger"))
    add(
        vcase("multi-second-authorizes", [narrow, BASE_TOKEN], ctx(), OK, which=1, flags=("multi",))
    )
    add(
        vcase(
            "multi-forbidden-over-unauthorized",
            [stranger, narrow],
            ctx(),
            FORBID,
            need=[{"svc": ["other.example"]}],
            which=1,
            flags=("multi",),
        )
    )
    add(
        vcase(
            "multi-consent-over-forbidden",
            [narrow, soft],
            ctx(),
            CONSENT,
            need=[{"per": {"max": 100, "currency": "USD"}}],
            which=1,
            flags=("multi",),
        )
    )
    add(
        vcase(
            "multi-all-unauthorized",
            [stranger, "pg1.x"],
            ctx(),
            (False, "unauthorized", "untrusted_issuer"),
            flags=("multi",),
        )
    )
    split_a = encode(root([{"verbs": ["COMMIT"]}, {"can": ["bank.*"]}], nonce="n-a"))
    split_b = encode(root([{"verbs": ["ASK"]}, {"can": ["shop.*"]}], nonce="n-b"))
    add(
        vcase(
            "multi-no-combining",
            [split_a, split_b],
            ctx(),
            FORBID,
            need=[{"can": ["bank.*"]}],
            comment="each grant must authorize alone: every caveat passes in one of them",
            flags=("multi",),
        )
    )
    # consent grant scoping
    consent = parley.consent_request(
        SAMPLE_PROPOSAL, service="shop.example", principal=PUB["principal"]
    )
    ctok = parley.mint_consent_grant(P, consent, PUB["agent"], iat=NOW, nonce="n-consent")
    five = parley.grants.consent_caveats(consent)
    add(
        vcase(
            "consent-commit-ok",
            ctok,
            ctx(proposal=cost(90000, risk="high")),
            OK,
            flags=("consent",),
        )
    )
    for name, context, blocked in (
        ("other-proposal", ctx(proposal=cost(1250, hash_=OTHER_HASH)), five[3]),
        ("undo", ctx(verb="UNDO", proposal=None), five[1]),
        ("ask", ctx(verb="ASK", proposal=None), five[1]),
        ("other-service", ctx(service="bank.example"), five[0]),
        ("other-capability", ctx(capability="shop.refund"), five[2]),
        ("expired", ctx(now=NOW + 600), five[4]),
    ):
        add(
            vcase(
                f"consent-refuses-{name}", ctok, context, FORBID, need=[blocked], flags=("consent",)
            )
        )
    # principal the operation must be rooted in
    other_p = encode(root(EVERY_CAVEAT, issuer=OP, nonce="n-op"))
    add(
        vcase(
            "principal-mismatch",
            other_p,
            ctx(verb="UNDO", proposal=None, principal=PUB["principal"]),
            (False, "forbidden", "principal_mismatch"),
            trusted=[PUB["principal"], PUB["other_principal"]],
            comment="UNDO of a receipt committed for another principal",
            flags=("principal", "undo"),
        )
    )
    add(
        vcase(
            "principal-selects-grant",
            [other_p, BASE_TOKEN],
            ctx(verb="UNDO", proposal=None, principal=PUB["principal"]),
            OK,
            which=1,
            trusted=[PUB["principal"], PUB["other_principal"]],
            flags=("principal", "multi", "undo"),
        )
    )
    add(
        vcase(
            "undo-can-of-receipt",
            BASE_TOKEN,
            ctx(verb="UNDO", proposal=None, capability="bank.transfer"),
            FORBID,
            need=[{"can": ["shop.*"]}],
            flags=("undo",),
        )
    )
    return out


def _ours(
    name: str,
    token: str,
    result: tuple[bool, str | None, str | None],
    need: list[Any],
    comment: str,
    flags: tuple[str, ...],
) -> Case:
    """A grant_verify case of a decision of ours (kept out of upstream-format/grants.json)."""
    context = ctx(verb="ASK", proposal=None)
    return Case(
        f"verify-{name}",
        {
            "tokens": [token],
            "trusted": [PUB["principal"]],
            "proof_key": PUB["agent"],
            "ctx": context,
        },
        output=_expect([token], *result, need, 0),
        comment=comment,
        flags=flags,
    )


def _lenient_money_token(name: str, text: str) -> str:
    """A root grant whose ``per`` cap is spelled ``text``, signed over exactly that text."""
    payload = {
        "iss": PUB["principal"],
        "sub": PUB["agent"],
        "caveats": [{"per": {"max": 0, "currency": "USD"}}],
        "iat": NOW,
        "nonce": f"n-{name}",
    }
    signed = oracle_canonical(payload).replace('"max":0', f'"max":{text}')
    return "pg1." + b64(('[{"p":' + signed + ',"s":"' + P.sign(signed.encode()) + '"}]').encode())


def _ours_verify_cases() -> Iterator[Case]:
    """Boundaries of our own decisions that issue 24 found unstated (spec/parley.md)."""
    # the 16-level limit of need counts containers (the caveat object is level 1), not
    # scalars: 16 levels are shown as written, 17 become the placeholder
    for levels in (16, 17):
        nested: Any = "x"
        for _ in range(levels - 1):
            nested = [nested]
        caveat = {"svc": nested}
        shown = caveat if levels <= 16 else {"nested": "too deep to show"}
        yield _ours(
            f"malformed-caveat-{levels}-levels",
            encode(root([caveat], nonce=f"n-levels-{levels}")),
            MALF,
            [shown],
            comment=(
                f"Ours: a caveat {levels} containers deep (the caveat object is level 1; a "
                "scalar adds none) is "
                + ("shown as written" if levels <= 16 else "shown as the placeholder")
            ),
            flags=("malformed", "boundary"),
        )
    # the reason is chosen by priority (malformed, then unknown, then failed), not by which
    # caveat came first; need keeps the chain's order
    expired = {"exp": NOW - 10}
    unknown = {"zzz": 1}
    malformed = {"svc": "a.example"}
    for name, caveats, reason in (
        ("failed-unknown-malformed", [expired, unknown, malformed], "caveat_malformed"),
        ("failed-then-unknown", [expired, unknown], "caveat_unknown"),
    ):
        yield _ours(
            f"reason-priority-{name}",
            encode(root(caveats, nonce=f"n-{name}")),
            (False, "forbidden", reason),
            caveats,
            comment=(
                "Ours: the reason is caveat_malformed if any caveat is malformed, else "
                "caveat_unknown if any is unknown, else caveat_failed, whatever their order; "
                "need lists every hard failure in the order of the chain"
            ),
            flags=("malformed", "reason-priority"),
        )
    # a number section 10 forbids keeps its signer's spelling when it is Python's repr or
    # ECMAScript's Number::toString of the same double; any other spelling is bad_token
    for name, value, text in (
        ("python-exponent-money", 1e16, "1e+16"),
        ("python-small-money", 1e-05, "1e-05"),
        ("js-small-money", 1e-05, "0.00001"),
        ("integral-float-money", 1.0, "1.0"),
        ("negative-zero-money", -0.0, "-0.0"),
    ):
        yield _ours(
            f"malformed-{name}",
            _lenient_money_token(name, text),
            MALF,
            [{"per": {"currency": "USD", "max": value}}],
            comment=f"the cap spelled {text} (Python's or ECMAScript's spelling) decodes, then "
            "fails closed: it is not a safe integer",
            flags=("malformed", "number-spelling"),
        )
    for name, text in (
        ("exponent-without-sign", "1e16"),
        ("exponent-one-digit", "1e-5"),
        ("negative-zero-integer", "-0"),
        ("float-with-zero-fraction", "10000000000000000.0"),
    ):
        yield _ours(
            f"respelled-{name}",
            _lenient_money_token(f"re-{name}", text),
            (False, "unauthorized", "bad_token"),
            [],
            comment=f"{text} is neither Python's nor ECMAScript's spelling of its value: a "
            "re-spelled token",
            flags=("token", "number-spelling"),
        )


@suite(
    "parley.grant_verify",
    description=(
        "verify_grant(tokens, trusted, proof_key, ctx): SPEC.md 6.4 steps 1-6; the result "
        "{ok, code?, reason?, need, grant, blocks}"
    ),
    notes=VERIFY_NOTES,
)
def verify_cases() -> Iterator[Case]:
    yield from verify_case_list()
    yield from _ours_verify_cases()
    # Ours only (a bound on work, not a rule of SPEC.md): not written to upstream-format.
    yield Case(
        "verify-too-many-grants",
        {
            "tokens": [BASE_TOKEN] * 17,
            "trusted": [PUB["principal"]],
            "proof_key": PUB["agent"],
            "ctx": ctx(),
        },
        output={
            "ok": False,
            "code": "unauthorized",
            "reason": "too_many_grants",
            "need": [],
            "grant": None,
            "blocks": [],
        },
        comment="Ours: a request presents at most 16 grants, so its signature work is bounded",
        flags=("multi",),
    )


# --------------------------------------------------------------------------- consent


@suite(
    "parley.consent_request",
    description="consent_request: the consent object a service sends with consent_required",
    notes={"refused": "the proposal cannot be consented to"},
)
def consent_request_cases() -> Iterator[Case]:
    base = {"proposal": SAMPLE_PROPOSAL, "service": "shop.example", "principal": PUB["principal"]}
    expected = {
        "proposal": "p_order1",
        "hash": HASH,
        "service": "shop.example",
        "capability": "shop.order",
        "principal": PUB["principal"],
        "summary": SAMPLE_PROPOSAL["summary"],
        "expires": NOW + 600,
    }
    yield Case("consent-request", base, output={"consent": expected})
    yield Case(
        "consent-request-with-correct-hash",
        {**base, "proposal": {**SAMPLE_PROPOSAL, "hash": HASH}},
        output={"consent": expected},
    )
    yield Case(
        "consent-request-refuses-wrong-hash",
        {**base, "proposal": {**SAMPLE_PROPOSAL, "hash": OTHER_HASH}},
        error={"code": "conflict", "reason": "hash_mismatch"},
        flags=("refused",),
    )
    yield Case(
        "consent-request-refuses-bad-principal",
        {**base, "principal": "alice"},
        error={"code": "invalid_params", "reason": "bad_key"},
        flags=("refused",),
    )


CONSENT_OBJECT = {
    "proposal": "p_order1",
    "hash": HASH,
    "service": "shop.example",
    "capability": "shop.order",
    "principal": PUB["principal"],
    "summary": SAMPLE_PROPOSAL["summary"],
    "expires": NOW + 600,
}


@suite(
    "parley.consent_grant",
    description="mint_consent_grant: a root grant with exactly the five scoping caveats",
    notes={"refused": "the consent cannot be signed by this key"},
)
def consent_grant_cases() -> Iterator[Case]:
    five = [
        {"svc": ["shop.example"]},
        {"verbs": ["COMMIT"]},
        {"can": ["shop.order"]},
        {"only": HASH},
        {"exp": NOW + 600},
    ]
    base = {
        "principal_seed": SEEDS["principal"],
        "consent": CONSENT_OBJECT,
        "agent": PUB["agent"],
        "iat": NOW,
        "nonce": "n-consent",
    }
    token = encode(root(five, sub=PUB["agent"], nonce="n-consent", iat=NOW))
    yield Case("consent-grant", base, output={"token": token, "caveats": five})
    yield Case(
        "consent-grant-refuses-other-principal",
        {**base, "principal_seed": SEEDS["other_principal"]},
        error={"code": "invalid_params", "reason": "principal_mismatch"},
        flags=("refused",),
    )
    yield Case(
        "consent-grant-refuses-incomplete",
        {**base, "consent": {k: v for k, v in CONSENT_OBJECT.items() if k != "hash"}},
        error={"code": "invalid_params", "reason": "bad_consent"},
        flags=("refused",),
    )


@suite(
    "parley.consent_check",
    description=(
        "consent_for_shown (agent side): the consent rebuilt from the proposal shown, or a "
        "refusal when the service's request differs"
    ),
    notes={"derived": "derived from the good case by one mutation", "finding": "security review"}
    | {
        n: f"the request's {n.split('-')[1]} differs from the proposal shown"
        for n in ("other-service", "other-hash", "other-proposal", "other-capability")
    }
    | {"summary-differs": "only the summary differs: the shown proposal's summary is used"}
    | {"other-principal": "the request names a principal none of the given principals is"},
)
def consent_check_cases() -> Iterator[Case]:
    good = Case(
        "consent-check",
        {"shown": SAMPLE_PROPOSAL, "service": "shop.example", "request": CONSENT_OBJECT},
        output={"consent": CONSENT_OBJECT},
    )
    yield good
    mismatch = {"code": "conflict", "reason": "consent_mismatch"}
    yield from derive(
        good,
        [
            Mutation(
                "other-service",
                "",
                _set("request.service", "bank.example"),
                mismatch,
                extra_flags=("finding",),
            ),
            Mutation(
                "other-hash",
                "",
                _set("request.hash", OTHER_HASH),
                mismatch,
                extra_flags=("finding",),
            ),
            Mutation("other-proposal", "", _set("request.proposal", "p_other"), mismatch),
            Mutation("other-capability", "", _set("request.capability", "bank.transfer"), mismatch),
            Mutation(
                "other-principal",
                "the request names a principal none of the agent's grants has",
                lambda c: (
                    c.__setitem__("principals", [PUB["principal"]]),
                    c["request"].__setitem__("principal", PUB["other_principal"]),
                ),
                mismatch,
            ),
            Mutation(
                "summary-differs",
                "a friendly summary from the service is not what the principal is shown",
                _set("request.summary", "Just a tiny thing"),
                output={"consent": CONSENT_OBJECT},
            ),
        ],
    )
    yield Case(
        "consent-check-principal-listed",
        {**good.input, "principals": [PUB["other_principal"], PUB["principal"]]},
        output={"consent": CONSENT_OBJECT},
        comment="the request's principal is one of the presented grants' principals",
    )


# --------------------------------------------------------------------------- spend ledger

CAPS = [
    {"block": "b_root", "max": 5000, "currency": "USD"},
    {"block": "b_child", "max": 3000, "currency": "USD"},
]


@suite(
    "parley.spend_ledger",
    description=(
        "MemorySpendLedger: a sequence of reserve/commit/release operations against spend "
        "caps; results per operation (true/false/null or an error) and the final totals"
    ),
    notes={"retry": "a retried reservation of the same key", "release": "a reservation is dropped"},
)
def spend_cases() -> Iterator[Case]:
    over = {"code": "consent_required", "reason": "spend_exceeded"}
    yield Case(
        "spend-fill-to-cap",
        {
            "caps": CAPS,
            "ops": [
                {"op": "reserve", "key": "p1", "amount": 2000, "currency": "USD"},
                {"op": "commit", "key": "p1"},
                {"op": "reserve", "key": "p2", "amount": 1000, "currency": "USD"},
                {"op": "reserve", "key": "p3", "amount": 1, "currency": "USD"},
            ],
        },
        output={"results": [True, None, True, over], "totals": {"b_root": 3000, "b_child": 3000}},
        comment="reservations count against the cap before they are committed",
    )
    yield Case(
        "spend-retry-is-not-refused-by-itself",
        {
            "caps": CAPS,
            "ops": [
                {"op": "reserve", "key": "p1", "amount": 3000, "currency": "USD"},
                {"op": "reserve", "key": "p1", "amount": 3000, "currency": "USD"},
                {"op": "commit", "key": "p1"},
                {"op": "reserve", "key": "p1", "amount": 3000, "currency": "USD"},
                {"op": "commit", "key": "p1"},
            ],
        },
        output={
            "results": [True, False, None, False, None],
            "totals": {"b_root": 3000, "b_child": 3000},
        },
        flags=("retry",),
    )
    yield Case(
        "spend-release-frees",
        {
            "caps": CAPS,
            "ops": [
                {"op": "reserve", "key": "p1", "amount": 3000, "currency": "USD"},
                {"op": "release", "key": "p1"},
                {"op": "reserve", "key": "p2", "amount": 3000, "currency": "USD"},
                {"op": "commit", "key": "p2"},
                {"op": "release", "key": "p2"},
            ],
        },
        output={
            "results": [True, True, True, None, False],
            "totals": {"b_root": 3000, "b_child": 3000},
        },
        comment="a committed reservation is not released (totals are not reduced on UNDO)",
        flags=("release",),
    )
    yield Case(
        "spend-currency-mismatch",
        {"caps": CAPS, "ops": [{"op": "reserve", "key": "p1", "amount": 1, "currency": "EUR"}]},
        output={"results": [over], "totals": {"b_root": 0, "b_child": 0}},
    )


# --------------------------------------------------------------------------- upstream format

UPSTREAM = "parley/upstream-format"


@raw_file(f"{UPSTREAM}/README.md")
def upstream_readme() -> str:
    return """# Parley vectors in the reference's conformance format

These files follow the format of the Parley reference implementation's `conformance/`
folder, so any implementation that already runs the reference's files can run ours with
the same harness (here: `python -m parley.conformance vectors/parley/upstream-format`).
They are generated by `tools/gen_vectors.py` (the authorization core from
`tools/vectorcases/parley.py`; `lens.json` from `tools/vectorcases/parley_lens.py`); do not
edit them by hand.

Fixed clock `now = 1790000000`; seeds of repeated bytes: principal `0x01`*32, agent
`0x02`*32, sub-agent `0x03`*32, sub-sub-agent `0x04`*32, another principal `0x05`*32,
a stranger `0x09`*32 (base64url in `grants.json` `seeds`).

| file | format |
| --- | --- |
| `canonical.json` | `[{name, input, canonical}]` |
| `estimate.json` | `[{text, est}]` |
| `hash.json` | `[{name, proposal, hash}]` |
| `keys.json` | `[{seed, public}]` |
| `proof.json` | `[{seed, aud, verb, target, ts, key, sig}]` |
| `grants.json` | `{seeds, rootSpendBlockId, cases: [{name, token, ..., expect}]}` |
| `lens.json` | `[{name, type: "value" or "reply", input, lens}]` |

`grants.json` covers every caveat kind, every failure code, delegation depth 1 to 3,
consent scoping and malformed caveats; `ctx.spent` maps block ids to amounts already
spent. Cases that need more than one token or a required principal are only in the
common-format suite `vectors/parley/grant-verify.json`.
"""


@raw_file(f"{UPSTREAM}/canonical.json")
def upstream_canonical() -> Any:
    return [
        {"name": c.id, "input": c.input["value"], "canonical": c.output["canonical"]}
        for c in canonical_cases()
        if c.output is not None
    ]


@raw_file(f"{UPSTREAM}/hash.json")
def upstream_hash() -> Any:
    return [
        {"name": c.id, "proposal": c.input["proposal"], "hash": c.output["hash"]}
        for c in proposal_hash_cases()
        if c.output is not None
    ]


@raw_file(f"{UPSTREAM}/keys.json")
def upstream_keys() -> Any:
    return [{"seed": SEEDS[n], "public": PUB[n]} for n in SEEDS]


@raw_file(f"{UPSTREAM}/estimate.json")
def upstream_estimate() -> Any:
    texts = [
        "",
        "Order 2 coffees",
        "items[2]{a,b}:\n  1,2\n  3,4",
        "1234567",
        "\t\r\f\v",
        "\u00a0x",
        "✓ done (receipt r_1) · undo until 2026-09-24T15:00Z",
        "\n\n  \n   x",
        "😀😀",
    ]
    return [{"text": t, "est": parley.lens.estimate(t)} for t in texts]


@raw_file(f"{UPSTREAM}/proof.json")
def upstream_proof() -> Any:
    out = []
    for name, verb, target, ts in (
        ("agent", "COMMIT", HASH, NOW),
        ("agent", "UNDO", "r_91", NOW),
        ("subagent", "ASK", "shop.search", NOW - 300),
        ("agent", "INTENT", "auto:shop.order:f_9b2", NOW),
        ("subsubagent", "EXPAND", "h_3kd", 0),
    ):
        proof = parley.sign_proof(KEYS[name], aud="shop.example", verb=verb, target=target, ts=ts)
        out.append(
            {
                "seed": SEEDS[name],
                "aud": "shop.example",
                "verb": verb,
                "target": target,
                "ts": ts,
                "key": proof["key"],
                "sig": proof["sig"],
            }
        )
    return out


@raw_file(f"{UPSTREAM}/grants.json")
def upstream_grants() -> Any:
    verify_case_list()
    cases = []
    for item in _VERIFY:
        if len(item["tokens"]) != 1 or "principal" in item["ctx"]:
            continue
        expect = {"ok": item["expect"]["ok"]}
        if "code" in item["expect"]:
            expect["code"] = item["expect"]["code"]
        cases.append(
            {
                "name": item["name"],
                "token": item["tokens"][0],
                "trusted": item["trusted"],
                "proofKey": item["proof_key"],
                "ctx": item["ctx"],
                "expect": expect,
            }
        )
    return {"seeds": dict(SEEDS), "rootSpendBlockId": ROOT_ID, "cases": cases}
