"""ppbind's parts: one key across protocols, machine terms, the seam helpers, bad input."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

import handoff
import parley
import ppbind
import ppbind.demo
import ppbind.errors
import vxp


@pytest.fixture(scope="module")
def errand() -> dict[str, Any]:
    return ppbind.demo.demo_errand()


def test_one_key_in_three_spellings_is_one_person() -> None:
    ana = ppbind.PersonKey.from_label("test ana")
    jwks = handoff.public_jwks(ana.private_jwk())
    assert ppbind.same_key(ana.public, jwks["keys"][0])  # Handoff writes kid and alg too
    assert ppbind.same_key(ana.public_jwk, ana.parley.public)
    assert ppbind.raw_key(ana.public) == ppbind.raw_key(ana.public_jwk)
    assert ppbind.parley_key_of(ana.public_jwk) == ana.public
    assert ana.thumbprint == jwks["keys"][0]["kid"]
    other = ppbind.PersonKey.from_label("test ben")
    assert not ppbind.same_key(ana.public, other.public_jwk)
    assert ana.private_jwk()["d"] not in repr(ana)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}, "not_ed25519"),
        ({"kty": "OKP", "crv": "X25519", "x": "AA"}, "not_ed25519"),
        ({"kty": "OKP", "crv": "Ed25519", "x": 5}, "bad_encoding"),
        ("ed25519:" + "A" * 42 + "=", "bad_encoding"),
        ("x25519:abc", "not_ed25519"),
        (None, "not_ed25519"),
        (["ed25519:abc"], "not_ed25519"),
    ],
)
def test_a_key_that_is_not_one_persons_ed25519_key_is_refused(key: object, reason: str) -> None:
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.raw_key(key)
    assert caught.value.code == "binding_key_unsupported"
    assert caught.value.reason == reason
    assert not ppbind.same_key(key, key)


def test_the_three_signatures_of_one_person_verify_in_their_protocols() -> None:
    ana = ppbind.PersonKey.from_label("test ana")
    record = {
        "ph": "0.3",
        "id": "x",
        "type": "note",
        "origin": "principal",
        "by": "ana",
        "key": "k",
        "project": "p",
        "ts": "2026-12-02T10:00:00Z",
        "note": "hi",
    }
    signed = handoff.attach_proof(record, ana.private_jwk())
    assert handoff.verify_proof(signed, handoff.public_jwks(ana.private_jwk())).alg == "Ed25519"
    grant = parley.mint_grant(ana.parley, ana.public, [{"svc": ["s"]}], iat=1)
    assert parley.decode_grant(grant).principal == ana.public
    payload = vxp.statements.approval_payload(
        "sha-256:" + "A" * 43, 1, "sha-256:" + "B" * 43, "sha-256:x"
    )
    signing_input = vxp.statements.approval_signing_input(ana.public_jwk, payload)
    assert b'"alg":"EdDSA"' in vxp.codec.b64url_decode(signing_input.split(b".")[0].decode(), "h")
    assert len(ana.sign(signing_input)) == 64


def test_machine_terms_round_trip_into_an_intent() -> None:
    terms = ppbind.agreed_terms("shop/bike-1", 44000, "EUR", "bikes.example", "by Saturday")
    assert terms[:3] == ["item: shop/bike-1", "price: 440.00 EUR", "service: bikes.example"]
    params = ppbind.intent_params(terms)
    assert params["price"] == {"amount": 44000, "currency": "EUR"}
    assert ppbind.price_text(5000, "JPY") == "5000 JPY"
    assert ppbind.read_terms(["item: a", "price: 5000 JPY", "service: s"]).amount == 5000
    with pytest.raises(ppbind.BindingError):
        ppbind.read_terms("item: a")
    with pytest.raises(ppbind.BindingError):
        ppbind.price_text(1, "KWD")


def _decided(errand: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    records = {r["id"]: r for r in errand["handoff"]["records"]}
    return records["d-settled"], copy.deepcopy(records["d-raised"]["terms"])


def test_her_side_refuses_to_approve_terms_the_shop_did_not_sign(errand: dict[str, Any]) -> None:
    ana = ppbind.PersonKey.from_label("bindings ana")
    _, terms = _decided(errand)
    assert set(ppbind.approval_for(ana, terms)) == {"user_key", "signature"}
    terms["x_binding"]["parley"]["proposal"]["expires"] += 60  # not what the shop signed
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.approval_for(ana, terms)
    assert caught.value.code == "binding_proof_terms_mismatch"


def test_the_consent_grant_follows_the_decision(errand: dict[str, Any]) -> None:
    ana = ppbind.PersonKey.from_label("bindings ana")
    settlement, terms = _decided(errand)
    consent = terms["x_binding"]["parley"]["consent"]
    token = ppbind.consent_grant(ana, settlement, terms, now=consent["expires"] - 31)
    root = parley.decode_grant(token).blocks[0].payload
    assert root["nonce"] == handoff.digests.digest(settlement)
    assert root["caveats"][:5] == parley.grants.consent_caveats(consent)
    assert root["caveats"][5] == {"spend": {"max": 44000, "currency": "EUR"}}
    assert root["sub"] == terms["x_binding"]["agent"]
    assert ppbind.is_late(consent, consent["expires"] - 30)
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.consent_grant(ana, settlement, terms, now=consent["expires"] - 30)
    assert caught.value.code == "binding_late"


def test_a_decision_is_never_built_from_a_proposal_that_is_not_the_agreement(
    errand: dict[str, Any],
) -> None:
    proposal = errand["parley"]["proposal"]
    args = {
        "service": "bikes.ben.example",
        "capability": "shop.buy",
        "principal": errand["principal"],
        "agent": errand["parley"]["intent"]["proof"]["key"],
        "brief": errand["pxp"]["brief"],
        "ledger_head": errand["pxp"]["brief"]["ledger"]["head"],
    }
    terms = ppbind.decision_terms(proposal=proposal, **args)
    assert terms["due"] == ppbind.rfc3339(proposal["expires"])
    assert terms["x_binding"]["parley"]["consent"]["hash"] == proposal["hash"]
    handoff.decisions.check_decision_terms(terms)
    dearer = {**proposal, "cost": {"amount": 45000, "currency": "EUR"}}
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.decision_terms(proposal=dearer, **args)
    assert (caught.value.code, caught.value.reason) == ("binding_consent_mismatch", "cost")


def test_a_note_from_the_receipt_changes_no_register(errand: dict[str, Any]) -> None:
    roles = handoff.Roles.from_json(ppbind.demo.errand_roles("errand-7f3a"))
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    for record in errand["handoff"]["records"]:
        if record["type"] != "note":
            registry.add(record)
    item = handoff.ItemId("decisions", "errand-7f3a", "buy")
    before = registry.state(item)
    note = ppbind.note_from_receipt(
        registry, item, errand["parley"]["receipt"], by="ana-agent", ts="2026-12-02T10:05:00Z"
    )
    assert "440.00 EUR" in note["note"]
    registry.add(note)
    after = registry.state(item)
    assert (after.state, after.outcome) == (before.state, before.outcome)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*path, i)))
    return out


JUNK: list[Any] = [None, 0, -1, 2**60, "", "x", [], {}, True, 1.5, [None], {"": None}]


def _outcome(bundle: Any) -> Any:
    """``"ok"`` or ``(code, link, message)``; any other exception propagates (a bug)."""
    try:
        ppbind.verify_errand(bundle)
    except ppbind.BindingError as exc:
        return (exc.code, exc.link, str(exc))
    return "ok"


def test_any_damage_to_the_input_is_a_binding_error_never_a_crash(
    errand: dict[str, Any],
) -> None:
    """Replace or delete members all over the audit input: only BindingError comes out."""
    rng = random.Random(22)
    outcomes: list[Any] = []
    paths = [p for p in _paths(errand) if p]
    for _ in range(600):
        bundle = copy.deepcopy(errand)
        path = rng.choice(paths)
        node = bundle
        for step in path[:-1]:
            node = node[step]
        if rng.random() < 0.3 and isinstance(node, dict):
            del node[path[-1]]
        else:
            node[path[-1]] = copy.deepcopy(rng.choice(JUNK))
        outcomes.append(_outcome(bundle))
    assert all(
        o == "ok" or (o[0] in ppbind.errors.CODES and o[1] == ppbind.errors.CODES[o[0]].stage)
        for o in outcomes
    )
    assert sum(o != "ok" for o in outcomes) > 400  # the damage is seen, not ignored
    for junk in JUNK:
        with pytest.raises(ppbind.BindingError):
            ppbind.verify_errand(junk)


def test_her_side_signs_nothing_for_a_decision_that_contradicts_itself(
    errand: dict[str, Any],
) -> None:
    """A compromised agent raises a decision whose machine terms are not the brief's."""
    ana = ppbind.PersonKey.from_label("bindings ana")
    settlement, terms = _decided(errand)
    consent = terms["x_binding"]["parley"]["consent"]
    now = consent["expires"] - 100
    dearer = copy.deepcopy(terms)
    dearer["x_binding"]["terms"]["amount"] = 99000  # a wider spend cap than the agreement
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.sign_on_approval(ana, settlement, dearer, now=now)
    assert caught.value.code == "binding_terms_not_agreed"
    other = copy.deepcopy(terms)
    other["x_binding"]["pxp"]["proposal_hash"] = "0" * 64
    with pytest.raises(ppbind.BindingError) as caught:
        ppbind.sign_on_approval(ana, settlement, other, now=now)
    assert caught.value.code == "binding_agreement_mismatch"


@pytest.mark.parametrize(
    "helper",
    ["consent_grant", "approval_for", "sign_on_approval", "decision_terms", "act_terms"],
)
def test_the_helpers_refuse_malformed_input_with_their_own_error(
    helper: str, errand: dict[str, Any]
) -> None:
    ana = ppbind.PersonKey.from_label("bindings ana")
    settlement, terms = _decided(errand)
    rng = random.Random(helper)
    paths = [p for p in _paths(terms) if p]
    for _ in range(150):
        bad = copy.deepcopy(terms)
        path = rng.choice(paths)
        node = bad
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = copy.deepcopy(rng.choice(JUNK))
        try:
            if helper == "consent_grant":
                ppbind.consent_grant(ana, settlement, bad, now=1_796_205_610)
            elif helper == "approval_for":
                ppbind.approval_for(ana, bad)
            elif helper == "sign_on_approval":
                ppbind.sign_on_approval(ana, settlement, bad, now=1_796_205_610)
            elif helper == "decision_terms":
                x = bad.get("x_binding") if isinstance(bad, dict) else None
                ppbind.decision_terms(
                    proposal=_get(x, "parley", "proposal"),
                    service="bikes.ben.example",
                    capability="shop.buy",
                    principal=errand["principal"],
                    agent="ed25519:x",
                    brief=_get(x, "pxp", "brief"),
                    ledger_head="0" * 64,
                )
            else:
                ppbind.act_terms(
                    machine=ppbind.read_terms(errand["pxp"]["brief"]["agreement"]["terms"]),
                    text="t",
                    decision=_get(bad, "x_binding", "pxp"),
                    settlement=settlement,
                    service="s",
                    proposal=_get(bad, "x_binding", "parley", "proposal"),
                    receipt=errand["parley"]["receipt"],
                    package=_get(bad, "x_binding", "vxp"),
                )
        except ppbind.BindingError:
            pass


def _get(value: Any, *path: str) -> Any:
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value
