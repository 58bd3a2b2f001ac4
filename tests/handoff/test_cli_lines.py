"""Record lines from a file and from standard input are split and bounded alike (issue 25).

A line ends at LF; a CR right before the LF belongs to the line end (CRLF files read as LF
files), and any other CR is part of the line: JSON whitespace outside a string, so a lone
CR never separates two records. The record size limit counts the UTF-8 bytes of a line
without its line end, on every path. A line over the limit, or one that is not UTF-8, is
one rejected record reported with its line number, like any other bad line; the lines
after it are read. Every test runs ``handoff`` as a real process, each input both as a
file and on standard input.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import handoff
from handoff.records import MAX_RECORD_BYTES

from .ext_fixtures import ROLES_JSON, TERMS, raised


def _record(key: str, size: int | None = None, filler: str = "a") -> bytes:
    """A valid record line (JCS, so its text is its canonical form) of ``size`` bytes."""
    line = handoff.digests.canonical(raised(f"n-{key}", key, terms={**TERMS, "detail": ""}))
    if size is None:
        return line
    room = size - len(line)
    wide = len(filler.encode("utf-8"))
    text = filler * (room // wide) + "a" * (room % wide)
    out = handoff.digests.canonical(raised(f"n-{key}", key, terms={**TERMS, "detail": text}))
    assert len(out) == size
    return out


def _cli(tmp_path: Path, *argv: str, stdin: Any = b"", **more: Any) -> tuple[int, str, str]:
    """Run ``handoff argv --config …`` (``stdin``: its bytes, or a file to read from):
    its exit status, standard output and error."""
    config = tmp_path / "config.json"
    if not config.exists():
        config.write_text(json.dumps({"roles": ROLES_JSON}), encoding="utf-8")
    given = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin}
    done = subprocess.run(
        [sys.executable, "-m", "handoff", *argv, "--config", str(config)],
        **given,
        capture_output=True,
        timeout=120,
        check=False,
        **more,
    )
    return done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")


def _validate(tmp_path: Path, data: bytes) -> dict[str, Any]:
    """``handoff validate`` of ``data`` as a file and on standard input: both must say the
    same, line for line; the one answer is returned (status and output, prefix removed)."""
    path = tmp_path / "records.jsonl"
    path.write_bytes(data)
    answers = []
    for name, stdin in ((str(path), b""), ("-", data)):
        status, out, err = _cli(tmp_path, "validate", name, stdin=stdin)
        lines = [line.removeprefix(f"{name}:") for line in out.splitlines()]
        answers.append({"status": status, "lines": lines, "stderr": err})
    assert answers[0] == answers[1], answers
    return answers[0]


def _rejected(tmp_path: Path, data: bytes, *expected: str) -> dict[str, Any]:
    """Validate ``data`` (:func:`_validate`): exit status 1 and, for each reported line,
    ``<line>: <verdict and code>``, then the summary, as ``expected``; the answer."""
    answer = _validate(tmp_path, data)
    found = []
    for line in answer["lines"]:
        head, _, rest = line.partition(": ")
        found.append(f"{head}: {rest.split(':')[0]}" if head.isdigit() else line)
    assert (answer["status"], found) == (1, list(expected)), answer
    return answer


def test_the_limit_counts_utf8_bytes_on_every_path(tmp_path: Path) -> None:
    """Exactly the limit in UTF-8 bytes is read, one byte more is refused, whatever the
    characters (fewer than the limit, when they are wide)."""
    data = b"".join(
        line + b"\n"
        for line in (
            _record("k1", MAX_RECORD_BYTES),
            _record("k2", MAX_RECORD_BYTES, "é"),
            _record("k3", MAX_RECORD_BYTES + 1, "é"),
            _record("k4", MAX_RECORD_BYTES + 1, "\U0001f600"),
            _record("k5"),
        )
    )
    answer = _rejected(
        tmp_path,
        data,
        "3: rejected parse/too_large",
        "4: rejected parse/too_large",
        "3 accepted, 0 ignored, 2 rejected",
    )
    assert f"longer than {MAX_RECORD_BYTES} bytes" in answer["lines"][0]


def test_line_ends_split_records_alike(tmp_path: Path) -> None:
    """CR CR LF: one CR of whitespace in the line; lone CR: no line end at all."""
    data = (
        _record("k1") + b"\r\r\n"
        + _record("k2") + b"\r\n"
        + _record("k3") + b"\r" + _record("k4") + b"\n"  # two records on one line
        + _record("k5", MAX_RECORD_BYTES) + b"\r\n"  # the CR of CRLF is not counted
        + _record("k6", MAX_RECORD_BYTES) + b"\r\r\n"  # one CR is in the line: over
        + _record("k7", MAX_RECORD_BYTES - 1) + b"\r\r\n"  # the same, within the limit
        + _record("k8") + b"\r"  # the last line: a CR without LF is whitespace
    )  # fmt: skip
    _rejected(
        tmp_path,
        data,
        "3: rejected parse/json_syntax",
        "5: rejected parse/too_large",
        "5 accepted, 0 ignored, 2 rejected",
    )


def test_a_bad_line_is_one_rejected_record_and_the_rest_is_read(tmp_path: Path) -> None:
    """An over-long line (twice the limit, no end in sight for a while) and a line that is
    not UTF-8 are each one rejection with their line numbers, as a syntax error is."""
    data = (
        _record("k1") + b"\n"
        + b"x" * (2 * MAX_RECORD_BYTES) + b"\n"
        + b'{"ph": "0.3", "text": "\xff"}\n'
        + b"{not json\n"
        + _record("k2") + b"\n"
    )  # fmt: skip
    answer = _rejected(
        tmp_path,
        data,
        "2: rejected parse/too_large",
        "3: rejected parse/json_syntax",
        "4: rejected parse/json_syntax",
        "2 accepted, 0 ignored, 3 rejected",
    )
    assert "not valid UTF-8" in answer["lines"][1]
    assert answer["stderr"] == ""


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_add_and_state_go_on_after_a_bad_line(tmp_path: Path, via: str) -> None:
    """``add`` appends every good line around an over-long one and says which it refused;
    ``state`` reads every good line and reports the bad one."""
    data = _record("k1") + b"\n" + b"y" * (MAX_RECORD_BYTES + 1) + b"\r\n" + _record("k2") + b"\n"
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    source, stdin = (str(path), b"") if via == "file" else ("-", data)
    db = tmp_path / "s.sqlite"
    status, out, err = _cli(tmp_path, "add", source, "--db", str(db), stdin=stdin)
    assert status == 1, (out, err)
    assert out.splitlines() == [
        f"{source}:1: accepted",
        f"{source}:2: rejected parse/too_large: the record is longer than {MAX_RECORD_BYTES} bytes",
        f"{source}:3: accepted",
    ]
    status, out, err = _cli(tmp_path, "state", "--db", str(db))
    assert status == 0, (out, err)
    assert "2 items" in out
    status, out, err = _cli(tmp_path, "state", source, stdin=stdin)
    assert status == 1
    assert f"{source}:2: rejected parse/too_large" in err
    assert "2 items" in out


def test_an_endless_line_on_standard_input_ends_the_run_at_the_input_bound(
    tmp_path: Path,
) -> None:
    """A line is skipped past the record limit only up to the bound of any input (64 MiB):
    a stream that never ends its line is one usage error, never an endless read."""
    code = (
        "import sys\n"
        "sys.stdout.buffer.write(sys.argv[1].encode() + b'\\n')\n"
        "while True:\n"
        "    sys.stdout.buffer.write(b'z' * 65536)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", code, _record("k1").decode()],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        status, _, err = _cli(tmp_path, "validate", "-", stdin=writer.stdout)
    finally:
        writer.kill()
        writer.wait()
        assert writer.stdout is not None
        writer.stdout.close()
    assert status == 2, err
    assert err.splitlines() == [
        "error: input_too_large: line 2 of standard input holds more than 64 MiB, the most a "
        "command reads"
    ]


def test_a_byte_order_mark_is_refused_on_standard_input_as_in_a_file(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + _record("k1") + b"\n"
    path = tmp_path / "records.jsonl"
    path.write_bytes(data)
    for name, stdin in ((f"records {path}", b""), ("standard input", data)):
        status, out, err = _cli(
            tmp_path, "validate", str(path) if stdin == b"" else "-", stdin=stdin
        )
        assert (status, out) == (1, ""), err
        assert err == (
            f"error: parse/json_syntax: {name} starts with a byte order mark (U+FEFF); save it "
            "as UTF-8 without one\n"
        )


def test_only_json_whitespace_makes_a_blank_line(tmp_path: Path) -> None:
    """Review adv #7: a line of spaces, tabs and CRs is skipped; a line of anything else
    (a no-break space, a form feed, a vertical tab) is a rejected record, reported."""
    data = (
        _record("k1") + b"\n"
        + b" \t \r\n"
        + "\u00a0".encode() + b"\n"
        + b"\x0c\n"
        + b"\x0b\n"
        + _record("k2") + b"\n"
    )  # fmt: skip
    _rejected(
        tmp_path,
        data,
        "3: rejected parse/json_syntax",
        "4: rejected parse/json_syntax",
        "5: rejected parse/json_syntax",
        "2 accepted, 0 ignored, 3 rejected",
    )


def test_closed_standard_input_is_one_coded_error(tmp_path: Path) -> None:
    """Review adv #8: ``handoff validate - <&-`` said ``internal`` (exit 70)."""
    closed = _cli(
        tmp_path, "validate", "-", stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0)
    )
    assert closed == (1, "", "error: io: standard input is closed\n")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "verdict"),
    [
        (b"a" * (64 << 20) + b"\n", "rejected"),
        (b"a" * ((64 << 20) - 1) + b"\r\n", "rejected"),
        (b"a" * ((64 << 20) + 1) + b"\n", "stopped"),
    ],
    ids=["64MiB-LF", "64MiB-CRLF", "64MiB+1"],
)
def test_the_input_bound_counts_a_line_without_its_line_end(
    tmp_path: Path, line: bytes, verdict: str
) -> None:
    """Review adv #5: a line of exactly 64 MiB is one rejected record; one byte more stops."""
    status, out, err = _cli(tmp_path, "validate", "-", stdin=line + _record("k1") + b"\n")
    if verdict == "rejected":
        assert (status, err) == (1, ""), err
        assert out.splitlines()[-1] == "1 accepted, 0 ignored, 1 rejected"
        assert out.startswith("-:1: rejected parse/too_large")
    else:
        assert status == 2
        assert err.startswith("error: input_too_large: line 1 of standard input"), err
