"""The chain rules of VXP Proof as one fold over statements (pure: no keys, no I/O).

:func:`step` takes the state after statements ``0..n-1`` and statement ``n`` (its kind,
signer, processed body and the time the log recorded it) and returns the next state, or
raises :class:`VxpError` ``rule_violation`` (``reason`` names the rule). The issuer-side
builder runs it before signing; the verifier runs it over a received chain. Both share
this one table of rules, so the issuer never signs what the verifier refuses.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ._codec import DIGEST_PATTERN
from ._time import aware
from .errors import VxpError

__all__ = [
    "FINAL_STATES",
    "KIND_SIGNER",
    "ChainState",
    "Terms",
    "format_time",
    "parse_time",
    "step",
]

KIND_SIGNER: Mapping[str, str] = MappingProxyType(
    {
        "request": "operator",
        "terms": "company",
        "counter": "operator",
        "user_approval": "operator",
        "company_review": "company",
        "execution": "operator",
        "read_back": "operator",
        "outcome": "company",
        "correction": "company",
        "revocation": "company",
    }
)
"""Each statement kind and the role whose key signs it (the draft's table; read-only: the
builder and the verifier share it, so no caller may change it)."""

FINAL_STATES = ("succeeded", "failed", "cancelled", "expired", "unknown")
"""The states an ``outcome`` (or a ``correction``) can assert."""

APPROVAL_METHODS = ("agent_asserted", "user_signed")
_HASH = re.compile("sha-256:" + DIGEST_PATTERN)  # the canonical text only, as decode_hash
_TIME_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z")


def _parse_time_ms(value: object) -> datetime | None:
    """:func:`parse_time` of the common millisecond form, or ``None`` for anything else
    (then :func:`parse_time` decides, and names the fault)."""
    if type(value) is str and _TIME_MS.fullmatch(value) is not None:
        # fromisoformat reads it as written (Z = UTC)
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None  # not a real calendar time
    return None


def parse_time(value: object, where: str) -> datetime:
    """Parse an RFC 3339 UTC time ``YYYY-MM-DDThh:mm:ss[.fff]Z`` (``Z`` required)."""
    found = _parse_time_ms(value)
    if found is not None:
        return found
    if not isinstance(value, str) or _TIME.fullmatch(value) is None:
        raise VxpError("statement_malformed", f"{where} is not an RFC 3339 UTC time", reason="time")
    text = value[:-1]
    if "." in text:
        head, frac = text.split(".")
        text = head + "." + (frac + "000000")[:6]
    try:
        return datetime.fromisoformat(text).replace(tzinfo=UTC)
    except ValueError as exc:
        raise VxpError(
            "statement_malformed", f"{where} is not a real calendar time", reason="time"
        ) from exc


def format_time(when: datetime, where: str = "the time") -> str:
    """Return ``when`` (aware) as RFC 3339 UTC with milliseconds, as the draft writes times;
    a naive or non-datetime ``when`` is a usage error naming ``where``."""
    utc = aware(when, where)  # (in UTC; strftime would write year 1 as "1", not "0001")
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


@dataclass(frozen=True)
class Terms:
    """One terms revision as the chain recorded it."""

    seq: int
    revision: int
    terms_digest: str
    capability: str
    expires_at: datetime
    read_back_terms: tuple[str, ...]
    user_approval_required: bool
    company_review_required: bool


@dataclass(frozen=True)
class ChainState:
    """What the statements so far establish (the fold's accumulator)."""

    count: int = 0
    request: Mapping[str, Any] | None = None
    terms: Terms | None = None
    """The latest terms revision (earlier revisions are superseded)."""
    approval: Mapping[str, Any] | None = None
    approval_revision: int | None = None
    review: Mapping[str, Any] | None = None
    review_revision: int | None = None
    execution: Mapping[str, Any] | None = None
    execution_revision: int | None = None
    read_back: Mapping[str, Any] | None = None
    read_back_complete: bool = False
    outcome: Mapping[str, Any] | None = None
    outcome_seq: int | None = None
    asserted_state: str | None = None
    assertion_seqs: tuple[int, ...] = ()
    revoked: bool = False
    last_time: datetime | None = None

    @property
    def latest(self) -> Terms | None:
        """The latest terms revision, if any."""
        return self.terms

    @property
    def final_state(self) -> str | None:
        """What the company asserts now: the outcome, corrected, or ``revoked``."""
        return "revoked" if self.revoked else self.asserted_state


def _rule(reason: str, message: str) -> VxpError:
    return VxpError("rule_violation", message, reason=reason)


def _bad(kind: str, message: str) -> VxpError:
    return VxpError("statement_malformed", f"the {kind} body {message}", reason="body")


class _Shape:
    """The exact member names of a body: in order (for messages) and as a set (to check)."""

    __slots__ = ("names", "set")

    def __init__(self, *names: str) -> None:
        self.names = names
        self.set = frozenset(names)


def _fields(body: object, kind: str, shape: _Shape) -> None:
    if not isinstance(body, dict):
        raise _bad(kind, "is not a JSON object")
    if body.keys() == shape.set:
        return  # exactly the required members
    missing = [k for k in shape.names if k not in body]
    if missing:
        raise _bad(kind, f"lacks {', '.join(missing)}")
    extra = sorted(set(body) - shape.set)
    raise _bad(kind, f"has unknown members {', '.join(extra)}")


_REQUEST = _Shape("channel", "client_id", "request_digest")
_TERMS = _Shape(
    "capability",
    "commitment",
    "company_review_required",
    "expires_at",
    "read_back_terms",
    "revision",
    "terms_digest",
    "user_approval_required",
)
_COMMITMENT = frozenset({"mode", "requires"})
_COUNTER = _Shape("counter_digest", "revision")
_USER_SIGNED = _Shape("method", "revision", "terms_digest", "user_key", "user_signature")
_AGENT_ASSERTED = _Shape("method", "revision", "terms_digest")
_REVIEW = _Shape("decision", "revision", "reviewer_digest", "terms_digest")
_EXECUTION = _Shape("attempt", "capability", "release", "revision", "terms_digest")
_READ_BACK = _Shape("matches_terms", "method", "observed", "source")
_OUTCOME = _Shape(
    "claimed_assurance", "result_summary_digest", "revision", "state", "terms_digest", "third_party"
)
_CORRECTION = _Shape("corrects", "fact_digest", "revision", "state", "terms_digest")
_REVOCATION = _Shape("reason_digest", "revokes")


def _str(body: Mapping[str, Any], name: str, kind: str) -> str:
    value = body[name]
    if not isinstance(value, str) or not value:
        raise _bad(kind, f"member {name} is not a non-empty string")
    return value


def _hash(body: Mapping[str, Any], name: str, kind: str) -> str:
    value = body[name]
    if not isinstance(value, str) or _HASH.fullmatch(value) is None:
        raise _bad(kind, f"member {name} is not a sha-256: digest")
    return value


def _int(body: Mapping[str, Any], name: str, kind: str, minimum: int = 0) -> int:
    value = body[name]
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value < 2**53:
        raise _bad(kind, f"member {name} is not an integer >= {minimum}")
    return value


def _bool(body: Mapping[str, Any], name: str, kind: str) -> bool:
    value = body[name]
    if not isinstance(value, bool):
        raise _bad(kind, f"member {name} is not a boolean")
    return value


def _enum(body: Mapping[str, Any], name: str, kind: str, allowed: Sequence[str]) -> str:
    value = body[name]
    if value not in allowed:
        raise _bad(kind, f"member {name} is not one of {', '.join(allowed)}")
    return str(value)


def _strings(value: object, kind: str, name: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _bad(kind, f"member {name} is not a list of non-empty strings")
    for v in value:  # (a loop: all() over a generator costs more for a few items)
        if not isinstance(v, str) or not v:
            raise _bad(kind, f"member {name} is not a list of non-empty strings")
    if len(set(value)) != len(value):
        raise _bad(kind, f"member {name} repeats an entry")
    return tuple(value)


def _cites_latest(state: ChainState, body: Mapping[str, Any], kind: str) -> Terms:
    """P1: the statement cites the latest revision and its exact terms digest."""
    latest = state.terms
    if latest is None:
        raise _rule("terms_missing", f"a {kind} needs terms before it")
    revision = _int(body, "revision", kind, 1)
    digest = _hash(body, "terms_digest", kind)
    if revision != latest.revision:
        raise _rule(
            "not_latest_revision",
            f"the {kind} cites revision {revision}, not the latest revision {latest.revision}",
        )
    if digest != latest.terms_digest:
        raise _rule(
            "p1_terms_digest",
            f"the {kind} cites a terms_digest other than revision {revision}'s (P1)",
        )
    return latest


def _check_request(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    _fields(body, "request", _REQUEST)
    _str(body, "channel", "request")
    _str(body, "client_id", "request")
    _hash(body, "request_digest", "request")
    return {"request": body}


def _check_terms(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "terms"
    _fields(body, kind, _TERMS)
    capability = _str(body, "capability", kind)
    commitment = body["commitment"]
    if not isinstance(commitment, dict) or commitment.keys() != _COMMITMENT:
        raise _bad(kind, "member commitment is not {mode, requires}")
    _enum(commitment, "mode", kind, ("firm", "conditional"))
    requires = _strings(commitment["requires"], kind, "commitment.requires")
    if commitment["mode"] == "firm" and requires:
        raise _bad(kind, "member commitment is firm but lists conditions")
    if commitment["mode"] == "conditional" and not requires:
        raise _bad(kind, "member commitment is conditional but lists no condition")
    expires = parse_time(body["expires_at"], "the terms expires_at")
    read_back = _strings(body["read_back_terms"], kind, "read_back_terms")
    revision = _int(body, "revision", kind, 1)
    digest = _hash(body, "terms_digest", kind)
    approval_required = _bool(body, "user_approval_required", kind)
    review_required = _bool(body, "company_review_required", kind)
    if state.execution is not None:
        raise _rule("terms_after_execution", "terms cannot change after the execution")
    before = state.terms
    expected = 1 if before is None else before.revision + 1
    if revision != expected:
        raise _rule("revision_not_increasing", f"terms revision {revision} follows, not {expected}")
    if before is not None and capability != before.capability:
        raise _rule("capability_changed", "a terms revision changes the capability")
    if before is not None and (
        (before.user_approval_required and not approval_required)
        or (before.company_review_required and not review_required)
    ):
        # Otherwise a revision issued after the user's approval could drop the approval
        # (or review) it required and be executed unapproved: requirements only tighten.
        raise _rule(
            "requirement_relaxed",
            "a terms revision drops the user approval or company review that an earlier "
            "revision required",
        )
    if expires <= at:
        raise _rule("terms_expired_when_issued", "the terms expire before they were logged")
    terms = Terms(
        seq=seq,
        revision=revision,
        terms_digest=digest,
        capability=capability,
        expires_at=expires,
        read_back_terms=read_back,
        user_approval_required=approval_required,
        company_review_required=review_required,
    )
    return {
        "terms": terms,
        "approval": None,
        "approval_revision": None,
        "review": None,
        "review_revision": None,
    }


def _check_counter(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    _fields(body, "counter", _COUNTER)
    _hash(body, "counter_digest", "counter")
    if state.execution is not None:
        raise _rule("counter_after_execution", "a counter-proposal cannot follow the execution")
    latest = state.terms
    if latest is None:
        raise _rule("terms_missing", "a counter needs terms before it")
    if _int(body, "revision", "counter", 1) != latest.revision:
        raise _rule("not_latest_revision", "a counter answers the latest revision only")
    return {}


def _check_approval(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "user_approval"
    if not isinstance(body, dict):
        raise _bad(kind, "is not a JSON object")
    method = body.get("method")
    if method == "user_signed":
        _fields(body, kind, _USER_SIGNED)
        if not isinstance(body["user_key"], dict):
            raise _bad(kind, "member user_key is not a JWK object")
        _str(body, "user_signature", kind)
    else:
        _fields(body, kind, _AGENT_ASSERTED)
    _enum(body, "method", kind, APPROVAL_METHODS)
    if state.execution is not None:
        raise _rule("approval_after_execution", "an approval cannot follow the execution")
    latest = _cites_latest(state, body, kind)
    if state.approval_revision == latest.revision:
        raise _rule("approval_repeated", "the latest revision is already approved")
    if at >= latest.expires_at:
        raise _rule("terms_expired_at_approval", "the approved revision had expired")
    return {"approval": body, "approval_revision": latest.revision}


def _check_review(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "company_review"
    _fields(body, kind, _REVIEW)
    _enum(body, "decision", kind, ("approved", "rejected"))
    _hash(body, "reviewer_digest", kind)
    if state.execution is not None:
        raise _rule("review_after_execution", "a company review cannot follow the execution")
    latest = _cites_latest(state, body, kind)
    if state.review_revision == latest.revision:
        raise _rule("review_repeated", "the latest revision is already reviewed")
    return {"review": body, "review_revision": latest.revision}


def _check_execution(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "execution"
    _fields(body, kind, _EXECUTION)
    _hash(body, "release", kind)
    capability = _str(body, "capability", kind)
    attempt = _int(body, "attempt", kind, 1)
    if state.execution is not None:
        raise _rule("p2_second_execution", "an operation has a single execution (P2)")
    if attempt != 1:
        raise _rule("p2_attempt", "the single execution is attempt 1 (P2)")
    latest = _cites_latest(state, body, kind)
    if capability != latest.capability:
        raise _rule("capability_mismatch", "the execution runs another capability than the terms")
    if latest.user_approval_required and state.approval_revision != latest.revision:
        raise _rule("approval_missing", "the terms require a user approval before execution")
    if latest.company_review_required:
        if state.review_revision != latest.revision:
            raise _rule("review_missing", "the terms require a company review before execution")
        assert state.review is not None
        if state.review["decision"] != "approved":
            raise _rule("review_rejected", "the company review rejected this revision")
    if at >= latest.expires_at:
        raise _rule("terms_expired_at_execution", "the executed revision had expired")
    return {"execution": body, "execution_revision": latest.revision}


def _check_read_back(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "read_back"
    _fields(body, kind, _READ_BACK)
    matches = _bool(body, "matches_terms", kind)
    _enum(body, "method", kind, ("system_read_back",))
    _enum(body, "source", kind, ("company_system",))
    observed = body["observed"]
    if not isinstance(observed, dict):
        raise _bad(kind, "member observed is not an object")
    if state.execution is None:
        raise _rule("read_back_before_execution", "a read-back needs the execution before it")
    if state.read_back is not None:
        raise _rule("read_back_repeated", "an operation has one read-back")
    latest = state.terms
    assert latest is not None
    missing = [t for t in latest.read_back_terms if t not in observed]
    complete = bool(latest.read_back_terms) and not missing
    # A withheld disclosure hides one member at most: a matching read-back may keep a term
    # out of sight only in a digest it signed, never more terms than it has digests.
    if matches and (not latest.read_back_terms or len(missing) > hidden):
        raise _rule(
            "read_back_incomplete", "a read-back that matches must show every read_back_terms term"
        )
    return {"read_back": body, "read_back_complete": complete}


def _state_supported(state: ChainState, asserted: str, kind: str) -> None:
    """The final-state rules, shared by the outcome and by corrections."""
    executed = state.execution is not None
    rb = state.read_back
    if rb is not None and rb["matches_terms"] is False and asserted != "unknown":
        raise _rule(
            "p5_contradiction",
            f"a read-back that contradicts the terms keeps the {kind} unknown (P5)",
        )
    if asserted == "succeeded":
        latest = state.terms
        assert latest is not None
        if not latest.read_back_terms:
            raise _rule(
                "p6_not_readable", "a capability that cannot be read back never succeeds (P6/O7)"
            )
        if not executed:
            raise _rule("succeeded_without_execution", "success needs the execution")
        if rb is None or rb["matches_terms"] is not True:
            raise _rule(
                "p6_no_read_back", "success needs a matching read-back of the system (P6/O7)"
            )
    elif asserted == "failed":
        if not executed:
            raise _rule("failed_without_execution", "failure needs an execution")
        if rb is not None and rb["matches_terms"] is True:
            raise _rule("failed_contradicts_read_back", "the read-back showed the approved effect")
    elif asserted in ("cancelled", "expired") and executed:
        raise _rule("executed_then_" + asserted, f"an executed operation is never {asserted}")


def _check_outcome(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "outcome"
    _fields(body, kind, _OUTCOME)
    _strings(body["claimed_assurance"], kind, "claimed_assurance")
    _hash(body, "result_summary_digest", kind)
    asserted = _enum(body, "state", kind, FINAL_STATES)
    if body["third_party"] != []:
        raise _bad(kind, "member third_party must be an empty list (no third party is defined)")
    if state.outcome is not None:
        raise _rule("outcome_repeated", "an operation has exactly one outcome")
    latest = _cites_latest(state, body, kind)
    _state_supported(state, asserted, kind)
    if asserted == "expired" and at < latest.expires_at:
        raise _rule("expired_too_early", "an outcome says expired before the terms expired")
    return {
        "outcome": body,
        "outcome_seq": seq,
        "asserted_state": asserted,
        "assertion_seqs": (seq,),
    }


def _check_correction(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "correction"
    _fields(body, kind, _CORRECTION)
    _hash(body, "fact_digest", kind)
    asserted = _enum(body, "state", kind, FINAL_STATES)
    corrects = _int(body, "corrects", kind)
    latest = _cites_latest(state, body, kind)
    if corrects != state.assertion_seqs[-1]:
        raise _rule(
            "correction_target", "a correction corrects the latest outcome or correction by seq"
        )
    if asserted == state.asserted_state:
        raise _rule("correction_no_change", "a correction changes the asserted state")
    _state_supported(state, asserted, kind)
    if asserted == "expired" and at < latest.expires_at:
        raise _rule("expired_too_early", "a correction says expired before the terms expired")
    return {"asserted_state": asserted, "assertion_seqs": (*state.assertion_seqs, seq)}


def _check_revocation(
    state: ChainState, body: Any, seq: int, at: datetime, hidden: int
) -> dict[str, Any]:
    kind = "revocation"
    _fields(body, kind, _REVOCATION)
    _hash(body, "reason_digest", kind)
    if _int(body, "revokes", kind) != state.outcome_seq:
        raise _rule("revocation_target", "a revocation names the outcome's seq")
    return {"revoked": True}


def step(
    state: ChainState,
    seq: int,
    kind: str,
    signer: str,
    body: Any,
    at: datetime,
    *,
    hidden: int = 0,
) -> ChainState:
    """Return the state after statement ``seq`` or raise ``rule_violation``/``statement_malformed``.

    ``at`` is when the log recorded the statement; times never run backwards. ``hidden``
    counts the selective disclosures of the body that the holder withheld: a read-back
    whose terms cannot all be seen is then accepted but never counts as complete.
    """
    if seq != state.count:
        raise VxpError(
            "chain_broken",
            f"statement {state.count} carries seq {seq}",
            reason="seq_not_contiguous",
        )
    expected_signer = KIND_SIGNER.get(kind) if isinstance(kind, str) else None
    if expected_signer is None:
        raise VxpError(
            "statement_malformed", f"statement {seq} has unknown kind {kind!r}", reason="kind"
        )
    if signer != expected_signer:
        raise VxpError(
            "chain_broken",
            f"statement {seq} ({kind}) names signer {signer!r}, not {expected_signer!r}",
            reason="signer_role",
        )
    if state.last_time is not None and at < state.last_time:
        raise _rule("time_backwards", f"statement {seq} was logged before statement {seq - 1}")
    if (seq == 0) != (kind == "request"):
        raise _rule("request_position", "the request is statement 0 and only statement 0")
    if state.revoked:
        raise _rule("after_revocation", "nothing follows a revocation")
    if state.outcome is not None and kind not in ("correction", "revocation"):
        raise _rule(
            "p4_after_final", f"after the outcome only corrections or revocations (P4): {kind}"
        )
    if state.outcome is None and kind in ("correction", "revocation"):
        raise _rule("p4_before_outcome", f"a {kind} needs the outcome before it (P4)")
    changes = _CHECKS[kind](state, body, seq, at, hidden)
    return _replace(state, seq + 1, at, changes)


_Check = Callable[[ChainState, Any, int, datetime, int], dict[str, Any]]
_CHECKS: dict[str, _Check] = {
    "request": _check_request,
    "terms": _check_terms,
    "counter": _check_counter,
    "user_approval": _check_approval,
    "company_review": _check_review,
    "execution": _check_execution,
    "read_back": _check_read_back,
    "outcome": _check_outcome,
    "correction": _check_correction,
    "revocation": _check_revocation,
}
"""Each kind's body and rule checks (the keys are exactly those of KIND_SIGNER)."""


def _replace(state: ChainState, count: int, at: datetime, changes: dict[str, Any]) -> ChainState:
    """The state after one statement: ``changes`` (fields of :class:`ChainState`, as the
    check functions above return them), ``count`` and ``last_time``."""
    return dataclasses.replace(state, **changes, count=count, last_time=at)
