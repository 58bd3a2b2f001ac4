"""Do VXP's dropped CPython shortcuts buy more than 20%? (issue 25, DESIGN.md "Speed
without hidden state")

`vxp` once built its chain state with ``object.__new__`` plus a ``__dict__`` swap
(``_frozen.assemble``) and parsed JSON through ``JSONDecoder.scan_once``. Both are gone:
the plain code (``dataclasses.replace``, ``JSONDecoder.decode``) runs in ``src/``. This bench
puts each shortcut back for the length of a measurement (here only, never in ``src/``) and
compares, in one run, interleaved rounds of CPU time, best and median:

- warm: one ``vxp.Verifier`` built once, verifying the package;
- cold: ``vxp.verify`` with fresh metadata and JWKS objects every call;

for the draft's 6-statement package and a 1,000-statement chain; and ``vxp.verify_sd_jwt``
of an SD-JWT with 50 disclosures (warm: ``vxp.IssuerKeys`` built once; cold: from the JWK
every call), where JSON parsing weighs most. A shortcut would be kept (in
``src/vxp/_fast.py``) only where it is more than 1.20x faster.

    python bench/bench_vxp_internals.py [--seconds S] [--rounds N]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import vxp
from vxp import _chain, _codec, _jws, _sdjwt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vxp_proof import long_chain

_setattr = object.__setattr__


def _assemble_replace(state: Any, count: int, at: Any, changes: dict[str, Any]) -> Any:
    """The dropped shortcut: an instance from a dict, without the frozen ``__init__``."""
    value = object.__new__(type(state))
    _setattr(value, "__dict__", {**state.__dict__, **changes, "count": count, "last_time": at})
    return value


_SCAN: Callable[[str, int], tuple[Any, int]] = _codec._DECODER.scan_once  # type: ignore[attr-defined]


def _scan_parse(data: bytes, where: str, *, code: str = "malformed_json") -> Any:
    """The dropped shortcut: one ``scan_once`` from the first character, else the plain."""
    with contextlib.suppress(Exception):  # anything unusual: the plain parser names it
        text = data.decode("utf-8")
        if not text.startswith("\ufeff"):
            value, end = _SCAN(text, 0)
            if end == len(text):
                return value
    return _codec.parse_json(data, where, code=code)


@contextmanager
def _shortcuts(frozen: bool, scan: bool) -> Iterator[None]:
    plain_replace, plain_parse = _chain._replace, _codec.parse_json
    try:
        if frozen:
            vars(_chain)["_replace"] = _assemble_replace
        if scan:
            vars(_jws)["parse_json"] = _scan_parse
            vars(_sdjwt)["parse_json"] = _scan_parse
        yield
    finally:
        vars(_chain)["_replace"] = plain_replace
        vars(_jws)["parse_json"] = plain_parse
        vars(_sdjwt)["parse_json"] = plain_parse


def _time(fn: Callable[[], Any], seconds: float) -> float:
    n, start = 0, time.process_time()
    while True:
        fn()
        n += 1
        elapsed = time.process_time() - start
        if elapsed >= seconds:
            return elapsed / n


MODES = {"plain (src)": (False, False), "+ assemble": (True, False), "+ scan_once": (False, True)}


def main() -> None:
    """Print each shortcut's ratio against the plain code, warm and cold."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds")
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = []
    for name, op in (("draft (6)", vxp.demo_operation("succeeded")), ("1,000", long_chain(1000))):
        verifier = vxp.Verifier(op.metadata, op.jwks)
        fresh = itertools.cycle(
            [(copy.deepcopy(op.metadata), copy.deepcopy(op.jwks)) for _ in range(32)]
        )

        def warm(op: Any = op, verifier: Any = verifier) -> None:
            assert verifier.verify(op.package, now=op.now).valid

        def cold(op: Any = op, fresh: Any = fresh) -> None:
            metadata, jwks = next(fresh)
            assert vxp.verify(op.package, metadata, jwks, now=op.now).valid

        for flags in MODES.values():  # each path once, and the same verdict
            with _shortcuts(*flags):
                assert dataclasses.asdict(verifier.verify(op.package, now=op.now)) == (
                    dataclasses.asdict(vxp.verify(op.package, op.metadata, op.jwks, now=op.now))
                )
        cases.append((name, warm, cold))
    issuer = vxp.demo_key("bench issuer")
    claims = {f"c{i:02d}": vxp.Sd({"value": i, "note": "x" * 8}) for i in range(50)}
    token = vxp.present_sd_jwt(vxp.issue_sd_jwt({"iss": "i", **claims}, issuer, typ="t"))
    keys, jwk = vxp.IssuerKeys([issuer]), issuer.as_dict(private=False)

    def sd_warm() -> None:
        vxp.verify_sd_jwt(token, keys, typ="t", now=0)

    def sd_cold() -> None:
        vxp.verify_sd_jwt(token, vxp.IssuerKeys([dict(jwk)]), typ="t", now=0)

    cases.append(("sd-jwt 50", sd_warm, sd_cold))
    for name, warm_fn, cold_fn in cases:
        times: dict[tuple[str, str], list[float]] = {
            (m, w): [] for m in MODES for w in ("warm", "cold")
        }
        for _ in range(args.rounds):
            for mode, on in MODES.items():
                with _shortcuts(*on):
                    times[(mode, "warm")].append(_time(warm_fn, args.seconds))
                    times[(mode, "cold")].append(_time(cold_fn, args.seconds))
        for which in ("warm", "cold"):
            base = times[("plain (src)", which)]
            best, median = min(base), sorted(base)[len(base) // 2]
            for mode in MODES:
                ts = times[(mode, which)]
                b, m = min(ts), sorted(ts)[len(ts) // 2]
                print(
                    f"{name:9} {which}: {mode:12} best {b * 1e3:8.3f} ms "
                    f"({best / b:4.2f}x faster), median {m * 1e3:8.3f} ms ({median / m:4.2f}x)"
                )
    print(json.dumps({"keep_if_faster_than": 1.2}))


if __name__ == "__main__":
    main()
