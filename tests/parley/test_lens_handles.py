"""EXPAND handles: unguessable, expiring, bound to the producing proof key, bounded store.

Private imports: ``parley._handles._TextSlices`` (the fast slicing of a long text for
EXPAND) is held to the plain rule it stands for, the renderer's private ``scalar_text`` and
``u16_len``; ``compact_json`` measures a stored value as the handle store does.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parley
from parley._lean import compact_json

ALICE = "ed25519:alice"
MALLORY = "ed25519:mallory"
NOW = 1790000000


def test_new_handles_are_long_random_letters_estimating_like_the_placeholder() -> None:
    handles = {parley.lens.new_handle() for _ in range(2000)}
    assert len(handles) == 2000
    for handle in itertools.islice(handles, 50):
        assert handle.startswith("h_")
        body = handle[2:]
        assert body.isascii()
        assert body.isalpha()
        assert len(body) * math.log2(52) >= 128
        assert parley.lens.estimate(handle) == parley.lens.estimate("h_XXXXXXXXXXXX") == 3


def test_new_handle_uses_the_injected_randomness_and_rejects_biased_bytes() -> None:
    stream = iter([bytes([255, 207, 0, 51, 52] * 10)] * 3)
    handle = parley.lens.new_handle(lambda n: next(stream)[:n])
    # 255 is rejected (>= 208); 207 % 52 = 51 -> "z"; 0 -> "A"; 51 -> "z"; 52 -> "A".
    assert handle.startswith("h_zAzAzAzA")


def test_default_lifetime_is_at_least_ten_minutes() -> None:
    assert parley.lens.HANDLE_TTL >= 600


def _store(**limits: int) -> parley.lens.MemoryHandleStore:
    return parley.lens.MemoryHandleStore(**limits)


def test_bound_handle_reads_only_for_its_key() -> None:
    store = _store()
    assert isinstance(store, parley.lens.HandleStore)
    store.put("h_a", [1, 2], key=ALICE, now=NOW, ttl=600)
    assert store.get("h_a", key=ALICE, now=NOW + 599) == [1, 2]
    for key in (MALLORY, None):
        with pytest.raises(parley.ParleyError) as caught:
            store.get("h_a", key=key, now=NOW)
        assert (caught.value.code, caught.value.reason) == ("not_found", "unknown_handle")
    with pytest.raises(parley.ParleyError) as unknown:
        store.get("h_b", key=ALICE, now=NOW)
    assert str(unknown.value) == str(caught.value), "a foreign key learns nothing more"


def test_anonymous_handle_is_unbound() -> None:
    store = _store()
    store.put("h_anon", "text", key=None, now=NOW, ttl=600)
    assert store.get("h_anon", key=MALLORY, now=NOW) == "text"
    assert store.get("h_anon", key=None, now=NOW) == "text"


def test_handles_expire_and_are_dropped() -> None:
    store = _store()
    store.put("h_a", [1], key=ALICE, now=NOW, ttl=600)
    with pytest.raises(parley.ParleyError) as caught:
        store.get("h_a", key=ALICE, now=NOW + 600)
    assert (caught.value.code, caught.value.reason) == ("expired", "handle_expired")
    assert len(store) == 0
    with pytest.raises(parley.ParleyError) as again:
        store.get("h_a", key=ALICE, now=NOW + 601)
    assert again.value.code == "not_found"


def test_store_evicts_expired_then_oldest_by_count() -> None:
    store = _store(max_entries=3)
    store.put("h_1", [1], key=None, now=NOW, ttl=10)
    store.put("h_2", [2], key=None, now=NOW + 1, ttl=600)
    store.put("h_3", [3], key=None, now=NOW + 2, ttl=600)
    store.put("h_4", [4], key=None, now=NOW + 20, ttl=600)  # h_1 expired: dropped first
    assert len(store) == 3
    assert store.get("h_2", key=None, now=NOW + 21) == [2]
    store.put("h_5", [5], key=None, now=NOW + 22, ttl=600)  # full: the oldest (h_2) goes
    assert len(store) == 3
    with pytest.raises(parley.ParleyError):
        store.get("h_2", key=None, now=NOW + 23)
    assert store.get("h_5", key=None, now=NOW + 23) == [5]


def test_store_evicts_by_size_and_refuses_the_oversized() -> None:
    store = _store(max_chars=100)
    store.put("h_1", "a" * 40, key=None, now=NOW, ttl=600)
    store.put("h_2", "b" * 40, key=None, now=NOW, ttl=600)
    store.put("h_3", "c" * 40, key=None, now=NOW, ttl=600)
    assert store.chars <= 100
    assert len(store) == 2
    with pytest.raises(parley.ParleyError) as caught:
        store.put("h_big", "x" * 200, key=None, now=NOW, ttl=600)
    assert caught.value.code == "limit"
    assert len(store) == 2, "a refused put changes nothing"


def test_store_never_grows_without_bound() -> None:
    store = _store(max_entries=50, max_chars=5000)
    for i in range(1000):
        store.put(f"h_{i}", list(range(i % 30)), key=ALICE, now=NOW + i, ttl=10_000)
        assert len(store) <= 50
        assert store.chars <= 5000


def test_expand_serves_slices_bound_to_the_requester() -> None:
    value: list[Any] = [{"sku": f"S{i}", "qty": i} for i in range(200)]
    reply = {"kind": "ANSWER", "data": {"rows": value}}
    fitted, parked = parley.lens.fit(reply, 120, handles=parley.lens.new_handle)
    store = _store()
    parley.lens.park(store, parked, key=ALICE, now=NOW)
    [entry] = fitted["more"]
    got = list(fitted["data"]["rows"])
    handle = entry["handle"]
    for step in itertools.count():
        with pytest.raises(parley.ParleyError):
            parley.lens.expand(store, handle, 300, key=MALLORY, now=NOW + step)
        answer = parley.lens.expand(store, handle, 300, key=ALICE, now=NOW + step)
        assert parley.lens.estimate(parley.lens.lens(answer)) <= 300
        got.extend(answer["data"]["items"])
        if "more" not in answer:
            break
        handle = answer["more"][0]["handle"]
    assert got == value


def test_expand_of_text_and_of_a_bad_remainder() -> None:
    store = _store()
    store.put("h_t", "word " * 300, key=None, now=NOW, ttl=600)
    answer = parley.lens.expand(store, "h_t", 40, key=None, now=NOW)
    assert answer["data"]["text"]
    assert answer["more"][0]["path"] == "data.text"
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.expand_slice({"a": 1}, 10, handles=parley.lens.new_handle)
    assert caught.value.reason == "bad_remainder"


# -------------------------------- snapshots, randomness, expiry, text slices


def _handles() -> Any:
    counter = itertools.count()
    return lambda: "h_" + "".join("abcdefghij"[int(d)] for d in str(next(counter))) + "q"


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


def test_new_handle_refuses_a_randomness_source_that_runs_dry() -> None:
    # Used to spin for ever on empty or rejected-only output.
    with pytest.raises(parley.ParleyError) as caught:
        parley.lens.new_handle(lambda n: b"")
    assert caught.value.reason == "bad_random"
    with pytest.raises(parley.ParleyError):
        parley.lens.new_handle(lambda n: b"\xff" * (n - 1))
    with pytest.raises(parley.ParleyError):
        parley.lens.new_handle(lambda n: b"\xff" * n)


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
