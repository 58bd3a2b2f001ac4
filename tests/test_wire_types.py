"""Typed wire objects (issue 24 #9): the declarations are what the library returns, the
``Result`` accessors read them safely, and ``mypy --strict`` refuses code that misreads them.

``parley.wire.Reply`` and friends, ``pxp.wire.Brief``/``pxp.wire.Agreement`` and
``handoff.wire.SettledRecord``/``handoff.wire.ObservedItem`` are ``TypedDict`` annotations:
nothing checks them at run time, so
these tests hold them to real outputs (every runtime, brief, observer and grant-inspect
vector, and live calls) and to the JSON schemas where one exists.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

import handoff
import parley
import pxp

from .handoff.ext_fixtures import ROLES, ed_key, raised, rec, registry
from .parley.runtime_harness import AGENT, PRINCIPAL, grant, load_shop
from .wire_check import is_typed_dict, problems

TOP = Path(__file__).resolve().parents[1]
NOW = 1_790_000_000

REPLY_TYPES: dict[str, Any] = {
    "BRIEF": parley.wire.BriefReply,
    "ANSWER": parley.wire.AnswerReply,
    "PROPOSALS": parley.wire.ProposalsReply,
    "CLARIFY": parley.wire.ClarifyReply,
    "RECEIPT": parley.wire.ReceiptReply,
    "ERROR": parley.wire.ErrorReply,
    "EVENT": parley.wire.EventFrame,
}
OPEN = (parley.wire.EffectJSON,)
"""Declarations whose objects may carry members beyond those declared (SPEC.md section 5.1:
an effect is ``{op, target, …}``, the shop adds ``detail`` and ``to``)."""


def _vectors(path: str) -> list[dict[str, Any]]:
    data = json.loads((TOP / "vectors" / path).read_text(encoding="utf-8"))
    return [case for case in data["tests"] if "output" in case]


def _reply_problems(reply: Any) -> list[str]:
    kind = reply.get("kind") if isinstance(reply, dict) else None
    if kind not in REPLY_TYPES:
        return [f"unknown reply kind {kind!r}"]
    return problems(reply, REPLY_TYPES[kind], open_types=OPEN)


def _schema(protocol: str, name: str) -> dict[str, Any]:
    return json.loads((TOP / "schemas" / protocol / name).read_text(encoding="utf-8"))


# -- parley: the declarations ------------------------------------------------------------


def test_reply_kind_and_error_code_are_the_frame_schemas_sets() -> None:
    frame = _schema("parley", "frame.json")["properties"]
    assert set(get_args(parley.wire.ReplyKind)) == set(frame["kind"]["enum"])
    assert set(get_args(parley.wire.ErrorCode)) == set(frame["code"]["enum"])
    assert set(REPLY_TYPES) == set(get_args(parley.wire.ReplyKind))
    for kind, declared in REPLY_TYPES.items():
        assert get_args(get_type_hints(declared)["kind"]) == (kind,)


def test_consent_request_is_the_consent_schema() -> None:
    schema = _schema("parley", "consent.json")
    declared = parley.wire.ConsentRequestJSON
    assert set(declared.__required_keys__) == set(schema["required"])
    assert set(declared.__annotations__) == set(schema["properties"])


def test_every_runtime_vector_reply_has_its_declared_shape() -> None:
    seen: set[str] = set()
    for case in _vectors("parley/runtime.json"):
        for reply in case["output"]["replies"]:
            assert _reply_problems(reply) == [], case["id"]
            seen.add(reply["kind"])
    assert seen == set(REPLY_TYPES)  # every kind is exercised


def test_consent_and_grant_inspect_vectors_have_their_declared_shape() -> None:
    for case in _vectors("parley/consent-request.json"):
        assert problems(case["output"]["consent"], parley.wire.ConsentRequestJSON) == [], case["id"]
    cases = _vectors("parley/grant-inspect.json")
    assert cases
    for case in cases:
        assert problems(case["output"], parley.wire.GrantInspection) == [], case["id"]


def test_inspect_grant_of_a_delegated_grant_has_its_declared_shape() -> None:
    other = parley.generate_key()
    token = parley.delegate(grant(now=NOW), AGENT, other.public, [{"risk": "low"}], iat=NOW)
    info = parley.inspect_grant(token)
    assert problems(info, parley.wire.GrantInspection) == []
    assert (info["depth"], info["signatures"], info["holder"]) == (2, True, other.public)
    assert info["malformed"] == []


# -- parley: Result and its accessors on a real service ------------------------------------


class _Pair:
    """The example shop and an agent, talking through ``Service.handle`` in process."""

    def __init__(self, grants: list[str]) -> None:
        self.service = load_shop().build_service(trusted=[PRINCIPAL.public], clock=lambda: NOW)
        self.agent = parley.Agent(AGENT, grants, clock=lambda: NOW)

    def send(self, frame: dict[str, Any]) -> parley.Result:
        result = None
        for reply in self.service.handle(frame, now=NOW):
            assert _reply_problems(reply) == []
            got = self.agent.receive(reply)
            if got is not None:  # a Result has no truth value: compare with None
                result = got
        assert result is not None
        return result


def test_result_accessors_read_each_kind_of_reply() -> None:
    pair = _Pair([grant(now=NOW)])
    brief = pair.send(pair.agent.hello())
    assert brief.kind == "BRIEF"
    assert (brief.data, brief.proposals, brief.receipt, brief.error, brief.code) == (None,) * 5
    assert brief.raise_for_error() is brief

    answer = pair.send(pair.agent.ask("shop.search", {"query": "mocha"}))
    assert answer.kind == "ANSWER"
    assert answer.data == {"items": [{"sku": "C04", "name": "mocha", "usd": 350}]}
    assert answer.proposals is None

    clarify = pair.send(pair.agent.intent("shop.order", {"item": "blend"}))
    assert clarify.kind == "CLARIFY"
    assert clarify.reply is not None
    assert (clarify.data, clarify.proposals) == (None, None)

    shown = pair.send(pair.agent.intent("shop.order", {"item": "latte"}))
    proposals = shown.proposals
    assert proposals is not None
    assert [p["cost"] for p in proposals] == [
        {"amount": 275, "currency": "USD"},
        {"amount": 575, "currency": "USD"},
    ]
    assert shown.data is None

    done = pair.send(pair.agent.commit(proposals[0]))
    receipt = done.receipt
    assert receipt is not None
    assert receipt["proposal"] == proposals[0]["id"]
    assert [e["message"] for e in done.events] == ["sending the order to the barista"]
    assert done.raise_for_error() is done

    undone = pair.send(pair.agent.undo(receipt["id"]))
    assert undone.receipt is not None
    assert undone.receipt.get("undoes") == receipt["id"]


def test_raise_for_error_raises_the_reply_with_the_consent_to_ask_for() -> None:
    pair = _Pair([grant(now=NOW)])
    pair.send(pair.agent.hello())
    big = pair.send(pair.agent.intent("shop.order", {"item": "latte", "qty": 10}))
    assert big.proposals is not None
    refused = pair.send(pair.agent.commit(big.proposals[0]))  # 27.50 USD over a 20 USD cap
    error = refused.error
    assert error is not None
    assert (refused.code, error["code"]) == ("consent_required", "consent_required")
    assert (refused.data, refused.proposals, refused.receipt) == (None, None, None)
    with pytest.raises(parley.ReplyError) as caught:
        refused.raise_for_error()
    exc = caught.value
    assert isinstance(exc, parley.ParleyError)
    assert (exc.code, exc.reason, exc.message) == (
        "consent_required",
        error.get("reason"),
        error["message"],
    )
    assert exc.reply == error
    assert exc.consent is not None
    assert exc.consent == refused.consent  # rebuilt from what the agent was shown
    assert exc.consent["proposal"] == big.proposals[0]["id"]
    assert problems(exc.consent, parley.wire.ConsentRequestJSON) == []


def test_a_pending_result_has_no_parts_and_raises_unavailable() -> None:
    pending = parley.Result({"parley": 1, "id": "a1", "verb": "HELLO"})
    assert (pending.kind, pending.ok, pending.code, pending.data, pending.error) == (
        None,
        False,
        None,
        None,
        None,
    )
    with pytest.raises(parley.ParleyError) as caught:
        pending.raise_for_error()
    assert (caught.value.code, caught.value.reason) == ("not_ready", "pending")


@pytest.mark.parametrize(
    ("reply", "read"),
    [
        ({"kind": "ANSWER"}, "data"),
        ({"kind": "PROPOSALS", "proposals": "p_1"}, "proposals"),
        ({"kind": "PROPOSALS", "proposals": [{"id": 5}]}, "proposals"),
        ({"kind": "PROPOSALS"}, "proposals"),
        ({"kind": "RECEIPT", "receipt": None}, "receipt"),
        ({"kind": "RECEIPT", "receipt": {"proposal": "p_1"}}, "receipt"),
        ({"kind": "ERROR", "message": "no"}, "error"),
        ({"kind": "ERROR", "code": 7, "message": "no"}, "raise_for_error"),
        ({"kind": "ERROR", "code": "forbidden"}, "code"),
    ],
)
def test_an_accessor_refuses_a_peer_reply_missing_its_part(
    reply: dict[str, Any], read: str
) -> None:
    # A peer can send any frame whose envelope is right; the typed accessors check the part
    # they hand on and answer with our error, never a KeyError or a wrongly typed value.
    agent = parley.Agent(AGENT, service="shop.example", clock=lambda: NOW)
    frame = agent.ask("shop.search")
    result = agent.receive({"parley": 1, "id": "s1", "re": frame["id"], **reply})
    assert result is not None
    with pytest.raises(parley.ParleyError) as caught:
        _read(result, read)
    assert (caught.value.code, caught.value.reason) == ("bad_frame", "bad_reply")


def _read(result: parley.Result, name: str) -> object:
    value = getattr(result, name)
    return value() if callable(value) else value


def test_complete_refuses_what_is_not_a_reply() -> None:
    async def run() -> None:
        async def send(frame: dict[str, Any]) -> None:
            raise AssertionError("nothing is sent")

        client = parley.Client(parley.Agent(AGENT), send)
        with pytest.raises(parley.ParleyError) as caught:
            await client.complete(["ANSWER"])  # type: ignore[arg-type]
        assert (caught.value.code, caught.value.reason) == ("bad_frame", "not_object")

    asyncio.run(run())


# -- pxp ---------------------------------------------------------------------------------


def _schema_mismatches(schema: dict[str, Any], declared: Any, where: str = "$") -> list[str]:
    """Compare a JSON schema's objects with a TypedDict, member by member, recursively."""
    out: list[str] = []
    if "oneOf" in schema:
        objects = [s for s in schema["oneOf"] if s.get("type") == "object"]
        if objects:
            (schema,) = objects
    if schema.get("type") == "array":
        schema = schema["items"]
    if "properties" not in schema:
        return out
    hints = get_type_hints(declared)
    props = set(schema["properties"])
    if set(declared.__required_keys__) != set(schema.get("required", [])):
        out.append(f"{where}: required {sorted(declared.__required_keys__)} != schema")
    missing = props - set(hints)
    extra = set(hints) - props
    if missing:
        out.append(f"{where}: {declared.__name__} lacks {sorted(missing)}")
    if extra and schema.get("additionalProperties") is False:
        out.append(f"{where}: {declared.__name__} declares {sorted(extra)} the schema forbids")
    for name in props & set(hints):
        for inner in _typed_dicts_in(hints[name]):
            out += _schema_mismatches(schema["properties"][name], inner, f"{where}.{name}")
    return out


def _typed_dicts_in(tp: Any) -> list[Any]:
    if is_typed_dict(tp):
        return [tp]
    return [found for arg in get_args(tp) for found in _typed_dicts_in(arg)]


def test_the_brief_declaration_is_the_brief_schema() -> None:
    assert _schema_mismatches(_schema("pxp", "brief.schema.json"), pxp.wire.Brief) == []


def test_every_brief_vector_has_the_declared_shape() -> None:
    cases = _vectors("pxp/brief.json")
    assert len(cases) >= 5
    for case in cases:
        assert problems(case["output"]["brief"], pxp.wire.Brief) == [], case["id"]


def test_a_simulated_rooms_brief_and_agreement_have_the_declared_shape() -> None:
    room = pxp.simulate()
    brief = room.brief()
    assert problems(brief, pxp.wire.Brief) == []
    assert brief["outcome"] == "agreed"
    assert brief["escalations"]
    agreement = room.agreement
    assert agreement is not None
    assert problems(agreement, pxp.wire.Agreement) == []
    assert brief["agreement"] is not None
    assert brief["agreement"]["terms"] == agreement["terms"]


# -- handoff -----------------------------------------------------------------------------


def test_every_observer_vector_item_has_the_declared_shape() -> None:
    cases = _vectors("handoff/conformance-observer.json")
    seen: set[str] = set()
    for case in cases:
        for item in case["output"]["items"]:
            assert problems(item, handoff.wire.ObservedItem) == [], case["id"]
            seen.update(item)
    # the optional reports are all exercised somewhere
    assert {"claim_evidence", "evidence", "presented_terms", "option_status"} <= seen


def test_make_settlement_and_observe_have_the_declared_shape() -> None:
    reg = registry()
    reg.add(raised())
    reg.add(rec("c1", "claimed", "agent", "pa-bot", outcome="done"))
    item = handoff.ItemId("acts", "web", "k1")
    record = handoff.make_settlement(
        reg,
        item,
        "done",
        by="alice-desk",
        ts="2026-11-30T10:00:00Z",
        kind="confirmed",
        proposal="c1",
        answer="yes",
    )
    assert problems(record, handoff.wire.SettledRecord) == []
    signed = handoff.attach_proof(record, ed_key())
    reg.add(signed)
    again = handoff.make_settlement(reg, item, "failed", by="alice-desk", ts="2026-11-30T11:00:00Z")
    assert problems(again, handoff.wire.SettledRecord) == []
    assert again["supersedes"] == [record["id"]]
    fresh = handoff.Registry(roles=ROLES, extensions=handoff.EXTENSIONS)
    jwks = handoff.public_jwks(ed_key())
    observed = handoff.observe(reg.records(item), fresh, jwks=jwks)
    assert [problems(entry, handoff.wire.ObservedItem) for entry in observed] == [[]]
    assert observed[0]["evidence"] == {"presented": "match", "proof": "valid"}


# -- mypy --strict refuses code that misreads them ------------------------------------------

MISREAD = """
import handoff
import parley
import pxp


def items_at_the_top(result: parley.Result) -> object:
    reply = result.reply
    assert reply is not None
    if reply["kind"] == "ANSWER":
        return reply["items"]  # error: the data sits at reply["data"]["items"]
    return None


def receipt_misspelt(result: parley.Result) -> bool:
    return result.kind == "RECIEPT"  # error


def price_instead_of_cost(result: parley.Result) -> object:
    return (result.proposals or [])[0]["price"]  # error


def a_code_parley_never_sends(result: parley.Result) -> bool:
    error = result.error
    return error is not None and error["code"] == "not_allowed"  # error


def consent_member_misnamed(result: parley.Result) -> object:
    assert result.consent is not None
    return result.consent["proposal_id"]  # error


def outcome_misspelt(room: pxp.Room) -> bool:
    return room.brief()["outcome"] == "agreeed"  # error


def agreement_member_misnamed(room: pxp.Room) -> object:
    agreement = room.agreement
    assert agreement is not None
    return agreement["term"]  # error


def evidence_member_misnamed(record: handoff.wire.SettledRecord) -> object:
    return record["evidence"]["presnted"]  # error


def state_misspelt(items: list[handoff.wire.ObservedItem]) -> bool:
    return items[0]["state"] == "setled"  # error


def depth_misspelt(token: str) -> object:
    return parley.inspect_grant(token)["depht"]  # error
"""

READ_RIGHT = """
import handoff
import parley
import pxp


def items(result: parley.Result) -> object:
    reply = result.reply
    assert reply is not None
    if reply["kind"] == "ANSWER":
        return reply["data"]["items"]
    return result.data


def is_receipt(result: parley.Result) -> bool:
    receipt = result.receipt
    return result.kind == "RECEIPT" and receipt is not None and receipt["undo"] is not None


def cost(result: parley.Result) -> int:
    first = (result.proposals or [])[0]["cost"]
    return 0 if first is None else first["amount"]


def needs_consent(result: parley.Result) -> bool:
    error = result.error
    return error is not None and error["code"] == "consent_required"


def consent_proposal(result: parley.Result) -> str:
    assert result.consent is not None
    return result.consent["proposal"]


def agreed(room: pxp.Room) -> bool:
    return room.brief()["outcome"] == "agreed"


def terms(room: pxp.Room) -> list[str]:
    agreement = room.agreement
    return [] if agreement is None else agreement["terms"]


def presented(record: handoff.wire.SettledRecord) -> str:
    return record["evidence"]["presented"]


def settled(items: list[handoff.wire.ObservedItem]) -> bool:
    return items[0]["state"] == "settled"


def depth(token: str) -> int:
    return parley.inspect_grant(token)["depth"]


async def commit_first(client: parley.Client, result: parley.Result) -> parley.Result:
    proposals = result.raise_for_error().proposals or []
    done = await client.commit(proposals[0])
    return done.raise_for_error()
"""


def _mypy(tmp_path: Path, source: str) -> tuple[int, list[int]]:
    if importlib.util.find_spec("mypy") is None:
        # make test installs the dev extra (mypy among it); make test-floor installs the
        # runtime floors and the test tools only, and type checking is not what it proves
        pytest.skip("mypy is not installed in this environment (the dev extra has it)")
    tmp_path.mkdir()
    target = tmp_path / "wire_use.py"
    target.write_text(textwrap.dedent(source), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-warn-unused-configs",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config-file",
            str(TOP / "pyproject.toml"),
            str(target),
        ],
        capture_output=True,
        text=True,
        cwd=TOP,
        timeout=300,
        check=False,
    )
    lines = sorted(
        {int(m.group(1)) for m in re.finditer(r"wire_use\.py:(\d+): error:", done.stdout)}
    )
    return done.returncode, lines


@pytest.mark.slow
def test_mypy_strict_refuses_code_that_misreads_a_wire_object(tmp_path: Path) -> None:
    status, lines = _mypy(tmp_path / "misread", MISREAD)
    marked = [
        n for n, line in enumerate(textwrap.dedent(MISREAD).splitlines(), 1) if "# error" in line
    ]
    assert status == 1
    assert lines == marked  # each misreading is caught, and nothing else


@pytest.mark.slow
def test_mypy_strict_accepts_code_that_reads_them_right(tmp_path: Path) -> None:
    status, lines = _mypy(tmp_path / "right", READ_RIGHT)
    assert (status, lines) == (0, [])
