"""scripts/tools/suite_times.py: the suite's seconds per test file, from which the two workers are handed the
slowest files first (tests/conftest.py). A file's module fixture and its classes count toward the file."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

from tests.helpers import REPO

_spec = importlib.util.spec_from_file_location("suite_times", REPO / "scripts" / "tools" / "suite_times.py")
suite_times = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite_times)

XML = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.e2e.test_multirank" name="test_a" time="20.5"/>
<testcase classname="tests.e2e.test_multirank" name="test_b" time="9.5"/>
<testcase classname="tests.test_record.TestReading" name="test_c" time="0.25"/>
<testcase classname="tests.test_record" name="test_d" time="0.5"/>
<testcase classname="tests.results.test_ncf_sweeps" name="test_e" time="12.0"><skipped/></testcase>
</testsuite></testsuites>"""


def test_times_are_summed_per_file_and_written_slowest_first(tmp_path):
    (tmp_path / "a.xml").write_text(XML)
    (tmp_path / "b.xml").write_text(XML.replace('time="12.0"', 'time="40.0"'))
    out = tmp_path / "times.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "tools" / "suite_times.py"), str(tmp_path / "a.xml"),
                           str(tmp_path / "b.xml"), "--out", str(out), "--show", "1"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    times = json.loads(out.read_text())
    # the two runs averaged file by file; a class's tests count toward its file
    assert list(times.items()) == [("tests/e2e/test_multirank.py", 30.0), ("tests/results/test_ncf_sweeps.py", 26.0),
                                   ("tests/test_record.py", 0.8)]
    assert "30.0 s  tests/e2e/test_multirank.py" in proc.stdout


def test_the_checked_in_times_name_test_files_that_exist():
    times = json.loads((REPO / "tests" / "file_times.json").read_text())
    missing = [name for name in times if not (REPO / name).is_file()]
    assert not missing, f"tests/file_times.json names files that are gone (rerun scripts/tools/suite_times.py): {missing}"
    assert list(times.values()) == sorted(times.values(), reverse=True)
