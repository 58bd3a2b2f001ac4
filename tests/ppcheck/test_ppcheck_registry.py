"""The handler registry imports only the protocol of the suite it runs.

``ppcheck --impl "python -m ppcheck.adapter"`` starts one adapter process per suite; each
used to import all four protocol packages. The registry finds a suite's handler modules by
name (``vxp`` and ``vxp_proof`` for ``vxp.*``), which these tests hold true for every
suite, and a refusal is still reported as the package's error.
"""

from __future__ import annotations

import json
import subprocess
import sys

import ppcheck


def test_every_handler_lives_in_a_module_named_for_its_protocol() -> None:
    registered = ppcheck.handlers()
    assert len(registered) >= len({s.suite for s in ppcheck.load_suites()})
    for suite, fn in registered.items():
        protocol = suite.partition(".")[0]
        module = fn.__module__.rpartition(".")[2]
        assert module == protocol or module.startswith(protocol + "_"), (suite, fn.__module__)


def test_a_suite_loads_only_its_own_protocol_and_reports_its_refusals() -> None:
    probe = """
import json, sys
import ppcheck
good = ppcheck.run("vxp.merkle_tree_hash", {"leaves": []}).as_json()
bad = ppcheck.run(
    "vxp.merkle_inclusion_proof", {"leaves": ["", "00"], "index": 5, "tree_size": 2}
).as_json()
loaded = sorted(m for m in ("pxp", "handoff", "vxp", "parley") if m in sys.modules)
print(json.dumps({"good": good, "bad": bad, "loaded": loaded}))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout)
    assert report["loaded"] == ["vxp"]
    assert "output" in report["good"]
    assert report["bad"] == {"error": {"code": "inclusion_index_out_of_range"}}
