"""No process-wide memory in ``vxp`` (DESIGN.md "Speed without hidden state"): nothing at
module level grows with use, a warm process answers every vector exactly as a fresh one
does (through ``ppcheck.run``, the conformance runner's public entry), and input is read
once: a mapping, string or integer that lies on a second read changes nothing."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc.jwk import ECKey

import vxp
from vxp import demo_key, demo_operation

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)


def _module_sizes() -> dict[str, int]:
    """The size of every container and cache held at module level by a ``vxp`` module."""
    sizes: dict[str, int] = {}
    for name, module in sorted(sys.modules.items()):
        if module is None or not (name == "vxp" or name.startswith("vxp.")):
            continue
        for attr, value in vars(module).items():
            where = f"{name}.{attr}"
            if isinstance(value, dict | list | set | bytearray):
                sizes[where] = len(value)
            elif hasattr(value, "cache_info"):
                sizes[where] = value.cache_info().currsize
            elif isinstance(value, type):
                for cattr, cvalue in vars(value).items():
                    if isinstance(cvalue, dict | list | set) and not cattr.startswith("__"):
                        sizes[f"{where}.{cattr}"] = len(cvalue)
    return sizes


def _fresh_key() -> ECKey:
    return ECKey.import_key(ec.generate_private_key(ec.SECP256R1()))


def _one_operation(i: int) -> None:
    """Issue a small operation with fresh keys and fresh material, verify it three ways,
    and an SD-JWT with a fresh issuer and holder key."""
    operator, company, log_key = _fresh_key(), _fresh_key(), _fresh_key()
    company_id = f"https://c{i}.example"
    origin = f"c{i}.example/log"
    builder = vxp.OperationBuilder(
        company=company_id,
        op_id=f"req_{i}",
        operator_key=operator,
        company_key=company,
        log=vxp.MerkleLog(origin),
    )
    at = T0 + timedelta(seconds=i)
    builder.request(channel="vxp", client_id="https://a.example", request={"i": i}, now=at)
    builder.terms(
        capability="cap",
        terms={"capability": "cap", "i": i},
        expires_at=at + timedelta(hours=1),
        read_back_terms=["i"],
        now=at,
    )
    builder.outcome(state="cancelled", result_summary={"i": i}, now=at)
    package = builder.package(log_key=log_key)
    records = [
        vxp.KeyRecord(vxp.key_thumbprint(operator), "operator", T0 - timedelta(days=1), None),
        vxp.KeyRecord(vxp.key_thumbprint(company), "company", T0 - timedelta(days=1), None),
    ]
    metadata = vxp.build_metadata(
        company_id,
        jwks_uri=company_id + "/jwks",
        keys=records,
        custody="company_held",
        log_origin=origin,
        log_kid=vxp.key_thumbprint(log_key),
    )
    jwks = vxp.build_jwks([operator, company, log_key])
    now = at + timedelta(minutes=1)
    assert vxp.verify(package, metadata, jwks, now=now).valid
    verifier = vxp.Verifier(metadata, jwks)
    assert verifier.verify(package, now=now).valid
    # a forged package of the same issuer: refused, and nothing learnt from it
    forged = {
        **package,
        "statements": [package["statements"][0][:-5] + "AAAA~", *package["statements"][1:]],
    }
    assert not verifier.verify(forged, now=now).valid
    issuer, holder = _fresh_key(), _fresh_key()
    token = vxp.issue_sd_jwt({"i": vxp.Sd(i)}, issuer, typ="t", holder_key=holder)
    shown = vxp.present_sd_jwt(token, holder_key=holder, aud="v", nonce="n", iat=100)
    policy = vxp.KeyBinding("v", "n")
    jwk = issuer.as_dict(private=False)
    assert vxp.verify_sd_jwt(shown, jwk, typ="t", now=100, key_binding=policy).claims["i"] == i
    keys = vxp.IssuerKeys([jwk])
    assert vxp.verify_sd_jwt(shown, keys, typ="t", now=100, key_binding=policy).claims["i"] == i


def test_no_module_level_object_grows_across_1000_verifications() -> None:
    for i in range(20):  # lazy one-time loads (schemas, imports) happen here
        _one_operation(i)
    before = _module_sizes()
    for i in range(20, 1020):
        _one_operation(i)
    after = _module_sizes()
    grown = {k: (before.get(k), v) for k, v in after.items() if v != before.get(k)}
    assert grown == {}


_SCRIPT = textwrap.dedent(
    """
    import json, os, random, sys
    sys.path.insert(0, os.path.join(sys.argv[1], "src"))
    import ppcheck

    def run(suite, input_):
        return ppcheck.run(suite, input_).as_json()

    cases = []
    suites = ("vxp.verify_proof", "verify-proof.json"), ("vxp.sd_jwt_verify", "sd-jwt-verify.json")
    for fn, path in suites:
        with open(os.path.join(sys.argv[1], "vectors", "vxp", path)) as f:
            for test in json.load(f)["tests"]:
                cases.append((fn, test["id"], test["input"]))
    fresh = {}
    for fn, cid, input_ in cases:  # each case answered by a child that verified nothing before
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            os.write(write, json.dumps(run(fn, input_), sort_keys=True).encode())
            os._exit(0)
        os.close(write)
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        os.close(read)
        os.waitpid(pid, 0)
        fresh[cid] = json.loads(b"".join(chunks))
    warm = {}
    rng = random.Random(17)
    for round_ in range(3):  # the same process, every case after every other, in three orders
        order = list(cases)
        rng.shuffle(order)
        for fn, cid, input_ in order:
            got = json.loads(json.dumps(run(fn, input_), sort_keys=True))
            if warm.setdefault(cid, got) != got:
                warm[cid] = {"changed_in_round": round_}
    print(json.dumps({"fresh": fresh, "warm": warm}))
    """
)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork for fresh answers")
def test_a_warm_process_answers_every_vector_as_a_fresh_one() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    answers: dict[str, Any] = json.loads(result.stdout)
    fresh, warm = answers["fresh"], answers["warm"]
    assert len(fresh) > 150
    different = sorted(cid for cid in fresh if fresh[cid] != warm[cid])
    assert different == []


def test_material_changed_in_place_is_seen_by_the_next_one_shot_verification() -> None:
    import copy

    op = demo_operation("succeeded")
    metadata, jwks = copy.deepcopy(op.metadata), copy.deepcopy(op.jwks)
    first = vxp.verify(op.package, metadata, jwks, now=op.now)
    assert first.custody_declared == "operator_hosted"
    metadata["vxp_proof"]["custody"]["company_key"] = "company_held"
    assert vxp.verify(op.package, metadata, jwks, now=op.now).custody_declared == "company_held"
    # the operator key retired before the statements were logged: refused at once
    kid = vxp.key_thumbprint(demo_key("operator"))
    retired = vxp.trust.retire_key(metadata, kid, at=op.now - timedelta(days=21))
    verdict = vxp.verify(op.package, retired, jwks, now=op.now)
    assert verdict.failure is not None
    assert verdict.failure["code"] == "key_untrusted"
    jwks["keys"] = [k for k in jwks["keys"] if k["kid"] != kid]
    assert not vxp.verify(op.package, op.metadata, jwks, now=op.now).valid
    assert vxp.verify(op.package, op.metadata, op.jwks, now=op.now).valid


def test_a_verifier_keeps_the_material_it_was_built_from() -> None:
    import copy

    op = demo_operation("succeeded")
    metadata, jwks = copy.deepcopy(op.metadata), copy.deepcopy(op.jwks)
    verifier = vxp.Verifier(metadata, jwks)
    before = verifier.verify(op.package, now=op.now)
    assert before.valid
    metadata["vxp_proof"]["keys"].clear()  # the caller's objects change afterwards
    jwks["keys"].clear()
    assert verifier.verify(op.package, now=op.now) == before


# module state: tables are read-only, schemas are copies


def test_kind_signer_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        vxp.statements.KIND_SIGNER["outcome"] = "operator"  # type: ignore[index]
    assert vxp.statements.KIND_SIGNER["outcome"] == "company"


def test_load_schema_returns_a_copy_the_caller_may_change() -> None:
    name = vxp.schema_names()[0]
    first = vxp.load_schema(name)
    expected = copy.deepcopy(first)
    first.clear()
    first["type"] = "string"
    assert vxp.load_schema(name) == expected
    assert vxp.load_schema(name) is not vxp.load_schema(name)


@pytest.mark.parametrize("name", [["x"], None, 3, b"card.json", {"a": 1}])
def test_load_schema_refuses_a_name_that_is_not_a_string(name: Any) -> None:
    with pytest.raises(vxp.VxpError) as info:
        vxp.load_schema(name)
    assert info.value.code == "schema_unknown"


# ---- what is checked is what is used: input read once, nothing remembered


class _LyingItems(dict):  # type: ignore[type-arg]
    def __init__(self, items: dict[str, Any], lie: dict[str, Any]) -> None:
        super().__init__(items)
        self._lie = lie

    def items(self) -> Any:
        return self._lie.items()

    def get(self, name: Any, default: Any = None) -> Any:
        return self._lie.get(name, default)


def test_jwks_memory_cannot_make_a_valid_package_refused() -> None:
    """A JWKS whose entries lie about their members leaves nothing behind: the honest
    material verifies the package exactly as before."""
    op = demo_operation("succeeded")
    good = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert good.valid
    other = demo_key("finding1-other").as_dict(private=False)
    lying_keys = [_LyingItems(k, {**other, "kid": k["kid"]}) for k in op.jwks["keys"]]
    vxp.verify(op.package, op.metadata, {"keys": lying_keys}, now=op.now)
    again = vxp.verify(op.package, op.metadata, op.jwks, now=op.now)
    assert again == good


class _LyingStr(str):
    """A string whose split answers for another string."""

    other = ""

    def split(self, *args: Any, **kwargs: Any) -> Any:
        return str.split(self.other, *args, **kwargs)


def test_a_statement_string_that_lies_is_read_as_its_own_text() -> None:
    """A statement is read as its own text, whatever its ``split`` answers."""
    op = demo_operation("succeeded")
    honest = op.package["statements"][5]
    jws, _, rest = honest.partition("~")
    forged = jws[:-3] + ("AAA" if jws[-3:] != "AAA" else "BBB") + "~" + rest
    lying = _LyingStr(forged)
    lying.other = honest
    package = {**op.package, "statements": [*op.package["statements"][:5], lying]}
    verdict = vxp.verify(package, op.metadata, op.jwks, now=op.now)
    assert verdict.failure is not None
    assert verdict.failure["code"] == "signature_invalid"


class _LyingInt(int):
    """An integer that says yes to every order comparison."""

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


def test_a_quorum_that_lies_is_read_as_its_own_value() -> None:
    """A quorum is read as its own value, whatever its comparisons answer."""
    op = demo_operation("succeeded")
    log = {**op.metadata["vxp_proof"]["log"], "quorum": _LyingInt(5)}
    metadata = {**op.metadata, "vxp_proof": {**op.metadata["vxp_proof"], "log": log}}
    verdict = vxp.verify(op.package, metadata, op.jwks, now=op.now)
    assert verdict.valid
    assert verdict.logged is False  # no witness cosigned: 0 of 5
    assert "witnessed_log" not in verdict.derived_assurance
