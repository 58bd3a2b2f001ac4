"""EXPAND handles: unguessable, expiring, bound to the producing proof key, bounded store."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

import parley

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
