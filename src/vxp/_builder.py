"""The issuer side of VXP Proof: walk one operation through its statements, refusing rule breaks.

Sans-IO: keys, the clock (``now`` on every step), randomness (salts) and the log are
passed in. Each step builds the statement body, runs the shared chain rules
(:mod:`vxp._chain`) on it first, and only then signs it and appends it to the log, so a
refused step changes nothing.

Every refusal is the caller's mistake, a :class:`~vxp.VxpUsageError`: a step out of order
or one that would sign what the verifier refuses is ``step_refused`` (``reason`` names the
rule, or the code of the verifier's check that refused); an argument of the wrong type is
``argument_invalid``. The one exception is the signature a user's device made
(:meth:`OperationBuilder.approve_with_signature`): it is protocol data, and one that does
not verify is :class:`~vxp.VxpProtocolError` ``rule_violation/user_signature_invalid``.
"""

from __future__ import annotations

import functools
import math
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from ._chain import KIND_SIGNER, ChainState, format_time, parse_time, step
from ._checkpoint import Checkpoint, cosign_checkpoint, sign_checkpoint
from ._codec import b64url_encode, canonical_json, encode_hash, sha256
from ._keys import IssuerKeys, KeyLike, resolve_key
from ._log import MerkleLog
from ._sdjwt import RandomSource
from ._statements import (
    approval_payload,
    approval_signing_input,
    check_user_approval,
    jwt_digest,
    open_statement,
    read_statement,
    sign_statement,
    split_statement,
)
from ._time import whole_seconds
from ._verdict import Evidence, derive_assurance
from ._verifier import leaf_data
from .errors import VxpError, VxpProtocolError

__all__ = ["OperationBuilder", "digest_of"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def digest_of(value: Any, where: str = "value") -> str:
    """Return ``sha-256:`` + base64url of SHA-256 over the JCS bytes of ``value``."""
    return encode_hash(sha256(canonical_json(value, where)))


@contextmanager
def _as_step() -> Iterator[None]:
    """Re-raise a protocol error met while building a step as the caller's ``step_refused``
    (the verifier's check that refused becomes the ``reason``)."""
    try:
        yield
    except VxpProtocolError as exc:
        raise VxpError("step_refused", exc.message, reason=exc.reason or exc.code) from None


def _step(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a builder step under :func:`_as_step`."""

    @functools.wraps(method)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _as_step():
            return method(*args, **kwargs)

    return run


def _refused(message: str, reason: str) -> VxpError:
    return VxpError("step_refused", message, reason=reason)


def _mapping(value: object, what: str, optional: bool = False) -> dict[str, Any]:
    if optional and value is None:
        return {}
    if not isinstance(value, Mapping):
        raise VxpError("argument_invalid", f"{what} is a JSON object (a mapping)")
    return dict(value)


def _names(value: object, what: str) -> list[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise VxpError("argument_invalid", f"{what} is a list of names")
    return list(value)


class OperationBuilder:
    """Issue the signed statements of one operation, in order, and seal them as a package.

    ``operator_key`` and ``company_key`` are the private ES256 keys of the two roles
    (:meth:`use_key` switches one after a rotation); ``log`` is the Merkle log that
    records each statement as it is signed (it may be shared by many operations);
    ``rng`` supplies disclosure salts. Every step takes ``now``, the time the log records:
    an aware :class:`~datetime.datetime` (a naive one is ``time_naive``, a usage error).
    """

    def __init__(
        self,
        *,
        company: str,
        op_id: str,
        operator_key: KeyLike,
        company_key: KeyLike,
        log: MerkleLog,
        rng: RandomSource = secrets.token_bytes,
    ) -> None:
        if not isinstance(company, str) or not company.startswith("https://"):
            raise VxpError("company_invalid", "the company is its https issuer identifier")
        if not isinstance(op_id, str) or not op_id:
            raise VxpError("op_id_invalid", "the operation id is a non-empty string")
        self.company = company
        self.op_id = op_id
        self.log = log
        self._rng = rng
        self._keys: dict[str, KeyLike] = {}
        self.use_key("operator", operator_key)
        self.use_key("company", company_key)
        self._state = ChainState()
        self._statements: list[str] = []
        self._entries: list[tuple[int, str]] = []
        self._prev: str | None = None
        self._terms: dict[int, Mapping[str, Any]] = {}
        self._user_kids: set[str] = set()

    # ------------------------------------------------------------------ plumbing

    def use_key(self, role: str, key: KeyLike) -> None:
        """Sign ``role``'s next statements with ``key`` (after a key rotation)."""
        if role not in ("operator", "company"):
            raise VxpError("role_unknown", f"{role!r} is not a signing role")
        if resolve_key(key, f"{role} key").private is None:
            raise VxpError("key_not_private", f"the {role} key must be a private key")
        self._keys[role] = key

    @property
    def statements(self) -> tuple[str, ...]:
        """The compact statements signed so far, in order."""
        return tuple(self._statements)

    @property
    def state(self) -> ChainState:
        """What the chain establishes so far."""
        return self._state

    def _append(
        self,
        kind: str,
        body: dict[str, Any],
        now: datetime,
        *,
        personal: Mapping[str, Any] | None = None,
        check: bool = True,
        key: KeyLike | None = None,
        signer: str | None = None,
        seq: int | None = None,
        prev: str | bool | None = True,
    ) -> str:
        if not isinstance(kind, str) or (check and kind not in KIND_SIGNER):
            # (unsafe_append signs any kind: the verifier's refusal of one is tested)
            raise VxpError("argument_invalid", f"{kind!r} is not a statement kind")
        body = _mapping(body, "the statement body")
        personal = _mapping(personal, "the personal fields", optional=True) or None
        logged_at = format_time(now, "now")
        at = parse_time(logged_at, "now")
        full = body
        if personal:
            full = {**body, "observed": {**body.get("observed", {}), **personal}}
        if check:
            new_state = step(self._state, self._state.count, kind, KIND_SIGNER[kind], full, at)
        else:
            try:
                signer_role = KIND_SIGNER.get(kind, "operator")
                new_state = step(self._state, self._state.count, kind, signer_role, full, at)
            except VxpError:
                new_state = replace(self._state, count=self._state.count + 1, last_time=at)
        role = KIND_SIGNER.get(kind, "operator")
        statement = sign_statement(
            seq=self._state.count if seq is None else seq,
            kind=kind,
            signer=role if signer is None else signer,
            prev=self._prev if prev is True else (prev if isinstance(prev, str) else None),
            body=body,
            key=self._keys[role] if key is None else key,
            rng=self._rng,
            personal=personal,
        )
        if check:
            # Read the statement back as the verifier reads it (one rule, the verifier's):
            # never sign and log what a verifier refuses (a disclosure nested in observed).
            signer_key = resolve_key(self._keys[role], f"{role} key")
            where = f"statement {self._state.count}"
            opened = open_statement(
                split_statement(statement, where), IssuerKeys(signer_key), where
            )
            read_statement(opened, where, at.timestamp())
        jws = statement.split("~", 1)[0]
        index = self.log.append(leaf_data(jwt_digest(jws), logged_at))
        self._state = new_state
        self._statements.append(statement)
        self._entries.append((index, logged_at))
        self._prev = jwt_digest(jws)
        return statement

    def _latest(self, what: str) -> tuple[int, str]:
        latest = self._state.latest
        if latest is None:
            raise _refused(f"{what} needs terms first", "terms_missing")
        return latest.revision, latest.terms_digest

    # ------------------------------------------------------------------ steps

    @_step
    def request(
        self, *, channel: str, client_id: str, request: Mapping[str, Any], now: datetime
    ) -> str:
        """Sign the request (operator): the channel, the agent and the request's digest."""
        body = {
            "channel": channel,
            "client_id": client_id,
            "request_digest": digest_of(request, "the request"),
        }
        return self._append("request", body, now)

    @_step
    def terms(
        self,
        *,
        capability: str,
        terms: Mapping[str, Any],
        expires_at: datetime,
        read_back_terms: Sequence[str],
        user_approval_required: bool = True,
        company_review_required: bool = False,
        requires: Sequence[str] = (),
        now: datetime,
    ) -> str:
        """Sign a terms revision (company); ``terms`` is the exact terms object it digests.

        Every ``read_back_terms`` entry must be a member of ``terms``: the read-back compares
        what the system shows with that member's value.
        """
        if not isinstance(terms, Mapping):
            raise VxpError("terms_invalid", "the terms are a JSON object")
        read_back_terms = _names(read_back_terms, "read_back_terms")
        requires = _names(requires, "requires")
        missing = [t for t in read_back_terms if not isinstance(t, str) or t not in terms]
        if missing:
            raise VxpError(
                "terms_invalid", f"read_back_terms names members the terms lack: {missing}"
            )
        revision = 1 if self._state.latest is None else self._state.latest.revision + 1
        body = {
            "capability": capability,
            "commitment": {
                "mode": "conditional" if requires else "firm",
                "requires": list(requires),
            },
            "company_review_required": company_review_required,
            "expires_at": format_time(expires_at, "expires_at"),
            "read_back_terms": list(read_back_terms),
            "revision": revision,
            "terms_digest": digest_of(terms, "the terms"),
            "user_approval_required": user_approval_required,
        }
        statement = self._append("terms", body, now)
        self._terms[revision] = dict(terms)
        return statement

    @_step
    def counter(self, *, proposal: Mapping[str, Any], now: datetime) -> str:
        """Sign the agent's counter-proposal to the latest revision (operator)."""
        revision, _ = self._latest("a counter")
        body = {"counter_digest": digest_of(proposal, "the proposal"), "revision": revision}
        return self._append("counter", body, now)

    @_step
    def approve(self, *, now: datetime) -> str:
        """Sign an ``agent_asserted`` approval of the latest revision (operator)."""
        revision, digest = self._latest("an approval")
        body = {"method": "agent_asserted", "revision": revision, "terms_digest": digest}
        return self._append("user_approval", body, now)

    @_step
    def approval_payload(self) -> dict[str, Any]:
        """Return what the user signs to approve the latest revision (see
        :func:`vxp.approval_payload`): show it to her device, which signs
        :func:`vxp.approval_signing_input` of it with her own key."""
        revision, digest = self._latest("an approval")
        latest, request = self._state.latest, self._state.request
        assert latest is not None
        if request is None:  # pragma: no cover - terms imply a request
            raise _refused("an approval needs the request", "terms_missing")
        terms_statement = jwt_digest(self._statements[latest.seq].split("~", 1)[0])
        return approval_payload(request["request_digest"], revision, digest, terms_statement)

    @_step
    def approve_signed(self, *, user_key: KeyLike, now: datetime) -> str:
        """Sign a ``user_signed`` approval with the user's private key (held here).

        Where the key stays on the user's device, use :meth:`approve_with_signature`."""
        key = resolve_key(user_key, "user key")
        if key.private is None:
            raise VxpError("key_not_private", "a user-signed approval needs the user's private key")
        signing_input = approval_signing_input(key, self.approval_payload())
        signature = key.sign(signing_input, deterministic=True)
        return self.approve_with_signature(user_key=key, signature=signature, now=now)

    def approve_with_signature(self, *, user_key: KeyLike, signature: object, now: datetime) -> str:
        """Sign a ``user_signed`` approval the user signed on her own device (operator).

        ``user_key`` is her public key (a JWK; only its public part is logged);
        ``signature`` is the raw JWS signature bytes her key made over
        :func:`vxp.approval_signing_input` of :meth:`approval_payload` (Ed25519: 64 bytes;
        ES256: ``r || s``, 64 bytes). A signature that does not verify for this revision
        is :class:`~vxp.VxpProtocolError` ``rule_violation/user_signature_invalid`` (the
        signature is the device's data); one of the issuer's own signing keys is the
        caller's ``step_refused/user_key_is_issuer_key``. Nothing is signed or logged on
        refusal.
        """
        payload = self.approval_payload()
        key = resolve_key(user_key, "user key")
        own = {resolve_key(k, f"{role} key").kid for role, k in self._keys.items()}
        if key.kid in own:
            raise _refused(
                "a user-signed approval needs the user's key, not a signing key of the issuer",
                "user_key_is_issuer_key",
            )
        if not isinstance(signature, bytes):
            raise VxpError(
                "rule_violation",
                "the user's signature is the raw signature bytes",
                reason="user_signature_invalid",
            )
        token = (
            approval_signing_input(key, payload).decode("ascii") + "." + b64url_encode(signature)
        )
        body = {
            "method": "user_signed",
            "revision": payload["revision"],
            "terms_digest": payload["terms_digest"],
            "user_key": dict(key.public_jwk),
            "user_signature": token,
        }
        user_kid = check_user_approval(
            body, payload["request_digest"], payload["terms_statement"], "the approval"
        )
        with _as_step():
            statement = self._append("user_approval", body, now)
        self._user_kids.add(user_kid)  # checked against the log and witness keys at sealing
        return statement

    @_step
    def review(self, *, decision: str, reviewer: Mapping[str, Any], now: datetime) -> str:
        """Sign a company review of the latest revision (company): approved or rejected."""
        revision, digest = self._latest("a review")
        body = {
            "decision": decision,
            "revision": revision,
            "reviewer_digest": digest_of(reviewer, "the reviewer"),
            "terms_digest": digest,
        }
        return self._append("company_review", body, now)

    @_step
    def execute(self, *, release: Mapping[str, Any], now: datetime) -> str:
        """Sign the single execution of the approved latest revision (operator)."""
        revision, digest = self._latest("the execution")
        latest = self._state.latest
        assert latest is not None
        body = {
            "attempt": 1,
            "capability": latest.capability,
            "release": digest_of(release, "the release"),
            "revision": revision,
            "terms_digest": digest,
        }
        return self._append("execution", body, now)

    @_step
    def read_back(
        self,
        *,
        observed: Mapping[str, Any],
        personal: Mapping[str, Any] | None = None,
        now: datetime,
    ) -> str:
        """Sign what the company's system shows after the execution (operator).

        ``observed`` holds the read-back terms as the system shows them (plain);
        ``personal`` holds personal fields, signed only as selective disclosures.
        ``matches_terms`` is computed: every read-back term equals the approved terms'.
        """
        latest = self._state.latest
        if latest is None:
            raise _refused("a read-back needs terms", "terms_missing")
        observed = _mapping(observed, "observed")
        personal = _mapping(personal, "personal", optional=True)
        approved = self._terms.get(latest.revision, {})
        shown = {**personal, **observed}
        # Compare JSON values, not Python values: True == 1 == 1.0 in Python, but a system
        # that shows true where the terms say 1 does not match them.
        matches = bool(latest.read_back_terms) and all(
            t in shown
            and t in approved
            and canonical_json(shown[t], f"read-back term {t}")
            == canonical_json(approved[t], f"terms member {t}")
            for t in latest.read_back_terms
        )
        body = {
            "matches_terms": matches,
            "method": "system_read_back",
            "observed": dict(observed),
            "source": "company_system",
        }
        return self._append("read_back", body, now, personal=personal)

    def _claimable(self) -> list[str]:
        s = self._state
        latest = s.latest
        assert latest is not None
        approval = s.approval if s.approval_revision == latest.revision else None
        derived, _ = derive_assurance(
            Evidence(
                issuer_keys=True,
                executed=s.execution is not None,
                read_back_matches=s.read_back is not None and s.read_back["matches_terms"] is True,
                read_back_complete=s.read_back_complete,
                read_back_hidden=False,
                approval_method=None if approval is None else str(approval["method"]),
                review_approved=s.review_revision == latest.revision
                and s.review is not None
                and s.review["decision"] == "approved",
                logged=False,
            )
        )
        return list(derived)

    @_step
    def outcome(self, *, state: str, result_summary: Mapping[str, Any], now: datetime) -> str:
        """Sign the outcome (company); ``claimed_assurance`` is what the evidence supports."""
        revision, digest = self._latest("the outcome")
        body = {
            "claimed_assurance": self._claimable(),
            "result_summary_digest": digest_of(result_summary, "the result summary"),
            "revision": revision,
            "state": state,
            "terms_digest": digest,
            "third_party": [],
        }
        return self._append("outcome", body, now)

    @_step
    def correct(self, *, state: str, fact: Mapping[str, Any], now: datetime) -> str:
        """Sign a correction of the asserted state after the outcome (company, P4)."""
        revision, digest = self._latest("a correction")
        target = self._state.assertion_seqs[-1] if self._state.assertion_seqs else -1
        body = {
            "corrects": target,
            "fact_digest": digest_of(fact, "the fact"),
            "revision": revision,
            "state": state,
            "terms_digest": digest,
        }
        return self._append("correction", body, now)

    @_step
    def revoke(self, *, reason: Mapping[str, Any], now: datetime) -> str:
        """Sign a revocation of the outcome (company, P4)."""
        body = {
            "reason_digest": digest_of(reason, "the reason"),
            "revokes": -1 if self._state.outcome_seq is None else self._state.outcome_seq,
        }
        return self._append("revocation", body, now)

    @_step
    def unsafe_append(
        self,
        kind: str,
        body: Mapping[str, Any],
        *,
        now: datetime,
        key: KeyLike | None = None,
        signer: str | None = None,
        seq: int | None = None,
        prev: str | bool | None = True,
        personal: Mapping[str, Any] | None = None,
    ) -> str:
        """Sign and log a statement WITHOUT the chain rules (for tests and negative vectors).

        Never use it to issue real proofs: it signs whatever it is given. The chain state
        afterwards only counts the statement.
        """
        return self._append(
            kind,
            _mapping(body, "the statement body"),
            now,
            personal=personal,
            check=False,
            key=key,
            signer=signer,
            seq=seq,
            prev=prev,
        )

    # ------------------------------------------------------------------ sealing

    @_step
    def package(
        self,
        *,
        log_key: KeyLike,
        witnesses: Iterable[tuple[KeyLike, datetime | int]] = (),
        require_outcome: bool = True,
    ) -> dict[str, Any]:
        """Return the package ``{v, company, op, statements, log}`` at the log's current size.

        The log key signs a checkpoint; each ``(witness_key, time)`` cosigns it (``time``
        an aware datetime or integer seconds since the epoch).
        """
        if require_outcome and self._state.outcome is None:
            raise _refused("a package is sealed after the outcome (P3)", "outcome_missing")
        if self._state.request is None or self._state.latest is None:
            raise _refused("a package needs a request and terms", "terms_missing")
        pairs = _names(witnesses, "witnesses")
        if not all(isinstance(p, tuple | list) and len(p) == 2 for p in pairs):
            raise VxpError("argument_invalid", "witnesses is a list of (key, time) pairs")
        timed = [(k, whole_seconds(t, f"witness {i} time")) for i, (k, t) in enumerate(pairs)]
        sealers = {resolve_key(log_key, "log key").kid} | {
            resolve_key(k, f"witness key {i}").kid for i, (k, _) in enumerate(timed)
        }
        if self._user_kids & sealers:
            # the verifier counts the log and witness keys as the issuer's: never the user
            raise _refused(
                "a user-signed approval was signed by the log key or a witness key",
                "user_key_is_issuer_key",
            )
        if self._entries:
            last = math.floor(parse_time(self._entries[-1][1], "logged_at").timestamp())
            for _, time in timed:
                if time < last:
                    # the verifier refuses a cosignature older than what it vouches for
                    raise _refused(
                        "a witness cosignature is dated before the last statement was logged",
                        "witness_time",
                    )
        size = self.log.size
        signed = sign_checkpoint(Checkpoint(self.log.origin, size, self.log.root(size)), log_key)
        for witness_key, time in timed:
            signed = cosign_checkpoint(signed, witness_key, time=time)
        entries = [
            {
                "index": index,
                "logged_at": logged_at,
                "proof": [encode_hash(h) for h in self.log.inclusion_proof(index, size)],
            }
            for index, logged_at in self._entries
        ]
        return {
            "v": 1,
            "company": self.company,
            "op": {
                "id": self.op_id,
                "capability": self._state.latest.capability,
                "request_digest": self._state.request["request_digest"],
            },
            "statements": list(self._statements),
            "log": {"checkpoint": signed.to_json(), "entries": entries},
        }
