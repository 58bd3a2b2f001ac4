#!/usr/bin/env python3
"""The library's main job: an agent runs one errand for a person, and every step is checked.

Ana asks her agent to buy a used bike from Ben's shop, at most 450 EUR. Every party runs in
its own process on 127.0.0.1: the PXP room server (``pxp serve``), Ben's shop (its Parley
service and its VXP proof endpoint over HTTPS, ``examples/errand_parties.py shop``) and
Ana's side (``examples/errand_parties.py desk``: the only process holding her key). This
process is Ana's agent: it drives the two scripted proxies over MCP, talks Parley to the
shop, writes Handoff records and STATE.md, fetches the proof with DPoP, and ends with the
audit (``ppbind.verify_errand``). It writes ``build/errand/`` (errand.json, report.md,
report.html, handoff.jsonl, STATE.md) and exits non-zero if any step fails.

Run: ``make demo`` (or ``python examples/errand.py [--out DIR]``). Needs the extras
``[mcp,http]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import handoff
import parley
import ppbind
import ppbind.demo
import pxp
import vxp

HERE = Path(__file__).resolve().parent
PARTIES = HERE / "errand_parties.py"
SERVICE = "bikes.ben.example"
PROJECT = "errand-7f3a"
DECISION = handoff.ItemId("decisions", PROJECT, "buy")
ACT = handoff.ItemId("acts", PROJECT, "collect")
ITEM = "ben-shop/bike-2291"

BUYER_CARD = {
    "principal": {"name": "Ana"},
    "goal": "Buy a used city bike from Ben's shop.",
    "must_haves": ["At most 450 EUR"],
    "may_agree_to": ["Collect it at the shop"],
}
SHOP_CARD = {
    "principal": {"name": "Ben's shop"},
    "goal": "Sell bike 2291.",
    "must_haves": ["At least 400 EUR"],
}


def say(step: str, *lines: str) -> None:
    """Print one step of the story."""
    print(f"\n{step}")
    for line in lines:
        print(f"   {line}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def process(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Run one party as a child process; stop it (SIGTERM, then SIGKILL) on the way out."""
    with log.open("wb") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield child
        finally:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _wait(what: str, ready: Any, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text(errors='replace')[-2000:]}")
        if ready():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start within 60 s")


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def desk(work: Path, *args: str) -> None:
    """Ask Ana's side (its own process, unattended) to do one thing."""
    subprocess.run(
        [sys.executable, str(PARTIES), "desk", str(work), *args], check=True, timeout=120
    )


async def _tool(client: Client, name: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(name, args)
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise RuntimeError(f"{name}: {text}")
    data: dict[str, Any] = json.loads(text)
    return data


async def negotiate(base: str, terms: list[str]) -> dict[str, Any]:
    """Step 1: Ana's proxy and the shop's proxy agree in a room on the PXP MCP server."""
    async with (
        httpx2.AsyncClient(timeout=30) as http_a,
        httpx2.AsyncClient(timeout=30) as http_b,
        Client(streamable_http_client(f"{base}/mcp", http_client=http_a)) as ana,
        Client(streamable_http_client(f"{base}/mcp", http_client=http_b)) as shop,
    ):
        room = await _tool(
            ana,
            "create_room",
            topic="A used city bike",
            your_principal="Ana",
            counterpart="Ben's shop",
        )
        mine, invite = room["your_link"], room["invite_link_for_counterpart"]
        await _tool(ana, "join_room", link=mine, agent_name="ana-proxy")
        # the invite is spent at its first join: the shop's proxy uses the seat link it got
        joined = await _tool(shop, "join_room", link=invite, agent_name="shop-proxy")
        theirs = joined["your_link"]
        await _tool(ana, "seal_intent_card", link=mine, card=BUYER_CARD)
        await _tool(shop, "seal_intent_card", link=theirs, card=SHOP_CARD)
        await _tool(
            ana,
            "send_envelope",
            link=mine,
            message="We would buy bike 2291; what is your price?",
            status="continue",
        )
        await _tool(shop, "wait_for_turn", link=theirs, timeout_seconds=10)
        await _tool(
            shop,
            "send_envelope",
            link=theirs,
            message="440 EUR, collected at the shop.",
            proposal={"terms": terms, "depends_on": []},
            status="continue",
        )
        await _tool(ana, "wait_for_turn", link=mine, timeout_seconds=10)
        await _tool(ana, "send_envelope", link=mine, message="Agreed.", status="agree")
        result = await _tool(ana, "get_brief", link=mine)
        result["room"] = room["room_id"]
        return result


def _https(base: str, cert: str) -> tuple[http.client.HTTPSConnection, str]:
    context = ssl.create_default_context(cadata=cert)
    host, port = base.removeprefix("https://").split(":")
    return http.client.HTTPSConnection(host, int(port), context=context, timeout=30), base


def _get(conn: http.client.HTTPSConnection, path: str, headers: dict[str, str]) -> Any:
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = json.loads(response.read())
    if response.status != 200:
        raise RuntimeError(f"GET {path}: {response.status} {body}")
    return body


def _append(work: Path, record: dict[str, Any]) -> None:
    with (work / "handoff.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(record, separators=(",", ":")) + "\n")


def _registry(work: Path) -> tuple[handoff.Registry, list[dict[str, Any]]]:
    roles = handoff.Roles.from_json(ppbind.demo.errand_roles(PROJECT))
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    records = [
        json.loads(line)
        for line in (work / "handoff.jsonl").read_text(encoding="utf-8").splitlines()
        if line
    ]
    registry.add_many(records)
    return registry, records


def _ts() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def errand(work: Path, pxp_base: str, shop: dict[str, Any], late_by: int) -> dict[str, Any]:
    """Steps 1 to 5, as Ana's agent; returns the audit input."""
    public = json.loads((work / "desk" / "public.json").read_text())
    agent = ppbind.PersonKey.from_seed(secrets.token_bytes(32))

    terms = ppbind.agreed_terms(ITEM, 44000, "EUR", SERVICE, "collected at the shop by Saturday")
    got = await negotiate(pxp_base, terms)
    brief, ledger = got["brief"], got["ledger"]
    terms = list(brief["agreement"]["terms"])  # what the room agreed, not what we proposed
    head = pxp.verify_ledger(ledger)
    say(
        "1. Negotiate (PXP). Ana's proxy and the shop's proxy met in a room on the PXP server.",
        f"Agreed terms: {'; '.join(brief['agreement']['terms'])}",
        f"proposal_hash {brief['agreement']['proposal_hash'][:16]}…, ledger of {len(ledger)} "
        f"entries re-verified, head {head[:16]}… = the brief's: {head == brief['ledger']['head']}",
    )

    desk(work, "grant", "--agent", agent.public)
    errand_grant = (work / "desk" / "errand-grant.txt").read_text()
    buyer = parley.Agent(agent.parley, [errand_grant], service=SERVICE)
    committer = parley.Agent(agent.parley, service=SERVICE)
    async with (
        await parley.connect(shop["parley"], buyer) as asking,
        await parley.connect(shop["parley"], committer) as committing,
    ):
        params = ppbind.intent_params(terms)
        intent = buyer.intent("shop.buy", params, goal="buy the agreed bike", budget=8000)
        offered = await asking.request(intent)
        proposals = offered.proposals or []
        proposal = next(p for p in proposals if p["effects"][0]["target"] == f"item/{ITEM}")
        say(
            "2. Ask the shop (Parley INTENT, holding Ana's INTENT-only errand grant).",
            f"{len(proposals)} proposals; the agreed bike: {proposal['summary']}, "
            f"hash {proposal['hash'][:16]}…, expires in {proposal['expires'] - int(time.time())} s",
            "The shop opened a VXP operation for it and signed the request and the terms.",
        )

        with (work / "handoff.jsonl").open("w", encoding="utf-8"):
            pass
        registry, _ = _registry(work)
        dterms = ppbind.decision_terms(
            proposal=proposal,
            service=SERVICE,
            capability="shop.buy",
            principal=public["key"],
            agent=agent.public,
            brief=brief,
            ledger_head=head,
        )
        _append(work, handoff.make_raised(registry, DECISION, dterms, by="ana-agent", ts=_ts()))
        desk(work, "decide", "--answer", "approve", "--late-by", str(late_by))
        signed = json.loads((work / "desk" / "signed.json").read_text())
        if "refused" in signed:
            # a late answer: never commit a lapsing offer; ask again and amend the decision
            say(
                "3. Ask Ana (Handoff decision). She approved, but too late for this offer:",
                f"her side signed nothing ({signed['refused']['code']}); the agent asks again.",
            )
            intent = buyer.intent("shop.buy", params, goal="buy the agreed bike", budget=8000)
            offered = await asking.request(intent)
            proposal = next(
                p for p in offered.proposals or [] if p["effects"][0]["target"] == f"item/{ITEM}"
            )
            registry, _ = _registry(work)
            dterms = ppbind.decision_terms(
                proposal=proposal,
                service=SERVICE,
                capability="shop.buy",
                principal=public["key"],
                agent=agent.public,
                brief=brief,
                ledger_head=head,
            )
            _append(
                work, handoff.make_amended(registry, DECISION, dterms, by="ana-agent", ts=_ts())
            )
            desk(work, "decide", "--answer", "approve")
            signed = json.loads((work / "desk" / "signed.json").read_text())
            if "refused" in signed:
                raise RuntimeError(f"Ana's side refused again: {signed['refused']}")
        registry, _ = _registry(work)
        state = registry.state(DECISION)
        say(
            "3. Ask Ana (Handoff decision built from the consent request).",
            f"Her side showed her revision {state.terms_rev}: {dterms['text']}",
            f"She answered {state.outcome!r}, signed with her key; on that one confirmation her",
            "side signed the consent grant (only this proposal, spend cap 440.00 EUR) and",
            "her VXP approval of the shop's terms statement. The agent never saw her key.",
        )

        commit = committer.commit(proposal, grants=[signed["grant"]])
        commit["x_binding"] = ppbind.commit_binding(signed["vxp_approval"])
        done = await committing.request(commit)
        receipt = done.receipt
        if receipt is None:
            raise RuntimeError(f"the shop refused the commit: {done.reply}")
        registry, _ = _registry(work)
        _append(
            work, ppbind.note_from_receipt(registry, DECISION, receipt, by="ana-agent", ts=_ts())
        )
        say(
            "4. Commit (Parley COMMIT with the consent grant alone).",
            f"Receipt {receipt['id']}: {receipt['summary']} ({receipt['at'] < proposal['expires']}"
            " = committed within the consent's life); a note on the decision records it.",
        )

    access = receipt["result"]["x_binding"]["vxp"]
    conn, base = _https(shop["proof"], shop["cert"])
    metadata = _get(conn, "/vxp/.well-known/vxp-issuer.json", {})
    jwks = _get(conn, "/vxp/.well-known/vxp-jwks.json", {})
    path = f"/v1/requests/{access['request_id']}/proof"
    dpop = vxp.fetch.make_dpop_proof(
        agent.private_jwk(),
        method="GET",
        url=base + path,
        iat=int(time.time()),
        jti=secrets.token_urlsafe(12),
        access_token=access["access_token"],
    )
    package = _get(conn, path, {"Authorization": f"DPoP {access['access_token']}", "DPoP": dpop})
    verdict = vxp.verify(
        package,
        metadata,
        jwks,
        now=datetime.now(UTC),
        request_id=access["request_id"],
        request=intent,
    )
    if not verdict.valid:
        raise RuntimeError(f"the proof does not verify: {verdict.failure}")
    say(
        "5. Prove (VXP). The agent fetched the shop's proof over HTTPS with DPoP and verified it:",
        f"valid {verdict.valid}, final state {verdict.final_state}, approval {verdict.approval},"
        f" witnessed {verdict.logged}, {verdict.statements} statements.",
    )

    registry, _ = _registry(work)
    machine = ppbind.read_terms(terms)
    settlement = registry.records(DECISION, id=registry.state(DECISION).settlement)[0]
    aterms = ppbind.act_terms(
        machine=machine,
        text="Collect the bike ben-shop/bike-2291 at Ben's shop and confirm its condition",
        decision={"project": PROJECT, "key": "buy"},
        settlement=settlement,
        service=SERVICE,
        proposal=proposal,
        receipt=receipt,
        package=package,
    )
    _append(work, handoff.make_raised(registry, ACT, aterms, by="ana-agent", ts=_ts()))
    registry, _ = _registry(work)
    state_md = work / "STATE.md"
    state_md.write_text(
        handoff.markdown.write_state_document(
            "# Errand: a used bike\n\n## Acts\n", registry, project=PROJECT, registrar="registrar"
        ),
        encoding="utf-8",
    )
    desk(work, "tick")
    synced = handoff.markdown.sync_state_document(
        state_md.read_text(encoding="utf-8"),
        registry,
        project=PROJECT,
        registrar="registrar",
        now=_ts(),
    )
    for record in synced.records:
        _append(work, record)
    desk(work, "settle-act")
    registry, records = _registry(work)
    act = registry.state(ACT)
    say(
        "6. What only Ana can do (Handoff act in her STATE.md).",
        f"The agent added: {aterms['text']}.",
        f"Ana ticked the box in STATE.md; the registrar recorded it; her side settled it "
        f"{act.outcome!r}.",
    )
    return {
        "profile": ppbind.PROFILE,
        "principal": public["key"],
        "mandate": {
            "limit": {"amount": 45000, "currency": "EUR"},
            "service": SERVICE,
            "capability": "shop.buy",
            "issuer": shop["proof"] + "/vxp",
            "issuer_keys": shop["keys"],
        },
        "pxp": {"ledger": ledger, "brief": brief},
        "handoff": {
            "roles": ppbind.demo.errand_roles(PROJECT),
            "jwks": public["jwks"],
            "records": records,
            "decision": {"project": PROJECT, "key": "buy"},
            "act": {"project": PROJECT, "key": "collect"},
        },
        "parley": {"intent": intent, "proposal": proposal, "commit": commit, "receipt": receipt},
        "vxp": {"package": package, "metadata": metadata, "jwks": jwks},
        "policy": {"require_logged": True, "require_act_done": True},
        "now": _ts(),
    }


def audit(out: Path, bundle: dict[str, Any]) -> bool:
    """Step 7: the audit, and the report written for Ana."""
    try:
        outcome: dict[str, Any] | ppbind.BindingError = ppbind.verify_errand(bundle)
    except ppbind.BindingError as exc:
        outcome = exc
    (out / "errand.json").write_text(json.dumps(bundle, indent=1), encoding="utf-8")
    (out / "report.md").write_text(ppbind.report_markdown(bundle, outcome), encoding="utf-8")
    (out / "report.html").write_text(ppbind.report_html(bundle, outcome), encoding="utf-8")
    if isinstance(outcome, ppbind.BindingError):
        say(
            "7. The audit: BROKEN",
            f"{outcome.link}: {outcome.code} ({outcome.reason})",
            str(outcome),
        )
        return False
    r = outcome
    say(
        "7. The audit (ppbind.verify_errand) recomputed every link:",
        f"PXP agreement {r['pxp']['proposal_hash'][:12]}… = the decision's terms and what Ana saw",
        f"→ her approval (revision {r['decision']['terms_rev']}) = the consent grant's nonce",
        f"→ Parley proposal {r['parley']['proposal']} = the grant's only, the commit, the receipt",
        f"→ VXP terms {r['vxp']['terms_digest'][:20]}… and her signed approval, "
        f"{r['vxp']['final_state']}",
        f"→ the act, {r['act']}. Every link holds.",
        f"Report for Ana: {out / 'report.html'} (and report.md); `errand verify {out}` re-runs it.",
    )
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the errand with every party in its own process; 0 only if every step and link hold."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/errand"))
    parser.add_argument("--late-by", type=int, default=0, help="Ana answers this many s later")
    args = parser.parse_args(argv)
    out: Path = args.out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    print("The errand: Ana asks her agent to buy a used bike from Ben's shop, at most 450 EUR.")
    print("Every party is its own process on 127.0.0.1; only Ana's side holds her key.")
    with tempfile.TemporaryDirectory() as tmp:
        desk(out, "init")
        ana = json.loads((out / "desk" / "public.json").read_text())["key"]
        port = _free_port()
        pxp_base = f"http://127.0.0.1:{port}"
        ready = Path(tmp) / "shop.json"
        env_argv = [sys.executable, "-m", "pxp", "serve", "--port", str(port)]
        with (
            process(
                [*env_argv, "--db", str(Path(tmp) / "rooms.sqlite"), "--public-url", pxp_base],
                out / "pxp-server.log",
            ) as room_server,
            process(
                [sys.executable, str(PARTIES), "shop", str(ready), "--trust", ana],
                out / "shop.log",
            ) as shop_process,
        ):
            _wait("pxp serve", lambda: _listening(port), room_server, out / "pxp-server.log")
            _wait("the shop", ready.is_file, shop_process, out / "shop.log")
            shop = json.loads(ready.read_text())
            print(
                f"PXP room server {pxp_base}/mcp (pid {room_server.pid}); shop: Parley "
                f"{shop['parley']}, proofs {shop['proof']} (pid {shop_process.pid})."
            )
            try:
                bundle = asyncio.run(errand(out, pxp_base, shop, args.late_by))
            except Exception as exc:  # the story says which step failed, then exit 1
                print(f"\nFAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 1
    return 0 if audit(out, bundle) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
