"""The wheel: built from the checkout, installed into a fresh environment outside it.

Every package imports from there, every schema loads through importlib.resources, the
vector suites ship with the runner, and each console script answers --help and --version.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from .built_once import built_once

TOP = Path(__file__).resolve().parents[1]
PACKAGES = ("pxp", "handoff", "vxp", "parley", "ppbind")
SCRIPTS = ("pxp", "vxp", "handoff", "parley", "ppcheck", "errand")


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built and installed in a fresh environment, once per run (every worker)."""
    return built_once(tmp_path_factory, "wheel", _build_and_install) / "env"


def _build_and_install(work: Path) -> None:
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(TOP)],
        check=True,
        cwd=work,
    )
    (wheel,) = dist.glob("principal_protocols-*.whl")
    env_dir = work / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        cwd=work,
    )


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    return env


@pytest.mark.slow
def test_packages_and_schemas_load_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    probe = """
import importlib, json, sys
for name in ("pxp", "handoff", "vxp", "parley", "ppcheck", "ppbind"):
    module = importlib.import_module(name)
    assert "site-packages" in module.__file__, module.__file__
    assert module.__all__, name
counts = {}
import _ppschema
assert "site-packages" in _ppschema.__file__, _ppschema.__file__
for name in ("pxp", "handoff", "vxp", "parley", "ppbind"):
    module = importlib.import_module(name + "._schemas")
    for schema in module.schema_names():
        assert isinstance(module.load_schema(schema), dict)
    counts[name] = len(module.schema_names())
import ppcheck
vectors, schemas = ppcheck.data_root()
assert "site-packages" in str(vectors), vectors
counts["suites"] = len(ppcheck.load_suites())
ppcheck.vectors_schema()
ppcheck.Adapter([sys.executable], timeout=1)  # loads the shipped response schema
for name in ("request", "response"):
    assert (schemas / "conformance" / f"{name}.schema.json").is_file(), name
print(json.dumps(counts))
"""
    done = subprocess.run(
        [str(installed / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    import json

    import ppcheck

    counts = json.loads(done.stdout)
    for name in PACKAGES:
        module = importlib.import_module(name + "._schemas")
        assert counts[name] == len(module.schema_names()), name
    assert counts["suites"] == len(ppcheck.load_suites())


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_console_scripts_answer_help_and_version(
    installed: Path, tmp_path: Path, script: str
) -> None:
    exe = installed / "bin" / script
    for flag in ("--help", "--version"):
        done = subprocess.run(
            [str(exe), flag],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=_clean_env(),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert script in done.stdout


@pytest.mark.parametrize("package", PACKAGES)
def test_python_dash_m_runs(package: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", package, "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"usage: {package}" in done.stdout


@pytest.mark.slow
def test_parley_serve_finds_its_example_app_when_installed(installed: Path, tmp_path: Path) -> None:
    hello = '{"parley":1,"id":"h","verb":"HELLO"}\n'
    done = subprocess.run(
        [str(installed / "bin" / "parley"), "serve", "stdio:", "--state", ":memory:"],
        input=hello,
        capture_output=True,
        text=True,
        cwd=tmp_path,  # no examples/ folder here
        env=_clean_env(),
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert '"service":{"id":"shop.example"' in done.stdout
