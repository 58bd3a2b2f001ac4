"""Grant verification (SPEC.md section 6.4): steps 1 to 6 against one request.

:func:`verify_grant` never raises for a bad token: it returns a :class:`GrantCheck` whose
``code`` is the wire code of section 7 and whose ``reason`` names the failing check.
Step 1 (decoding and shape) is :func:`parley._grant_token.decode_grant`; steps 2 to 5
(signatures, ``prev`` links, trusted root, holder) are :func:`_check_chain`; step 6 (every
caveat of every block) is :func:`_check_caveats`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ._canonical import canonical
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
)
from ._grant_context import GrantCheck, GrantContext, SpendCap, _ctx_error
from ._grant_token import Grant, as_grant, decode_grant
from ._keys import _signature_ok
from ._wire import GrantInspection
from .errors import ParleyError

__all__ = [
    "MAX_GRANTS",
    "MAX_REMEMBERED_TOKEN_LENGTH",
    "REMEMBERED_TOKENS",
    "GrantVerifier",
    "inspect_grant",
    "verify_grant",
]

MAX_GRANTS = 16
"""**Ours:** the most grant tokens one request may present (bounded signature work: a
request could otherwise make the service verify thousands of signatures for nothing)."""


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
        if not _signature_ok(signer, block.signed, block.sig):
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


MAX_REMEMBERED_TOKEN_LENGTH = 4096
"""**Ours:** a :class:`GrantVerifier` never remembers a longer token, which bounds its memory
(a 3-block chain with a few caveats each is about 1,500 characters)."""

REMEMBERED_TOKENS = 256
"""**Ours:** how many decoded tokens a :class:`GrantVerifier` remembers by default."""


def _prepare(token: object) -> _Prepared:
    """Decode ``token`` and parse its caveats (raises :class:`ParleyError` like decode_grant)."""
    grant = decode_grant(token)
    parsed: list[tuple[str, tuple[Caveat, ...]]] = []
    try:
        for block in grant.blocks:
            parsed.append((block.id, _parse_many(block.raw_caveats)))
    except CaveatError:
        return _Prepared(grant, None)
    return _Prepared(grant, tuple(parsed))


class GrantVerifier:
    """Checks grant tokens like :func:`verify_grant`, remembering the tokens it has decoded.

    A service builds one and keeps it for its life (:class:`parley.Service` owns one): a
    client presents the same grant on every request, and the verifier then decodes it once.
    It remembers, by exact token text, up to ``remember`` tokens of at most
    :data:`MAX_REMEMBERED_TOKEN_LENGTH` characters: their decoding, shape checks and parsed
    caveats, never a verdict, and only for a chain that passed steps 2 to 5 in some call
    (correctly signed, rooted in a principal trusted by that call, held by its proof key), so
    junk tokens neither fill the memory nor push out trusted grants. A remembered token
    holds up to about 18 times its text (about 18 MB at worst for 256 tokens at the limit).
    Every call still verifies every signature, checks trust and the holder, and evaluates
    every caveat against its own request; nothing remembered is handed out (a result that
    shows caveats in ``need`` is built from a fresh decoding).

    The memory belongs to this object and nothing else: a fresh verifier has seen nothing,
    and :func:`verify_grant` is a verifier that remembers nothing. Safe to share between
    threads.
    """

    def __init__(self, *, remember: int = REMEMBERED_TOKENS) -> None:
        if type(remember) is not int or remember < 0:
            raise ParleyError(
                "bad_argument", "remember must be a non-negative integer", reason="bad_argument"
            )
        self._size = remember
        self._longest = MAX_REMEMBERED_TOKEN_LENGTH if remember else -1
        self._tokens: dict[str, _Prepared] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GrantVerifier(remember={self._size})"

    def verify(
        self,
        tokens: Sequence[str] | str,
        *,
        trusted: Sequence[str] | frozenset[str] | set[str],
        proof_key: str | None,
        ctx: GrantContext,
    ) -> GrantCheck:
        """Check grant tokens against one request, exactly as :func:`verify_grant` does."""
        return _verify(tokens, trusted, proof_key, ctx, self)

    def _recall(self, token: str) -> _Prepared | None:
        """The remembered decoding of ``token`` (now the most recently used), or ``None``."""
        with self._lock:
            known = self._tokens.pop(token, None)
            if known is not None:
                self._tokens[token] = known
            return known

    def _remember(self, token: str, prepared: _Prepared) -> None:
        """Keep ``prepared``, forgetting the least recently used tokens beyond the size."""
        with self._lock:
            self._tokens[token] = prepared
            while len(self._tokens) > self._size:
                del self._tokens[next(iter(self._tokens))]


def _check_one(
    token: object,
    trusted: frozenset[str],
    proof_key: str | None,
    ctx: GrantContext,
    at: int,
    memory: GrantVerifier | None,
) -> GrantCheck:
    keep: GrantVerifier | None = None  # the memory this token may live in
    text = ""
    # Exactly a str (a subclass could compare equal to another token's text).
    if (
        memory is not None
        and isinstance(token, str)
        and type(token) is str
        and len(token) <= memory._longest
    ):
        keep, text = memory, token
    known = keep._recall(text) if keep is not None else None
    try:
        prepared = _prepare(token) if known is None else known
    except ParleyError as exc:
        return _fail("unauthorized", "bad_token", exc.message, index=at)
    grant = prepared.grant
    failed = _check_chain(grant, trusted, proof_key, ctx, at)
    if failed is not None:
        return failed
    if keep is not None and known is None:
        # Only a chain that passed steps 2 to 5 (rooted in a principal the caller trusts,
        # held by the proof's key) is remembered: junk cannot fill the memory.
        keep._remember(text, prepared)
    remembered = keep is not None  # the objects are shared with the memory
    if prepared.caveats is None:
        return _check_caveats(decode_grant(token) if remembered else grant, ctx, at)
    caps: list[SpendCap] = []
    for bid, parsed in prepared.caveats:
        for caveat in parsed:
            kind, value = caveat
            if kind == "spend":
                caps.append(SpendCap(bid, value.max, value.currency))
            if not _caveat_ok(caveat, bid, ctx):
                # A failure shows caveats in ``need``: a remembered token's failure is
                # reported from a fresh decoding (steps 1 to 5 already passed on the same
                # text), so no result ever holds the objects a verifier keeps.
                return _check_caveats(decode_grant(token) if remembered else grant, ctx, at)
    return _authorized(grant, caps, at)


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
            _describe(reason, next(c for r, c in hard if r == reason)),
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
    token or caveat. Remembers nothing: a service that sees the same tokens again keeps a
    :class:`GrantVerifier`.

    With several tokens the request is authorized if any one grant authorizes it alone.
    Otherwise the reported failure is, in this order of precedence: ``consent_required``
    if some grant fails only on ``per``/``spend``/``risk``; else ``forbidden`` if some grant
    passes steps 1 to 5; else ``unauthorized``. Within a tier the first such token wins.
    """
    return _verify(tokens, trusted, proof_key, ctx, None)


def _verify(
    tokens: object,
    trusted: object,
    proof_key: str | None,
    ctx: object,
    memory: GrantVerifier | None,
) -> GrantCheck:
    """:func:`verify_grant`, with the tokens ``memory`` remembers when it is given."""
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
        result = _check_one(token, trust, proof_key, ctx, index, memory)
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
    grant = as_grant(token)
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
        good = _signature_ok(signer, block.signed, block.sig)
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
