"""The harness against adapters that break the protocol in every way we could think of.

Each test runs a real adapter process (misbehaving_adapter.py, plain Python, no imports
from this repository) on a synthetic three-case suite; the adapter misbehaves at case
``b``. The runner must report exactly what went wrong, go on with the next case, never
hang, never crash with a traceback, and leave no process behind.

Private imports: ``ppcheck._cli.main`` drives the command line in process, ``main(argv)``;
the command's public contract is its argv, output and exit status, which these tests hold.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

import ppcheck
from ppcheck import RunnerError
from ppcheck._cli import main as ppcheck_main

HERE = Path(__file__).resolve().parent
ADAPTER = HERE / "misbehaving_adapter.py"

SUITE = ppcheck.SuiteFile(
    "pxp/synthetic.json",
    {
        "suite": "pxp.synthetic",
        "version": 1,
        "description": "three echo cases",
        "notes": {},
        "tests": [
            {"id": i, "comment": "", "flags": [], "input": {"v": n}, "output": {"v": n}}
            for n, i in enumerate("abc", 1)
        ],
    },
)


ANSWER_TIMEOUT = 3.0
"""A per-case timeout for tests that wait it out: each answer of the misbehaving adapter
(including its first, which waits for Python to start) must come within it, so it allows
for a loaded machine (1 s did not) while keeping the wait short."""


def _run(mode: str, *extra: str, timeout: float = 10.0) -> ppcheck.SuiteReport:
    (report,) = ppcheck.run_suites(
        [SUITE], [sys.executable, str(ADAPTER), mode, *extra], timeout=timeout
    )
    return report


def _statuses(report: ppcheck.SuiteReport) -> dict[str, str]:
    return {c.id: c.status for c in report.cases}


def _detail(report: ppcheck.SuiteReport, case_id: str) -> str:
    return next(c.detail or "" for c in report.cases if c.id == case_id)


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("extra-member", "malformed response"),
        ("duplicate-key", "duplicate member 'output'"),
        ("nan", "not JSON"),
        ("int-id", "malformed response"),
        ("mixed-unsupported", "malformed response"),
        ("not-utf8", "not UTF-8"),
        ("blank-line", "not JSON"),
        ("deep", "not JSON"),
    ],
)
def test_a_bad_answer_fails_that_case_only(mode: str, words: str) -> None:
    report = _run(mode)
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}, report
    assert words in _detail(report, "b")
    if mode != "blank-line":
        assert report.fault is None


def test_a_crlf_line_end_is_accepted() -> None:
    report = _run("crlf")
    assert _statuses(report) == {"a": "passed", "b": "passed", "c": "passed"}
    assert report.fault is None


def test_a_line_without_newline_at_exit_fails() -> None:
    report = _run("partial-then-exit")
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    assert "without a final newline" in _detail(report, "b")


ANSWER_LINE_BOUND = 16 * 1024 * 1024
"""The longest answer line the harness reads (docs/conformance.md: 16 MiB)."""


@pytest.mark.parametrize("size", [ANSWER_LINE_BOUND, ANSWER_LINE_BOUND + 1])
def test_an_answer_line_over_the_bound_is_refused(size: int) -> None:
    """The adapter answers ``b`` with a line of ``size`` bytes, its newline included: up to
    the documented bound it is read (and fails only as a wrong answer), one byte more is not."""
    report = _run("huge-line", str(size))
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    over = size > ANSWER_LINE_BOUND
    assert ("longer than 16777216 bytes" in _detail(report, "b")) == over, _detail(report, "b")


def test_two_answers_to_one_request_are_reported() -> None:
    report = _run("two-answers")
    statuses = _statuses(report)
    assert statuses["a"] == statuses["b"] == "passed"
    # The stray line is noticed between cases, or read as the answer to c: either way
    # it is named, and the run fails.
    noticed = report.fault is not None and "nobody asked for" in report.fault
    misread = statuses["c"] == "failed" and "second answer" in _detail(report, "c")
    assert noticed or misread, report
    assert ppcheck.failure_count([report]) >= 1


def test_an_exit_after_answering_is_a_fault_of_the_suite() -> None:
    report = _run("exit-after-answer")
    statuses = _statuses(report)
    assert statuses["a"] == statuses["b"] == "passed"
    blamed_c = statuses["c"] == "failed" and "exited with status 0" in _detail(report, "c")
    fault = report.fault is not None and "before its input closed" in report.fault
    assert blamed_c or (fault and statuses["c"] == "passed"), report
    assert ppcheck.failure_count([report]) >= 1


def test_a_nonzero_exit_at_the_end_is_a_fault() -> None:
    report = _run("fail-at-end")
    assert set(_statuses(report).values()) == {"passed"}
    assert report.fault is not None
    assert "exited with status 1 at the end of the suite" in report.fault
    assert ppcheck.failure_count([report]) == 1


def test_an_adapter_that_does_not_exit_is_killed() -> None:
    report = _run("linger", timeout=ANSWER_TIMEOUT)
    assert set(_statuses(report).values()) == {"passed"}
    assert report.fault is not None
    assert "did not exit within 3 s" in report.fault


def test_a_run_whose_adapter_never_answers_is_one_runner_error() -> None:
    """Issue 24: an adapter that cannot work (it ends before answering, again and again,
    and never answered anything) stops the run with one error, not a failure per case."""
    with pytest.raises(
        RunnerError,
        match="never answered: it ended before answering each of "
        "its first 3 requests; the first time: the adapter exited with status 0",
    ):
        _run("exit-at-once")


def test_an_adapter_that_closes_its_output_is_not_waited_for_forever() -> None:
    started = time.monotonic()
    report = _run("close-stdout", timeout=ANSWER_TIMEOUT)
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    assert "closed its output before answering" in _detail(report, "b")
    assert time.monotonic() - started < 60


@pytest.mark.timeout(60)
def test_an_adapter_that_never_reads_cannot_block_the_runner() -> None:
    big = {"v": 1, "pad": "z" * (2 * 1024 * 1024)}  # far more than a pipe buffer holds
    suite = ppcheck.SuiteFile(
        "pxp/big.json",
        {**SUITE.data, "tests": [{**SUITE.tests[0], "input": big, "output": {"v": 1}}]},
    )
    (report,) = ppcheck.run_suites([suite], [sys.executable, str(ADAPTER), "never-read"], timeout=1)
    assert _statuses(report) == {"a": "failed"}
    assert "no answer within 1 s" in _detail(report, "a")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_timeout_kills_the_children_of_a_wrapper(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    report = _run("spawn-and-hang", str(pidfile), timeout=ANSWER_TIMEOUT)
    assert set(_statuses(report).values()) == {"failed"}
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the adapter's child outlived the suite"


def test_a_stderr_flood_neither_blocks_nor_floods_the_report() -> None:
    report = _run("stderr-flood")
    assert set(_statuses(report).values()) == {"passed"}
    assert report.fault is None


def test_control_characters_from_an_adapter_keep_the_junit_report_valid(
    tmp_path: Path,
) -> None:
    report = _run("control-crash")
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    detail = _detail(report, "b")
    assert "exited with status 5" in detail
    assert "\\x1b[31mred\\x00\\x07" in detail
    assert "\x1b" not in ppcheck.table([report])
    xml = ppcheck.junit_xml([report]).encode("utf-8")
    root = ET.fromstring(xml)  # noqa: S314 - our own report
    failure = root.find("testsuite/testcase[@name='b']/failure")
    assert failure is not None
    assert "boom" in (failure.get("message") or "")


def test_junit_escapes_what_xml_forbids() -> None:
    nasty = "a\x00b\x1b\ud800\ufffe\uffff\x7fc"
    report = ppcheck.SuiteReport(
        "pxp.x", "pxp/x.json", (ppcheck.CaseOutcome("i", "failed", nasty),), fault=nasty
    )
    root = ET.fromstring(ppcheck.junit_xml([report]).encode("utf-8"))  # noqa: S314
    message = root.find("testsuite/testcase/failure").get("message")  # type: ignore[union-attr]
    assert message == "a\\x00b\\x1b\\ud800\\ufffe\\uffff\\x7fc"


def test_an_unstartable_adapter_is_one_readable_error() -> None:
    with pytest.raises(RunnerError, match=r"never answered.*cannot start the adapter"):
        ppcheck.run_suites([SUITE], ["/nonexistent/adapter"], timeout=5)


def test_a_library_bug_in_process_fails_the_case_not_the_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(suite: str, input_: dict[str, object]) -> ppcheck.Result:
        raise TypeError("bug \x1b in the library")

    monkeypatch.setattr("ppcheck._registry.run", broken)
    (report,) = ppcheck.run_suites([SUITE])
    assert set(_statuses(report).values()) == {"failed"}
    assert "the library raised TypeError: bug \\x1b in the library" in _detail(report, "a")


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "0"],
        ["--timeout", "-1"],
        ["--timeout", "nan"],
        ["--jobs", "0"],
        ["--impl", "'unbalanced"],
        ["--impl", ""],
    ],
)
def test_cli_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        ppcheck_main(argv)
    assert exc.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_unwritable_junit_and_bad_vectors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vectors = tmp_path / "vectors"
    (vectors / "pxp").mkdir(parents=True)
    (vectors / "pxp" / "synthetic.json").write_text('{"suite": "pxp.synthetic"}\n')
    assert ppcheck_main(["--vectors", str(vectors)]) == 2
    assert "vectors/pxp/synthetic.json: not a suite file" in capsys.readouterr().err
    (vectors / "pxp" / "synthetic.json").write_text("{not json\n")
    assert ppcheck_main(["--vectors", str(vectors)]) == 2
    assert "not a JSON file" in capsys.readouterr().err

    import json

    (vectors / "pxp" / "synthetic.json").write_text(json.dumps(SUITE.data))
    impl = f"{sys.executable} {ADAPTER} crlf"
    status = ppcheck_main(
        ["--vectors", str(vectors), "--impl", impl, "--junit", str(tmp_path), "--xfail", "x::y"]
    )
    captured = capsys.readouterr()
    assert status == 2
    assert "cannot write the JUnit report" in captured.err
    assert "known failure 'x::y' names no vector" in captured.err
    assert captured.out == ""  # checked before the run: no suite ran (review i24 #13)


def test_suites_run_in_parallel_each_with_its_own_adapter() -> None:
    suites = [
        ppcheck.SuiteFile(f"pxp/s{n}.json", {**SUITE.data, "suite": f"pxp.s{n}"}) for n in range(6)
    ]
    reports = ppcheck.run_suites(suites, [sys.executable, str(ADAPTER), "crlf"], jobs=6)
    assert [r.suite for r in reports] == [s.suite for s in suites]
    assert all(set(_statuses(r).values()) == {"passed"} for r in reports)
    assert all(r.fault is None for r in reports)


def test_no_adapter_process_is_left_behind() -> None:
    before = _children()
    _run("linger", timeout=1)
    _run("close-stdout", timeout=1)
    _run("exit-after-answer")
    assert _children() <= before


def _children() -> set[int]:
    me = os.getpid()
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.add(int(stat.parent.name))
    return found


def test_an_interrupted_run_leaves_no_adapter_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(case: object, result: object) -> str | None:
        raise RuntimeError("interrupted")

    monkeypatch.setattr("ppcheck._runner.check_result", interrupted)
    before = _children()
    with pytest.raises(RuntimeError, match="interrupted"):
        _run("linger")
    assert _children() <= before


def test_a_suite_fault_is_a_junit_testcase_error() -> None:
    report = _run("fail-at-end")
    root = ET.fromstring(ppcheck.junit_xml([report]).encode("utf-8"))  # noqa: S314
    (suite_el,) = root.findall("testsuite")
    assert suite_el.get("tests") == "4"
    assert suite_el.get("errors") == "1"
    assert suite_el.find("error") is None, "JUnit allows errors only inside a testcase"
    error = suite_el.find("testcase[@name='(adapter)']/error")
    assert error is not None
    assert "exited with status 1" in (error.get("message") or "")


@pytest.mark.parametrize(
    ("stderr", "shown"),
    [
        (
            'Traceback (most recent call last):\n  File "a.py", line 1\n    x()\nValueError: bad\n',
            "; its stderr ends: Traceback (most recent call last): | ValueError: bad",
        ),
        ("E" * 2000, "; its stderr ends: ..." + "E" * 597),
        ("", None),
    ],
    ids=["python", "long", "silent"],
)
def test_a_crash_names_the_error_lines_of_the_adapters_stderr(
    stderr: str, shown: str | None
) -> None:
    """A crash's detail ends with the adapter's error lines without their indented frames,
    at most 600 characters of them (the end kept); a silent crash adds nothing."""
    report = _run("crash-saying", stderr)
    assert _statuses(report) == {"a": "passed", "b": "failed", "c": "passed"}
    detail = _detail(report, "b")
    if shown is None:
        assert "its stderr ends" not in detail, detail
    else:
        assert detail.endswith(f"{shown} (adapter restarted)"), detail
