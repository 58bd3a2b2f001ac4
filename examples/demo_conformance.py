"""Conformance: every vector suite run against this library, as a port would be checked.

First in process, then through the harness protocol with our own adapter executable
(``python -m ppcheck.adapter``), exactly as ``ppcheck --impl ./your-adapter`` runs a port.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import ppcheck


def main() -> None:
    """Run the suites twice and print what a port author would see."""
    suites = ppcheck.load_suites()
    cases = sum(len(s.tests) for s in suites)
    print(f"{len(suites)} suites, {cases} vectors, shipped in the wheel under ppcheck/_data/.")

    reports = ppcheck.run_suites(suites)
    print(f"in process:           {ppcheck.summary_line(reports)}")

    adapter = [sys.executable, "-m", "ppcheck.adapter"]
    reports = ppcheck.run_suites(suites, adapter, jobs=2, timeout=120)
    print(f"through the adapter:  {ppcheck.summary_line(reports)}")
    first = ppcheck.table(reports).splitlines()
    print("\n".join(first[:6]))
    print(f"  ... ({len(reports)} suites in all)")

    node = shutil.which("node")
    script = Path(__file__).resolve().parent / "adapters" / "node" / "adapter.js"
    if node is not None:
        reports = ppcheck.run_suites(suites, [node, str(script)], jobs=2, timeout=60)
        print(f"a Node.js adapter that implements one suite: {ppcheck.summary_line(reports)}")
    print("A port runs the same with: ppcheck --impl './my-adapter' --junit report.xml")


if __name__ == "__main__":
    main()
