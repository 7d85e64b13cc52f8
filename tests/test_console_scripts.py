"""The six commands as console scripts (pyproject.toml's [project.scripts]) beside `python -m harness.<command>`:
each names a command's main, and an installed one answers --help as the module does."""
from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import REPO

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
