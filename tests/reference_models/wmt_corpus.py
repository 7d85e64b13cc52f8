"""The small WMT corpora that GNMT's and the Transformer's tests read, as pytest fixtures: one written
by the model's own generator for each test module, and a copy of it for a test to break.

    corpus = corpus_fixture(write, SMALL)   # in a test module: the module's corpus
    bad = broken_copy_fixture()              # a fresh copy of it per test
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pytest


def corpus_fixture(write: Callable[[Any, Path], Any], spec: Any):
    """A module-scoped fixture named `corpus`: `spec` written by `write` into a temporary folder."""
    @pytest.fixture(scope="module")
    def corpus(tmp_path_factory) -> Path:
        out = tmp_path_factory.mktemp("wmt")
        write(spec, out)
        return out

    return corpus


def broken_copy_fixture():
    """A fixture named `bad`: a copy of the module's `corpus` that one test may change."""
    @pytest.fixture()
    def bad(corpus: Path, tmp_path: Path) -> Path:
        out = tmp_path / "bad"
        shutil.copytree(corpus, out)
        return out

    return bad
