"""This library as a harness adapter: ``python -m ppcheck.adapter``.

It speaks the harness protocol of docs/conformance.md exactly as a port's adapter must:
one JSON request per line on standard input, one JSON response per line on standard output,
in order, flushed after each line. A suite it does not know is answered ``unsupported``.
It exits 0 at the end of its input and non-zero only for its own faults (a request line that
is not a JSON object with ``suite``, ``id`` and ``input``, or whose input is not of its
suite's shape).
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from ._registry import run
from ._runner import RunnerError

__all__ = ["main", "serve"]


def serve(stdin: IO[str], stdout: IO[str]) -> int:
    """Answer every request read from ``stdin`` on ``stdout``; return the exit status."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            request: Any = json.loads(line)
            suite, case_id, input_ = request["suite"], request["id"], request["input"]
        except (ValueError, KeyError, TypeError) as exc:
            print(f"ppcheck.adapter: malformed request line: {exc}", file=sys.stderr)
            return 2
        if not isinstance(input_, dict):
            print("ppcheck.adapter: a request's input must be an object", file=sys.stderr)
            return 2
        try:
            result = run(str(suite), input_)
        except RunnerError as exc:
            print(f"ppcheck.adapter: request {case_id!r}: {exc}", file=sys.stderr)
            return 2
        answer = {"id": case_id, **result.as_json()}
        stdout.write(json.dumps(answer, ensure_ascii=True, separators=(",", ":")) + "\n")
        stdout.flush()
    return 0


def main() -> int:
    """Serve standard input to standard output."""
    return serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
