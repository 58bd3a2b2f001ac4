"""ppcheck.run's input check, as ratios: what holding every input to its schema costs.

Over every shipped vector: the input check alone (``_input_problem``: the suite's compiled
input schema) against ``json.loads`` of the same input's text (the floor any runner pays to
read a vector), and a whole ``ppcheck.run`` with the check against the handler alone. Cold
is the first pass in this process (each schema compiled on first use, as a fresh adapter
process sees it); warm is the median of later passes.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from typing import Any

import ppcheck
from ppcheck import _registry


def _cases() -> list[tuple[str, dict[str, Any]]]:
    return [
        (suite.suite, case["input"])
        for suite in ppcheck.load_suites()
        for case in suite.tests
        if isinstance(case.get("input"), dict)
    ]


def _pass(cases: list[tuple[str, dict[str, Any]]], check: bool) -> float:
    start = time.perf_counter()
    for suite, input_ in cases:
        if check:
            assert _registry._input_problem(suite, input_) is None
        else:
            fn = _registry.handlers(suite.partition(".")[0])[suite]
            with contextlib.suppress(Exception):  # a refusal is part of the work measured
                fn(input_)
    return time.perf_counter() - start


def _loads(texts: list[str]) -> float:
    start = time.perf_counter()
    for text in texts:
        json.loads(text)
    return time.perf_counter() - start


def main() -> None:
    """Print the cold and warm ratios."""
    cases = _cases()
    texts = [json.dumps(i) for _, i in cases]
    _registry.handlers()  # import every handler module first: not part of the check
    cold_check = _pass(cases, check=True)
    warm_check = statistics.median(_pass(cases, check=True) for _ in range(5))
    floor = statistics.median(_loads(texts) for _ in range(5))
    handlers = statistics.median(_pass(cases, check=False) for _ in range(3))
    n = len(cases)
    print(f"{n} vector inputs")
    print(f"input check cold: {cold_check / n * 1e6:8.1f} us/input")
    print(f"input check warm: {warm_check / n * 1e6:8.1f} us/input")
    print(f"json.loads floor: {floor / n * 1e6:8.1f} us/input")
    print(f"handlers alone:   {handlers / n * 1e6:8.1f} us/input")
    print(f"warm check / json.loads:  {warm_check / floor:6.1f}x")
    print(f"warm check / handler run: {warm_check / handlers:6.3f}x (added to each run)")


if __name__ == "__main__":
    main()
