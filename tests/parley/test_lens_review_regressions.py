"""Regressions found by an adversarial review of Lens, fitting and EXPAND handles.

Each test names the defect it pins down. JavaScript facts used as expectations (property
order, ``JSON.stringify``, ``Date.prototype.toISOString``) were checked against Node.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._cli import main as parley_main
from parley._fit_oracle import fit_oracle
from parley._lean import _is_index, compact_json, js_keys


def _handles() -> Any:
    counter = itertools.count()
    return lambda: "h_" + "".join("abcdefghij"[int(d)] for d in str(next(counter))) + "q"


# ---------------------------------------------------------------- ECMAScript property order


def test_array_index_keys_come_first_as_in_javascript() -> None:
    # What JSON.parse then Object.keys / JSON.stringify give in JavaScript (checked on Node).
    value = json.loads('{"b":1,"10":2,"2":3,"01":4,"-1":5,"4294967294":6,"4294967295":7,"1.5":8}')
    assert js_keys(value) == ["2", "10", "4294967294", "b", "01", "-1", "4294967295", "1.5"]
    assert compact_json(value) == (
        '{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"-1":5,"4294967295":7,"1.5":8}'
    )
    assert parley.lens.lean({"b": 1, "2": 2, "1": 3}) == 'b: 1\n"1": 3\n"2": 2'.replace(
        'b: 1\n"1": 3\n"2": 2', '"1": 3\n"2": 2\nb: 1'
    )


def test_non_ascii_digits_and_long_numbers_are_not_indexes() -> None:
    assert js_keys({"b": 1, "\u0663": 2, "99999999999": 3, "0": 4}) == [
        "0",
        "b",
        "\u0663",
        "99999999999",
    ]


def test_table_detection_uses_javascript_key_order() -> None:
    # {"b","1"} and {"1","b"} have the same key order in JavaScript: a table.
    value = {"t": [{"b": 1, "1": 2}, {"1": 3, "b": 4}]}
    assert parley.lens.lean(value) == 't[2]{"1",b}:\n  2,1\n  3,4'
    # Mixed-list items and nested objects follow the same order.
    assert (
        parley.lens.lean({"t": [{"z": [1], "7": 0}, 5]}) == 't[2]:\n  - "7": 0\n    z: [1]\n  - 5'
    )
    assert parley.lens.lean([[{"b": 1, "0": 2}]]) == 'items[1]:\n  - [{"0":2,"b":1}]'


def test_capability_params_follow_javascript_key_order() -> None:
    brief = {
        "kind": "BRIEF",
        "service": {"id": "s"},
        "capabilities": [{"name": "c", "kind": "ask", "params": {"q": "string", "2": "int"}}],
    }
    assert parley.lens.lens(brief).splitlines()[-1] == "ask c(2: int, q: string)"


def test_fit_walks_object_members_in_javascript_order() -> None:
    # Two equal-size candidates: JavaScript walks "1" before "a", so "1" is cut first.
    reply = {"kind": "ANSWER", "data": {"a": list(range(30)), "1": list(range(30))}}
    fitted, _ = parley.lens.fit(reply, 60, handles=_handles())
    assert fitted["more"][0]["path"] == "data.1"
    assert fitted == fit_oracle(reply, 60, handles=_handles())[0]


KEYS = st.sampled_from(["a", "b", "0", "1", "10", "01", "-1", "4294967295", "x y"])
VALUES = st.recursive(
    st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_rendering_does_not_depend_on_insertion_order_of_index_keys(value: Any) -> None:
    """Moving index keys around (JavaScript cannot tell) never changes the Lens."""

    def shuffle(v: Any) -> Any:
        if isinstance(v, dict):
            index = [k for k in v if _is_index(k)]
            rest = {k: shuffle(v[k]) for k in v if not _is_index(k)}
            return rest | {k: shuffle(v[k]) for k in reversed(index)}
        if isinstance(v, list):
            return [shuffle(x) for x in v]
        return v

    other = shuffle(value)
    assert parley.lens.lean(other) == parley.lens.lean(value)
    assert compact_json(other) == compact_json(value)


# ---------------------------------------------------------------- robustness


@pytest.mark.parametrize("body", [{}, {"proposals": None}])
def test_fit_of_proposals_without_a_list(body: dict[str, Any]) -> None:
    # Used to raise KeyError / TypeError from the fast fitter.
    reply = {"kind": "PROPOSALS", **body}
    fitted, parked = parley.lens.fit(reply, 0, handles=_handles())
    assert (fitted, parked) == (reply, {})
    assert parley.lens.lens(fitted) == "0 proposals:"
    assert fit_oracle(reply, 0, handles=_handles()) == (fitted, parked)


def test_event_progress_beyond_the_double_range() -> None:
    # A JSON integer with 400 digits used to raise OverflowError.
    frame = json.loads('{"kind": "EVENT", "message": "m", "progress": 1' + "0" * 400 + "}")
    assert parley.lens.lens(frame) == "… m"
    assert parley.lens.lens({"kind": "EVENT", "message": "m", "progress": 2**60}) == (
        "… m (115292150460684700000%)"
    )


@pytest.mark.parametrize("expires", [10**400, -(10**400), 8_640_000_000_001, -8_640_000_000_001])
def test_times_outside_the_javascript_date_range_are_refused(expires: int) -> None:
    reply = {"kind": "PROPOSALS", "proposals": [{"id": "p", "expires": expires}]}
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.lens(reply)
    assert caught.value.reason == "bad_time"


def test_times_at_the_edge_of_the_javascript_date_range() -> None:
    def expires(t: Any) -> str:
        reply = {"kind": "PROPOSALS", "proposals": [{"id": "p", "expires": t}]}
        return parley.lens.lens(reply).splitlines()[-1]

    # new Date(8.64e15).toISOString() === "+275760-09-13T00:00:00.000Z"
    assert (
        expires(8_640_000_000_000) == "  cost: free · undo: never · expires: +275760-09-13T00:00Z"
    )
    assert expires(-8_640_000_000_000) == (
        "  cost: free · undo: never · expires: -271821-04-20T00:00Z"
    )
    assert expires(8_639_999_999_999.5).endswith("+275760-09-12T23:59:59Z")


# ---------------------------------------------------------------- the command line


def test_cli_refuses_non_utf8_and_deeply_nested_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "bad.json"
    binary.write_bytes(b"\xff\xfe{")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    empty = tmp_path / "p.json"
    empty.write_text('{"kind": "PROPOSALS"}', encoding="utf-8")
    assert parley_main(["lens", str(binary)]) == 1
    assert "bad_frame/not_json" in capsys.readouterr().err
    assert parley_main(["lens", str(deep), "--budget", "5"]) == 1
    assert "bad_frame/too_deep" in capsys.readouterr().err
    assert parley_main(["lens", str(empty), "--budget", "5"]) == 0
    assert capsys.readouterr().out == "0 proposals:\n"


# ---------------------------------------------------------------- handle store


def test_the_store_keeps_a_snapshot_of_what_was_parked() -> None:
    # The caller's live objects used to be stored by reference: changing them after the
    # fit changed what later EXPANDs served.
    rows = [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]
    reply = {"kind": "ANSWER", "data": {"rows": rows}}
    fitted, parked = parley.lens.fit(reply, 1, handles=_handles())
    store = parley.lens.MemoryHandleStore()
    parley.lens.park(store, parked, key=None, now=0)
    rows[1]["qty"] = 99
    rows.append({"sku": "c", "qty": 3})
    [entry] = fitted["more"]
    answer = parley.lens.expand(store, entry["handle"], 1000, key=None, now=1)
    assert answer["data"]["items"] == [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]


# ---------------------------------------------------------------- totality over reply shapes

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.just(10**400),
    st.floats(),
    st.text(max_size=4),
)
_FIELDS = st.sampled_from(
    [
        "data", "proposals", "receipt", "capabilities", "service", "more", "question",
        "options", "code", "message", "fix", "need", "consent", "retry", "progress", "auto",
        "replay", "effects", "cost", "risk", "undo", "expires", "summary", "id", "result",
        "undoes", "until", "window", "amount", "currency", "op", "target", "field", "from",
        "to", "detail", "params", "say", "label", "name", "hash", "path", "remaining", "est",
    ]
)  # fmt: skip
_SHAPES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_FIELDS, inner, max_size=5)
    ),
    max_leaves=30,
)
_KINDS = st.sampled_from(["BRIEF", "ANSWER", "PROPOSALS", "CLARIFY", "RECEIPT", "ERROR", "EVENT"])


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


def test_new_handle_refuses_a_randomness_source_that_runs_dry() -> None:
    # Used to spin for ever on empty or rejected-only output.
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.new_handle(lambda n: b"")
    assert caught.value.reason == "bad_random"
    with pytest.raises(parley.ParleyError):
        parley.lens.new_handle(lambda n: b"\xff" * (n - 1))
    with pytest.raises(parley.ParleyError):
        parley.lens.new_handle(lambda n: b"\xff" * n)


@pytest.mark.parametrize(
    ("amount", "usd", "jpy"),
    [
        (1250.0, "12.50 USD", "1250 JPY"),  # JSON 1250.0 is the number 1250 in JavaScript
        (-5.0, "-0.05 USD", "-5 JPY"),
        (-0.0, "0.00 USD", "0 JPY"),
        (2**53 + 1, "90071992547409.92 USD", "9007199254740992 JPY"),  # the parsed double
    ],
)
def test_money_treats_amounts_as_javascript_numbers(amount: Any, usd: str, jpy: str) -> None:
    # 1250.0 used to render "1250 USD" (as if it were not an integer).
    def cost(currency: str) -> str:
        reply = {
            "kind": "PROPOSALS",
            "proposals": [{"id": "p", "cost": {"amount": amount, "currency": currency}}],
        }
        return parley.lens.lens(reply).splitlines()[-1].split(" · ")[0]

    assert cost("USD") == f"  cost: {usd}"
    assert cost("JPY") == f"  cost: {jpy}"


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "get"]),
        st.sampled_from(["h_a", "h_b", "h_c", "h_d", "h_e"]),
        st.integers(0, 30),  # clock step
        st.integers(1, 40),  # ttl
        st.integers(0, 12),  # value length
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(_OPS, st.integers(1, 4), st.integers(20, 80))
def test_store_expiry_sweep_matches_a_plain_scan(ops: list[Any], cap: int, chars: int) -> None:
    """The store sweeps expired handles through an expiry heap instead of scanning every
    entry on every put (a cost an EXPAND flood could drive); it must drop exactly what
    the plain scan dropped: expired first, then the oldest."""
    store = parley.lens.MemoryHandleStore(max_entries=cap, max_chars=chars)
    model: dict[str, tuple[list[int], int, int]] = {}  # handle -> (value, expires, size)
    now = 0
    for op, handle, step, ttl, length in ops:
        now += step
        value = list(range(length))
        if op == "put":
            size = len(compact_json(value)) + len(handle)
            if size > chars:
                with pytest.raises(parley.ParleyError):
                    store.put(handle, value, key=None, now=now, ttl=ttl)
                continue
            store.put(handle, value, key=None, now=now, ttl=ttl)
            model.pop(handle, None)
            model = {h: e for h, e in model.items() if e[1] > now}
            while model and (len(model) >= cap or sum(e[2] for e in model.values()) + size > chars):
                del model[next(iter(model))]
            model[handle] = (value, now + ttl, size)
        else:
            entry = model.get(handle)
            if entry is None:
                with pytest.raises(parley.ParleyError) as caught:
                    store.get(handle, key=None, now=now)
                assert caught.value.code == "not_found"
            elif entry[1] <= now:
                with pytest.raises(parley.ParleyError) as caught:
                    store.get(handle, key=None, now=now)
                assert caught.value.code == "expired"
                del model[handle]
            else:
                assert store.get(handle, key=None, now=now) == entry[0]
        assert len(store) == len(model)
        assert store.chars == sum(e[2] for e in model.values())


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


# ---------------------------------------------------------------- fitting cost (not timed)


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


# ---------------------------------------------------------------- EXPAND of long text


_TEXT = st.text(
    alphabet=st.sampled_from(list('ab Z09\n\t"\\\x01é\U0001f389\ud800-.,:')), max_size=40
) | st.builds(
    lambda parts: "".join(parts),
    st.lists(st.sampled_from(["abc", "1234567", "\n   ", " ", "\n ", "xy9", '"', "é", "-0"])),
)


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.data())
def test_text_prefix_and_suffix_estimates_match_a_fresh_scan(text: str, data: Any) -> None:
    from parley._handles import _TextSlices
    from parley._lean import scalar_text

    slices = _TextSlices(text) if text else None
    for cut in range(len(text) + 1):
        assert slices is not None or cut == 0
        if slices is None:
            continue
        assert slices.raw.prefix(cut) == parley.lens.estimate(text[:cut])
        assert slices.rest(cut) == parley.lens.estimate(text[cut:])
        if cut:
            assert slices.scalar(cut) == parley.lens.estimate(scalar_text(text[:cut]))


def _naive_expand_slice(value: str, budget: int) -> tuple[str, int]:
    """The documented binary search, each probe measured from scratch."""
    from parley._lean import scalar_text, u16_len

    def fits(k: int) -> bool:
        total = 2 + parley.lens.estimate(scalar_text(value[:k]))
        if k < len(value):
            line = (
                f"… {u16_len(value[k:])} more at data.text — EXPAND h_XXXXXXXXXXXX"
                f" (~{parley.lens.estimate(value[k:])} tokens)"
            )
            total += parley.lens.estimate(line)
        return total <= budget

    if not value or fits(len(value)):
        return value, len(value)
    lo, hi = 1, len(value)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return value[:lo], lo


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, max_size=30).map("".join), st.integers(-2, 120))
def test_expand_of_text_cuts_where_the_plain_search_cuts(value: str, budget: int) -> None:
    # Each probe of the search used to re-scan the whole text: about 3 s of CPU for one
    # EXPAND of a 1 MB remainder. The indexed estimates must not move the cut.
    answer, parked = parley.lens.expand_slice(value, budget, handles=_handles())
    part, kept = _naive_expand_slice(value, budget)
    assert answer["data"]["text"] == part
    if kept < len(value):
        [rest] = parked.values()
        assert rest == value[kept:]
        assert answer["more"][0]["est"] == parley.lens.estimate(value[kept:])
