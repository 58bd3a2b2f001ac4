"""Whose fault is it: each class of argument raises the error of its kind (ours, issue 25).

The caller's own arguments (an option, a key it holds, a number, ``now``, a path, a
configuration, a command-line flag) raise :class:`parley.ParleyUsageError`
(``bad_argument``, ``bad_config`` or ``not_ready``); protocol data from a peer (a frame, a
token, a caveat, a consent, a public key, a proposal, a tool call from the model) raises
:class:`parley.ParleyProtocolError` with its wire code, whatever its Python type. One
parametrized test per class of site holds the kind, the code and the reason.

Private imports: the command-line cases drive ``parley._cli.main(argv)`` in process (the
CLI's public contract is its argv, its one ``error: code/reason: sentence`` line and its
exit status, which these tests hold); the MCP bridge cases build ``parley._bridge.Bridge``
and ``parley._mcp_bridge.create_app``, the objects behind ``parley mcp``, which has no public
module (our decision: no public ``cli`` modules).
"""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import parley
from parley._cli import main
from parley.errors import ParleyProtocolError, ParleyUsageError

from .orders import NOW, A, P, order

TOKEN = parley.mint_grant(P, A.public, [{"spend": {"max": 100, "currency": "USD"}}], iat=NOW)
CTX = parley.GrantContext("shop.example", "ASK", "shop.search", NOW)
CAPS = [parley.grants.SpendCap("b", 100, "USD")]
PROPOSAL = order()
CONSENT = parley.consent_request(PROPOSAL, service="shop.example", principal=P.public)

Call = Callable[[], object]


def _kind(call: Call, error: type[parley.ParleyError], code: str, reason: str | None) -> None:
    with pytest.raises(error) as caught:
        call()
    assert (caught.value.code, caught.value.reason) == (code, reason), caught.value


# ---------------------------------------------------------------- keys the caller holds

KEY_ARGUMENTS: dict[str, tuple[Call, str]] = {
    "Key(not a private key)": (lambda: parley.Key("seed"), "bad_key"),  # type: ignore[arg-type]
    "key_from_seed(31 bytes)": (lambda: parley.key_from_seed(b"\x01" * 31), "bad_key"),
    "Key.sign(text)": (lambda: A.sign("text"), "bad_key"),  # type: ignore[arg-type]
    "pickle Key": (lambda: pickle.dumps(A), "private_key"),
    "b64url_encode(text)": (lambda: parley.wire.b64url_encode("x"), "bad_base64url"),  # type: ignore[arg-type]
    "mint_grant(issuer=text)": (
        lambda: parley.mint_grant("p", A.public, [], iat=NOW),  # type: ignore[arg-type]
        "bad_key",
    ),
    "mint_grant(nonce=7)": (
        lambda: parley.mint_grant(P, A.public, [], iat=NOW, nonce=7),  # type: ignore[arg-type]
        "bad_argument",
    ),
    "delegate(holder=text)": (
        lambda: parley.delegate(TOKEN, "a", P.public, [], iat=NOW),  # type: ignore[arg-type]
        "bad_key",
    ),
    "mint_consent_grant(principal=text)": (
        lambda: parley.mint_consent_grant("p", CONSENT, A.public, iat=NOW),  # type: ignore[arg-type]
        "bad_key",
    ),
    "verify_grant(trusted=7)": (
        lambda: parley.verify_grant(TOKEN, trusted=7, proof_key=A.public, ctx=CTX),  # type: ignore[arg-type]
        "bad_context",
    ),
    "verify_grant(ctx=dict)": (
        lambda: parley.verify_grant(TOKEN, trusted=[P.public], proof_key=A.public, ctx={}),  # type: ignore[arg-type]
        "bad_context",
    ),
    "AgentKeyStore(7)": (lambda: parley.keys.AgentKeyStore(7), "key_store"),  # type: ignore[arg-type]
    "effective_caveats(raw dicts)": (
        lambda: parley.grants.effective_caveats([{"risk": "low"}]),  # type: ignore[list-item]
        "bad_caveat",
    ),
    "effective_caveats(5)": (
        lambda: parley.grants.effective_caveats(5),  # type: ignore[arg-type]
        "bad_caveat",
    ),
    "consent_for_shown(principals=text)": (
        lambda: parley.grants.consent_for_shown(
            PROPOSAL, service="shop.example", request=CONSENT, principals=P.public
        ),
        "bad_argument",
    ),
}


@pytest.mark.parametrize("site", sorted(KEY_ARGUMENTS))
def test_the_callers_keys_and_options_are_usage_errors(site: str) -> None:
    call, reason = KEY_ARGUMENTS[site]
    _kind(call, ParleyUsageError, "bad_argument", reason)


def test_a_key_store_refuses_its_callers_names_and_files_as_usage_errors(tmp_path: Path) -> None:
    home = tmp_path / "agent"
    store = parley.keys.AgentKeyStore(home)
    _kind(lambda: store.key("no/such name"), ParleyUsageError, "bad_argument", "key_store")
    _kind(lambda: store.create("a", key="k"), ParleyUsageError, "bad_argument", "key_store")  # type: ignore[arg-type]
    _kind(lambda: store.key("missing"), ParleyUsageError, "bad_config", "key_missing")
    store.create("agent")
    _kind(lambda: store.create("agent"), ParleyUsageError, "bad_config", "key_store")
    (home / "keys" / "agent.json").chmod(0o644)
    _kind(lambda: store.key("agent"), ParleyUsageError, "bad_config", "key_store_permissions")


# ---------------------------------------------------------------- the caller's numbers

NUMBERS: dict[str, tuple[Call, str]] = {
    "GrantVerifier(remember=-1)": (lambda: parley.GrantVerifier(remember=-1), "bad_argument"),
    "lens.fit(budget=1.5)": (
        lambda: parley.lens.fit({"kind": "ANSWER", "data": {}}, 1.5, handles=lambda: "h_1"),  # type: ignore[arg-type]
        "bad_budget",
    ),
    "reserve(key='')": (
        lambda: parley.stores.MemorySpendLedger().reserve("", CAPS, 1, "USD"),
        "bad_argument",
    ),
    "reserve(caps=text)": (
        lambda: parley.stores.MemorySpendLedger().reserve("k", "b", 1, "USD"),  # type: ignore[arg-type]
        "bad_block",
    ),
    "reserve(amount=-1)": (
        lambda: parley.stores.MemorySpendLedger().reserve("k", CAPS, -1, "USD"),
        "bad_amount",
    ),
    "reserve(currency=7)": (
        lambda: parley.stores.MemorySpendLedger().reserve("k", CAPS, 1, 7),  # type: ignore[arg-type]
        "bad_amount",
    ),
    "totals(blocks=text)": (
        lambda: parley.stores.MemorySpendLedger().totals("b"),
        "bad_block",
    ),
    "totals(blocks=[7])": (
        lambda: parley.stores.MemorySpendLedger().totals([7]),  # type: ignore[list-item]
        "bad_block",
    ),
}


@pytest.mark.parametrize("site", sorted(NUMBERS))
def test_the_callers_numbers_and_ledger_arguments_are_usage_errors(site: str) -> None:
    call, reason = NUMBERS[site]
    _kind(call, ParleyUsageError, "bad_argument", reason)


def test_committing_a_reservation_never_made_is_a_call_made_too_early() -> None:
    ledger = parley.stores.MemorySpendLedger()
    _kind(lambda: ledger.commit("never"), ParleyUsageError, "not_ready", "no_reservation")


def test_a_spend_cap_the_reservation_would_pass_is_the_peers_answer() -> None:
    ledger = parley.stores.MemorySpendLedger()
    _kind(
        lambda: ledger.reserve("k", CAPS, 101, "USD"),
        ParleyProtocolError,
        "consent_required",
        "spend_exceeded",
    )


# ---------------------------------------------------------------- the caller's paths


def test_conformance_files_the_caller_names_are_usage_errors(tmp_path: Path) -> None:
    from parley import conformance

    (tmp_path / "canonical.json").write_text("{}", encoding="utf-8")
    (tmp_path / "hash.json").write_text("not json", encoding="utf-8")
    cases: list[tuple[Call, str]] = [
        (lambda: conformance.run_file(tmp_path / "other.json"), "unknown_file"),
        (lambda: conformance.run_file(tmp_path / "canonical.json"), "bad_file"),
        (lambda: conformance.run_file(tmp_path / "hash.json"), "bad_file"),
        (lambda: conformance.run_directory(tmp_path / "nowhere"), "bad_file"),
    ]
    for call, reason in cases:
        _kind(call, ParleyUsageError, "bad_argument", reason)


# ---------------------------------------------------------------- protocol data stays protocol

PEER_DATA: dict[str, tuple[Call, str]] = {
    "parse_public_key(text)": (lambda: parley.keys.parse_public_key("ed25519:abc"), "bad_key"),
    "mint_grant(sub=bad key)": (
        lambda: parley.mint_grant(P, "ed25519:abc", [], iat=NOW),
        "bad_key",
    ),
    "mint_grant(caveats=dict)": (
        lambda: parley.mint_grant(P, A.public, {"svc": []}, iat=NOW),  # type: ignore[arg-type]
        "bad_caveat",
    ),
    "mint_grant(bad caveat)": (
        lambda: parley.mint_grant(P, A.public, [{"risk": "x"}], iat=NOW),
        "caveat_malformed",
    ),
    "delegate(not the holder)": (
        lambda: parley.delegate(TOKEN, P, A.public, [], iat=NOW),
        "holder_mismatch",
    ),
    "delegate(wider)": (
        lambda: parley.delegate(
            TOKEN, A, P.public, [{"spend": {"max": 500, "currency": "USD"}}], iat=NOW
        ),
        "caveat_wider",
    ),
    "mint_consent_grant(another principal)": (
        lambda: parley.mint_consent_grant(A, CONSENT, A.public, iat=NOW),
        "principal_mismatch",
    ),
    "consent_request(no summary)": (
        lambda: parley.consent_request(
            {**PROPOSAL, "summary": 7}, service="shop.example", principal=P.public
        ),
        "bad_consent",
    ),
    "canonical(float)": (lambda: parley.canonical({"x": 1.5}), "not_integer"),
    "proposal_hash(list)": (lambda: parley.proposal_hash([]), "bad_proposal"),
    "proof_target(COMMIT)": (lambda: parley.grants.proof_target("COMMIT"), "bad_target"),
    "check_params(bad type)": (
        lambda: parley.service.check_params({"q": "string"}, {"q": 5}),
        "bad_type",
    ),
}


@pytest.mark.parametrize("site", sorted(PEER_DATA))
def test_protocol_data_from_a_peer_stays_a_protocol_error(site: str) -> None:
    call, reason = PEER_DATA[site]
    _kind(call, ParleyProtocolError, "invalid_params", reason)


# ---------------------------------------------------------------- the command line


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``parley ARGV`` in process; it must fail with status 1 and one coded line."""
    assert main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines, "no error line"
    assert lines[-1].startswith("error: "), lines
    return lines[-1]


CLI_FLAGS: dict[str, tuple[list[str], str]] = {
    "call without a target": (["call", "stdio:true", "ask"], "bad_argument/io"),
    "call --timeout 0": (["call", "stdio:true", "hello", "--timeout", "0"], "bad_argument/io"),
    "call --params not JSON": (
        ["call", "stdio:true", "ask", "x", "--params", "{"],
        "bad_argument/not_json",
    ),
    "state list without a state": (["state", "list"], "bad_argument/bad_state"),
    "state resolve --result alone": (
        [
            "state",
            "resolve",
            "--state",
            ":memory:",
            "commit",
            "p",
            "--not-happened",
            "--result",
            "1",
        ],
        "bad_argument/bad_result",
    ),
    "state resolve --result not JSON": (
        ["state", "resolve", "--state", ":memory:", "commit", "p", "--happened", "--result", "{"],
        "bad_argument/not_json",
    ),
    "serve --trust garbage": (
        ["serve", "parley://127.0.0.1:0", "--state", ":memory:", "--trust", "garbage"],
        "bad_argument/bad_key",
    ),
    "serve --app missing": (
        ["serve", "parley://127.0.0.1:0", "--state", ":memory:", "--app", "no_such_mod:x"],
        "bad_config/io",
    ),
    "serve --app not a service": (
        ["serve", "parley://127.0.0.1:0", "--state", ":memory:", "--app", "json:dumps"],
        "bad_config/app",
    ),
    "serve parleys:// without --cert": (
        ["serve", "parleys://127.0.0.1:0", "--state", ":memory:"],
        "bad_config/no_cert",
    ),
    "est missing file": (["est", "no-such-file.txt"], "bad_argument/bad_file"),
    "call --seed-file missing": (
        ["call", "stdio:true", "hello", "--seed-file", "no-such-seed"],
        "bad_argument/io",
    ),
}


@pytest.mark.parametrize("case", sorted(CLI_FLAGS))
def test_the_operators_flags_and_files_are_usage_errors(
    case: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    argv, tag = CLI_FLAGS[case]
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    line = _cli_error(argv, capsys)
    assert line.startswith(f"error: {tag}: "), line


def test_a_consent_file_is_protocol_data(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path / "home"))
    (tmp_path / "consent.json").write_text("[1, 2", encoding="utf-8")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    for name in ("consent.json", "list.json"):
        line = _cli_error(["approve", str(tmp_path / name), "--agent", A.public], capsys)
        assert line.startswith("error: invalid_params/bad_consent: "), line


@pytest.mark.parametrize("text", ["{[1]", "{not json", '{"a": 1} [2]'])
def test_a_proposal_given_to_call_commit_is_protocol_data(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the proposal a service showed, pasted: malformed, it is the peer's data, as a consent
    # or proposal file of `parley approve` is
    monkeypatch.setenv("PARLEY_HOME", str(tmp_path / "home"))
    line = _cli_error(["call", "stdio:true", "commit", text], capsys)
    assert line.startswith("error: invalid_params/bad_proposal: "), line


# ---------------------------------------------------------------- the MCP bridge


def test_the_bridges_configuration_is_a_usage_error(tmp_path: Path) -> None:
    from parley._bridge import Bridge

    def bridge(urls: list[str], **kw: Any) -> object:
        return Bridge(urls, key=A, home=tmp_path, **kw)

    _kind(lambda: bridge([]), ParleyUsageError, "bad_config", "no_url")
    _kind(lambda: bridge([7]), ParleyUsageError, "bad_config", "bad_url")  # type: ignore[list-item]
    _kind(lambda: bridge(["stdio:true"], budget=0), ParleyUsageError, "bad_argument", "bad_budget")
    _kind(
        lambda: bridge(["stdio:true"], timeout=0), ParleyUsageError, "bad_argument", "bad_timeout"
    )


def test_the_bridges_http_options_are_usage_errors(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from parley._bridge import Bridge
    from parley._mcp_bridge import create_app, run_http

    bridge = Bridge(["stdio:true"], key=A, home=tmp_path)
    _kind(lambda: create_app(bridge, token="short"), ParleyUsageError, "bad_config", "token")
    _kind(
        lambda: asyncio.run(run_http(bridge, host="192.0.2.1", port=0)),
        ParleyUsageError,
        "bad_config",
        "not_loopback",
    )


def test_a_tool_call_from_the_model_is_protocol_data(tmp_path: Path) -> None:
    from parley._bridge import Bridge

    bridge = Bridge(["stdio:true"], key=A, home=tmp_path)
    bridge.services["s"] = bridge.links[0]
    for call in (
        lambda: bridge.ask("s", capability="", params=None),
        lambda: bridge.intent("s", capability="c", params=7),
        lambda: bridge.intent("s", capability="c", goal=7),
        lambda: bridge.intent("s", capability="c", budget=0),
    ):
        text = asyncio.run(bridge.call(call))
        assert text.error
        assert text.text.startswith("✗ invalid_params: "), text.text
