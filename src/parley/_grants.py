"""Grants (SPEC.md section 6.2 to 6.4): minting, delegation, tokens and verification.

A grant is a non-empty list of blocks ``{"p": payload, "s": signature}``. The root block is
signed by the principal (``iss``); every later block by the ``sub`` of the block before it
and names that block's id in ``prev``. The token is ``"pg1." + b64url(canonical(blocks))``.

:func:`verify_grant` follows section 6.4 step by step and never raises for a bad token: it
returns a :class:`GrantCheck` whose ``code`` is the wire code of section 7 and whose
``reason`` names the failing check.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from ._b64 import b64url_decode, b64url_encode
from ._canonical import MAX_SAFE_INTEGER, canonical, canonical_bytes, sha256_b64url
from ._caveats import (
    COMMIT_ONLY,
    RISK_LEVELS,
    SOFT_CAVEATS,
    Caveat,
    CaveatError,
    Money,
    _parse_many,
    effective_caveats,
    matches,
    parse_caveat,
    wider_than,
)
from ._keys import Key, parse_public_key, verify_signature
from ._report import Report
from ._time import as_epoch
from ._wire import GrantInspection
from .errors import ParleyError

__all__ = [
    "MAX_BLOCKS",
    "MAX_GRANTS",
    "TOKEN_PREFIX",
    "Block",
    "Cost",
    "Grant",
    "GrantCheck",
    "GrantContext",
    "ProposalFacts",
    "SpendCap",
    "block_id",
    "decode_grant",
    "delegate",
    "inspect_grant",
    "mint_grant",
    "verify_grant",
]

TOKEN_PREFIX = "pg1."  # noqa: S105 - a format prefix, not a secret
"""The prefix of every grant token of Parley v1."""

MAX_BLOCKS = 32
"""**Ours:** the longest chain accepted; longer tokens are ``bad_token`` (bounded work)."""

MAX_TOKEN_LENGTH = 64 * 1024
"""**Ours:** the longest token accepted, in characters."""

MAX_GRANTS = 16
"""**Ours:** the most grant tokens one request may present (bounded signature work: a
request could otherwise make the service verify thousands of signatures for nothing)."""


def block_id(signature: str) -> str:
    """Return the id of the block whose signature is ``signature``: ``b64url(sha256(utf8(s)))``."""
    return sha256_b64url(signature.encode("utf-8"))


@dataclass(frozen=True)
class Block:
    """One signed block: ``payload`` (``p``) and its signature ``sig`` (``s``)."""

    payload: Mapping[str, Any]
    sig: str

    @functools.cached_property
    def id(self) -> str:
        """The block id, ``b64url(sha256(utf8(sig)))``."""
        return block_id(self.sig)

    @functools.cached_property
    def signed(self) -> bytes:
        """The bytes the signature covers: ``utf8(canonical(payload))``."""
        return _payload_bytes(self.payload)

    @property
    def sub(self) -> str:
        """The key this block hands the grant to."""
        sub: str = self.payload["sub"]
        return sub

    @property
    def raw_caveats(self) -> list[Any]:
        """The caveats exactly as written in the payload."""
        caveats: list[Any] = self.payload["caveats"]
        return caveats

    def as_json(self) -> dict[str, Any]:
        """Return the block as on the wire, ``{"p": ..., "s": ...}``."""
        return {"p": dict(self.payload), "s": self.sig}


@dataclass(frozen=True)
class Grant:
    """A decoded grant: its blocks, root first. Decoding checks shape, not signatures."""

    blocks: tuple[Block, ...]

    @property
    def id(self) -> str:
        """The grant id: the id of the root block."""
        return self.blocks[0].id

    @property
    def block_ids(self) -> tuple[str, ...]:
        """The id of every block, root first."""
        return tuple(b.id for b in self.blocks)

    @property
    def principal(self) -> str:
        """The principal: ``iss`` of the root block."""
        iss: str = self.blocks[0].payload["iss"]
        return iss

    @property
    def holder(self) -> str:
        """The holder: ``sub`` of the last block."""
        return self.blocks[-1].sub

    @property
    def token(self) -> str:
        """The ``pg1.`` token of this grant."""
        return TOKEN_PREFIX + b64url_encode(canonical_bytes([b.as_json() for b in self.blocks]))


def _bad_token(message: str) -> ParleyError:
    return ParleyError("unauthorized", message, reason="bad_token")


_KEY_TEXT = re.compile(r"ed25519:[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]")


def _check_key(value: object, where: str) -> str:
    if not isinstance(value, str) or _KEY_TEXT.fullmatch(value) is None:
        raise _bad_token(f"{where} is not an 'ed25519:' public key")
    return value


def _dumps(value: Any) -> str:
    """The canonical text of a value parsed by :func:`decode_grant`.

    For safe integers this is section 10 exactly (Python's encoder with sorted keys writes
    the same escapes and code point order). Numbers section 10 forbids keep the spelling
    a lenient signer would have used (``12.5``, ``9223372036854775808``), so a token that
    carries one still verifies and then fails closed on the caveat that holds it.
    """
    return _ENCODER.encode(value)


def _js_number(value: float) -> str:
    """``value`` spelled as ECMAScript's ``Number.prototype.toString`` spells it."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits))
    stripped = text.rstrip("0") or "0"
    exponent = int(exponent) + len(text) - len(stripped)
    k = len(stripped)
    n = k + exponent  # value = 0.<stripped> x 10^n
    minus = "-" if sign else ""
    if k <= n <= 21:
        return minus + stripped + "0" * (n - k)
    if 0 < n <= 21:
        return minus + stripped[:n] + "." + stripped[n:]
    if -6 < n <= 0:
        return minus + "0." + "0" * -n + stripped
    mantissa = stripped if k == 1 else stripped[0] + "." + stripped[1:]
    return f"{minus}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def _dumps_js(value: Any, depth: int = 0) -> str:
    """Like :func:`_dumps`, with non-integer numbers spelled as ECMAScript spells them."""
    if depth > 512:
        raise ValueError("too deep")
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, dict):
        items = (f"{_ENCODER.encode(k)}:{_dumps_js(value[k], depth + 1)}" for k in sorted(value))
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dumps_js(v, depth + 1) for v in value) + "]"
    return _ENCODER.encode(value)


def _payload_bytes(payload: Mapping[str, Any]) -> bytes:
    """The bytes a block's signature covers."""
    return _dumps(payload).encode()


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not JSON")


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_scan_once: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def _check_block_shape(block: object, index: int) -> None:
    """Raise the ``bad_token`` error naming what is wrong with a block's ``{p, s}`` shape."""
    if not isinstance(block, dict) or set(block) != {"p", "s"}:
        raise _bad_token(f"block {index} must be an object with exactly 'p' and 's'")
    if not isinstance(block["p"], dict) or not isinstance(block["s"], str):
        raise _bad_token(f"block {index} needs an object 'p' and a string 's'")


_encode_string = json.encoder.encode_basestring
"""The string encoder :data:`_ENCODER` uses (``ensure_ascii=False``)."""

_C_ENCODER = getattr(json.encoder, "c_make_encoder", None)
if _C_ENCODER is not None:  # CPython: the C encoder, built once instead of on every call
    _encode_decoded = _C_ENCODER(
        None, _ENCODER.default, _encode_string, None, ":", ",", True, False, True
    )

    def _dumps_decoded(value: Any) -> str:
        """:func:`_dumps` of a value just parsed from JSON (so it has no cycles)."""
        return "".join(_encode_decoded(value, 0))

else:  # pragma: no cover - other interpreters
    _dumps_decoded = _dumps


def decode_grant(token: object) -> Grant:
    """Decode a ``pg1.`` token and check the shape of every block (not the signatures).

    Raises :class:`ParleyError` (``unauthorized``/``bad_token``) naming what is wrong.
    """
    if not isinstance(token, str):
        raise _bad_token(f"a grant token is a string, got {type(token).__name__}")
    if not token.startswith(TOKEN_PREFIX):
        raise _bad_token("a grant token starts with 'pg1.'")
    if len(token) > MAX_TOKEN_LENGTH:
        raise _bad_token(f"the grant token is longer than {MAX_TOKEN_LENGTH} characters")
    try:
        text = b64url_decode(token[len(TOKEN_PREFIX) :], what="the grant token").decode("utf-8")
        try:  # a canonical token is one JSON value with nothing around it
            blocks, end = _scan_once(text, 0)
        except StopIteration:
            end = -1
        if end != len(text):  # decode as usual; the canonical check below refuses it
            blocks = _DECODER.decode(text)
    except (ParleyError, ValueError, RecursionError):
        raise _bad_token("the grant token is not base64url of canonical UTF-8 JSON") from None
    if not isinstance(blocks, list) or not blocks:
        raise _bad_token("a grant is a non-empty list of blocks")
    if len(blocks) > MAX_BLOCKS:
        raise _bad_token(f"the grant has more than {MAX_BLOCKS} blocks")
    decoded: list[Block] = []
    signed: list[str] = []
    parts: list[str] = []
    for index, block in enumerate(blocks):
        if (
            type(block) is not dict
            or len(block) != 2
            or "p" not in block
            or "s" not in block
            or type(block["p"]) is not dict
            or type(block["s"]) is not str
        ):
            _check_block_shape(block, index)  # raises, naming what is wrong
        payload, sig = block["p"], block["s"]
        key = payload.get("sub")
        if type(key) is not str or _KEY_TEXT.fullmatch(key) is None:
            _check_key(key, f"block {index} sub")
        if index == 0:
            key = payload.get("iss")
            if type(key) is not str or _KEY_TEXT.fullmatch(key) is None:
                _check_key(key, f"block {index} iss")
            if not isinstance(payload.get("nonce"), str):
                raise _bad_token(f"block {index} needs a string nonce")
        elif not isinstance(payload.get("prev"), str):
            raise _bad_token(f"block {index} needs a string prev")
        if not isinstance(payload.get("caveats"), list):
            raise _bad_token(f"block {index} needs a list of caveats")
        iat = payload.get("iat")
        if type(iat) is not int or not -MAX_SAFE_INTEGER <= iat <= MAX_SAFE_INTEGER:
            raise _bad_token(f"block {index} needs an integer iat")
        decoded.append(Block(payload, sig))
        try:
            payload_text = _dumps_decoded(payload)
        except (RecursionError, ValueError):
            raise _bad_token(f"block {index} payload nests too deeply") from None
        signed.append(payload_text)
        parts.append(f'{{"p":{payload_text},"s":{_encode_string(sig)}}}')
    # **Ours:** the token must be exactly the canonical text of its blocks, as section 6.2
    # encodes it. One comparison refuses duplicate members, escaped lone surrogates,
    # whitespace and any re-spelled JSON: every token has one spelling. The canonical text
    # of each payload, built for the comparison, is kept as the bytes its signature covers.
    if f"[{','.join(parts)}]" != text:
        # A lenient signer (the reference's JavaScript) spells a non-integer number the
        # way ECMAScript does (1e-7, 1e+21), which Python spells differently (1e-07).
        # Such a token still verifies and then fails closed on the caveat holding it.
        try:
            signed = [_dumps_js(b.payload) for b in decoded]
        except (ValueError, RecursionError):
            raise _bad_token("the grant token is not in canonical JSON form") from None
        again = ",".join(
            f'{{"p":{p},"s":{_dumps(b.sig)}}}' for p, b in zip(signed, decoded, strict=True)
        )
        if f"[{again}]" != text:
            raise _bad_token("the grant token is not in canonical JSON form")
    for block, payload_text in zip(decoded, signed, strict=True):
        block.__dict__["signed"] = payload_text.encode()
    return Grant(tuple(decoded))


def _as_grant(grant: Grant | str) -> Grant:
    """Decode a token, or re-check a :class:`Grant` built by hand through its token.

    A ``Grant`` can be constructed with any blocks, so it is never trusted as is: it is
    encoded and decoded again, which checks every block's shape like a token's.
    """
    if not isinstance(grant, Grant):
        return decode_grant(grant)
    try:
        if not isinstance(grant.blocks, tuple):
            raise TypeError("blocks")
        text = _dumps([b.as_json() for b in grant.blocks]).encode("utf-8")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError):
        raise _bad_token(
            "the grant's blocks are not {p, s} blocks with an object payload"
        ) from None
    return decode_grant(TOKEN_PREFIX + b64url_encode(text))


def _parse_all(caveats: object, what: str) -> list[Caveat]:
    if not isinstance(caveats, (list, tuple)):
        raise ParleyError("invalid_params", f"{what} caveats must be a list", reason="bad_caveat")
    parsed = []
    for index, raw in enumerate(caveats):
        try:
            parsed.append(parse_caveat(raw))
        except CaveatError as exc:
            raise ParleyError(
                "invalid_params", f"{what} caveat {index}: {exc.message}", reason=exc.reason
            ) from None
    return parsed


def _check_time(value: object, name: str) -> int:
    value = as_epoch(value, name)  # an aware datetime is epoch seconds; a naive one refused
    if type(value) is not int or abs(value) > MAX_SAFE_INTEGER:
        raise ParleyError("invalid_params", f"{name} must be a safe integer", reason="bad_clock")
    return value


def mint_grant(
    issuer: Key,
    sub: str,
    caveats: Sequence[Mapping[str, Any]],
    *,
    iat: int,
    nonce: str | None = None,
) -> str:
    """Return the token of a root grant from principal ``issuer`` to holder key ``sub``.

    Caveats are checked first: a malformed or unknown caveat would make the grant useless
    (it fails closed), so minting refuses it with :class:`ParleyError`. ``nonce`` defaults
    to 16 random bytes in base64url.
    """
    if not isinstance(issuer, Key):
        raise ParleyError("invalid_params", "a grant is signed by a Key", reason="bad_key")
    parse_public_key(sub)
    _parse_all(caveats, "the grant's")
    payload = {
        "iss": issuer.public,
        "sub": sub,
        "caveats": [dict(c) for c in caveats],
        "iat": _check_time(iat, "iat"),
        "nonce": b64url_encode(secrets.token_bytes(16)) if nonce is None else nonce,
    }
    if not isinstance(payload["nonce"], str):
        raise ParleyError("invalid_params", "the nonce must be a string", reason="bad_token")
    block = Block(payload, issuer.sign(canonical_bytes(payload)))
    return Grant((block,)).token


def delegate(
    grant: Grant | str,
    holder: Key,
    sub: str,
    caveats: Sequence[Mapping[str, Any]],
    *,
    iat: int,
) -> str:
    """Append a delegation block handing a narrower grant to ``sub``; return the new token.

    ``holder`` must be the grant's current holder. Every new caveat must be well-formed and
    no wider than the chain's effective caveat of the same kind (a later ``exp``, a larger
    ``per``/``spend`` cap, a higher ``risk``, a ``svc``/``verbs``/``can`` entry the parent
    does not allow): such a caveat would have no effect, since every block is checked, and
    would mislead whoever reads the token, so it is refused. An empty list inherits.
    """
    parent = _as_grant(grant)
    if not isinstance(holder, Key) or holder.public != parent.holder:
        raise ParleyError(
            "invalid_params",
            "only the grant's holder can delegate it; the key given is not its holder",
            reason="holder_mismatch",
        )
    parse_public_key(sub)
    new = _parse_all(caveats, "the delegation's")
    chain: list[Caveat] = []
    for index, block in enumerate(parent.blocks):
        chain.extend(_parse_all(block.raw_caveats, f"block {index}'s"))
    for caveat in new:
        why = wider_than(caveat, chain)
        if why is not None:
            raise ParleyError(
                "invalid_params",
                f"a delegation can only narrow: {why}",
                reason="caveat_wider",
            )
    payload = {
        "prev": parent.blocks[-1].id,
        "sub": sub,
        "caveats": [dict(c) for c in caveats],
        "iat": _check_time(iat, "iat"),
    }
    block = Block(payload, holder.sign(canonical_bytes(payload)))
    return Grant((*parent.blocks, block)).token


# ---------------------------------------------------------------- verification


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
    return ParleyError("invalid_params", f"grant check context: {message}", reason="bad_context")


@dataclass(frozen=True)
class GrantContext:
    """The request a grant is checked against (the ``ctx`` of :func:`verify_grant`).

    ``service`` is the service id, ``verb`` the request verb, ``capability`` the capability
    named (for ``UNDO``: the capability of the receipt being undone), ``now`` the service
    clock. A ``COMMIT`` check takes ``proposal``; without it, every ``per``, ``spend``,
    ``risk`` and ``only`` caveat fails (hard). ``spent`` gives the spend already attributed to
    a block id (committed plus reserved). ``principal``, when set, is the principal the
    operation must be rooted in (``UNDO`` of a receipt, ``COMMIT`` of a proposal made under
    a grant).
    """

    service: str
    verb: str
    capability: str | None
    now: int
    proposal: ProposalFacts | None = None
    spent: Mapping[str, int] = field(default_factory=dict)
    principal: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.service, str) or not isinstance(self.verb, str):
            raise _ctx_error("service and verb must be strings")
        if self.capability is not None and not isinstance(self.capability, str):
            raise _ctx_error("capability must be a string or None")
        object.__setattr__(self, "now", _check_time(self.now, "now"))
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

    def raise_for_failure(self) -> None:
        """Raise :class:`ParleyError` with this result's code and reason unless ``ok``."""
        if not self.ok:
            raise ParleyError(
                self.code or "unauthorized", self.message, reason=self.reason or "no_grant"
            )


_TIER = {"consent_required": 3, "forbidden": 2, "unauthorized": 1}


def _fail(
    code: str, reason: str, message: str, grant: Grant | None = None, index: int | None = None
) -> GrantCheck:
    if grant is None:
        return GrantCheck(False, code, reason, message, index=index)
    return GrantCheck(
        False,
        code,
        reason,
        message,
        grant=grant.id,
        blocks=grant.block_ids,
        principal=grant.principal,
        holder=grant.holder,
        index=index,
    )


def _ok_svc(value: tuple[str, ...], block: str, ctx: GrantContext) -> bool:
    return ctx.service in value


def _ok_verbs(value: tuple[str, ...], block: str, ctx: GrantContext) -> bool:
    return ctx.verb in value


def _ok_can(value: tuple[str, ...], block: str, ctx: GrantContext) -> bool:
    cap = ctx.capability
    return cap is not None and any(matches(p, cap) for p in value)


def _ok_exp(value: int, block: str, ctx: GrantContext) -> bool:
    return bool(ctx.now < value)


def _ok_nbf(value: int, block: str, ctx: GrantContext) -> bool:
    return bool(ctx.now >= value)


# The COMMIT-only kinds: a COMMIT check without the proposal cannot satisfy them (hard).


def _ok_per(ceiling: Money, block: str, ctx: GrantContext) -> bool:
    proposal = ctx.proposal
    if proposal is None:
        return False
    cost = proposal.cost
    return cost is None or (cost.currency == ceiling.currency and cost.amount <= ceiling.max)


def _ok_spend(limit: Money, block: str, ctx: GrantContext) -> bool:
    proposal = ctx.proposal
    if proposal is None:
        return False
    cost = proposal.cost
    already = ctx.spent.get(block, 0)
    if cost is None:
        return already <= limit.max
    return cost.currency == limit.currency and already + cost.amount <= limit.max


def _ok_risk(value: str, block: str, ctx: GrantContext) -> bool:
    proposal = ctx.proposal
    return proposal is not None and RISK_LEVELS[proposal.risk] <= RISK_LEVELS[value]


def _ok_only(value: str, block: str, ctx: GrantContext) -> bool:
    proposal = ctx.proposal
    return proposal is not None and bool(proposal.hash == value)


_CAVEAT_CHECKS: dict[str, Any] = {
    "svc": _ok_svc,
    "verbs": _ok_verbs,
    "can": _ok_can,
    "exp": _ok_exp,
    "nbf": _ok_nbf,
    "per": _ok_per,
    "spend": _ok_spend,
    "risk": _ok_risk,
    "only": _ok_only,
}


def _caveat_ok(caveat: Caveat, block: str, ctx: GrantContext) -> bool:
    kind, value = caveat
    if kind in COMMIT_ONLY and ctx.verb != "COMMIT":
        return True
    ok: bool = _CAVEAT_CHECKS[kind](value, block, ctx)
    return ok


def _check_chain(
    grant: Grant, trusted: frozenset[str], proof_key: str | None, ctx: GrantContext, at: int
) -> GrantCheck | None:
    """Steps 2 to 5 of section 6.4 (and the rooting check): the failure, or ``None``."""
    # Step 2: every signature, against iss for the root and the previous sub after it.
    signer = grant.principal
    for index, block in enumerate(grant.blocks):
        if not verify_signature(signer, block.signed, block.sig):
            return _fail(
                "unauthorized",
                "bad_signature",
                f"block {index} is not signed by the key it must be signed by",
                grant,
                index=at,
            )
        signer = block.sub
    # Step 3: every prev names the block before it.
    for index in range(1, len(grant.blocks)):
        if grant.blocks[index].payload["prev"] != grant.blocks[index - 1].id:
            return _fail(
                "unauthorized",
                "broken_chain",
                f"block {index} prev does not name block {index - 1}",
                grant,
                index=at,
            )
    # Step 4: the root is a principal the service trusts.
    if grant.principal not in trusted:
        return _fail(
            "unauthorized",
            "untrusted_issuer",
            "the grant's principal is not trusted here",
            grant,
            index=at,
        )
    # Step 5: the holder is the key that signed the proof.
    if proof_key is None or grant.holder != proof_key:
        return _fail(
            "unauthorized",
            "holder_mismatch",
            "the grant's holder is not the key that signed the proof",
            grant,
            index=at,
        )
    if ctx.principal is not None and grant.principal != ctx.principal:
        return _fail(
            "forbidden",
            "principal_mismatch",
            "the grant is rooted in another principal than the one this operation belongs to",
            grant,
            index=at,
        )
    return None


class _Prepared(NamedTuple):
    """A decoded, shape-checked token and its parsed caveats (never handed to callers)."""

    grant: Grant
    caveats: tuple[tuple[str, tuple[Caveat, ...]], ...] | None
    """``(block id, parsed caveats)`` per block; ``None`` when a caveat is malformed/unknown."""
    authorized: dict[str, Any]
    """The fields of an ``ok`` result but ``spend_caps`` (strings and tuples only)."""


TOKEN_CACHE_SIZE = 256
"""**Ours:** how many decoded tokens :func:`verify_grant` remembers (by exact token text).

Only the token's decoding, shape checks and caveat parsing are remembered: every call still
verifies every signature and evaluates every caveat against its request. Nothing cached is
handed out: a result that would show a caveat (``need``) is built from a fresh decoding."""

MAX_CACHED_TOKEN_LENGTH = 4096
"""**Ours:** longer tokens are never remembered, which bounds the cache's memory (a 3-block
chain with a few caveats each is about 1,500 characters)."""


@functools.lru_cache(maxsize=TOKEN_CACHE_SIZE)
def _prepare(token: str) -> _Prepared:
    """Decode ``token`` and parse its caveats (raises :class:`ParleyError` like decode_grant)."""
    grant = decode_grant(token)
    parsed: list[tuple[str, tuple[Caveat, ...]]] = []
    ids = grant.block_ids
    authorized = {
        **_CHECK_DEFAULTS,
        "ok": True,
        "grant": ids[0],
        "blocks": ids,
        "principal": grant.principal,
        "holder": grant.holder,
        "message": "authorized",
    }
    try:
        for block in grant.blocks:
            parsed.append((block.id, _parse_many(block.raw_caveats)))
    except CaveatError:
        return _Prepared(grant, None, authorized)
    return _Prepared(grant, tuple(parsed), authorized)


def _check_one(
    token: object, trusted: frozenset[str], proof_key: str | None, ctx: GrantContext, at: int
) -> GrantCheck:
    if type(token) is not str or len(token) > MAX_CACHED_TOKEN_LENGTH:
        return _check_plain(token, trusted, proof_key, ctx, at)
    try:
        prepared = _prepare(token)
    except ParleyError as exc:
        return _fail("unauthorized", "bad_token", exc.message, index=at)
    grant = prepared.grant
    failed = _check_chain(grant, trusted, proof_key, ctx, at)
    if failed is not None:
        return failed
    if prepared.caveats is None:
        return _check_caveats(decode_grant(token), ctx, at)
    caps: list[SpendCap] = []
    for bid, parsed in prepared.caveats:
        for caveat in parsed:
            kind, value = caveat
            if kind == "spend":
                caps.append(SpendCap(bid, value.max, value.currency))
            if not _caveat_ok(caveat, bid, ctx):
                # A failure shows caveats in ``need``: report it from a fresh decoding
                # (steps 1 to 5 already passed on the same text), so no result ever
                # holds the cached token's objects.
                return _check_caveats(decode_grant(token), ctx, at)
    # The ``ok`` result, built as GrantCheck's own __init__ would build it, in one step.
    result: GrantCheck = object.__new__(GrantCheck)
    fields = result.__dict__
    fields.update(prepared.authorized)
    fields["index"] = at
    fields["spend_caps"] = tuple(caps)
    return result


_CHECK_DEFAULTS = {f.name: f.default for f in dataclasses.fields(GrantCheck)}


def _authorized(grant: Grant, caps: list[SpendCap], at: int) -> GrantCheck:
    return GrantCheck(
        True,
        grant=grant.id,
        blocks=grant.block_ids,
        index=at,
        principal=grant.principal,
        holder=grant.holder,
        spend_caps=tuple(caps),
        message="authorized",
    )


def _check_plain(
    token: object, trusted: frozenset[str], proof_key: str | None, ctx: GrantContext, at: int
) -> GrantCheck:
    """Section 6.4 on a fresh decoding of ``token`` (no cache)."""
    try:
        grant = decode_grant(token)
    except ParleyError as exc:
        return _fail("unauthorized", "bad_token", exc.message, index=at)
    failed = _check_chain(grant, trusted, proof_key, ctx, at)
    if failed is not None:
        return failed
    return _check_caveats(grant, ctx, at)


def _check_caveats(grant: Grant, ctx: GrantContext, at: int) -> GrantCheck:
    """Step 6 of section 6.4 on a grant whose steps 1 to 5 passed."""
    # Step 6: every caveat of every block; malformed or unknown ones fail hard.
    hard: list[tuple[str, dict[str, Any] | Any]] = []
    soft: list[Any] = []
    caps: list[SpendCap] = []
    for block in grant.blocks:
        bid = block.id
        for raw in block.raw_caveats:
            try:
                caveat = parse_caveat(raw)
            except CaveatError as exc:
                hard.append((exc.reason or "caveat_malformed", _shallow(raw)))
                continue
            if caveat.kind == "spend":
                money: Money = caveat.value
                caps.append(SpendCap(bid, money.max, money.currency))
            if not _caveat_ok(caveat, bid, ctx):
                if caveat.kind in SOFT_CAVEATS and ctx.proposal is not None:
                    soft.append(raw)
                else:
                    hard.append(("caveat_failed", raw))
    ids = grant.block_ids
    if hard:
        reasons = [r for r, _ in hard]
        reason = next(
            (r for r in ("caveat_malformed", "caveat_unknown") if r in reasons), "caveat_failed"
        )
        need = tuple(c for _, c in hard) + tuple(soft)
        return GrantCheck(
            False,
            "forbidden",
            reason,
            _describe(reason, hard[0][1]),
            need=need,
            grant=ids[0],
            blocks=ids,
            principal=grant.principal,
            holder=grant.holder,
            index=at,
        )
    if soft:
        return GrantCheck(
            False,
            "consent_required",
            "caveat_failed",
            "the commit exceeds the grant's "
            + ", ".join(sorted({next(iter(c)) for c in soft}))
            + " limit; the principal must approve it",
            need=tuple(soft),
            grant=ids[0],
            blocks=ids,
            principal=grant.principal,
            holder=grant.holder,
            index=at,
        )
    return _authorized(grant, caps, at)


MAX_NEED_DEPTH = 16
"""**Ours:** a malformed caveat nested deeper than this is reported in ``need`` as
``{"nested": "too deep to show"}``: a well-formed caveat is at most 3 levels deep, and a
token could otherwise make every error reply carry ~900 levels of nesting (more than some
JSON encoders, and the service's own stack, accept)."""

_TOO_DEEP = {"nested": "too deep to show"}


def _shallow(raw: Any) -> Any:
    """``raw``, or a placeholder when it nests deeper than :data:`MAX_NEED_DEPTH`."""
    level: list[Any] = [raw]
    for _ in range(MAX_NEED_DEPTH):
        level = [
            child
            for node in level
            if isinstance(node, (dict, list))
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, (dict, list))
        ]
        if not level:
            return raw
    return dict(_TOO_DEEP)


def _describe(reason: str, caveat: object) -> str:
    try:
        shown = canonical(caveat)
    except ParleyError:
        shown = "a caveat that is not canonical JSON"
    if reason == "caveat_unknown":
        return f"the grant carries an unknown caveat {shown}, which fails closed"
    if reason == "caveat_malformed":
        return f"the grant carries a malformed caveat {shown}, which fails closed"
    return f"the request is outside the grant's caveat {shown}"


def verify_grant(
    tokens: Sequence[str] | str,
    *,
    trusted: Sequence[str] | frozenset[str] | set[str],
    proof_key: str | None,
    ctx: GrantContext,
) -> GrantCheck:
    """Check grant tokens against one request (SPEC.md section 6.4, steps 1 to 6 in order).

    ``trusted`` holds the principal keys this service trusts; ``proof_key`` is the key whose
    proof of possession was already verified (:func:`verify_proof`). Never raises for a bad
    token or caveat.

    With several tokens the request is authorized if any one grant authorizes it alone.
    Otherwise the reported failure is, in this order of precedence: ``consent_required``
    if some grant fails only on ``per``/``spend``/``risk``; else ``forbidden`` if some grant
    passes steps 1 to 5; else ``unauthorized``. Within a tier the first such token wins.
    """
    if not isinstance(ctx, GrantContext):
        raise _ctx_error("ctx must be a GrantContext")
    if isinstance(tokens, str):
        tokens = [tokens]
    if not isinstance(tokens, (list, tuple)) or not tokens:
        return GrantCheck(False, "unauthorized", "no_grant", "the request carries no grant")
    if len(tokens) > MAX_GRANTS:
        return GrantCheck(
            False,
            "unauthorized",
            "too_many_grants",
            f"the request carries {len(tokens)} grants; at most {MAX_GRANTS} are checked",
        )
    if isinstance(trusted, (str, bytes)) or not isinstance(trusted, Iterable):
        raise _ctx_error("trusted must be a collection of principal keys")
    trust = frozenset(k for k in trusted if isinstance(k, str))
    best: GrantCheck | None = None
    for index, token in enumerate(tokens):
        result = _check_one(token, trust, proof_key, ctx, index)
        if result.ok:
            return result
        if best is None or _TIER[result.code or "unauthorized"] > _TIER[best.code or ""]:
            best = result
    assert best is not None
    return best


def inspect_grant(token: Grant | str) -> GrantInspection:
    """Describe a grant without trusting it: ids, principal, holder, blocks, caveats.

    ``caveats`` is the effective caveat list of the whole chain (one narrowest caveat per
    kind, see :func:`parley.effective_caveats`); ``malformed`` lists caveats that would fail
    closed; ``signatures`` says whether every signature and ``prev`` link checks out (trust
    in the principal is the verifier's business).
    """
    grant = _as_grant(token)
    parsed: list[Caveat] = []
    malformed: list[Any] = []
    for block in grant.blocks:
        for raw in block.raw_caveats:
            try:
                parsed.append(parse_caveat(raw))
            except CaveatError:
                malformed.append(raw)
    chain_ok = True
    signer = grant.principal
    for index, block in enumerate(grant.blocks):
        good = verify_signature(signer, block.signed, block.sig)
        if index and block.payload["prev"] != grant.blocks[index - 1].id:
            good = False
        chain_ok = chain_ok and good
        signer = block.sub
    return {
        "grant": grant.id,
        "principal": grant.principal,
        "holder": grant.holder,
        "depth": len(grant.blocks),
        "signatures": chain_ok,
        "blocks": [
            {"id": b.id, "sub": b.sub, "iat": b.payload["iat"], "caveats": b.raw_caveats}
            for b in grant.blocks
        ],
        "caveats": [c.as_json() for c in effective_caveats(parsed)],
        "malformed": malformed,
    }
