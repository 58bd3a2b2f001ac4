"""Lens renderings of Parley replies (SPEC.md section 9.2, NOTES.md).

A reply renders as a list of *segments*: plain lines, and lean blocks (an object entry
at an indent, or a top-level value). :func:`lens` joins them; the budget fitter measures
the same segments without re-rendering the parts that did not change, so both always
agree on the layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ._lean import (
    check_keys,
    compact_json,
    depth_guard,
    entry_lines,
    is_scalar,
    js_items,
    js_number,
    lean_lines,
    scalar_text,
)
from .errors import ParleyError

__all__ = [
    "EntryBlock",
    "Segment",
    "TopBlock",
    "capability_line",
    "duration_text",
    "effect_line",
    "lens",
    "money_text",
    "more_line",
    "reply_segments",
    "time_text",
]

ZERO_DECIMAL = frozenset({"JPY", "KRW", "VND", "CLP", "ISK", "UGX", "XAF", "XOF"})
_SYMBOLS = {"create": "+", "update": "~", "delete": "-", "send": ">", "charge": "$", "other": "*"}
_MAX_MILLIS = 8_640_000_000_000_000  # the ECMAScript time value range (+-1e8 days)


@dataclass(frozen=True)
class EntryBlock:
    """A lean object entry ``key_text: value`` rendered at ``indent``."""

    key_text: str
    value: Any
    indent: int


@dataclass(frozen=True)
class TopBlock:
    """A value rendered in top-level lean notation."""

    value: Any


Segment = str | EntryBlock | TopBlock
"""One piece of a reply's Lens: a line, or a lean block."""


def _bad(message: str, reason: str = "bad_reply") -> ParleyError:
    return ParleyError("bad_frame", message, reason=reason)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text_of(value: Any) -> str:
    """Render a field that holds text: a string as it is, anything else in lean form.

    **Ours:** a missing field renders ``-`` like ``null``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return "-"
    if is_scalar(value):
        return scalar_text(value)
    return compact_json(value)


def truthy(value: Any) -> bool:
    """Whether a JSON value is truthy in JavaScript, as the reference's templates test it.

    ``null``, ``false``, ``0`` (and ``-0``, NaN) and ``""`` are falsy; everything else,
    empty lists and objects included, is truthy.
    """
    if value is None or value is False or value == "":
        return False
    if _is_number(value):
        return bool(value == value and value != 0)
    return True


def _num(value: int | float) -> str:
    text = js_number(value)
    return "-" if text is None else text


# ---------------------------------------------------------------- times, durations, money


def _civil(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count from 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def time_text(value: Any) -> str:
    """Render unix seconds as UTC ``YYYY-MM-DDTHH:MMZ`` (``:SS`` added when not zero).

    Years outside 0..9999 use ECMAScript's expanded form (``+012345``). A value that is
    not a number renders in lean form.
    """
    if not _is_number(value):
        return text_of(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "-"
    millis = math.trunc(value * 1000) if isinstance(value, float) else value * 1000
    if abs(millis) > _MAX_MILLIS:
        raise _bad(f"the time {_num(value)} is outside the ECMAScript date range", "bad_time")
    days, rest = divmod(millis // 1000, 86400)
    year, month, day = _civil(days)
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    if 0 <= year <= 9999:
        year_text = f"{year:04d}"
    else:
        year_text = ("-" if year < 0 else "+") + f"{abs(year):06d}"
    text = f"{year_text}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}"
    if second:
        text += f":{second:02d}"
    return text + "Z"


def duration_text(value: Any) -> str:
    """Render seconds in the largest of ``d``/``h``/``m``/``s`` that divides them; 0 is ``0s``."""
    if not _is_number(value):
        return text_of(value)
    if value == 0:
        return "0s"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if isinstance(value, int):
            if value % size == 0:
                return f"{value // size}{unit}"
        elif math.isfinite(value) and math.fmod(value, size) == 0:
            return _num(value / size) + unit
    return _num(value) + "s"


def _integral(value: Any) -> int | None:
    """The integer a JSON number holds in JavaScript, or None when it holds no finite integer.

    ``1250.0`` is the integer 1250 there (JSON cannot tell them apart), and an integer
    beyond 2**53 is the double it parses to.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int) and -(2**53) <= value <= 2**53:
        return int(value)
    number = _double(value)
    return int(number) if math.isfinite(number) and number.is_integer() else None


def money_text(cost: Any) -> str:
    """Render a cost: ``free`` for null, ``12.50 USD``, ``-0.05 EUR``, ``500 JPY``."""
    if cost is None:
        return "free"
    if not isinstance(cost, dict):
        return text_of(cost)
    check_keys(cost)
    raw = cost.get("amount")
    currency = text_of(cost.get("currency"))
    amount = _integral(raw)
    if amount is None:
        return f"{text_of(raw)} {currency}"
    if currency in ZERO_DECIMAL:
        return f"{amount} {currency}"
    sign = "-" if amount < 0 else ""
    units, cents = divmod(abs(amount), 100)
    return f"{sign}{units}.{cents:02d} {currency}"


# ---------------------------------------------------------------- shared lines


def effect_line(effect: Any) -> str:
    """Render one effect: ``SYM op target[.field][: from → to][ — detail]``."""
    if not isinstance(effect, dict):
        return f"* {text_of(effect)}"
    check_keys(effect)
    op = effect.get("op")
    symbol = _SYMBOLS.get(op, "*") if isinstance(op, str) else "*"
    line = f"{symbol} {text_of(op)} {text_of(effect.get('target'))}"
    field = effect.get("field")
    if truthy(field):
        line += f".{text_of(field)}"
    if "from" in effect or "to" in effect:
        left = _side(effect.get("from"))
        right = _side(effect.get("to"))
        line += f": {left} → {right}"
    detail = effect.get("detail")
    if truthy(detail):
        line += f" — {text_of(detail)}"
    return line


def _side(value: Any) -> str:
    if is_scalar(value):
        return scalar_text(value)
    return compact_json(value)


def more_line(entry: Any) -> str:
    """Render one ``More`` entry: ``… N more at PATH — EXPAND HANDLE (~EST tokens)``."""
    if not isinstance(entry, dict):
        raise _bad("a `more` entry is not an object", "bad_more")
    check_keys(entry)
    return (
        f"… {text_of(entry.get('remaining'))} more at {text_of(entry.get('path'))}"
        f" — EXPAND {text_of(entry.get('handle'))} (~{text_of(entry.get('est'))} tokens)"
    )


def _list_field(reply: dict[str, Any], name: str) -> list[Any]:
    value = reply.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(f"the reply's `{name}` is not a list")
    return value


def _effects(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("`effects` is not a list")
    return value


# ---------------------------------------------------------------- BRIEF


def _param_type(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        items = js_items(check_keys(value))
        return "{" + ", ".join(f"{k}: {_param_type(v)}" for k, v in items) + "}"
    if isinstance(value, list) and len(value) == 1:
        return "[" + _param_type(value[0]) + "]"
    if is_scalar(value):
        return scalar_text(value)
    return compact_json(value)


def capability_line(cap: Any) -> str:
    """Render one BRIEF capability: ``{kind} {name}({params})[ — summary][ [risk:r]]``."""
    if not isinstance(cap, dict):
        raise _bad("a capability is not an object", "bad_capability")
    params = check_keys(cap).get("params")
    if isinstance(params, dict):
        inner = ", ".join(f"{k}: {_param_type(v)}" for k, v in js_items(check_keys(params)))
    elif params is None:
        inner = ""
    else:
        inner = _param_type(params)
    line = f"{text_of(cap.get('kind'))} {text_of(cap.get('name'))}({inner})"
    summary = cap.get("summary")
    if truthy(summary):
        line += f" — {text_of(summary)}"
    risk = cap.get("risk")
    if truthy(risk):
        line += f" [risk:{text_of(risk)}]"
    return line


def _brief(reply: dict[str, Any], out: list[Segment]) -> None:
    service = reply.get("service")
    if not isinstance(service, dict):
        service = {}
    check_keys(service)
    name = service.get("name")
    sid = text_of(service.get("id"))
    out.append(f"# {sid}" if name is None or name == "" else f"# {text_of(name)} ({sid})")
    summary = service.get("summary")
    if truthy(summary):
        out.append(text_of(summary))
    out.extend(capability_line(cap) for cap in _list_field(reply, "capabilities"))


# ---------------------------------------------------------------- PROPOSALS

ATTRIBUTES = ("cost", "risk", "undo", "expires")


def proposal_attributes(proposal: dict[str, Any]) -> list[str | None]:
    """Return the rendered ``cost``, ``risk``, ``undo``, ``expires`` attributes (None = absent)."""
    cost = f"cost: {money_text(proposal.get('cost'))}"
    risk_value = proposal.get("risk")
    risk = None if risk_value is None else f"risk: {text_of(risk_value)}"
    undo_value = proposal.get("undo")
    if isinstance(undo_value, dict):
        undo = f"undo: {duration_text(check_keys(undo_value).get('window'))}"
    else:
        undo = "undo: never"
    expires_value = proposal.get("expires")
    expires = None if expires_value is None else f"expires: {time_text(expires_value)}"
    return [cost, risk, undo, expires]


def shared_attributes(attributes: list[list[str | None]]) -> list[bool]:
    """Return which attribute positions are shared (N >= 2 and identical everywhere)."""
    if len(attributes) < 2:
        return [False] * len(ATTRIBUTES)
    return [
        attributes[0][i] is not None and all(a[i] == attributes[0][i] for a in attributes)
        for i in range(len(ATTRIBUTES))
    ]


def proposals_header(count: int, shared_text: list[str]) -> str:
    """Return the PROPOSALS header line: ``{N} proposals[ — {shared attributes}]:``.

    SPEC.md section 9.2's template, as the reference renders it: the shared attributes sit
    between the count and the colon that ends the line (``2 proposals — risk: low:``).
    """
    head = "1 proposal" if count == 1 else f"{count} proposals"
    if shared_text:
        head += " — " + " · ".join(shared_text)
    return head + ":"


def proposal_segments(
    proposal: Any, attrs: list[str | None], shared: list[bool], out: list[Segment]
) -> None:
    """Append one proposal's segments: its line, effects, own attributes and ``data``."""
    if not isinstance(proposal, dict):
        raise _bad("a proposal is not an object", "bad_proposal")
    out.append(f"[{text_of(proposal.get('id'))}] {text_of(proposal.get('summary'))}")
    out.extend("  " + effect_line(e) for e in _effects(proposal.get("effects")))
    own = [a for a, s in zip(attrs, shared, strict=True) if a is not None and not s]
    if own:
        out.append("  " + " · ".join(own))
    if "data" in proposal:
        out.append(EntryBlock("data", proposal["data"], 1))


def _proposals(reply: dict[str, Any], out: list[Segment]) -> None:
    proposals = _list_field(reply, "proposals")
    for p in proposals:
        if not isinstance(p, dict):
            raise _bad("a proposal is not an object", "bad_proposal")
        check_keys(p)
    attributes = [proposal_attributes(p) for p in proposals]
    shared = shared_attributes(attributes)
    shared_text = (
        [a for a, s in zip(attributes[0], shared, strict=True) if s and a] if (attributes) else []
    )
    out.append(proposals_header(len(proposals), shared_text))
    for proposal, attrs in zip(proposals, attributes, strict=True):
        proposal_segments(proposal, attrs, shared, out)


# ---------------------------------------------------------------- the other kinds


def _clarify(reply: dict[str, Any], out: list[Segment]) -> None:
    out.append(f"? {text_of(reply.get('question'))}")
    for index, option in enumerate(_list_field(reply, "options"), start=1):
        label = check_keys(option).get("label") if isinstance(option, dict) else option
        out.append(f"  {index}. {text_of(label)}")


def _receipt(reply: dict[str, Any], out: list[Segment]) -> None:
    receipt = reply.get("receipt")
    if not isinstance(receipt, dict):
        raise _bad("the RECEIPT reply has no `receipt` object", "bad_receipt")
    check_keys(receipt)
    replay = " (replay)" if reply.get("replay") is True or receipt.get("replay") is True else ""
    rid = text_of(receipt.get("id"))
    summary = text_of(receipt.get("summary"))
    undoes = receipt.get("undoes")
    if undoes is not None:
        out.append(f"↶ undid {text_of(undoes)}: {summary} (receipt {rid}){replay}")
    else:
        undo = receipt.get("undo")
        if isinstance(undo, dict):
            tail = f"undo until {time_text(check_keys(undo).get('until'))}"
        else:
            tail = "irreversible"
        out.append(f"✓ {summary} (receipt {rid}){replay} · {tail}")
        if reply.get("auto") is True:
            out.extend("  " + effect_line(e) for e in _effects(receipt.get("effects")))
    if "result" in receipt:
        out.append(EntryBlock("result", receipt["result"], 1))


def _error(reply: dict[str, Any], out: list[Segment]) -> None:
    out.append(f"✗ {text_of(reply.get('code'))}: {text_of(reply.get('message'))}")
    for fix in _list_field(reply, "fix"):
        if not isinstance(fix, dict):
            raise _bad("a `fix` entry is not an object", "bad_fix")
        check_keys(fix)
        line = f"  fix: {text_of(fix.get('say'))}"
        if "params" in fix:
            line += f" → params {compact_json(fix['params'])}"
        out.append(line)
    need = reply.get("need")
    if isinstance(need, list) and need:
        out.append(f"  need: {compact_json(need)}")
    consent = reply.get("consent")
    if isinstance(consent, dict):
        check_keys(consent)
        out.append(
            f"  consent: principal must approve {text_of(consent.get('hash'))}"
            f" ({text_of(consent.get('summary'))})"
        )
    retry = reply.get("retry")
    if _is_number(retry):
        out.append(f"  retry in: {duration_text(retry)}")


def _double(value: int | float) -> float:
    """The IEEE double JavaScript holds for a JSON number (huge integers become infinite)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _js_round(value: float) -> float:
    low = math.floor(value)
    return low + 1 if value - low >= 0.5 else low


def _event(reply: dict[str, Any], out: list[Segment]) -> None:
    line = f"… {text_of(reply.get('message'))}"
    progress = reply.get("progress")
    if isinstance(progress, (int, float)) and not isinstance(progress, bool):
        scaled = _double(progress) * 100
        if math.isfinite(scaled):
            line += f" ({_num(_js_round(scaled))}%)"
    out.append(line)


def _answer(reply: dict[str, Any], out: list[Segment]) -> None:
    out.append(TopBlock(reply.get("data")))


_KINDS = {
    "BRIEF": _brief,
    "ANSWER": _answer,
    "PROPOSALS": _proposals,
    "CLARIFY": _clarify,
    "RECEIPT": _receipt,
    "ERROR": _error,
    "EVENT": _event,
}


def body_segments(reply: dict[str, Any]) -> list[Segment]:
    """Return the segments of a reply without its ``more`` lines."""
    if not isinstance(reply, dict):
        raise _bad("a reply is a JSON object", "not_object")
    check_keys(reply)
    kind = reply.get("kind")
    render = _KINDS.get(kind) if isinstance(kind, str) else None
    if render is None:
        raise _bad(f"the reply kind {kind!r} is not one of SPEC.md section 5", "unknown_kind")
    out: list[Segment] = []
    render(reply, out)
    return out


def reply_segments(reply: dict[str, Any]) -> list[Segment]:
    """Return every segment of a reply's Lens, ``more`` lines last."""
    out = body_segments(reply)
    out.extend(more_line(m) for m in _list_field(reply, "more"))
    return out


def expand_segments(segments: list[Segment]) -> list[str]:
    """Render segments to lines."""
    lines: list[str] = []
    for segment in segments:
        if isinstance(segment, str):
            lines.append(segment)
        elif isinstance(segment, EntryBlock):
            entry_lines(segment.key_text, segment.value, segment.indent, lines)
        else:
            lean_lines(segment.value, lines)
    return lines


@depth_guard
def lens(reply: Mapping[str, Any]) -> str:
    """Render a Parley reply frame as Lens text (SPEC.md section 9.2, NOTES.md).

    Handles BRIEF, ANSWER, PROPOSALS (with shared attributes), CLARIFY, RECEIPT (auto,
    replay, irreversible, undo), ERROR and EVENT, then one line per ``more`` entry.
    Raises :class:`ParleyError` (``bad_frame``) for a frame that is not a reply or holds
    a non-JSON value.

    >>> print(lens({"kind": "EVENT", "message": "charging card", "progress": 0.425}))
    … charging card (43%)
    """
    # a typed reply (parley.Reply) is a dict at run time; anything else is refused inside
    return "\n".join(expand_segments(reply_segments(cast(dict[str, Any], reply))))
