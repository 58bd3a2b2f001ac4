"""Fetching a proof with a DPoP-bound token (RFC 9449), and the vxp demo/verify commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vxp
from vxp._cli import main
from vxp._proof_demo import demo_key, demo_operation

BASE = "https://store.example"
RID = "req_01JB7Q2X9M"
URL = BASE + f"/v1/requests/{RID}/proof"
NOW = 1_800_000_000
AGENT = "https://agent.example/agent.json"


def _endpoint(**kw: Any) -> vxp.fetch.ProofEndpoint:
    tokens = {
        "tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 300),
        "tok-b": vxp.fetch.AccessToken(
            "https://b.example", vxp.key_thumbprint(demo_key("b")), NOW + 300
        ),
    }
    packages = {RID: (AGENT, demo_operation("succeeded").package)}
    return vxp.fetch.ProofEndpoint(base_url=BASE, tokens=tokens, packages=packages, **kw)


def _headers(
    token: str = "tok",  # noqa: S107 - a test token name
    key: str = "dpop",
    jti: str = "j1",
    **kw: Any,
) -> dict[str, str]:
    proof = vxp.fetch.make_dpop_proof(
        demo_key(key),
        method=kw.pop("method", "GET"),
        url=kw.pop("url", URL),
        iat=kw.pop("iat", NOW),
        jti=jti,
        access_token=kw.pop("ath", token),
    )
    return {"Authorization": f"DPoP {token}", "DPoP": proof}


def test_owner_fetches_and_the_package_verifies() -> None:
    server = _endpoint()
    answer = server.handle(method="GET", url=URL, headers=_headers(), now=NOW)
    assert answer.status == 200
    op = demo_operation("succeeded")
    verdict = vxp.verify(
        answer.body, op.metadata, op.jwks, live=op.live, now=op.now, request_id=RID
    )
    assert verdict.valid
    other = vxp.verify(answer.body, op.metadata, op.jwks, now=op.now, request_id="req_1")
    assert other.failure is not None
    assert other.failure["code"] == "operation_mismatch"


def test_missing_and_foreign_answer_identically() -> None:
    server = _endpoint()
    missing = server.handle(
        method="GET",
        url=BASE + "/v1/requests/req_2/proof",
        headers=_headers(url=BASE + "/v1/requests/req_2/proof"),
        now=NOW,
    )
    foreign = server.handle(method="GET", url=URL, headers=_headers("tok-b", "b"), now=NOW)
    assert missing == foreign
    assert missing.to_json() == {
        "status": 404,
        "headers": {},
        "body": {"error": "request_not_found"},
    }


def test_replay_and_window() -> None:
    server = _endpoint(window=30)
    headers = _headers()
    assert server.handle(method="GET", url=URL, headers=headers, now=NOW).status == 200
    again = server.handle(method="GET", url=URL, headers=headers, now=NOW + 1)
    assert again.status == 401
    assert "replay" in again.body["error_description"]
    late = server.handle(method="GET", url=URL, headers=_headers(jti="j2"), now=NOW + 31)
    assert late.status == 401


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({}, "invalid_token"),
        ({"Authorization": "Bearer tok"}, "invalid_token"),
        ({"Authorization": "DPoP tok"}, "invalid_dpop_proof"),
        ({"Authorization": "DPoP tok", "DPoP": "x.y.z"}, "invalid_dpop_proof"),
        ({"Authorization": "DPoP tok", "DPoP": "a", "dpop": "b"}, "invalid_dpop_proof"),
        ({"Authorization": "DPoP nope", "DPoP": "x"}, "invalid_token"),
    ],
)
def test_malformed_requests_get_401(headers: dict[str, str], error: str) -> None:
    answer = _endpoint().handle(method="GET", url=URL, headers=headers, now=NOW)
    assert answer.status == 401
    assert answer.body["error"] == error


@pytest.mark.parametrize(
    "changes",
    [
        {"method": "POST"},
        {"url": BASE + f"/v1/requests/{RID}/proof2"},
        {"iat": NOW - 120},
        {"ath": "other"},
        {"key": "intruder"},
    ],
)
def test_dpop_claims_are_checked(changes: dict[str, Any]) -> None:
    answer = _endpoint().handle(method="GET", url=URL, headers=_headers(**changes), now=NOW)
    assert answer.status == 401
    assert answer.body["error"] == "invalid_dpop_proof"


def test_private_jwk_in_proof_and_other_routes() -> None:
    server = _endpoint()
    assert server.handle(method="POST", url=URL, headers={}, now=NOW).status == 405
    assert (
        server.handle(method="GET", url="https://x.example/v1", headers={}, now=NOW).status == 404
    )
    with pytest.raises(vxp.VxpError):
        vxp.fetch.ProofEndpoint(base_url="http://store.example", tokens={}, packages={})


def test_cli_demo_then_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    args = [
        "verify",
        str(tmp_path / "package.json"),
        "--metadata",
        str(tmp_path / "metadata.json"),
        "--jwks",
        str(tmp_path / "jwks.json"),
        "--live-checkpoint",
        str(tmp_path / "live-checkpoint.json"),
        "--now",
        "2026-10-22T22:31:34Z",
    ]
    assert main(args) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["consistency"] == "ok"
    assert verdict["key_source"] == "issuer_metadata_live"
    package = json.loads((tmp_path / "package.json").read_text())
    package["statements"].pop()
    package["log"]["entries"].pop()
    (tmp_path / "package.json").write_text(json.dumps(package))
    assert main(args) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False
    assert main(["verify", str(tmp_path / "nope.json"), "--metadata", "m", "--jwks", "j"]) == 1
    assert "file_unreadable" in capsys.readouterr().err


def test_fetch_over_a_real_loopback_socket() -> None:
    """A thin stdlib HTTP server in front of the transport-free endpoint, on 127.0.0.1."""
    import threading
    import time
    import urllib.error
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    now = int(time.time())
    server_side = vxp.fetch.ProofEndpoint(
        base_url=BASE,
        tokens={
            "tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), now + 300)
        },
        packages={RID: (AGENT, demo_operation("succeeded").package)},
    )

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer = server_side.handle(
                method="GET",
                url=BASE + self.path,
                headers=dict(self.headers.items()),
                now=int(time.time()),
            )
            body = json.dumps(answer.body).encode()
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        port = httpd.server_address[1]
        path = f"/v1/requests/{RID}/proof"
        headers = _headers(iat=now, url=BASE + path)
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers)
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310
            package = json.loads(reply.read())
        op = demo_operation("succeeded")
        assert vxp.verify(package, op.metadata, op.jwks, now=op.now, request_id=RID).valid
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)  # noqa: S310
        refused = info.value
        assert refused.code == 401
        assert "invalid_dpop_proof" in refused.headers["WWW-Authenticate"]
        refused.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
