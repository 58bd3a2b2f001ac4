"""Every code vxp raises is in its table (``vxp.errors.CODES``), every code in the table is
raised, and the table decides who broke the rules (issue 25).

(a) every literal code at a raise site of ``src/vxp`` is in the table; (b) every code is
expected by a vector (``error.code``, or a verdict's ``failure.code``) or triggered here
through the public API; (c) the kind follows the argument: protocol data of any Python type
is a protocol error, the caller's own arguments (``now``, keys, options) a usage error.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from joserfc.jwk import ECKey, OKPKey

import vxp
from tests.codecheck import ROOT, literal_codes, raises_code, vector_codes
from tests.vxp import forge
from vxp.checkpoints import Checkpoint, Witness, sign_checkpoint, verify_checkpoint
from vxp.errors import CODES, VxpError, VxpProtocolError, VxpUsageError

TYP = "example+sd-jwt"
NOW = 1_800_000_000
ISSUER = vxp.demo_key("codes issuer")
HOLDER = vxp.demo_key("codes holder")


def _verdict_codes() -> set[str]:
    """The ``failure.code`` of every verdict the vectors expect."""
    codes: set[str] = set()
    for path in sorted((ROOT / "vectors" / "vxp").glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8")).get("tests", []):
            output = case.get("output")
            if isinstance(output, dict) and isinstance(output.get("failure"), dict):
                codes.add(output["failure"]["code"])
    return codes


def _jws(header: dict[str, Any], payload: dict[str, Any], key: ECKey = ISSUER) -> str:
    """A compact ES256 JWS over exactly ``header`` and ``payload`` (whatever they say)."""
    return forge.jws_json(header, payload, key)


def _token(claims: dict[str, Any] | None = None, **kwargs: Any) -> str:
    return vxp.issue_sd_jwt(claims or {"iss": "i"}, ISSUER, typ=TYP, **kwargs).serialize()


def _bound() -> str:
    """A presentation body whose SD-JWT carries HOLDER as ``cnf``."""
    return vxp.present_sd_jwt(_token(holder_key=HOLDER), disclose=[])


def _kb(header: dict[str, Any]) -> Callable[[], object]:
    kb = _jws(header, {"iat": NOW, "aud": "a", "nonce": "n"}, HOLDER)
    policy = vxp.KeyBinding(aud="a", nonce="n")
    return lambda: vxp.verify_sd_jwt(
        _bound() + kb, ISSUER, typ=TYP, now=NOW, key_binding=policy, algorithms=["ES256"]
    )


def _signed(size: int = 1, origin: str = "o") -> Any:
    log = vxp.MerkleLog(origin)
    log.extend([bytes([i]) for i in range(size)])
    return sign_checkpoint(Checkpoint(origin, size, log.root()), vxp.demo_key("log"))


def _builder(**changes: Any) -> vxp.OperationBuilder:
    args: dict[str, Any] = {
        "company": "https://co.example",
        "op_id": "op",
        "operator_key": vxp.demo_key("operator"),
        "company_key": vxp.demo_key("company"),
        "log": vxp.MerkleLog("o"),
    }
    return vxp.OperationBuilder(**{**args, **changes})


def _at(seconds: int) -> datetime:
    return datetime.fromtimestamp(NOW + seconds, UTC)


def _with_terms() -> vxp.OperationBuilder:
    b = _builder()
    b.request(channel="chat", client_id="c", request={"ask": "x"}, now=_at(0))
    b.terms(
        capability="pay",
        terms={"amount": 1},
        expires_at=_at(3600),
        read_back_terms=["amount"],
        user_approval_required=False,
        now=_at(1),
    )
    b.execute(release={"order": "1"}, now=_at(2))
    return b


def _witness_rollback() -> object:
    witness = Witness(vxp.demo_key("witness"), {"o": vxp.demo_key("log")})
    witness.cosign(_signed(2), time=NOW)
    return witness.cosign(_signed(1), time=NOW)


def _merkle_log_conflict() -> object:
    store = vxp.stores.MemoryLogStore()
    vxp.MerkleLog("o", store).extend([b"a"])
    return store.append(0, [b"x"], [(0, 0, vxp.merkle.leaf_hash(b"x"))])


def _replayed() -> object:
    cache = vxp.stores.MemoryReplayCache()
    cache.store_once("kid:jti", NOW + 60, NOW)
    return cache.store_once("kid:jti", NOW + 60, NOW + 1)


def _cli(tmp_path: Path, *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "vxp", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode != 0
    return done.stderr


OP = vxp.demo_operation("succeeded")
NAIVE = datetime(2030, 1, 1)  # the naive datetime under test

TRIGGERS: dict[str, Callable[[], object]] = {
    "time_naive": lambda: vxp.verify(OP.package, OP.metadata, OP.jwks, now=NAIVE),
    "now_invalid": lambda: vxp.verify_sd_jwt(_token(), ISSUER, typ=TYP, now="now"),
    "leeway_invalid": lambda: vxp.verify_sd_jwt(_token(), ISSUER, typ=TYP, now=NOW, leeway=-1),
    "max_statements_invalid": lambda: vxp.Verifier(OP.metadata, OP.jwks).verify(
        OP.package, now=OP.now, max_statements=0
    ),
    "algorithms_invalid": lambda: vxp.verify_sd_jwt(
        _token(), ISSUER, typ=TYP, now=NOW, algorithms=[]
    ),
    "key_binding_invalid": lambda: vxp.KeyBinding(aud=1, nonce="n"),  # type: ignore[arg-type]
    "typ_invalid": lambda: vxp.issue_sd_jwt({}, ISSUER, typ=""),
    "decoys_invalid": lambda: vxp.issue_sd_jwt({}, ISSUER, typ=TYP, decoys=-1),
    "random_source_invalid": lambda: vxp.issue_sd_jwt(
        {"a": vxp.Sd(1)}, ISSUER, typ=TYP, rng=lambda n: b""
    ),
    "holder_key_missing": lambda: vxp.present_sd_jwt(_token(), aud="a"),
    "kb_claims_invalid": lambda: vxp.present_sd_jwt(
        _token(holder_key=HOLDER), holder_key=HOLDER, aud="a", nonce="n", iat="now"
    ),
    "key_unsupported": lambda: vxp.key_thumbprint({"kty": "RSA", "n": "AQAB", "e": "AQAB"}),
    "key_not_private": lambda: vxp.issue_sd_jwt({}, ISSUER.as_dict(private=False), typ=TYP),
    "witness_keys_invalid": lambda: vxp.checkpoints.verify_cosignatures(
        _signed(), {"not": "a list"}
    ),
    "role_unknown": lambda: vxp.trust.rotate_key(OP.metadata, "auditor", ISSUER, at=OP.now),
    "key_not_active": lambda: vxp.trust.retire_key(OP.metadata, "no-such-kid", at=OP.now),
    "key_not_listed": lambda: vxp.trust.unpublish_key(OP.metadata, "no-such-kid"),
    "company_invalid": lambda: _builder(company="http://co.example"),
    "op_id_invalid": lambda: _builder(op_id=""),
    "url_invalid": lambda: vxp.fetch.make_dpop_proof(
        HOLDER, method="GET", url="ftp://x", iat=NOW, jti="j"
    ),
    "base_url_invalid": lambda: vxp.fetch.ProofEndpoint(
        base_url="http://co.example", tokens={}, packages={}
    ),
    "variant_unknown": lambda: vxp.demo_operation("no such variant"),
    "schema_unknown": lambda: vxp.load_schema("no-such-schema.json"),
    "log_origin_invalid": lambda: vxp.MerkleLog(""),
    "log_store_error": lambda: vxp.open_log_store("mysql://x/y", "o"),
    "log_conflict": _merkle_log_conflict,
    "log_corrupt": lambda: vxp.stores.MemoryLogStore().append(
        0, [b"x"], [(0, 3, vxp.merkle.leaf_hash(b"x"))]
    ),
    "replay_store_unavailable": lambda: vxp.stores.open_replay_cache("mysql://x/y"),
    "malformed_base64url": lambda: vxp.codec.b64url_decode("ab+", "the value"),
    "not_canonicalizable": lambda: vxp.codec.canonical_json(float("nan")),
    "issuer_key_ambiguous": lambda: vxp.verify_sd_jwt(
        _jws({"alg": "ES256", "typ": TYP}, {"iss": "i"}) + "~",
        [ISSUER, HOLDER],
        typ=TYP,
        now=NOW,
    ),
    "alg_key_mismatch": lambda: vxp.verify_sd_jwt(
        _jws({"alg": "EdDSA", "typ": TYP, "kid": vxp.key_thumbprint(ISSUER)}, {}) + "~",
        ISSUER,
        typ=TYP,
        now=NOW,
        algorithms=["ES256", "EdDSA"],
    ),
    "sd_misplaced": lambda: vxp.issue_sd_jwt({"a": vxp.Sd(vxp.Sd(1))}, ISSUER, typ=TYP),
    "claims_invalid": lambda: vxp.issue_sd_jwt([], ISSUER, typ=TYP),  # type: ignore[arg-type]
    "claims_too_deep": lambda: vxp.issue_sd_jwt(
        {"a": json.loads("[" * 80 + "]" * 80)}, ISSUER, typ=TYP
    ),
    "exp_missing": lambda: vxp.verify_sd_jwt(_token(), ISSUER, typ=TYP, now=NOW, require_exp=True),
    "token_not_yet_valid": lambda: vxp.verify_sd_jwt(
        _token({"nbf": NOW + 60}), ISSUER, typ=TYP, now=NOW
    ),
    "kb_malformed_jwt": lambda: vxp.verify_sd_jwt(
        _bound() + "a.b", ISSUER, typ=TYP, now=NOW, key_binding=vxp.KeyBinding(aud="a", nonce="n")
    ),
    "kb_alg_not_allowed": _kb({"alg": "EdDSA", "typ": "kb+jwt"}),
    "kb_crit_unsupported": _kb({"alg": "ES256", "typ": "kb+jwt", "crit": ["x"]}),
    "kb_kid_invalid": _kb({"alg": "ES256", "typ": "kb+jwt", "kid": 7}),
    "kb_alg_key_mismatch": lambda: vxp.verify_sd_jwt(
        vxp.present_sd_jwt(_token(holder_key=OKPKey.generate_key("Ed25519")), disclose=[])
        + _jws({"alg": "ES256", "typ": "kb+jwt"}, {"iat": NOW}, HOLDER),
        ISSUER,
        typ=TYP,
        now=NOW,
        key_binding=vxp.KeyBinding(aud="a", nonce="n"),
        algorithms=["ES256", "EdDSA"],
    ),
    "personal_field_clash": lambda: _with_terms().read_back(
        observed={"amount": 1}, personal={"amount": 2}, now=_at(3)
    ),
    "terms_invalid": lambda: _builder().terms(
        capability="pay",
        terms=[],  # type: ignore[arg-type]
        expires_at=_at(3600),
        read_back_terms=[],
        now=_at(1),
    ),
    "approval_invalid": lambda: vxp.statements.approval_signing_input(HOLDER, {"revision": 1}),
    "malformed_proof": lambda: vxp.merkle.verify_inclusion(
        vxp.merkle.leaf_hash(b"a"),
        0,
        1,
        "not a list",
        vxp.merkle.leaf_hash(b"a"),  # type: ignore[arg-type]
    ),
    "log_entry_invalid": lambda: vxp.MerkleLog("o").extend(["text"]),  # type: ignore[list-item]
    "log_entry_missing": lambda: vxp.MerkleLog("o").entry(0),
    "log_size_invalid": lambda: vxp.MerkleLog("o").root(1),
    "argument_invalid": lambda: vxp.build_jwks(None),  # type: ignore[arg-type]
    "step_refused": lambda: _builder().approve(now=_at(0)),
    "dpop_replay": _replayed,
    "checkpoint_origin_mismatch": lambda: verify_checkpoint(
        _signed(), vxp.demo_key("log"), origin="another log"
    ),
    "witness_unknown_log": lambda: Witness(vxp.demo_key("witness"), {}).cosign(_signed(), time=NOW),
    "witness_rollback": _witness_rollback,
}


def test_every_literal_code_at_a_raise_site_is_in_the_table() -> None:
    found = literal_codes("vxp", {"VxpError", "VxpUsageError", "VxpProtocolError"})
    unknown = {code: where for code, where in found.items() if code not in CODES}
    assert not unknown, unknown
    assert len(found) > 100  # the scan sees the raise sites


def _passed_codes() -> dict[str, list[str]]:
    """Codes handed to a helper that raises them later: ``code="..."`` keywords, and the
    literal arguments of ``_parse``/``_open``/``_tx`` (the stores) and ``_stage``'s picks."""
    import ast

    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "src" / "vxp").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            values = [k.value for k in node.keywords if k.arg == "code"]
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            position = {"_parse": 1, "_tx": 2, "_open": 3}.get(str(name))
            if position is not None and len(node.args) > position:
                values.append(node.args[position])
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    where = f"{path.relative_to(ROOT)}:{node.lineno}"
                    found.setdefault(value.value, []).append(where)
    return found


def test_every_code_passed_to_a_helper_is_in_the_table() -> None:
    found = _passed_codes()
    assert {"malformed_jwt", "disclosure_malformed", "log_store_error"} <= set(found)
    unknown = {code: where for code, where in found.items() if code not in CODES}
    assert not unknown, unknown


def test_every_code_is_raised_by_a_vector_or_a_trigger() -> None:
    covered = vector_codes("vxp") | _verdict_codes() | set(TRIGGERS) | set(_OTHER_TESTS)
    assert set(CODES) - covered == set()
    assert set(TRIGGERS) <= set(CODES)


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_the_trigger_raises_its_code_with_the_tables_kind(code: str) -> None:
    kind = VxpUsageError if CODES[code].kind == "usage" else VxpProtocolError
    raises_code(TRIGGERS[code], kind, code)


_OTHER_TESTS = {
    # codes whose trigger needs a process boundary or a stand-in for the installation
    "schemas_missing": "test_schemas_missing",
    "file_unreadable": "test_cli_codes",
    "cli_usage": "test_cli_codes",
    "file_invalid": "test_cli_codes",
    "malformed_json": "test_cli_codes",
    "log_origin_mismatch": "test_log_origin_mismatch",
}


def test_schemas_missing(tmp_path: Path) -> None:
    """A copy of the package with neither packaged nor checkout schemas (a real import in
    a real interpreter; nothing replaced)."""
    import shutil

    for package in ("vxp", "_ppcodes", "_ppschema"):
        shutil.copytree(ROOT / "src" / package, tmp_path / "src" / package)
    code = (
        "import vxp\n"
        "try:\n    vxp.schema_names()\n"
        "except vxp.VxpUsageError as e:\n    print(e.code)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tmp_path / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.stdout.strip() == "schemas_missing", out.stderr


def test_log_origin_mismatch(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'log.db'}"
    vxp.open_log_store(url, "one").close()
    raises_code(lambda: vxp.open_log_store(url, "two"), VxpUsageError, "log_origin_mismatch")


def test_cli_codes(tmp_path: Path) -> None:
    """The command line names the code of what went wrong (a real ``python -m vxp``)."""
    assert "file_unreadable" in _cli(tmp_path, "merkle-verify", "missing.json")
    (tmp_path / "bad.json").write_text("{nope")
    assert "file_invalid" in _cli(tmp_path, "merkle-verify", "bad.json")
    (tmp_path / "list.json").write_text("[]")
    assert "file_invalid" in _cli(tmp_path, "merkle-verify", "list.json")
    (tmp_path / "token").write_text(_token())
    (tmp_path / "jwk.json").write_text(json.dumps(ISSUER.as_dict(private=False)))
    args = ["sd-jwt-verify", "token", "--issuer-jwk", "jwk.json", "--typ", TYP, "--aud", "a"]
    assert "cli_usage" in _cli(tmp_path, *args)
    (tmp_path / "meta.json").write_text("{nope")
    err = _cli(tmp_path, "verify", "bad.json", "--metadata", "meta.json", "--jwks", "meta.json")
    assert "malformed_json" in err


# ---------------------------------------------------------------------------- (c) kinds


@pytest.mark.parametrize("token", [7, None, b"ey.ey.ey~", ["a~"]])
def test_a_token_of_another_python_type_is_a_protocol_error(token: object) -> None:
    raises_code(
        lambda: vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=NOW),  # type: ignore[arg-type]
        VxpProtocolError,
        "sd_jwt_malformed",
    )


@pytest.mark.parametrize("record", [7, None, "checkpoint"])
def test_a_checkpoint_of_another_python_type_is_a_protocol_error(record: object) -> None:
    raises_code(
        lambda: verify_checkpoint(record, vxp.demo_key("log")),  # type: ignore[arg-type]
        VxpProtocolError,
        "checkpoint_invalid",
    )


@pytest.mark.parametrize("index", ["0", None, -1, True])
def test_a_proof_index_of_another_python_type_is_a_protocol_error(index: object) -> None:
    leaf = vxp.merkle.leaf_hash(b"a")
    raises_code(
        lambda: vxp.merkle.verify_inclusion(leaf, index, 1, [], leaf),  # type: ignore[arg-type]
        VxpProtocolError,
        "merkle_argument_invalid",
    )


@pytest.mark.parametrize("package", [7, None, "package", []])
def test_a_package_of_another_python_type_is_a_failed_verdict(package: object) -> None:
    verdict = vxp.verify(package, OP.metadata, OP.jwks, now=OP.now)
    assert verdict.valid is False
    assert verdict.failure is not None
    assert verdict.failure["code"] == "package_malformed"
    assert CODES[verdict.failure["code"]].kind == "protocol"


def test_every_code_a_verdict_can_carry_is_a_protocol_code() -> None:
    assert {CODES[code].kind for code in _verdict_codes()} == {"protocol"}


@pytest.mark.parametrize(
    "call",
    [
        lambda: vxp.verify(OP.package, OP.metadata, OP.jwks, now=NAIVE),
        lambda: vxp.Verifier(OP.metadata, OP.jwks).verify(OP.package, now=NAIVE),
        lambda: vxp.verify_sd_jwt(_token(), ISSUER, typ=TYP, now=NAIVE),
        lambda: vxp.fetch.ProofEndpoint(
            base_url="https://co.example", tokens={}, packages={}
        ).handle(method="GET", url="https://co.example/", headers={}, now=NAIVE),
        lambda: _builder().request(channel="c", client_id="c", request={}, now=NAIVE),
        lambda: vxp.trust.retire_key(
            OP.metadata, OP.metadata["vxp_proof"]["keys"][0]["kid"], at=NAIVE
        ),
        lambda: vxp.checkpoints.cosign_checkpoint(_signed(), vxp.demo_key("w"), time=NAIVE),
        lambda: vxp.fetch.make_dpop_proof(
            HOLDER, method="GET", url="https://x/", iat=NAIVE, jti="j"
        ),
    ],
)
def test_a_naive_now_is_a_usage_error(call: Callable[[], object]) -> None:
    raises_code(call, VxpUsageError, "time_naive")


@pytest.mark.parametrize("now", ["2030-01-01", None, float("nan"), 10**400, True])
def test_a_now_of_another_type_is_a_usage_error(now: object) -> None:
    raises_code(
        lambda: vxp.verify_sd_jwt(_token(), ISSUER, typ=TYP, now=now),  # type: ignore[arg-type]
        VxpUsageError,
        "now_invalid",
    )


def test_an_aware_datetime_is_accepted_wherever_now_is_passed() -> None:
    at = datetime.fromtimestamp(NOW, UTC)
    token = _token({"iss": "i", "exp": NOW + 1})
    assert vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=at).claims["iss"] == "i"
    raises_code(
        lambda: vxp.verify_sd_jwt(token, ISSUER, typ=TYP, now=at.replace(second=at.second + 1)),
        VxpProtocolError,
        "token_expired",
    )
    cosigned = vxp.checkpoints.cosign_checkpoint(_signed(), vxp.demo_key("w"), time=at)
    assert cosigned.cosignatures[0].time == NOW
    endpoint = vxp.fetch.ProofEndpoint(base_url="https://co.example", tokens={}, packages={})
    answer = endpoint.handle(method="GET", url="https://co.example/", headers={}, now=at)
    assert answer.status == 404


def test_the_error_classes_are_the_packages_own() -> None:
    assert issubclass(VxpUsageError, VxpError)
    assert issubclass(VxpProtocolError, VxpError)
    assert issubclass(VxpError, ValueError)
    assert vxp.VxpError is VxpError
    assert type(VxpError("signature_invalid", "m")) is VxpProtocolError
    assert type(VxpError("time_naive", "m")) is VxpUsageError
