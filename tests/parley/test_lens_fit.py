"""Budget fitting (SPEC.md section 8): the shipped fitter equals the plain reference loop,
never touches what a human approves, and the parked remainders restore every elided value.

Private imports: the fitter's measuring fast path (``parley._fit._Meter``, which caches each
sub-value's size) is held to the plain measurement it stands for, the renderer's private
``compact_json``, ``entry_lines`` and ``u16_len``/``u16_slice`` of ``parley._lean``; the
test that counts the meter's work wraps its methods.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._fit import _Meter
from parley._lean import compact_json, entry_lines, u16_len, u16_slice

from .fit_oracle import PLACEHOLDER, fit_oracle


def handle_factory() -> Callable[[], str]:
    counter = itertools.count()

    def make() -> str:
        n = next(counter)
        letters = ""
        while True:
            letters += "abcdefghijklmnopqrstuvwxyz"[n % 26]
            n //= 26
            if not n:
                return "h_" + letters + "q"

    return make


WORDS = st.sampled_from(["ab ", "x", "\U0001f389", "é,", "12345", "\n", "Ana "])
LONG = st.builds(lambda w, n: w * n, WORDS, st.integers(0, 260))
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 10**6),
    st.floats(-1e6, 1e6),
    LONG,
    st.text(max_size=8),
)
KEY = st.sampled_from(["a", "b", "name", "k,v", "text", "rows", "x y"])
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=12),
        st.dictionaries(KEY, inner, max_size=4),
        st.lists(
            st.tuples(SCALAR, SCALAR).map(lambda t: {"id": t[0], "v": t[1]}),
            min_size=1,
            max_size=30,
        ),
    ),
    max_leaves=60,
)


def _proposal(i: int, data: Any, with_data: bool) -> dict[str, Any]:
    p: dict[str, Any] = {
        "id": f"p_{i}",
        "capability": "shop.order",
        "summary": f"Order {i} " + "x" * 250,
        "effects": [{"op": "charge", "target": "card", "detail": "d" * 300}],
        "cost": {"amount": 100 * i, "currency": "USD"},
        "risk": "low",
        "undo": None,
        "expires": 1790000600,
        "hash": f"hash{i}",
    }
    if with_data:
        p["data"] = data
    return p


REPLIES = st.one_of(
    st.builds(lambda d: {"parley": 1, "id": "s", "re": "1", "kind": "ANSWER", "data": d}, JSON),
    st.builds(
        lambda ds: {
            "kind": "PROPOSALS",
            "proposals": [_proposal(i, d, w) for i, (d, w) in enumerate(ds)],
        },
        st.lists(st.tuples(JSON, st.booleans()), min_size=1, max_size=5),
    ),
    st.builds(
        lambda d, auto: {
            "kind": "RECEIPT",
            "auto": auto,
            "receipt": {
                "id": "r_1",
                "summary": "done",
                "undo": None,
                "result": d,
                "effects": [{"op": "create", "target": "t"}],
            },
        },
        JSON,
        st.booleans(),
    ),
    st.builds(
        lambda n: {
            "kind": "BRIEF",
            "service": {"id": "svc", "name": "Svc"},
            "capabilities": [
                {
                    "name": f"c.{i}",
                    "kind": "ask",
                    "summary": "s" * (i % 7),
                    "params": {"q": "string"},
                }
                for i in range(n)
            ],
        },
        st.integers(0, 40),
    ),
    st.builds(lambda m: {"kind": "EVENT", "message": m}, LONG),
)
BUDGETS = st.integers(-5, 900)


def _restore(fitted: dict[str, Any], parked: dict[str, Any], start: int) -> dict[str, Any]:
    """Put every parked remainder back (deepest paths first)."""
    restored = copy.deepcopy(fitted)
    entries = restored.get("more", [])[start:]
    for entry in sorted(entries, key=lambda e: -len(e["path"].split("."))):
        steps = [int(s) if s.isdigit() else s for s in entry["path"].split(".")]
        node: Any = restored
        for step in steps[:-1]:
            node = node[step]
        current = node[steps[-1]]
        rest = parked[entry["handle"]]
        if isinstance(current, list):
            node[steps[-1]] = current + rest
        else:
            assert current.endswith("…")
            units = (current[:-1]).encode("utf-16-le", "surrogatepass") + rest.encode(
                "utf-16-le", "surrogatepass"
            )
            node[steps[-1]] = units.decode("utf-16-le", "surrogatepass")
    if entries:
        if start:
            restored["more"] = restored["more"][:start]
        else:
            del restored["more"]
    return restored


def _equal_as_utf16(a: Any, b: Any) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a.encode("utf-16-le", "surrogatepass") == b.encode("utf-16-le", "surrogatepass")
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal_as_utf16(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_equal_as_utf16(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=150, deadline=None)
@given(REPLIES, BUDGETS)
def test_fast_fit_equals_the_reference_loop(reply: dict[str, Any], budget: int) -> None:
    snapshot = copy.deepcopy(reply)
    fast = parley.lens.fit(reply, budget, handles=handle_factory())
    plain = fit_oracle(reply, budget, handles=handle_factory())
    assert fast == plain
    assert reply == snapshot, "fit never modifies its input"


def _without_data(proposal: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in proposal.items() if k != "data"}


@settings(max_examples=150, deadline=None)
@given(REPLIES, BUDGETS)
def test_fit_reaches_the_budget_and_keeps_everything_approved(
    reply: dict[str, Any], budget: int
) -> None:
    fitted, parked = parley.lens.fit(reply, budget, handles=parley.lens.new_handle)
    text = parley.lens.lens(fitted)
    # Real handles estimate like the placeholder the loop measured with.
    placeholder = copy.deepcopy(fitted)
    for entry in placeholder.get("more", []):
        entry["handle"] = PLACEHOLDER
    assert parley.lens.estimate(text) == parley.lens.estimate(parley.lens.lens(placeholder))
    if parley.lens.estimate(text) > budget:
        # Over budget only when elision cannot go further: the most elided result.
        floor, _ = parley.lens.fit(reply, -1, handles=handle_factory())
        mine, _ = parley.lens.fit(reply, budget, handles=handle_factory())
        assert mine == floor
    # Elision safety: list roots lose whole trailing items; nothing else changes.
    for name in ("proposals", "capabilities"):
        if name in reply:
            kept = fitted[name]
            assert len(kept) <= len(reply[name])
            for got, was in zip(kept, reply[name], strict=False):
                if name == "proposals":
                    assert _without_data(got) == _without_data(was)
                else:
                    assert got == was
    for key in reply:
        if key not in {"data", "proposals", "receipt", "capabilities", "more"}:
            assert fitted[key] == reply[key]
    if reply["kind"] == "RECEIPT":
        assert {k: v for k, v in fitted["receipt"].items() if k != "result"} == {
            k: v for k, v in reply["receipt"].items() if k != "result"
        }
    # Every parked remainder has an entry, and they put the reply back together.
    handles = [e["handle"] for e in fitted.get("more", [])]
    assert sorted(handles) == sorted(parked)
    restored = _restore(fitted, parked, 0)
    if reply["kind"] in {"PROPOSALS", "BRIEF"}:
        name = "proposals" if reply["kind"] == "PROPOSALS" else "capabilities"
        assert len(restored[name]) == len(reply[name])
    assert _equal_as_utf16(restored, reply)


def test_fit_keeps_existing_more_first_and_ignores_other_kinds() -> None:
    old = {"handle": "h_old", "path": "data.q", "remaining": 1, "est": 1}
    reply = {"kind": "ANSWER", "data": {"n": list(range(300))}, "more": [old]}
    fitted, parked = parley.lens.fit(reply, 50, handles=handle_factory())
    assert fitted["more"][0] == old
    assert [e["path"] for e in fitted["more"][1:]] == ["data.n"]
    assert list(parked) == ["h_aq"]
    event = {"kind": "EVENT", "message": "x" * 5000}
    assert parley.lens.fit(event, 1, handles=handle_factory()) == (event, {})


def test_strings_are_cut_in_utf16_units_and_stop_at_200() -> None:
    text = "\U0001f389" * 300  # 600 UTF-16 units
    fitted, parked = parley.lens.fit({"kind": "ANSWER", "data": text}, 5, handles=handle_factory())
    kept = fitted["data"]
    assert kept.endswith("…")
    assert u16_len(kept) == 201
    entry = fitted["more"][0]
    assert entry["path"] == "data"
    assert entry["remaining"] == 400
    assert parked[entry["handle"]] == u16_slice(text, 200)


def test_a_path_inside_an_elided_item_gets_no_entry() -> None:
    rows = [{"t": "w " * 400} for _ in range(4)]
    fitted, parked = parley.lens.fit({"kind": "ANSWER", "data": rows}, 1, handles=handle_factory())
    paths = [e["path"] for e in fitted["more"]]
    assert "data" in paths
    assert all(not p.startswith("data.3") for p in paths)
    assert len(parked) == len(paths)


def test_list_roots_are_cut_only_after_deep_roots() -> None:
    proposals = [_proposal(i, list(range(50)), True) for i in range(6)]
    fitted, _ = parley.lens.fit(
        {"kind": "PROPOSALS", "proposals": proposals}, 1, handles=handle_factory()
    )
    paths = [e["path"] for e in fitted["more"]]
    assert paths[-1] == "proposals"
    assert all(p["data"] == [] for p in fitted["proposals"])
    assert [_without_data(p) for p in fitted["proposals"]] == [
        _without_data(p) for p in proposals[: len(fitted["proposals"])]
    ]


@pytest.mark.parametrize("budget", [1.5, "10", True, None])
def test_budget_must_be_an_integer(budget: Any) -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.fit({"kind": "ANSWER", "data": 1}, budget, handles=handle_factory())
    assert caught.value.reason == "bad_budget"


def test_fit_rejects_non_json_anywhere() -> None:
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.fit({"kind": "ANSWER", "data": [1, {2}]}, 10, handles=handle_factory())
    assert caught.value.reason == "not_json"


@settings(max_examples=120, deadline=None)
@given(
    st.one_of(st.lists(JSON, max_size=40), LONG),
    st.lists(st.integers(-3, 400), min_size=1, max_size=60),
)
def test_expand_slices_concatenate_to_the_value(value: Any, budgets: list[int]) -> None:
    pieces: list[Any] = []
    current = value
    make = handle_factory()
    for budget in itertools.cycle(budgets):
        answer, parked = parley.lens.expand_slice(current, budget, handles=make)
        part = answer["data"]["items" if isinstance(value, list) else "text"]
        pieces.append(part)
        text = parley.lens.lens(answer)
        if parley.lens.estimate(text) > budget:
            assert len(part) <= 1, "only a single indivisible piece may exceed the budget"
        if not parked:
            assert "more" not in answer
            break
        [(handle, current)] = parked.items()
        assert answer["more"][0]["handle"] == handle
        assert len(part) >= 1
    if isinstance(value, list):
        assert [x for p in pieces for x in p] == value
    else:
        assert "".join(pieces) == value


@settings(max_examples=250, deadline=None)
@given(JSON, st.integers(0, 40))
def test_the_meter_measures_exactly_what_lean_renders(value: Any, start: int) -> None:
    meter = _Meter()
    assert meter.top(value) == parley.lens.estimate(parley.lens.lean(value))
    assert meter.size(value) == u16_len(compact_json(value))
    for key_text in ("k", '"a,b"'):
        for indent in (0, 1, 3):
            lines: list[str] = []
            entry_lines(key_text, value, indent, lines)
            expected = parley.lens.estimate("\n".join(lines))
            if indent:
                expected += 1  # the indentation run before the first line
            assert meter.entry(key_text, value, 1 if indent else 0) == expected
    if isinstance(value, list) and value:
        start = start % len(value)
        assert meter.rest_top(value, start) == parley.lens.estimate(parley.lens.lean(value[start:]))


# -------------------------------- any shape, any depth, linear work


def _handles() -> Any:
    counter = itertools.count()
    return lambda: "h_" + "".join("abcdefghij"[int(d)] for d in str(next(counter))) + "q"


def test_fit_walks_object_members_in_javascript_order() -> None:
    # Two equal-size candidates: JavaScript walks "1" before "a", so "1" is cut first.
    reply = {"kind": "ANSWER", "data": {"a": list(range(30)), "1": list(range(30))}}
    fitted, _ = parley.lens.fit(reply, 60, handles=_handles())
    assert fitted["more"][0]["path"] == "data.1"
    assert fitted == fit_oracle(reply, 60, handles=_handles())[0]


@pytest.mark.parametrize("body", [{}, {"proposals": None}])
def test_fit_of_proposals_without_a_list(body: dict[str, Any]) -> None:
    # Used to raise KeyError / TypeError from the fast fitter.
    reply = {"kind": "PROPOSALS", **body}
    fitted, parked = parley.lens.fit(reply, 0, handles=_handles())
    assert (fitted, parked) == (reply, {})
    assert parley.lens.lens(fitted) == "0 proposals:"
    assert fit_oracle(reply, 0, handles=_handles()) == (fitted, parked)


_FIELDS = st.sampled_from(
    [
        "data", "proposals", "receipt", "capabilities", "service", "more", "question",
        "options", "code", "message", "fix", "need", "consent", "retry", "progress", "auto",
        "replay", "effects", "cost", "risk", "undo", "expires", "summary", "id", "result",
        "undoes", "until", "window", "amount", "currency", "op", "target", "field", "from",
        "to", "detail", "params", "say", "label", "name", "hash", "path", "remaining", "est",
    ]
)  # fmt: skip


_KINDS = st.sampled_from(["BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"])


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.just(10**400),
    st.floats(),
    st.text(max_size=4),
)


_SHAPES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_FIELDS, inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_KINDS, st.dictionaries(_FIELDS, _SHAPES, max_size=6), st.integers(-3, 200))
def test_any_reply_shape_renders_or_raises_our_error_and_what_renders_fits(
    kind: str, body: dict[str, Any], budget: int
) -> None:
    """Fields may be missing, null or of any JSON type: only ParleyError may come out,
    and a reply that renders can always be fitted, identically by both fitters."""
    reply = {**body, "kind": kind}
    try:
        parley.lens.lens(reply)
    except parley.ParleyError:
        # Kinds that are never fitted come back as they are; the others raise our error.
        with contextlib.suppress(parley.ParleyError):
            parley.lens.fit(reply, budget, handles=_handles())
        return
    fast = parley.lens.fit(reply, budget, handles=_handles())
    assert fast == fit_oracle(reply, budget, handles=_handles())
    parley.lens.lens(fast[0])


@pytest.mark.parametrize("shape", ["object", "list"])
def test_fit_handles_every_depth_that_lens_renders(shape: str) -> None:
    # fit used to give up (too_deep) at about half the nesting lean() renders: its meter,
    # generators and copy.deepcopy took two or three stack frames per level.
    def nest(depth: int) -> Any:
        value: Any = "x" * 250
        for _ in range(depth):
            value = {"a": value} if shape == "object" else [value, 1]
        return value

    checked = 0
    for depth in range(100, 1000, 100):
        value = nest(depth)
        try:
            parley.lens.lean(value)
        except parley.ParleyError:
            break
        reply = {"kind": "ANSWER", "data": value}
        parley.lens.fit(reply, 10**6, handles=_handles())
        parley.lens.fit(reply, 1, handles=_handles())
        parley.lens.park(parley.lens.MemoryHandleStore(), {"h_x": [value]}, key=None, now=0)
        checked += 1
    assert checked >= 7


def _count_measurements(monkeypatch: pytest.MonkeyPatch, method: str = "entry") -> list[int]:
    """Count calls of one of the meter's methods (``entry``: an estimate; ``best``: a
    candidate search)."""
    from parley import _fit

    calls = [0]
    original = getattr(_fit._Meter, method)

    def counted(self: Any, *args: Any) -> Any:
        calls[0] += 1
        return original(self, *args)

    monkeypatch.setattr(_fit._Meter, method, counted)
    return calls


def test_fitting_a_wide_object_does_not_remeasure_every_member_each_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An object with thousands of members used to be re-measured and re-walked on every
    # one of the 200 rounds (about 157 renders' worth of work for 60,000 members).
    calls = _count_measurements(monkeypatch)
    width = 500
    reply = {"kind": "ANSWER", "data": {f"k{i}": [i, i + 1] for i in range(width)}}
    fitted, _ = parley.lens.fit(reply, 100, handles=_handles())
    assert len(fitted["more"]) == 200  # 200 rounds, one cut each
    assert calls[0] < 4 * width  # was about 200 * width
    monkeypatch.undo()
    assert fitted == fit_oracle(reply, 100, handles=_handles())[0]


def test_fitting_many_proposals_does_not_remeasure_every_proposal_each_round(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every round used to search every proposal's data again and sum every proposal.
    calls = _count_measurements(monkeypatch, "best")
    count = 300
    proposals = [
        {"id": f"p{i}", "summary": "s", "risk": "low", "undo": None, "data": {"x": [i, i]}}
        for i in range(count)
    ]
    reply = {"kind": "PROPOSALS", "proposals": proposals}
    fitted, _ = parley.lens.fit(reply, 100, handles=_handles())
    assert calls[0] < 10 * count  # was about 200 * count
    monkeypatch.undo()
    assert fitted == fit_oracle(reply, 100, handles=_handles())[0]
