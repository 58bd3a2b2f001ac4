#!/usr/bin/env python3
"""A tour of each protocol on its own: `make tour` runs this file.

Each protocol contributes one walk-through in ``examples/demo_<part>.py`` (a ``main()``
that prints what happens, using only the public API). This script runs every one that
exists, in the order a newcomer would read them, and says which parts are not built yet.
It exits 1 if a part failed. The library's main job, all four protocols in one errand, is
``examples/errand.py`` (`make demo`).

``python examples/tour.py demo_vxp demo_pxp`` runs only the parts named (the test suite
runs each part in its own process, so the parts run side by side on a multi-core machine).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent

PARTS = [
    ("demo_parley", "Parley: grants, proof of possession and consent"),
    ("demo_parley_lens", "Parley: Lens and token budgets"),
    ("demo_parley_runtime", "Parley: a service and an agent talking"),
    ("demo_pxp", "PXP: two proxies negotiate for their principals"),
    ("demo_pxp_mcp", "PXP over MCP: a room server"),
    ("demo_handoff", "Principal Handoff: records folded into state"),
    ("demo_handoff_extensions", "Principal Handoff: an act and a decision, settled"),
    ("demo_vxp", "VXP: SD-JWT statements and a Merkle log"),
    ("demo_vxp_proof", "VXP Proof: an operation chain and its verdict"),
    ("demo_conformance", "Conformance: the vector suites run against this library"),
]


def _banner(title: str) -> None:
    print()
    print("=" * 78)
    print(f"  {title}")
    print("=" * 78)


def main(argv: list[str] | None = None) -> int:
    """Run every available part (or only the parts named); report the ones not built yet."""
    names = sys.argv[1:] if argv is None else argv
    known = [module_name for module_name, _ in PARTS]
    unknown = [name for name in names if name not in known]
    if unknown:
        print(f"unknown tour part {unknown[0]!r}; the parts are: {', '.join(known)}")
        return 2
    print("principal-protocols tour: each of the four protocols on its own.")
    ran, failed, missing = [], [], []
    for module_name, title in PARTS:
        if names and module_name not in names:
            continue
        path = HERE / f"{module_name}.py"
        if not path.is_file():
            missing.append(title)
            continue
        _banner(title)
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            module.main()
        except Exception:
            failed.append(title)
            print(f"!! this part FAILED:\n{traceback.format_exc()}")
        else:
            ran.append(title)
    _banner("Summary")
    for title in ran:
        print(f"  ok       {title}")
    for title in failed:
        print(f"  FAILED   {title}")
    for title in missing:
        print(f"  not yet  {title}")
    print()
    print(f"{len(ran)} parts ran, {len(failed)} failed, {len(missing)} not built yet.")
    print("Next: `make demo` runs one errand across all four; `make test` runs every test.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
