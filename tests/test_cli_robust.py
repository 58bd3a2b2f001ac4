"""The console scripts never show a traceback (issue 24 item 4; docs/cli.md).

First every example the issue names, each run through the installed console script as a
user would; then one battery of bad inputs fed to every command and subcommand as real
processes (through ``tests/cli_forkserver.py``, which spares the import time of each).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .cli_harness import CODED, Commands, Done

TOP = Path(__file__).resolve().parents[1]
PROGS = ("pxp", "handoff", "vxp", "parley", "ppcheck", "errand")
PACKAGE = {"errand": "ppbind"}  # a console script named other than its package
ROLES = b'{"roles": {"principal": "p", "counterparty": "c"}}'


def _script(prog: str) -> list[str]:
    """The installed console script (beside this Python), else ``python -m prog``."""
    found = Path(sys.executable).parent / prog
    return [str(found)] if found.is_file() else [sys.executable, "-m", prog]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PP_TRACEBACK"}
    env.update(PARLEY_HOME=str(home / "parley"), PARLEY_PRINCIPAL_HOME=str(home / "pp"))
    return env


def _cli(prog: str, *argv: str, cwd: Path, stdin: bytes = b"") -> Done:
    done = subprocess.run(
        [*_script(prog), *argv],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=120,
        env=_env(cwd),
        check=False,
    )
    return Done(
        (prog, *argv),
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
        False,
    )


def _one_error(done: Done, status: int, *needles: str) -> str:
    assert done.status == status, done
    assert done.problems() == [], done
    line = done.stderr.splitlines()[-1]
    for needle in needles:
        assert needle in line, done
    return line


def _onto_full(cmd: tuple[str, str], argv: list[str], files: Path) -> None:
    """Run ``argv`` in ``files`` with standard output on ``/dev/full``: it must end with
    status 1 and the one ``io`` line naming standard output."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            argv,
            cwd=files,
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=120,
            env=_env(files),
            check=False,
        )
    _one_error(
        Done(cmd, done.returncode, "", done.stderr.decode(), False),
        1,
        "error: io: 'standard output': No space left on device",
    )


FIXTURES = {
    "binary.dat": bytes(range(256)) * 4,
    "deep.json": b"[" * 100_000 + b"]" * 100_000,
    "empty.json": b"",
    "config.json": ROLES,
    "shape.json": b'{"id": 5, "rooms": [{"id": 5}], "tests": 1}',
}


TINY_SUITE = {
    "suite": "pxp.synthetic",
    "version": 1,
    "description": "one echo case",
    "notes": {},
    "tests": [{"id": "a", "comment": "", "flags": [], "input": {"v": 1}, "output": {"v": 1}}],
}


def _restore(folder: Path) -> None:
    """Put the bad inputs back as they were (a command may write where it is told to)."""
    tiny = folder / "tiny-vectors" / "pxp" / "synthetic.json"
    if not tiny.is_file():  # ppcheck reads one small suite, not every shipped one
        tiny.parent.mkdir(parents=True, exist_ok=True)
        tiny.write_text(json.dumps(TINY_SUITE), encoding="utf-8")
    for name, data in FIXTURES.items():
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
    adir = folder / "adir"
    if adir.is_file():
        adir.unlink()
    if adir.is_dir() and any(adir.iterdir()):
        shutil.rmtree(adir)
    adir.mkdir(exist_ok=True)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    _restore(tmp_path)
    return tmp_path


# -- the examples of the issue, each as the user met it ------------------------------------


@pytest.mark.slow
def test_handoff_validate_binary_config_is_one_coded_line(files: Path) -> None:
    done = _cli("handoff", "validate", "-", "--config", "binary.dat", cwd=files)
    _one_error(done, 1, "error: parse/json_syntax:", "binary.dat is not UTF-8")


@pytest.mark.slow
def test_parley_est_binary_file_is_one_coded_line(files: Path) -> None:
    done = _cli("parley", "est", "binary.dat", cwd=files)
    _one_error(done, 1, "error: bad_argument/bad_file:", "binary.dat is not UTF-8")


@pytest.mark.slow
def test_parley_approve_deep_json_is_one_coded_line(files: Path) -> None:
    done = _cli("parley", "approve", "deep.json", "--agent", "ed25519:x", cwd=files)
    _one_error(done, 1, "error: invalid_params/bad_consent:", "deep.json is not JSON")


@pytest.mark.slow
def test_parley_approve_missing_file_says_it_cannot_read_it(files: Path) -> None:
    done = _cli("parley", "approve", "missing.json", "--agent", "ed25519:x", cwd=files)
    line = _one_error(done, 1, "bad_file", "cannot read missing.json: No such file")
    assert "not JSON" not in line


@pytest.mark.slow
@pytest.mark.parametrize("port", ["99999", "-1", "65536", "0x50", "1e3"])
def test_pxp_serve_port_out_of_range_is_a_usage_error_and_creates_nothing(
    files: Path, port: str
) -> None:
    done = _cli("pxp", "serve", "--port", port, cwd=files)
    _one_error(done, 2, "error: usage: pxp serve: argument --port:")
    assert not (files / "pxp-rooms.sqlite").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [("pxp", "simulate", "--json"), ("ppcheck", "--list"), ("vxp", "demo"), ("pxp", "--help")],
    ids=" ".join,
)
def test_a_closed_pipe_ends_the_command_quietly(files: Path, argv: tuple[str, ...]) -> None:
    """``cmd | head -c1``: the reader is gone before the command writes (a real pipe)."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [*_script(argv[0]), *argv[1:]],
            cwd=files,
            stdin=subprocess.DEVNULL,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            env=_env(files),
            check=False,
        )
    finally:
        os.close(write)
    assert done.stderr == b"", done.stderr.decode()
    # argparse itself drops a help text it cannot write: quiet, and status 0
    assert done.returncode == (0 if "--help" in argv else 141)


@pytest.mark.slow
def test_ppcheck_vectors_folder_that_does_not_exist(files: Path) -> None:
    done = _cli("ppcheck", "--vectors", "/does/not/exist", cwd=files)
    _one_error(done, 2, "error: vectors_unreadable:", "/does/not/exist does not exist")


@pytest.mark.slow
@pytest.mark.parametrize(
    "impl",
    ["/nonexistent", f"{sys.executable} -c pass", f"{sys.executable} /nonexistent.py"],
    ids=["missing", "exits-at-once", "crashes-at-start"],
)
def test_ppcheck_an_adapter_that_cannot_work_is_one_error(files: Path, impl: str) -> None:
    started = time.monotonic()
    done = _cli("ppcheck", "--impl", impl, cwd=files)
    _one_error(done, 2)
    assert "FAIL" not in done.stdout
    assert done.stdout == ""
    assert time.monotonic() - started < 60


@pytest.mark.slow
@pytest.mark.parametrize("junit", ["nodir/x.xml", "adir", "binary.dat/x.xml"])
def test_ppcheck_refuses_a_junit_path_it_cannot_write_before_it_runs(
    files: Path, junit: str
) -> None:
    """Review i24 #13: the path was tried only after the whole run (a minute against a
    real adapter)."""
    done = _cli("ppcheck", "--vectors", "tiny-vectors", "--junit", junit, cwd=files)
    _one_error(done, 2, "error: io: cannot write the JUnit report")
    assert done.stdout == "", done  # nothing ran: no table, no total
    assert not (files / "nodir").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "export",
    [
        '{"id": 5}',
        '{"rooms": [{"id": "r1", "topic": "t"}]}',
        "[1, 2]",
        '{"id": "not-an-id!", "topic": "t", "seats": {}}',
    ],
)
def test_pxp_serve_import_of_json_that_is_no_room_creates_no_store(
    files: Path, export: str
) -> None:
    """Valid JSON, yet no room: the room store was created before the import refused."""
    (files / "export.json").write_text(export, encoding="utf-8")
    argv = ["serve", "--port", "0", "--db", "rooms.sqlite", "--import", "export.json"]
    done = _cli("pxp", *argv, cwd=files)
    _one_error(done, 1, "error: import_invalid")
    assert not list(files.glob("rooms.sqlite*"))


@pytest.mark.slow
def test_ppcheck_junit_onto_a_fifo_is_not_opened_before_the_run(files: Path) -> None:
    """Review cli #3: the check opened the FIFO for writing, which waits for a reader: a
    reader that comes after the run waited forever (and got an empty report)."""
    fifo = files / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read_later() -> None:
        time.sleep(2)  # a reader that comes once the run is under way
        with fifo.open("rb") as reader:
            got.append(reader.read())

    reader = threading.Thread(target=read_later, daemon=True)
    reader.start()
    done = _cli("ppcheck", "--vectors", "tiny-vectors", "--junit", str(fifo), cwd=files)
    reader.join(60)
    assert done.status == 0, done
    assert got, "nobody wrote the report"
    assert got[0].startswith(b"<?xml"), got


@pytest.mark.slow
def test_ppcheck_junit_through_a_dangling_symlink_writes_its_target(files: Path) -> None:
    (files / "dangling.xml").symlink_to(files / "target.xml")
    done = _cli("ppcheck", "--vectors", "tiny-vectors", "--junit", "dangling.xml", cwd=files)
    assert done.status == 0, done
    assert (files / "target.xml").read_bytes().startswith(b"<?xml")


@pytest.mark.slow
def test_reading_a_folder_names_it_in_the_io_line(files: Path) -> None:
    """``_ppcli.rules.read_input`` opens a folder (``open`` allows it) and then fails to
    read it: the read's error named no file, so the shared rule printed ``error: io: Is a
    directory``. The rule, run in a real process as every console script runs it, then a
    command that quotes the error (``ppcheck --known-failures``)."""
    script = (
        "import sys\n"
        "from _ppcli.rules import read_input, run\n"
        "sys.exit(run(lambda: len(read_input(sys.argv[1])), prog='reader'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "adir"],
        cwd=files,
        capture_output=True,
        timeout=120,
        env=_env(files),
        check=False,
    )
    reader = Done(("reader", "adir"), done.returncode, "", done.stderr.decode(), False)
    line = _one_error(reader, 1)
    assert line == "error: io: 'adir': Is a directory", reader
    known = _cli("ppcheck", "--vectors", "tiny-vectors", "--known-failures", "adir", cwd=files)
    line = _one_error(known, 2, "error: vectors_unreadable:", "Is a directory")
    assert "'adir'" in line, known


@pytest.mark.slow
def test_handoff_state_on_a_typo_creates_no_store(files: Path) -> None:
    before = sorted(p.name for p in files.iterdir())
    for argv in (("--db", "typo.sqlite"), ("--state", "sqlite:typo2.sqlite")):
        done = _cli("handoff", "state", *argv, "--config", "config.json", cwd=files)
        _one_error(done, 1, "error: io/store_missing:")
    assert sorted(p.name for p in files.iterdir()) == before


@pytest.mark.slow
@pytest.mark.parametrize("scheme", ["parley://127.0.0.1:{}", "http://127.0.0.1:{}/"])
def test_parley_serve_on_a_port_in_use_is_one_error_and_creates_no_state(
    files: Path, scheme: str
) -> None:
    """Review finding: uvicorn's exit 3 and tracebacks, and a state store left behind."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        url = scheme.format(held.getsockname()[1])
        state = files / "st.sqlite"
        done = _cli("parley", "serve", url, "--state", f"sqlite:{state}", cwd=files)
    _one_error(done, 1, "error: unavailable/listen: cannot listen on 127.0.0.1:")
    assert not list(files.glob("st.sqlite*"))


# Every command that reads a file, with the file in its slot ("{f}"; "-" reads stdin).
READERS = [
    ("parley", "est", "{f}"),
    ("parley", "lens", "{f}"),
    ("parley", "approve", "{f}", "--agent", "ed25519:x"),
    ("vxp", "merkle-root", "{f}"),
    ("pxp", "seal", "{f}"),
    ("handoff", "validate", "{f}", "--config", "config.json"),
    ("handoff", "validate", "-", "--config", "{f}"),
    ("errand", "verify", "{f}"),
    ("ppcheck", "--vectors", "tiny-vectors", "--known-failures", "{f}", "--impl", "true"),
]


def _limited_memory() -> None:  # pragma: no cover - runs in the child
    """In the child: at most 1.5 GiB of address space, so an unbounded read fails fast
    with MemoryError instead of growing until the machine's OOM killer acts."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))


def _reader(argv: tuple[str, ...], f: str, cwd: Path, stdin: int | None = None) -> Done:
    argv = tuple(a.replace("{f}", f) for a in argv)
    done = subprocess.run(
        [*_script(argv[0]), *argv[1:]],
        cwd=cwd,
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        capture_output=True,
        timeout=120,
        env=_env(cwd),
        check=False,
        preexec_fn=_limited_memory,
    )
    return Done(argv, done.returncode, done.stdout.decode(), done.stderr.decode(), False)


MAX_INPUT_BYTES = 64 * 1024 * 1024
"""The most a command reads from one input (docs/cli.md: 64 MiB)."""


@pytest.mark.slow
@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_file_that_never_ends_is_refused_at_the_documented_bound(
    files: Path, argv: tuple[str, ...]
) -> None:
    """Review i24 #5: ``/dev/zero`` ran to MemoryError (``internal``) or the OOM killer."""
    done = _reader(argv, "/dev/zero", files)
    _one_error(done, 2, "error: input_too_large: ", "/dev/zero", "64 MiB")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "bound"),
    [
        (("parley", "est", "-"), "64 MiB"),
        (("vxp", "merkle-root", "-"), "64 MiB"),
        (("handoff", "validate", "-", "--config", "config.json"), "64 MiB"),  # one line
        (("handoff", "add", "--db", "new.sqlite", "--config", "config.json"), "64 MiB"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else v,
)
def test_standard_input_that_never_ends_is_refused_at_the_bound(
    files: Path, argv: tuple[str, ...], bound: str
) -> None:
    with open("/dev/zero", "rb") as endless:
        done = _reader(argv, "", files, stdin=endless.fileno())
    _one_error(done, 2, "error: input_too_large: ", "standard input", bound)
    assert not (files / "new.sqlite").exists()


@pytest.mark.slow
def test_a_file_one_byte_over_the_bound_is_refused(files: Path) -> None:
    big = files / "big.txt"
    with big.open("wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    done = _reader(("parley", "est", "{f}"), str(big), files)
    _one_error(done, 2, "error: input_too_large: ", "big.txt")


@pytest.mark.slow
def test_ppcheck_refuses_a_suite_file_over_the_bound(files: Path) -> None:
    """Review cli #1: a vectors folder's suite files were read whole (2 GiB: MemoryError,
    ``internal``, or the OOM killer)."""
    big = files / "tiny-vectors" / "pxp" / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk used
    try:
        done = _reader(("ppcheck", "--vectors", "tiny-vectors", "--list"), "", files)
    finally:
        big.unlink()
    _one_error(done, 2, "error: input_too_large: ", "big.json", "64 MiB")


@pytest.mark.slow
def test_a_fifo_is_read_once_its_writer_comes(files: Path) -> None:
    """Review cli #7: a named pipe whose writer opened it a moment after the command was
    read as empty (status 0, the answer for no input); it is waited for, as cat does."""
    fifo = files / "fifo"
    os.mkfifo(fifo)

    def write_later() -> None:
        time.sleep(2)
        with fifo.open("wb") as writer:
            writer.write(b"hello")

    writer = threading.Thread(target=write_later, daemon=True)
    writer.start()
    through_fifo = _cli("vxp", "merkle-root", str(fifo), cwd=files)
    writer.join(60)
    (files / "hello.txt").write_bytes(b"hello")
    plain = _cli("vxp", "merkle-root", "hello.txt", cwd=files)
    assert through_fifo.status == plain.status == 0, (through_fifo, plain)
    assert through_fifo.stdout == plain.stdout


WAITS = ("partner", "fifo", "pipe")


@pytest.mark.slow
def test_ctrl_c_while_waiting_for_a_fifo_writer_is_130(files: Path) -> None:
    fifo = files / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        [*_script("vxp"), "merkle-root", str(fifo)],
        cwd=files,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(files),
    )
    try:
        wchan = Path(f"/proc/{proc.pid}/wchan")
        deadline = time.monotonic() + 60
        # the kernel's wait for a FIFO's writer: wait_for_partner (fifo_open on some kernels)
        while not any(w in (wchan.read_text() if wchan.exists() else "fifo") for w in WAITS):
            assert proc.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = Done(("vxp", "merkle-root"), proc.returncode, out.decode(), err.decode(), True)
    _one_error(done, 130, "error: interrupted: vxp stopped by Ctrl-C (SIGINT)")


def _closed_stdout() -> None:  # pragma: no cover - runs in the child
    os.close(1)


@pytest.mark.slow
@pytest.mark.parametrize("prog", PROGS)
def test_a_closed_standard_output_is_no_internal_error(files: Path, prog: str) -> None:
    """Review cli #6: with descriptor 1 closed (``>&-``) Python's stdout is None, and every
    script ended ``internal`` (AttributeError on flush)."""
    done = subprocess.run(
        [*_script(prog), "--version"],
        cwd=files,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        env=_env(files),
        check=False,
        preexec_fn=_closed_stdout,
    )
    text = done.stderr.decode()
    assert done.returncode == 0, text
    assert "internal" not in text
    assert "Traceback" not in text


@pytest.mark.slow
def test_keygen_with_a_closed_standard_output_creates_no_key(files: Path) -> None:
    done = subprocess.run(
        [*_script("parley"), "keygen", "--name", "closed"],
        cwd=files,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
        env=_env(files),
        check=False,
        preexec_fn=_closed_stdout,
    )
    line = _one_error(
        Done(("parley", "keygen"), done.returncode, "", done.stderr.decode(), False),
        1,
        "error: io: 'standard output': standard output is closed",
    )
    assert "internal" not in line
    assert [p.name for p in files.rglob("closed.json")] == []


@pytest.mark.slow
@pytest.mark.parametrize("principal", [False, True], ids=["agent", "principal"])
def test_keygen_onto_a_full_standard_output_keeps_no_key(files: Path, principal: bool) -> None:
    """``parley keygen > /dev/full``: nobody saw the public key, so the key just created is
    removed and the same command can run again (docs/cli.md)."""
    argv = [*_script("parley"), "keygen", "--name", "full", *(["--principal"] if principal else [])]
    for _ in range(2):  # the second run finds no key left in the way
        _onto_full(("parley", "keygen"), argv, files)
        assert [p.name for p in files.rglob("full.json")] == []
    kept = _cli("parley", "keygen", "--name", "full", *(["--principal"] * principal), cwd=files)
    assert kept.status == 0, kept
    assert len([p.name for p in files.rglob("full.json")]) == 1


@pytest.mark.slow
@pytest.mark.parametrize("out", ["made/demo", "adir"], ids=["new-folder", "existing-folder"])
def test_vxp_demo_onto_a_full_standard_output_writes_no_file(files: Path, out: str) -> None:
    """``vxp demo --out DIR > /dev/full`` failed (the report could not be written) yet left
    its four files: a command that fails leaves nothing made (docs/cli.md). A folder it
    created for them goes too; one that was there stays, as it was."""
    _onto_full(("vxp", "demo"), [*_script("vxp"), "demo", "--out", out], files)
    assert not (files / "made").exists()
    assert (files / "adir").is_dir()
    assert list((files / "adir").iterdir()) == []
    wrote = _cli("vxp", "demo", "--out", out, cwd=files)
    assert wrote.status == 0, wrote
    assert sorted(p.name for p in (files / out).iterdir()) == [
        "jwks.json",
        "live-checkpoint.json",
        "metadata.json",
        "package.json",
    ]


def _wait_reading_stdin(proc: subprocess.Popen[bytes]) -> None:
    wchan = Path(f"/proc/{proc.pid}/wchan")
    if not wchan.exists():
        pytest.skip("needs Linux /proc/PID/wchan to see the command wait on its input")
    deadline = time.monotonic() + 60
    while "pipe" not in wchan.read_text():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ("handoff", "validate", "-", "--config", "config.json"),
        ("parley", "est", "-"),
        ("handoff", "add", "--db", "new.sqlite", "--config", "config.json"),
    ],
    ids=" ".join,
)
def test_ctrl_c_exits_130_at_once_without_a_traceback(files: Path, argv: tuple[str, ...]) -> None:
    proc = subprocess.Popen(
        [*_script(argv[0]), *argv[1:]],
        cwd=files,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(files),
    )
    try:
        _wait_reading_stdin(proc)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = Done(argv, proc.returncode, out.decode(), err.decode(), True)
    _one_error(done, 130, "error: interrupted:")
    assert not (files / "new.sqlite").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [("parley", "est", "-"), ("handoff", "add", "--db", "new.sqlite", "--config", "config.json")],
    ids=" ".join,
)
def test_sigterm_exits_143_with_one_line(files: Path, argv: tuple[str, ...]) -> None:
    """Review i24 #9: SIGTERM (a supervisor, ``kill``) ended a command with no line."""
    proc = subprocess.Popen(
        [*_script(argv[0]), *argv[1:]],
        cwd=files,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(files),
    )
    try:
        _wait_reading_stdin(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    done = Done(argv, proc.returncode, out.decode(), err.decode(), False)
    _one_error(done, 143, f"error: terminated: {argv[0]} stopped by SIGTERM")
    assert not (files / "new.sqlite").exists()


def _loading_a_library(pid: int) -> bool:
    """The process has mapped a compiled module of an installed package: it is inside the
    command line's imports, past the interpreter's start-up and past ``_ppcli`` itself."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
    return any("site-packages" in line and ".so" in line for line in maps.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("prog", PROGS)
def test_ctrl_c_while_the_command_loads_is_no_traceback(files: Path, prog: str) -> None:
    """SIGINT while the console script imports its command line (most of a second): the
    import runs under the shared rules (``_ppcli.launch``), so it is one line and 130.
    (Before that, Python's own start-up and the import of the tiny ``_ppcli`` are a few
    milliseconds that no code of ours can guard.)"""
    found = Path(sys.executable).parent / prog
    if not found.is_file():
        pytest.skip(f"the console script {prog} is not installed beside this Python")
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs Linux /proc/PID/maps to see the command load its libraries")
    proc = subprocess.Popen(
        [str(found), "--help"],
        cwd=files,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(files),
    )
    deadline = time.monotonic() + 60
    while not _loading_a_library(proc.pid) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    text = err.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    if proc.returncode == 0:
        pytest.skip("the command had loaded and answered --help before the signal came")
    assert proc.returncode == 130, (proc.returncode, text)
    assert text.splitlines() == [f"error: interrupted: {prog} stopped by Ctrl-C (SIGINT)"]


# -- one battery for every command and subcommand ------------------------------------------


def _leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaves(sub, (*path, name))


def _takes_value(action: argparse.Action) -> bool:
    return (
        action.nargs != 0
        and not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)
        and action.dest != "version"
    )


def _fill(action: argparse.Action, value: str) -> list[str]:
    if action.choices is not None:
        value = str(next(iter(action.choices)))
    return [value] if not action.option_strings else [action.option_strings[-1], value]


def _base(parser: argparse.ArgumentParser, value: str) -> list[str]:
    """Every required slot (positionals, required options) given ``value``."""
    args: list[str] = []
    for action in parser._actions:
        if _takes_value(action) and (not action.option_strings or action.required):
            args += _fill(action, value)
    for group in parser._mutually_exclusive_groups:
        if group.required:
            first = group._group_actions[0]
            args += _fill(first, value) if _takes_value(first) else [first.option_strings[-1]]
    return args


BAD = {
    "missing": "missing.json",
    "directory": "adir",
    "binary": "binary.dat",
    "empty": "empty.json",
    "deep-json": "deep.json",
    "wrong-shape": "shape.json",
    "huge-number": "9" * 400,
    "negative": "-99999",
    "endless": "/dev/zero",
}


# Where any text is a valid value (a host name, an id), a bad file is no bad input: the
# battery feeds the optional slots that name a file, a store or a number.
_FILEISH = (
    "file",
    "db",
    "config",
    "cafile",
    "cert",
    "key",
    "proposal",
    "out",
    "dir",
    "state",
    "vectors",
    "junit",
    "known",
    "import",
    "seed",
)

# Arguments without which a command would do what it is for: serve on a fixed port.
_SAFE = {"pxp serve": ["--port", "0"], "ppcheck": ["--vectors", "tiny-vectors"]}


def _slot(action: argparse.Action) -> bool:
    typed = action.type is not None and action.type is not str
    return typed or any(word in action.dest for word in _FILEISH)


# Ports and schemes inside a URL, refused before anything is created; ppcheck vectors export.
_URLS = [
    ("parley", ["serve", "parley://127.0.0.1:99999"]),
    ("parley", ["serve", "parley://127.0.0.1:-1"]),
    ("parley", ["serve", "http://127.0.0.1:99999/"]),
    ("parley", ["serve", "parleys://127.0.0.1:0"]),
    ("parley", ["serve", "https://127.0.0.1:0/"]),
    ("parley", ["call", "parley://127.0.0.1:99999", "hello"]),
    ("parley", ["call", "http://127.0.0.1:70000/", "hello"]),
    ("parley", ["call", "parley://[::1", "hello"]),
    # ppcheck's second form, outside its parser
    ("ppcheck", ["vectors", "export"]),
    ("ppcheck", ["vectors", "export", "binary.dat"]),
    ("ppcheck", ["vectors", "export", "9" * 400]),
    ("ppcheck", ["vectors", "export", "a", "b"]),
]


def _battery() -> Iterator[tuple[str, str, list[str]]]:
    seen: set[tuple[str, ...]] = set()
    urls = ((prog, f"{prog} {' '.join(argv)}", argv) for prog, argv in _URLS)
    for prog, name, argv in itertools.chain(_all_runs(), urls):
        if (prog, *argv) not in seen:
            seen.add((prog, *argv))
            yield name, prog, argv


def _all_runs() -> Iterator[tuple[str, str, list[str]]]:
    for prog in PROGS:
        for path, parser in _leaves(
            importlib.import_module(f"{PACKAGE.get(prog, prog)}._cli").build_parser()
        ):
            command = f"{prog} {' '.join(path)}".strip()
            safe = _SAFE.get(command, [])
            for kind, value in BAD.items():
                yield prog, f"{command} [{kind}]", [*path, *safe, *_base(parser, value)]
            for action in parser._actions:
                if not (_takes_value(action) and action.option_strings and _slot(action)):
                    continue
                option = action.option_strings[-1]
                kinds = (
                    "binary",
                    "huge-number",
                    "deep-json",
                    "directory",
                    "endless",
                    "wrong-shape",
                )
                values = {k: BAD[k] for k in kinds}
                if action.dest == "port":
                    values = {"99999": "99999", "-1": "-1", "huge": BAD["huge-number"]}
                for kind, value in values.items():
                    yield (
                        prog,
                        f"{command} {option} [{kind}]",
                        [*path, *safe, *_base(parser, value), *_fill(action, value)],
                    )
            yield prog, f"{command} [closed stdout]", ["--close-stdout", *path, *safe]
            yield prog, f"{command} [SIGINT]", ["--interrupt", *path, *safe, *_base(parser, "-")]


@pytest.mark.slow
def test_every_command_survives_the_battery_of_bad_inputs(files: Path) -> None:
    """Missing file, directory, binary, empty, deep JSON, huge and negative numbers, a file
    that never ends (``/dev/zero``), ports out of range, a closed standard output and
    SIGINT, to every command and subcommand: no traceback, one coded line on stderr, a
    documented exit status."""
    if not hasattr(os, "fork"):
        pytest.skip("the battery's fork server needs os.fork")
    commands = Commands(files)
    failures: list[str] = []
    count = 0
    try:
        for name, prog, argv in _battery():
            close_stdout = argv[:1] == ["--close-stdout"]
            interrupt = argv[:1] == ["--interrupt"]
            if close_stdout or interrupt:
                argv = argv[1:]
            if prog == "ppcheck" and not close_stdout and argv[:1] != ["vectors"]:
                argv = [*argv, "--list"]  # never the whole run: its own tests do that
            before = set(files.iterdir())
            done = commands.run(
                prog,
                *argv,
                stdin=None if interrupt else b"",
                close_stdout=close_stdout,
                interrupt=interrupt,
                timeout=30.0,
            )
            count += 1
            problems = done.problems()
            if done.interrupted and done.status != 130:
                problems.append("SIGINT did not end it with 130")
            made = set(files.iterdir()) - before
            if made and done.status in (1, 2):
                problems.append(f"failed, yet created {sorted(p.name for p in made)}")
            for path in made:  # the next run starts from the same files
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            _restore(files)
            if problems:
                failures.append(f"{name}: {'; '.join(problems)}\n  {done}")
    finally:
        commands.close()
    assert count > 300
    assert not failures, f"{len(failures)} of {count} runs broke a rule:\n" + "\n".join(failures)


def test_the_coded_line_pattern() -> None:
    assert CODED.match("error: usage: pxp serve: argument --port: nope")
    assert CODED.match("error: invalid_params/bad_file: cannot read x")
    assert not CODED.match("Traceback (most recent call last):")
    assert not CODED.match("error: Usage: x")
