"""The VXP Proof verifier: a package and the issuer's public material in, a :class:`Verdict` out.

A :class:`Verifier` is built once from an issuer's material (saved, and live when given)
and owned by the caller; :meth:`Verifier.verify` runs one pipeline, a function per stage,
in the order of the spec's §8, so that a later stage never masks an earlier one: package
shape, trust, parse, signatures (every statement's signature checked together, each key
listed for its kind's role), chain and rules, log (checkpoint, inclusion, witnesses and
their times, live consistency), key periods, operation summary, assurance. The first
failure ends the run with ``valid: false`` and its code. Nothing is kept anywhere but in
the ``Verifier`` object, and that is read-only once built.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

from . import _merkle
from ._chain import KIND_SIGNER, ChainState, parse_time, step
from ._checkpoint import SignedCheckpoint, verify_checkpoint, verify_cosignatures
from ._codec import canonical_json, decode_hash, encode_hash, plain_json, sha256
from ._keys import IssuerKeys, ResolvedKey, first_invalid
from ._metadata import KeyRecord, TrustMaterial, load_trust
from ._sdjwt import SdJwt
from ._statements import (
    HeaderMemo,
    ParsedStatement,
    check_user_approval,
    open_statement,
    read_statement,
    split_statement,
)
from ._time import aware
from ._verdict import Evidence, Verdict, derive_assurance
from .errors import VxpError

__all__ = ["MAX_STATEMENTS", "Verifier", "leaf_data", "verify"]

_START = ChainState()  # immutable, so one instance serves every verification
_PACKAGE_MEMBERS = frozenset({"v", "company", "op", "statements", "log"})
_ENTRY_MEMBERS = frozenset({"index", "logged_at", "proof"})
_OP_MEMBERS = frozenset({"id", "capability", "request_digest"})
_LOG_MEMBERS = frozenset({"checkpoint", "entries"})
_LIVE_LOG_MEMBERS = frozenset({"checkpoint", "consistency"})
_LIVE_MEMBERS = frozenset({"metadata", "jwks", "checkpoint", "consistency"})
MAX_LEEWAY = 2**32
"""Largest ``leeway`` in seconds (**Ours**)."""
MAX_STATEMENTS = 4096
"""Default largest number of statements in a package (**Ours**): every statement costs a
signature check before the chain can fail, so an unbounded package is unbounded work. A
caller may pass ``max_statements`` up to :data:`STATEMENTS_LIMIT`."""
STATEMENTS_LIMIT = 2**20
"""Largest ``max_statements`` a caller may ask for (**Ours**)."""

_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*")


def leaf_data(statement_digest: str, logged_at: str) -> bytes:
    """Return the log entry of one statement: ``JCS({"logged_at", "statement"})``.

    Both come from a package, so anything but two strings is ``package_malformed``.
    """
    if not isinstance(statement_digest, str) or not isinstance(logged_at, str):
        raise _malformed("a log entry needs a statement digest and a logged_at string", "log")
    if _PLAIN.fullmatch(logged_at) and _PLAIN.fullmatch(statement_digest):
        # nothing to escape: exactly what JCS writes, members in code-point order
        return f'{{"logged_at":"{logged_at}","statement":"{statement_digest}"}}'.encode()
    return canonical_json({"logged_at": logged_at, "statement": statement_digest})


def _digest(value: object) -> str:
    return encode_hash(sha256(canonical_json(value, "the request")))


def _malformed(message: str, reason: str) -> VxpError:
    return VxpError("package_malformed", message, reason=reason)


def _log_error(message: str, reason: str) -> VxpError:
    return VxpError("log_invalid", message, reason=reason)


# ---------------------------------------------------------------------------- the material

KeyPeriods = dict[tuple[str, str], tuple[str, list[list[KeyRecord]]]]


def _key_periods(saved: TrustMaterial, live: TrustMaterial | None) -> KeyPeriods:
    """For each ``(kid, role)`` a statement may be signed with: the source that vouches for
    it and the groups of records of which one each must cover the statement's time."""
    out: KeyPeriods = {}
    if live is not None:
        for kid in {r.kid for r in live.records}:
            records = live.records_for(kid)
            for role in {r.role for r in records}:
                mine = [r for r in records if r.role == role]
                saved_mine = [r for r in saved.records_for(kid) if r.role == role]
                # Live metadata lists the key for this role, so its period must cover the
                # statement, even when the live JWKS no longer carries the key (the kid is
                # the key's thumbprint: saved key bytes are the same key). Where saved
                # metadata also lists it for the role, its period must cover too: live
                # never re-validates a key that saved metadata recorded as retired.
                groups = [mine, saved_mine] if saved_mine else [mine]
                out[(kid, role)] = ("issuer_metadata_live", groups)
        listed_live = {r.kid for r in live.records}
        for r in saved.records:  # a key live lists nowhere still counts as saved lists it
            if r.kid not in listed_live and r.kid in saved.keys:
                entry = out.setdefault((r.kid, r.role), ("issuer_metadata_saved", [[]]))
                entry[1][0].append(r)
        return out
    for r in saved.records:
        if r.kid in saved.keys:
            entry = out.setdefault((r.kid, r.role), ("issuer_metadata_saved", [[]]))
            entry[1][0].append(r)
    return out


def _listed_roles(saved: TrustMaterial, live: TrustMaterial | None) -> dict[str, frozenset[str]]:
    """The roles each kid is listed for, by the first material (live, then saved) that
    lists it at all."""
    out: dict[str, frozenset[str]] = {}
    for trust in (live, saved):
        if trust is None:
            continue
        for r in trust.records:
            if r.kid not in out:
                out[r.kid] = frozenset(x.role for x in trust.records_for(r.kid))
    return out


def _independent_witnesses(saved: TrustMaterial, live: TrustMaterial) -> None:
    """Refuse live material whose witnesses (or saved witnesses) are the other material's
    signing or log keys: the issuer cannot witness itself into ``logged`` by moving a key
    from one list to the other between the saved and the live document (**Ours**)."""
    issuer = {saved.log_kid, live.log_kid} | {r.kid for r in (*saved.records, *live.records)}
    if issuer & (set(saved.witness_kids) | set(live.witness_kids)):
        raise VxpError(
            "live_invalid",
            "a witness of the saved or live metadata is a log or signing key of the other",
            reason="witness_not_independent",
        )


@dataclass(frozen=True)
class _Material:
    """What every verification against one issuer's material needs, derived once."""

    saved: TrustMaterial
    live: TrustMaterial | None
    signing: IssuerKeys
    """The keys a statement may be signed with (listed for a role, present in a JWKS)."""
    issuer_kids: frozenset[str]
    """Every kid the saved or live material knows: JWKS keys, signing, log and witness kids."""
    roles: Mapping[str, frozenset[str]]
    periods: KeyPeriods
    witness_keys: tuple[ResolvedKey, ...]
    """The witnesses both materials recognise (saved alone when there is no live)."""
    quorum: int
    """The larger of the saved and live quorums."""

    @classmethod
    def of(cls, saved: TrustMaterial, live: TrustMaterial | None) -> _Material:
        if live is not None and live.issuer != saved.issuer:
            raise VxpError(
                "live_invalid", "the live metadata names another issuer", reason="issuer_changed"
            )
        all_keys: dict[str, ResolvedKey] = dict(saved.keys)
        signing = {r.kid for r in saved.records}
        known = {saved.log_kid, *saved.witness_kids}
        witnesses = list(saved.witness_kids)
        quorum = saved.quorum
        if live is not None:
            _independent_witnesses(saved, live)
            all_keys.update(live.keys)
            signing |= {r.kid for r in live.records}
            known |= {live.log_kid, *live.witness_kids}
            # the stricter of saved and live, as for key periods: a witness counts only
            # when both recognise it, and the larger quorum holds
            witnesses = [k for k in witnesses if k in live.witness_kids]
            quorum = max(quorum, live.quorum)
        return cls(
            saved=saved,
            live=live,
            signing=IssuerKeys([all_keys[k] for k in sorted(signing) if k in all_keys]),
            issuer_kids=frozenset(all_keys) | frozenset(signing) | frozenset(known),
            roles=MappingProxyType(_listed_roles(saved, live)),
            periods=_key_periods(saved, live),
            witness_keys=tuple(all_keys[k] for k in witnesses if k in all_keys),
            quorum=quorum,
        )

    @property
    def log_trust(self) -> TrustMaterial:
        """The material that names the log (origin and key: live when given)."""
        return self.live or self.saved


# ---------------------------------------------------------------------------- stages


def _check_package(
    package: object, max_statements: int
) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """Stage 1: the package's shape (of a plain copy of it, made once: see
    :func:`vxp._codec.plain_json`)."""
    if isinstance(package, dict):
        package = plain_json(package, _TOO_DEEP)
    if not isinstance(package, dict):
        raise _malformed("the package is not a JSON object", "not_object")
    if package.keys() != _PACKAGE_MEMBERS:
        raise _malformed("the package must hold exactly v, company, op, statements, log", "members")
    if type(package["v"]) is not int or package["v"] != 1:
        raise _malformed("the package is not version 1", "version")
    if not isinstance(package["company"], str):
        raise _malformed("the package company is not a string", "company")
    op = package["op"]
    if not isinstance(op, dict) or op.keys() != _OP_MEMBERS:
        raise _malformed("the package op is not {id, capability, request_digest}", "op")
    if not all(isinstance(op[k], str) and op[k] for k in op):
        raise _malformed("the package op members are not non-empty strings", "op")
    statements = package["statements"]
    if not isinstance(statements, list) or not statements:
        raise _malformed("the package statements are not a non-empty list", "statements")
    if len(statements) > max_statements:
        raise _malformed(
            f"the package has more than {max_statements} statements", "too_many_statements"
        )
    log = package["log"]
    if not isinstance(log, dict) or log.keys() != _LOG_MEMBERS:
        raise _malformed("the package log is not {checkpoint, entries}", "log")
    entries = log["entries"]
    if not isinstance(entries, list) or len(entries) != len(statements):
        raise _malformed("the package log has not one entry per statement", "log_entries")
    return package, statements, log


_TOO_DEEP = VxpError("package_malformed", "the package nests too deeply", reason="depth")
_TOO_DEEP_LIVE = VxpError("live_invalid", "the live log nests too deeply", reason="shape")


def _check_trust(package: dict[str, Any], material: _Material, live_log: object) -> None:
    """Stage 2 (what the package adds to it): the company, and the live log's shape."""
    if live_log is not None and (
        not isinstance(live_log, Mapping) or set(live_log) != _LIVE_LOG_MEMBERS
    ):
        raise VxpError("live_invalid", "the live log is {checkpoint, consistency}", reason="shape")
    if package["company"] != material.saved.issuer:
        raise VxpError(
            "company_mismatch", "the package names another company than the metadata's issuer"
        )


Entry = tuple[int, str, list[bytes]]


def _entry(value: object, index: int) -> Entry:
    if not isinstance(value, dict) or value.keys() != _ENTRY_MEMBERS:
        raise _malformed(f"log entry {index} is not {{index, logged_at, proof}}", "log_entries")
    leaf_index, logged_at, proof = value["index"], value["logged_at"], value["proof"]
    if not isinstance(leaf_index, int) or isinstance(leaf_index, bool) or leaf_index < 0:
        raise _malformed(f"log entry {index} has no leaf index", "log_entries")
    if not isinstance(logged_at, str) or not isinstance(proof, list) or len(proof) > 64:
        raise _malformed(f"log entry {index} has no logged_at or proof list", "log_entries")
    try:
        hashes = [decode_hash(h, f"log entry {index} proof") for h in proof]
    except VxpError as exc:
        raise _malformed(exc.message, "log_entries") from exc
    return leaf_index, logged_at, hashes


def _parse(
    raw_statements: list[Any], raw_entries: list[Any]
) -> tuple[list[SdJwt], list[Entry], list[datetime]]:
    """Stage 3: every statement split, every log entry and its time parsed (no crypto)."""
    tokens = [split_statement(raw, f"statement {i}") for i, raw in enumerate(raw_statements)]
    entries = [_entry(e, i) for i, e in enumerate(raw_entries)]
    times = [parse_time(e[1], f"log entry {i} logged_at") for i, e in enumerate(entries)]
    return tokens, entries, times


def _first_forged(checks: list[tuple[ResolvedKey, bytes, bytes]]) -> None:
    """Raise ``signature_invalid`` for the first of ``checks`` that does not verify."""
    i = first_invalid(checks)  # one tight loop, stopping at the first forgery
    if i is not None:
        raise VxpError(
            "signature_invalid",
            f"statement {i}: the issuer signature does not verify",
            reason="signature_invalid",
        )


def _signatures(tokens: list[SdJwt], material: _Material, now: float) -> list[ParsedStatement]:
    """Stage 4: each statement's header and key, its signature, its content (RFC 9901
    processing and VXP's shape) and its key listed for its kind's role.

    The signatures are checked together, but the failure reported is the one a statement
    by statement run reports: the first statement that fails, and within it the header
    and key before the signature before the content."""
    checks: list[tuple[ResolvedKey, bytes, bytes]] = []
    parsed: list[ParsedStatement] = []
    headers: HeaderMemo = {}  # this package's few header texts, each checked once
    for i, token in enumerate(tokens):
        where = f"statement {i}"
        try:
            opened = open_statement(token, material.signing, where, headers)
        except VxpError:
            _first_forged(checks)  # an earlier statement's forged signature comes first
            raise
        checks.append(opened.signature_check)
        try:
            st = read_statement(opened, where, now)
            _role(st, i, material)
        except VxpError:
            _first_forged(checks)  # this statement's (or an earlier one's) signature first
            raise
        parsed.append(st)
    _first_forged(checks)
    return parsed


def _role(st: ParsedStatement, i: int, material: _Material) -> None:
    """The statement's kind is known and its key is listed for that kind's role."""
    role = KIND_SIGNER.get(st.kind)
    if role is None:
        raise VxpError(
            "statement_malformed", f"statement {i} has unknown kind {st.kind!r}", reason="kind"
        )
    roles = material.roles.get(st.kid)
    if roles is None:  # pragma: no cover - only listed keys are signing keys
        raise VxpError(
            "key_untrusted", f"statement {i} is signed by an unlisted key", reason="key_unknown"
        )
    if role not in roles:
        raise VxpError(
            "key_untrusted",
            f"statement {st.seq} ({st.kind}) is signed by a key listed for another role",
            reason="key_role",
        )


def _chain(parsed: list[ParsedStatement], times: list[datetime], material: _Material) -> ChainState:
    """Stage 5: ``prev``, then the chain rules (the table shared with the builder), user
    signatures, and the outcome present."""
    state = _START
    prev: str | None = None
    for i, st in enumerate(parsed):
        if st.prev != prev:
            raise VxpError(
                "chain_broken",
                f"statement {i} does not name the digest of statement {i - 1} as prev",
                reason="prev_mismatch",
            )
        state = step(state, st.seq, st.kind, st.signer, st.body, times[i], hidden=st.hidden)
        if st.kind == "user_approval" and st.body.get("method") == "user_signed":
            assert state.request is not None
            assert state.latest is not None
            user_kid = check_user_approval(
                st.body,
                state.request["request_digest"],
                parsed[state.latest.seq].digest,
                f"statement {i}",
            )
            if user_kid in material.issuer_kids:
                # The issuer's own key (signing, log or witness) signing as "the user" is
                # the operator approving for itself: never user_signed_approval.
                raise VxpError(
                    "rule_violation",
                    f"statement {i} is a user-signed approval by one of the issuer's keys",
                    reason="user_key_is_issuer_key",
                )
        prev = st.digest
    if state.outcome is None:
        raise VxpError(
            "rule_violation", "the package has no outcome (P3)", reason="outcome_missing"
        )
    return state


def _checkpoint(value: object, trust: TrustMaterial, where: str) -> SignedCheckpoint:
    try:
        signed = SignedCheckpoint.from_json(value)
        log_key = trust.keys.get(trust.log_kid)
        if log_key is None:
            raise VxpError("checkpoint_key_mismatch", "the log key is not in the JWKS")
        verify_checkpoint(signed, log_key, origin=trust.log_origin)
    except VxpError as exc:
        raise _log_error(f"{where}: {exc.message}", exc.code) from exc
    return signed


def _witnesses(
    signed: SignedCheckpoint,
    witness_keys: tuple[ResolvedKey, ...],
    seen: set[str],
    last_logged: datetime,
    now: datetime,
    leeway: int,
) -> None:
    """Add the trusted witnesses whose cosignature on ``signed`` verifies; a bad one fails.

    **Ours** (the draft gives a cosignature a time and says nothing of it): a cosignature
    vouches for the statements its checkpoint holds only if it was made after they were
    logged (at second precision: ``time`` is whole seconds), and never after ``now``
    plus ``leeway``; otherwise the package fails with ``log_invalid/witness_time``."""
    if not signed.cosignatures:
        return
    try:
        good = verify_cosignatures(signed, list(witness_keys), quorum=0)
    except VxpError as exc:
        raise _log_error(f"a witness cosignature fails: {exc.message}", exc.code) from exc
    earliest = math.floor(last_logged.timestamp())
    latest = now.timestamp() + leeway
    for cosig in signed.cosignatures:
        if cosig.kid not in good:
            continue
        if cosig.time < earliest:
            raise _log_error(
                f"witness {cosig.kid} cosigned the checkpoint before its statements were logged",
                "witness_time",
            )
        if cosig.time > latest:
            raise _log_error(
                f"witness {cosig.kid} cosigned the checkpoint after the verification time",
                "witness_time",
            )
    seen.update(good)


@dataclass(frozen=True)
class _LogResult:
    tree_size: int
    live_tree_size: int | None
    consistency: str
    witnesses: int


def _log(
    parsed: list[ParsedStatement],
    entries: list[Entry],
    times: list[datetime],
    checkpoint: object,
    live_log: Mapping[str, Any] | None,
    material: _Material,
    now: datetime,
    leeway: int,
) -> _LogResult:
    """Stage 6: the packaged checkpoint, every statement's inclusion at its leaf, the
    witnesses and their times, and the live checkpoint's consistency when given."""
    trust = material.log_trust
    signed = _checkpoint(checkpoint, trust, "the packaged checkpoint")
    size, root = signed.checkpoint.tree_size, signed.checkpoint.root
    indexes: set[int] = set()
    last_index = -1
    for i, st in enumerate(parsed):
        leaf_index, logged_at, proof = entries[i]
        if times[i] > now:
            raise _log_error(
                f"statement {i} was logged after the verification time", "logged_in_future"
            )
        if leaf_index in indexes:
            raise _log_error(f"two statements claim leaf {leaf_index}", "leaf_reused")
        indexes.add(leaf_index)
        leaf = _merkle.leaf_hash(leaf_data(st.digest, logged_at))
        try:
            # _entry decoded every proof hash to 32 bytes, the leaf hash and root are ours
            _merkle.included(leaf, leaf_index, size, proof, root, checked=True)
        except VxpError as exc:
            raise _log_error(
                f"statement {i} is not included in the packaged checkpoint ({exc.message})",
                "inclusion",
            ) from exc
        if leaf_index < last_index:
            # The log's order is the witnessed timeline: a statement is appended after the
            # one it chains to, so leaf indexes increase with seq.
            raise _log_error(
                f"statement {i} sits in the log before statement {i - 1}", "leaf_order"
            )
        last_index = leaf_index
    last_logged = max(times)
    seen: set[str] = set()
    _witnesses(signed, material.witness_keys, seen, last_logged, now, leeway)
    if live_log is None:
        return _LogResult(size, None, "not_checked", len(seen))
    fresh = _checkpoint(live_log["checkpoint"], trust, "the live checkpoint")
    proof_raw = live_log["consistency"]
    if not isinstance(proof_raw, list):
        raise VxpError("live_invalid", "the live consistency proof is not a list", reason="shape")
    try:
        cproof = [decode_hash(h, "live consistency proof") for h in proof_raw]
        _merkle.verify_consistency(
            size, fresh.checkpoint.tree_size, root, fresh.checkpoint.root, cproof
        )
    except VxpError as exc:
        raise VxpError(
            "live_inconsistent",
            f"the live log does not extend the packaged checkpoint ({exc.message})",
            reason=exc.code,
        ) from exc
    _witnesses(fresh, material.witness_keys, seen, last_logged, now, leeway)
    return _LogResult(size, fresh.checkpoint.tree_size, "ok", len(seen))


def _key_source(st: ParsedStatement, at: datetime, material: _Material) -> str:
    """Which material vouches for the statement's key when it was logged, or raise
    ``key_untrusted``."""
    role = KIND_SIGNER[st.kind]
    found = material.periods.get((st.kid, role))
    where = f"statement {st.seq} ({st.kind})"
    if found is None:
        raise VxpError(
            "key_untrusted", f"{where} is signed by an unpublished key", reason="key_unknown"
        )
    source, groups = found
    for group in groups:
        if not any(r.covers(at) for r in group):
            raise VxpError(
                "key_untrusted",
                f"{where} was logged outside its key's validity period",
                reason="key_not_valid_at_time",
            )
    return source


def _keys(parsed: list[ParsedStatement], times: list[datetime], material: _Material) -> set[str]:
    """Stage 7: each key valid for its role when the log recorded its statement."""
    return {_key_source(st, times[i], material) for i, st in enumerate(parsed)}


def _operation(
    op: Mapping[str, Any], state: ChainState, request_id: str | None, request: object
) -> None:
    """Stage 8: the package's ``op`` describes the signed chain (and the caller's request)."""
    assert state.latest is not None
    assert state.request is not None
    if (
        op["capability"] != state.latest.capability
        or op["request_digest"] != state.request["request_digest"]
        or (request_id is not None and op["id"] != request_id)
        or (request is not None and _digest(request) != state.request["request_digest"])
    ):
        raise VxpError("operation_mismatch", "the package op does not describe the signed chain")


def _assurance(
    state: ChainState, parsed: list[ParsedStatement], logged: bool
) -> tuple[tuple[str, ...], str]:
    """Stage 9: the assurance the evidence supports (P7), never less than what is claimed;
    returns it and the approval the verdict reports."""
    latest = state.latest
    assert latest is not None
    assert state.outcome is not None
    approval_here = state.approval if state.approval_revision == latest.revision else None
    rb = state.read_back
    evidence = Evidence(
        issuer_keys=True,
        executed=state.execution is not None,
        read_back_matches=rb is not None and rb["matches_terms"] is True,
        read_back_complete=state.read_back_complete,
        read_back_hidden=any(st.kind == "read_back" and st.hidden > 0 for st in parsed),
        approval_method=None if approval_here is None else str(approval_here["method"]),
        review_approved=state.review_revision == latest.revision
        and state.review is not None
        and state.review["decision"] == "approved",
        logged=logged,
    )
    derived, undecidable = derive_assurance(evidence)
    claimed = set(state.outcome["claimed_assurance"])
    over = sorted(claimed - set(derived) - undecidable)
    if over:
        raise VxpError(
            "assurance_overclaimed",
            f"the outcome claims assurance the evidence does not support: {', '.join(over)} (P7)",
        )
    if approval_here is not None:
        return derived, str(approval_here["method"])
    return derived, "none" if latest.user_approval_required else "not_required"


def _single_root(trust: TrustMaterial, parsed: list[ParsedStatement]) -> str | None:
    if trust.custody == "self_operated":
        return "company"
    if trust.custody == "operator_hosted":
        return "operator"
    used: dict[str, set[str]] = {}  # the kids that signed, by the role they signed for
    for st in parsed:
        used.setdefault(KIND_SIGNER[st.kind], set()).add(st.kid)
    shared = used.get("operator", set()) & used.get("company", set())
    both = {r.kid for r in trust.records if r.role == "operator"} & {
        r.kid for r in trust.records if r.role == "company"
    }
    return "operator" if shared or both else None


def _pipeline(
    material: _Material,
    package: object,
    now: datetime,
    live_log: Mapping[str, Any] | None,
    request_id: str | None,
    request: object,
    leeway: int,
    max_statements: int,
) -> Verdict:
    """Every stage in the order of spec §8; the first failure raises."""
    plain, raw_statements, log = _check_package(package, max_statements)
    op = plain["op"]
    if live_log is not None:  # read once, as the package is
        live_log = plain_json(live_log, _TOO_DEEP_LIVE)
    _check_trust(plain, material, live_log)
    tokens, entries, times = _parse(raw_statements, log["entries"])
    parsed = _signatures(tokens, material, now.timestamp())
    state = _chain(parsed, times, material)
    logres = _log(parsed, entries, times, log["checkpoint"], live_log, material, now, leeway)
    sources = _keys(parsed, times, material)
    _operation(op, state, request_id, request)
    logged = logres.witnesses >= material.quorum
    derived, approval = _assurance(state, parsed, logged)
    saved = material.saved
    latest = state.latest
    assert latest is not None
    return Verdict(
        valid=True,
        final_state=state.final_state,
        revision=latest.revision,
        approval=approval,
        derived_assurance=derived,
        single_root=_single_root(saved, parsed),
        custody_declared=saved.custody,
        logged=logged,
        company=saved.issuer,
        anchor="issuer",
        key_source="issuer_metadata_saved"
        if "issuer_metadata_saved" in sources
        else "issuer_metadata_live",
        profile=saved.profile,
        statements=len(parsed),
        log_inclusion="ok",
        tree_size=logres.tree_size,
        live_tree_size=logres.live_tree_size,
        consistency=logres.consistency,
        witnesses=logres.witnesses,
        operation="matches",
        failure=None,
    )


def _failed(exc: VxpError) -> Verdict:
    failure = {"code": exc.code, "message": exc.message}
    if exc.reason is not None:
        failure["reason"] = exc.reason
    return Verdict(valid=False, failure=failure)


def _check_call(now: object, leeway: object, max_statements: object) -> datetime:
    """The caller's own arguments (usage errors, raised, never a verdict); returns ``now``."""
    now = aware(now)
    if not isinstance(leeway, int) or isinstance(leeway, bool) or not 0 <= leeway <= MAX_LEEWAY:
        raise VxpError("leeway_invalid", f"leeway is an integer from 0 to {MAX_LEEWAY} seconds")
    if (
        not isinstance(max_statements, int)
        or isinstance(max_statements, bool)
        or not 1 <= max_statements <= STATEMENTS_LIMIT
    ):
        raise VxpError(
            "max_statements_invalid", f"max_statements is an integer from 1 to {STATEMENTS_LIMIT}"
        )
    return now


# ---------------------------------------------------------------------------- public


class Verifier:
    """Verifies VXP Proof packages of one issuer; built once, owned by the caller.

    ``metadata`` and ``jwks`` are the issuer's material as the caller saved it;
    ``live_metadata`` and ``live_jwks`` (together or not at all) are the same fetched
    now. Construction parses and cross-checks all of it, resolves every key once and
    derives what verification needs (which keys sign for which role, and when); it raises
    :class:`VxpError` (``metadata_invalid``, ``live_invalid``) for unusable material.
    The object is read-only afterwards: share it between threads, reuse it for every
    package of this issuer. Nothing about the material is kept anywhere else.
    """

    __slots__ = ("_material",)
    _material: _Material

    def __init__(
        self,
        metadata: object,
        jwks: object,
        *,
        live_metadata: object = None,
        live_jwks: object = None,
    ) -> None:
        saved = load_trust(metadata, jwks)
        live: TrustMaterial | None = None
        if live_metadata is not None or live_jwks is not None:
            if live_metadata is None or live_jwks is None:
                raise VxpError(
                    "live_invalid", "live metadata and live JWKS come together", reason="shape"
                )
            live = load_trust(live_metadata, live_jwks)
        object.__setattr__(self, "_material", _Material.of(saved, live))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Verifier is read-only")

    @property
    def issuer(self) -> str:
        """The issuer identifier of the material."""
        return self._material.saved.issuer

    def verify(
        self,
        package: object,
        *,
        now: datetime,
        live_log: Mapping[str, Any] | None = None,
        request_id: str | None = None,
        request: object = None,
        leeway: int = 0,
        max_statements: int = MAX_STATEMENTS,
    ) -> Verdict:
        """Verify one package and return the :class:`Verdict`, a report: read ``.valid``
        (a verdict has no truth value). Every failure of the package or the material is
        ``valid: false`` with ``failure.code``; only the caller's own arguments raise
        :class:`~vxp.VxpUsageError` (``now`` naive: ``time_naive``; not a datetime:
        ``now_invalid``; ``leeway_invalid``; ``max_statements_invalid``).

        ``now`` is an aware :class:`~datetime.datetime`.

        ``live_log`` (optional) is ``{"checkpoint", "consistency"}`` for this package's
        log, fetched now: ``consistency`` proves the live checkpoint extends the packaged
        one. ``request_id``, when given, must be the package's ``op.id`` (a routing hint
        the chain does not sign); ``request``, when given, is the request as the agent
        sent it, whose digest must be the signed ``request_digest``. ``leeway`` (seconds)
        is how far after ``now`` a witness cosignature may be dated. ``max_statements``
        (default :data:`MAX_STATEMENTS`, at most 2**20) bounds the statements a package may
        hold: more is ``package_malformed/too_many_statements`` before any signature check.
        """
        now = _check_call(now, leeway, max_statements)
        return _verdict(
            self._material, package, now, live_log, request_id, request, leeway, max_statements
        )


def _verdict(
    material: _Material,
    package: object,
    now: datetime,
    live_log: Mapping[str, Any] | None,
    request_id: str | None,
    request: object,
    leeway: int,
    max_statements: int,
) -> Verdict:
    """The pipeline's verdict for checked call arguments: any failure is ``valid: false``."""
    try:
        return _pipeline(
            material, package, now, live_log, request_id, request, leeway, max_statements
        )
    except VxpError as exc:
        return _failed(exc)


def verify(
    package: object,
    metadata: object,
    jwks: object,
    *,
    live: Mapping[str, Any] | None = None,
    now: datetime,
    request_id: str | None = None,
    request: object = None,
    leeway: int = 0,
    max_statements: int = MAX_STATEMENTS,
) -> Verdict:
    """Verify a VXP Proof package against the issuer's metadata and JWKS; return the
    :class:`Verdict` (a report: read ``.valid``).

    The one-shot form of :class:`Verifier` (build it, verify one package): a server that
    verifies many packages of one issuer builds the ``Verifier`` once instead. ``live``
    (optional) is freshly fetched material as data: ``{"metadata", "jwks", "checkpoint",
    "consistency"}``. The other arguments are :meth:`Verifier.verify`'s (``now`` an aware
    datetime). Every failure of the package or the material gives ``valid: false`` with
    ``failure.code``; the caller's own arguments raise :class:`~vxp.VxpUsageError`.
    """
    now = _check_call(now, leeway, max_statements)
    try:
        _check_package(package, max_statements)  # stage 1 comes before the material's stage 2
        saved = load_trust(metadata, jwks)
        live_trust: TrustMaterial | None = None
        live_log: Mapping[str, Any] | None = None
        if live is not None:
            if not isinstance(live, Mapping) or set(live) != _LIVE_MEMBERS:
                raise VxpError(
                    "live_invalid",
                    "live material is {metadata, jwks, checkpoint, consistency}",
                    reason="shape",
                )
            live_trust = load_trust(live["metadata"], live["jwks"])
            live_log = {"checkpoint": live["checkpoint"], "consistency": live["consistency"]}
        material = _Material.of(saved, live_trust)
    except VxpError as exc:
        return _failed(exc)
    return _verdict(material, package, now, live_log, request_id, request, leeway, max_statements)
