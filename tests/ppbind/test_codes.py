"""Every code ppbind raises is in its table, every code in the table is raised, and the
table decides the class: the errand's records are protocol errors, the caller's own
arguments usage errors."""

from __future__ import annotations

import contextlib
import copy
import inspect
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import ppbind
import ppbind.demo
from ppbind.errors import CODES, BindingError, BindingProtocolError, BindingUsageError
from tests.codecheck import ROOT, literal_codes, raises_code, vector_codes

RAISERS = {"BindingError", "BindingUsageError", "BindingProtocolError", "_fail", "_mismatch"}


def test_every_literal_code_at_a_raise_site_is_in_the_table() -> None:
    found = literal_codes("ppbind", RAISERS)
    assert found, "the scan finds the raise sites"
    missing = {code: where for code, where in found.items() if code not in CODES}
    assert not missing, missing


def test_ppbind_raises_no_other_packages_error_with_a_code_of_its_own_making() -> None:
    """A code ppbind invented for pxp, handoff, vxp or parley could be missing from their
    tables; ppbind raises its own errors (the shop answers with Parley's service error)."""
    others = literal_codes("ppbind", {"PxpError", "HandoffError", "VxpError", "ParleyError"})
    assert not others, others


@pytest.fixture(scope="module")
def errand() -> dict[str, Any]:
    return ppbind.demo.demo_errand()


def _seed_error() -> None:
    ppbind.PersonKey.from_seed(b"short")


def test_every_code_in_the_table_is_raised(errand: dict[str, Any], tmp_path: Path) -> None:
    raised = set(vector_codes("ppbind"))
    # the caller's own mistakes, through the public API
    for call in (
        _seed_error,
        lambda: ppbind.demo.demo_errand("no-such-attack"),
        lambda: ppbind.proposal_expires(datetime(2026, 12, 2, 10, 0)),  # naive
    ):
        raises_code(call, BindingUsageError, "binding_argument_invalid")
    raised.add("binding_argument_invalid")
    raises_code(lambda: ppbind.load_schema("no-such.json"), BindingUsageError, "schema_unknown")
    raised.add("schema_unknown")
    raises_code(_stubborn_demo, BindingUsageError, "binding_demo_failed")
    raised.add("binding_demo_failed")
    assert _without_schemas(tmp_path) == "schemas_missing BindingUsageError"
    raised.add("schemas_missing")
    # her side's own checks before it signs (the audit meets these links later)
    ana = ppbind.PersonKey.from_label("bindings ana")
    settlement, terms = _decided(errand)
    now = terms["x_binding"]["parley"]["consent"]["expires"] - 100
    for change, code in (
        (("parley", "proposal", "expires"), "binding_proof_terms_mismatch"),
        (("terms", "amount"), "binding_terms_not_agreed"),
        (("pxp", "proposal_hash"), "binding_agreement_mismatch"),
    ):
        bad = copy.deepcopy(terms)
        node = bad["x_binding"]
        for step in change[:-1]:
            node = node[step]
        node[change[-1]] = 99_000 if change[-1] != "proposal_hash" else "0" * 64
        if code == "binding_proof_terms_mismatch":
            # approval_for alone: consent_grant would first refuse the changed proposal hash
            raises_code(lambda bad=bad: ppbind.approval_for(ana, bad), BindingProtocolError, code)
        else:
            raises_code(
                lambda bad=bad: ppbind.sign_on_approval(ana, settlement, bad, now=now),
                BindingProtocolError,
                code,
            )
        raised.add(code)
    assert set(CODES) <= raised, sorted(set(CODES) - raised)


def _stubborn_demo() -> None:
    """Proxies that never agree: the demo cannot complete."""

    class Never:
        def next_envelope(self, view: Any) -> dict[str, Any]:
            return {"message": "No.", "status": "continue"}

    ppbind.demo.demo_errand(proxies={"A": Never(), "B": Never()})


def _without_schemas(tmp_path: Path) -> str:
    """ppbind installed with neither ``_schemas/`` nor a checkout beside it."""
    site = tmp_path / "a" / "b" / "site"
    site.mkdir(parents=True)
    shutil.copytree(ROOT / "src" / "ppbind", site / "ppbind")
    probe = textwrap.dedent(
        """
        import ppbind
        try:
            ppbind.schema_names()
        except ppbind.BindingError as exc:
            print(exc.code, type(exc).__name__)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PYTHONPATH": f"{site}:{ROOT / 'src'}", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# ---------------------------------------------------------------- kinds


@pytest.mark.parametrize("bad", [None, 7, "not json", b"{}", [], {"profile": "pp-bind/1"}])
def test_a_malformed_audit_input_is_a_protocol_error(bad: object) -> None:
    raises_code(lambda: ppbind.verify_errand(bad), BindingProtocolError, "binding_input_invalid")


@pytest.mark.parametrize("bad", [None, 7, 1.5, b"ed25519:", {"kty": "EC"}])
def test_a_malformed_public_key_in_a_record_is_a_protocol_error(bad: object) -> None:
    raises_code(lambda: ppbind.raw_key(bad), BindingProtocolError, "binding_key_unsupported")


@pytest.mark.parametrize("bad", [None, 7, "x", {"a": 1}])
def test_malformed_terms_are_a_protocol_error(bad: object) -> None:
    raises_code(lambda: ppbind.read_terms(bad), BindingProtocolError, "binding_terms_unreadable")


def _decided(errand: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The approve settlement and the decided terms of the honest errand."""
    records = errand["handoff"]["records"]
    settlement = next(r for r in records if r.get("outcome") == "approve")
    raised = next(
        r
        for r in records
        if r.get("type") == "raised" and r.get("key") == errand["handoff"]["decision"]["key"]
    )
    return settlement, raised["terms"]


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 12, 2, 10, 0),  # naive
        "2026-12-02T10:00:00Z",
        1_796_205_610.5,
        True,
        None,
    ],
)
def test_a_now_that_is_not_a_time_is_a_usage_error(errand: dict[str, Any], now: Any) -> None:
    settlement, terms = _decided(errand)
    ana = ppbind.PersonKey.from_label("bindings ana")
    for call in (
        lambda: ppbind.consent_grant(ana, settlement, terms, now=now),
        lambda: ppbind.sign_on_approval(ana, settlement, terms, now=now),
        lambda: ppbind.is_late(terms["x_binding"]["parley"]["consent"], now),
        lambda: ppbind.proposal_expires(now),
    ):
        with pytest.raises(BindingUsageError) as caught:
            call()
        assert (caught.value.code, caught.value.reason) == ("binding_argument_invalid", "now")


def test_an_aware_datetime_is_the_same_now_as_its_unix_seconds(errand: dict[str, Any]) -> None:
    settlement, terms = _decided(errand)
    ana = ppbind.PersonKey.from_label("bindings ana")
    consent = terms["x_binding"]["parley"]["consent"]
    seconds = consent["expires"] - 31
    aware = datetime.fromtimestamp(seconds, UTC)
    assert ppbind.consent_grant(ana, settlement, terms, now=aware) == ppbind.consent_grant(
        ana, settlement, terms, now=seconds
    )
    assert ppbind.is_late(consent, aware.replace(microsecond=999_999)) is False
    assert ppbind.is_late(consent, datetime.fromtimestamp(seconds + 1, UTC)) is True
    assert ppbind.proposal_expires(aware) == ppbind.proposal_expires(seconds)


@pytest.mark.parametrize("key", [None, "ed25519:abc", {"kty": "OKP"}, 7])
def test_a_key_that_is_not_a_person_key_is_a_usage_error(errand: dict[str, Any], key: Any) -> None:
    settlement, terms = _decided(errand)
    for call in (
        lambda: ppbind.consent_grant(key, settlement, terms, now=1),
        lambda: ppbind.approval_for(key, terms),
        lambda: ppbind.sign_approval_unchecked(key, "a", "b"),
    ):
        with pytest.raises(BindingUsageError) as caught:
            call()
        assert (caught.value.code, caught.value.reason) == ("binding_argument_invalid", "key")


@pytest.mark.parametrize("seed", [b"", b"x" * 31, b"x" * 33, "x" * 32, None])
def test_a_seed_that_is_not_32_bytes_is_a_usage_error(seed: Any) -> None:
    raises_code(
        lambda: ppbind.PersonKey.from_seed(seed), BindingUsageError, "binding_argument_invalid"
    )


def test_the_root_builds_the_class_the_table_names() -> None:
    assert type(BindingError("binding_over_limit", "x")) is BindingProtocolError
    assert type(BindingError("schema_unknown", "x")) is BindingUsageError
    error = BindingError("binding_wrong_key", "the decision was not hers", link="decision")
    assert error.to_json() == {
        "code": "binding_wrong_key",
        "link": "decision",
        "message": "the decision was not hers",
    }
    assert error.stage == "decision"


JUNK = [None, 7, -1, 2**70, 1.5, "x", "", b"x", [], {}, {"a": 1}, [1], True]


CALLS = [
    (module, name)
    for module in (ppbind, ppbind.demo)
    for name in module.__all__
    if callable(getattr(module, name))
    and not name.startswith("Binding")
    and name not in ("demo_errand", "BikeShop")  # whole runs: their arguments are tested above
]


@pytest.mark.parametrize(("module", "name"), CALLS, ids=[n for _, n in CALLS])
def test_every_public_call_refuses_junk_with_its_own_error(module: Any, name: str) -> None:
    """Any argument of any shape: a result or a BindingError, never another exception."""
    call = getattr(module, name)
    params = [
        p
        for p in inspect.signature(call).parameters.values()
        if p.default is inspect.Parameter.empty and p.kind is not p.VAR_POSITIONAL
    ]
    for junk in JUNK:
        positional = [junk for p in params if p.kind is not p.KEYWORD_ONLY]
        named = {p.name: junk for p in params if p.kind is p.KEYWORD_ONLY}
        with contextlib.suppress(BindingError):
            call(*positional, **named)
