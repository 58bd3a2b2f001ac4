"""Grant verification against the work no implementation can skip, and the shortcuts dropped.

What a service sees, per ``verify`` call, for a root grant (1 Ed25519 check) and a 3-block
delegation (3 checks):

- **cold**: :func:`parley.verify_grant` on a token never seen, minted by keys never seen
  (a fresh principal and fresh holders for every call);
- **warm**: the same token again through the service's :class:`parley.GrantVerifier`,
  which remembers the token's decoding (never a signature check).

Floors, measured in the same run on the same tokens: ``raw`` is the Ed25519 checks alone
with the keys already loaded, ``raw+load`` adds loading every key from its 32 bytes (a
cold call must), ``json`` is ``json.loads`` of the token's JSON text. The cold floor is
``raw+load`` plus ``json``; the warm floor is ``raw``.

Each CPython shortcut the grant code used to take is re-installed here, one at a time and
all together, and timed beside the plain code (interleaved rounds, best and median):

- ``scan_once``: ``JSONDecoder.scan_once`` instead of ``JSONDecoder.decode``;
- ``c_make_encoder``: a C encoder built once with positional arguments instead of
  ``JSONEncoder.encode`` (which builds one per call);
- ``object.__new__``: the ``ok`` result built by filling ``__dict__`` instead of
  ``GrantCheck.__init__``;
- ``key memory``: the process-wide ``lru_cache`` of parsed public keys.

On a loaded machine the difference of two whole calls is noisy, so each replaced step is
also timed alone (best of many short rounds) and its saving printed as a share of a call.
The rule (DESIGN.md, "Speed without hidden state"): a shortcut stays only if it buys more
than 20%; the figures printed here are why none of them is in ``src/``.

    python bench/bench_parley_grants.py [--rounds N] [--number N]
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import functools
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import parley
from parley import _grant_token, _grant_verify, _keys

NOW = 1790000000
CAVEATS: list[dict[str, Any]] = [
    {"svc": ["shop.example"]},
    {"verbs": ["ASK", "COMMIT"]},
    {"can": ["shop.*"]},
    {"exp": NOW + 3600},
    {"per": {"max": 5000, "currency": "USD"}},
    {"spend": {"max": 20000, "currency": "USD"}},
    {"risk": "medium"},
]
FACTS = parley.ProposalFacts("h", parley.grants.Cost(1250, "USD"), "low")
CTX = parley.GrantContext("shop.example", "COMMIT", "shop.order", NOW, FACTS)


class Input:
    """One grant: its token, holder, principal, and the raw material of its signatures."""

    def __init__(self, depth: int, seed: int | None) -> None:
        if seed is None:
            keys = [parley.generate_key() for _ in range(depth + 1)]
        else:
            keys = [parley.key_from_seed(bytes([seed + n]) * 32) for n in range(depth + 1)]
        token = parley.mint_grant(keys[0], keys[1].public, CAVEATS, iat=NOW, nonce="bench")
        for n in range(1, depth):
            token = parley.delegate(
                token, keys[n], keys[n + 1].public, [{"exp": NOW + 600}], iat=NOW
            )
        self.token = token
        self.holder = keys[depth].public
        self.trusted = [keys[0].public]
        grant = parley.decode_grant(token)
        signers = [grant.principal] + [b.sub for b in grant.blocks[:-1]]
        self.raw = [
            (
                parley.keys.parse_public_key(signer),
                parley.wire.b64url_decode(block.sig),
                parley.canonical(block.payload).encode(),
            )
            for signer, block in zip(signers, grant.blocks, strict=True)
        ]
        self.loaded = [(Ed25519PublicKey.from_public_bytes(k), s, m) for k, s, m in self.raw]
        self.text = base64.urlsafe_b64decode(token[4:] + "==").decode()


# ---------------------------------------------------------------- the dropped shortcuts


class _ScanOnce:
    """``JSONDecoder.decode`` through ``scan_once`` (the C scanner, no whitespace skip)."""

    def __init__(self, real: json.JSONDecoder) -> None:
        self.real = real
        self.scan: Callable[[str, int], tuple[Any, int]] = real.scan_once  # type: ignore[attr-defined]

    def decode(self, text: str) -> Any:
        try:
            value, end = self.scan(text, 0)
        except StopIteration:
            end = -1
        return value if end == len(text) else self.real.decode(text)


def _c_dumps() -> Callable[[Any], str]:
    encoder = _grant_token._ENCODER
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]
    built = make(
        None, encoder.default, json.encoder.encode_basestring, None, ":", ",", True, False, True
    )
    return lambda value: "".join(built(value, 0))


_DEFAULTS = {f.name: f.default for f in dataclasses.fields(parley.GrantCheck)}


def _new_authorized(
    grant: parley.grants.Grant, caps: list[parley.grants.SpendCap], at: int
) -> parley.GrantCheck:
    result: parley.GrantCheck = object.__new__(parley.GrantCheck)
    fields = result.__dict__
    fields.update(_DEFAULTS)
    fields.update(
        ok=True,
        grant=grant.id,
        blocks=grant.block_ids,
        index=at,
        principal=grant.principal,
        holder=grant.holder,
        spend_caps=tuple(caps),
        message="authorized",
    )
    return result


SHORTCUTS: dict[str, list[tuple[object, str, Callable[[], object]]]] = {
    "scan_once": [(_grant_token, "_DECODER", lambda: _ScanOnce(_grant_token._DECODER))],
    "c_make_encoder": [(_grant_token, "_dumps", _c_dumps)],
    "object.__new__": [(_grant_verify, "_authorized", lambda: _new_authorized)],
    "key memory": [
        (_keys, "_public_key_object", lambda: functools.lru_cache(4096)(_keys._public_key_object))
    ],
}
SHORTCUTS["all four"] = [patch for patches in SHORTCUTS.values() for patch in patches]


@contextmanager
def installed(name: str | None) -> Iterator[None]:
    """Run with the named shortcut in place of the plain code, then put the plain code back."""
    saved = []
    for module, attr, make in SHORTCUTS.get(name or "", []):
        saved.append((module, attr, getattr(module, attr)))
        setattr(module, attr, make())
    try:
        yield
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)


# ---------------------------------------------------------------- timing


def interleaved(
    jobs: dict[str, Callable[[int], None]], number: int, rounds: int
) -> dict[str, tuple[float, float]]:
    """Best and median microseconds per call of each job, timed in interleaved rounds.

    A job is called with the round number and makes ``number`` calls itself. The order of
    the jobs rotates every round, so no job always runs first (or after the same one).
    """
    times: dict[str, list[float]] = {name: [] for name in jobs}
    order = list(jobs.items())
    for round_ in range(rounds):
        shift = round_ % len(order)
        for name, job in order[shift:] + order[:shift]:
            start = time.perf_counter()
            job(round_)
            times[name].append((time.perf_counter() - start) / number * 1e6)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}


def _floors(pools: list[list[Input]], number: int) -> dict[str, Callable[[int], None]]:
    def raw(round_: int) -> None:
        for item in pools[round_]:
            for key, sig, msg in item.loaded:
                key.verify(sig, msg)

    def raw_load(round_: int) -> None:
        for item in pools[round_]:
            for key, sig, msg in item.raw:
                Ed25519PublicKey.from_public_bytes(key).verify(sig, msg)

    def loads(round_: int) -> None:
        for item in pools[round_]:
            json.loads(item.text)

    return {"raw": raw, "raw+load": raw_load, "json": loads}


def _verify_cold(pools: list[list[Input]], name: str | None) -> Callable[[int], None]:
    def job(round_: int) -> None:
        with installed(name):
            for item in pools[round_]:
                check = parley.verify_grant(
                    [item.token], trusted=item.trusted, proof_key=item.holder, ctx=CTX
                )
                assert check.ok, check

    return job


def _verify_warm(item: Input, number: int, name: str | None) -> Callable[[int], None]:
    verifier = parley.GrantVerifier()

    def job(round_: int) -> None:
        with installed(name):
            for _ in range(number):
                check = verifier.verify(
                    [item.token], trusted=item.trusted, proof_key=item.holder, ctx=CTX
                )
                assert check.ok, check

    return job


def _same_answers(item: Input) -> None:
    """Every shortcut gives exactly what the plain code gives (else the figures mean nothing)."""
    plain = parley.verify_grant([item.token], trusted=item.trusted, proof_key=item.holder, ctx=CTX)
    decoded = parley.decode_grant(item.token)
    for name in SHORTCUTS:
        with installed(name):
            again = parley.verify_grant(
                [item.token], trusted=item.trusted, proof_key=item.holder, ctx=CTX
            )
            assert again == plain, name
            assert repr(again) == repr(plain), name
            blocks = parley.decode_grant(item.token).blocks
            assert [b.signed for b in blocks] == [b.signed for b in decoded.blocks], name


def _step_savings(item: Input, number: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Per verify call: microseconds of each replaced step, plain and with its shortcut.

    Timing the step alone (best of many short rounds) is steadier than the difference of
    two whole calls on a loaded machine.
    """
    grant = parley.decode_grant(item.token)
    payloads = [dict(b.payload) for b in grant.blocks]
    sigs = [b.sig for b in grant.blocks]
    caps = [parley.grants.SpendCap(grant.id, 20000, "USD")]
    plain_decoder, fast_decoder = _grant_token._DECODER, _ScanOnce(_grant_token._DECODER)
    plain_dumps, fast_dumps = _grant_token._dumps, _c_dumps()
    plain_key = _keys._public_key_object
    remembered = functools.lru_cache(4096)(plain_key)
    signers = [grant.principal] + [b.sub for b in grant.blocks[:-1]]

    def encode(dumps: Callable[[Any], str]) -> Callable[[int], None]:
        def job(round_: int) -> None:
            for _ in range(number):
                for payload, sig in zip(payloads, sigs, strict=True):
                    dumps(payload)
                    dumps(sig)

        return job

    def decode(decoder: Any) -> Callable[[int], None]:
        def job(round_: int) -> None:
            for _ in range(number):
                decoder.decode(item.text)

        return job

    def result(build: Callable[..., parley.GrantCheck]) -> Callable[[int], None]:
        def job(round_: int) -> None:
            for _ in range(number):
                build(grant, caps, 0)

        return job

    def keys(load: Callable[[str], Any]) -> Callable[[int], None]:
        def job(round_: int) -> None:
            for _ in range(number):
                for signer in signers:
                    load(signer)

        return job

    jobs = {
        "scan_once": decode(plain_decoder),
        "scan_once*": decode(fast_decoder),
        "c_make_encoder": encode(plain_dumps),
        "c_make_encoder*": encode(fast_dumps),
        "object.__new__": result(_grant_verify._authorized),
        "object.__new__*": result(_new_authorized),
        "key memory": keys(plain_key),
        "key memory*": keys(remembered),
    }
    got = interleaved(jobs, number, rounds)
    return {name: (got[name][0], got[name + "*"][0]) for name in jobs if not name.endswith("*")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=101)
    parser.add_argument("--number", type=int, default=10)
    args = parser.parse_args()
    number, rounds = args.number, args.rounds
    print(f"grant verification, us per call, best / median of {rounds} interleaved rounds")
    variants: list[str | None] = [None, *SHORTCUTS]
    cold_best = 0.0  # the plain cold call's best, set before the warm figures need it
    for label, depth in (("root grant (1 block)", 1), ("3-block delegation", 3)):
        pools = [[Input(depth, None) for _ in range(number)] for _ in range(rounds)]
        _same_answers(pools[0][0])
        for kind in ("cold", "warm"):
            warm_input = Input(depth, 1)
            warm_pools = [[warm_input] * number] * rounds
            floors = _floors(pools if kind == "cold" else warm_pools, number)
            jobs = dict(floors)
            for name in variants:
                if kind == "cold":
                    jobs[name or "plain"] = _verify_cold(pools, name)
                else:
                    jobs[name or "plain"] = _verify_warm(warm_input, number, name)
            got = interleaved(jobs, number, rounds)
            plain_best, plain_median = got["plain"]
            if kind == "warm":  # the steps a remembered token still runs: key loads, result
                steps = _step_savings(warm_input, number * 10, rounds)
            # cold must load keys and parse the JSON; warm may remember the parsing
            floor = got["raw+load"][0] + got["json"][0] if kind == "cold" else got["raw"][0]
            print(f"  {label} {kind}:")
            for name, (best, median) in got.items():
                line = f"    {name:15s} {best:8.1f} / {median:8.1f}"
                if name in floors:
                    print(line)
                    continue
                line += f"   {best / floor:4.2f}x floor"
                if name != "plain":
                    gain = 1 - median / plain_median
                    line += f"   buys {gain:+6.1%} (median), {1 - best / plain_best:+6.1%} (best)"
                print(line)
            if kind == "warm":
                print(f"  {label}, each replaced step alone (best, us per verify call):")
                for name, (plain_step, fast_step) in steps.items():
                    saved = plain_step - fast_step
                    print(
                        f"    {name:15s} plain {plain_step:6.2f}  shortcut {fast_step:6.2f}"
                        f"  saves {saved:5.2f} us = {saved / plain_best:5.1%} of a warm call,"
                        f" {saved / cold_best:5.1%} of a cold one"
                    )
            else:
                cold_best = plain_best


if __name__ == "__main__":
    main()
