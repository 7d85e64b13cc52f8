"""scripts/lab/side_by_side.sh: one command in the tree before a change (.base) and in this tree, alternated,
each tree's own code run from its own folder. Run here on stand-in trees whose harness.train and script
print where they ran and what they were given; the GPU rows it is for are in docs/benchmarks."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "lab" / "side_by_side.sh"

ECHO = """import os, sys
print("THROUGHPUT: {name} ran in", os.path.basename(os.getcwd()) or "/", " ".join(sys.argv[1:]))
"""


def _trees(root: Path) -> Path:
    """A repository folder holding the script, a stand-in harness.train and bench.py, and .base/ with its own."""
    (root / "scripts" / "lab").mkdir(parents=True)
    shutil.copy(SCRIPT, root / "scripts" / "lab" / "side_by_side.sh")
    shutil.copy(SCRIPT.parent / "gpu_check_rows.py", root / "scripts" / "lab" / "gpu_check_rows.py")
    for tree, name in ((root, "new"), (root / ".base", "base")):
        (tree / "harness").mkdir(parents=True)
        (tree / "harness" / "__init__.py").write_text("")
        shutil.copy(REPO / "harness" / "usage.py", tree / "harness" / "usage.py")  # gpu_check_rows.py's --help
        (tree / "harness" / "train.py").write_text(ECHO.format(name=f"{name} harness.train"))
        (tree / "bench.py").write_text(ECHO.format(name=f"{name} bench.py"))
    return root


def _run(root: Path, out: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(root / "scripts" / "lab" / "side_by_side.sh"), str(out), *args],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "SITE": "/nonexistent", **env})


def test_harness_train_runs_in_each_tree_alternated_with_its_own_output_folder(tmp_path):
    root = _trees(tmp_path / "repo")
    done = _run(root, tmp_path / "out", "model=ncf", "seed=1")
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "out" / "rows.txt").read_text().splitlines()
    assert [r.split()[1:3] for r in rows if r.startswith("==")] == [["base", "1"], ["new", "1"], ["base", "2"],
                                                                      ["new", "2"]]
    ran = [r for r in rows if r.startswith("THROUGHPUT")]
    assert ran == [f"THROUGHPUT: {name} harness.train ran in {folder} model=ncf seed=1 "
                   f"output_root=/tmp/side_by_side/{name}{n}"
                   for n in (1, 2) for name, folder in (("base", ".base"), ("new", "repo"))]
    assert rows.count("rc=0") == 4 and sorted(p.name for p in (tmp_path / "out").glob("*.log")) == [
        "base1.log", "base2.log", "new1.log", "new2.log"]


def test_script_runs_each_trees_own_copy_and_names_the_row_where_tree_is_asked_for(tmp_path):
    root = _trees(tmp_path / "repo")
    done = _run(root, tmp_path / "out", "model=resnet", "--label", "{tree}", SCRIPT="bench.py", ROUNDS="1")
    assert done.returncode == 0, done.stderr
    ran = [r for r in (tmp_path / "out" / "rows.txt").read_text().splitlines() if r.startswith("THROUGHPUT")]
    assert ran == ["THROUGHPUT: base bench.py ran in .base model=resnet --label base1",
                   "THROUGHPUT: new bench.py ran in repo model=resnet --label new1"]


def test_without_the_tree_before_the_change_it_says_how_to_make_it(tmp_path):
    root = _trees(tmp_path / "repo")
    shutil.rmtree(root / ".base")
    done = _run(root, tmp_path / "out", "model=ncf")
    assert done.returncode == 2 and "git archive" in done.stderr and not (tmp_path / "out").exists()


def test_a_script_missing_from_a_tree_is_refused_before_anything_runs(tmp_path):
    root = _trees(tmp_path / "repo")
    (root / ".base" / "bench.py").unlink()  # a script the change adds: the tree before it has none
    done = _run(root, tmp_path / "out", "model=ncf", SCRIPT="bench.py")
    assert done.returncode == 2 and "SCRIPT=bench.py is not a file of" in done.stderr
    assert not (tmp_path / "out").exists()


def test_row_runs_a_gpu_check_cell_with_its_own_arguments_in_each_tree(tmp_path):
    # the cell's dataset, batch and windows as the check runs them, then what is given: a side by side of a check's
    # row that leaves one out (DLRM-DCNv2's dataset, once) measures another workload
    root = _trees(tmp_path / "repo")
    done = _run(root, tmp_path / "out", "model.compile=false", ROW="gnmt:reductions_grads", ROUNDS="1")
    assert done.returncode == 0, done.stderr
    ran = [r for r in (tmp_path / "out" / "rows.txt").read_text().splitlines() if r.startswith("THROUGHPUT")]
    cell = ("model=gnmt mode=throughput progress=false tensorboard=false seed=1 dataset=wmt16 model.batch_size=2048 "
            "model.attention_grads=reductions warmup_s=1.5 throughput_window_s=0.75 throughput_repeats=3 "
            "model.compile=false")
    assert ran == [f"THROUGHPUT: base harness.train ran in .base {cell} output_root=/tmp/side_by_side/base1",
                   f"THROUGHPUT: new harness.train ran in repo {cell} output_root=/tmp/side_by_side/new1"]


def test_an_unknown_row_is_refused_with_the_cells_before_anything_runs(tmp_path):
    root = _trees(tmp_path / "repo")
    done = _run(root, tmp_path / "out", ROW="dlrm")
    assert done.returncode == 2 and "no throughput cell 'dlrm'; the cells: ncf, resnet" in done.stderr
    assert "dlrm_dcnv2" in done.stderr and not (tmp_path / "out").exists()
