"""Binding profile vectors (pp-bind/1): machine terms, one key, the consent grant, the audit.

The errand comes from ``ppbind.demo.demo_errand`` (fixed keys and clock, byte-stable). Its
re-signed attacks (``ppbind.demo.ATTACKS``) break exactly one link each; every other negative
case is derived mechanically from the good errand (a flipped character, a dropped entry,
reordered records, a swapped field).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from typing import Any

import handoff
import ppbind
import ppbind.demo
import vxp
from vectorlib import Case, Mutation, derive, flip_char, suite

TERMS = [
    "item: ben-shop/bike-2291",
    "price: 440.00 EUR",
    "service: bikes.ben.example",
    "collected at the shop by Saturday",
]


def _unreadable(reason: str) -> dict[str, str]:
    return {"code": "binding_terms_unreadable", "reason": reason}


@suite(
    "ppbind.terms_parse",
    description="A PXP proposal's terms -> the machine terms M (item, price in minor units, "
    "service), the PXP proposal_hash and the Parley INTENT params (docs/spec/bindings.md §4).",
    notes={"zero-decimal": "a currency Lens shows without decimals (exponent 0)"},
)
def terms_parse() -> Iterator[Case]:
    yield Case("example", {"terms": TERMS}, comment="the errand's agreed terms")
    yield Case(
        "jpy",
        {"terms": ["item: shop/x", "price: 5000 JPY", "service: s.example"]},
        comment="JPY has no fraction digits",
        flags=("zero-decimal",),
    )
    yield Case(
        "cents",
        {"terms": ["price: 0.50 EUR", "service: s.example", "item: shop/x"]},
        comment="a leading zero only before the point; order does not matter",
    )
    yield Case(
        "free-text-mentions-price",
        {"terms": [*TERMS, "price is fine"]},
        comment="'price is fine' does not begin 'price: ', so it is free text",
    )
    bad = {
        "missing-item": (["price: 1.00 EUR", "service: s"], "missing_item"),
        "missing-price": (["item: x", "service: s"], "missing_price"),
        "missing-service": (["item: x", "price: 1.00 EUR"], "missing_service"),
        "repeated-price": (
            ["item: x", "price: 1.00 EUR", "price: 1.00 EUR", "service: s"],
            "repeated_price",
        ),
        "no-fraction": (["item: x", "price: 440 EUR", "service: s"], "bad_price"),
        "jpy-fraction": (["item: x", "price: 440.00 JPY", "service: s"], "bad_price"),
        "leading-zero": (["item: x", "price: 0440.00 EUR", "service: s"], "bad_price"),
        "sign": (["item: x", "price: -1.00 EUR", "service: s"], "bad_price"),
        "two-spaces": (["item: x", "price: 1.00  EUR", "service: s"], "bad_price"),
        "lowercase-currency": (["item: x", "price: 1.00 eur", "service: s"], "bad_price"),
        "three-decimals": (["item: x", "price: 1.000 KWD", "service: s"], "unsupported_currency"),
        "unsafe-amount": (
            ["item: x", "price: 90071992547409.92 EUR", "service: s"],
            "unsafe_amount",
        ),
        "bad-item": (["item: a b", "price: 1.00 EUR", "service: s"], "bad_item"),
        "bad-service": (["item: x", "price: 1.00 EUR", "service: a b"], "bad_service"),
        "no-space-after-colon": (["item:x", "price: 1.00 EUR", "service: s"], "bad_form"),
    }
    for name, (terms, reason) in bad.items():
        yield Case(name, {"terms": terms}, error=_unreadable(reason), comment=reason)


@suite(
    "ppbind.key_raw",
    description="One person's Ed25519 key in either spelling (Parley ed25519:…, JWK) -> its "
    "32 raw bytes, both spellings and the RFC 7638 thumbprint (docs/spec/bindings.md §2).",
)
def key_raw() -> Iterator[Case]:
    ana = ppbind.PersonKey.from_label("bindings ana")
    yield Case("parley-spelling", {"key": ana.public}, comment="Ana's key as Parley writes it")
    yield Case("jwk-spelling", {"key": ana.public_jwk}, comment="the same key as a JWK")
    jwk = {**ana.public_jwk, "kid": ana.thumbprint, "alg": "Ed25519"}
    yield Case("jwk-with-kid-alg", {"key": jwk}, comment="kid and alg are ignored for identity")
    unsupported = "binding_key_unsupported"
    p256 = {k: v for k, v in vxp.demo_key("bindings shop").as_dict().items() if k != "d"}
    yield Case(
        "p256",
        {"key": p256},
        error={"code": unsupported, "reason": "not_ed25519"},
        comment="Parley has no P-256 keys, so one key cannot serve all three",
    )
    yield Case(
        "private-member",
        {"key": ana.private_jwk()},
        error={"code": unsupported, "reason": "private_member"},
        comment="a private JWK is never a principal's public key",
    )
    identity = "ed25519:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    yield Case(
        "identity-point",
        {"key": identity},
        error={"code": unsupported, "reason": "bad_encoding"},
        comment="the identity point (small order)",
    )
    yield Case(
        "short",
        {"key": ana.public[:-2]},
        error={"code": unsupported, "reason": "bad_encoding"},
        comment="31 bytes",
    )
    yield Case(
        "y-member",
        {"key": {**ana.public_jwk, "y": "AA"}},
        error={"code": unsupported, "reason": "bad_encoding"},
        comment="an OKP key has no y",
    )
    yield Case(
        "rsa",
        {"key": {"kty": "RSA", "n": "AQAB", "e": "AQAB"}},
        error={"code": unsupported, "reason": "not_ed25519"},
        comment="not Ed25519",
    )


def _errand(attack: str | None = None) -> dict[str, Any]:
    return ppbind.demo.demo_errand(attack)


def _record(bundle: dict[str, Any], rid: str) -> dict[str, Any]:
    return next(r for r in bundle["handoff"]["records"] if r["id"] == rid)


@suite(
    "ppbind.consent_grant",
    description="An approve settlement of the Decision -> the consent grant C: Parley's five "
    "consent caveats plus a spend cap of the agreed price, nonce = the settlement's record "
    "digest; nothing is signed within 30 s of the consent's expiry (docs/spec/bindings.md §5.3).",
)
def consent_grant() -> Iterator[Case]:
    bundle = _errand()
    settlement = _record(bundle, "d-settled")
    terms = _record(bundle, "d-raised")["terms"]
    expires = terms["x_binding"]["parley"]["consent"]["expires"]
    seed = hashlib.sha256(b"bindings ana").hexdigest()
    good = {"seed": seed, "settlement": settlement, "terms": terms, "now": 1_796_205_610}
    yield Case("approve", good, comment="the errand's consent grant, byte-exact")
    yield Case("last-second", {**good, "now": expires - 31}, comment="31 s before expiry: signed")
    yield Case(
        "late",
        {**good, "now": expires - 30},
        error={"code": "binding_late"},
        comment="30 s before expiry: her side signs nothing; the agent re-asks",
    )
    yield Case(
        "reject",
        {**good, "settlement": {**settlement, "outcome": "reject"}},
        error={"code": "binding_not_approved"},
        comment="only approve mints a grant",
    )
    other = hashlib.sha256(b"bindings mallory").hexdigest()
    yield Case(
        "other-key",
        {**good, "seed": other},
        error={"code": "binding_consent_mismatch", "reason": "principal"},
        comment="a key that is not the consent's principal",
    )
    moved = copy.deepcopy(terms)
    moved["x_binding"]["parley"]["consent"]["hash"] = flip_char(
        moved["x_binding"]["parley"]["consent"]["hash"], 3
    )
    yield Case(
        "consent-not-the-proposal",
        {**good, "terms": moved},
        error={"code": "binding_consent_mismatch", "reason": "consent"},
        comment="the consent's hash is not the decided proposal's",
    )


def _drop_read_back(b: dict[str, Any]) -> None:
    package = b["vxp"]["package"]
    package["statements"].pop(4)
    package["log"]["entries"].pop(4)


def _swap(b: dict[str, Any]) -> None:
    s = b["vxp"]["package"]["statements"]
    s[2], s[3] = s[3], s[2]


def _flip_settlement(b: dict[str, Any]) -> None:
    record = _record(b, "d-settled")
    proof = record["evidence"]["proof"]
    record["evidence"]["proof"] = flip_char(proof, len(proof) - 5)


def _flip_grant(b: dict[str, Any]) -> None:
    commit = b["parley"]["commit"]
    commit["grants"][0] = flip_char(commit["grants"][0], len(commit["grants"][0]) - 5)


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def apply(b: dict[str, Any]) -> None:
        node = b
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value

    return apply


def _intent_params(b: dict[str, Any]) -> None:
    b["parley"]["intent"]["params"]["price"]["amount"] = 1


def _reverse_records(b: dict[str, Any]) -> None:
    b["handoff"]["records"].reverse()


def _late_receipt(b: dict[str, Any]) -> None:
    b["parley"]["receipt"]["at"] = b["parley"]["proposal"]["expires"]


def _drop_ledger_entry(b: dict[str, Any]) -> None:
    b["pxp"]["ledger"].pop()


@suite(
    "ppbind.audit",
    description="The whole errand as its parties keep it -> the audit report, or the first "
    "broken link: stage 0 the input, stage 1 each protocol's own verification, stage 2 every "
    "link between them (docs/spec/bindings.md §7).",
    notes={
        "resigned": "the attacker holds every key (Ana's too) and re-made every hash and "
        "signature it could, so each protocol's own verification passes and one link breaks",
    },
)
def audit() -> Iterator[Case]:
    good_input = _errand()
    report = ppbind.verify_errand(good_input)
    good = Case("errand", good_input, output=report, comment="the whole errand; the act is done")
    yield good
    yield Case(
        "errand-late-answer",
        ppbind.demo.demo_errand(late_answer=True),
        comment="Ana approved after the offer lapsed: her side signed nothing, the agent got a "
        "fresh offer and amended the decision (revision 2), she approved again",
    )
    expected = {
        "change-price-after-decision": {"code": "binding_terms_changed"},
        "commit-another-proposal": {"code": "binding_wrong_proposal", "reason": "commit"},
        "forge-approval": {"code": "binding_forged_approval"},
        "decision-other-key": {"code": "binding_wrong_key"},
        "grant-other-nonce": {"code": "binding_grant_mismatch", "reason": "nonce"},
        "decision-rejected": {"code": "binding_not_approved"},
        "reuse-decision": {"code": "binding_wrong_proposal", "reason": "commit"},
        "act-other-item": {"code": "binding_act_item", "reason": "item"},
        "release-other-grant": {"code": "binding_release_mismatch"},
        "act-other-decision": {"code": "binding_act_mismatch", "reason": "decision"},
        "act-longer-log": {"code": "binding_log_truncated", "reason": "statements"},
        "act-other-key": {"code": "binding_act_wrong_key", "reason": "key"},
    }
    for attack in ppbind.demo.ATTACKS:
        bundle = _errand(attack)
        if attack == "act-open":
            yield Case("errand-act-open", bundle, comment="before Ana ticks the act")
            strict = copy.deepcopy(bundle)
            strict["policy"]["require_act_done"] = True
            yield Case(
                "act-open-required",
                strict,
                error={"code": "binding_act_open"},
                comment="the policy requires the act done",
                flags=("resigned",),
            )
            continue
        yield Case(
            attack,
            bundle,
            error=expected[attack],
            comment=attack.replace("-", " "),
            flags=("resigned",),
        )
    other = ppbind.PersonKey.from_label("bindings mallory")
    p256 = {k: v for k, v in vxp.demo_key("bindings shop").as_dict().items() if k != "d"}

    def _amend_act(b: dict[str, Any]) -> None:
        h = b["handoff"]
        registry = handoff.Registry(
            roles=handoff.Roles.from_json(h["roles"]), extensions=handoff.EXTENSIONS
        )
        registry.add_many(h["records"])
        act = handoff.ItemId("acts", h["act"]["project"], h["act"]["key"])
        terms = copy.deepcopy(dict(handoff.evidence.terms_at(registry, act, 1) or {}))
        terms["text"] = "Pay Ben another 300 EUR in cash at collection"
        h["records"].append(
            handoff.make_amended(
                registry, act, terms, by="ana-agent", ts="2026-12-02T10:30:00Z", record_id="a2"
            )
        )

    def _deep(b: dict[str, Any]) -> None:
        deep: list[Any] = []
        for _ in range(200):
            deep = [deep]
        b["handoff"]["records"][0]["terms"]["x_deep"] = deep

    impostor = ppbind.demo.demo_errand(shop_keys="impostor")
    yield Case(
        "impostor-shop-keys",
        impostor,
        error={"code": "binding_wrong_company", "reason": "issuer_keys"},
        comment="a shop that knows the issuer's name but signs with other keys than the ones "
        "the agent was configured with",
        flags=("resigned",),
    )
    mutations = [
        Mutation(
            "act-amended-after-done",
            "the agent amends the act (an unsigned requester record) after Ana settled it done",
            _amend_act,
            error={"code": "binding_act_changed"},
        ),
        Mutation(
            "deep-nesting",
            "a Decision's terms carry an array nested 200 deep",
            _deep,
            error={"code": "binding_input_invalid", "reason": "handoff"},
        ),
        Mutation(
            "issuer-keys-other",
            "the agent was configured with other keys for the issuer",
            _set(("mandate", "issuer_keys"), [ppbind.PersonKey.from_label("x").thumbprint]),
            error={"code": "binding_wrong_company", "reason": "issuer_keys"},
        ),
        Mutation(
            "records-reordered",
            "the Handoff records in reverse order (folding is order-free)",
            _reverse_records,
            output=report,
        ),
        Mutation(
            "wrong-profile",
            "another profile",
            _set(("profile",), "pp-bind/2"),
            error={"code": "binding_input_invalid", "reason": "profile"},
        ),
        Mutation(
            "missing-commit",
            "the COMMIT frame left out",
            lambda b: b["parley"].pop("commit"),
            error={"code": "binding_input_invalid", "reason": "parley"},
        ),
        Mutation(
            "p256-principal",
            "the principal is a P-256 key",
            _set(("principal",), p256),
            error={"code": "binding_key_unsupported", "reason": "not_ed25519"},
        ),
        Mutation(
            "principal-not-in-jwks",
            "the principal's key is not in the side's JWKS",
            _set(("principal",), ppbind.PersonKey.from_label("nobody").public),
            error={"code": "binding_key_unsupported", "reason": "not_in_jwks"},
        ),
        Mutation(
            "principal-other-person",
            "the audit is told another person is the principal (her key is held too)",
            _set(("principal",), other.public),
            error={"code": "parley_invalid"},
        ),
        Mutation(
            "ledger-truncated",
            "the last PXP ledger entry dropped",
            _drop_ledger_entry,
            error={"code": "pxp_invalid"},
        ),
        Mutation(
            "settlement-flipped",
            "one character of the settlement's proof flipped",
            _flip_settlement,
            error={"code": "handoff_invalid"},
        ),
        Mutation(
            "grant-flipped",
            "one character of C's signature flipped",
            _flip_grant,
            error={"code": "parley_invalid"},
        ),
        Mutation(
            "intent-params-changed",
            "the INTENT's price changed after it was sent",
            _intent_params,
            error={"code": "vxp_invalid"},
        ),
        Mutation(
            "drop-log-entry",
            "the read-back statement and its log entry dropped",
            _drop_read_back,
            error={"code": "vxp_invalid"},
        ),
        Mutation(
            "statements-reordered",
            "two VXP statements swapped",
            _swap,
            error={"code": "vxp_invalid"},
        ),
        Mutation(
            "over-limit",
            "the errand's limit below the agreed price",
            _set(("mandate", "limit", "amount"), 43999),
            error={"code": "binding_over_limit"},
        ),
        Mutation(
            "other-currency-limit",
            "the errand's limit in another currency",
            _set(("mandate", "limit", "currency"), "USD"),
            error={"code": "binding_over_limit"},
        ),
        Mutation(
            "proof-other-company",
            "the agent trusts another issuer for the shop",
            _set(("mandate", "issuer"), "https://other.example/vxp"),
            error={"code": "binding_wrong_company"},
        ),
        Mutation(
            "receipt-after-expiry",
            "the receipt's time at the consent's expiry",
            _late_receipt,
            error={"code": "binding_receipt_mismatch", "reason": "at"},
        ),
        Mutation(
            "unwitnessed-required",
            "the witness cosignature dropped",
            _set(("vxp", "package", "log", "checkpoint", "cosignatures"), []),
            error={"code": "binding_not_proven", "reason": "logged"},
        ),
    ]
    yield from derive(good, mutations)
