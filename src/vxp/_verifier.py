"""The VXP Proof verifier: a package and the issuer's public material in, a :class:`Verdict` out.

Stages run in a fixed order so that a later stage never masks an earlier one (spec
§8): package shape, trust material, parse, signatures (each key listed for its kind's
role), chain and rules, log (checkpoint, inclusion, live consistency), key periods,
operation summary, assurance. The first failure ends the run with ``valid: false`` and
its code; nothing else is reported about a failed package. :func:`verify` first tries an
optimistic run with the signature checks set aside, and lets the strict run in that
order decide whenever anything fails.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast

from joserfc.jwk import ECKey, OKPKey

from . import _merkle
from ._chain import KIND_SIGNER, ChainState, parse_time, step
from ._checkpoint import (
    SignedCheckpoint,
    _log_origin,
    _log_signature,
    verify_checkpoint,
    verify_cosignatures,
)
from ._codec import canonical_json, decode_canonical_hash, decode_hash, encode_hash, sha256
from ._errors import VxpError
from ._frozen import assemble
from ._keys import verify_all
from ._metadata import KeyRecord, TrustMaterial, trust_of
from ._statements import (
    Deferred,
    HeaderMemory,
    ParsedStatement,
    StatementBatch,
    check_user_approval,
    split_statement,
)
from ._verdict import Evidence, Verdict, derive_assurance

__all__ = ["leaf_data", "verify"]

_START = ChainState()  # immutable, so one instance serves every verification
_PACKAGE_MEMBERS = frozenset({"v", "company", "op", "statements", "log"})
_ENTRY_MEMBERS = frozenset({"index", "logged_at", "proof"})
_OP_MEMBERS = frozenset({"id", "capability", "request_digest"})
_LOG_MEMBERS = frozenset({"checkpoint", "entries"})


_PLAIN = re.compile(r"[A-Za-z0-9_.:+-]*")


def leaf_data(statement_digest: str, logged_at: str) -> bytes:
    """Return the log entry of one statement: ``JCS({"logged_at", "statement"})``."""
    if _PLAIN.fullmatch(logged_at) and _PLAIN.fullmatch(statement_digest):
        return _plain_leaf_data(statement_digest, logged_at)
    return canonical_json({"logged_at": logged_at, "statement": statement_digest})


def _plain_leaf_data(statement_digest: str, logged_at: str) -> bytes:
    """:func:`leaf_data` of two texts with nothing to escape (``_PLAIN``): exactly what JCS
    writes, members in code-point order."""
    return f'{{"logged_at":"{logged_at}","statement":"{statement_digest}"}}'.encode()


def _digest(value: object) -> str:
    return encode_hash(sha256(canonical_json(value, "the request")))


def _malformed(message: str, reason: str) -> VxpError:
    return VxpError("package_malformed", message, reason=reason)


def _check_package(package: object) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
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
    if len(statements) >= 2**20:
        raise _malformed("the package has too many statements", "statements")
    log = package["log"]
    if not isinstance(log, dict) or log.keys() != _LOG_MEMBERS:
        raise _malformed("the package log is not {checkpoint, entries}", "log")
    entries = log["entries"]
    if not isinstance(entries, list) or len(entries) != len(statements):
        raise _malformed("the package log has not one entry per statement", "log_entries")
    return op, statements, log


def _log_error(message: str, reason: str) -> VxpError:
    return VxpError("log_invalid", message, reason=reason)


def _checkpoint(
    value: object, trust: TrustMaterial, where: str, deferred: Deferred | None
) -> SignedCheckpoint:
    try:
        signed = SignedCheckpoint.from_json(value)
        log_key = trust.keys.get(trust.log_kid)
        if log_key is None:
            raise VxpError("checkpoint_key_mismatch", "the log key is not in the JWKS")
        if deferred is None:
            verify_checkpoint(signed, log_key, origin=trust.log_origin)
        else:  # the same checks, the signature set aside
            key, message = _log_signature(signed, log_key)
            _log_origin(signed, trust.log_origin)
            deferred.append((key, message, signed.signature))
    except VxpError as exc:
        raise _log_error(f"{where}: {exc.message}", exc.code) from exc
    return signed


def _witnesses(signed: SignedCheckpoint, trust: TrustMaterial, seen: set[str]) -> None:
    """Add the trusted witnesses whose cosignature on ``signed`` verifies; a bad one fails."""
    if not signed.cosignatures:
        return  # nothing to add (every key of trust.keys already resolved in load_trust)
    keys = [trust.keys[k] for k in trust.witness_kids if k in trust.keys]
    try:
        seen.update(verify_cosignatures(signed, keys, quorum=0))
    except VxpError as exc:
        raise _log_error(f"a witness cosignature fails: {exc.message}", exc.code) from exc


def _entry(value: object, index: int, memo: dict[str, bytes]) -> Entry:
    """Parse log entry ``index`` (proof digests decoded once per verification in ``memo``)."""
    plain = _entry_plain(value, memo)
    if plain is not None:
        return plain
    if not isinstance(value, dict) or value.keys() != _ENTRY_MEMBERS:
        raise _malformed(f"log entry {index} is not {{index, logged_at, proof}}", "log_entries")
    leaf_index, logged_at, proof = value["index"], value["logged_at"], value["proof"]
    if not isinstance(leaf_index, int) or isinstance(leaf_index, bool) or leaf_index < 0:
        raise _malformed(f"log entry {index} has no leaf index", "log_entries")
    if not isinstance(logged_at, str) or not isinstance(proof, list) or len(proof) > 64:
        raise _malformed(f"log entry {index} has no logged_at or proof list", "log_entries")
    try:
        found: list[bytes | None] = list(map(memo.get, proof))
    except TypeError:  # an unhashable element: the loop below names it
        found = [None] * len(proof)
    if None not in found:
        return leaf_index, logged_at, cast(list[bytes], found)
    where = f"log entry {index} proof"
    for h, raw in zip(proof, found, strict=True):
        if raw is None:
            try:
                memo[h] = decode_hash(h, where)
            except VxpError as exc:
                raise _malformed(exc.message, "log_entries") from exc
    return leaf_index, logged_at, [memo[h] for h in proof]


Entry = tuple[int, str, list[bytes]]


def _entry_plain(value: object, memo: dict[str, bytes]) -> Entry | None:
    """:func:`_entry` for an entry of exact JSON types whose digests are all canonical;
    ``None`` for anything else (then :func:`_entry` names the fault)."""
    if type(value) is not dict or len(value) != 3:
        return None
    try:
        leaf_index, logged_at, proof = value["index"], value["logged_at"], value["proof"]
    except KeyError:
        return None
    if (
        type(leaf_index) is not int
        or leaf_index < 0
        or type(logged_at) is not str
        or type(proof) is not list
        or len(proof) > 64
    ):
        return None
    hashes = []
    get = memo.get
    for h in proof:
        if type(h) is not str:
            return None
        raw = get(h)
        if raw is None:
            raw = decode_canonical_hash(h)
            if raw is None:
                return None
            memo[h] = raw
        hashes.append(raw)
    return leaf_index, logged_at, hashes


def _statements_staged(
    raw_statements: list[Any],
    raw_entries: list[Any],
    batch: StatementBatch,
    check: Callable[[ParsedStatement, int], None],
) -> tuple[list[ParsedStatement], list[Entry], list[datetime]]:
    """Parse every statement and log entry, then verify the statements one by one, each
    followed by ``check`` (the stage order that decides which failure is reported)."""
    # --- parse: every statement and log entry (no crypto yet)
    tokens = [split_statement(raw, f"statement {i}") for i, raw in enumerate(raw_statements)]
    memo: dict[str, bytes] = {}
    entries = [_entry(e, i, memo) for i, e in enumerate(raw_entries)]
    times = [parse_time(e[1], f"log entry {i} logged_at") for i, e in enumerate(entries)]
    # --- signatures, and each key listed for the role of its statement's kind
    parsed = []
    for i, token in enumerate(tokens):
        st = batch.verify(token, f"statement {i}")
        check(st, i)
        parsed.append(st)
    return parsed, entries, times


def _statements_fused(
    raw_statements: list[Any],
    raw_entries: list[Any],
    batch: StatementBatch,
    check: Callable[[ParsedStatement, int], None],
) -> tuple[list[ParsedStatement], list[Entry], list[datetime]]:
    """:func:`_statements_staged` in one pass per statement, for the optimistic run: the
    same checks and results when all pass (in another order, so a failure here only sends
    the verification to the strict run)."""
    memo: dict[str, bytes] = {}
    parsed: list[ParsedStatement] = []
    entries: list[Entry] = []
    times: list[datetime] = []
    verify = batch.verify_compact
    for i, raw in enumerate(raw_statements):
        st = verify(raw, i)
        check(st, i)
        entry = _entry(raw_entries[i], i, memo)
        times.append(parse_time(entry[1], "a log entry's logged_at"))
        parsed.append(st)
        entries.append(entry)
    return parsed, entries, times


KeyPeriods = dict[tuple[str, str], tuple[str, list[list[KeyRecord]]]]


def _key_periods(saved: TrustMaterial, live: TrustMaterial | None) -> KeyPeriods:
    """For each (kid, role) that :func:`_key_source` would accept in some period: the
    source it reports and the groups of records of which one each must cover the time."""
    out: KeyPeriods = {}
    if live is not None:
        for kid in {r.kid for r in live.records}:
            records = live.records_for(kid)
            for role in {r.role for r in records}:
                mine = [r for r in records if r.role == role]
                saved_mine = [r for r in saved.records_for(kid) if r.role == role]
                groups = [mine, saved_mine] if saved_mine else [mine]
                out[(kid, role)] = ("issuer_metadata_live", groups)
        return out  # (keys live lists nowhere take the full path)
    for r in saved.records:
        if r.kid in saved.keys:
            entry = out.setdefault((r.kid, r.role), ("issuer_metadata_saved", [[]]))
            entry[1][0].append(r)
    return out


def _period_source(periods: KeyPeriods, kid: str, role: str, at: datetime) -> str | None:
    """:func:`_key_source`'s answer where it accepts the key from ``periods`` (built by
    :func:`_key_periods`); ``None`` where only :func:`_key_source` can say (or refuse)."""
    found = periods.get((kid, role))
    if found is None:
        return None
    source, groups = found
    for group in groups:
        for r in group:  # (loops, not any(): an early exit would close a generator)
            if r.not_before <= at and (r.not_after is None or at < r.not_after):
                break
        else:
            return None  # no period of this group covers the statement
    return source


def _key_source(
    st: ParsedStatement, at: datetime, saved: TrustMaterial, live: TrustMaterial | None
) -> str:
    """Return which material vouches for the statement's key, or raise ``key_untrusted``."""
    role = KIND_SIGNER[st.kind]
    where = f"statement {st.seq} ({st.kind})"
    if live is not None:
        records = live.records_for(st.kid)
        mine = [r for r in records if r.role == role]
        if records and not mine:
            raise VxpError(
                "key_untrusted",
                f"{where} is signed by a key listed for another role",
                reason="key_role",
            )
        if mine:
            # Live metadata lists the key for this role, so its period must cover the
            # statement, even when the live JWKS no longer carries the key (the kid is the
            # key's thumbprint: saved key bytes are the same key). Where saved metadata also
            # lists it for the role, its period must cover too: live never re-validates a
            # key that saved metadata recorded as retired, and saved never outlives a cut.
            saved_mine = [r for r in saved.records_for(st.kid) if r.role == role]
            if any(r.covers(at) for r in mine) and (
                not saved_mine or any(r.covers(at) for r in saved_mine)
            ):
                return "issuer_metadata_live"
            raise VxpError(
                "key_untrusted",
                f"{where} was logged outside its key's validity period",
                reason="key_not_valid_at_time",
            )
    records = saved.records_for(st.kid)
    mine = [r for r in records if r.role == role]
    if not records or st.kid not in saved.keys:
        raise VxpError(
            "key_untrusted", f"{where} is signed by an unpublished key", reason="key_unknown"
        )
    if not mine:
        raise VxpError(
            "key_untrusted",
            f"{where} is signed by a key listed for another role",
            reason="key_role",
        )
    if not any(r.covers(at) for r in mine):
        raise VxpError(
            "key_untrusted",
            f"{where} was logged outside its key's validity period",
            reason="key_not_valid_at_time",
        )
    return "issuer_metadata_saved"


class _Prepared:
    """What a verification derives from its trust material alone.

    Everything is read-only except two memories of pure answers that verifications fill
    in as they learn them: ``roles_ok`` (at most two pairs per listed key) and ``headers``
    (bounded by :class:`StatementBatch`)."""

    __slots__ = (
        "all_keys",
        "candidates",
        "headers",
        "live",
        "periods",
        "roles_ok",
        "saved",
        "signing_kids",
    )

    def __init__(self, saved: TrustMaterial, live: TrustMaterial | None) -> None:
        self.saved = saved
        self.live = live
        all_keys: dict[str, ECKey | OKPKey] = dict(saved.keys)
        if live is not None:
            all_keys.update(live.keys)
        signing = {r.kid for r in saved.records}
        if live is not None:
            signing |= {r.kid for r in live.records}
        self.all_keys = all_keys
        """Every key of the saved and live JWKS (live wins), by kid."""
        self.signing_kids = frozenset(signing)
        """The kids that saved or live metadata lists for a signing role."""
        self.candidates = {k: all_keys[k] for k in sorted(signing) if k in all_keys}
        """The keys a statement may be signed with, by kid."""
        self.periods = _key_periods(saved, live)
        """:func:`_key_periods` of the material."""
        self.roles_ok: set[tuple[str, str]] = set()
        """The ``(kid, role)`` pairs found listed for that role (:func:`_key_role`)."""
        self.headers: HeaderMemory = {}
        """The statement batches' shared memory of header segments (same candidates)."""


_PREPARED: dict[tuple[int, int], _Prepared] = {}
_PREPARED_MAX = 64


def _prepare(saved: TrustMaterial, live: TrustMaterial | None, remember: bool) -> _Prepared:
    """The :class:`_Prepared` of this very material. Remembered (when ``remember``: only
    for material from the trust memory, which bounds its size and hands out the same
    objects for the same content) by object; each entry keeps its objects alive, so an
    identity match is never a reused id."""
    if not remember:
        return _Prepared(saved, live)
    key = (id(saved), id(live))
    known = _PREPARED.get(key)
    if known is not None and known.saved is saved and known.live is live:
        return known
    prepared = _Prepared(saved, live)
    if len(_PREPARED) >= _PREPARED_MAX:
        _PREPARED.clear()
    _PREPARED[key] = prepared
    return prepared


def _key_role(st: ParsedStatement, saved: TrustMaterial, live: TrustMaterial | None) -> None:
    """The statement's key must be listed for the role that signs its kind."""
    role = KIND_SIGNER[st.kind]
    for trust in (live, saved):
        if trust is None:
            continue
        records = trust.records_for(st.kid)
        if records:
            if role not in [r.role for r in records]:
                raise VxpError(
                    "key_untrusted",
                    f"statement {st.seq} ({st.kind}) is signed by a key listed for another role",
                    reason="key_role",
                )
            return
    raise VxpError(  # pragma: no cover - verify_statement only accepts listed keys
        "key_untrusted", f"statement {st.seq} is signed by an unlisted key", reason="key_unknown"
    )


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


def _run(
    package: object,
    metadata: object,
    jwks: object,
    live: Mapping[str, Any] | None,
    now: datetime,
    request_id: str | None,
    request: object,
    deferred: Deferred | None,
) -> Verdict:
    op, raw_statements, log = _check_package(package)
    saved, remembered = trust_of(metadata, jwks)
    live_trust: TrustMaterial | None = None
    if live is not None:
        if not isinstance(live, Mapping) or set(live) != {
            "metadata",
            "jwks",
            "checkpoint",
            "consistency",
        }:
            raise VxpError(
                "live_invalid",
                "live material is {metadata, jwks, checkpoint, consistency}",
                reason="shape",
            )
        live_trust, live_remembered = trust_of(live["metadata"], live["jwks"])
        remembered = remembered and live_remembered
        if live_trust.issuer != saved.issuer:
            raise VxpError(
                "live_invalid", "the live metadata names another issuer", reason="issuer_changed"
            )
    if package["company"] != saved.issuer:  # type: ignore[index]
        raise VxpError(
            "company_mismatch", "the package names another company than the metadata's issuer"
        )
    prepared = _prepare(saved, live_trust, remembered)
    all_keys, signing_kids = prepared.all_keys, prepared.signing_kids
    batch = StatementBatch(prepared.candidates, now.timestamp(), deferred, prepared.headers)
    roles_ok = prepared.roles_ok

    def signed_for_role(st: ParsedStatement, i: int) -> None:
        """The statement's kind is known and its key is listed for that kind's role."""
        role = KIND_SIGNER.get(st.kind)
        if role is None:
            raise VxpError(
                "statement_malformed", f"statement {i} has unknown kind {st.kind!r}", reason="kind"
            )
        if (st.kid, role) not in roles_ok:
            _key_role(st, saved, live_trust)  # a pure check of (kid, role) and the material
            roles_ok.add((st.kid, role))

    split = _statements_staged if deferred is None else _statements_fused
    parsed, entries, times = split(raw_statements, log["entries"], batch, signed_for_role)
    # --- chain and rules
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
            if user_kid in all_keys or user_kid in signing_kids:
                # The issuer's own key (signing, log or witness) signing as "the user" is
                # the operator approving for itself: never user_signed_approval.
                raise VxpError(
                    "rule_violation",
                    f"statement {i} is a user-signed approval by one of the issuer's keys",
                    reason="user_key_is_issuer_key",
                )
        prev = st.digest
    # --- log: checkpoint, inclusion of every statement, live consistency
    log_trust = live_trust or saved
    signed = _checkpoint(log["checkpoint"], log_trust, "the packaged checkpoint", deferred)
    size, root = signed.checkpoint.tree_size, signed.checkpoint.root
    indexes: set[int] = set()
    last_index = -1
    inclusion = _merkle.InclusionBatch(size, root)
    for i, st in enumerate(parsed):
        leaf_index, logged_at, proof = entries[i]
        if times[i] > now:
            raise _log_error(
                f"statement {i} was logged after the verification time", "logged_in_future"
            )
        if leaf_index in indexes:
            raise _log_error(f"two statements claim leaf {leaf_index}", "leaf_reused")
        indexes.add(leaf_index)
        # leaf_hash(leaf_data(...)): the digest is ours and parse_time accepted logged_at,
        # so both are plain text
        leaf = hashlib.sha256(b"\x00" + _plain_leaf_data(st.digest, logged_at)).digest()
        try:
            inclusion.verify_hashes(leaf, leaf_index, proof)  # decode_hash gave 32-byte bytes
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
    seen: set[str] = set()
    _witnesses(signed, log_trust, seen)
    live_size: int | None = None
    consistency = "not_checked"
    if live is not None:
        assert live_trust is not None
        fresh = _checkpoint(live["checkpoint"], live_trust, "the live checkpoint", deferred)
        proof_raw = live["consistency"]
        if not isinstance(proof_raw, list):
            raise VxpError(
                "live_invalid", "the live consistency proof is not a list", reason="shape"
            )
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
        _witnesses(fresh, live_trust, seen)
        live_size = fresh.checkpoint.tree_size
        consistency = "ok"
    # --- keys: each valid for its role when the log recorded the statement
    sources: set[str] = set()
    periods = prepared.periods
    for i, st in enumerate(parsed):
        source = _period_source(periods, st.kid, KIND_SIGNER[st.kind], times[i])
        sources.add(source or _key_source(st, times[i], saved, live_trust))
    if state.outcome is None:
        raise VxpError(
            "rule_violation", "the package has no outcome (P3)", reason="outcome_missing"
        )
    latest = state.latest
    assert latest is not None
    assert state.request is not None
    # --- operation summary
    if (
        op["capability"] != latest.capability
        or op["request_digest"] != state.request["request_digest"]
        or (request_id is not None and op["id"] != request_id)
        or (request is not None and _digest(request) != state.request["request_digest"])
    ):
        raise VxpError("operation_mismatch", "the package op does not describe the signed chain")
    # --- assurance (P7)
    witnesses = len(seen)
    logged = witnesses >= (live_trust or saved).quorum
    approval_here = state.approval if state.approval_revision == latest.revision else None
    rb = state.read_back
    hidden_rb = False
    for st in parsed:  # (a loop, not any(): an early exit would close a generator)
        if st.kind == "read_back" and st.hidden > 0:
            hidden_rb = True
            break
    evidence = Evidence(
        issuer_keys=True,
        executed=state.execution is not None,
        read_back_matches=rb is not None and rb["matches_terms"] is True,
        read_back_complete=state.read_back_complete,
        read_back_hidden=hidden_rb,
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
        approval = str(approval_here["method"])
    else:
        approval = "none" if latest.user_approval_required else "not_required"
    return assemble(
        Verdict,
        {
            "valid": True,
            "final_state": state.final_state,
            "revision": latest.revision,
            "approval": approval,
            "derived_assurance": derived,
            "single_root": _single_root(saved, parsed),
            "custody_declared": saved.custody,
            "logged": logged,
            "company": saved.issuer,
            "anchor": "issuer",
            "key_source": "issuer_metadata_saved"
            if "issuer_metadata_saved" in sources
            else "issuer_metadata_live",
            "profile": saved.profile,
            "statements": len(parsed),
            "log_inclusion": "ok",
            "tree_size": size,
            "live_tree_size": live_size,
            "consistency": consistency,
            "witnesses": witnesses,
            "operation": "matches",
            "failure": None,
        },
    )


def verify(
    package: object,
    metadata: object,
    jwks: object,
    *,
    live: Mapping[str, Any] | None = None,
    now: datetime,
    request_id: str | None = None,
    request: object = None,
) -> Verdict:
    """Verify a VXP Proof package against the issuer's metadata and JWKS; never raises.

    ``metadata`` and ``jwks`` are the issuer's material as the caller holds it (fetched now
    or saved earlier). ``live`` (optional) is freshly fetched material as data:
    ``{"metadata", "jwks", "checkpoint", "consistency"}`` where ``consistency`` proves the
    live checkpoint extends the packaged one. ``request_id``, when given, must be the
    package's ``op.id`` (a routing hint the chain does not sign); ``request``, when given,
    is the request object as the agent sent it, whose digest must be the signed
    ``request_digest`` (this binds the package to the caller's own request). Every failure
    gives ``valid: false`` with ``failure.code``.
    """
    try:
        if not isinstance(now, datetime) or now.tzinfo is None:
            raise VxpError("time_naive", "now must be a timezone-aware datetime")
        # First an optimistic run that postpones the signature checks it can and then runs
        # them in one tight loop (far kinder to the CPU caches than one check between each
        # statement's parsing); it counts only when it succeeds and every postponed
        # signature verifies. Otherwise the strict run, every check in its place, decides
        # and names the first failure exactly as if the optimistic one had never run.
        deferred: Deferred = []
        try:
            verdict: Verdict | None = _run(
                package, metadata, jwks, live, now, request_id, request, deferred
            )
        except VxpError:
            verdict = None
        if verdict is not None and verify_all(deferred):
            return verdict
        return _run(package, metadata, jwks, live, now, request_id, request, None)
    except VxpError as exc:
        failure = {"code": exc.code, "message": exc.message}
        if exc.reason is not None:
            failure["reason"] = exc.reason
        return Verdict(valid=False, failure=failure)
