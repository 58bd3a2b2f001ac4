"""Vector cases of the Parley runtime: frame parsing and request-in, replies-out.

Frame cases state their expected output or error by hand. Runtime cases state the
expected final reply's ``kind`` (and ``code``/``reason`` for errors) by hand in
:data:`EXPECT`; the generator checks the library against it before the library's full
reply frames are written, and tests/parley/test_runtime_vectors.py re-checks the written
file. Keys are seeds of repeated bytes (principal 0x01, agent 0x02, a stranger agent 0x03,
another principal 0x04); the clock is ``NOW``; randomness is the counter described in
docs/vectors/parley-runtime.md.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import parley
import ppcheck
from vectorlib import Case, Mutation, derive, suite

NOW = 1790000000
PRINCIPAL = parley.key_from_seed(bytes([1]) * 32)
AGENT = parley.key_from_seed(bytes([2]) * 32)
STRANGER = parley.key_from_seed(bytes([3]) * 32)
OTHER_PRINCIPAL = parley.key_from_seed(bytes([4]) * 32)
SERVICE = "shop.example"

# ------------------------------------------------------------------ frame parsing


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


@suite(
    "parley.frame_parse",
    description="parse_frame(line): one NDJSON line to a frame, or bad_frame with a reason",
    notes={
        "limit": "the vector sets a small size limit to exercise the check before parsing",
        "hex": "the line is given as hex because it is not valid UTF-8",
        "unknown-fields": "unknown fields are kept and ignored by receivers",
        "derived": "derived mechanically from the good request",
        "not-json": "the line is cut in half",
        "array": "a JSON array instead of an object",
        "version-2": "a frame for another protocol version",
        "version-true": "true is not the integer 1",
        "id-number": "the id is not a string",
        "id-empty": "the id is empty",
        "id-too-long": "the id is over 256 characters",
        "no-verb-or-kind": "neither a request nor a reply",
        "verb-number": "the verb is not a string",
        "duplicate-key": "a key appears twice (refused, never last-wins)",
        "nan": "a non-finite number",
        "infinite-number": "a number literal too large to be a finite double (1e999)",
        "lone-surrogate": "an escaped lone UTF-16 surrogate, which no UTF-8 reply can carry",
        "too-deep": "nesting deeper than 64 levels",
        "two-frames": "two JSON values on one line",
    },
)
def frame_cases() -> Iterator[Case]:
    hello = {"parley": 1, "id": "1", "verb": "HELLO"}
    good = Case("request", {"line": _line(hello)}, output={"frame": hello})
    yield good
    reply = {"parley": 1, "id": "s1", "re": "1", "kind": "ANSWER", "data": None}
    yield Case("reply", {"line": _line(reply)}, output={"frame": reply})
    cut = {**reply, "data": {"text": "a\U0001f600\ud83d\u2026"}}
    cut_reply = Case(
        "reply-lone-surrogate-in-body",
        {
            "line": _line(reply).replace(
                '"data":null', '"data":{"text":"a\\ud83d\\ude00\\ud83d\u2026"}'
            )
        },
        output={"frame": cut},
        comment=(
            "a fitted text cut through an emoji: a reply may carry the lone surrogate in its "
            "body, escaped as JSON.stringify writes it"
        ),
    )
    yield cut_reply
    yield from derive(
        cut_reply,
        [
            Mutation(
                "lone-surrogate-in-re",
                "a lone surrogate in the envelope (re) is refused even in a reply",
                lambda i: i.update(line=i["line"].replace('"re":"1"', '"re":"\\udc00"')),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            Mutation(
                "lone-surrogate-in-id",
                "a lone surrogate in the envelope (id) is refused even in a reply",
                lambda i: i.update(line=i["line"].replace('"id":"s1"', '"id":"\\ud800"')),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            Mutation(
                "request",
                "the same body in a request (verb instead of kind) is refused",
                lambda i: i.update(
                    line=i["line"].replace('"re":"1","kind":"ANSWER"', '"verb":"ASK"')
                ),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
        ],
    )
    extra = {**hello, "future": {"x": [1, 2]}}
    yield Case(
        "unknown-field-kept",
        {"line": _line(extra)},
        output={"frame": extra},
        flags=("unknown-fields",),
    )
    yield Case(
        "unknown-verb-parses",
        {"line": _line({**hello, "verb": "DANCE"})},
        output={"frame": {**hello, "verb": "DANCE"}},
        comment="whether a verb is known is the receiver's business (it answers bad_frame)",
    )
    pair = {**hello, "x": "\U0001f600"}
    yield Case(
        "escaped-surrogate-pair",
        {"line": _line(hello)[:-1] + ',"x":"\\ud83d\\ude00"}'},
        output={"frame": pair},
        comment="an escaped surrogate pair is one character and fine",
    )
    yield Case(
        "trailing-newline",
        {"line": _line(hello) + "\r\n"},
        output={"frame": hello},
    )
    yield Case(
        "exactly-at-limit",
        {"line": _line(hello), "limit": len(_line(hello))},
        output={"frame": hello},
        flags=("limit",),
    )
    yield Case(
        "over-limit",
        {"line": _line(hello), "limit": len(_line(hello)) - 1},
        error={"code": "bad_frame", "reason": "too_large"},
        comment="refused by size before any parsing",
        flags=("limit",),
    )
    yield Case(
        "over-limit-even-if-garbage",
        {"line": "{" * 40, "limit": 39},
        error={"code": "bad_frame", "reason": "too_large"},
        flags=("limit",),
    )
    yield Case(
        "not-utf8",
        {"line": {"hex": "7b22ff227d"}},
        error={"code": "bad_frame", "reason": "not_utf8"},
        flags=("hex",),
    )
    bad = Mutation
    yield from derive(
        good,
        [
            bad(
                "not-json",
                "cut in half",
                lambda i: i.update(line=i["line"][:10]),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            bad(
                "array",
                "a JSON array, not an object",
                lambda i: i.update(line="[" + i["line"] + "]"),
                error={"code": "bad_frame", "reason": "not_object"},
            ),
            bad(
                "version-2",
                '"parley": 2',
                lambda i: i.update(line=i["line"].replace('"parley":1', '"parley":2')),
                error={"code": "bad_frame", "reason": "bad_version"},
            ),
            bad(
                "version-true",
                '"parley": true',
                lambda i: i.update(line=i["line"].replace('"parley":1', '"parley":true')),
                error={"code": "bad_frame", "reason": "bad_version"},
            ),
            bad(
                "id-number",
                "the id is a number",
                lambda i: i.update(line=i["line"].replace('"id":"1"', '"id":1')),
                error={"code": "bad_frame", "reason": "bad_id"},
            ),
            bad(
                "id-empty",
                "the id is empty",
                lambda i: i.update(line=i["line"].replace('"id":"1"', '"id":""')),
                error={"code": "bad_frame", "reason": "bad_id"},
            ),
            bad(
                "id-too-long",
                "the id has 257 characters",
                lambda i: i.update(line=i["line"].replace('"id":"1"', '"id":"' + "i" * 257 + '"')),
                error={"code": "bad_frame", "reason": "bad_id"},
            ),
            bad(
                "no-verb-or-kind",
                "neither verb nor kind",
                lambda i: i.update(line=i["line"].replace(',"verb":"HELLO"', "")),
                error={"code": "bad_frame", "reason": "bad_envelope"},
            ),
            bad(
                "verb-number",
                "the verb is a number",
                lambda i: i.update(line=i["line"].replace('"HELLO"', "7")),
                error={"code": "bad_frame", "reason": "bad_envelope"},
            ),
            bad(
                "duplicate-key",
                "the id appears twice",
                lambda i: i.update(line=i["line"].replace('"id":"1"', '"id":"1","id":"2"')),
                error={"code": "bad_frame", "reason": "duplicate_key"},
            ),
            bad(
                "nan",
                "NaN is not JSON",
                lambda i: i.update(line=i["line"][:-1] + ',"x":NaN}'),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            bad(
                "infinite-number",
                "1e999 is JSON text but no finite number: it would reach a capability as inf",
                lambda i: i.update(line=i["line"][:-1] + ',"x":1e999}'),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            bad(
                "lone-surrogate",
                "an escaped lone UTF-16 surrogate is no Unicode string (no reply could carry it)",
                lambda i: i.update(line=i["line"].replace('"id":"1"', '"id":"\\ud800"')),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
            bad(
                "too-deep",
                "65 nested arrays",
                lambda i: i.update(line=i["line"][:-1] + ',"x":' + "[" * 65 + "]" * 65 + "}"),
                error={"code": "bad_frame", "reason": "too_deep"},
            ),
            bad(
                "two-frames",
                "two objects on one line",
                lambda i: i.update(line=i["line"] + i["line"]),
                error={"code": "bad_frame", "reason": "not_json"},
            ),
        ],
    )


# ------------------------------------------------------------------ the vector service

ITEMS = [{"sku": f"C{n:02d}", "name": f"drink {n}", "usd": 250 + 25 * n} for n in range(30)]

LATTE = {
    "summary": "1 x latte (pickup)",
    "effects": [
        {"op": "create", "target": "order", "detail": "1 x C01"},
        {"op": "charge", "target": "card on file", "to": 275},
    ],
    "cost": {"amount": 275, "currency": "USD"},
    "undo": 1800,
    "data": {"ready": "in 10 min"},
}
LATTE_DELIVERY = {
    "summary": "1 x latte (delivery)",
    "effects": [{"op": "charge", "target": "card on file", "to": 575}],
    "cost": {"amount": 575, "currency": "USD"},
    "undo": 1800,
}
GIFT = {
    "summary": "Send a 50 USD gift card to ana@example.com",
    "effects": [{"op": "send", "target": "ana@example.com", "detail": "gift card"}],
    "cost": {"amount": 5000, "currency": "USD"},
    "risk": "medium",
    "undo": None,
}

SPEC: dict[str, Any] = {
    "id": SERVICE,
    "name": "Example Coffee",
    "summary": "Order coffee.",
    "trusted": [PRINCIPAL.public, OTHER_PRINCIPAL.public],
    "capabilities": [
        {
            "name": "shop.search",
            "kind": "ask",
            "summary": "Search the menu",
            "params": {"query?": "string"},
            "answer": {"items": ITEMS},
        },
        {
            "name": "shop.order",
            "kind": "intent",
            "summary": "Order drinks",
            "params": {"item": "string", "qty?": "int", "ship?": "pickup|delivery"},
            "risk": "low",
            "clarify": {
                "param": "ship",
                "question": "Pickup or delivery?",
                "options": [
                    {"label": "pickup", "params": {"ship": "pickup"}},
                    {"label": "delivery", "params": {"ship": "delivery"}},
                ],
            },
            "offers": [LATTE, LATTE_DELIVERY],
            "events": [{"message": "sending the order", "progress": 0.5}],
            "result": {"order": "o1"},
            "undo_result": {"cancelled": "o1"},
        },
        {
            "name": "shop.gift",
            "kind": "intent",
            "summary": "Send a gift card",
            "params": {"to": "string"},
            "risk": "medium",
            "offers": [GIFT],
            "result": {"card": "g1"},
        },
        {
            "name": "shop.broken",
            "kind": "intent",
            "params": {},
            "offers": [LATTE],
            "crash": "commit",
        },
        {"name": "shop.boom", "kind": "ask", "crash": "handler"},
        {
            "name": "shop.busy",
            "kind": "ask",
            "refuse": {"code": "unavailable", "message": "the barista is on a break", "retry": 30},
        },
    ],
}


def _grant(
    *,
    holder: parley.Key = AGENT,
    principal: parley.Key = PRINCIPAL,
    extra: list[dict[str, Any]] | None = None,
    nonce: str = "v1",
) -> str:
    caveats = [
        {"svc": [SERVICE]},
        {"per": {"max": 2000, "currency": "USD"}},
        {"risk": "low"},
        {"exp": NOW + 3600},
        *(extra or []),
    ]
    return parley.mint_grant(principal, holder.public, caveats, iat=NOW - 60, nonce=nonce)


GRANT = _grant()
SPEND_GRANT = _grant(extra=[{"spend": {"max": 1000, "currency": "USD"}}], nonce="spend")
SPEND_BLOCK = parley.decode_grant(SPEND_GRANT).block_ids[0]
STRANGER_GRANT = _grant(holder=STRANGER, principal=OTHER_PRINCIPAL, nonce="x")
SIBLING_GRANT = _grant(holder=STRANGER, principal=PRINCIPAL, nonce="sib")
OTHER_GRANT = _grant(principal=OTHER_PRINCIPAL, nonce="other")


def _proof(verb: str, target: str, key: parley.Key = AGENT, ts: int = NOW) -> dict[str, Any]:
    return parley.sign_proof(key, aud=SERVICE, verb=verb, target=target, ts=ts)


def _proposal(pid: str, offer: dict[str, Any], capability: str = "shop.order") -> dict[str, Any]:
    proposal: dict[str, Any] = {
        "id": pid,
        "capability": capability,
        "summary": offer["summary"],
        "effects": offer["effects"],
        "cost": offer["cost"],
        "risk": offer.get("risk", "low"),
        "undo": None if offer["undo"] is None else {"window": offer["undo"]},
        "expires": NOW + 600,
    }
    proposal["hash"] = parley.proposal_hash(proposal)
    if "data" in offer:
        proposal["data"] = offer["data"]
    return proposal


P_LATTE = _proposal("p_latte", LATTE)
P_GIFT = _proposal("p_gift", GIFT, "shop.gift")
P_LATTE_2 = _proposal("p_latte2", LATTE)


def _record(
    proposal: dict[str, Any], key: parley.Key | None = AGENT, principal: str | None = None
) -> dict[str, Any]:
    return {
        "proposal": proposal,
        "key": None if key is None else key.public,
        "principal": principal if principal is not None else PRINCIPAL.public,
        "plan": None,
    }


def _receipt(
    proposal: dict[str, Any], *, at: int = NOW - 100, undone: bool = False
) -> dict[str, Any]:
    window = proposal["undo"]
    receipt = {
        "id": "r_" + proposal["id"][2:],
        "proposal": proposal["id"],
        "capability": proposal["capability"],
        "summary": proposal["summary"],
        "at": at,
        "effects": proposal["effects"],
        "cost": proposal["cost"],
        "undo": None if window is None else {"until": at + window["window"]},
        "result": {"order": "o1"},
    }
    undo = None
    if undone:
        undo = {
            "id": "r_undo",
            "proposal": proposal["id"],
            "capability": proposal["capability"],
            "summary": proposal["summary"],
            "at": at + 10,
            "effects": [],
            "cost": None,
            "undo": None,
            "undoes": receipt["id"],
        }
    return {
        "receipt": receipt,
        "key": AGENT.public,
        "principal": PRINCIPAL.public,
        "hash": proposal["hash"],
        "amount": 0,
        "blocks": [],
        "undo": undo,
        "undo_key": AGENT.public if undone else None,
    }


def _frame(fid: str, verb: str, **body: Any) -> dict[str, Any]:
    return {"parley": 1, "id": fid, "verb": verb, **body}


def _intent(
    fid: str,
    params: dict[str, Any],
    *,
    capability: str = "shop.order",
    auto: bool = False,
    key: parley.Key | None = AGENT,
    grants: list[str] | None = None,
    ts: int = NOW,
) -> dict[str, Any]:
    frame = _frame(fid, "INTENT", capability=capability, params=params)
    if auto:
        frame["auto"] = True
    if key is not None:
        target = parley.grants.proof_target(
            "INTENT", capability=capability, auto=auto, frame_id=fid
        )
        frame["proof"] = _proof("INTENT", target, key, ts)
        if grants is not None:
            frame["grants"] = grants
    return frame


def _commit(
    proposal: dict[str, Any],
    *,
    key: parley.Key = AGENT,
    grants: list[str] | None = None,
    digest: str | None = None,
    ts: int = NOW,
) -> dict[str, Any]:
    digest = proposal["hash"] if digest is None else digest
    return _frame(
        "c1",
        "COMMIT",
        proposal=proposal["id"],
        hash=digest,
        grants=[GRANT] if grants is None else grants,
        proof=_proof("COMMIT", digest, key, ts),
    )


def _undo(
    receipt: str, *, key: parley.Key = AGENT, grants: list[str] | None = None
) -> dict[str, Any]:
    return _frame(
        "u1",
        "UNDO",
        receipt=receipt,
        grants=[GRANT] if grants is None else grants,
        proof=_proof("UNDO", receipt, key),
    )


def _expand(handle: str, key: parley.Key | None = AGENT) -> dict[str, Any]:
    frame = _frame("e1", "EXPAND", handle=handle, budget=60)
    if key is not None:
        frame["proof"] = _proof("EXPAND", handle, key)
    return frame


HANDLE = "h_" + "Q" * 24
PARKED = [{"sku": f"C{n:02d}", "usd": n} for n in range(12)]

# id -> (frame, state, expected final (kind, code, reason), comment, extra input)
EXPECT: dict[str, tuple[str, str | None, str | None]] = {}


def _case(
    cid: str,
    frame: dict[str, Any] | str,
    expect: tuple[str, str | None, str | None],
    comment: str,
    *,
    state: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
    watch: list[str] | None = None,
    flags: tuple[str, ...] = (),
    now: int = NOW,
    replay: bool = False,
) -> Case:
    data: dict[str, Any] = {"service": spec or SPEC, "now": now, "frame": frame}
    if state:
        data["state"] = state
    if watch:
        data["watch"] = watch
    EXPECT[cid] = expect
    result = ppcheck.run("parley.runtime", data).as_json()
    final = result["output"]["replies"][-1]
    got = (final["kind"], final.get("code"), final.get("reason"))
    wanted = (expect[0], expect[1], expect[2] if expect[2] is not None else got[2])
    if got != wanted:
        raise RuntimeError(f"runtime vector {cid}: expected {wanted}, library gave {got}")
    if replay and final.get("replay") is not True:
        raise RuntimeError(f"runtime vector {cid}: expected an idempotent replay")
    return Case(cid, data, comment=comment, flags=flags)


def _runtime_cases() -> Iterator[Case]:
    ok = ("RECEIPT", None, None)
    # HELLO
    yield _case("hello", _frame("h1", "HELLO"), ("BRIEF", None, None), "the full BRIEF")
    yield _case(
        "hello-small-budget",
        _frame("h1", "HELLO", budget=40),
        ("BRIEF", None, None),
        "trailing capabilities are dropped behind a more handle",
        flags=("budget",),
    )
    yield _case(
        "hello-bad-budget",
        _frame("h1", "HELLO", budget="lots"),
        ("ERROR", "bad_frame", "bad_budget"),
        "a budget is a positive integer",
    )
    # frames
    yield _case(
        "unknown-verb",
        _frame("z1", "DANCE"),
        ("ERROR", "bad_frame", "unknown_verb"),
        "an unknown verb is answered bad_frame with re set",
    )
    yield _case(
        "malformed-line",
        '{"parley":1,"id":"z1","verb":',
        ("ERROR", "bad_frame", "not_json"),
        "a line that is not JSON: ERROR with re null",
    )
    yield _case(
        "reply-sent-as-request",
        {"parley": 1, "id": "z1", "re": "x", "kind": "ANSWER"},
        ("ERROR", "bad_frame", "not_request"),
        "a service only takes requests",
    )
    # ASK
    yield _case(
        "ask", _frame("a1", "ASK", capability="shop.search"), ("ANSWER", None, None), "an answer"
    )
    yield _case(
        "ask-fitted",
        _frame(
            "a1", "ASK", capability="shop.search", budget=80, proof=_proof("ASK", "shop.search")
        ),
        ("ANSWER", None, None),
        "the answer is cut to the budget; the handle is bound to the proof key",
        flags=("budget",),
    )
    yield _case(
        "ask-unknown-capability",
        _frame("a1", "ASK", capability="shop.serch"),
        ("ERROR", "unknown_capability", "unknown_capability"),
        "with a did-you-mean in the message",
    )
    yield _case(
        "ask-wrong-kind",
        _frame("a1", "ASK", capability="shop.order"),
        ("ERROR", "unknown_capability", "wrong_kind"),
        "an intent capability asked with ASK",
    )
    yield _case(
        "ask-no-capability",
        _frame("a1", "ASK"),
        ("ERROR", "bad_frame", "missing"),
        "ASK without a capability",
    )
    yield _case(
        "ask-params-wrong-type",
        _frame("a1", "ASK", capability="shop.search", params={"query": 5}),
        ("ERROR", "invalid_params", "bad_type"),
        "fix: send the string",
        flags=("params",),
    )
    yield _case(
        "ask-params-not-object",
        _frame("a1", "ASK", capability="shop.search", params=[1]),
        ("ERROR", "invalid_params", "bad_type"),
        "params is an object",
        flags=("params",),
    )
    yield _case(
        "ask-crash",
        _frame("a1", "ASK", capability="shop.boom"),
        ("ERROR", "internal", None),
        "a crashing capability: internal, no details",
    )
    yield _case(
        "ask-refused-unavailable",
        _frame("a1", "ASK", capability="shop.busy"),
        ("ERROR", "unavailable", None),
        "a capability refuses with retry",
    )
    yield _case(
        "ask-bad-proof",
        _frame(
            "a1",
            "ASK",
            capability="shop.search",
            proof=_proof("ASK", "shop.order"),
        ),
        ("ERROR", "unauthorized", "bad_proof_signature"),
        "a proof for another target",
    )
    yield _case(
        "ask-untrusted-grant",
        _frame(
            "a1",
            "ASK",
            capability="shop.search",
            grants=[_grant(principal=parley.key_from_seed(bytes([9]) * 32), nonce="u")],
            proof=_proof("ASK", "shop.search"),
        ),
        ("ERROR", "unauthorized", "untrusted_issuer"),
        "a grant from a principal the service does not trust",
    )
    yield _case(
        "ask-grants-without-proof",
        _frame("a1", "ASK", capability="shop.search", grants=[GRANT]),
        ("ERROR", "unauthorized", "no_proof"),
        "grants need a proof",
    )
    # INTENT
    yield _case(
        "intent-clarify",
        _intent("i1", {"item": "latte"}),
        ("CLARIFY", None, None),
        "options are merge patches of params",
    )
    yield _case(
        "intent-proposals",
        _intent("i1", {"item": "latte", "ship": "pickup"}, grants=[GRANT]),
        ("PROPOSALS", None, None),
        "proposals bound to the proof key and the grant's principal",
    )
    yield _case(
        "intent-anonymous",
        _intent("i1", {"item": "latte", "ship": "pickup"}, key=None),
        ("PROPOSALS", None, None),
        "no proof: proposals that can never be committed",
    )
    yield _case(
        "intent-missing-param",
        _intent("i1", {"ship": "pickup"}),
        ("ERROR", "invalid_params", "missing_param"),
        "item is required",
        flags=("params",),
    )
    yield _case(
        "intent-bad-enum",
        _intent("i1", {"item": "latte", "ship": "drone"}),
        ("ERROR", "invalid_params", "bad_enum"),
        "fix lists the allowed values as merge patches",
        flags=("params",),
    )
    yield _case(
        "intent-int-as-string",
        _intent("i1", {"item": "latte", "qty": "2"}),
        ("ERROR", "invalid_params", "bad_type"),
        "fix: send the int",
        flags=("params",),
    )
    yield _case(
        "intent-unknown-param",
        _intent("i1", {"item": "latte", "colour": "red"}),
        ("ERROR", "invalid_params", "unknown_param"),
        "fix: drop it (merge patch null)",
        flags=("params",),
    )
    yield _case(
        "intent-auto-not-bool",
        {**_intent("i1", {"item": "latte"}), "auto": "yes"},
        ("ERROR", "bad_frame", "bad_auto"),
        "auto is a boolean",
    )
    yield _case(
        "intent-forgets-oldest",
        _intent("i1", {"item": "latte", "ship": "pickup"}),
        ("PROPOSALS", None, None),
        "the proposal store is full of open proposals: the oldest is forgotten (it can then"
        " only be not_found, never committed twice), new INTENTs are not refused",
        spec={**SPEC, "limits": {"max_proposals": 1}},
        state={"proposals": [_record(P_GIFT, principal=PRINCIPAL.public)]},
        flags=("bounded",),
    )
    # auto-commit
    auto = _intent("auto-1", {"item": "latte", "ship": "pickup"}, auto=True, grants=[GRANT])
    yield _case(
        "auto-commit",
        auto,
        ok,
        "inside the grant's policy and undoable: committed in one round trip",
        flags=("auto",),
    )
    yield _case(
        "auto-fallback-irreversible",
        _intent("auto-2", {"to": "ana"}, capability="shop.gift", auto=True, grants=[GRANT]),
        ("PROPOSALS", None, None),
        "irreversible (and over the risk ceiling): proposals as without auto",
        flags=("auto",),
    )
    yield _case(
        "auto-fallback-no-grant",
        _intent("auto-3", {"item": "latte", "ship": "pickup"}, auto=True),
        ("PROPOSALS", None, None),
        "a proof without a grant never auto-commits",
        flags=("auto",),
    )
    yield _case(
        "auto-replay",
        auto,
        ok,
        "the (key, frame id) was seen: the original reply with replay true",
        state={
            "replay": [
                {
                    "key": AGENT.public,
                    "id": "auto-1",
                    "reply": {"kind": "RECEIPT", "receipt": _receipt(P_LATTE)["receipt"]},
                }
            ]
        },
        flags=("auto", "replay"),
    )
    yield _case(
        "auto-replay-at-window-edge",
        _intent(
            "auto-1", {"item": "latte", "ship": "pickup"}, auto=True, grants=[GRANT], ts=NOW - 300
        ),
        ok,
        "first seen 600 s ago with a proof dated 300 s ahead of the service clock: the proof"
        " is still valid at exactly 300 s, so the memory must be too (the original reply, replay"
        " true, never a second commit)",
        state={
            "replay": [
                {
                    "key": AGENT.public,
                    "id": "auto-1",
                    "at": NOW - 600,
                    "reply": {"kind": "RECEIPT", "receipt": _receipt(P_LATTE)["receipt"]},
                }
            ]
        },
        flags=("auto", "replay", "seed-finding"),
        replay=True,
    )
    yield _case(
        "auto-in-progress",
        auto,
        ("ERROR", "conflict", "busy"),
        "the same (key, frame id) is still being handled",
        state={"replay": [{"key": AGENT.public, "id": "auto-1", "reply": None}]},
        flags=("auto",),
    )

    # an auto INTENT cut short by a crash (review F4): its claim records who handled it
    # and the proposal it was committing, so a repeat settles it instead of busy
    def auto_claim(until: int, proposal: str | None) -> dict[str, Any]:
        held = {"owner": "vectors.invalid:1:gone", "began": NOW - 30, "until": until}
        claim = {"key": AGENT.public, "id": "auto-1", "reply": None, "at": NOW - 30}
        return claim | {"lease": held | {"key": AGENT.public}, "proposal": proposal}

    yield _case(
        "auto-cut-short-committed",
        auto,
        ok,
        "the handler died after its commit was written: the repeat gets that receipt (replay"
        " true) instead of busy",
        state={
            "receipts": [_receipt(P_LATTE)],
            "replay": [auto_claim(NOW - 1, P_LATTE["id"])],
        },
        flags=("auto", "replay", "recovery"),
        replay=True,
    )
    yield _case(
        "auto-cut-short-before-commit",
        auto,
        ok,
        "the handler died before any commit began and its lease ran out: no effect took"
        " place, so the repeat runs afresh (a new receipt, not a replay)",
        state={"replay": [auto_claim(NOW - 1, None)]},
        flags=("auto", "recovery"),
    )
    yield _case(
        "auto-cut-short-lease-running",
        auto,
        ("ERROR", "conflict", "busy"),
        "the handler's lease still runs (another host): busy, retry in a second",
        state={"replay": [auto_claim(NOW + 570, None)]},
        flags=("auto", "recovery"),
    )
    # COMMIT
    open_latte = {"proposals": [_record(P_LATTE)]}
    yield _case("commit", _commit(P_LATTE), ok, "EVENTs then the receipt", state=open_latte)
    yield _case(
        "commit-replay",
        _commit(P_LATTE),
        ok,
        "already committed: the original receipt, replay true",
        state={"receipts": [_receipt(P_LATTE)]},
        flags=("replay",),
    )
    yield _case(
        "commit-receipts-full-undoable",
        _commit(P_LATTE_2),
        ("ERROR", "limit", "store_full"),
        "the receipt store is full of receipts that can still be undone: the commit is refused"
        " before anything runs (forgetting one would take away its undo)",
        spec={**SPEC, "limits": {"max_receipts": 1}},
        state={"receipts": [_receipt(P_LATTE)], "proposals": [_record(P_LATTE_2)]},
        flags=("bounded",),
    )
    yield _case(
        "commit-receipts-full-closed",
        _commit(P_LATTE_2),
        ok,
        "the receipt store is full, but the oldest receipt can no longer be undone: it is"
        " forgotten to make room",
        spec={**SPEC, "limits": {"max_receipts": 1}},
        state={"receipts": [_receipt(P_GIFT)], "proposals": [_record(P_LATTE_2)]},
        flags=("bounded",),
    )
    yield _case(
        "commit-replay-other-key",
        _commit(P_LATTE, key=STRANGER, grants=[STRANGER_GRANT]),
        ("ERROR", "not_found", "unknown_proposal"),
        "another key learns nothing: no receipt, no hash",
        state={"receipts": [_receipt(P_LATTE)]},
        flags=("replay", "seed-finding"),
    )
    yield _case(
        "commit-replay-wrong-hash",
        _commit(P_LATTE, digest=parley.wire.b64url_encode(bytes(32))),
        ("ERROR", "conflict", "hash"),
        "the committing key with another hash: conflict without the hash",
        state={"receipts": [_receipt(P_LATTE)]},
        flags=("replay", "seed-finding"),
    )
    yield _case(
        "commit-hash-mismatch",
        _commit(P_LATTE, digest=parley.wire.b64url_encode(bytes(32))),
        ("ERROR", "conflict", "hash_mismatch"),
        "the hash must be exact; the error does not echo it",
        state=open_latte,
    )
    yield _case(
        "commit-expired",
        _commit(P_LATTE, ts=NOW + 600),
        ("ERROR", "expired", "proposal_expired"),
        "at its expiry a proposal can no longer be committed",
        state=open_latte,
        now=NOW + 600,
    )
    yield _case(
        "commit-unknown",
        _commit({**P_LATTE, "id": "p_nope"}),
        ("ERROR", "not_found", "unknown_proposal"),
        "no such proposal",
    )
    yield _case(
        "commit-anonymous-proposal",
        _commit(P_LATTE),
        ("ERROR", "forbidden", "anonymous_proposal"),
        "proposals of an INTENT without a proof are never committable",
        state={"proposals": [_record(P_LATTE, key=None)]},
        flags=("seed-finding",),
    )
    yield _case(
        "commit-other-key",
        _commit(P_LATTE, key=STRANGER, grants=[SIBLING_GRANT]),
        ("ERROR", "not_found", "unknown_proposal"),
        "only the INTENT's proof key may commit; others are told nothing",
        state=open_latte,
        flags=("seed-finding",),
    )
    yield _case(
        "commit-principal-mismatch",
        _commit(P_LATTE, grants=[OTHER_GRANT]),
        ("ERROR", "forbidden", "principal_mismatch"),
        "the grant must be rooted in the proposal's principal",
        state=open_latte,
        flags=("seed-finding",),
    )
    yield _case(
        "commit-grant-selection",
        _commit(P_LATTE, grants=[OTHER_GRANT, GRANT]),
        ok,
        "of several grants, the one rooted in the proposal's principal authorizes",
        state=open_latte,
        flags=("seed-finding",),
    )
    yield _case(
        "commit-no-grant",
        {k: v for k, v in _commit(P_LATTE).items() if k != "grants"},
        ("ERROR", "unauthorized", "no_grant"),
        "COMMIT needs grants",
        state=open_latte,
    )
    yield _case(
        "commit-stale-proof",
        _commit(P_LATTE, ts=NOW - 301),
        ("ERROR", "unauthorized", "proof_expired"),
        "a proof more than 300 s old",
        state=open_latte,
    )
    yield _case(
        "commit-holder-mismatch",
        _commit(P_LATTE, grants=[STRANGER_GRANT]),
        ("ERROR", "unauthorized", "holder_mismatch"),
        "a grant held by another key",
        state=open_latte,
    )
    gift_state = {"proposals": [_record(P_GIFT)]}
    yield _case(
        "commit-consent-required",
        _commit(P_GIFT),
        ("ERROR", "consent_required", "caveat_failed"),
        "over the risk and per caveats: the consent request the principal must sign",
        state=gift_state,
    )
    consent = parley.consent_request(P_GIFT, service=SERVICE, principal=PRINCIPAL.public)
    token = parley.mint_consent_grant(PRINCIPAL, consent, AGENT.public, iat=NOW, nonce="c")
    yield _case(
        "commit-with-consent",
        _commit(P_GIFT, grants=[GRANT, token]),
        ok,
        "the consent grant authorizes exactly this COMMIT",
        state=gift_state,
    )
    yield _case(
        "commit-spend-reserved",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ok,
        "the cost is counted against the spend block",
        state=open_latte | {"spent": {SPEND_BLOCK: 700}},
        watch=[SPEND_BLOCK],
        flags=("spend",),
    )
    yield _case(
        "commit-spend-exceeded",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ("ERROR", "consent_required", "caveat_failed"),
        "committed plus reserved spend would pass the cap",
        state=open_latte | {"spent": {SPEND_BLOCK: 800}},
        watch=[SPEND_BLOCK],
        flags=("spend",),
    )
    p_eur = _proposal("p_eur", {**LATTE, "cost": {"amount": 275, "currency": "EUR"}})
    yield _case(
        "commit-spend-other-currency",
        _commit(p_eur, grants=[SPEND_GRANT]),
        ("ERROR", "consent_required", "caveat_failed"),
        "a cost in EUR against caps in USD is never converted or ignored: consent, and"
        " nothing is counted",
        state={"proposals": [_record(p_eur)]},
        watch=[SPEND_BLOCK],
        flags=("spend",),
    )
    broken = _proposal("p_broken", LATTE, "shop.broken")
    yield _case(
        "commit-crash",
        _commit(broken, grants=[SPEND_GRANT]),
        ("ERROR", "internal", None),
        "the commit callable crashed: no internals, reservation released",
        state={"proposals": [_record(broken)]},
        watch=[SPEND_BLOCK],
        flags=("spend",),
    )

    # a COMMIT cut short by a crash (issue 18): the claim in flight carries a lease
    def lease(owner: str, until: int) -> dict[str, Any]:
        return {
            "owner": owner,
            "began": NOW - 30,
            "until": until,
            "key": AGENT.public,
            "principal": PRINCIPAL.public,
            "hash": P_LATTE["hash"],
        }

    def reconciling(answer: str) -> dict[str, Any]:
        caps = [
            {**c, "reconcile": answer} if c["name"] == "shop.order" else c
            for c in SPEC["capabilities"]
        ]
        return {**SPEC, "capabilities": caps}

    def in_flight(owner: str, until: int) -> dict[str, Any]:
        held = {"proposal": P_LATTE["id"], "amount": 275, "blocks": [SPEND_BLOCK]}
        return open_latte | {"inflight": [held | {"lease": lease(owner, until)}]}

    live = "vectors.invalid:1:live"  # a process on another host, lease still running
    yield _case(
        "commit-inflight-running",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ("ERROR", "conflict", "busy"),
        "another process holds the commit and its lease runs: busy, retry in a second",
        state=in_flight(live, NOW + 570),
        watch=[SPEND_BLOCK],
        flags=("recovery",),
    )
    yield _case(
        "commit-inflight-unresolved",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ("ERROR", "unavailable", "commit_unresolved"),
        "a commit cut short, no reconciler: the reservation stays held and the retry is"
        " told the outcome is unknown until an operator resolves it (never busy forever)",
        state=in_flight("", 0),
        watch=[SPEND_BLOCK],
        flags=("recovery",),
    )
    yield _case(
        "commit-inflight-lease-over-happened",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ok,
        "the lease ran out and the reconciler says the effect happened: the receipt is"
        " written (dated when the commit began) and replayed; the spend counted once",
        state=in_flight("vectors.invalid:1:gone", NOW - 1),
        spec=reconciling("happened"),
        watch=[SPEND_BLOCK],
        flags=("recovery", "replay"),
        replay=True,
    )
    yield _case(
        "commit-inflight-lease-over-not-happened",
        _commit(P_LATTE, grants=[SPEND_GRANT]),
        ok,
        "the lease ran out and the reconciler says the effect did not happen: the claim"
        " and reservation are released and the COMMIT runs now; the spend counted once",
        state=in_flight("vectors.invalid:1:gone", NOW - 1),
        spec=reconciling("not_happened"),
        watch=[SPEND_BLOCK],
        flags=("recovery",),
    )
    # UNDO
    done = {"receipts": [_receipt(P_LATTE)]}
    yield _case(
        "undo-inflight-unresolved",
        _undo("r_latte"),
        ("ERROR", "unavailable", "undo_unresolved"),
        "an undo cut short, no reconciler: unavailable until an operator resolves it",
        state=done | {"undoing": [{"receipt": "r_latte", "lease": lease("", 0)}]},
        flags=("recovery",),
    )
    rid = "r_latte"
    yield _case("undo", _undo(rid), ok, "an undo receipt naming the original", state=done)
    yield _case(
        "undo-replay",
        _undo(rid),
        ok,
        "already undone by this key: the reversal, replay true",
        state={"receipts": [_receipt(P_LATTE, undone=True)]},
        flags=("replay",),
    )
    yield _case(
        "undo-replay-other-key",
        _undo(rid, key=STRANGER, grants=[SIBLING_GRANT]),
        ("ERROR", "conflict", "undone"),
        "another key of the same principal gets no copy of the reversal",
        state={"receipts": [_receipt(P_LATTE, undone=True)]},
        flags=("replay", "seed-finding"),
    )
    yield _case(
        "undo-window-closed",
        _undo(rid),
        ("ERROR", "expired", "undo_expired"),
        "after the undo window",
        state={"receipts": [_receipt(P_LATTE, at=NOW - 1800)]},
    )
    yield _case(
        "undo-irreversible",
        _undo("r_gift"),
        ("ERROR", "expired", "irreversible"),
        "an irreversible action",
        state={"receipts": [_receipt(P_GIFT)]},
    )
    yield _case(
        "undo-other-principal",
        _undo(rid, key=STRANGER, grants=[STRANGER_GRANT]),
        ("ERROR", "not_found", "unknown_receipt"),
        "UNDO needs a grant rooted in the committing principal; another principal's key is"
        " answered exactly as for an unknown receipt (it learns nothing, not even existence)",
        state=done,
        flags=("seed-finding",),
    )
    yield _case(
        "undo-committer-other-principal",
        _undo(rid, grants=[OTHER_GRANT]),
        ("ERROR", "forbidden", "principal_mismatch"),
        "the committing key itself, under a grant of another principal, is told why",
        state=done,
    )
    yield _case(
        "undo-unknown",
        _undo("r_nope"),
        ("ERROR", "not_found", "unknown_receipt"),
        "no such receipt",
    )
    yield _case(
        "undo-no-proof",
        {k: v for k, v in _undo(rid).items() if k != "proof"},
        ("ERROR", "unauthorized", "no_grant"),
        "UNDO needs grants and a proof",
        state=done,
    )
    # EXPAND
    parked = {
        "handles": [{"handle": HANDLE, "key": AGENT.public, "value": PARKED, "expires": NOW + 600}]
    }
    yield _case("expand", _expand(HANDLE), ("ANSWER", None, None), "the next slice", state=parked)
    yield _case(
        "expand-other-key",
        _expand(HANDLE, key=STRANGER),
        ("ERROR", "not_found", "unknown_handle"),
        "handles are bound to the key that caused them",
        state=parked,
        flags=("seed-finding",),
    )
    yield _case(
        "expand-no-proof",
        _expand(HANDLE, key=None),
        ("ERROR", "not_found", "unknown_handle"),
        "a bound handle needs its key's proof",
        state=parked,
        flags=("seed-finding",),
    )
    yield _case(
        "expand-unknown",
        _expand("h_" + "Z" * 24),
        ("ERROR", "not_found", "unknown_handle"),
        "no such handle",
    )
    expired = copy.deepcopy(parked)
    expired["handles"][0]["expires"] = NOW + 1
    yield _case(
        "expand-expired",
        _expand(HANDLE),
        ("ERROR", "expired", "handle_expired"),
        "past the handle's lifetime",
        state=expired,
        now=NOW + 1,
    )


@suite(
    "parley.runtime",
    description="one request frame against the vector service and its state: every reply frame",
    notes={
        "budget": "the reply is fitted to a small budget",
        "params": "params checked against the compact schema",
        "auto": "policy-gated auto-commit (section 4.3.1)",
        "replay": "an idempotent replay",
        "spend": "spend caps: output.spent shows the watched block totals afterwards",
        "seed-finding": "regression for a finding of the security review",
        "bounded": "a full store forgets what is safe to forget and refuses the rest",
        "recovery": "a COMMIT or UNDO cut short by a crash: state.inflight/undoing hold its"
        " lease; the capability's reconcile answer (or none) decides (ours, issue 18)",
    },
)
def runtime_cases() -> Iterator[Case]:
    yield from _runtime_cases()
