"""What a port's CI relies on: required suites, named stderr logs, a prompt Ctrl-C, clear
errors for a missing adapter or vectors folder, the exported vectors, and ppcheck.pyz run on
a Python with nothing installed (against this library's adapter and the Node.js example).

Private imports: ``ppcheck._cli.main`` drives the command line in process, ``main(argv)``;
the command's public contract is its argv, output and exit status, which these tests hold.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import pytest

import ppcheck
from ppcheck._cli import main as ppcheck_main

from ..built_once import built_once

HERE = Path(__file__).resolve().parent
TOP = HERE.parents[1]
ADAPTER = HERE / "misbehaving_adapter.py"
NODE_ADAPTER = TOP / "examples/adapters/node/adapter.js"

SYNTHETIC = {
    "suite": "pxp.synthetic",
    "version": 1,
    "description": "three echo cases",
    "notes": {},
    "tests": [
        {"id": i, "comment": "", "flags": [], "input": {"v": n}, "output": {"v": n}}
        for n, i in enumerate("abc", 1)
    ],
}


def _vectors(tmp_path: Path) -> Path:
    root = tmp_path / "vectors"
    (root / "pxp").mkdir(parents=True)
    (root / "pxp" / "synthetic.json").write_text(json.dumps(SYNTHETIC), encoding="utf-8")
    return root


def _node() -> str | None:
    node = shutil.which("node")
    if node is None:
        reason = "Node.js is not installed: the port walkthrough needs it"
        if os.environ.get("PP_REQUIRE_NODE") == "1":
            pytest.fail(f"PP_REQUIRE_NODE=1 but {reason}")
        pytest.skip(reason)
    return node


# -- required suites ---------------------------------------------------------------------


def test_a_required_suite_that_comes_back_unsupported_fails_the_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _node()
    impl = f"node {NODE_ADAPTER}"
    assert ppcheck_main(["--impl", impl, "--suite", "parley.canonical"]) == 0
    capsys.readouterr()
    assert ppcheck_main(["--impl", impl, "--suite", "parley.c*", "--require", "parley.*"]) == 1
    out = capsys.readouterr().out
    assert "REQUIRED parley.consent_check:" in out
    assert "REQUIRED parley.canonical" not in out
    assert ppcheck_main(["--impl", impl, "--suite", "parley.canonical", "--require-all"]) == 0
    capsys.readouterr()
    assert ppcheck_main(["--impl", impl, "--suite", "vxp.merkle_*", "--require-all"]) == 1
    assert "REQUIRED vxp.merkle_tree_hash: 10 case(s) came back unsupported" in (
        capsys.readouterr().out
    )


def test_require_must_name_a_selected_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert ppcheck_main(["--suite", "vxp.*", "--require", "parley.*"]) == 2
    assert "--require 'parley.*' names no selected suite" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ppcheck_main(["--require", "vxp.*", "--require-all"])


# -- the runner's own faults are one line ------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--impl", "/does/not/exist/adapter"], "the adapter '/does/not/exist/adapter' does not"),
        (["--impl", "no-such-adapter-program-xyz"], "is not found on PATH"),
        (["--impl", str(HERE / "__init__.py")], "is not executable"),
        (["--vectors", "/does/not/exist"], "vectors folder /does/not/exist does not exist"),
        (["--suite", "nothing.*"], "no suite matches --suite nothing.*"),
    ],
)
def test_runner_faults_are_one_error_line(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ppcheck_main(argv) == 2
    captured = capsys.readouterr()
    assert words in captured.err
    assert captured.err.count("\n") == 1
    assert "FAIL" not in captured.out


def test_an_empty_vectors_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ppcheck_main(["--vectors", str(tmp_path)]) == 2
    assert "holds none of the protocol folders" in capsys.readouterr().err


# -- stderr of a crashing adapter --------------------------------------------------------


def test_a_crash_names_its_stderr_log_and_keeps_the_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    impl = f"{sys.executable} {ADAPTER} node-crash"
    argv = ["--vectors", str(_vectors(tmp_path)), "--impl", impl, "--stderr-dir", str(logs)]
    junit = tmp_path / "report.xml"
    assert ppcheck_main([*argv, "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.startswith("FAIL pxp.synthetic b:")]
    assert "Error: boom at b" in line
    assert "at frame" not in line
    (log,) = logs.glob("pxp.synthetic.*.stderr")
    assert f"whole log: {log}" in line
    assert "at frame39 (adapter.js:39:1)" in log.read_text(encoding="utf-8")
    assert f"whole log: {log}" in junit.read_text(encoding="utf-8")
    assert f"adapter stderr logs: {logs}" in out


def test_quiet_adapters_leave_no_log_folder_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    # tempfile remembers the folder it chose first: forget it, so TMPDIR decides
    monkeypatch.setattr(tempfile, "tempdir", None)
    vectors = _vectors(tmp_path)
    impl = f"{sys.executable} {ADAPTER} fail-at-end"  # a fault, but nothing on stderr
    assert ppcheck_main(["--vectors", str(vectors), "--impl", impl]) == 1
    assert "adapter stderr logs:" not in capsys.readouterr().out
    assert not list(tmp_path.glob("ppcheck-stderr-*"))


# -- progress and Ctrl-C -----------------------------------------------------------------


def test_progress_lines_name_each_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert ppcheck_main(["--suite", "vxp.merkle_*", "--progress"]) == 0
    err = capsys.readouterr().err
    assert "ppcheck: 5 suites against this library" in err
    assert "] vxp.merkle_tree_hash: 10 passed, 0 failed, 0 unsupported" in err
    assert "[5/5]" in err


@pytest.mark.slow
def test_ctrl_c_stops_at_once_and_kills_the_adapter(tmp_path: Path) -> None:
    pidfile = tmp_path / "adapter.pid"
    impl = f"{sys.executable} {ADAPTER} hang-at-b {pidfile}"
    argv = ["--vectors", str(_vectors(tmp_path)), "--impl", impl, "--timeout", "100"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ppcheck", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=TOP,
    )
    hanging = tmp_path / "adapter.pid.hanging"
    deadline = time.monotonic() + 60
    while not hanging.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the adapter never reached case b"
        time.sleep(0.05)
    # the adapter is now hanging on case b
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 20  # at once: not the 100 s timeout, not 51 s as before
    assert proc.returncode == 130
    assert "error: interrupted: ppcheck stopped by Ctrl-C" in err
    assert "Traceback" not in err
    adapter_pid = int(pidfile.read_text())
    for _ in range(100):
        try:
            os.kill(adapter_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the adapter outlived the interrupted run")


# -- vectors export ----------------------------------------------------------------------


def test_vectors_export_writes_the_shipped_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "kit"
    assert ppcheck_main(["vectors", "export", str(target)]) == 0
    assert "wrote" in capsys.readouterr().out
    vectors = ppcheck.data_root()[0]
    for name in ("vxp/merkle-tree-hash.json", "third_party/jcs/ORIGIN.md"):
        source = Path(str(vectors)) / name
        if source.exists():
            assert (target / "vectors" / name).read_bytes() == source.read_bytes()
    assert (target / "schemas/conformance/response.schema.json").is_file()
    assert (target / "schemas/vectors.schema.json").is_file()
    assert len(ppcheck.load_suites(target / "vectors")) == len(ppcheck.load_suites())
    assert ppcheck_main(["vectors", "export", str(target)]) == 2
    assert "is not an empty folder" in capsys.readouterr().err


# -- ppcheck.pyz on a bare Python --------------------------------------------------------


@pytest.fixture(scope="session")
def pyz(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``ppcheck.pyz`` and a bare Python without the library, built once per run."""
    work = built_once(tmp_path_factory, "pyz", _build_pyz)
    return work / "ppcheck.pyz", work / "bare" / "bin" / "python"


def _build_pyz(work: Path) -> None:
    target = work / "ppcheck.pyz"
    subprocess.run(
        [sys.executable, str(TOP / "tools/build_pyz.py"), str(target)], check=True, cwd=work
    )
    venv.EnvBuilder(with_pip=False).create(work / "bare")


def _run_pyz(pyz: tuple[Path, Path], *argv: str) -> subprocess.CompletedProcess[str]:
    target, python = pyz
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    return subprocess.run(
        [str(python), "-I", str(target), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=target.parent,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_the_pyz_is_byte_reproducible(pyz: tuple[Path, Path], tmp_path: Path) -> None:
    again = tmp_path / "again.pyz"
    subprocess.run([sys.executable, str(TOP / "tools/build_pyz.py"), str(again)], check=True)
    assert again.read_bytes() == pyz[0].read_bytes()


@pytest.mark.slow
def test_the_pyz_runs_with_nothing_installed(pyz: tuple[Path, Path]) -> None:
    probe = subprocess.run(
        [str(pyz[1]), "-c", "import jsonschema"], capture_output=True, check=False
    )
    assert probe.returncode != 0, "the bare Python must not have jsonschema"
    done = _run_pyz(pyz, "--version")
    assert done.returncode == 0
    assert done.stdout.startswith("ppcheck 0.")
    done = _run_pyz(pyz, "--suite", "vxp.merkle_*")
    assert done.returncode == 2
    assert "give --impl COMMAND" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_pyz_drives_this_librarys_adapter(pyz: tuple[Path, Path]) -> None:
    impl = f"{sys.executable} -m ppcheck.adapter"
    done = _run_pyz(pyz, "--impl", impl, "--suite", "vxp.merkle_*", "--require-all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "137 passed, 0 failed, 0 unsupported" in done.stdout


@pytest.mark.slow
def test_the_port_walkthrough_runs_the_pyz_against_the_node_adapter(
    pyz: tuple[Path, Path], tmp_path: Path
) -> None:
    _node()
    junit = tmp_path / "report.xml"
    done = _run_pyz(
        pyz,
        "--impl",
        f"node {NODE_ADAPTER}",
        "--require",
        "parley.canonical",
        "--junit",
        str(junit),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 failed" in done.stdout
    assert junit.is_file()
    done = _run_pyz(pyz, "vectors", "export", str(tmp_path / "kit"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "kit/vectors/parley/canonical.json").read_bytes() == (
        TOP / "vectors/parley/canonical.json"
    ).read_bytes()
