"""Caveats (SPEC.md section 6.3): parsing that fails closed, evaluation, narrowing.

A caveat is a JSON object with exactly one member. :func:`parse_caveat` turns it into a
:class:`Caveat` or raises :class:`CaveatError` with reason ``caveat_unknown`` (a key this
version does not know) or ``caveat_malformed`` (anything else that is not exactly the shape
of section 6.3). Values are checked by exact type: ``True`` is not an integer, ``"1"`` is
not a time, ``"toString"`` is not a risk level, ``{"svc": "a.example"}`` is not a list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from ._canonical import MAX_SAFE_INTEGER
from .errors import ParleyError, ParleyProtocolError

__all__ = [
    "CAVEAT_KINDS",
    "RISK_LEVELS",
    "SOFT_CAVEATS",
    "Caveat",
    "CaveatError",
    "covers",
    "effective_caveats",
    "matches",
    "parse_caveat",
    "wider_than",
]

CAVEAT_KINDS = ("svc", "verbs", "can", "exp", "nbf", "per", "spend", "risk", "only")
"""Every caveat kind of Parley v1, in the order of SPEC.md section 6.3."""

RISK_LEVELS: Mapping[str, int] = {"low": 0, "medium": 1, "high": 2}
"""Risk levels and their order."""

SOFT_CAVEATS = frozenset({"per", "spend", "risk"})
"""Kinds whose failure alone asks for consent instead of refusing (section 6.6)."""

COMMIT_ONLY = frozenset({"per", "spend", "risk", "only"})
"""Kinds that constrain COMMIT and are satisfied for every other verb."""


class CaveatError(ParleyProtocolError):
    """A caveat that is unknown or malformed; always a hard ``forbidden`` failure."""

    def __new__(cls, message: str, *, reason: str = "caveat_malformed") -> CaveatError:
        """Always the wire code ``forbidden``."""
        return super().__new__(cls, "forbidden", message, reason=reason)

    def __init__(self, message: str, *, reason: str = "caveat_malformed") -> None:
        super().__init__("forbidden", message, reason=reason)


class Caveat(NamedTuple):
    """One well-formed caveat: its ``kind`` and its ``value`` (immutable).

    ``svc``/``verbs``/``can`` hold a tuple of strings, ``per``/``spend`` a :class:`Money`,
    the others the wire value.
    """

    kind: str
    value: Any

    def as_json(self) -> dict[str, Any]:
        """Return the caveat as its single-member JSON object."""
        if isinstance(self.value, Money):
            return {self.kind: {"max": self.value.max, "currency": self.value.currency}}
        if isinstance(self.value, tuple):
            return {self.kind: list(self.value)}
        return {self.kind: self.value}


class Money(NamedTuple):
    """The value of a ``per`` or ``spend`` caveat: a cap in minor units of one currency."""

    max: int
    currency: str


_caveat: Callable[[type[Caveat], tuple[str, Any]], Caveat] = tuple.__new__
"""Builds a :class:`Caveat` from its pair, as its constructor does, without a Python frame."""
_money_of: Callable[[type[Money], tuple[int, str]], Money] = tuple.__new__


def _strings(kind: str, value: object) -> Caveat:
    if type(value) is not list and not isinstance(value, list):
        raise CaveatError(f"caveat {kind!r} must be a list of strings")
    for item in value:
        if not isinstance(item, str):
            raise CaveatError(f"caveat {kind!r} must be a list of strings")
    return _caveat(Caveat, (kind, tuple(value)))


def _time(kind: str, value: object) -> Caveat:
    if type(value) is not int or not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise CaveatError(f"caveat {kind!r} must be an integer of unix seconds")
    return _caveat(Caveat, (kind, value))


def _money(kind: str, value: object) -> Caveat:
    if isinstance(value, dict) and len(value) == 2 and "max" in value and "currency" in value:
        cap, currency = value["max"], value["currency"]
        if (
            type(cap) is int
            and 0 <= cap <= MAX_SAFE_INTEGER
            and isinstance(currency, str)
            and currency
        ):
            return _caveat(Caveat, (kind, _money_of(Money, (cap, currency))))
    raise CaveatError(
        f"caveat {kind!r} must be {{max: non-negative safe integer, currency: string}}"
    )


def _risk(kind: str, value: object) -> Caveat:
    if not isinstance(value, str) or value not in RISK_LEVELS:
        raise CaveatError("caveat 'risk' must be one of low, medium, high")
    return _caveat(Caveat, (kind, value))


def _only(kind: str, value: object) -> Caveat:
    if not isinstance(value, str):
        raise CaveatError("caveat 'only' must be a proposal hash string")
    return _caveat(Caveat, (kind, value))


_PARSERS: Mapping[str, Callable[[str, object], Caveat]] = {
    "svc": _strings,
    "verbs": _strings,
    "can": _strings,
    "exp": _time,
    "nbf": _time,
    "per": _money,
    "spend": _money,
    "risk": _risk,
    "only": _only,
}
"""The value check of each kind, looked up by the caveat's (exact ``str``) key."""


def parse_caveat(raw: object) -> Caveat:
    """Return the :class:`Caveat` of one wire caveat, or raise :class:`CaveatError`.

    >>> parse_caveat({"risk": "low"})
    Caveat(kind='risk', value='low')
    """
    if not isinstance(raw, dict):
        raise CaveatError(f"a caveat must be a JSON object, got {_type_name(raw)}")
    if len(raw) != 1:
        raise CaveatError(f"a caveat must have exactly one member, got {len(raw)}")
    ((kind, value),) = raw.items()
    parser = _PARSERS.get(kind)
    if parser is not None:
        return parser(kind, value)
    raise CaveatError(f"caveat {kind!r} is not known to Parley v1", reason="caveat_unknown")


def _parse_many(raws: Iterable[object]) -> tuple[Caveat, ...]:
    """``tuple(map(parse_caveat, raws))``, with the common case inlined."""
    out = []
    for raw in raws:
        parser = None
        if type(raw) is dict and len(raw) == 1:
            ((kind, value),) = raw.items()
            parser = _PARSERS.get(kind)
        # parse_caveat raises the error naming what is wrong with anything else.
        out.append(parse_caveat(raw) if parser is None else parser(kind, value))
    return tuple(out)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def matches(pattern: str, capability: str) -> bool:
    """Return whether a ``can`` pattern matches a capability name.

    A pattern is an exact name, ``"*"``, or a prefix followed by ``*``.
    """
    if pattern == capability or pattern == "*":
        return True
    return pattern.endswith("*") and capability.startswith(pattern[:-1])


def covers(parent: str, child: str) -> bool:
    """Return whether ``can`` pattern ``parent`` matches everything ``child`` matches."""
    if parent == child or parent == "*":
        return True
    return parent.endswith("*") and child.startswith(parent[:-1])


def effective_caveats(caveats: Iterable[Caveat]) -> list[Caveat]:
    """Return the narrowest single caveats equivalent to a chain's caveats, kind by kind.

    ``svc``/``verbs``: the intersection; ``can``: the patterns every list covers; ``exp``: the
    earliest; ``nbf``: the latest; ``per``/``spend``: the smallest cap per currency;
    ``risk``: the lowest level; ``only``: every distinct hash (two differ: nothing commits).
    ``spend`` totals are still counted per block; the smallest cap is what a fresh grant
    can spend.
    """
    by_kind: dict[str, list[Caveat]] = {}
    given: object = caveats  # a str's characters are refused below, one by one
    if not isinstance(given, Iterable):
        raise ParleyError(
            "bad_argument", "effective_caveats takes a list of parsed Caveats", reason="bad_caveat"
        )
    for caveat in caveats:
        if not isinstance(caveat, Caveat):
            raise ParleyError(
                "bad_argument",
                "effective_caveats takes parsed Caveat objects (see parse_caveat)",
                reason="bad_caveat",
            )
        by_kind.setdefault(caveat.kind, []).append(caveat)
    out: list[Caveat] = []
    for kind in CAVEAT_KINDS:
        group = by_kind.get(kind)
        if not group:
            continue
        if kind in ("svc", "verbs"):
            common = list(group[0].value)
            for other in group[1:]:
                common = [v for v in common if v in other.value]
            out.append(Caveat(kind, tuple(dict.fromkeys(common))))
        elif kind == "can":
            union = dict.fromkeys(p for c in group for p in c.value)
            kept = [p for p in union if all(any(covers(q, p) for q in c.value) for c in group)]
            out.append(Caveat(kind, tuple(kept)))
        elif kind == "exp":
            out.append(Caveat(kind, min(c.value for c in group)))
        elif kind == "nbf":
            out.append(Caveat(kind, max(c.value for c in group)))
        elif kind in ("per", "spend"):
            caps: dict[str, int] = {}
            for c in group:
                money: Money = c.value
                caps[money.currency] = min(caps.get(money.currency, money.max), money.max)
            out.extend(Caveat(kind, Money(m, cur)) for cur, m in caps.items())
        elif kind == "risk":
            out.append(Caveat(kind, min((c.value for c in group), key=RISK_LEVELS.__getitem__)))
        else:
            out.extend(Caveat(kind, h) for h in dict.fromkeys(c.value for c in group))
    return out


def wider_than(new: Caveat, chain: Iterable[Caveat]) -> str | None:
    """Return why ``new`` is wider than the chain's caveat of its kind, or ``None``.

    A wider caveat in a delegation block would have no effect (every block is checked), so
    :func:`parley.delegate` refuses it rather than mint a token that misleads its reader.
    """
    same = [c for c in effective_caveats(chain) if c.kind == new.kind]
    if not same:
        return None
    kind = new.kind
    if kind in ("svc", "verbs"):
        allowed = same[0].value
        extra = [v for v in new.value if v not in allowed]
        if extra:
            return f"{kind} entries {extra} are not allowed by the parent grant ({list(allowed)})"
    elif kind == "can":
        parents = same[0].value
        extra = [p for p in new.value if not any(covers(q, p) for q in parents)]
        if extra:
            return f"can patterns {extra} are not covered by the parent grant ({list(parents)})"
    elif kind == "exp" and new.value > same[0].value:
        return f"exp {new.value} is later than the parent grant's exp {same[0].value}"
    elif kind == "nbf" and new.value < same[0].value:
        return f"nbf {new.value} is earlier than the parent grant's nbf {same[0].value}"
    elif kind in ("per", "spend"):
        for cap in same:
            if cap.value.currency == new.value.currency and new.value.max > cap.value.max:
                return (
                    f"{kind} max {new.value.max} {new.value.currency} is larger than the "
                    f"parent grant's {cap.value.max}"
                )
    elif kind == "risk" and RISK_LEVELS[new.value] > RISK_LEVELS[same[0].value]:
        return f"risk {new.value} is higher than the parent grant's {same[0].value}"
    return None
