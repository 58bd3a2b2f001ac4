"""The fast scalar paths of lean agree with the plain rules they stand for.

``_float_text`` prints floats in ``1e-4 <= |x| < 1e16`` straight from ``repr``, and the
bare rule is one regular expression; each is checked here against the plain statement of
its rule (ECMAScript ``Number::toString`` from the shortest digits, and SPEC.md section
9.1's five conditions), kept in this file as the oracle.

Private imports: ``parley._lean.js_number`` and ``parley._lean._bare`` are the fast paths
held here to their oracles.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

import parley
from parley._lean import _bare, js_number


def number_to_string(x: float) -> str:
    """ECMAScript Number::toString (section 6.1.6.1.20) from Python's shortest digits."""
    if x == 0:
        return "0"
    if x < 0:
        return "-" + number_to_string(-x)
    mantissa, _, exp_text = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    s = (whole + frac).lstrip("0")
    n = len(whole) + (int(exp_text) if exp_text else 0) - (len(whole + frac) - len(s))
    s = s.rstrip("0")
    k = len(s)
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * -n + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    return (s if k == 1 else s[0] + "." + s[1:]) + "e" + sign + str(abs(e))


@settings(max_examples=3000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
@example(1e-4)
@example(-1e-4)
@example(9999999999999998.0)
@example(1e16)
@example(0.1 + 0.2)
@example(-0.0)
@example(123.0)
@example(5e-324)
def test_floats_print_as_number_to_string(x: float) -> None:
    assert js_number(x) == number_to_string(x)


@settings(max_examples=1000, deadline=None)
@given(st.floats(min_value=1e-4, max_value=1e16, exclude_max=True))
def test_the_common_range_prints_as_number_to_string(x: float) -> None:
    assert js_number(x) == number_to_string(x)
    assert parley.lens.lean(-x) == number_to_string(-x)


_CHARS = re.compile(r"[A-Za-z0-9_@./+\-:() '!?&%$#*=<>~^]+")
_JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def bare_by_the_rule(text: str) -> bool:
    """SPEC.md section 9.1's bare rule, condition by condition."""
    return (
        _CHARS.fullmatch(text) is not None
        and not text.startswith(" ")
        and not text.endswith(" ")
        and text not in {"-", "true", "false", "null"}
        and _JSON_NUMBER.fullmatch(text) is None
    )


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("a Z0159.-+eE:()'_!\"\\,\n\u00e9")), max_size=12))
@example("")
@example(" ")
@example("-")
@example("true")
@example("null ")
@example("1e5")
@example("-0")
@example("01")
@example("1.")
@example("a b")
def test_the_bare_expression_is_the_rule(text: str) -> None:
    assert _bare(text) == bare_by_the_rule(text)
