"""A SPEC names its builder, dataset preparation and data check by where they live (harness.interface.lazy):
reading the registry imports none of them, nor torch; the first call imports and runs the target; a name
that leads nowhere is one line that names it."""
from __future__ import annotations

import json
import subprocess
import sys
from functools import partial

import pytest

from harness.errors import ConfigError
from harness.interface.lazy import lazy
from tests.helpers import REPO


def test_the_target_is_imported_at_the_first_call_and_called_with_its_arguments(tmp_path, monkeypatch):
    (tmp_path / "lazy_target_mod.py").write_text("def scaled(x, by=2):\n    return x * by\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_target_mod", raising=False)
    scaled = lazy("lazy_target_mod:scaled")
    assert "lazy_target_mod" not in sys.modules
    assert scaled(3) == 6 and partial(scaled, by=5)(3) == 15
    assert "lazy_target_mod" in sys.modules


def test_a_name_that_leads_nowhere_is_one_line_naming_it(tmp_path, monkeypatch):
    (tmp_path / "lazy_present_mod.py").write_text("NOT_CALLABLE = 1\n")
    (tmp_path / "lazy_broken_mod.py").write_text("import lazy_absent_dependency\n\ndef f():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as err:
        lazy("lazy_present_mod:build")(None)
    assert str(err.value) == "lazy_present_mod:build leads nowhere: module lazy_present_mod has no callable build"
    with pytest.raises(ConfigError, match=r"^lazy_present_mod:NOT_CALLABLE leads nowhere: .* no callable NOT_CALLABLE$"):
        lazy("lazy_present_mod:NOT_CALLABLE")()
    with pytest.raises(ConfigError, match=r"^lazy_no_such_pkg\.benchmark:Bench leads nowhere: there is no module "
                                          r"lazy_no_such_pkg$"):
        lazy("lazy_no_such_pkg.benchmark:Bench")()
    # the target's module exists and imports what is missing: that error, naming it, is not disguised
    with pytest.raises(ModuleNotFoundError, match="lazy_absent_dependency"):
        lazy("lazy_broken_mod:f")()
    with pytest.raises(ValueError, match="'package.module:attribute'"):
        lazy("lazy_present_mod.build")


def test_reading_the_registry_imports_no_model_code_and_no_torch():
    code = ("import json, sys\nfrom harness import registry\nnames = [s.name for s in registry.models()]\n"
            "print(json.dumps([len(names) > 10, sorted(m for m in sys.modules if m == 'torch' or m.endswith('.benchmark'))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True, []]
