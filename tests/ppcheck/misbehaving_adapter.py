"""An adapter that answers the synthetic suite of test_ppcheck_harness_faults.py.

It echoes ``{"id": id, "output": {"v": input["v"]}}`` for every request, except that at
the request whose id is ``b`` it misbehaves as MODE says (argv[1]); see MODES below. It
imports nothing from this repository, so it starts fast and depends on nothing but Python.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

OUT = sys.stdout.buffer


def write(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def answer(request: dict[str, object], **extra: object) -> None:
    body = {"id": request["id"], **extra}
    write(json.dumps(body).encode() + b"\n")


def main() -> int:
    mode = sys.argv[1]
    if mode == "exit-at-once":
        return 0
    if mode == "never-read":
        time.sleep(120)
        return 0
    if mode == "spawn-and-hang":
        # A wrapper that starts a child holding our stdout and never answers.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(sys.argv[2], "w", encoding="ascii") as pidfile:
            pidfile.write(str(child.pid))
        child.wait()
        return 0
    if mode == "hang-at-b":
        with open(sys.argv[2], "w", encoding="ascii") as pidfile:
            pidfile.write(str(os.getpid()))
    if mode == "stderr-flood":
        sys.stderr.write("x" * (8 * 1024 * 1024) + "\n")
        sys.stderr.flush()
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        output = {"v": request["input"]["v"]}
        if request["id"] != "b" or mode in {"fail-at-end", "linger", "stderr-flood"}:
            answer(request, output=output)
            continue
        if mode == "two-answers":
            answer(request, output=output)
            answer(request, output=output)
        elif mode == "exit-after-answer":
            answer(request, output=output)
            return 0
        elif mode == "extra-member":
            answer(request, output=output, elapsed=3)
        elif mode == "duplicate-key":
            write(b'{"id": "b", "output": {"v": 999}, "output": {"v": 2}}\n')
        elif mode == "nan":
            write(b'{"id": "b", "output": {"v": NaN}}\n')
        elif mode == "int-id":
            write(b'{"id": 2, "output": {"v": 2}}\n')
        elif mode == "mixed-unsupported":
            answer(request, output=output, unsupported=True)
        elif mode == "partial-then-exit":
            write(b'{"id": "b", "output": {"v": 2}}')
            return 0
        elif mode == "not-utf8":
            write(b'{"id": "b", "output": {"v": "\xff\xfe"}}\n')
        elif mode == "deep":
            write(b'{"id": "b", "output": {"v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}\n")
        elif mode == "huge-line":  # argv[2]: the line's length, its newline included
            head, tail = b'{"id": "b", "output": {"v": "', b'"}}\n'
            write(head + b"y" * (int(sys.argv[2]) - len(head) - len(tail)) + tail)
        elif mode == "control-crash":
            sys.stderr.buffer.write(b"boom \x1b[31mred\x00\x07 \xed\xa0\x80 \xef\xbf\xbe\n")
            sys.stderr.flush()
            return 5
        elif mode == "crash-saying":  # argv[2]: what it writes on stderr before it ends
            sys.stderr.write(sys.argv[2])
            sys.stderr.flush()
            return 1
        elif mode == "node-crash":
            # Node.js prints the error line before its stack frames.
            frames = "".join(f"    at frame{n} (adapter.js:{n}:1)\n" for n in range(40))
            sys.stderr.write(f"adapter.js:7\n  throw err;\n  ^\n\nError: boom at b\n{frames}")
            sys.stderr.write("\nNode.js v20.0.0\n")
            sys.stderr.flush()
            return 1
        elif mode == "hang-at-b":
            with open(sys.argv[2] + ".hanging", "w", encoding="ascii") as marker:
                marker.write("b")  # the test waits for this, not for a guessed delay
            time.sleep(120)
        elif mode == "close-stdout":
            os.close(1)
            OUT.close()
            time.sleep(120)
        elif mode == "blank-line":
            write(b"\n")
            answer(request, output=output)
        elif mode == "crlf":
            write(json.dumps({"id": "b", "output": output}).encode() + b"\r\n")
        else:
            raise SystemExit(f"unknown mode {mode}")
    if mode == "fail-at-end":
        return 1
    if mode == "linger":
        time.sleep(120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
