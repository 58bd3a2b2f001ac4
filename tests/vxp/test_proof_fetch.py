"""Fetching a proof with a DPoP-bound token (RFC 9449; docs/spec/vxp-proof.md, fetching),
and the vxp demo/verify commands.

Private imports: ``vxp._cli.main`` is the command line's in-process entry; the CLI's public
contract is its argv, output and exit code, which the command tests hold.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vxp
from tests.vxp import forge
from vxp import demo_key, demo_operation
from vxp._cli import main

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


# DPoP-bound fetch: replay memory, header shapes, htu normalisation


URL_REQ_1 = BASE + "/v1/requests/req_1/proof"


def _req_1_endpoint() -> vxp.fetch.ProofEndpoint:
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    return vxp.fetch.ProofEndpoint(
        base_url=BASE, tokens=tokens, packages={"req_1": (AGENT, {"v": 1})}
    )


def _dpop(iat: int, jti: str = "j", url: str = URL_REQ_1) -> dict[str, str]:
    proof = vxp.fetch.make_dpop_proof(
        demo_key("dpop"), method="GET", url=url, iat=iat, jti=jti, access_token="tok"
    )
    return {"Authorization": "DPoP tok", "DPoP": proof}


def test_future_dated_dpop_proof_cannot_be_replayed_after_now_plus_window() -> None:
    """A proof dated window seconds ahead stays acceptable until iat + window: the jti
    memory must last that long (it used to expire at now + window, letting it replay)."""
    server = _req_1_endpoint()
    headers = _dpop(NOW + 60)
    assert server.handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW).status == 200
    for later in (NOW + 1, NOW + 61, NOW + 100, NOW + 120):
        again = server.handle(method="GET", url=URL_REQ_1, headers=headers, now=later)
        assert again.status == 401, later
        assert again.body["error"] == "invalid_dpop_proof"
    # Once the proof is outside the window it is refused for its iat, and forgotten.
    late = server.handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW + 121)
    assert late.status == 401


def test_replay_memory_purges_expired_entries() -> None:
    cache = vxp.stores.MemoryReplayCache()
    cache.store_once("a", 10, 0)
    with pytest.raises(vxp.VxpProtocolError, match="dpop_replay"):
        cache.store_once("a", 10, 10)
    cache.store_once("b", 30, 11)  # purges "a" (until 10 < now 11)
    cache.store_once("a", 40, 11)
    with pytest.raises(vxp.VxpProtocolError, match="dpop_replay"):
        cache.store_once("b", 30, 30)


@pytest.mark.parametrize("headers", [None, [("Authorization", "DPoP tok")], "DPoP tok", 5])
def test_headers_of_any_shape_get_401_not_an_exception(headers: Any) -> None:
    answer = _req_1_endpoint().handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW)
    assert answer.status == 401


@pytest.mark.parametrize("now", ["1800000000", None, 1.5, True])
def test_bad_server_clock_is_a_vxp_error(now: Any) -> None:
    with pytest.raises(vxp.VxpError) as info:
        _req_1_endpoint().handle(method="GET", url=URL_REQ_1, headers=_dpop(NOW), now=now)
    assert info.value.code == "now_invalid"


def test_not_found_answers_are_independent_objects() -> None:
    server = _req_1_endpoint()
    url_x, url_y = BASE + "/v1/requests/x/proof", BASE + "/v1/requests/y/proof"
    first = server.handle(method="GET", url=url_x, headers=_dpop(NOW, url=url_x), now=NOW)
    first.headers["X-Leak"] = "1"
    second = server.handle(method="GET", url=url_y, headers=_dpop(NOW, "j2", url_y), now=NOW)
    assert (second.status, second.headers, second.body) == (404, {}, {"error": "request_not_found"})


def test_jti_memory_survives_a_restart_with_the_sqlite_replay_cache(tmp_path: Any) -> None:
    """The in-memory cache forgets on restart (a replay inside the window then passes);
    SqliteReplayCache keeps the memory across processes and restarts."""
    path = str(tmp_path / "jti.sqlite")
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    headers = _dpop(NOW)

    def server(replay: Any) -> vxp.fetch.ProofEndpoint:
        packages = {"req_1": (AGENT, {"v": 1})}
        return vxp.fetch.ProofEndpoint(
            base_url=BASE, tokens=tokens, packages=packages, replay=replay
        )

    first = vxp.stores.SqliteReplayCache(path)
    assert server(first).handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW).status == 200
    first.close()
    restarted = vxp.stores.SqliteReplayCache(path)
    again = server(restarted).handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW + 30)
    assert again.status == 401
    restarted.store_once("k", NOW + 10, NOW)
    with pytest.raises(vxp.VxpProtocolError, match="dpop_replay"):
        restarted.store_once("k", NOW + 10, NOW + 10)
    restarted.store_once("k", NOW + 30, NOW + 11)  # expired entries are purged
    restarted.close()
    with pytest.raises(vxp.VxpError):
        vxp.stores.SqliteReplayCache(str(tmp_path / "missing-dir" / "x.sqlite"))


def _raw_proof(htu: str, jti: str) -> dict[str, str]:
    """A DPoP proof for ``htu`` as written (``make_dpop_proof`` would normalise it)."""
    key = demo_key("dpop")
    header = {"alg": "ES256", "jwk": key.as_dict(private=False), "typ": "dpop+jwt"}
    ath = vxp.codec.b64url_encode(hashlib.sha256(b"tok").digest())  # RFC 9449 §4.2
    payload = {"htm": "GET", "htu": htu, "iat": NOW, "jti": jti, "ath": ath}
    return {"Authorization": "DPoP tok", "DPoP": forge.jws_json(header, payload, key)}


@pytest.mark.parametrize(
    ("htu", "status"),
    [
        ("https://STORE.example/v1/requests/req_1/proof", 200),
        ("HTTPS://store.example:443/v1/requests/req_1/proof", 200),
        ("https://store.example/v1/requests/req_1/proof?x=1#f", 200),
        ("https://store.example:8443/v1/requests/req_1/proof", 401),
        ("http://store.example/v1/requests/req_1/proof", 401),
        ("https://user@store.example/v1/requests/req_1/proof", 401),
        ("https://store.example/v1/requests/req_1/proof/", 401),
        ("https://store.example/v1/requests/REQ_1/proof", 401),
        ("https://store.example/v1/requests/req%5F1/proof", 401),
        ("https://store.example:99999/v1/requests/req_1/proof", 401),
        ("//store.example/v1/requests/req_1/proof", 401),
    ],
)
def test_htu_is_compared_after_scheme_and_host_normalisation_only(htu: str, status: int) -> None:
    answer = _req_1_endpoint().handle(
        method="GET", url=URL_REQ_1, headers=_raw_proof(htu, "j"), now=NOW
    )
    assert answer.status == status


def test_request_url_with_default_port_or_host_case_reaches_the_route() -> None:
    for i, url in enumerate(
        ("https://STORE.EXAMPLE/v1/requests/req_1/proof", BASE + ":443/v1/requests/req_1/proof")
    ):
        answer = _req_1_endpoint().handle(
            method="GET", url=url, headers=_dpop(NOW, f"j{i}"), now=NOW
        )
        assert answer.status == 200
    for url in (
        "https://evil@store.example/v1/requests/req_1/proof",
        "https://store.example:8443/v1/requests/req_1/proof",
    ):
        answer = _req_1_endpoint().handle(method="GET", url=url, headers=_dpop(NOW), now=NOW)
        assert answer.status == 404


def test_dpop_helper_never_signs_userinfo_into_htu() -> None:
    with pytest.raises(vxp.VxpError):
        vxp.fetch.make_dpop_proof(
            demo_key("dpop"), method="GET", url="https://u:pw@store.example/x", iat=NOW, jti="j"
        )
    for bad in ("http://", "https://store.example/?a=1", "https://store.example/p", "ftp://x"):
        with pytest.raises(vxp.VxpError):
            vxp.fetch.ProofEndpoint(base_url=bad, tokens={}, packages={})


_WORDS = st.sampled_from(
    ["operator", "company", "EC", "OKP", "P-256", "Ed25519", "ES256", "sig", "https://x", "A"]
)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2**64) | st.text(max_size=6) | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_WORDS | st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=_VALUES,
    url=st.sampled_from([URL_REQ_1, "https://[::1/x", "https://a:b/x"]) | _VALUES,
    headers=_VALUES,
)
def test_fetch_requests_of_any_shape_get_an_http_answer(
    method: Any, url: Any, headers: Any
) -> None:
    answer = _req_1_endpoint().handle(method=method, url=url, headers=headers, now=NOW)
    assert answer.status in (401, 404, 405)


@pytest.mark.parametrize("scheme", ["DPoP", "dpop", "DPOP", "dPoP"])
def test_dpop_scheme_is_case_insensitive(scheme: str) -> None:
    """RFC 9110 §11.1: the authorization scheme name is case-insensitive."""
    headers = {**_dpop(NOW, "j-" + scheme), "Authorization": f"{scheme} tok"}
    answer = _req_1_endpoint().handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW)
    assert answer.status == 200, answer.body


@pytest.mark.parametrize("scheme", ["Bearer", "DPoPx", "DPo"])
def test_other_schemes_are_still_refused(scheme: str) -> None:
    """Only the DPoP scheme carries a sender-constrained token (RFC 9449 §7.1)."""
    headers = {**_dpop(NOW), "Authorization": f"{scheme} tok"}
    answer = _req_1_endpoint().handle(method="GET", url=URL_REQ_1, headers=headers, now=NOW)
    assert answer.status == 401


def test_fetched_body_is_a_deep_copy() -> None:
    """A consumer changing an answer's body never changes later answers or the package."""
    package = {"v": 1, "log": {"entries": [{"index": 0}]}, "statements": ["a~"]}
    tokens = {"tok": vxp.fetch.AccessToken(AGENT, vxp.key_thumbprint(demo_key("dpop")), NOW + 3600)}
    server = vxp.fetch.ProofEndpoint(
        base_url=BASE, tokens=tokens, packages={"req_1": (AGENT, package)}
    )
    first = server.handle(method="GET", url=URL_REQ_1, headers=_dpop(NOW, "j1"), now=NOW)
    first.body["log"]["entries"][0]["index"] = 99
    first.body["statements"].append("evil~")
    second = server.handle(method="GET", url=URL_REQ_1, headers=_dpop(NOW, "j2"), now=NOW)
    assert second.body == {"v": 1, "log": {"entries": [{"index": 0}]}, "statements": ["a~"]}
    assert package["log"]["entries"][0]["index"] == 0


class _RenamedOldCache:
    """A cache written for the old contract (False on a replay), its method renamed."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def store_once(self, key: str, until: int, now: int) -> bool:
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def test_a_replay_cache_that_returns_a_value_fails_closed() -> None:
    """docs/spec/vxp.md §5.4: ``store_once`` returns None or raises ``dpop_replay``; a cache
    that answers with a value (the old bool contract) is refused on the first request,
    never allowed to serve a replay."""
    server = _endpoint(replay=_RenamedOldCache())
    with pytest.raises(vxp.VxpUsageError) as info:
        server.handle(method="GET", url=URL, headers=_headers(), now=NOW)
    assert info.value.code == "replay_store_unavailable"
    with pytest.raises(vxp.VxpUsageError):
        server.handle(method="GET", url=URL, headers=_headers(), now=NOW)
