"""Grant tokens (SPEC.md sections 6.2 and 6.3): blocks, grants, and the ``pg1.`` encoding.

A grant is a non-empty list of blocks ``{"p": payload, "s": signature}``. The root block is
signed by the principal (``iss``); every later block by the ``sub`` of the block before it
and names that block's id in ``prev``. The token is ``"pg1." + b64url(canonical(blocks))``.

:func:`decode_grant` is step 1 of section 6.4: it checks the token's spelling and every
block's shape, never a signature (that is :mod:`parley._grant_verify`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ._b64 import b64url_decode, b64url_encode
from ._canonical import MAX_SAFE_INTEGER, canonical_bytes, sha256_b64url
from .errors import ParleyError

__all__ = [
    "MAX_BLOCKS",
    "MAX_TOKEN_LENGTH",
    "TOKEN_PREFIX",
    "Block",
    "Grant",
    "as_grant",
    "bad_token",
    "block_id",
    "decode_grant",
]

TOKEN_PREFIX = "pg1."  # noqa: S105 - a format prefix, not a secret
"""The prefix of every grant token of Parley v1."""

MAX_BLOCKS = 32
"""**Ours:** the longest chain accepted; longer tokens are ``bad_token`` (bounded work)."""

MAX_TOKEN_LENGTH = 64 * 1024
"""**Ours:** the longest token accepted, in characters."""


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


def bad_token(message: str) -> ParleyError:
    """The ``unauthorized``/``bad_token`` error of step 1, saying what is wrong."""
    return ParleyError("unauthorized", message, reason="bad_token")


_KEY_TEXT = re.compile(r"ed25519:[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]")


def _check_key(value: object, where: str) -> str:
    if not isinstance(value, str) or _KEY_TEXT.fullmatch(value) is None:
        raise bad_token(f"{where} is not an 'ed25519:' public key")
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


def _check_block_shape(block: object, index: int) -> None:
    """Raise the ``bad_token`` error naming what is wrong with a block's ``{p, s}`` shape."""
    if not isinstance(block, dict) or set(block) != {"p", "s"}:
        raise bad_token(f"block {index} must be an object with exactly 'p' and 's'")
    if not isinstance(block["p"], dict) or not isinstance(block["s"], str):
        raise bad_token(f"block {index} needs an object 'p' and a string 's'")


def decode_grant(token: object) -> Grant:
    """Decode a ``pg1.`` token and check the shape of every block (not the signatures).

    Raises :class:`ParleyError` (``unauthorized``/``bad_token``) naming what is wrong.
    """
    if not isinstance(token, str):
        raise bad_token(f"a grant token is a string, got {type(token).__name__}")
    if not token.startswith(TOKEN_PREFIX):
        raise bad_token("a grant token starts with 'pg1.'")
    if len(token) > MAX_TOKEN_LENGTH:
        raise bad_token(f"the grant token is longer than {MAX_TOKEN_LENGTH} characters")
    try:
        text = b64url_decode(token[len(TOKEN_PREFIX) :], what="the grant token").decode("utf-8")
        blocks = _DECODER.decode(text)
    except (ParleyError, ValueError, RecursionError):
        raise bad_token("the grant token is not base64url of canonical UTF-8 JSON") from None
    if not isinstance(blocks, list) or not blocks:
        raise bad_token("a grant is a non-empty list of blocks")
    if len(blocks) > MAX_BLOCKS:
        raise bad_token(f"the grant has more than {MAX_BLOCKS} blocks")
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
                raise bad_token(f"block {index} needs a string nonce")
        elif not isinstance(payload.get("prev"), str):
            raise bad_token(f"block {index} needs a string prev")
        if not isinstance(payload.get("caveats"), list):
            raise bad_token(f"block {index} needs a list of caveats")
        iat = payload.get("iat")
        if type(iat) is not int or not -MAX_SAFE_INTEGER <= iat <= MAX_SAFE_INTEGER:
            raise bad_token(f"block {index} needs an integer iat")
        decoded.append(Block(payload, sig))
        try:
            payload_text = _dumps(payload)
        except (RecursionError, ValueError):
            raise bad_token(f"block {index} payload nests too deeply") from None
        signed.append(payload_text)
        parts.append(f'{{"p":{payload_text},"s":{_dumps(sig)}}}')
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
            raise bad_token("the grant token is not in canonical JSON form") from None
        again = ",".join(
            f'{{"p":{p},"s":{_dumps(b.sig)}}}' for p, b in zip(signed, decoded, strict=True)
        )
        if f"[{again}]" != text:
            raise bad_token("the grant token is not in canonical JSON form")
    for block, payload_text in zip(decoded, signed, strict=True):
        block.__dict__["signed"] = payload_text.encode()
    return Grant(tuple(decoded))


def as_grant(grant: Grant | str) -> Grant:
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
        raise bad_token("the grant's blocks are not {p, s} blocks with an object payload") from None
    return decode_grant(TOKEN_PREFIX + b64url_encode(text))
