"""Properties: any single-byte change to a statement invalidates the package; the verdict
never reports an assurance the evidence does not support."""

from __future__ import annotations

import copy
import os
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import vxp
from tests.vxp import demo_facts
from tests.vxp.demo_facts import CAPABILITY, T0
from vxp import demo_key, demo_operation


def _ex(n: int) -> int:
    """Examples per property; VXP_PROOF_FUZZ=k multiplies them for a long local run."""
    return n * int(os.environ.get("VXP_PROOF_FUZZ", "1"))


OPS = {v: demo_operation(v) for v in ("succeeded", "reviewed", "corrected", "witnessed")}
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"


@settings(max_examples=_ex(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(sorted(OPS)),
    which=st.integers(min_value=0, max_value=20),
    where=st.integers(min_value=0, max_value=10_000),
    char=st.sampled_from(_ALPHABET),
)
def test_any_single_character_change_of_any_statement_is_invalid(
    variant: str, which: int, where: int, char: str
) -> None:
    op = OPS[variant]
    package = copy.deepcopy(op.package)
    statements = package["statements"]
    i = which % len(statements)
    text = statements[i]
    j = where % len(text)
    if text[j] == char:
        return
    statements[i] = text[:j] + char + text[j + 1 :]
    verdict = vxp.verify(package, op.metadata, op.jwks, live=op.live, now=op.now)
    assert verdict.valid is False
    assert verdict.derived_assurance == ()


@settings(max_examples=_ex(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant=st.sampled_from(sorted(OPS)), data=st.data())
def test_any_byte_flip_in_the_decoded_payload_is_invalid(variant: str, data: Any) -> None:
    """Mutate a raw payload byte, re-encode it (keeping the signature): always refused."""
    import base64

    op = OPS[variant]
    package = copy.deepcopy(op.package)
    i = data.draw(st.integers(min_value=0, max_value=len(package["statements"]) - 1))
    jws, sep, rest = package["statements"][i].partition("~")
    h, p, s = jws.split(".")
    raw = bytearray(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    k = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[k] ^= data.draw(st.integers(min_value=1, max_value=255))
    p2 = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    package["statements"][i] = f"{h}.{p2}.{s}{sep}{rest}"
    verdict = vxp.verify(package, op.metadata, op.jwks, live=op.live, now=op.now)
    assert verdict.valid is False


# ------------------------------------------------------------ random operations


def _at(seconds: float) -> Any:
    return T0 + timedelta(seconds=seconds)


STEPS = (
    "counter",
    "terms",
    "approve",
    "approve_signed",
    "review_ok",
    "review_no",
    "execute",
    "read_back_ok",
    "read_back_bad",
    "read_back_hidden",
    "outcome",
    "correct",
    "revoke",
)
STATES = ("succeeded", "failed", "cancelled", "expired", "unknown")


def _run_step(b: vxp.OperationBuilder, name: str, state: str, t: float) -> None:
    now = _at(t)
    terms = {"capability": CAPABILITY, "pedido": "P-1", "despacho_nuevo": "d"}
    if name == "counter":
        b.counter(proposal={"t": t}, now=now)
    elif name == "terms":
        b.terms(
            capability=CAPABILITY,
            terms={**terms, "t": t},
            expires_at=_at(t + 100),
            read_back_terms=["pedido", "despacho_nuevo"] if int(t) % 3 else [],
            company_review_required=int(t) % 2 == 0,
            user_approval_required=int(t) % 5 != 0,
            now=now,
        )
    elif name == "approve":
        b.approve(now=now)
    elif name == "approve_signed":
        b.approve_signed(user_key=demo_key("user"), now=now)
    elif name in ("review_ok", "review_no"):
        b.review(decision="approved" if name == "review_ok" else "rejected", reviewer={}, now=now)
    elif name == "execute":
        b.execute(release={"t": t}, now=now)
    elif name == "read_back_ok":
        b.read_back(observed={"pedido": "P-1", "despacho_nuevo": "d"}, now=now)
    elif name == "read_back_bad":
        b.read_back(observed={"pedido": "P-2", "despacho_nuevo": "d"}, now=now)
    elif name == "read_back_hidden":
        b.read_back(observed={"pedido": "P-1"}, personal={"despacho_nuevo": "d"}, now=now)
    elif name == "outcome":
        b.outcome(state=state, result_summary={}, now=now)
    elif name == "correct":
        b.correct(state=state, fact={}, now=now)
    else:
        b.revoke(reason={}, now=now)


@settings(max_examples=_ex(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(
        st.tuples(st.sampled_from(STEPS), st.sampled_from(STATES), st.integers(1, 150)),
        min_size=1,
        max_size=12,
    ),
    withhold=st.booleans(),
)
def test_verdict_never_reports_unsupported_assurance(
    plan: list[tuple[str, str, int]], withhold: bool
) -> None:
    """Random walks through the builder: whatever it signs verifies, and every derived
    assurance is backed by the statements (checked from the builder's own record)."""
    b = vxp.OperationBuilder(
        company="https://store.example/e/ferreteria-demo",
        op_id="req_p",
        operator_key=demo_key("operator"),
        company_key=demo_key("company"),
        log=vxp.MerkleLog("store.example/e/ferreteria-demo/vxp-log"),
    )
    b.request(channel="vxp", client_id="c", request={}, now=_at(0))
    _run_step(b, "terms", "unknown", 0.1)
    t = 0.1
    for name, state, gap in plan:
        t += gap / 10
        try:
            _run_step(b, name, state, t)
        except vxp.VxpError as exc:
            refused = exc.code
        else:
            refused = "step_refused"
        assert refused == "step_refused"
    if b.state.outcome is None and b.state.latest is not None:
        b.outcome(state="unknown", result_summary={}, now=_at(t + 0.5))
    if b.state.outcome is None:
        return
    event("verified")
    base = demo_operation("succeeded")
    package = b.package(log_key=demo_key("log"))
    if withhold:
        package["statements"] = [s.split("~")[0] + "~" for s in package["statements"]]
    live = {**base.live, "checkpoint": package["log"]["checkpoint"]}
    verdict = vxp.verify(package, base.metadata, base.jwks, live=live, now=_at(t + 1))
    assert verdict.valid, verdict.failure
    s = b.state
    latest = s.latest
    assert latest is not None
    derived = set(verdict.derived_assurance)
    if "operator_observed" in derived:
        assert s.execution is not None
    if "operator_reported_read_back" in derived:
        assert s.read_back is not None
        assert s.read_back["matches_terms"] is True
        assert latest.read_back_terms
        assert not withhold or "pedido" in latest.read_back_terms
    if "operator_reported_agent_approval" in derived:
        assert s.approval_revision == latest.revision
        assert s.approval is not None
        assert s.approval["method"] == "agent_asserted"
    if "user_signed_approval" in derived:
        assert s.approval is not None
        assert s.approval["method"] == "user_signed"
    if "company_reviewed" in derived:
        assert s.review is not None
        assert s.review["decision"] == "approved"
        assert s.review_revision == latest.revision
    assert "witnessed_log" not in derived
    if s.final_state == "succeeded":
        assert "operator_observed" in derived


# ------------------------------------------------------------ one changed character


def _outcome(fn: Any) -> Any:
    try:
        st_ = fn()
    except vxp.VxpError as exc:
        return ("error", exc.code, exc.reason)
    return ("ok", st_.kind, st_.body, st_.kid, st_.hidden, st_.digest)


@settings(max_examples=_ex(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(sorted(OPS)),
    which=st.integers(min_value=0, max_value=20),
    where=st.integers(min_value=0, max_value=10_000),
    char=st.sampled_from(_ALPHABET + "é ~."),
)
def test_any_changed_character_of_a_statement_is_refused(
    variant: str, which: int, where: int, char: str
) -> None:
    op = OPS[variant]
    keys = vxp.IssuerKeys(vxp.trust.load_trust(op.metadata, op.jwks).keys.values())
    statements = op.package["statements"]
    original = statements[which % len(statements)]
    j = where % len(original)
    text = original[:j] + char + original[j + 1 :]
    got = _outcome(lambda: vxp.statements.verify_statement(text, keys, where="s"))
    if text == original:
        assert got[0] == "ok"
    else:
        assert got[0] == "error", (j, char)
        assert got[1] in ("statement_malformed", "key_untrusted", "signature_invalid")


# ------------------------------------------------------------ structural fuzzing

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _replace_at(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


@settings(max_examples=_ex(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.sampled_from(["package", "metadata", "jwks", "live"]), data=st.data())
def test_any_structural_change_fails_closed_without_python_errors(target: str, data: Any) -> None:
    op = OPS["witnessed"]
    docs = {"package": op.package, "metadata": op.metadata, "jwks": op.jwks, "live": op.live}
    original = docs[target]
    path = data.draw(st.sampled_from(_paths(original)))
    value = data.draw(_JSON)
    mutated = _replace_at(original, path, value)
    if mutated == original:
        return
    docs[target] = mutated
    verdict = vxp.verify(
        docs["package"], docs["metadata"], docs["jwks"], live=docs["live"], now=op.now
    )
    unsigned = path[:3] == ("log", "checkpoint", "cosignatures") or path == ("op", "id")
    if target == "package" and not unsigned:
        # Cosignatures are extra evidence (unknown witnesses are ignored; the live
        # checkpoint carries its own) and op.id is an unsigned routing hint (the caller
        # binds its request with verify(request=...)); any other change invalidates.
        assert verdict.valid is False
    if not verdict.valid:
        assert verdict.derived_assurance == ()
        assert verdict.failure is not None


_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))


def _personal_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        _json_leaf,
        lambda inner: st.one_of(
            st.lists(st.one_of(inner, inner.map(vxp.Sd)), max_size=3),
            st.dictionaries(
                st.text(min_size=1, max_size=3).filter(
                    lambda s: s not in ("_sd", "...", "_sd_alg")
                ),
                st.one_of(inner, inner.map(vxp.Sd)),
                max_size=3,
            ),
        ),
        max_leaves=6,
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    personal=st.dictionaries(
        st.sampled_from(["receptor", "nota", "pedido", "x"]), _personal_values(), max_size=3
    ),
    extra=st.dictionaries(st.sampled_from(["extra", "nota", "y"]), _personal_values(), max_size=2),
    show_dia=st.sampled_from(["2026-10-28", "2026-10-29", None]),
    final=st.sampled_from(["succeeded", "failed", "unknown", "none"]),
    approver=st.sampled_from(["agent", "user", "witness", "log", "operator", "company"]),
)
def test_every_package_the_builder_makes_verifies(
    personal: dict[str, Any],
    extra: dict[str, Any],
    show_dia: str | None,
    final: str,
    approver: str,
) -> None:
    """§6: whatever the builder signs and seals, the verifier accepts: read-backs whose
    observed members nest disclosable values anywhere, user-signed approvals by any key,
    the issuer's log and witness keys included (the builder refuses those at sealing)."""
    at = demo_facts.at
    builder = demo_facts.builder("property", approve=False)
    observed: dict[str, Any] = {"pedido": "P-1", **extra}
    if show_dia is not None:
        observed["dia"] = show_dia
    personal = {k: v for k, v in personal.items() if k not in observed}
    try:
        if approver == "agent":
            builder.approve(now=at(1))
        else:
            builder.approve_signed(user_key=demo_key(approver), now=at(1))
        builder.execute(release={"o": 1}, now=at(2))
        if final != "none":
            builder.read_back(observed=observed, personal=personal, now=at(3))
        state = "unknown" if final == "none" else final
        builder.outcome(state=state, result_summary={"s": state}, now=at(4))
        witness_time = int(at(5).timestamp())
        package = builder.package(
            log_key=demo_key("log"), witnesses=[(demo_key("witness"), witness_time)]
        )
    except vxp.VxpUsageError:
        return  # the builder refused to sign or seal: nothing was issued
    metadata, jwks = demo_facts.material(witness=True)
    verdict = vxp.verify(package, metadata, jwks, now=at(60))
    assert verdict.valid, verdict.failure
    assert verdict.logged
