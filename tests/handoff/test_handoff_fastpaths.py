"""The bulk path's shortcuts equal the plain paths they replace (hypothesis properties).

Private imports: each test holds a fast path to its plain oracle: ``handoff.parse_record``
to the strict decoder it shortcuts (``handoff._json._DECODER`` and its refusal type), and
the fold's shared type names (``handoff._fold._Held``) to the parsed strings they replace.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from handoff import HandoffError, parse_record
from handoff._json import _DECODER, _RefusedError

_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)
_space = st.sampled_from(["", " ", "\n", "\t ", "\r\n"])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    text = json.dumps(draw(_values), ensure_ascii=draw(st.booleans()))
    choice = draw(st.integers(0, 4))
    if choice == 1 and len(text) > 1:  # truncated
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif choice == 2 and text.startswith("{") and text != "{}":  # a member written twice
        member = text[1:].split(",")[0].rstrip("}")
        text = "{" + member + "," + text[1:]
    elif choice == 3:  # trailing junk
        text += draw(st.sampled_from(["x", "{}", ",", "]", " 1"]))
    return draw(_space) + text + draw(_space)


def _plain(text: str) -> dict[str, Any] | tuple[str, str | None]:
    """The reference: the strict ``JSONDecoder.decode`` alone, errors mapped to reasons."""
    try:
        value = _DECODER.decode(text)
    except _RefusedError as exc:
        return ("parse", exc.reason)
    except (ValueError, RecursionError):
        return ("parse", "json_syntax")
    if not isinstance(value, dict):
        return ("parse", "not_object")
    return value


@settings(max_examples=400)
@given(text=_texts() | st.text(max_size=12))
def test_parse_record_equals_the_strict_decoder(text: str) -> None:
    expected = _plain(text)
    try:
        got: Any = parse_record(text)
    except HandoffError as exc:
        got = (exc.code, exc.reason)
        if got == ("parse", "lone_surrogate"):
            return  # checked after decoding, on either path
    assert got == expected, text
    if isinstance(got, dict):
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


@settings(max_examples=200)
@given(text=_texts())
def test_parse_record_bytes_and_text_agree(text: str) -> None:
    def outcome(line: str | bytes) -> Any:
        try:
            return parse_record(line)
        except HandoffError as exc:
            return (exc.code, exc.reason)

    assert outcome(text) == outcome(text.encode("utf-8", "surrogatepass"))


def test_record_type_names_are_shared() -> None:
    """Held records share one string per type, whatever object the parser produced."""
    from handoff._fold import _Held

    made = "".join(["rai", "sed"])
    held = _Held({"id": "n1", "type": made}, None)
    assert held.type == "raised"
    assert held.type is _Held({"id": "n2", "type": "".join(["ra", "ised"])}, None).type
    odd = "".join(["unkn", "own"])
    assert _Held({"id": "n3", "type": odd}, None).type is odd
