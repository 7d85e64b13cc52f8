"""The six commands as console scripts (pyproject.toml's [project.scripts]) beside `python -m harness.<command>`:
each names a command's main, and an installed one answers --help as the module does."""
from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO, child_env

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_command_is_a_console_script_naming_its_main():
    assert set(SCRIPTS) == {"harness-train", "harness-sweep", "harness-report", "harness-check", "harness-check-data",
                            "harness-bench"}
    for target in SCRIPTS.values():
        module, _, name = target.partition(":")
        assert callable(getattr(importlib.import_module(module), name)), target


def test_an_installed_script_answers_as_its_module_does():
    script = shutil.which("harness-check", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the console scripts are not installed in this environment (pip install -e . installs them)")
    as_script = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60)
    as_module = subprocess.run([sys.executable, "-m", "harness.check", "--help"], capture_output=True, text=True,
                               timeout=60)
    assert as_script.returncode == as_module.returncode == 0
    assert as_script.stdout.split("\n", 1)[1] == as_module.stdout.split("\n", 1)[1]  # the same options below usage


OPTIMISED = [*(t.partition(":")[0] for t in SCRIPTS.values()), "harness.check.show", "reference_models.ncf.generate"]


@pytest.mark.parametrize("module", OPTIMISED)
def test_help_under_python_OO_is_the_usage_read_from_the_source(module):
    """`python -OO` (docstrings dropped, as some images run Python) failed every command's --help, and
    harness.report's and harness.check's every start, with an AttributeError on None: the usage is each
    module's docstring, read from its source when the module no longer holds it."""
    import ast

    path = importlib.util.find_spec(module).origin  # type: ignore[union-attr]
    doc = ast.get_docstring(ast.parse(Path(path).read_text()), clean=False) or ""
    done = subprocess.run([sys.executable, "-OO", "-m", module, "--help"], capture_output=True, text=True,
                          timeout=120, env=child_env(COLUMNS="1000"), cwd=REPO)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = [line.strip() for line in doc.splitlines() if line.strip()]
    assert any(line in done.stdout for line in lines)  # its description (argparse's) or its whole usage
