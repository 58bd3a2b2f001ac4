#!/usr/bin/env python3
"""Print pip constraints that pin every runtime dependency at its declared floor.

    python tools/floor_constraints.py > build/floor-constraints.txt

The floors are read from ``[project].dependencies`` in pyproject.toml, the one place they
are declared: each requirement must carry a ``>=`` lower bound, and this prints it as
``name==floor``. ``make test-floor`` installs the test extras under these constraints
(test tools at their newest compatible versions) and runs the test suite, which is how
the declared floors are proven rather than hoped for.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*$")


def floors(pyproject: Path) -> list[str]:
    """Return ``name==version`` for every runtime dependency of ``pyproject``."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    out = []
    for requirement in project["dependencies"]:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            raise SystemExit(
                f"pyproject.toml: runtime dependency {requirement!r} has no plain '>=' floor"
            )
        out.append(f"{match.group(1)}=={match.group(2)}")
    return out


def main() -> int:
    top = Path(__file__).resolve().parent.parent
    sys.stdout.write("".join(f"{line}\n" for line in floors(top / "pyproject.toml")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
