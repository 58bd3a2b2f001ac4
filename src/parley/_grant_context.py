"""What a grant is checked against and what the check answers (SPEC.md section 6.4).

:class:`GrantContext` is the request (service, verb, capability, clock, and for ``COMMIT``
the proposal's :class:`ProposalFacts`); :class:`GrantCheck` is the result, with the
:class:`SpendCap` list of the authorizing grant. Every value is checked when it is built,
so the verification steps never meet a field they cannot compare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ._canonical import MAX_SAFE_INTEGER
from ._caveats import RISK_LEVELS
from ._report import Report
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = [
    "Cost",
    "GrantCheck",
    "GrantContext",
    "ProposalFacts",
    "SpendCap",
]


@dataclass(frozen=True)
class Cost:
    """A proposal cost: ``amount`` in minor units of ``currency``."""

    amount: int
    currency: str

    def __post_init__(self) -> None:
        amount = self.amount
        if type(amount) is not int or not 0 <= amount <= MAX_SAFE_INTEGER:
            raise _ctx_error(f"cost.amount must be an integer from 0 to 2^53-1, not {amount!r}")
        if not isinstance(self.currency, str):
            raise _ctx_error("cost.currency must be a string")


@dataclass(frozen=True)
class ProposalFacts:
    """What a ``COMMIT`` check needs of the proposal: its hash, cost and risk."""

    hash: str
    cost: Cost | None
    risk: str

    def __post_init__(self) -> None:
        # A hand-built value is checked as from_json checks parsed JSON, so the grant
        # check never meets a risk it cannot rank or an amount it cannot compare.
        if not isinstance(self.hash, str):
            raise _ctx_error("proposal.hash must be a string")
        if self.cost is not None and not isinstance(self.cost, Cost):
            raise _ctx_error("proposal.cost must be None or a Cost")
        if not isinstance(self.risk, str) or self.risk not in RISK_LEVELS:
            raise _ctx_error("proposal.risk must be low, medium or high")

    @classmethod
    def from_json(cls, data: object) -> ProposalFacts:
        """Build from ``{"hash", "cost": null | {"amount", "currency"}, "risk"}`` or a proposal."""
        if not isinstance(data, dict):
            raise _ctx_error("proposal must be an object")
        hash_, cost, risk = data.get("hash"), data.get("cost"), data.get("risk")
        if not isinstance(hash_, str):
            raise _ctx_error("proposal.hash must be a string")
        if not isinstance(risk, str) or risk not in RISK_LEVELS:
            raise _ctx_error("proposal.risk must be low, medium or high")
        parsed: Cost | None = None
        if cost is not None:
            if (
                not isinstance(cost, dict)
                or type(cost.get("amount")) is not int
                or not 0 <= cost["amount"] <= MAX_SAFE_INTEGER
                or not isinstance(cost.get("currency"), str)
            ):
                raise _ctx_error("proposal.cost must be null or {amount: int >= 0, currency}")
            parsed = Cost(cost["amount"], cost["currency"])
        return cls(hash_, parsed, risk)


def _ctx_error(message: str) -> ParleyError:
    return ParleyError("bad_argument", f"grant check context: {message}", reason="bad_context")


@dataclass(frozen=True, init=False)
class GrantContext:
    """The request a grant is checked against (the ``ctx`` of :func:`verify_grant`).

    ``service`` is the service id, ``verb`` the request verb, ``capability`` the capability
    named (for ``UNDO``: the capability of the receipt being undone), ``now`` the service
    clock: integer epoch seconds or an aware :class:`~datetime.datetime`, kept as epoch
    seconds (a naive datetime is the usage error ``bad_argument``/``naive_datetime``). A
    ``COMMIT`` check takes ``proposal``; without it, every ``per``, ``spend``, ``risk`` and
    ``only`` caveat fails (hard). ``spent`` gives the spend already attributed to a block id
    (committed plus reserved). ``principal``, when set, is the principal the operation must
    be rooted in (``UNDO`` of a receipt, ``COMMIT`` of a proposal made under a grant).
    """

    service: str
    verb: str
    capability: str | None
    now: int
    proposal: ProposalFacts | None
    spent: Mapping[str, int]
    principal: str | None

    def __init__(
        self,
        service: str,
        verb: str,
        capability: str | None,
        now: int | datetime,
        proposal: ProposalFacts | None = None,
        spent: Mapping[str, int] | None = None,
        principal: str | None = None,
    ) -> None:
        """Check every field (see the class docstring); ``now`` becomes epoch seconds."""
        put = object.__setattr__
        put(self, "service", service)
        put(self, "verb", verb)
        put(self, "capability", capability)
        put(self, "now", epoch_seconds(now, "now"))
        put(self, "proposal", proposal)
        put(self, "spent", {} if spent is None else spent)
        put(self, "principal", principal)
        self._check()

    def _check(self) -> None:
        if not isinstance(self.service, str) or not isinstance(self.verb, str):
            raise _ctx_error("service and verb must be strings")
        if self.capability is not None and not isinstance(self.capability, str):
            raise _ctx_error("capability must be a string or None")
        if self.proposal is not None and not isinstance(self.proposal, ProposalFacts):
            raise _ctx_error("proposal must be ProposalFacts or None")
        if self.principal is not None and not isinstance(self.principal, str):
            raise _ctx_error("principal must be a public key string or None")
        if not isinstance(self.spent, Mapping) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in self.spent.items()
        ):
            raise _ctx_error("spent maps block ids to non-negative integers")

    @classmethod
    def from_json(cls, data: object) -> GrantContext:
        """Build from ``{service, verb, capability, now, proposal?, spent?, principal?}``."""
        if not isinstance(data, dict):
            raise _ctx_error("ctx must be an object")
        proposal = data.get("proposal")
        return cls(
            service=data.get("service"),  # type: ignore[arg-type]
            verb=data.get("verb"),  # type: ignore[arg-type]
            capability=data.get("capability"),
            now=data.get("now"),  # type: ignore[arg-type]
            proposal=None if proposal is None else ProposalFacts.from_json(proposal),
            spent=_spent(data.get("spent")),
            principal=data.get("principal"),
        )


def _spent(value: object) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _ctx_error("spent maps block ids to amounts")
    return dict(value)


@dataclass(frozen=True)
class SpendCap:
    """A ``spend`` caveat of the authorizing grant: its block id, cap and currency."""

    block: str
    max: int
    currency: str


@dataclass(frozen=True)
class GrantCheck(Report):
    """The result of :func:`verify_grant`.

    ``ok`` is true when one grant authorizes the request; otherwise ``code`` is
    ``unauthorized``, ``forbidden`` or ``consent_required`` and ``reason`` names the
    failing check. ``need`` lists the caveats that blocked it. ``grant``, ``blocks``,
    ``principal`` and ``holder`` describe the grant the result is about (the authorizing
    one, or the one whose failure is reported); ``index`` is its position in the tokens.
    ``spend_caps`` lists the ``spend`` caveats of that grant, where a commit's cost must be
    added.
    """

    ok: bool
    code: str | None = None
    reason: str | None = None
    message: str = ""
    need: tuple[Any, ...] = ()
    grant: str | None = None
    blocks: tuple[str, ...] = ()
    principal: str | None = None
    holder: str | None = None
    index: int | None = None
    spend_caps: tuple[SpendCap, ...] = ()

    def as_json(self) -> dict[str, Any]:
        """Return ``{ok, code?, reason?, need, grant, blocks}`` (the vector output shape)."""
        out: dict[str, Any] = {"ok": self.ok}
        if self.code is not None:
            out["code"] = self.code
        if self.reason is not None:
            out["reason"] = self.reason
        out["need"] = list(self.need)
        out["grant"] = self.grant
        out["blocks"] = list(self.blocks)
        return out

    def raise_for_failure(self) -> GrantCheck:
        """Return this check when ``ok``; raise :class:`~parley.ParleyProtocolError` otherwise.

        The returned check names the verified grant (``grant``, ``principal``, ``holder``,
        ``index``) and its ``spend_caps``, so a service can write
        ``check = parley.verify_grant(...).raise_for_failure()``. A failed check raises
        with its own ``code`` (``unauthorized``, ``forbidden`` or ``consent_required``),
        ``reason`` and message.
        """
        if not self.ok:
            raise ParleyError(
                self.code or "unauthorized", self.message, reason=self.reason or "no_grant"
            )
        return self
