"""The whole errand in one process, byte-reproducible: for the tests, the vectors and ports.

Every party runs here with fixed keys (never for real use) and a fixed clock: Ana's side,
her agent, the shop (:class:`BikeShop`, a Parley service selling :class:`Bike`), the PXP
room. :func:`errand_roles` and :func:`errand_proxies` give the errand's Handoff roles and
PXP proxies to programs that run the parties themselves.

    >>> import ppbind
    >>> from ppbind.demo import demo_errand
    >>> ppbind.verify_errand(demo_errand())["act"]
    'done'
 The multi-process errand
(``examples/errand.py``) runs the same steps with every party in its own process.

``attack`` names a broken errand the tests and vectors check the audit against: the
attacker holds every key (Ana's too) and re-makes every hash and signature it can, so each
protocol's own verification passes and exactly one link breaks.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import handoff
import parley
import pxp
import vxp

from ._bind import (
    act_terms,
    approval_for,
    commit_binding,
    consent_grant,
    decision_terms,
    note_from_receipt,
    rfc3339,
    sign_approval_unchecked,
)
from ._digests import PROFILE, record_digest
from ._keys import PersonKey
from ._shop import Bike, BikeShop
from ._terms import agreed_terms, intent_params, read_terms
from .errors import BindingError

__all__ = ["ATTACKS", "DEMO", "Bike", "BikeShop", "demo_errand", "errand_proxies", "errand_roles"]

T0 = 1_796_205_600
"""2026-12-02T10:00:00Z, when the errand starts."""

DEMO: dict[str, Any] = {
    "errand": "errand-7f3a",
    "service": "bikes.ben.example",
    "issuer": "https://bikes.ben.example/vxp",
    "capability": "shop.buy",
    "item": "ben-shop/bike-2291",
    "other_item": "ben-shop/bike-2310",
    "amount": 44000,
    "currency": "EUR",
    "limit": 45000,
}
"""The errand's fixed facts (Ana buys a used bike from Ben's shop, at most 450 EUR)."""

ATTACKS = (
    "change-price-after-decision",
    "commit-another-proposal",
    "forge-approval",
    "decision-other-key",
    "grant-other-nonce",
    "decision-rejected",
    "reuse-decision",
    "act-other-item",
    "act-open",
    "release-other-grant",
    "act-other-decision",
    "act-longer-log",
    "act-other-key",
)
"""The re-signed attacks :func:`demo_errand` can play (each breaks one link)."""

_HONEST_SIGNER = (
    "act-open",
    "act-other-item",
    "release-other-grant",
    "act-other-decision",
    "act-longer-log",
    "act-other-key",
)
# the attacks in which Ana's side signs what it would sign in the honest errand


def _seeded(label: str) -> Callable[[int], bytes]:
    counter = [0]

    def draw(size: int) -> bytes:
        counter[0] += 1
        return hashlib.sha256(f"{label}/{counter[0]}".encode()).digest()[:size]

    return draw


def errand_roles(project: str) -> dict[str, Any]:
    """The Handoff roles of an errand's project: Ana, her desk, her agent, the registrar.

    A ``project`` that is not a string is ``binding_argument_invalid``.
    """
    if not isinstance(project, str):
        raise BindingError(
            "binding_argument_invalid", "the project is a Handoff project name", reason="project"
        )
    return {
        "principal": "ana",
        "principal_side": ["ana-desk"],
        "requesters": {project: ["ana-agent", "registrar"]},
        "roles": {"registrar": ["registrar"]},
    }


def _ts(seconds: int) -> str:
    return rfc3339(seconds)


def errand_proxies(terms: list[str]) -> dict[str, pxp.Proxy]:
    """The two scripted proxies of the demo: Ana's asks and agrees, the shop's proposes.

    Any :class:`pxp.Proxy` may stand in for either, as long as the agreement it reaches
    states the profile's machine terms (docs/spec/bindings.md §4.1).
    """
    return {
        "A": pxp.ScriptedProxy(
            [
                {"message": "We would buy bike 2291; what is your price?", "status": "continue"},
                {"message": "Agreed.", "status": "agree"},
            ]
        ),
        "B": pxp.ScriptedProxy(
            [
                {
                    "message": "440 EUR, collected at the shop.",
                    "proposal": {"terms": terms, "depends_on": []},
                    "status": "continue",
                }
            ]
        ),
    }


def _negotiate(proxies: Mapping[str, pxp.Proxy], at: Callable[[], datetime]) -> pxp.Room:
    """Ana's proxy (seat A) and the shop's proxy (seat B) negotiate in one PXP room."""
    room = pxp.Room.open("errand-7f3a-bike", topic="A used city bike", now=at())
    room.seal(
        "A",
        {
            "principal": {"name": "Ana"},
            "goal": "Buy a used city bike from Ben's shop.",
            "must_haves": ["At most 450 EUR"],
            "may_agree_to": ["Collect it at the shop"],
        },
        now=at(),
    )
    room.seal(
        "B",
        {
            "principal": {"name": "Ben's shop"},
            "goal": "Sell bike 2291.",
            "must_haves": ["At least 400 EUR"],
        },
        now=at(),
    )
    pxp.run_room(room, proxies, {}, clock=at)
    if room.status != "agreed":
        raise BindingError(
            "binding_demo_failed", f"the proxies did not agree (room {room.status})", link="pxp"
        )
    return room


def _consent_caveats(x: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The caveats of the consent grant C for a Decision's ``x_binding`` (§5.3)."""
    return [
        *parley.grants.consent_caveats(x["parley"]["consent"]),
        {"spend": {"max": x["terms"]["amount"], "currency": x["terms"]["currency"]}},
    ]


def demo_errand(
    attack: str | None = None,
    *,
    late_answer: bool = False,
    proxies: Mapping[str, pxp.Proxy] | None = None,
    shop_keys: str = "bindings",
) -> dict[str, Any]:
    """Run the errand in process and return the audit input (docs/spec/bindings.md §7.1).

    ``attack`` is one of :data:`ATTACKS` or ``None`` for the honest errand. With
    ``late_answer``, Ana approves only after the offer lapsed: her side records the answer
    and signs nothing, the shop seals the lapsed operations ``expired``, the agent sends a
    fresh INTENT and amends the Decision, and Ana approves the fresh offer (revision 2).
    ``proxies`` replace :func:`errand_proxies` (seat ``A`` is Ana's, ``B`` the shop's).
    ``shop_keys`` labels the keys the shop signs with; the agent is always configured with
    the keys of label ``bindings`` (``mandate.issuer_keys``), so any other label plays a shop
    impostor that knows the issuer's name but not its keys.
    """
    if attack is not None and attack not in ATTACKS:
        raise BindingError(
            "binding_argument_invalid", f"unknown attack {attack!r}", reason="attack"
        )
    d = DEMO
    now = [T0]

    def clock() -> float:
        return float(now[0])

    def tick(seconds: int = 1) -> int:
        now[0] += seconds
        return now[0]

    def at() -> datetime:
        return datetime.fromtimestamp(tick(), UTC)

    ana = PersonKey.from_label("bindings ana")
    agent = PersonKey.from_label("bindings agent")
    mallory = PersonKey.from_label("bindings mallory")
    project = d["errand"]

    # 1. PXP: the proxies agree on machine-readable terms.
    terms = agreed_terms(
        d["item"], d["amount"], d["currency"], d["service"], "collected at the shop by Saturday"
    )
    room = _negotiate(proxies or errand_proxies(terms), at)
    ledger = room.export()["ledger"]
    brief = room.brief()
    agreed = brief["agreement"]
    if agreed is None:
        raise BindingError("binding_demo_failed", "the room's brief holds no agreement", link="pxp")
    terms = list(agreed["terms"])  # what the room agreed, whoever proposed it

    # 0. Ana's errand grant G: INTENT only, never a COMMIT.
    errand_grant = parley.mint_grant(
        ana.parley,
        agent.public,
        [
            {"svc": [d["service"]]},
            {"verbs": ["INTENT"]},
            {"can": [d["capability"]]},
            {"exp": T0 + 86_400},
        ],
        iat=T0,
        nonce=project,
    )
    shop = BikeShop(
        service_id=d["service"],
        issuer=d["issuer"],
        base_url="https://bikes.ben.example",
        trusted=[ana.public],
        bikes=[
            Bike(d["item"], d["amount"], d["currency"], "City bike, 2019, 54 cm", d["other_item"]),
            Bike(d["other_item"], d["amount"], d["currency"], "City bike, 2020, 56 cm"),
        ],
        keys={
            "company": vxp.demo_key(f"{shop_keys} shop"),
            "log": vxp.demo_key(f"{shop_keys} log"),
            "witness": vxp.demo_key(f"{shop_keys} witness"),
        },
        clock=clock,
        rand=_seeded("bindings shop rand"),
        salts=_seeded("bindings salts"),
    )
    buyer = parley.Agent(
        agent.parley, [errand_grant], service=d["service"], clock=clock, rand=_seeded("agent")
    )

    # The COMMIT presents C alone: the agent that commits holds no standing grant.
    committer = parley.Agent(agent.parley, service=d["service"], clock=clock, rand=_seeded("c"))

    def call(frame: dict[str, Any], by: parley.Agent = buyer) -> dict[str, Any]:
        replies = shop.service.handle(frame, now=tick())
        reply = replies[-1]
        by.receive(reply)
        return reply

    # 2a. Parley INTENT: the shop's proposals, each with its VXP request and terms.
    intent = buyer.intent(
        d["capability"], intent_params(terms), goal="buy the agreed bike", budget=8000
    )
    offered = call(intent)
    proposals = offered["proposals"]
    proposal = next(p for p in proposals if p["effects"][0]["target"] == f"item/{d['item']}")
    other = next(p for p in proposals if p is not proposal)

    # 2b. Handoff: the Decision, built from the consent request; Ana settles it.
    roles = handoff.Roles.from_json(errand_roles(project))
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    records: list[dict[str, Any]] = []

    def add(record: dict[str, Any]) -> dict[str, Any]:
        registry.add(record)
        records.append(record)
        return record

    def raise_from(offer: dict[str, Any]) -> dict[str, Any]:
        """The Decision's terms the agent raises from the shop's offer."""
        return decision_terms(
            proposal=offer,
            service=d["service"],
            capability=d["capability"],
            principal=ana.public,
            agent=agent.public,
            brief=brief,
            ledger_head=room.head,
        )

    decision = handoff.ItemId("decisions", project, "buy")
    dterms = raise_from(proposal)
    add(
        handoff.make_raised(
            registry, decision, dterms, by="ana-agent", ts=_ts(tick()), record_id="d-raised"
        )
    )
    if late_answer:
        tick(proposal["expires"] - now[0] + 5)
        late: dict[str, Any] = dict(
            handoff.make_settlement(
                registry, decision, "approve", by="ana-desk", ts=_ts(tick()), record_id="d-late"
            )
        )
        late = add(handoff.attach_proof(late, ana.private_jwk()))
        try:
            consent_grant(ana, late, dterms, now=tick())
        except BindingError as exc:
            if exc.code != "binding_late":
                raise
        else:
            raise BindingError(
                "binding_demo_failed", "her side signed for a lapsed offer", link="decision->parley"
            )
        intent = buyer.intent(
            d["capability"], intent_params(terms), goal="buy the agreed bike", budget=8000
        )
        proposals = call(intent)["proposals"]
        proposal = next(p for p in proposals if p["effects"][0]["target"] == f"item/{d['item']}")
        other = next(p for p in proposals if p is not proposal)
        dterms = raise_from(proposal)
        add(
            handoff.make_amended(
                registry, decision, dterms, by="ana-agent", ts=_ts(tick()), record_id="d-fresh"
            )
        )
    signer = mallory if attack == "decision-other-key" else ana
    outcome = "reject" if attack == "decision-rejected" else "approve"
    settlement: dict[str, Any] = dict(
        handoff.make_settlement(
            registry, decision, outcome, by="ana-desk", ts=_ts(tick()), record_id="d-settled"
        )
    )
    settlement = handoff.attach_proof(settlement, signer.private_jwk())
    add(settlement)
    decided = dterms
    nonce_source = settlement
    if attack == "decision-rejected":
        nonce_source = {**settlement, "outcome": "approve"}
    if attack == "grant-other-nonce":
        nonce_source = {**settlement, "id": "another-settlement"}

    def decided_on(offer: dict[str, Any]) -> dict[str, Any]:
        """The Decision's terms as if Ana had decided ``offer`` (what an attacker re-makes)."""
        again = copy.deepcopy(dterms)
        shown = {k: v for k, v in offer.items() if k != "data"}
        again["x_binding"]["parley"]["proposal"] = shown
        again["x_binding"]["parley"]["consent"] = parley.consent_request(
            shown, service=d["service"], principal=ana.public
        )
        again["x_binding"]["vxp"] = offer["data"]["x_binding"]["vxp"]
        return again

    committed = proposal
    if attack == "change-price-after-decision":
        # The shop raises the price after Ana decided; the agent amends the decision and
        # commits the new offer with a grant minted from her old settlement.
        shop.bikes[d["item"]] = Bike(
            d["item"], d["amount"] + 1000, d["currency"], "City bike, 2019, 54 cm"
        )
        intent = buyer.intent(d["capability"], intent_params(terms), goal="buy", budget=8000)
        again = call(intent)
        committed = again["proposals"][0]
        decided = decided_on(committed)
        decided["x_binding"]["terms"]["amount"] = committed["cost"]["amount"]
        decided["due"] = rfc3339(committed["expires"])
        add(
            handoff.make_amended(
                registry, decision, decided, by="ana-agent", ts=_ts(tick()), record_id="d-amended"
            )
        )
    if attack == "reuse-decision":
        # a second errand (another bike, same price) committed on Ana's one decision
        intent = buyer.intent(
            d["capability"],
            {**intent_params(terms), "item": d["other_item"]},
            goal="buy another",
            budget=8000,
        )
        again = call(intent)
        committed = again["proposals"][0]
        decided = decided_on(committed)
    if attack == "commit-another-proposal":
        committed = other
        decided = decided_on(other)

    # 2c. On the same confirmation her side signs the consent grant C and the VXP approval.
    signed_at = tick()
    if attack is None or attack in _HONEST_SIGNER:
        grant = consent_grant(ana, settlement, decided, now=signed_at)
    else:
        # the attacker mints with her key what her side would refuse to sign
        x = decided["x_binding"]
        caveats = _consent_caveats(x)
        nonce = record_digest(nonce_source)
        grant = parley.mint_grant(ana.parley, x["agent"], caveats, iat=signed_at, nonce=nonce)
    if attack is None or attack in _HONEST_SIGNER:
        approval = approval_for(ana, decided)
    else:
        # the attacker signs whatever the shop's statements say, as the key it holds
        approval = sign_approval_unchecked(
            mallory if attack == "forge-approval" else ana,
            decided["x_binding"]["vxp"]["request"],
            decided["x_binding"]["vxp"]["terms"],
        )

    # 3. COMMIT with C alone and the approval; the shop logs it and executes.
    commit = committer.commit(committed, grants=[grant])
    commit["x_binding"] = commit_binding(approval)
    if attack == "release-other-grant":
        # the agent presents the shop another valid grant than the C it keeps and shows
        x = decided["x_binding"]
        caveats = _consent_caveats(x)
        other_grant = parley.mint_grant(
            ana.parley, x["agent"], caveats, iat=signed_at, nonce="another-grant"
        )
        done = call({**commit, "grants": [other_grant]}, committer)
    else:
        done = call(commit, committer)
    if "receipt" not in done:
        raise BindingError(
            "binding_demo_failed", f"the shop refused the commit: {done}", link="parley"
        )
    receipt = done["receipt"]
    add(
        note_from_receipt(
            registry, decision, receipt, by="ana-agent", ts=_ts(tick()), record_id="d-note"
        )
    )

    # 4. VXP: the agent fetches the proof with DPoP and verifies it.
    access = receipt["result"]["x_binding"]["vxp"]
    url = f"https://bikes.ben.example/v1/requests/{access['request_id']}/proof"
    fetched_at = tick()
    dpop = vxp.fetch.make_dpop_proof(
        agent.private_jwk(),
        method="GET",
        url=url,
        iat=fetched_at,
        jti=f"dpop-{fetched_at}",
        access_token=access["access_token"],
    )
    answer = shop.proof(
        method="GET",
        url=url,
        headers={"Authorization": f"DPoP {access['access_token']}", "DPoP": dpop},
        now=fetched_at,
    )
    if answer.status != 200:
        raise BindingError(
            "binding_demo_failed",
            f"the proof endpoint answered {answer.status}: {answer.body}",
            link="vxp",
        )
    package = answer.body

    # 5. Handoff Act: collect the bike; Ana ticks it in STATE.md; her side settles it.
    machine = read_terms(terms)
    act = handoff.ItemId("acts", project, "collect")
    aterms = act_terms(
        machine=machine,
        text=f"Collect the bike {machine.item} at Ben's shop and confirm its condition",
        decision={"project": project, "key": "buy"},
        settlement=settlement,
        service=d["service"],
        proposal=committed,
        receipt=receipt,
        package=package,
    )
    if attack == "act-other-item":
        aterms["x_binding"]["item"] = d["other_item"]
    if attack == "act-other-decision":
        aterms["x_binding"]["decision"]["settlement"] = record_digest({"another": "settlement"})
    if attack == "act-longer-log":
        aterms["x_binding"]["vxp"]["statements"] += 1
    add(handoff.make_raised(registry, act, aterms, by="ana-agent", ts=_ts(tick()), record_id="a1"))
    if attack != "act-open":
        done_act = handoff.make_settlement(
            registry, act, "done", by="ana-desk", ts=_ts(tick()), record_id="a1-done"
        )
        act_signer = mallory if attack == "act-other-key" else ana
        add(handoff.attach_proof(done_act, act_signer.private_jwk()))

    bundle = {
        "profile": PROFILE,
        "principal": ana.public,
        "mandate": {
            "limit": {"amount": d["limit"], "currency": d["currency"]},
            "service": d["service"],
            "capability": d["capability"],
            "issuer": d["issuer"],
            "issuer_keys": sorted(
                vxp.key_thumbprint(vxp.demo_key(f"bindings {role}"))
                for role in ("shop", "log", "witness")
            ),
        },
        "pxp": {"ledger": ledger, "brief": brief},
        "handoff": {
            "roles": errand_roles(project),
            "jwks": handoff.public_jwks(ana.private_jwk(), mallory.private_jwk()),
            "records": records,
            "decision": {"project": project, "key": "buy"},
            "act": {"project": project, "key": "collect"},
        },
        "parley": {"intent": intent, "proposal": committed, "commit": commit, "receipt": receipt},
        "vxp": {"package": package, "metadata": shop.metadata, "jwks": shop.jwks},
        "policy": {"require_logged": True, "require_act_done": attack != "act-open"},
        "now": _ts(tick(60)),
    }
    return bundle
