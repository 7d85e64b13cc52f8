"""Model names live in the registry's list and the models' own specs, not in harness/: a model from
outside the repository (tests/models/suited.py, through HARNESS_MODELS) joins the bench's matrix and
the report's categories and metric names by what its ModelSpec declares, and no code of harness/ names
a registered model beside the registry's list and MLPerf's own per-benchmark tables."""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mlperf_logging.benchmark_meta import _ALL_ALLOWED_BENCHMARKS

from harness import registry
from tests.helpers import REPO, child_env, run_cli
from tests.models import suited

HARNESS = REPO / "harness"
# MLPerf's own rules that reading official logs needs and that no table expresses, by file
MLPERF_RULES = {
    "harness/results/analysis/score.py": {"ncf"},  # v0.5 scored NCF by its own rule (the best of its 100 runs' ...)
    # MLPerf's benchmark names as published logs use them, keys of a table of their training sets
    "harness/results/read/trainsets.py": {"ssd", "retinanet", "maskrcnn"},
}


MLPERF = {b for round_ in _ALL_ALLOWED_BENCHMARKS["training"].values() for b in round_}  # every ruleset's


def _mlperf_only() -> set[str]:
    """MLPerf Training's benchmarks that no registered model runs (minigo, dlrm, ...)."""
    return MLPERF - {s.benchmark for s in registry.MODELS}


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _mlperf_tables(tree: ast.AST, mlperf_only: set[str]) -> set[int]:
    """MLPerf benchmarks' names inside a literal table that also names an MLPerf benchmark no model here
    registers: one of MLPerf's own per-benchmark tables (a harness model's name there is still found)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            strings = [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if any(s.value in mlperf_only for s in strings):
                inside.update(id(s) for s in strings if s.value in MLPERF)
    return inside


def names_in_harness() -> list[str]:
    """'path:line: name' for each registered model's name in harness/'s code (strings, identifiers and
    imports; docstrings and comments aside), outside the registry's list and MLPerf's tables and rules."""
    names = {s.name for s in registry.MODELS}
    word = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True))
                      + r")(?![A-Za-z0-9_])")
    mlperf_only = _mlperf_only()
    found: list[tuple[str, int, str]] = []
    for path in sorted(HARNESS.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "harness/registry.py":
            continue  # the registry's list: the one place that names them
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree) | _mlperf_tables(tree, mlperf_only)
        allowed = MLPERF_RULES.get(rel, set())
        for node in ast.walk(tree):
            texts: list[str] = []
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                texts = word.findall(node.value)
            elif isinstance(node, ast.Name):
                texts = [node.id] if node.id in names else []
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                modules = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                texts = [p for m in modules for p in m.split(".") if p in names]
            found += [(rel, node.lineno, t) for t in texts if t not in allowed]
    return [f"{rel}:{line}: {name}" for rel, line, name in sorted(found)]


def test_no_code_of_harness_names_a_registered_model():
    assert names_in_harness() == []


def test_the_check_finds_a_model_named_in_harness(tmp_path, monkeypatch):
    """The check above sees a name in a string, an f-string and an import, and lets MLPerf's tables be."""
    fake = tmp_path / "harness"
    (fake / "results").mkdir(parents=True)
    (fake / "results" / "x.py").write_text(
        '"""Docstrings may say ncf."""\n'
        'from reference_models import gnmt  # comments too: resnet\n'
        'SUITE = [("ssd", 1)]\n'
        'MLPERF = {"maskrcnn": "mAP", "minigo": "win rate", "tacotron2": "MCD"}\n'
        'def f(m):\n    return f"model={m}" if m else "bert_large squad384"\n')
    monkeypatch.setattr(sys.modules[__name__], "HARNESS", fake)
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert names_in_harness() == ["harness/results/x.py:2: gnmt", "harness/results/x.py:3: ssd",
                                  "harness/results/x.py:4: tacotron2", "harness/results/x.py:6: bert_large"]


def _python(code: str, env: dict) -> str:
    full = child_env(**env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_a_model_from_outside_joins_the_bench_and_the_report_by_its_spec_alone(tmp_path):
    env = {"HARNESS_MODELS": "tests.models.suited"}
    assert not any(suited.SPEC.name in line or suited.BENCHMARK in line
                   for p in HARNESS.rglob("*.py") for line in p.read_text().splitlines())
    # the default matrix of `harness.bench --smoke` (and of the GPU suite) holds it, with its entry's settings
    cells = _python("from harness.bench import _parser, plan\n"
                    "print(' '.join(c.name for c in plan(_parser().parse_args(['--smoke']), available=0, device='cpu')))\n"
                    "full = plan(_parser().parse_args(['--models', 'suited', '--precisions', 'amp']), available=1)[0]\n"
                    "print(' '.join(full.overrides('cuda', smoke=False, window_s=3.0, warmup_s=3.0, repeats=3)))", env)
    smoke, full = cells.splitlines()
    assert smoke.split()[-1] == "suited-fp32-1gpu" and "ncf-fp32-1gpu" in smoke
    assert "model.width=8" in full and "throughput_window_s=3" in full  # 3 s windows, sized by the run
    # its cells, run on two "machines", compare under the category it declares
    for side in ("a", "b"):
        out = run_cli("harness.bench", "--smoke", "--models", "suited", "--out", str(tmp_path / side), cwd=tmp_path,
                      env=env)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    out = run_cli("harness.report", str(tmp_path / "a"), str(tmp_path / "b"), "--compare", "--json", "-", cwd=tmp_path,
                  env=env)
    data = json.loads(out.stdout)
    assert [(p["workload"], p["category"]) for p in data["throughput_pairs"]] == [("suited", suited.CATEGORY)]
    assert {m["category"] for m in data["throughput_geomeans"]} == {suited.CATEGORY, "overall"}
    # a time-to-train run's log, read as the report reads an official one, carries its metric's name
    out = run_cli("harness.train", "model=suited", "seed=1", "output_root=runs", "progress=false", cwd=tmp_path,
                  env=env)
    assert out.returncode == 0, out.stderr
    (log,) = (tmp_path / "runs").rglob("mlperf.log")
    official = tmp_path / "official"
    official.mkdir()
    (official / "result_0.txt").write_text(log.read_text())
    named = _python("from harness import registry\nregistry.publish()\n"
                    "from harness.results.analysis.collect import build, label_for\n"
                    "from harness.results.read.own import category\n"
                    f"r = build([{str(official)!r}])\n"
                    f"print(label_for(r)({suited.BENCHMARK!r}), '|', category({suited.BENCHMARK!r}), '|',"
                    " [k.benchmark for k in r.groups])", env)
    assert named == f"{suited.METRIC} | {suited.CATEGORY} | [{suited.BENCHMARK!r}]"
    out = run_cli("harness.check.show", "targets", suited.BENCHMARK, env=env)
    assert out.stdout.startswith(f"{suited.BENCHMARK}: {suited.METRIC}; ")


def test_a_spec_s_metric_defaults_to_its_quality_s_name_and_its_category_is_one_of_mlperf_s():
    from harness.interface import ModelSpec
    from harness.interface.suite import CATEGORIES

    assert all(s.category in CATEGORIES for s in registry.MODELS)
    assert registry.get("resnet").metric == "top-1" and registry.get("maskrcnn").metric == "mAP"
    assert all(s.metric == "" for s in registry.MODELS if s.throughput_only)
    with pytest.raises(ValueError, match="category='games'; choose one of vision, language"):
        ModelSpec(name="x", options=suited.SuitedOptions, sample_unit="x", build=suited.Suited, category="games")


def test_the_stand_in_lives_outside_harness():
    assert Path(suited.__file__).resolve().is_relative_to(REPO / "tests")


PLUGINS = {  # module -> (files, the start of its one line)
    "named_ncf": ({"named_ncf.py": "import dataclasses\nfrom tests.models.suited import SPEC as S\n"
                                   "SPEC = dataclasses.replace(S, name='ncf')\n"},
                  "HARNESS_MODELS names named_ncf, whose model 'ncf' has the name of reference_models.ncf's"),
    "same_preset": ({"same_preset/__init__.py": "import dataclasses\nfrom tests.models.suited import SPEC as S\n"
                                                "SPEC = dataclasses.replace(S, name='same_preset')\n",
                     "same_preset/conf/dataset/wmt16.yaml": "dataset: {name: wmt16}\n"},
                    "HARNESS_MODELS names same_preset, whose preset dataset/wmt16 ("),
    "bad_yaml": ({"bad_yaml/__init__.py": "import dataclasses\nfrom tests.models.suited import SPEC as S\n"
                                          "SPEC = dataclasses.replace(S, name='bad_yaml')\n",
                  "bad_yaml/conf/model/bad_yaml.yaml": "model:\n  layers: [1, 2\n  width: 3\n"},
                 "HARNESS_MODELS names bad_yaml, whose preset "),
    "fails": ({"fails.py": "raise RuntimeError('no GPU library here')\n"},
              "HARNESS_MODELS names fails, which cannot be imported: RuntimeError: no GPU library here"),
}


@pytest.mark.parametrize("module", PLUGINS)
def test_a_model_from_outside_that_clashes_or_cannot_be_read_is_one_line_naming_both(tmp_path, monkeypatch, module,
                                                                                      fixtures_dir):
    files, line = PLUGINS[module]
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = list(registry.MODELS)
    with pytest.raises(registry.ConfigError) as err:
        registry._load_plugins(module)
    assert str(err.value).startswith(line) and "\n" not in str(err.value) and registry.MODELS == before
    if module == "same_preset":
        assert str(err.value).endswith(f"has the name of {REPO}/reference_models/gnmt/conf/dataset/wmt16.yaml; "
                                       "rename one")
    if module == "bad_yaml":
        assert "bad_yaml.yaml line 3 cannot be read" in str(err.value)
    if module == "fails":  # as a user meets it: any command, one line, exit 2
        (tmp_path / "run").mkdir()  # a real MLPerf log: its benchmark is looked up among the models
        log = fixtures_dir / "nvidia_dgx1" / "gnmt" / "result_0.txt"
        (tmp_path / "run" / "result_0.txt").write_bytes(log.read_bytes())
        out = run_cli("harness.report", str(tmp_path), cwd=tmp_path, env={"HARNESS_MODELS": "fails"})
        assert out.returncode == 2 and out.stderr == f"harness.report: error: {line}\n" and out.stdout == ""
