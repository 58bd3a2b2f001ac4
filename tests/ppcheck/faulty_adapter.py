"""A deliberately wrong adapter: this library, with one fault injected at one case.

python faulty_adapter.py flip  CASE_ID   flip the first boolean of that case's output
                                         (an error becomes an empty output)
python faulty_adapter.py drop  CASE_ID   drop the last character of the first string
                                         of that case's output
python faulty_adapter.py crash CASE_ID   exit with status 3 instead of answering
python faulty_adapter.py hang  CASE_ID   never answer that case
python faulty_adapter.py noise CASE_ID   print a log line on stdout before answering
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import ppcheck


def _flip(value: Any) -> bool:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, bool):
                value[key] = not item
                return True
            if _flip(item):
                return True
    if isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, bool):
                value[index] = not item
                return True
            if _flip(item):
                return True
    return False


def _drop(value: Any) -> bool:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and item:
                value[key] = item[:-1]
                return True
            if _drop(item):
                return True
    if isinstance(value, list):
        for item in value:
            if _drop(item):
                return True
    return False


def main() -> int:
    mode, target = sys.argv[1], sys.argv[2]
    for line in sys.stdin:
        request = json.loads(line)
        answer = {"id": request["id"], **ppcheck.run(request["suite"], request["input"]).as_json()}
        if request["id"] == target:
            if mode == "crash":
                print("simulated crash", file=sys.stderr)
                return 3
            if mode == "hang":
                time.sleep(60)
            if mode == "noise":
                print("debug: about to answer", flush=True)
            if mode == "flip":
                if "output" in answer:
                    if not _flip(answer["output"]):
                        answer = {"id": request["id"], "error": {"code": "flipped"}}
                else:
                    answer = {"id": request["id"], "output": {}}
            if mode == "drop":
                assert _drop(answer.get("output")), "the target case has no string output"
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
