"""EXPAND handles: minting, a small store protocol, a bounded memory store, and slices.

A handle names one parked remainder. It carries at least 128 random bits, expires (600
seconds by default), and is bound to the proof key of the request that produced it, so
another agent cannot read someone else's elided data; a handle made for an anonymous
request is unbound but still unguessable. A lookup that fails for any reason other than
expiry answers ``not_found``, so a wrong key learns nothing about whether a handle exists.
"""

from __future__ import annotations

import bisect
import heapq
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ._estimate import _TOKEN, estimate
from ._fit import PLACEHOLDER, _check_budget, _Meter
from ._lean import _NEEDS_ESCAPE as _ESCAPED
from ._lean import (
    _NUMBER,
    _RESERVED,
    NOT_BARE_CHAR,
    compact_json,
    copy_json,
    depth_guard,
    quote,
    u16_len,
)
from ._lean import _escape_char as _escape
from ._lens import more_line
from ._time import epoch_seconds
from .errors import ParleyError

__all__ = [
    "HANDLE_TTL",
    "HandleStore",
    "MemoryHandleStore",
    "expand",
    "expand_slice",
    "new_handle",
    "park",
]

HANDLE_TTL = 600
"""Default handle lifetime in seconds (SPEC.md section 4.6: at least 10 minutes)."""

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_HANDLE_LETTERS = 24  # 24 * log2(52) = 136.8 bits


def new_handle(randbytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """Mint a handle: ``h_`` and 24 random ASCII letters (about 137 bits).

    Letters only, so the handle estimates at 3 tokens exactly like the placeholder the
    fitting loop measures with. ``randbytes(n)`` supplies randomness (rejection sampled,
    so every letter is uniform).

    >>> handle = new_handle()
    >>> handle.startswith("h_"), len(handle)
    (True, 26)
    """
    if not callable(randbytes):
        raise ParleyError("bad_argument", "randbytes is a callable", reason="bad_random")
    letters: list[str] = []
    for _ in range(64):  # a fair source needs one chunk, very rarely two
        if len(letters) >= _HANDLE_LETTERS:
            break
        chunk = randbytes(32)
        if not isinstance(chunk, (bytes, bytearray, memoryview)) or len(chunk) != 32:
            # A source that runs dry would otherwise loop here for ever.
            raise ParleyError(
                "bad_argument", "the randomness source returned too few bytes", reason="bad_random"
            )
        for byte in chunk:
            if byte < 208 and len(letters) < _HANDLE_LETTERS:  # 208 = 4 * 52
                letters.append(_LETTERS[byte % 52])
    if len(letters) < _HANDLE_LETTERS:
        raise ParleyError(
            "bad_argument", "the randomness source looks constant", reason="bad_random"
        )
    return "h_" + "".join(letters)


def unknown_handle() -> ParleyError:
    """The refusal of a handle no store holds for this requester (unknown, or bound to
    another proof key: the two are not told apart)."""
    return ParleyError(
        "not_found", "no such EXPAND handle is held for this requester", reason="unknown_handle"
    )


def handle_expired() -> ParleyError:
    """The refusal of a handle whose time to live has passed."""
    return ParleyError("expired", "the EXPAND handle has expired", reason="handle_expired")


@runtime_checkable
class HandleStore(Protocol):
    """Where parked remainders wait for EXPAND (in memory here; SQLite in the runtime)."""

    def put(self, handle: str, value: Any, *, key: str | None, now: int, ttl: int) -> None:
        """Park ``value`` under ``handle``, bound to proof ``key`` (None: unbound)."""

    def get(self, handle: str, *, key: str | None, now: int) -> Any:
        """Return the value parked under ``handle`` for a requester proving ``key``.

        Raises ``not_found`` (unknown handle, or bound to another key) or ``expired``.
        """


@dataclass(frozen=True)
class _Parked:
    value: Any
    key: str | None
    expires: int
    size: int
    sequence: int


@depth_guard
def _snapshot(value: Any) -> Any:
    """Return a copy of a JSON value that shares no list or object with it."""
    return copy_json(value)


class MemoryHandleStore:
    """A bounded in-memory :class:`HandleStore`; evicts by age and by total size.

    ``max_entries`` bounds the number of handles and ``max_chars`` the summed length of
    the parked values' compact JSON. Expired handles are dropped first, then the oldest,
    so the store never grows without bound. Not thread-safe; guard it with a lock when
    shared.
    """

    def __init__(self, *, max_entries: int = 10_000, max_chars: int = 64 * 1024 * 1024) -> None:
        if type(max_entries) is not int or type(max_chars) is not int:
            raise ParleyError("bad_argument", "store limits are integers", reason="bad_limits")
        if max_entries < 1 or max_chars < 1:
            raise ParleyError("bad_argument", "store limits must be positive", reason="bad_limits")
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._entries: OrderedDict[str, _Parked] = OrderedDict()
        self._chars = 0
        # Expiry order for sweeping without scanning every entry on every put: entries of
        # (expires, sequence, handle); one whose sequence no longer matches is stale.
        self._expiry: list[tuple[int, int, str]] = []
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        """The summed size of the parked values."""
        return self._chars

    def _drop(self, handle: str) -> None:
        parked = self._entries.pop(handle)
        self._chars -= parked.size

    def _sweep(self, now: int) -> None:
        """Drop every expired handle (amortized logarithmic, not a scan of the store)."""
        heap = self._expiry
        while heap and heap[0][0] <= now:
            _expires, sequence, handle = heapq.heappop(heap)
            parked = self._entries.get(handle)
            if parked is not None and parked.sequence == sequence:
                self._drop(handle)
        if len(heap) > 2 * len(self._entries) + 64:  # forget stale expiry entries
            self._expiry = [(p.expires, p.sequence, h) for h, p in self._entries.items()]
            heapq.heapify(self._expiry)

    def put(self, handle: str, value: Any, *, key: str | None, now: int, ttl: int) -> None:
        """Park ``value`` under ``handle``; evicts expired, then oldest, to stay bounded."""
        if not isinstance(handle, str) or not handle:
            raise ParleyError("internal", "a handle is a non-empty string", reason="bad_handle")
        size = len(compact_json(value)) + len(handle)
        if size > self.max_chars:
            raise ParleyError(
                "limit", "the remainder is larger than the handle store holds", reason="too_large"
            )
        value = _snapshot(value)  # the caller may change its own objects later
        if handle in self._entries:
            self._drop(handle)
        self._sweep(now)
        while self._entries and (
            len(self._entries) >= self.max_entries or self._chars + size > self.max_chars
        ):
            self._drop(next(iter(self._entries)))
        self._sequence += 1
        expires = now + ttl
        self._entries[handle] = _Parked(value, key, expires, size, self._sequence)
        heapq.heappush(self._expiry, (expires, self._sequence, handle))
        self._chars += size

    def get(self, handle: str, *, key: str | None, now: int) -> Any:
        """Return the parked value; ``not_found`` for unknown or foreign, ``expired`` after TTL."""
        parked = self._entries.get(handle) if isinstance(handle, str) else None
        if parked is None or (parked.key is not None and parked.key != key):
            raise unknown_handle()
        if parked.expires <= now:
            self._drop(handle)
            raise handle_expired()
        return parked.value


def _check_store(store: object) -> None:
    if not isinstance(store, HandleStore):
        raise ParleyError("bad_argument", "store is a HandleStore", reason="bad_argument")


def park(
    store: HandleStore,
    parked: dict[str, Any],
    *,
    key: str | None,
    now: int | datetime,
    ttl: int = HANDLE_TTL,
) -> None:
    """Put every remainder :func:`parley.lens.fit` returned into ``store``, bound to ``key``.

    ``now`` is integer epoch seconds or an aware datetime (a naive one is a usage error).
    """
    now = epoch_seconds(now, "now")
    _check_store(store)
    if not isinstance(parked, dict):
        raise ParleyError(
            "bad_argument", "parked is fit()'s dict of remainders", reason="bad_argument"
        )
    for handle, value in parked.items():
        store.put(handle, value, key=key, now=now, ttl=ttl)


_DIGIT_RUN = re.compile(r"[0-9]+")


class _Matches:
    """Where the section 8 pattern matches in one text, to estimate its prefixes and
    suffixes without scanning them again (EXPAND probes dozens of cut points)."""

    def __init__(self, text: str) -> None:
        self.text = text
        spans = [m.span() for m in _TOKEN.finditer(text)]
        self.starts = [start for start, _ in spans]
        self.ends = [end for _, end in spans]

    def prefix(self, cut: int) -> int:
        """``estimate(text[:cut])``: matches before the cut, plus a match it shortens."""
        index = bisect.bisect_right(self.ends, cut)
        count = index
        if index < len(self.starts) and self.starts[index] < cut:
            start = self.starts[index]
            if self.text[start] != "\n" or cut - start >= 3:  # an indent needs two spaces
                count += 1
        return count

    def suffix(self, cut: int) -> int:
        """``estimate(text[cut:])``: matches after the cut, plus what a cut match leaves."""
        total = len(self.starts)
        index = bisect.bisect_right(self.starts, cut) - 1
        if index >= 0 and self.starts[index] < cut < self.ends[index]:
            first = self.text[self.starts[index]]
            if first == "\n":  # inside an indentation run: its spaces match nothing
                return total - index - 1
            if "0" <= first <= "9":  # the rest of the digit run regroups in threes
                run = _DIGIT_RUN.match(self.text, cut)
                end = run.end() if run is not None else cut
                return -(-(end - cut) // 3) + total - bisect.bisect_left(self.starts, end)
            return 1 + total - index - 1  # the rest of a letter run
        return total - bisect.bisect_left(self.starts, cut)


class _TextSlices:
    """Estimates of ``text: <prefix>`` and of the remainder for every cut of one string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.raw = _Matches(text)
        self.quoted = _Matches(quote(text))
        bad = NOT_BARE_CHAR.search(text)
        self.bare_until = len(text) if bad is None else bad.start()
        self.escapes: list[int] = []  # positions of escaped characters
        self.extra: list[int] = [0]  # extra quoted length before each of them, cumulated
        for match in _ESCAPED.finditer(text):
            self.escapes.append(match.start())
            self.extra.append(self.extra[-1] + len(_escape(match)) - 1)

    def scalar(self, k: int) -> int:
        """``estimate(scalar_text(text[:k]))`` for ``0 < k``."""
        text = self.text
        if (
            k <= self.bare_until
            and text[0] != " "
            and text[k - 1] != " "
            and text[:k] not in _RESERVED
            and _NUMBER.fullmatch(text, 0, k) is None
        ):
            return self.raw.prefix(k)
        escaped = k + self.extra[bisect.bisect_left(self.escapes, k)]
        return self.quoted.prefix(1 + escaped) + 1  # the closing quote

    def rest(self, k: int) -> int:
        """``estimate(text[k:])``."""
        return self.raw.suffix(k)


def _slice_reply(name: str, part: Any, more: dict[str, Any] | None) -> dict[str, Any]:
    reply: dict[str, Any] = {"kind": "ANSWER", "data": {name: part}}
    if more is not None:
        reply["more"] = [more]
    return reply


@depth_guard
def expand_slice(
    value: Any, budget: int, *, handles: Callable[[], str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cut the first slice of a parked remainder that fits ``budget``.

    Returns ``(answer, parked)``: an ANSWER reply ``{"data": {"items": [...]}}`` for a
    list or ``{"data": {"text": "..."}}`` for a string, with one ``more`` entry for the
    rest (parked under a new handle from ``handles()``) when it does not all fit. The
    slice is the longest prefix found by binary search (``lo = 1, hi = n``; ``mid =
    (lo + hi + 1) // 2``) whose Lens, ``more`` line included, estimates within budget;
    at least one item or character is always served. Concatenating the slices of
    successive EXPANDs reproduces the value exactly.

    >>> answer, parked = expand_slice(list(range(50)), 30, handles=iter(["h_next"]).__next__)
    >>> answer["data"]["items"], answer["more"][0]["remaining"]
    ([0, 1, 2, 3, 4], 45)
    """
    budget = _check_budget(budget)
    if not callable(handles):
        raise ParleyError("bad_argument", "handles is a callable", reason="bad_argument")
    if isinstance(value, list):
        name = "items"
    elif isinstance(value, str):
        name = "text"
    else:
        raise ParleyError(
            "internal", "a parked remainder is a list or a string", reason="bad_remainder"
        )
    count = len(value)
    meter = _Meter()
    path = f"data.{name}"
    text = _TextSlices(value) if isinstance(value, str) and count else None

    def rest_est(k: int) -> int:
        if isinstance(value, list):
            return meter.rest_top(value, k)
        assert text is not None
        return text.rest(k)

    def remaining(k: int) -> int:
        return count - k if isinstance(value, list) else u16_len(value[k:])

    def fits(k: int) -> bool:
        if isinstance(value, list):
            total = meter.entry("items", value[:k], 0)
        else:
            assert text is not None
            total = meter.est("text") + 1 + text.scalar(k)
        if k < count:
            line = more_line(
                {"handle": PLACEHOLDER, "path": path, "remaining": remaining(k), "est": rest_est(k)}
            )
            total += estimate(line)
        return total <= budget

    if count == 0 or fits(count):
        return _slice_reply(name, value, None), {}
    lo, hi = 1, count
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    handle = handles()
    rest = value[lo:]
    more = {"handle": handle, "path": path, "remaining": remaining(lo), "est": rest_est(lo)}
    return _slice_reply(name, value[:lo], more), {handle: rest}


def expand(
    store: HandleStore,
    handle: str,
    budget: int,
    *,
    key: str | None,
    now: int | datetime,
    handles: Callable[[], str] = new_handle,
    ttl: int = HANDLE_TTL,
) -> dict[str, Any]:
    """Serve an EXPAND: look ``handle`` up for the requester's proof ``key``, slice it.

    The rest of the value is parked under a new handle bound to ``key``. Returns the
    ANSWER reply body (``kind``, ``data``, ``more``). Raises ``not_found`` or ``expired``.
    ``now`` is integer epoch seconds or an aware datetime (a naive one is a usage error).
    """
    now = epoch_seconds(now, "now")
    _check_store(store)
    value = store.get(handle, key=key, now=now)
    answer, parked = expand_slice(value, budget, handles=handles)
    park(store, parked, key=key, now=now, ttl=ttl)
    return answer
