"""Vector cases for the Handoff extensions: Acts, Decisions, evidence, Markdown, conformance.

Expected values are computed here independently of the library wherever that is short:
presented digests and registrar record ids with ``rfc8785`` + ``hashlib``, proofs with
``cryptography`` directly, keys with the RFC 7638 thumbprint formula.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import rfc8785
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from vectorlib import Case, Mutation, derive, flip_char, suite

# --- fixtures -----------------------------------------------------------------------------------

ROLES: dict[str, Any] = {
    "principal": "alice",
    "principal_side": ["alice-desk"],
    "requesters": {"web": ["agent-1", "registrar"]},
    "roles": {"registrar": ["registrar"]},
}
ORG_ROLES: dict[str, Any] = {**ROLES, "principal": "acme", "principal_is_person": False}
TS = "2026-11-30T09:00:00Z"
NOW = "2026-11-30T12:00:00Z"

# RFC 8037 Appendix A.1 (Ed25519) and RFC 7515 Appendix A.3 (P-256) example keys.
ED_KEY = {
    "kty": "OKP",
    "crv": "Ed25519",
    "d": "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
    "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
}
EC_KEY = {
    "kty": "EC",
    "crv": "P-256",
    "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
    "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
    "d": "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI",
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _other_ed_key() -> dict[str, Any]:
    seed = hashlib.sha256(b"handoff-ext wrong key").digest()
    private = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    raw = private.public_key().public_bytes_raw()
    return {"kty": "OKP", "crv": "Ed25519", "d": _b64(seed), "x": _b64(raw)}


OTHER_KEY = _other_ed_key()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638: SHA-256 of the required members, sorted, no whitespace."""
    members = ("crv", "kty", "x") if jwk["kty"] == "OKP" else ("crv", "kty", "x", "y")
    text = json.dumps({m: jwk[m] for m in members}, separators=(",", ":"), sort_keys=True)
    return _b64(hashlib.sha256(text.encode()).digest())


def public(jwk: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in jwk.items() if k != "d"}
    out["kid"] = thumbprint(jwk)
    out["alg"] = "Ed25519" if jwk["kty"] == "OKP" else "ES256"
    return dict(sorted(out.items()))


JWKS = {"keys": [public(ED_KEY), public(EC_KEY)]}


def sign_independently(record: dict[str, Any], jwk: dict[str, Any]) -> str:
    """Detached compact JWS over JCS(record without evidence.proof), by hand."""
    body = copy.deepcopy(record)
    body.get("evidence", {}).pop("proof", None)
    alg = "Ed25519" if jwk["kty"] == "OKP" else "ES256"
    header = _b64(rfc8785.dumps({"alg": alg, "kid": thumbprint(jwk), "typ": "ph-proof+jws"}))
    signing_input = f"{header}.{_b64(rfc8785.dumps(body))}".encode()
    d = _unb64(jwk["d"])
    if alg == "Ed25519":
        signature = ed25519.Ed25519PrivateKey.from_private_bytes(d).sign(signing_input)
    else:
        private = ec.derive_private_key(int.from_bytes(d, "big"), ec.SECP256R1())
        der = private.sign(signing_input, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return f"{header}..{_b64(signature)}"


def with_proof(record: dict[str, Any], jwk: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out.setdefault("evidence", {})["proof"] = sign_independently(record, jwk)
    return out


def presented(
    ext: str, key: str, rev: int, terms: dict[str, Any], proposal: str | None = None
) -> str:
    shown: dict[str, Any] = {
        "ph": "0.3",
        "ext": ext,
        "project": "web",
        "key": key,
        "terms_rev": rev,
        "terms": terms,
    }
    if proposal is not None:
        shown["proposal"] = proposal
    return "sha-256:" + hashlib.sha256(rfc8785.dumps(shown)).hexdigest()


def rec(rid: str, type_: str, origin: str, by: str, key: str = "k1", **more: Any) -> dict[str, Any]:
    ext = more.pop("ext", "acts/0.3")
    out = {
        "ph": "0.3",
        "ext": ext,
        "id": rid,
        "type": type_,
        "origin": origin,
        "by": by,
        "key": key,
        "project": "web",
        "ts": TS,
    }
    out.update(more)
    return out


ACT_TERMS = {"text": "Pay the hosting invoice", "amount": "120.00", "currency": "EUR"}
ACT_TERMS_2 = {**ACT_TERMS, "amount": "140.00"}
RAISED = rec("n1", "raised", "requester", "agent-1", terms=ACT_TERMS, terms_rev=1)
AMENDED = rec(
    "n2", "amended", "requester", "agent-1", terms=ACT_TERMS_2, terms_rev=2, supersedes=["n1"]
)
WITHDRAWN = rec(
    "n3", "withdrawn", "requester", "agent-1", reason="no_longer_needed", supersedes=["n2"]
)


def settled(
    rid: str = "s1",
    kind: str = "principal",
    *,
    rev: int = 1,
    terms: dict[str, Any] = ACT_TERMS,
    outcome: str = "done",
    key: str = "k1",
    ext: str = "acts/0.3",
    **more: Any,
) -> dict[str, Any]:
    authority: dict[str, Any] = {"kind": kind, "decider": "alice"}
    evidence: dict[str, Any] = {}
    if kind in ("principal", "confirmed"):
        evidence["presented"] = presented(ext, key, rev, terms, more.get("proposal"))
    if kind == "confirmed":
        evidence["proposal"] = more.pop("proposal")
    if kind == "attested":
        authority["decider"] = "alice-desk"
        evidence["basis"] = "bank statement line 2026-11-29 HOSTING 120.00 EUR"
    if kind == "delegated":
        authority.update(decider="pa-bot", under="mandate-hosting", chain=["alice", "pa-bot"])
    out = rec(rid, "settled", "principal", "alice-desk", key, ext=ext)
    out.update(terms_rev=rev, outcome=outcome, authority=authority)
    if evidence:
        out["evidence"] = evidence
    out.update(more)
    return out


def _dig(record: dict[str, Any]) -> str:
    return hashlib.sha256(rfc8785.dumps(record)).hexdigest()


def _set(path: str, value: Any) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = obj
        for part in parents:
            node = node[part]
        node[last] = value

    return apply


def _drop(path: str) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = obj
        for part in parents:
            node = node[part]
        del node[last]

    return apply


ACCEPTED = {"status": "accepted"}


# --- Acts: admission -------------------------------------------------------------------------


@suite(
    "handoff.acts_check",
    description=(
        "Admit one acts/0.3 record: the core checks, the Acts (type, origin) table with its "
        "schemas (terms, outcomes, claim outcomes, reasons), the Acts terms rules and the "
        "registrar role. Input {roles, record}; output the verdict {status}."
    ),
    notes={
        "derived": "mechanically derived from a good vector",
        "terms": "the terms of an act",
        "outcome": "settlement and claim outcomes",
        "registrar": "records of the registrar role",
        "reason": "withdrawal reasons",
        "pair": "the (type, origin) table",
    },
)
def acts_check() -> Iterator[Case]:
    good = Case(
        "raised-with-money",
        {"roles": ROLES, "record": RAISED},
        output=ACCEPTED,
        comment="an act with text, amount and currency",
        flags=("terms",),
    )
    yield good
    yield Case(
        "raised-full-terms",
        {
            "roles": ROLES,
            "record": {
                **RAISED,
                "terms": {
                    **ACT_TERMS,
                    "due": "2026-12-15",
                    "how_to": "Log in to the billing portal.\nPay by card ending 4242.",
                },
            },
        },
        output=ACCEPTED,
        comment="due date and multi-line how-to instructions",
        flags=("terms",),
    )
    yield Case(
        "raised-text-only",
        {"roles": ROLES, "record": {**RAISED, "terms": {"text": "Sign the lease"}}},
        output=ACCEPTED,
        comment="no money involved: text alone",
        flags=("terms",),
    )
    yield from derive(
        good,
        [
            Mutation(
                "amount-without-currency",
                "amount and currency come together",
                _drop("record.terms.currency"),
                error={"code": "record", "reason": "amount_currency"},
                extra_flags=("terms",),
            ),
            Mutation(
                "amount-as-number",
                "an amount is a decimal string, never a JSON number",
                _set("record.terms.amount", 120.0),
                error={"code": "schema", "reason": "pair_schema"},
                extra_flags=("terms",),
            ),
            Mutation(
                "currency-lowercase",
                "a currency is three capital letters (ISO 4217)",
                _set("record.terms.currency", "eur"),
                error={"code": "schema", "reason": "pair_schema"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-two-lines",
                "an act's text is one line (it is a line of the state document)",
                _set("record.terms.text", "Pay the invoice\nand file it"),
                error={"code": "schema", "reason": "pair_schema"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-surrounding-space",
                "text has no surrounding whitespace",
                _set("record.terms.text", " Pay the invoice"),
                error={"code": "record", "reason": "text_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-html-comment",
                "text may not carry the binding's marker syntax",
                _set("record.terms.text", "Pay <!-- act:k9 -->"),
                error={"code": "record", "reason": "text_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-raw-html",
                "text may not hold '<': raw HTML would be rendered into the state document",
                _set("record.terms.text", "Pay <img src=x onerror=alert(1)>"),
                error={"code": "record", "reason": "text_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-nul",
                "a NUL in the text would make the state document unreadable",
                _set("record.terms.text", "Pay the\u0000invoice"),
                error={"code": "record", "reason": "text_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "text-bidi-override",
                "a right-to-left override would show the person other text than is recorded",
                _set("record.terms.text", "Pay \u202e00.021 EUR"),
                error={"code": "record", "reason": "text_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "due-impossible-date",
                "30 February does not exist",
                _set("record.terms.due", "2026-02-30"),
                error={"code": "record", "reason": "due_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "ext-decisions",
                "decision terms need options and an assumption",
                _set("record.ext", "decisions/0.3"),
                error={"code": "schema", "reason": "pair_schema"},
            ),
        ],
    )
    for outcome in ("done", "declined", "failed"):
        yield Case(
            f"settled-{outcome}",
            {"roles": ROLES, "record": settled(outcome=outcome)},
            output=ACCEPTED,
            comment=f"the settlement outcome {outcome}",
            flags=("outcome",),
        )
    yield Case(
        "settled-removed",
        {"roles": ROLES, "record": settled(outcome="removed")},
        error={"code": "schema", "reason": "pair_schema"},
        comment="removed is a claim outcome only: nobody settles by deleting a line",
        flags=("outcome",),
    )
    yield Case(
        "settled-paid",
        {"roles": ROLES, "record": settled(outcome="paid")},
        error={"code": "schema", "reason": "pair_schema"},
        comment="an outcome Acts does not define",
        flags=("outcome",),
    )
    claim = rec(
        "c1",
        "claimed",
        "registrar",
        "registrar",
        outcome="removed",
        evidence={"basis": "state-document: the line was removed"},
    )
    yield Case(
        "claimed-by-registrar",
        {"roles": ROLES, "record": claim},
        output=ACCEPTED,
        comment="the registrar claims what it saw in the state document",
        flags=("registrar",),
    )
    yield Case(
        "claimed-by-registrar-not-holding-role",
        {"roles": ROLES, "record": {**claim, "by": "agent-1"}},
        error={"code": "ownership", "reason": "role_not_held"},
        comment="agent-1 holds no registrar role",
        flags=("registrar",),
    )
    yield Case(
        "settled-by-registrar",
        {"roles": ROLES, "record": {**settled(), "origin": "registrar", "by": "registrar"}},
        error={"code": "pair", "reason": "unknown_pair"},
        comment="the registrar has no authority to settle",
        flags=("registrar", "pair"),
    )
    yield Case(
        "withdrawn-known-reason",
        {"roles": ROLES, "record": WITHDRAWN},
        output=ACCEPTED,
        comment="a reason Acts defines",
        flags=("reason",),
    )
    yield Case(
        "withdrawn-unknown-reason",
        {"roles": ROLES, "record": {**WITHDRAWN, "reason": "answered_elsewhere"}},
        error={"code": "schema", "reason": "pair_schema"},
        comment="a Decisions reason is not an Acts reason",
        flags=("reason",),
    )


# --- Decisions: admission --------------------------------------------------------------------

DEC_TERMS: dict[str, Any] = {
    "text": "Which hosting plan?",
    "options": [{"id": "small", "text": "Small, 10 EUR/month"}, {"id": "large", "text": "Large"}],
    "assumption": "We build for the small plan until told otherwise.",
    "assumed_option": "small",
    "due": "2026-12-01T17:00:00Z",
}
DEC_RAISED = rec(
    "d1", "raised", "requester", "agent-1", "q1", ext="decisions/0.3", terms=DEC_TERMS, terms_rev=1
)


def dec_settled(outcome: str = "small", rev: int = 1, **more: Any) -> dict[str, Any]:
    terms = more.pop("terms", DEC_TERMS)
    return settled(
        more.pop("rid", "ds1"),
        more.pop("kind", "principal"),
        rev=rev,
        terms=terms,
        outcome=outcome,
        key="q1",
        ext="decisions/0.3",
        **more,
    )


@suite(
    "handoff.decisions_check",
    description=(
        "Admit one decisions/0.3 record: options with unique, unreserved ids, a working "
        "assumption, outcomes (an option id, free with an answer, or declined) and reasons. "
        "Input {roles, record}; output the verdict {status}."
    ),
    notes={
        "derived": "mechanically derived from a good vector",
        "terms": "the terms of a decision",
        "outcome": "settlement outcomes",
        "pair": "the (type, origin) table",
    },
)
def decisions_check() -> Iterator[Case]:
    good = Case(
        "raised-two-options",
        {"roles": ROLES, "record": DEC_RAISED},
        output=ACCEPTED,
        comment="a question, two options, the working assumption",
        flags=("terms",),
    )
    yield good
    yield from derive(
        good,
        [
            Mutation(
                "options-duplicate-id",
                "option ids are unique",
                _dup_option,
                error={"code": "record", "reason": "options_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "option-id-reserved",
                "free and declined are outcomes, never option ids",
                _reserved_option,
                error={"code": "record", "reason": "options_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "no-options-no-free-answer",
                "without options the principal must be allowed a free answer",
                _set("record.terms.options", []),
                error={"code": "record", "reason": "options_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "assumed-option-unknown",
                "the assumed option must be one of the options",
                _set("record.terms.assumed_option", "medium"),
                error={"code": "record", "reason": "options_invalid"},
                extra_flags=("terms",),
            ),
            Mutation(
                "assumption-missing",
                "the working assumption is required",
                _drop("record.terms.assumption"),
                error={"code": "schema", "reason": "pair_schema"},
                extra_flags=("terms",),
            ),
            Mutation(
                "option-id-uppercase",
                "option ids are lowercase",
                _upper_option,
                error={"code": "schema", "reason": "pair_schema"},
                extra_flags=("terms",),
            ),
        ],
    )
    free_terms = {**DEC_TERMS, "options": [], "free_answer": True}
    free_terms.pop("assumed_option")
    yield Case(
        "raised-free-answer-only",
        {"roles": ROLES, "record": {**DEC_RAISED, "terms": free_terms}},
        output=ACCEPTED,
        comment="no options, a free answer allowed",
        flags=("terms",),
    )
    yield Case(
        "settled-option",
        {"roles": ROLES, "record": dec_settled()},
        output=ACCEPTED,
        comment="the principal chose an option",
        flags=("outcome",),
    )
    yield Case(
        "settled-free-with-answer",
        {"roles": ROLES, "record": dec_settled("free", answer="A medium plan, 20 EUR")},
        output=ACCEPTED,
        comment="form only: whether the terms allow it is checked against held terms",
        flags=("outcome",),
    )
    yield Case(
        "settled-free-without-answer",
        {"roles": ROLES, "record": dec_settled("free")},
        error={"code": "record", "reason": "answer_missing"},
        comment="free needs the answer",
        flags=("outcome",),
    )
    yield Case(
        "settled-option-with-answer",
        {"roles": ROLES, "record": dec_settled("small", answer="small")},
        error={"code": "record", "reason": "answer_unexpected"},
        comment="an answer travels only with the outcome free",
        flags=("outcome",),
    )
    yield Case(
        "settled-declined",
        {"roles": ROLES, "record": dec_settled("declined")},
        output=ACCEPTED,
        comment="the principal declines to choose",
        flags=("outcome",),
    )
    yield Case(
        "claimed-by-registrar",
        {
            "roles": ROLES,
            "record": rec(
                "dc1",
                "claimed",
                "registrar",
                "registrar",
                "q1",
                ext="decisions/0.3",
                outcome="small",
            ),
        },
        error={"code": "pair", "reason": "unknown_pair"},
        comment="Decisions defines no registrar role",
        flags=("pair",),
    )
    yield Case(
        "withdrawn-acts-reason",
        {
            "roles": ROLES,
            "record": rec(
                "d2",
                "withdrawn",
                "requester",
                "agent-1",
                "q1",
                ext="decisions/0.3",
                reason="done_elsewhere",
                supersedes=["d1"],
            ),
        },
        error={"code": "schema", "reason": "pair_schema"},
        comment="an Acts reason is not a Decisions reason",
        flags=("pair",),
    )


def _dup_option(obj: dict[str, Any]) -> None:
    obj["record"]["terms"]["options"][1]["id"] = "small"


def _reserved_option(obj: dict[str, Any]) -> None:
    obj["record"]["terms"]["options"][1]["id"] = "free"


def _upper_option(obj: dict[str, Any]) -> None:
    obj["record"]["terms"]["options"][1]["id"] = "Large"
    obj["record"]["terms"].pop("assumed_option")


# --- Decisions: staleness against outdated options ----------------------------------------------


def _dec_amend(rid: str, rev: int, options: list[dict[str, str]], sup: str) -> dict[str, Any]:
    terms = {**DEC_TERMS, "options": options}
    if not any(o["id"] == "small" for o in options):
        terms.pop("assumed_option")
    return rec(
        rid,
        "amended",
        "requester",
        "agent-1",
        "q1",
        ext="decisions/0.3",
        terms=terms,
        terms_rev=rev,
        supersedes=[sup],
    )


@suite(
    "handoff.decisions_state",
    description=(
        "Fold decision records and report each item's state, staleness and option_status: "
        "how the option a settlement chose fares under the current terms (current, changed, "
        "gone, unknown). Input {roles, records}; output {items: [...]}."
    ),
    notes={
        "stale": "a settlement made against outdated terms",
        "not-offered": "an outcome the held terms never offered does not stand",
    },
)
def decisions_state() -> Iterator[Case]:
    small, large = DEC_TERMS["options"]

    def row(**kw: Any) -> dict[str, Any]:
        return {"key": "q1", "need_withdrawn": False, **kw}

    yield Case(
        "settled-current",
        {"roles": ROLES, "records": [DEC_RAISED, dec_settled()]},
        output={
            "items": [
                row(
                    state="settled",
                    stale=False,
                    outcome="small",
                    settled_terms_rev=1,
                    held_terms_rev=1,
                    option_status="current",
                )
            ]
        },
        comment="settled against the only revision held",
    )
    cases = [
        ("option-text-changed", [{"id": "small", "text": "Small, 12 EUR/month"}, large], "changed"),
        ("option-removed", [large, {"id": "medium", "text": "Medium"}], "gone"),
        ("option-kept", [small, large, {"id": "medium", "text": "Medium"}], "current"),
    ]
    for name, options, status in cases:
        yield Case(
            f"amended-after-settlement-{name}",
            {
                "roles": ROLES,
                "records": [DEC_RAISED, dec_settled(), _dec_amend("d2", 2, options, "d1")],
            },
            output={
                "items": [
                    row(
                        state="settled",
                        stale=True,
                        outcome="small",
                        settled_terms_rev=1,
                        held_terms_rev=2,
                        option_status=status,
                    )
                ]
            },
            comment=f"terms amended after the answer; the chosen option is {status}",
            flags=("stale",),
        )
    yield Case(
        "settled-ahead-of-held-terms",
        {"roles": ROLES, "records": [DEC_RAISED, dec_settled(rev=3)]},
        output={
            "items": [
                row(
                    state="settled",
                    stale=False,
                    outcome="small",
                    settled_terms_rev=3,
                    held_terms_rev=1,
                    option_status="unknown",
                )
            ]
        },
        comment="a settlement newer than any need held is not stale; its options are unknown",
    )
    yield Case(
        "free-answer-never-outdated",
        {
            "roles": ROLES,
            "records": [
                {**DEC_RAISED, "terms": {**DEC_TERMS, "free_answer": True}},
                dec_settled("free", answer="Whatever is cheapest"),
                _dec_amend("d2", 2, [large], "d1"),
            ],
        },
        output={
            "items": [
                row(
                    state="settled",
                    stale=True,
                    outcome="free",
                    settled_terms_rev=1,
                    held_terms_rev=2,
                    option_status="current",
                )
            ]
        },
        comment="stale by revision, but no option it chose can have changed (revision 1 "
        "allowed a free answer)",
        flags=("stale",),
    )
    withdrawn = rec(
        "d2",
        "withdrawn",
        "requester",
        "agent-1",
        "q1",
        ext="decisions/0.3",
        reason="answered_elsewhere",
        supersedes=["d1"],
    )
    yield Case(
        "withdrawn-stop-policy",
        {"roles": ROLES, "records": [DEC_RAISED, withdrawn]},
        output={
            "items": [
                {
                    "key": "q1",
                    "state": "withdrawn",
                    "stale": False,
                    "need_withdrawn": True,
                    "held_terms_rev": 1,
                }
            ]
        },
        comment="Decisions uses the stop policy: a withdrawn question is no longer presented",
    )
    for outcome, why in (
        ("approve_all_future_orders", "an option never offered"),
        ("free", "a free answer the terms do not allow"),
    ):
        extra = {"answer": "anything"} if outcome == "free" else {}
        yield Case(
            f"outcome-not-offered-{outcome.replace('_', '-')}",
            {"roles": ROLES, "records": [dec_settled(outcome, **extra), DEC_RAISED]},
            output={
                "items": [
                    {
                        "key": "q1",
                        "state": "open",
                        "stale": False,
                        "need_withdrawn": False,
                        "held_terms_rev": 1,
                    }
                ]
            },
            comment=f"a settlement choosing {why}, against terms the receiver holds, does "
            "not stand: the question stays open and no outcome is reported",
            flags=("not-offered",),
        )
    yield Case(
        "outcome-unchecked-ahead-of-held-terms",
        {
            "roles": ROLES,
            "records": [dec_settled("approve_all_future_orders", rev=7), DEC_RAISED],
        },
        output={
            "items": [
                {
                    "key": "q1",
                    "state": "open",
                    "stale": False,
                    "need_withdrawn": False,
                    "held_terms_rev": 1,
                }
            ]
        },
        comment="a settlement at a revision above every terms held (7 against 1) still has "
        "its outcome checked: no held terms offer it, so it does not stand (outcome_unchecked)",
        flags=("not-offered",),
    )


# --- evidence: presented digests and proofs -------------------------------------------------


@suite(
    "handoff.evidence_presented",
    description=(
        "The §9 presentation and its digest: JCS of {ph, ext, project, key, terms_rev, "
        "terms, proposal?}, then sha-256: + lowercase hex. Input {ext, project, key, "
        "terms_rev, terms, proposal?}; output {jcs, presented}."
    ),
    notes={"confirmed": "a presentation that includes the proposal confirmed"},
)
def evidence_presented() -> Iterator[Case]:
    def expected(ext: str, key: str, terms: dict[str, Any], proposal: str | None = None) -> Any:
        shown: dict[str, Any] = {
            "ph": "0.3",
            "ext": ext,
            "project": "web",
            "key": key,
            "terms_rev": 1,
            "terms": terms,
        }
        if proposal is not None:
            shown["proposal"] = proposal
        return {
            "jcs": rfc8785.dumps(shown).decode(),
            "presented": presented(ext, key, 1, terms, proposal),
        }

    base = {"project": "web", "terms_rev": 1}
    yield Case(
        "act",
        {**base, "ext": "acts/0.3", "key": "k1", "terms": ACT_TERMS},
        output=expected("acts/0.3", "k1", ACT_TERMS),
        comment="an act's terms at revision 1",
    )
    yield Case(
        "decision-with-options",
        {**base, "ext": "decisions/0.3", "key": "q1", "terms": DEC_TERMS},
        output=expected("decisions/0.3", "q1", DEC_TERMS),
        comment="the options shown are part of the terms",
    )
    yield Case(
        "confirmed-proposal",
        {**base, "ext": "acts/0.3", "key": "k1", "terms": ACT_TERMS, "proposal": "c1"},
        output=expected("acts/0.3", "k1", ACT_TERMS, "c1"),
        comment="a confirmation also shows the proposal",
        flags=("confirmed",),
    )
    unicode_terms = {"text": "Überweisung an Zoë: 12 €", "amount": "12", "currency": "EUR"}
    yield Case(
        "non-ascii-text",
        {**base, "ext": "acts/0.3", "key": "k2", "terms": unicode_terms},
        output=expected("acts/0.3", "k2", unicode_terms),
        comment="JCS keeps non-ASCII characters as UTF-8",
    )
    yield Case(
        "terms-rev-zero",
        {**base, "ext": "acts/0.3", "key": "k1", "terms": ACT_TERMS, "terms_rev": 0},
        error={"code": "evidence", "reason": "presentation"},
        comment="revisions start at 1",
    )


SIGNED_ACT = settled()


@suite(
    "handoff.evidence_sign",
    description=(
        "Sign a settlement's evidence.proof: a detached compact JWS (RFC 7515 Appendix F) "
        "with header {alg, kid = RFC 7638 thumbprint, typ: ph-proof+jws} over the JCS of the "
        "record without evidence.proof. Ed25519 (RFC 9864) and deterministic ES256 (RFC "
        "6979). Input {record, key: private JWK}; output {record} with the proof attached."
    ),
    notes={"es256": "an ES256 key (P-256)", "ed25519": "an Ed25519 key"},
)
def evidence_sign() -> Iterator[Case]:
    yield Case(
        "ed25519",
        {"record": SIGNED_ACT, "key": ED_KEY},
        output={"record": with_proof(SIGNED_ACT, ED_KEY)},
        comment="RFC 8037 A.1 key",
        flags=("ed25519",),
    )
    yield Case(
        "es256",
        {"record": SIGNED_ACT, "key": EC_KEY},
        output={"record": with_proof(SIGNED_ACT, EC_KEY)},
        comment="RFC 7515 A.3 key, deterministic signature",
        flags=("es256",),
    )
    replaced = with_proof(SIGNED_ACT, OTHER_KEY)
    yield Case(
        "replaces-existing-proof",
        {"record": replaced, "key": ED_KEY},
        output={"record": with_proof(SIGNED_ACT, ED_KEY)},
        comment="an existing proof is not signed over; it is replaced",
        flags=("ed25519",),
    )
    bare = {k: v for k, v in SIGNED_ACT.items() if k != "evidence"}
    yield Case(
        "record-without-evidence",
        {"record": bare, "key": ED_KEY},
        output={"record": with_proof({**bare, "evidence": {}}, ED_KEY)},
        comment="the evidence object added to carry the proof is covered by it (it stays, "
        "empty, when the proof is removed), so the proof verifies",
        flags=("ed25519",),
    )
    yield Case(
        "public-key-only",
        {"record": SIGNED_ACT, "key": public(ED_KEY)},
        error={"code": "key", "reason": "key_not_private"},
        comment="signing needs the private key",
        flags=("ed25519",),
    )


def _header(proof: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_unb64(proof.split(".")[0]))
    return loaded


def _reheader(header: dict[str, Any]) -> Any:
    def apply(obj: dict[str, Any]) -> None:
        proof = obj["record"]["evidence"]["proof"]
        _, _, signature = proof.split(".")
        obj["record"]["evidence"]["proof"] = f"{_b64(json.dumps(header).encode())}..{signature}"

    return apply


_IDENTITY = {"kty": "OKP", "crv": "Ed25519", "x": _b64(bytes([1]) + bytes(31))}


def _forge_small_order(obj: dict[str, Any]) -> None:
    kid = thumbprint(_IDENTITY)
    header = {"alg": "Ed25519", "kid": kid, "typ": "ph-proof+jws"}
    forged = _b64(bytes([1]) + bytes(31) + bytes(32))
    obj["record"]["evidence"]["proof"] = f"{_b64(json.dumps(header).encode())}..{forged}"
    obj["jwks"] = {"keys": [{**_IDENTITY, "kid": kid}]}


@suite(
    "handoff.evidence_verify",
    description=(
        "Verify a settlement's evidence.proof against the principal side's JWKS: the key is "
        "found by kid (its RFC 7638 thumbprint), the header is exactly {alg, kid, typ}, alg is "
        "Ed25519 or ES256 (and in the allow-list), the signature covers JCS of the record "
        "without evidence.proof. Input {record, jwks, algorithms?}; output {kid, alg}."
    ),
    notes={
        "derived": "mechanically derived from a good vector",
        "tampered": "the settled record changed after signing",
        "wrong-key": "the key is not the principal's",
        "header": "the protected header",
        "missing": "no proof where one is needed",
        "jwks": "the principal side's JWKS",
    },
)
def evidence_verify() -> Iterator[Case]:
    ed = with_proof(SIGNED_ACT, ED_KEY)
    es = with_proof(SIGNED_ACT, EC_KEY)
    good = Case(
        "ed25519-valid",
        {"record": ed, "jwks": JWKS},
        output={"kid": thumbprint(ED_KEY), "alg": "Ed25519"},
        comment="signed with the principal's Ed25519 key",
    )
    yield good
    yield Case(
        "es256-valid",
        {"record": es, "jwks": JWKS},
        output={"kid": thumbprint(EC_KEY), "alg": "ES256"},
        comment="signed with the principal's P-256 key",
    )
    bad_sig = {"code": "proof", "reason": "bad_signature"}
    yield from derive(
        good,
        [
            Mutation(
                "outcome-changed",
                "done became declined",
                _set("record.outcome", "declined"),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "terms-rev-changed",
                "the settlement moved to another revision",
                _set("record.terms_rev", 2),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "presented-changed",
                "what was shown is not what was signed",
                _set("record.evidence.presented", "sha-256:" + "0" * 64),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "member-added",
                "an added member changes the JCS bytes",
                _set("record.adopts", ["c1"]),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "key-swapped",
                "the settlement was moved to another item",
                _set("record.key", "k2"),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "signature-flipped",
                "one character of the signature changed",
                lambda o: _set(
                    "record.evidence.proof", flip_char(o["record"]["evidence"]["proof"], -5)
                )(o),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "signature-truncated",
                "the signature lost its last 16 bytes",
                lambda o: _set("record.evidence.proof", o["record"]["evidence"]["proof"][:-22])(o),
                error=bad_sig,
                extra_flags=("tampered",),
            ),
            Mutation(
                "jwks-other-key",
                "the JWKS holds only some other key",
                _set("jwks", {"keys": [public(OTHER_KEY)]}),
                error={"code": "proof", "reason": "kid_unknown"},
                extra_flags=("wrong-key",),
            ),
            Mutation(
                "jwks-other-key-claiming-kid",
                "another key labelled with the principal's kid",
                _set("jwks", {"keys": [{**public(OTHER_KEY), "kid": thumbprint(ED_KEY)}]}),
                error={"code": "key", "reason": "jwks_invalid"},
                extra_flags=("wrong-key", "jwks"),
            ),
            Mutation(
                "jwks-small-order-key",
                "a small-order Ed25519 key (the identity point) verifies a forged proof "
                "(R = identity, S = 0) on every message, so the JWKS holding it is refused",
                _forge_small_order,
                error={"code": "key", "reason": "jwks_invalid"},
                extra_flags=("wrong-key", "jwks"),
            ),
            Mutation(
                "jwks-private-member",
                "a JWKS that carries a private key is refused",
                _set("jwks", {"keys": [ED_KEY]}),
                error={"code": "key", "reason": "jwks_invalid"},
                extra_flags=("jwks",),
            ),
            Mutation(
                "proof-removed",
                "the proof is missing",
                _drop("record.evidence.proof"),
                error={"code": "proof", "reason": "proof_missing"},
                extra_flags=("missing",),
            ),
            Mutation(
                "payload-attached",
                "a JWS with its payload attached is not a detached proof",
                lambda o: _set(
                    "record.evidence.proof",
                    o["record"]["evidence"]["proof"].replace("..", ".e30."),
                )(o),
                error={"code": "proof", "reason": "proof_malformed"},
            ),
            Mutation(
                "header-alg-none",
                "alg none is never allowed",
                _reheader({"alg": "none", "kid": thumbprint(ED_KEY), "typ": "ph-proof+jws"}),
                error={"code": "proof", "reason": "alg_not_allowed"},
                extra_flags=("header",),
            ),
            Mutation(
                "header-alg-eddsa",
                "the deprecated polymorphic EdDSA name is not accepted (RFC 9864)",
                _reheader({"alg": "EdDSA", "kid": thumbprint(ED_KEY), "typ": "ph-proof+jws"}),
                error={"code": "proof", "reason": "alg_not_allowed"},
                extra_flags=("header",),
            ),
            Mutation(
                "header-embedded-jwk",
                "a key carried in the header is never trusted",
                _reheader(
                    {
                        "alg": "Ed25519",
                        "kid": thumbprint(ED_KEY),
                        "typ": "ph-proof+jws",
                        "jwk": public(OTHER_KEY),
                    }
                ),
                error={"code": "proof", "reason": "header_invalid"},
                extra_flags=("header",),
            ),
            Mutation(
                "header-kid-of-es256-key",
                "the kid names a P-256 key while alg says Ed25519",
                _reheader({"alg": "Ed25519", "kid": thumbprint(EC_KEY), "typ": "ph-proof+jws"}),
                error={"code": "proof", "reason": "key_mismatch"},
                extra_flags=("header", "wrong-key"),
            ),
            Mutation(
                "algorithms-es256-only",
                "the verifier's allow-list excludes Ed25519",
                _set("algorithms", ["ES256"]),
                error={"code": "proof", "reason": "alg_not_allowed"},
            ),
        ],
    )


# --- the Markdown binding ------------------------------------------------------------------


def md_id(record: dict[str, Any]) -> str:
    # from the content alone: neither the id itself nor the time (ts) is hashed
    body = {k: v for k, v in record.items() if k not in ("id", "ts")}
    return "md-" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()[:32]


def act_key(text: str, n: int = 0) -> str:
    seed = f"web\n{text}" if n == 0 else f"web\n{text}\n{n}"
    return "act-" + hashlib.sha256(seed.encode()).hexdigest()[:12]


def md_record(type_: str, origin: str, key: str, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ph": "0.3",
        "ext": "acts/0.3",
        "project": "web",
        "key": key,
        "by": "registrar",
        "ts": NOW,
        "context": "state-document",
        "type": type_,
        "origin": origin,
        **more,
    }
    out["id"] = md_id(out)
    return dict(sorted(out.items()))


TICKED = {"basis": "state-document: the box was ticked"}
REMOVED = {"basis": "state-document: the line was removed"}

DOC_NEW = """# Website relaunch

Notes the principal wrote by hand.

## Acts

- [ ] Pay the hosting invoice
- [x] Sign the design contract
A hand-written remark under the list.

## Log
- [ ] not an act: outside the section
"""

MD_IN = {"roles": ROLES, "project": "web", "registrar": "registrar", "now": NOW}


@suite(
    "handoff.md_read",
    description=(
        "Acts Markdown binding, document before, records out: the records a registrar emits "
        "for a STATE.md section given the records already held (new line: raised; changed "
        "text: amended; ticked box of an unsettled act: claimed done; a listed line gone: "
        "claimed removed). Input {roles, records, document, project, registrar, now, "
        "section?}; output {records}."
    ),
    notes={
        "claim": "the registrar claims what it saw; it never settles",
        "hand-written": "lines the registrar does not own",
    },
)
def md_read() -> Iterator[Case]:
    pay, sign = "Pay the hosting invoice", "Sign the design contract"
    k_pay, k_sign = act_key(pay), act_key(sign)
    raised_pay = md_record("raised", "requester", k_pay, terms={"text": pay}, terms_rev=1)
    raised_sign = md_record("raised", "requester", k_sign, terms={"text": sign}, terms_rev=1)
    claim_sign = md_record("claimed", "registrar", k_sign, outcome="done", evidence=TICKED)
    yield Case(
        "new-document",
        {**MD_IN, "records": [], "document": DOC_NEW},
        output={"records": [raised_pay, raised_sign, claim_sign]},
        comment="two new lines, one already ticked; the line outside the section is ignored",
        flags=("claim", "hand-written"),
    )
    synced = DOC_NEW.replace(pay, f"{pay} <!-- act:{k_pay} -->").replace(
        sign,
        f"{sign} <!-- act:{k_sign} --> _(claimed done, awaiting the principal side)_\n"
        f"<!-- acts:listed {' '.join(sorted([k_pay, k_sign]))} -->",
    )
    held = [raised_pay, raised_sign, claim_sign]
    yield Case(
        "synced-document-no-records",
        {**MD_IN, "records": held, "document": synced},
        output={"records": []},
        comment="a document written from its own records implies nothing new",
    )
    edited = synced.replace(pay, f"{pay} (140 EUR)")
    amended = md_record(
        "amended",
        "requester",
        k_pay,
        terms={"text": f"{pay} (140 EUR)"},
        terms_rev=2,
        supersedes=[raised_pay["id"]],
    )
    yield Case(
        "text-changed",
        {**MD_IN, "records": held, "document": edited},
        output={"records": [amended]},
        comment="changed text amends the act",
    )
    gone = "\n".join(line for line in synced.split("\n") if f"act:{k_pay}" not in line)
    removed = md_record("claimed", "registrar", k_pay, outcome="removed", evidence=REMOVED)
    yield Case(
        "line-removed",
        {**MD_IN, "records": held, "document": gone},
        output={"records": [removed]},
        comment="a listed line that disappears is claimed removed; nothing is withdrawn",
        flags=("claim",),
    )
    yield Case(
        "line-removed-again",
        {**MD_IN, "records": [*held, removed], "document": gone},
        output={"records": []},
        comment="the same pending claim is not repeated",
        flags=("claim",),
    )
    ticked = synced.replace(f"- [ ] {pay}", f"- [X] {pay}")
    claim_pay = md_record("claimed", "registrar", k_pay, outcome="done", evidence=TICKED)
    yield Case(
        "box-ticked",
        {**MD_IN, "records": held, "document": ticked},
        output={"records": [claim_pay]},
        comment="the principal ticked the box: a claim, not a settlement",
        flags=("claim",),
    )
    unticked = synced.replace(f"- [x] {sign}", f"- [ ] {sign}")
    sign_settled = settled("s2", key=k_sign, terms={"text": sign})
    yield Case(
        "settled-box-unticked",
        {**MD_IN, "records": [*held, sign_settled], "document": unticked},
        output={"records": []},
        comment="unticking never reopens: only the principal side settles and reopens",
    )
    yield Case(
        "no-section",
        {**MD_IN, "records": [], "document": "# Notes\n\n- [ ] just a list\n"},
        output={"records": []},
        comment="a document without the Acts section implies nothing",
        flags=("hand-written",),
    )
    twice = "## Acts\n\n- [ ] Buy a domain\n- [ ] Buy a domain\n"
    k1, k2 = act_key("Buy a domain"), act_key("Buy a domain", 1)
    yield Case(
        "same-text-twice",
        {**MD_IN, "records": [], "document": twice},
        output={
            "records": [
                md_record("raised", "requester", k1, terms={"text": "Buy a domain"}, terms_rev=1),
                md_record("raised", "requester", k2, terms={"text": "Buy a domain"}, terms_rev=1),
            ]
        },
        comment="two lines with the same text are two acts with distinct keys",
    )
    fenced = "## Acts\n\n```\n- [ ] in a code block\n```\n- [ ] Renew the certificate\n"
    k_cert = act_key("Renew the certificate")
    yield Case(
        "code-block-ignored",
        {**MD_IN, "records": [], "document": fenced},
        output={
            "records": [
                md_record(
                    "raised",
                    "requester",
                    k_cert,
                    terms={"text": "Renew the certificate"},
                    terms_rev=1,
                )
            ]
        },
        comment="lines in a fenced code block are hand-written text",
        flags=("hand-written",),
    )


@suite(
    "handoff.md_write",
    description=(
        "Acts Markdown binding, records in, document after: the section rendered from folded "
        "state (settled acts ticked with their outcome, stale and withdrawn ones marked, new "
        "acts appended, the trailer listing the keys written); every other line kept. Input "
        "{roles, records, document, project, registrar, section?}; output {document}."
    ),
    notes={
        "hand-written": "lines the registrar does not own survive",
        "stale": "an act settled against outdated terms",
    },
)
def md_write() -> Iterator[Case]:
    md = {k: v for k, v in MD_IN.items() if k != "now"}
    pay = rec(
        "n1", "raised", "requester", "agent-1", "pay", terms={"text": "Pay hosting"}, terms_rev=1
    )
    sign = rec(
        "n2", "raised", "requester", "agent-1", "sign", terms={"text": "Sign lease"}, terms_rev=1
    )
    buy = rec(
        "n3", "raised", "requester", "agent-1", "buy", terms={"text": "Buy domain"}, terms_rev=1
    )
    buy_amended = rec(
        "n4",
        "amended",
        "requester",
        "agent-1",
        "buy",
        terms={"text": "Buy domain (two years)"},
        terms_rev=2,
        supersedes=["n3"],
    )
    sign_declined = settled("s2", key="sign", terms={"text": "Sign lease"}, outcome="declined")
    buy_done = settled("s3", key="buy", terms={"text": "Buy domain"})
    pay_withdrawn = rec(
        "n5", "withdrawn", "requester", "agent-1", "pay", reason="done_elsewhere", supersedes=["n1"]
    )
    records = [pay, sign, buy, buy_amended, sign_declined, buy_done, pay_withdrawn]
    doc = "# Website\n\nIntro by hand.\n\n## Acts\n\nKeep these short.\n\n## Log\nentry\n"
    yield Case(
        "fresh-section",
        {**md, "records": records, "document": doc},
        output={
            "document": (
                "# Website\n\nIntro by hand.\n\n## Acts\n\nKeep these short.\n\n"
                "- [x] Buy domain (two years) <!-- act:buy --> "
                "_(stale: the terms changed after it was settled)_\n"
                "- [ ] Pay hosting <!-- act:pay --> _(withdrawn by the requester)_\n"
                "- [x] Sign lease <!-- act:sign --> _(declined)_\n"
                "<!-- acts:listed buy pay sign -->\n\n## Log\nentry\n"
            )
        },
        comment="settled acts ticked, the stale one marked, the withdrawn one kept (keep policy)",
        flags=("stale", "hand-written"),
    )
    existing = (
        "## Acts\n"
        "* [ ] Sign lease <!-- act:sign -->\n"
        "  a continuation line written by hand\n"
        "- [ ] Something the principal added by hand\n"
        "<!-- acts:listed sign -->\n"
        "Closing words.\n"
    )
    yield Case(
        "existing-lines-kept",
        {**md, "records": [sign, sign_declined, pay], "document": existing},
        output={
            "document": (
                "## Acts\n"
                "* [x] Sign lease <!-- act:sign --> _(declined)_\n"
                "  a continuation line written by hand\n"
                "- [ ] Something the principal added by hand\n"
                "- [ ] Pay hosting <!-- act:pay -->\n"
                "<!-- acts:listed pay sign -->\n"
                "Closing words.\n"
            )
        },
        comment="the bullet and hand-written lines stay; an unread new line stays as written",
        flags=("hand-written",),
    )
    claim = rec(
        "c1",
        "claimed",
        "registrar",
        "registrar",
        "sign",
        outcome="done",
        evidence={"basis": "state-document: the box was ticked"},
    )
    reopened = rec("r1", "reopened", "principal", "alice-desk", "buy", supersedes=["s3"])
    yield Case(
        "claim-pending-and-reopened",
        {
            **md,
            "records": [sign, claim, buy, buy_done, reopened],
            "document": "## Acts\n- [x] Buy domain <!-- act:buy -->\n",
        },
        output={
            "document": (
                "## Acts\n- [ ] Buy domain <!-- act:buy -->\n"
                "- [x] Sign lease <!-- act:sign --> "
                "_(claimed done, awaiting the principal side)_\n"
                "<!-- acts:listed buy sign -->\n"
            )
        },
        comment="a pending registrar claim keeps the box ticked; a reopened act is unticked",
    )
    yield Case(
        "no-section-yet",
        {**md, "records": [pay], "document": "# Website\nIntro."},
        output={
            "document": (
                "# Website\nIntro.\n\n## Acts\n\n- [ ] Pay hosting <!-- act:pay -->\n"
                "<!-- acts:listed pay -->\n"
            )
        },
        comment="the section is appended when the document has none",
    )
    yield Case(
        "nothing-to-write",
        {**md, "records": [], "document": "# Website\nIntro."},
        output={"document": "# Website\nIntro."},
        comment="no acts and no section: the document is returned unchanged",
        flags=("hand-written",),
    )


# --- conformance classes (§12) -----------------------------------------------------------------

CONFORMS = {"conforms": True}


@suite(
    "handoff.conformance_requester",
    description=(
        "§12 requester: one record a requester emits, checked against the records held: core "
        "admission, then the requester's MUSTs (need records, claims, derived_from relations "
        "and notes only; a key raised once; amended/withdrawn list the current need; terms_rev "
        "raised by exactly one; nothing after withdrawal). Input {roles, held, record}; "
        "output {conforms: true}."
    ),
    notes={"core": "rejected by core admission before the class rules"},
)
def conformance_requester() -> Iterator[Case]:
    base = {"roles": ROLES}
    yield Case(
        "raise", {**base, "held": [], "record": RAISED}, output=CONFORMS, comment="first raise"
    )
    yield Case(
        "raise-again",
        {**base, "held": [RAISED], "record": {**RAISED, "id": "n1b"}},
        error={"code": "conformance", "reason": "key_reused"},
        comment="a key is raised once",
    )
    yield Case(
        "amend", {**base, "held": [RAISED], "record": AMENDED}, output=CONFORMS, comment="+1"
    )
    yield Case(
        "amend-skips-revision",
        {**base, "held": [RAISED], "record": {**AMENDED, "terms_rev": 3}},
        error={"code": "conformance", "reason": "terms_rev_step"},
        comment="receivers accept a gap; a conforming requester never makes one",
    )
    yield Case(
        "amend-not-current",
        {
            **base,
            "held": [RAISED, AMENDED],
            "record": {**AMENDED, "id": "n2b", "terms_rev": 3, "supersedes": ["n1"]},
        },
        error={"code": "conformance", "reason": "supersedes_current"},
        comment="supersedes must list the current need, here n2",
    )
    yield Case(
        "withdraw",
        {**base, "held": [RAISED, AMENDED], "record": WITHDRAWN},
        output=CONFORMS,
        comment="withdraw the current need",
    )
    yield Case(
        "amend-after-withdrawal",
        {
            **base,
            "held": [RAISED, AMENDED, WITHDRAWN],
            "record": {**AMENDED, "id": "n4", "terms_rev": 3, "supersedes": ["n3"]},
        },
        error={"code": "conformance", "reason": "need_withdrawn"},
        comment="a withdrawn need is final for the requester",
    )
    yield Case(
        "amend-unraised",
        {**base, "held": [], "record": AMENDED},
        error={"code": "conformance", "reason": "need_missing"},
        comment="nothing to amend",
    )
    yield Case(
        "claim",
        {
            **base,
            "held": [RAISED],
            "record": rec(
                "c1",
                "claimed",
                "requester",
                "agent-1",
                outcome="done",
                evidence={"basis": "the principal said: paid it this morning"},
            ),
        },
        output=CONFORMS,
        comment="a requester may claim what it heard",
    )
    yield Case(
        "registrar-claim",
        {
            **base,
            "held": [RAISED],
            "record": rec("c2", "claimed", "registrar", "registrar", outcome="removed"),
        },
        output=CONFORMS,
        comment="an Acts registrar claims with its own origin, for the requester",
    )
    yield Case(
        "settle",
        {**base, "held": [RAISED], "record": {**settled(), "by": "agent-1"}},
        error={"code": "ownership", "reason": "not_principal_side"},
        comment="a requester never settles",
        flags=("core",),
    )


def _held_for_side() -> list[dict[str, Any]]:
    return [RAISED, AMENDED]


SIDE = {
    "mandates": {
        "mandate-hosting": {
            "delegates": ["pa-bot"],
            "exts": ["acts"],
            "text": "Pay hosting invoices up to 200 EUR",
        }
    },
    "jwks": JWKS,
}


@suite(
    "handoff.conformance_principal_side",
    description=(
        "§12 principal side: one record a principal side emits, checked against the records "
        "held and its own configuration (mandates, the principal's JWKS): core admission and "
        "authority, then evidence.presented equal to the §9 digest, proposal on confirmed, "
        "mandates behind delegated, decision outcomes among the options at terms_rev, "
        "supersession of the current settlement, and any proof present verifying. Input "
        "{roles, side, held, record}; output {conforms: true}."
    ),
    notes={
        "authority": "one of the four authority kinds",
        "core": "rejected by core admission before the class rules",
        "presented": "the §9 presented digest",
        "proof": "a proof present on a non-verifiable side",
        "decision": "a Decisions settlement",
    },
)
def conformance_principal_side() -> Iterator[Case]:
    base = {"roles": ROLES, "side": SIDE, "held": _held_for_side()}
    good = settled(rev=2, terms=ACT_TERMS_2)
    yield Case(
        "principal",
        {**base, "record": good},
        output=CONFORMS,
        comment="the principal settled what was shown at revision 2",
        flags=("authority",),
    )
    yield from derive(
        Case("principal", {**base, "record": good}),
        [
            Mutation(
                "presented-missing",
                "kind principal needs the presented digest",
                _drop("record.evidence.presented"),
                error={"code": "evidence", "reason": "presented_missing"},
                extra_flags=("presented",),
            ),
            Mutation(
                "presented-of-old-terms",
                "the digest of revision 1 for a settlement at revision 2",
                _set("record.evidence.presented", presented("acts/0.3", "k1", 1, ACT_TERMS)),
                error={"code": "evidence", "reason": "presented_mismatch"},
                extra_flags=("presented",),
            ),
            Mutation(
                "presented-of-other-item",
                "the same terms shown for another key",
                _set("record.evidence.presented", presented("acts/0.3", "k9", 2, ACT_TERMS_2)),
                error={"code": "evidence", "reason": "presented_mismatch"},
                extra_flags=("presented",),
            ),
            Mutation(
                "terms-not-held",
                "the side cannot have shown a revision it does not hold",
                lambda o: (_set("record.terms_rev", 3)(o), None)[1],
                error={"code": "evidence", "reason": "terms_not_held"},
                extra_flags=("presented",),
            ),
            Mutation(
                "decider-not-principal",
                "kind principal names someone else",
                _set("record.authority.decider", "pa-bot"),
                error={"code": "authority", "reason": "decider_not_principal"},
                extra_flags=("core",),
            ),
            Mutation(
                "proof-bad",
                "a proof that does not verify is refused even where none is required",
                _set(
                    "record.evidence.proof",
                    with_proof(settled(), ED_KEY)["evidence"]["proof"],
                ),
                error={"code": "proof", "reason": "bad_signature"},
                extra_flags=("proof",),
            ),
        ],
    )

    # two rev-2 amendments (the requester forgot to chain them): the current need is the one
    # with the lower digest, and what is presented is its terms, not those of the lower id
    def rival_of(n: int) -> dict[str, Any]:
        terms = {**ACT_TERMS, "amount": "9999.00", "text": f"Pay the hosting invoice ({n})"}
        return rec(
            "n0", "amended", "requester", "agent-1", terms=terms, terms_rev=2, supersedes=["n1"]
        )

    rival = next(r for r in map(rival_of, range(1000)) if _dig(r) > _dig(AMENDED))
    forked = {**base, "held": [RAISED, AMENDED, rival]}
    yield Case(
        "presented-of-current-head",
        {**forked, "record": good},
        output=CONFORMS,
        comment="several heads at revision 2: presented digests the current need's terms",
        flags=("presented",),
    )
    yield Case(
        "presented-of-other-head",
        {**forked, "record": settled(rev=2, terms=rival["terms"])},
        error={"code": "evidence", "reason": "presented_mismatch"},
        comment="several heads at revision 2: the terms of the head not chosen (the lower id) "
        "were not what the principal side presents",
        flags=("presented",),
    )
    yield Case(
        "principal-with-valid-proof",
        {**base, "record": with_proof(good, ED_KEY)},
        output=CONFORMS,
        comment="a proof, when present, verifies",
        flags=("proof",),
    )
    yield Case(
        "proof-without-jwks",
        {**base, "side": {"mandates": SIDE["mandates"]}, "record": with_proof(good, ED_KEY)},
        error={"code": "key", "reason": "jwks_missing"},
        comment="a side that cannot check a proof does not pass it on as checked",
        flags=("proof",),
    )
    claim = rec(
        "c1",
        "claimed",
        "agent",
        "pa-bot",
        outcome="done",
        evidence={"basis": "card statement"},
    )
    confirmed = settled("s1", "confirmed", rev=2, terms=ACT_TERMS_2, proposal="c1", adopts=["c1"])
    yield Case(
        "confirmed",
        {**base, "held": [*base["held"], claim], "record": confirmed},
        output=CONFORMS,
        comment="the principal confirmed the agent's claim",
        flags=("authority",),
    )
    yield Case(
        "confirmed-proposal-missing",
        {**base, "held": [*base["held"], claim], "record": _without(confirmed, "proposal")},
        error={"code": "evidence", "reason": "proposal_missing"},
        comment="confirmed names what was confirmed",
        flags=("authority",),
    )
    yield Case(
        "confirmed-other-outcome",
        {**base, "held": [*base["held"], {**claim, "outcome": "failed"}], "record": confirmed},
        error={"code": "evidence", "reason": "proposal_mismatch"},
        comment="the claim said failed; the confirmation says done",
        flags=("authority",),
    )
    attested = settled("s1", "attested", rev=2, terms=ACT_TERMS_2)
    yield Case(
        "attested",
        {**base, "record": attested},
        output=CONFORMS,
        comment="the side attests on a bank statement",
        flags=("authority",),
    )
    yield Case(
        "attested-without-basis",
        {**base, "record": _drop_evidence(attested)},
        error={"code": "record", "reason": "basis_missing"},
        comment="attested names its basis",
        flags=("authority", "core"),
    )
    delegated = settled("s1", "delegated", rev=2, terms=ACT_TERMS_2)
    yield Case(
        "delegated",
        {**base, "record": delegated},
        output=CONFORMS,
        comment="pa-bot paid under a mandate the side holds",
        flags=("authority",),
    )
    yield from derive(
        Case("delegated", {**base, "record": delegated}),
        [
            Mutation(
                "mandate-unknown",
                "under names no mandate the side can produce",
                _set("record.authority.under", "mandate-everything"),
                error={"code": "authority", "reason": "mandate_unknown"},
                extra_flags=("authority",),
            ),
            Mutation(
                "mandate-other-delegate",
                "the mandate does not name this decider",
                lambda o: (
                    _set("record.authority.decider", "shop-bot")(o),
                    _set("record.authority.chain", ["alice", "shop-bot"])(o),
                ),
                error={"code": "authority", "reason": "mandate_scope"},
                extra_flags=("authority",),
            ),
            Mutation(
                "chain-not-from-principal",
                "the chain must start at the principal",
                _set("record.authority.chain", ["bob", "pa-bot"]),
                error={"code": "authority", "reason": "chain_broken"},
                extra_flags=("authority", "core"),
            ),
        ],
    )
    org = {**base, "roles": ORG_ROLES}
    org_settled = settled(rev=2, terms=ACT_TERMS_2)
    org_settled["authority"] = {"kind": "principal", "decider": "acme", "representative": "carol"}
    yield Case(
        "organisation-with-representative",
        {**org, "record": org_settled},
        output=CONFORMS,
        comment="an organisation principal acts through a named natural person",
        flags=("authority",),
    )
    yield Case(
        "organisation-without-representative",
        {**org, "record": _set_authority(org_settled, {"kind": "principal", "decider": "acme"})},
        error={"code": "authority", "reason": "representative_missing"},
        comment="representative is required for an organisation principal",
        flags=("authority", "core"),
    )
    replaced = settled("s2", rev=2, terms=ACT_TERMS_2, outcome="failed")
    yield Case(
        "replacing-without-supersedes",
        {**base, "held": [*base["held"], good], "record": replaced},
        error={"code": "conformance", "reason": "supersedes_current"},
        comment="a settlement that replaces another lists it",
    )
    yield Case(
        "replacing-with-supersedes",
        {**base, "held": [*base["held"], good], "record": {**replaced, "supersedes": ["s1"]}},
        output=CONFORMS,
        comment="the replacement lists the current settlement",
    )
    dec = {**base, "held": [DEC_RAISED]}
    yield Case(
        "decision-option",
        {**dec, "record": dec_settled()},
        output=CONFORMS,
        comment="an offered option",
        flags=("decision",),
    )
    yield Case(
        "decision-option-not-offered",
        {**dec, "record": dec_settled("medium")},
        error={"code": "record", "reason": "outcome_not_offered"},
        comment="medium was never offered at revision 1",
        flags=("decision",),
    )
    yield Case(
        "decision-free-not-allowed",
        {**dec, "record": dec_settled("free", answer="medium")},
        error={"code": "record", "reason": "free_answer_not_allowed"},
        comment="these terms do not allow a free answer",
        flags=("decision",),
    )


def _without(record: dict[str, Any], member: str) -> dict[str, Any]:
    out = copy.deepcopy(record)
    del out["evidence"][member]
    return out


def _drop_evidence(record: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    del out["evidence"]
    return out


def _set_authority(record: dict[str, Any], authority: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out["authority"] = authority
    return out


@suite(
    "handoff.conformance_verifiable_principal_side",
    description=(
        "§12 verifiable principal side: everything a principal side must do, and settlements "
        "of kind principal or confirmed carry an evidence.proof made with the principal's own "
        "key that verifies against the principal's JWKS. Input {roles, side, held, record}; "
        "output {conforms: true}."
    ),
    notes={
        "derived": "mechanically derived from a good vector",
        "missing": "no proof where one is required",
        "tampered": "the settled record changed after signing",
        "wrong-key": "signed with a key that is not the principal's",
    },
)
def conformance_verifiable_principal_side() -> Iterator[Case]:
    base = {"roles": ROLES, "side": SIDE, "held": _held_for_side()}
    plain = settled(rev=2, terms=ACT_TERMS_2)
    good = Case(
        "principal-ed25519",
        {**base, "record": with_proof(plain, ED_KEY)},
        output=CONFORMS,
        comment="signed with the principal's Ed25519 key",
    )
    yield good
    yield Case(
        "principal-es256",
        {**base, "record": with_proof(plain, EC_KEY)},
        output=CONFORMS,
        comment="signed with the principal's P-256 key",
    )
    yield from derive(
        good,
        [
            Mutation(
                "proof-removed",
                "kind principal without a proof",
                _drop("record.evidence.proof"),
                error={"code": "proof", "reason": "proof_missing"},
                extra_flags=("missing",),
            ),
            Mutation(
                "outcome-changed",
                "the outcome changed after signing",
                _set("record.outcome", "failed"),
                error={"code": "proof", "reason": "bad_signature"},
                extra_flags=("tampered",),
            ),
            Mutation(
                "signed-by-agent-key",
                "signed with a key the principal side does not list",
                _set("record.evidence.proof", with_proof(plain, OTHER_KEY)["evidence"]["proof"]),
                error={"code": "proof", "reason": "kid_unknown"},
                extra_flags=("wrong-key",),
            ),
        ],
    )
    claim = rec("c1", "claimed", "agent", "pa-bot", outcome="done", evidence={"basis": "receipt"})
    confirmed = settled("s1", "confirmed", rev=2, terms=ACT_TERMS_2, proposal="c1", adopts=["c1"])
    yield Case(
        "confirmed-without-proof",
        {**base, "held": [*base["held"], claim], "record": confirmed},
        error={"code": "proof", "reason": "proof_missing"},
        comment="confirmed needs the proof too",
        flags=("missing",),
    )
    yield Case(
        "confirmed-with-proof",
        {**base, "held": [*base["held"], claim], "record": with_proof(confirmed, EC_KEY)},
        output=CONFORMS,
        comment="confirmed, signed",
    )
    yield Case(
        "delegated-without-proof",
        {**base, "record": settled("s1", "delegated", rev=2, terms=ACT_TERMS_2)},
        output=CONFORMS,
        comment="a delegate has no principal's credential; its mandate is the evidence",
    )


@suite(
    "handoff.conformance_observer",
    description=(
        "§12 observer: fold everything held and report each item's state, with what can be "
        "checked of the current settlement's evidence (presented: match, mismatch, absent, "
        "unverifiable; proof: valid, invalid:<reason>, absent, unverifiable) and, for a "
        "decision, option_status; records of unknown extensions are consumed without acting. "
        "Input {roles, records, jwks?}; output {items, ignored}."
    ),
    notes={
        "stale": "a settlement made against outdated terms",
        "proof": "proof checks",
        "claims": "claims' evidence.basis",
        "conflicted": "a need id re-sent with other terms",
    },
)
def conformance_observer() -> Iterator[Case]:
    signed = with_proof(settled(), ED_KEY)
    tampered = copy.deepcopy(signed)
    tampered["evidence"]["presented"] = presented("acts/0.3", "k1", 1, ACT_TERMS_2)
    tampered["evidence"]["proof"] = sign_independently(tampered, ED_KEY)
    unknown = {**RAISED, "ext": "tasks/0.2", "id": "x1"}
    yield Case(
        "act-signed-and-stale-decision",
        {
            "roles": ROLES,
            "jwks": JWKS,
            "records": [
                RAISED,
                signed,
                DEC_RAISED,
                dec_settled(),
                _dec_amend("d2", 2, [DEC_TERMS["options"][1]], "d1"),
                unknown,
            ],
        },
        comment="an act settled with a valid proof; a decision whose chosen option is gone",
        flags=("proof", "stale"),
    )
    yield Case(
        "proof-over-wrong-presentation",
        {"roles": ROLES, "jwks": JWKS, "records": [RAISED, tampered]},
        comment="a valid signature over a presented digest that does not match the terms",
        flags=("proof",),
    )
    yield Case(
        "no-jwks",
        {"roles": ROLES, "records": [RAISED, signed]},
        comment="without the principal's JWKS an observer cannot check the proof",
        flags=("proof",),
    )
    based = rec("c1", "claimed", "agent", "helper-9", outcome="done",
                evidence={"basis": "bank statement line 4"})  # fmt: skip
    bare = rec("c2", "claimed", "agent", "helper-9", outcome="done")
    yield Case(
        "claims-basis-reported",
        {"roles": ROLES, "records": [RAISED, based, bare]},
        comment="seed §7: each claim's evidence.basis is reported (null when it gives none)",
        flags=("claims",),
    )
    rewrite = {**RAISED, "terms": {**RAISED["terms"], "amount": "9999.00"}}
    yield Case(
        "rewritten-need-after-signed-settlement",
        {"roles": ROLES, "jwks": JWKS, "records": [RAISED, signed, rewrite]},
        comment="the requester re-sends the need id with other terms after the principal "
        "signed: the item is conflicted, and the settlement's presented digest still binds "
        "the terms it was made against (presented_terms)",
        flags=("conflicted", "proof"),
    )
