"""The sans-IO service runtime (SPEC.md sections 3 to 8).

A :class:`Service` holds capabilities declared as plain callables and turns one request
frame into its reply frames (``EVENT``\\ s, then exactly one final reply) with
:meth:`Service.handle`. It never does I/O: transports feed it bytes and write back what it
returns. Every failure, including a crash inside a capability, becomes an ``ERROR`` frame;
``handle`` itself never raises.

What it enforces, in the order it checks: the frame envelope and size; the verb; the
capability and its compact params schema; proofs of possession (section 6.5) and grants
(section 6.4); for ``COMMIT``: the proposal exists for this proof key (proposals of an
INTENT without a proof can never be committed), the exact hash, expiry, the grant rooted
in the proposal's principal, an atomic spend reservation, then the commit callable (a crash
releases the reservation); for ``UNDO``: a grant rooted in the committing principal and the
window; idempotent replays answered only to the key that made the original request;
policy-gated auto-commit (section 4.3.1) with ``(proof.key, frame id)`` memory. A commit
or undo in flight carries a lease; one cut short by a crash is settled by the capability's
reconciler (:meth:`Service.recover`, see ``_recovery.py``).
"""

from __future__ import annotations

import contextlib
import difflib
import itertools
import logging
import math
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ._b64 import b64url_encode
from ._canonical import proposal_hash
from ._caveats import RISK_LEVELS
from ._consent import consent_request
from ._fit import fit
from ._frames import (
    MAX_FRAME,
    VERBS,
    check_envelope,
    encode_frame,
    error_reply,
    parse_frame,
    reply,
    request_id,
)
from ._grants import GrantCheck, GrantContext, GrantVerifier, ProposalFacts, decode_grant
from ._handles import expand, new_handle, park
from ._heartbeat import Heartbeat
from ._lens import lens as render_lens
from ._params import check_params, check_schema
from ._proof import proof_target, verify_proof
from ._recovery import (
    Kind,
    Outcome,
    owner_id,
    receipt_of,
    resolve,
    stale,
    undo_receipt_of,
    unresolved,
)
from ._state import Lease, MemoryStore, ProposalRecord, ReceiptRecord, Store
from ._time import epoch_seconds
from .errors import ParleyError, ParleyProtocolError

__all__ = [
    "DEFAULT_BUDGET",
    "Capability",
    "Clarify",
    "Context",
    "Service",
    "ServiceError",
    "clarify",
    "offer",
]

COMMIT_LEASE = 600
"""**Ours:** seconds a process holds a ``COMMIT``/``UNDO`` it started before another may
reconcile it (a commit callable must finish well within it)."""

DEFAULT_BUDGET = 2000
"""The budget of a request that names none (SPEC.md section 3)."""

MAX_BUDGET = 1_000_000
"""**Ours:** the largest budget honoured; larger ones are clamped."""

_OPS = frozenset({"create", "update", "delete", "send", "charge", "other"})
_NAME_SUGGEST_LIMIT = 64


class ServiceError(ParleyProtocolError):
    """What a capability raises to refuse a request with a wire error.

    ``code`` must be a code of SPEC.md section 7 (:data:`parley.errors.WIRE_CODES`; any
    other code is refused when the error is built, so the request is answered
    ``internal``); ``fix`` is the list of ``{"say", "params"?}`` suggestions, ``retry``
    seconds. ``reason`` is the application's own word for the failing check: it travels on
    the wire beside ``code`` and is not limited to the reasons of :data:`parley.errors.CODES`.
    """

    def __new__(cls, code: str, message: str, *args: Any, **kwargs: Any) -> ServiceError:
        """Check ``code`` against the table; the ``reason`` is the application's own."""
        return super().__new__(cls, code, message)

    def __init__(
        self,
        code: str,
        message: str,
        *,
        fix: Sequence[Mapping[str, Any]] = (),
        retry: int | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(code, message, reason=reason)
        self.fix = [dict(f) for f in fix]
        self.retry = retry


class _RefusalError(ParleyProtocolError):
    """An internal refusal that carries ``need``, ``consent`` or ``retry``.

    It may relay a :class:`ServiceError`'s reason, which is the application's own word."""

    def __new__(cls, code: str, message: str, *args: Any, **kwargs: Any) -> _RefusalError:
        """Check ``code`` against the table; the ``reason`` may be the application's."""
        return super().__new__(cls, code, message)

    def __init__(
        self,
        code: str,
        message: str,
        *,
        reason: str | None = None,
        need: Sequence[Any] = (),
        consent: dict[str, Any] | None = None,
        retry: int | None = None,
    ) -> None:
        super().__init__(code, message, reason=reason)
        self.need = list(need)
        self.consent = consent
        self.retry = retry
        self.fix: list[dict[str, Any]] = []


@dataclass(frozen=True)
class Clarify:
    """A ``CLARIFY`` answer to an INTENT: a question and merge-patch options."""

    question: str
    options: tuple[tuple[str, dict[str, Any]], ...]


def clarify(question: str, options: Sequence[tuple[str, Mapping[str, Any]]]) -> Clarify:
    """Build a ``CLARIFY``: each option is ``(label, params merge patch)`` (RFC 7396).

    Anything else is the usage error ``bad_argument``.
    """
    if not isinstance(question, str) or isinstance(options, (str, bytes, Mapping)):
        raise ParleyError("bad_argument", "clarify(question, options)", reason="bad_argument")
    try:
        pairs: list[tuple[Any, ...]] = [tuple(option) for option in options]
    except TypeError:
        pairs = [()]
    if not all(len(p) == 2 and isinstance(p[1], Mapping) for p in pairs):
        raise ParleyError(
            "bad_argument", "each option is a (label, params patch) pair", reason="bad_argument"
        )
    return Clarify(question, tuple((str(label), dict(patch)) for label, patch in pairs))


def offer(
    summary: str,
    effects: Sequence[Mapping[str, Any]],
    *,
    cost: tuple[int, str] | Mapping[str, Any] | None = None,
    risk: str | None = None,
    undo: int | None = None,
    data: Any = None,
    plan: Any = None,
    ttl: int | None = None,
) -> dict[str, Any]:
    """Describe one proposal an intent capability offers.

    ``cost`` is ``(amount in minor units, currency)``; ``risk`` defaults to the
    capability's; ``undo`` is the undo window in seconds (``None``: irreversible); ``data``
    is sent but not hashed; ``plan`` is kept by the service for the commit callable and
    never sent; ``ttl`` overrides the service's proposal lifetime.
    """
    if not isinstance(summary, str) or isinstance(effects, (str, bytes, Mapping)):
        raise ParleyError("bad_argument", "offer(summary, effects, …)", reason="bad_argument")
    try:
        effects = list(effects)
    except TypeError:
        effects = [None]  # type: ignore[list-item]
    if not all(isinstance(e, Mapping) for e in effects):
        raise ParleyError("bad_argument", "each effect is an object", reason="bad_argument")
    if isinstance(cost, tuple):
        if len(cost) != 2:
            raise ParleyError("bad_argument", "cost is (amount, currency)", reason="bad_argument")
        cost = {"amount": cost[0], "currency": cost[1]}
    elif cost is not None and not isinstance(cost, Mapping):
        raise ParleyError(
            "bad_argument", "cost is (amount, currency) or an object", reason="bad_argument"
        )
    out: dict[str, Any] = {
        "summary": summary,
        "effects": [dict(e) for e in effects],
        "cost": None if cost is None else dict(cost),
        "undo": undo,
    }
    if risk is not None:
        out["risk"] = risk
    if data is not None:
        out["data"] = data
    if plan is not None:
        out["plan"] = plan
    if ttl is not None:
        out["ttl"] = ttl
    return out


@dataclass(init=False)
class Context:
    """What a capability callable gets besides its params or proposal.

    ``key`` is the verified proof key (``None`` when the request had no proof),
    ``principal`` the root of the authorizing grant, ``now`` the service clock, ``plan``
    the private plan of the proposal being committed (or the receipt being undone's
    committed ``result``), ``frame`` the request. Call :meth:`event` to send progress.
    ``idempotency_key`` is set for commit, undo and reconcile callables: the proposal id
    (commit) or the receipt id (undo). Record the effect under it, atomically with the
    effect, so a reconciler can later tell whether it happened. Built by hand (to test a
    capability), ``now`` takes epoch seconds or an aware datetime and is kept as seconds.
    """

    service: str
    now: int
    frame: dict[str, Any]
    key: str | None
    principal: str | None
    plan: Any
    events: list[dict[str, Any]]
    idempotency_key: str | None

    def __init__(
        self,
        service: str,
        now: int | datetime,
        frame: dict[str, Any],
        key: str | None = None,
        principal: str | None = None,
        plan: Any = None,
        events: list[dict[str, Any]] | None = None,
        idempotency_key: str | None = None,
    ) -> None:
        """Keep the fields; ``now`` becomes integer epoch seconds (usage error otherwise)."""
        self.service = service
        self.now = epoch_seconds(now, "now")
        self.frame = frame
        self.key = key
        self.principal = principal
        self.plan = plan
        self.events = [] if events is None else events
        self.idempotency_key = idempotency_key

    def event(self, message: str, progress: float | None = None, data: Any = None) -> None:
        """Queue an ``EVENT`` frame (sent before the final reply)."""
        body: dict[str, Any] = {"message": str(message)}
        if progress is not None:
            body["progress"] = max(0.0, min(1.0, float(progress)))
        if data is not None:
            body["data"] = data
        self.events.append(body)


Handler = Callable[[dict[str, Any], Context], Any]


class Capability:
    """One capability: ``name``, ``kind`` (``ask``/``intent``), params schema, risk, code.

    For ``ask`` the handler returns the ANSWER ``data``. For ``intent`` it returns a list of
    :func:`offer` dicts or a :func:`clarify`; attach the commit callable with
    :meth:`on_commit` (it gets the proposal and a :class:`Context`, returns the receipt
    ``result``) and, for undoable offers, the undo callable with :meth:`on_undo` (gets the
    original receipt). Register reconcilers beside them (:meth:`on_reconcile`,
    :meth:`on_reconcile_undo`) so a commit or undo cut short by a crash can be settled.
    """

    def __init__(
        self,
        name: str,
        kind: str,
        handler: Handler,
        *,
        summary: str | None = None,
        params: Mapping[str, Any] | None = None,
        risk: str | None = None,
    ) -> None:
        if kind not in ("ask", "intent"):
            raise ParleyError("bad_argument", "a capability is ask or intent", reason="bad_kind")
        if risk is not None and risk not in RISK_LEVELS:
            raise ParleyError("bad_argument", "risk is low, medium or high", reason="bad_risk")
        self.name = name
        self.kind = kind
        self.handler = handler
        self.summary = summary
        self.params = None if params is None else check_schema(dict(params))
        self.risk = risk
        self.commit: Callable[[dict[str, Any], Context], Any] | None = None
        self.undo: Callable[[dict[str, Any], Context], Any] | None = None
        self.reconcile: Callable[[dict[str, Any], Context], Any] | None = None
        self.reconcile_undo: Callable[[dict[str, Any], Context], Any] | None = None

    def on_commit(
        self, fn: Callable[[dict[str, Any], Context], Any]
    ) -> Callable[[dict[str, Any], Context], Any]:
        """Decorator: the callable that executes a committed proposal."""
        self.commit = fn
        return fn

    def on_undo(
        self, fn: Callable[[dict[str, Any], Context], Any]
    ) -> Callable[[dict[str, Any], Context], Any]:
        """Decorator: the callable that reverses a receipt."""
        self.undo = fn
        return fn

    def on_reconcile(
        self, fn: Callable[[dict[str, Any], Context], Any]
    ) -> Callable[[dict[str, Any], Context], Any]:
        """Decorator: the callable that tells whether a crashed commit's effect happened.

        It gets the proposal and a :class:`Context` whose ``idempotency_key`` is the
        proposal id and whose ``plan`` is the proposal's plan, and returns
        :func:`parley.service.happened` (with the receipt ``result``) or
        :func:`parley.service.not_happened`; anything else (or raising) leaves the commit
        unresolved for an operator.
        """
        self.reconcile = fn
        return fn

    def on_reconcile_undo(
        self, fn: Callable[[dict[str, Any], Context], Any]
    ) -> Callable[[dict[str, Any], Context], Any]:
        """Decorator: as :meth:`on_reconcile`, for an undo cut short (gets the receipt)."""
        self.reconcile_undo = fn
        return fn

    def entry(self) -> dict[str, Any]:
        """The capability's BRIEF entry."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.summary is not None:
            out["summary"] = self.summary
        if self.params is not None:
            out["params"] = self.params
        if self.risk is not None:
            out["risk"] = self.risk
        return out


@dataclass(frozen=True)
class _Auth:
    key: str | None
    check: GrantCheck | None

    @property
    def principal(self) -> str | None:
        return None if self.check is None else self.check.principal


_LOG = logging.getLogger("parley")
_REQUESTS = logging.getLogger("parley.service")


def _log_request(verb: object, re: str | None, final: dict[str, Any], seconds: float) -> None:
    """One line per request: verb, request id, what became of it (never params or grants)."""
    shown = repr(re[:64]) if isinstance(re, str) else "-"
    name = verb if isinstance(verb, str) and verb in VERBS else "?"
    ms = seconds * 1000
    if final.get("kind") != "ERROR":
        _REQUESTS.info("%s %s -> %s (%.0f ms)", name, shown, final.get("kind"), ms)
        return
    code = final.get("code")
    reason = final.get("reason")
    why = f"{code}/{reason}" if isinstance(reason, str) else str(code)
    level = logging.ERROR if code == "internal" else logging.INFO
    _REQUESTS.log(level, "%s %s -> refused %s (%.0f ms)", name, shown, why[:80], ms)


def _late(kind: str, subject: str) -> None:
    """Flag a late finish for the operator: the claim was settled while the callable ran."""
    _LOG.warning(
        "parley: the %s of %s finished after its claim was taken over or settled; its effect"
        " is recorded and counted, check it against the reconciler's answer",
        kind,
        subject,
    )


def _field(frame: dict[str, Any], name: str) -> str:
    value = frame.get(name)
    if not isinstance(value, str) or not value:
        raise ParleyError("bad_frame", f"the request needs a string `{name}`", reason="missing")
    return value


def _grant_fail(check: GrantCheck) -> _RefusalError:
    return _RefusalError(
        check.code or "unauthorized",
        check.message or "no presented grant authorizes the request",
        reason=check.reason,
        need=[] if check.code == "consent_required" else list(check.need),
    )


class _Events(list):  # type: ignore[type-arg]
    """The event list of one request that hands each EVENT frame to ``emit`` at once."""

    def __init__(self, service: Service, emit: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self.service = service
        self.emit = emit
        self.re: str | None = None

    def append(self, body: dict[str, Any]) -> None:
        self.emit(reply(self.service._next_id(), self.re, "EVENT", **body))


class Service:
    """A Parley service: declare capabilities, then feed frames to :meth:`handle`.

    ``service_id`` is the audience id proofs are bound to; ``trusted`` the principal keys
    whose grants are honoured; ``store`` the state (in memory by default); ``rand`` the
    randomness for ids and handles; ``clock`` the time source used when ``handle`` gets no
    ``now``; ``proposal_ttl`` the default proposal lifetime; ``lens=True`` attaches the
    Lens rendering to every final reply; ``commit_lease`` the seconds a started commit or
    undo is held before another process may reconcile it (see :meth:`recover`); ``owner``
    the lease owner name (default ``host:pid:nonce``).
    """

    def __init__(
        self,
        service_id: str,
        *,
        name: str,
        summary: str | None = None,
        trusted: Sequence[str] = (),
        store: Store | None = None,
        rand: Callable[[int], bytes] = secrets.token_bytes,
        clock: Callable[[], float] = time.time,
        proposal_ttl: int = 600,
        lens: bool = False,
        commit_lease: int = COMMIT_LEASE,
        owner: str | None = None,
    ) -> None:
        if not isinstance(service_id, str) or not isinstance(name, str):
            raise ParleyError(
                "bad_argument", "service_id and name are strings", reason="bad_argument"
            )
        if not callable(clock) or not callable(rand):
            raise ParleyError("bad_argument", "clock and rand are callables", reason="bad_argument")
        self.id = service_id
        self.name = name
        self.summary = summary
        self.trusted = frozenset(trusted)
        self._grant_verifier = GrantVerifier()  # this service's memory of decoded tokens
        self.store: Store = store if store is not None else MemoryStore()
        self.rand = rand
        self.clock = clock
        self.proposal_ttl = proposal_ttl
        self.lens = lens
        self.commit_lease = commit_lease
        self._owner = owner
        self._owners: tuple[int, str] | None = None
        self.capabilities: dict[str, Capability] = {}
        self._ids = itertools.count(1)

    @property
    def owner(self) -> str:
        """The lease owner name of this process (``host:pid:nonce``, or the one given).

        Drawn afresh in a forked child, so a child's claims never pass for its parent's.
        The nonce comes from ``secrets``, not ``rand``: it names a process, it is no
        protocol data, and the ids and handles drawn from ``rand`` stay reproducible.
        """
        if self._owner is not None:
            return self._owner
        pid = os.getpid()
        if self._owners is None or self._owners[0] != pid:
            self._owners = (pid, owner_id(secrets.token_bytes))
        return self._owners[1]

    # ---------------------------------------------------------------- declaring

    def add(self, capability: Capability) -> Capability:
        """Register a capability; returns it."""
        if capability.name in self.capabilities:
            raise ParleyError("bad_argument", f"{capability.name} is declared twice", reason="dup")
        self.capabilities[capability.name] = capability
        return capability

    def ask(
        self,
        name: str,
        *,
        summary: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Callable[[Handler], Capability]:
        """Decorator declaring an ``ask`` capability; the function returns ANSWER data."""

        def register(fn: Handler) -> Capability:
            return self.add(Capability(name, "ask", fn, summary=summary, params=params))

        return register

    def intent(
        self,
        name: str,
        *,
        summary: str | None = None,
        params: Mapping[str, Any] | None = None,
        risk: str = "low",
    ) -> Callable[[Handler], Capability]:
        """Decorator declaring an ``intent`` capability; the function returns offers."""

        def register(fn: Handler) -> Capability:
            cap = Capability(name, "intent", fn, summary=summary, params=params, risk=risk)
            return self.add(cap)

        return register

    def brief(self) -> dict[str, Any]:
        """The ``BRIEF`` body (``service`` and ``capabilities``) without fitting."""
        service: dict[str, Any] = {"id": self.id, "name": self.name}
        if self.summary is not None:
            service["summary"] = self.summary
        return {
            "kind": "BRIEF",
            "service": service,
            "capabilities": [c.entry() for c in self.capabilities.values()],
        }

    # ---------------------------------------------------------------- entry point

    def _now(self, now: int | datetime | None) -> int:
        return int(self.clock()) if now is None else epoch_seconds(now, "now")

    def _next_id(self) -> str:
        return f"s{next(self._ids)}"

    def _rid(self, prefix: str) -> str:
        return prefix + b64url_encode(self.rand(12))

    def handle(
        self,
        data: bytes | str | dict[str, Any],
        *,
        now: int | datetime | None = None,
        emit: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Answer one request frame: ``EVENT`` frames, then exactly one final reply.

        ``data`` is the raw line (checked against the 1 MiB limit before parsing) or an
        already-parsed object. Nothing in ``data`` makes it raise: every failure is an
        ``ERROR`` reply whose ``re`` is the request's id (``null`` when the frame has none).
        ``now`` (default: the service clock) is integer epoch seconds or an aware datetime;
        a naive one, or another type, is the caller's mistake and raises
        :class:`parley.ParleyUsageError`. With ``emit``, each ``EVENT`` frame is passed to
        it as soon as the capability sends it (transports stream progress that way) and the
        returned list holds only the final reply.
        """
        if now is not None:
            now = epoch_seconds(now, "now")
        re: str | None = None
        verb: Any = None
        started = time.perf_counter()
        ctx_events: list[dict[str, Any]] = _Events(self, emit) if emit is not None else []
        try:
            at = self._now(now)
            frame = check_envelope(data) if isinstance(data, dict) else parse_frame(data)
            re = frame["id"]
            if isinstance(ctx_events, _Events):
                ctx_events.re = re
            if "verb" not in frame:
                raise ParleyError("bad_frame", "a request needs a verb", reason="not_request")
            verb = frame["verb"]
            if verb not in VERBS:
                raise ParleyError("bad_frame", f"unknown verb {verb[:40]!r}", reason="unknown_verb")
            kind, body = getattr(self, "_" + verb.lower())(frame, at, ctx_events)
            final = reply("", re, kind, **body)
        except ParleyError as exc:
            if re is None:
                re = (
                    request_id(data) if isinstance(data, dict) else getattr(exc, "request_id", None)
                )
            final = self._error(re, exc)
        except (Exception, SystemExit):  # the capability's code crashed: no internals leave
            final = error_reply("", re, "internal", "the service failed to handle the request")
        events = [reply(self._next_id(), re, "EVENT", **e) for e in ctx_events]
        final["id"] = self._next_id()
        if _REQUESTS.isEnabledFor(logging.INFO):
            _log_request(verb, re, final, time.perf_counter() - started)
        if self.lens and final.get("kind") != "EVENT":
            with contextlib.suppress(Exception):  # a rendering problem never costs the reply
                final["lens"] = render_lens(final)
        return [*events, final]

    def _error(self, re: str | None, exc: ParleyError) -> dict[str, Any]:
        fix = getattr(exc, "fix", None)
        return error_reply(
            "",
            re,
            exc.code,
            exc.message,
            fix=fix or None,
            need=getattr(exc, "need", None) or None,
            consent=getattr(exc, "consent", None),
            retry=getattr(exc, "retry", None),
            reason=exc.reason,
        )

    # ---------------------------------------------------------------- helpers

    def _budget(self, frame: dict[str, Any]) -> int:
        budget = frame.get("budget", DEFAULT_BUDGET)
        if type(budget) is not int or budget < 1:
            raise ParleyError(
                "bad_frame", "the budget is a positive integer of tokens", reason="bad_budget"
            )
        return min(budget, MAX_BUDGET)

    def _fit(
        self, body: dict[str, Any], frame: dict[str, Any], key: str | None, now: int
    ) -> dict[str, Any]:
        budget = self._budget(frame)
        try:
            fitted, parked = fit(body, budget, handles=lambda: new_handle(self.rand))
        except ParleyError as exc:
            if exc.code != "bad_frame":
                raise
            # the capability returned something JSON cannot carry: the service's bug, not
            # the peer's frame, and the type names stay inside
            raise ParleyError(
                "internal", "the service produced a reply it cannot send", reason="bad_reply"
            ) from None
        if parked:
            park(self.store.handles, parked, key=key, now=now)
        fitted.pop("kind", None)
        return fitted

    def _capability(self, frame: dict[str, Any], kind: str) -> Capability:
        name = _field(frame, "capability")
        cap = self.capabilities.get(name)
        if cap is None:
            message = f"no capability named {name[:80]!r}"
            if len(name) <= _NAME_SUGGEST_LIMIT:
                close = difflib.get_close_matches(name, list(self.capabilities)[:1000], n=1)
                if close:
                    message += f"; did you mean {close[0]!r}?"
            raise ParleyError("unknown_capability", message, reason="unknown_capability")
        if cap.kind != kind:
            verb = "ASK" if cap.kind == "ask" else "INTENT"
            raise ParleyError(
                "unknown_capability",
                f"{name} is an {cap.kind} capability; send it with {verb}",
                reason="wrong_kind",
            )
        return cap

    def _auth(
        self,
        frame: dict[str, Any],
        verb: str,
        target: str,
        now: int,
        *,
        need_grants: bool,
        ctx: GrantContext | None,
    ) -> _Auth:
        proof, grants = frame.get("proof"), frame.get("grants")
        if grants is not None and (not isinstance(grants, list) or len(grants) > 16):
            raise ParleyError(
                "unauthorized", "grants must be a list of at most 16 tokens", reason="bad_token"
            )
        if proof is None:
            if grants or need_grants:
                raise ParleyError(
                    "unauthorized", "grants need a proof of possession", reason="no_proof"
                )
            return _Auth(None, None)
        key = verify_proof(proof, aud=self.id, verb=verb, target=target, now=now)
        if not grants:
            if need_grants:
                raise ParleyError("unauthorized", "the request carries no grant", reason="no_grant")
            return _Auth(key, None)
        assert ctx is not None
        check = self._grant_verifier.verify(grants, trusted=self.trusted, proof_key=key, ctx=ctx)
        if not check.ok:
            raise _grant_fail(check)
        return _Auth(key, check)

    # ---------------------------------------------------------------- HELLO, ASK, EXPAND

    def _hello(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        return "BRIEF", self._fit(self.brief(), frame, None, now)

    def _ask(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        cap = self._capability(frame, "ask")
        ctx = GrantContext(self.id, "ASK", cap.name, now)
        auth = self._auth(frame, "ASK", cap.name, now, need_grants=False, ctx=ctx)
        params = check_params(cap.params, frame.get("params"))
        context = Context(self.id, now, frame, auth.key, auth.principal, events=events)
        data = cap.handler(params, context)
        return "ANSWER", self._fit({"kind": "ANSWER", "data": data}, frame, auth.key, now)

    def _expand(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        handle = _field(frame, "handle")
        ctx = GrantContext(self.id, "EXPAND", None, now)
        auth = self._auth(frame, "EXPAND", handle, now, need_grants=False, ctx=ctx)
        answer = expand(
            self.store.handles,
            handle,
            self._budget(frame),
            key=auth.key,
            now=now,
            handles=lambda: new_handle(self.rand),
        )
        answer.pop("kind", None)
        return "ANSWER", answer

    # ---------------------------------------------------------------- INTENT

    def _make_proposal(self, cap: Capability, item: object, now: int) -> tuple[dict[str, Any], Any]:
        if not isinstance(item, Mapping):
            raise ParleyError("internal", "an offer is an object", reason="bad_offer")
        effects = item.get("effects", [])
        if not isinstance(effects, list) or not all(
            isinstance(e, dict) and e.get("op") in _OPS and isinstance(e.get("target"), str)
            for e in effects
        ):
            raise ParleyError("internal", "an offer's effects are malformed", reason="bad_offer")
        undo = item.get("undo")
        if undo is not None and (type(undo) is not int or undo <= 0 or cap.undo is None):
            raise ParleyError("internal", "an offer's undo window is malformed", reason="bad_offer")
        ttl = item.get("ttl", self.proposal_ttl)
        proposal: dict[str, Any] = {
            "id": self._rid("p_"),
            "capability": cap.name,
            "summary": item.get("summary"),
            "effects": effects,
            "cost": item.get("cost"),
            "risk": item.get("risk", cap.risk or "low"),
            "undo": None if undo is None else {"window": undo},
            "expires": math.ceil((now + int(ttl)) / 60) * 60,
        }
        try:  # risk and cost well-formed, effects hashable: the service's bug, not the peer's
            ProposalFacts.from_json({**proposal, "hash": ""})
            proposal["hash"] = proposal_hash(proposal)
        except ParleyError:
            raise ParleyError(
                "internal", "the capability made a malformed offer", reason="bad_offer"
            ) from None
        if item.get("data") is not None:
            proposal["data"] = item["data"]
        return proposal, item.get("plan")

    def _intent(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        cap = self._capability(frame, "intent")
        auto = frame.get("auto", False)
        if not isinstance(auto, bool):
            raise ParleyError("bad_frame", "auto must be true or false", reason="bad_auto")
        target = proof_target("INTENT", capability=cap.name, auto=auto, frame_id=frame["id"])
        ctx = GrantContext(self.id, "INTENT", cap.name, now)
        auth = self._auth(frame, "INTENT", target, now, need_grants=False, ctx=ctx)
        if not (auto and auth.key is not None and auth.check is not None):
            # Without a verified grant nothing can be auto-committed, so there is nothing to
            # dedupe: such requests never take a replay-memory slot (a flood of self-made
            # keys cannot fill it and shut auto-commit off for everybody).
            return self._intent_body(cap, frame, now, events, auth, auto=False)
        lease = Lease(self.owner, now, now + self.commit_lease, auth.key)
        claim: str | dict[str, Any]
        claim = self.store.begin_auto(auth.key, frame["id"], now=now, lease=lease)
        if claim == "busy":
            claim = self._settle_auto(auth.key, frame["id"], now)
            if claim == "released":
                claim = self.store.begin_auto(auth.key, frame["id"], now=now, lease=lease)
        if claim in ("busy", "released"):
            raise _RefusalError(
                "conflict", "this auto request is still being handled", reason="busy", retry=1
            )
        if claim == "unresolved":
            raise self._unsettled("commit", "unresolved")
        if isinstance(claim, dict):
            stored = dict(claim)
            kind = stored.pop("kind")
            if kind == "RECEIPT":
                stored["replay"] = True
            if kind == "ERROR":
                refusal = _RefusalError(
                    stored.get("code", "internal"),
                    stored.get("message", ""),
                    reason=stored.get("reason"),
                    need=stored.get("need") or (),
                    consent=stored.get("consent"),
                    retry=stored.get("retry"),
                )
                refusal.fix = stored.get("fix") or []
                raise refusal
            return kind, stored
        try:
            kind, body = self._intent_body(cap, frame, now, events, auth, auto=True)
        except ParleyError as exc:
            err = self._error(frame["id"], exc)
            keep = {k: v for k, v in err.items() if k not in ("parley", "id", "re")}
            self.store.finish_auto(auth.key, frame["id"], keep, now=now)
            raise
        except BaseException:  # never leave the claim "busy" behind
            message = "the service failed to handle the request"
            keep = {"kind": "ERROR", "code": "internal", "message": message}
            self.store.finish_auto(auth.key, frame["id"], keep, now=now)
            raise
        self.store.finish_auto(auth.key, frame["id"], {"kind": kind, **body}, now=now)
        return kind, body

    def _intent_body(
        self,
        cap: Capability,
        frame: dict[str, Any],
        now: int,
        events: list[dict[str, Any]],
        auth: _Auth,
        *,
        auto: bool,
    ) -> tuple[str, dict[str, Any]]:
        params = check_params(cap.params, frame.get("params"))
        context = Context(self.id, now, frame, auth.key, auth.principal, events=events)
        result = cap.handler(params, context)
        if isinstance(result, Clarify):
            options = [{"label": label, "params": patch} for label, patch in result.options]
            return "CLARIFY", {"question": result.question, "options": options}
        if not isinstance(result, list) or not result:
            raise ParleyError("internal", "an intent returns offers", reason="bad_offer")
        records = []
        for item in result:
            proposal, plan = self._make_proposal(cap, item, now)
            records.append(ProposalRecord(proposal, auth.key, auth.principal, plan))
        for record in records:
            # only an INTENT with a verified grant competes for the committable pool
            self.store.add_proposal(record, now=now, vouched=auth.check is not None)
        first = records[0]
        if auto and auth.check is not None and first.proposal["undo"] is not None:
            check = self._commit_check(frame, first, auth.key, now)
            if check.ok:
                # a crash from here on is settled by the commit's receipt (review F4)
                self.store.link_auto(auth.key or "", frame["id"], first.id)
                try:
                    receipt = self._execute(first, auth.key or "", check, now, frame, events)
                except _RefusalError as exc:
                    if exc.code != "consent_required":
                        raise
                else:
                    if receipt is None:  # cannot happen for a proposal made just now
                        raise ParleyError("internal", "the commit raced", reason="race")
                    return "RECEIPT", {"receipt": receipt, "auto": True}
        proposals = {"kind": "PROPOSALS", "proposals": [r.proposal for r in records]}
        return "PROPOSALS", self._fit(proposals, frame, auth.key, now)

    # ---------------------------------------------------------------- COMMIT

    def _blocks(self, grants: object) -> list[str]:
        out: list[str] = []
        for token in grants if isinstance(grants, list) else []:
            try:
                out.extend(decode_grant(token).block_ids)
            except ParleyError:
                continue
        return out

    def _commit_check(
        self, frame: dict[str, Any], record: ProposalRecord, key: str | None, now: int
    ) -> GrantCheck:
        grants = frame.get("grants") or []
        ctx = GrantContext(
            self.id,
            "COMMIT",
            record.proposal["capability"],
            now,
            proposal=ProposalFacts.from_json(record.proposal),
            spent=self.store.spent(self._blocks(grants), excluding=record.id),
            principal=record.principal,
        )
        return self._grant_verifier.verify(grants, trusted=self.trusted, proof_key=key, ctx=ctx)

    def _replay(self, record: ReceiptRecord) -> tuple[str, dict[str, Any]]:
        return "RECEIPT", {"receipt": record.receipt, "replay": True}

    def _commit(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        pid, digest = _field(frame, "proposal"), _field(frame, "hash")
        if not frame.get("grants") or frame.get("proof") is None:
            raise ParleyError("unauthorized", "COMMIT needs grants and a proof", reason="no_grant")
        key = verify_proof(frame["proof"], aud=self.id, verb="COMMIT", target=digest, now=now)
        unknown = ParleyError(
            "not_found", "no such proposal is open for this key", reason="unknown_proposal"
        )
        done = self.store.receipt_for(pid)
        if done is not None:
            if done.key != key:
                raise unknown
            if done.hash != digest:
                raise ParleyError(
                    "conflict", "the hash does not match the committed proposal", reason="hash"
                )
            return self._replay(done)
        record = self.store.proposal(pid, now=now)
        if record is None:
            raise unknown
        if record.key is None:
            raise ParleyError(
                "forbidden",
                "proposals of an INTENT without a proof cannot be committed; re-run the"
                " INTENT with a proof",
                reason="anonymous_proposal",
            )
        if record.key != key:
            raise unknown
        if record.proposal["hash"] != digest:
            raise ParleyError(
                "conflict",
                "the hash does not match the proposal; re-run the INTENT",
                reason="hash_mismatch",
            )
        if now >= int(record.proposal["expires"]):
            raise ParleyError("expired", "the proposal has expired", reason="proposal_expired")
        check = self._commit_check(frame, record, key, now)
        if not check.ok:
            raise self._check_fail(check, record)
        receipt = self._execute(record, key, check, now, frame, events)
        if receipt is None:  # a concurrent COMMIT of this key finished first: a replay
            done = self.store.receipt_for(record.id)
            if done is None or done.key != key:
                raise unknown
            return self._replay(done)
        return "RECEIPT", {"receipt": receipt}

    def _check_fail(self, check: GrantCheck, record: ProposalRecord) -> _RefusalError:
        fail = _grant_fail(check)
        if check.code == "consent_required" and check.principal is not None:
            fail.consent = consent_request(
                record.proposal, service=self.id, principal=check.principal
            )
        return fail

    def _execute(
        self,
        record: ProposalRecord,
        key: str,
        check: GrantCheck,
        now: int,
        frame: dict[str, Any],
        events: list[dict[str, Any]],
    ) -> dict[str, Any] | None:
        """Reserve, run the commit callable, store the receipt; ``None``: already done."""
        proposal = record.proposal
        cost = proposal.get("cost")
        amount = cost["amount"] if isinstance(cost, dict) else 0
        currency = cost["currency"] if isinstance(cost, dict) else ""
        lease = Lease(
            self.owner, now, now + self.commit_lease, key, check.principal, proposal["hash"]
        )
        for _ in range(3):
            try:
                claim = self.store.begin_commit(
                    record.id, check.spend_caps, amount, currency, now=now, lease=lease
                )
            except ParleyError as exc:
                if exc.code == "consent_required" and check.principal is not None:
                    raise _RefusalError(
                        exc.code,
                        exc.message,
                        reason=exc.reason,
                        consent=consent_request(
                            proposal, service=self.id, principal=check.principal
                        ),
                    ) from None
                raise
            if claim != "busy":
                break
            settled = self._settle("commit", record.id, now)
            if settled == "done":
                return None
            if settled != "released":
                raise self._unsettled("commit", settled)
        else:
            raise self._unsettled("commit", "busy")
        if claim == "done":
            return None
        cap = self.capabilities.get(proposal["capability"])
        beat = Heartbeat(self.store, "commit", record.id, lease, self.commit_lease)
        try:
            if cap is None or cap.commit is None:
                raise ParleyError("internal", "the capability cannot commit", reason="no_commit")
            context = Context(
                self.id,
                now,
                frame,
                key,
                check.principal,
                plan=record.plan,
                events=events,
                idempotency_key=record.id,
            )
            with beat:
                result = cap.commit(dict(proposal), context)
            receipt = receipt_of(proposal, at=now, rid=self._rid("r_"), result=result)
            encode_frame({"receipt": receipt}, limit=MAX_FRAME)  # JSON-able and not too large
        except BaseException:
            self.store.abort_commit(record.id, owner=self.owner)
            raise
        blocks = tuple(dict.fromkeys(c.block for c in check.spend_caps)) if amount else ()
        held = ReceiptRecord(receipt, key, check.principal, proposal["hash"], amount, blocks)
        if not self.store.finish_commit(held, now=now, owner=self.owner):
            _late("commit", record.id)
        done = self.store.receipt_for(record.id)
        return receipt if done is None else done.receipt

    # ---------------------------------------------------------------- recovery

    def _unsettled(self, kind: Kind, settled: str) -> _RefusalError:
        if settled == "unresolved":
            return _RefusalError(
                "unavailable",
                f"an earlier attempt of this {kind} was cut short and its outcome is not"
                " known yet; the reservation stays held until an operator resolves it"
                " (parley state resolve)",
                reason=f"{kind}_unresolved",
                retry=60,
            )
        verb = "committed" if kind == "commit" else "undone"
        return _RefusalError("conflict", f"this is being {verb}", reason="busy", retry=1)

    def _ask_reconciler(self, kind: Kind, subject: str, lease: Lease, now: int) -> Outcome | None:
        """The capability reconciler's answer, or ``None`` when it cannot tell."""
        try:
            if kind == "commit":
                record = self.store.proposal(subject, now=lease.began)
                if record is None:
                    return None
                cap = self.capabilities.get(record.proposal["capability"])
                fn = None if cap is None else cap.reconcile
                subject_json, plan = dict(record.proposal), record.plan
            else:
                held = self.store.receipt(subject)
                if held is None:
                    return None
                cap = self.capabilities.get(held.receipt["capability"])
                fn = None if cap is None else cap.reconcile_undo
                subject_json, plan = dict(held.receipt), held.receipt.get("result")
            if fn is None:
                return None
            context = Context(
                self.id, now, {}, lease.key, lease.principal, plan=plan, idempotency_key=subject
            )
            answer = fn(subject_json, context)
        except (Exception, SystemExit):  # a reconciler that fails cannot tell
            return None
        return answer if isinstance(answer, Outcome) else None

    def _settle(self, kind: Kind, subject: str, now: int) -> str:
        """Settle a claim found busy: ``done``, ``released``, ``unresolved`` or ``busy``."""
        lease = self.store.lease(kind, subject)
        if lease is None:
            return "released"  # finished or released meanwhile: claim again
        if not stale(lease, now):
            return "busy"
        mine = replace(lease, owner=self.owner, until=now + self.commit_lease)
        if not self.store.take_over(kind, subject, lease, mine):
            return "busy"
        outcome = self._ask_reconciler(kind, subject, mine, now)
        try:
            if outcome is not None:
                written = resolve(self.store, kind, subject, mine, outcome, now=now, rand=self.rand)
                return "released" if written is None else "done"
        except ParleyError:  # e.g. the store is full: leave it to an operator
            pass
        self.store.take_over(kind, subject, mine, unresolved(mine))
        return "unresolved"

    def _settle_auto(self, key: str, frame_id: str, now: int) -> str | dict[str, Any]:
        """Settle an auto INTENT found unfinished (review F4).

        Its reply when the commit it started has a receipt (after settling that commit if
        it is stale); ``released`` when its handler is gone before any commit took place
        (the claim is dropped: the retry runs afresh); ``unresolved`` when its commit is
        left to an operator; ``busy`` while it may still be running.
        """
        claim = next(
            (c for c in self.store.auto_claims() if (c.key, c.frame) == (key, frame_id)), None
        )
        if claim is None:
            return "released"  # finished or dropped meanwhile: claim again
        if claim.lease is None:
            return "busy"  # who handles it was not recorded: it waits out its replay time
        if claim.proposal is not None:
            done = self.store.receipt_for(claim.proposal)
            if done is None and self.store.lease("commit", claim.proposal) is not None:
                settled = self._settle("commit", claim.proposal, now)
                if settled in ("busy", "unresolved"):
                    return settled
                done = self.store.receipt_for(claim.proposal)
            if done is not None and done.key == key:
                reply = {"kind": "RECEIPT", "receipt": done.receipt, "auto": True}
                self.store.finish_auto(key, frame_id, reply, now=now)
                return reply
        if not stale(claim.lease, now):
            return "busy"
        self.store.abort_auto(key, frame_id)  # no effect took place: the retry runs afresh
        return "released"

    def recover(self, *, now: int | datetime | None = None) -> list[dict[str, str]]:
        """Reconcile every stale commit and undo in the store; report what became of each.

        ``now`` (default: the service clock) is integer epoch seconds or an aware datetime.

        Run it when a service starts (``parley serve`` does): a claim whose owner process
        is gone, or whose lease ran out, is settled by the capability's reconciler
        (``done``: the receipt is written; ``released``: the reservation is given back) or
        left ``unresolved`` for an operator. Claims still held by a live process are left.
        """
        at = self._now(now)
        out = []
        kinds: tuple[Kind, ...] = ("commit", "undo")
        for kind in kinds:
            for subject, lease in self.store.leases(kind):
                if stale(lease, at):
                    out.append(
                        {"kind": kind, "id": subject, "outcome": self._settle(kind, subject, at)}
                    )
        for claim in self.store.auto_claims():
            if claim.lease is not None and stale(claim.lease, at):
                settled = self._settle_auto(claim.key, claim.frame, at)
                outcome = "done" if isinstance(settled, dict) else settled
                out.append({"kind": "auto", "id": claim.frame, "outcome": outcome})
        for item in out:  # an unresolved one needs an operator (parley state resolve)
            level = logging.WARNING if item["outcome"] == "unresolved" else logging.INFO
            _REQUESTS.log(level, "recovered %s %r: %s", item["kind"], item["id"], item["outcome"])
        return out

    # ---------------------------------------------------------------- UNDO

    def _undo(
        self, frame: dict[str, Any], now: int, events: list[dict[str, Any]]
    ) -> tuple[str, dict[str, Any]]:
        rid = _field(frame, "receipt")
        if not frame.get("grants") or frame.get("proof") is None:
            raise ParleyError("unauthorized", "UNDO needs grants and a proof", reason="no_grant")
        key = verify_proof(frame["proof"], aud=self.id, verb="UNDO", target=rid, now=now)
        record = self.store.receipt(rid)
        if record is None:
            raise ParleyError("not_found", "no such receipt", reason="unknown_receipt")
        if record.principal is None:  # fail closed: no principal to root the undo in
            raise ParleyError(
                "forbidden", "this receipt cannot be undone here", reason="no_principal"
            )
        ctx = GrantContext(
            self.id, "UNDO", record.receipt["capability"], now, principal=record.principal
        )
        check = self._grant_verifier.verify(
            frame["grants"], trusted=self.trusted, proof_key=key, ctx=ctx
        )
        if not check.ok:
            if key != record.key and check.principal != record.principal:
                # a stranger (untrusted root or another principal) learns nothing, not even
                # that the receipt exists: the same answer as for an unknown id
                raise ParleyError("not_found", "no such receipt", reason="unknown_receipt")
            raise _grant_fail(check)
        if record.undo is not None:
            return self._undo_replay(record, key)
        window = record.receipt.get("undo")
        if window is None:
            raise ParleyError("expired", "the action cannot be undone", reason="irreversible")
        if now >= int(window["until"]):
            raise ParleyError("expired", "the undo window has closed", reason="undo_expired")
        lease = Lease(self.owner, now, now + self.commit_lease, key, check.principal)
        for _ in range(3):
            claim = self.store.begin_undo(rid, lease=lease)
            if claim != "busy":
                break
            settled = self._settle("undo", rid, now)
            if settled == "done":
                claim = "done"
                break
            if settled != "released":
                raise self._unsettled("undo", settled)
        else:
            raise self._unsettled("undo", "busy")
        if claim == "gone":
            # ours (review pg2 #2): pruned since it was read (another replica's clock is past
            # the window): nothing was claimed, so nothing may run; the answer a retry gets
            raise ParleyError("not_found", "no such receipt", reason="unknown_receipt")
        if claim == "done":
            latest = self.store.receipt(rid)
            assert latest is not None
            return self._undo_replay(latest, key)
        cap = self.capabilities.get(record.receipt["capability"])
        beat = Heartbeat(self.store, "undo", rid, lease, self.commit_lease)
        try:
            if cap is None or cap.undo is None:
                raise ParleyError("internal", "the capability cannot undo", reason="no_undo")
            context = Context(
                self.id, now, frame, key, check.principal, events=events, idempotency_key=rid
            )
            with beat:
                result = cap.undo(dict(record.receipt), context)
            undo = undo_receipt_of(record, at=now, rid=self._rid("r_"), result=result)
        except BaseException:
            self.store.abort_undo(rid, owner=self.owner)
            raise
        if not self.store.finish_undo(rid, undo, key, owner=self.owner):
            _late("undo", rid)
        latest = self.store.receipt(rid)
        if latest is not None and latest.undo is not None and latest.undo["id"] != undo["id"]:
            return self._undo_replay(latest, key)  # reconciled meanwhile: that one stands
        return "RECEIPT", {"receipt": undo}

    def _undo_replay(self, record: ReceiptRecord, key: str) -> tuple[str, dict[str, Any]]:
        if record.undo_key != key or record.undo is None:
            raise ParleyError(
                "conflict", "the receipt was already undone by another request", reason="undone"
            )
        return "RECEIPT", {"receipt": record.undo, "replay": True}
