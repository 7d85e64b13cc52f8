"""Every script under scripts/ with a command line answers `python -OO <script> --help`. -OO drops docstrings
(some images run Python so), and each script's argparse description is its docstring's first line: it
failed with an AttributeError on None before printing anything. harness/usage.py reads the docstring from
the script's source then."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, child_env

SCRIPTS = sorted(p for p in (REPO / "scripts").rglob("*.py") if "ArgumentParser(" in p.read_text(encoding="utf-8"))


def test_every_script_run_as_a_program_has_a_command_line_the_help_test_runs():
    """A script with a `__main__` block and no argparse would not be in SCRIPTS: --help might run it for real."""
    programs = [p for p in (REPO / "scripts").rglob("*.py") if '__name__ == "__main__"' in p.read_text(encoding="utf-8")]
    assert len(SCRIPTS) >= 20 and sorted(programs) == SCRIPTS


@pytest.fixture(scope="module")
def bytecode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # -OO reads and writes its own bytecode (.opt-2.pyc), which a plain run never made: with none written
    # (PYTHONDONTWRITEBYTECODE, a read-only environment) every script would compile torch's sources again, seconds
    # each. One folder for the module's scripts, outside the environment and the checkout.
    return tmp_path_factory.mktemp("opt2-bytecode")


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_help_under_python_OO_prints_the_usage_and_the_description_read_from_the_source(script, bytecode, tmp_path):
    env = child_env(COLUMNS="1000", PYTHONPYCACHEPREFIX=str(bytecode))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-OO", str(script), "--help"], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {script.name} "), done.stdout[:300]
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8")), clean=False) or ""
    first = " ".join(doc.splitlines()[0].split())
    assert first and first in " ".join(done.stdout.split())  # the description: the docstring, not an empty stand-in
