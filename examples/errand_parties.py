"""The other parties of the errand, each run as its own process by ``examples/errand.py``.

``python examples/errand_parties.py shop READY --trust KEY`` runs Ben's shop: its Parley
service over TCP and its VXP proof endpoint over HTTPS (a self-signed certificate made at
start, written to READY with the ports, for the agent to pin), both on 127.0.0.1.

``python examples/errand_parties.py desk DIR COMMAND`` is Ana's side: it alone holds her
key (``DIR/desk/ana.seed``, made by ``init``). ``decide`` shows her the open decision and
settles it with her answer, and, on an approval, signs the consent grant and the VXP
approval at once; ``tick`` ticks the act's box in ``DIR/STATE.md``; ``settle-act``
settles the act she ticked. Everything it writes is JSON or Markdown in ``DIR``; it never
prompts (the answer comes from ``--answer``, as a person's scripted choice).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import http.server
import ipaddress
import json
import os
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from joserfc.jwk import ECKey

import handoff
import parley
import ppbind
import ppbind.demo
import vxp

SERVICE = "bikes.ben.example"
PROJECT = "errand-7f3a"
DECISION = handoff.ItemId("decisions", PROJECT, "buy")
ACT = handoff.ItemId("acts", PROJECT, "collect")


# ------------------------------------------------------------------------------ the shop


def _certificate() -> tuple[bytes, bytes]:
    """A self-signed certificate for 127.0.0.1 (PEM cert, PEM key), made at start."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def _proof_server(shop: ppbind.demo.BikeShop, sock_server: http.server.HTTPServer) -> None:
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = shop.base_url + self.path
            if self.path == "/vxp/.well-known/vxp-issuer.json":
                status, body, headers = 200, shop.metadata, dict[str, str]()
            elif self.path == "/vxp/.well-known/vxp-jwks.json":
                status, body, headers = 200, shop.jwks, {}
            else:
                with lock:
                    answer = shop.proof(
                        method="GET",
                        url=url,
                        headers=dict(self.headers.items()),
                        now=int(time.time()),
                    )
                status, body, headers = answer.status, answer.body, answer.headers
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    sock_server.RequestHandlerClass = Handler
    sock_server.serve_forever()


def run_shop(ready: Path, trusted: str) -> None:
    """Serve the shop until killed; write ``{parley, proof, cert}`` to ``ready`` once up."""
    cert, key = _certificate()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cert.pem").write_bytes(cert)
        (Path(tmp) / "key.pem").write_bytes(key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(Path(tmp) / "cert.pem", Path(tmp) / "key.pem")
    https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    https.socket = context.wrap_socket(https.socket, server_side=True)
    base = f"https://127.0.0.1:{https.server_address[1]}"
    keys = {role: ECKey.generate_key("P-256") for role in ("company", "log", "witness")}
    shop = ppbind.demo.BikeShop(
        service_id=SERVICE,
        issuer=base + "/vxp",
        base_url=base,
        trusted=[trusted],
        bikes=[
            ppbind.demo.Bike(
                "ben-shop/bike-2291", 44000, "EUR", "City bike, 2019, 54 cm", "ben-shop/bike-2310"
            ),
            ppbind.demo.Bike("ben-shop/bike-2310", 44000, "EUR", "City bike, 2020, 56 cm"),
        ],
        keys=keys,
        clock=time.time,
        since=int(time.time()) - 86_400,
    )
    threading.Thread(target=_proof_server, args=(shop, https), daemon=True).start()

    async def serve() -> None:
        server = await parley.net.serve_tcp(shop.service, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        info = {
            "parley": f"parley://127.0.0.1:{port}",
            "proof": base,
            "cert": cert.decode(),
            # what the agent is configured to trust for this issuer (out of band, like the
            # certificate): the thumbprints of the shop's company, log and witness keys
            "keys": sorted(vxp.key_thumbprint(k) for k in keys.values()),
        }
        partial = ready.with_suffix(".part")
        partial.write_text(json.dumps(info), encoding="utf-8")
        partial.replace(ready)
        await asyncio.Event().wait()

    asyncio.run(serve())


# ------------------------------------------------------------------------------ Ana's desk


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(folder: Path) -> ppbind.PersonKey:
    return ppbind.PersonKey.from_seed(bytes.fromhex((folder / "desk" / "ana.seed").read_text()))


def _registry(folder: Path) -> tuple[handoff.Registry, list[dict[str, Any]]]:
    roles = handoff.Roles.from_json(ppbind.demo.errand_roles(PROJECT))
    registry = handoff.Registry(roles=roles, extensions=handoff.EXTENSIONS)
    records = [
        json.loads(line)
        for line in (folder / "handoff.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for record in records:
        registry.add(record)
    return registry, records


def _append(folder: Path, record: dict[str, Any]) -> None:
    with (folder / "handoff.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(record, separators=(",", ":")) + "\n")


def _settle(
    folder: Path, registry: handoff.Registry, item: handoff.ItemId, outcome: str, rid: str
) -> dict[str, Any]:
    """Present the item, record what was shown, sign with her key, check, append."""
    key = _key(folder)
    state = registry.state(item)
    assert state.terms is not None
    assert state.terms_rev is not None
    shown = handoff.evidence.presentation(
        ext=f"{item.ext}/0.3",
        project=item.project,
        key=item.key,
        terms_rev=state.terms_rev,
        terms=state.terms,
    )
    (folder / "desk" / f"shown-{item.key}-{state.terms_rev}.json").write_text(
        json.dumps(shown, indent=2), encoding="utf-8"
    )
    record = handoff.make_settlement(
        registry, item, outcome, by="ana-desk", ts=_now(), record_id=rid
    )
    signed = handoff.attach_proof(record, key.private_jwk())
    side = handoff.PrincipalSide(jwks=handoff.public_jwks(key.private_jwk()), verifiable=True)
    handoff.check_principal_side_record(signed, registry, side)
    _append(folder, signed)
    return signed


def desk(folder: Path, command: str, answer: str, late_by: int, agent: str) -> int:
    """Ana's side: ``init``, ``grant``, ``decide``, ``tick``, ``settle-act``."""
    (folder / "desk").mkdir(parents=True, exist_ok=True)
    if command == "init":
        seed = os.urandom(32).hex()
        path = folder / "desk" / "ana.seed"
        path.write_text(seed, encoding="utf-8")
        path.chmod(0o600)
        key = _key(folder)
        (folder / "desk" / "public.json").write_text(
            json.dumps({"key": key.public, "jwks": handoff.public_jwks(key.private_jwk())}),
            encoding="utf-8",
        )
        return 0
    if command == "grant":
        # the errand grant G: INTENT only (a COMMIT needs her decision's consent grant)
        grant = parley.mint_grant(
            _key(folder).parley,
            agent,
            [
                {"svc": [SERVICE]},
                {"verbs": ["INTENT"]},
                {"can": ["shop.buy"]},
                {"exp": int(time.time()) + 3600},
            ],
            iat=int(time.time()),
            nonce=PROJECT,
        )
        (folder / "desk" / "errand-grant.txt").write_text(grant, encoding="utf-8")
        return 0
    registry, _ = _registry(folder)
    if command == "decide":
        state = registry.state(DECISION)
        rid = f"d-settled-{state.terms_rev}"
        settlement = _settle(folder, registry, DECISION, answer, rid)
        terms = handoff.evidence.terms_at(registry, DECISION, settlement["terms_rev"])
        out: dict[str, Any] = {"settlement": settlement["id"]}
        if answer == "approve":
            assert terms is not None
            try:
                signed = ppbind.sign_on_approval(
                    _key(folder), settlement, terms, now=int(time.time()) + late_by
                )
            except ppbind.BindingError as exc:
                out["refused"] = exc.to_json()
            else:
                out.update(signed)
        (folder / "desk" / "signed.json").write_text(json.dumps(out), encoding="utf-8")
        return 0
    if command == "tick":
        state_md = folder / "STATE.md"
        text = state_md.read_text(encoding="utf-8")
        state_md.write_text(text.replace("- [ ] ", "- [x] ", 1), encoding="utf-8")
        return 0
    if command == "settle-act":
        _settle(folder, registry, ACT, "done", "a-done")
        return 0
    raise SystemExit(f"unknown desk command {command!r}")


def main(argv: list[str] | None = None) -> int:
    """Run one party."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="party", required=True)
    shop = sub.add_parser("shop")
    shop.add_argument("ready", type=Path)
    shop.add_argument("--trust", required=True)
    side = sub.add_parser("desk")
    side.add_argument("folder", type=Path)
    side.add_argument("command", choices=["init", "grant", "decide", "tick", "settle-act"])
    side.add_argument("--agent", default="", help="the agent's key (grant)")
    side.add_argument("--answer", default="approve")
    side.add_argument("--late-by", type=int, default=0, help="(tests) answer this much later")
    args = parser.parse_args(argv)
    if args.party == "shop":
        run_shop(args.ready, args.trust)
        return 0
    return desk(args.folder, args.command, args.answer, args.late_by, args.agent)


if __name__ == "__main__":
    sys.exit(main())
