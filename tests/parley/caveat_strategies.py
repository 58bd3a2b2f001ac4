"""Hypothesis strategies for caveats, shared by the caveat (§6.3), token (§6.2–6.3) and
verification (§6.4) rule files: well-formed caveats of every kind, and any JSON value in
their place."""

from __future__ import annotations

from hypothesis import strategies as st

NOW = 1790000000
SAFE = 2**53 - 1

_any_money = st.fixed_dictionaries(
    {"max": st.integers(-2, 30000), "currency": st.sampled_from(["USD", "EUR", ""])}
)


_good_caveats = st.one_of(
    st.builds(
        lambda k, v: {k: v},
        st.sampled_from(["svc", "verbs", "can"]),
        st.lists(
            st.sampled_from(["shop.example", "a.example", "ASK", "COMMIT", "shop.*", "*", "x"]),
            max_size=3,
        ),
    ),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["exp", "nbf"]), st.integers(NOW - 9, NOW + 9)),
    st.builds(lambda k, v: {k: v}, st.sampled_from(["per", "spend"]), _any_money),
    st.builds(lambda v: {"risk": v}, st.sampled_from(["low", "medium", "high", "extreme"])),
    st.builds(lambda v: {"only": v}, st.sampled_from(["h", "other"])),
)


_kinds = st.sampled_from(
    ["svc", "verbs", "can", "exp", "nbf", "per", "spend", "risk", "only", "toString", "x"]
)


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, -1, SAFE, SAFE + 1, 2**63, 1.5, "", "USD", "low", "toString", "a.x"]),
    st.text(max_size=4),
)


_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["max", "currency", "x"]), inner, max_size=3),
    ),
    max_leaves=6,
)


_caveats = st.one_of(
    _good_caveats, st.dictionaries(_kinds, _values, min_size=1, max_size=2), _scalars
)
