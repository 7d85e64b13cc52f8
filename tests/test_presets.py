"""A model's presets live in its own package (reference_models/<m>/conf: model/, dataset/, model_for/,
debug/), Hydra finds them through hydra_plugins/harness_presets, a dataset file holds dataset keys
alone and names the model's preset for it, and `--help` says which file set each value
(harness/config/presets.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from harness import registry
from harness.config import compose
from harness.errors import ConfigError
from harness.config.presets import CONF_DIR, COMMAND_LINE, DEFAULT, choices, datasets_for, source_of, sources
from tests.helpers import REPO, run_cli


def _base(model: str) -> list[str]:
    return [f"model={model}"] + (["mode=throughput"] if registry.get(model).throughput_only else [])


def test_each_model_s_presets_live_in_its_package_and_conf_holds_what_models_share():
    assert sorted(p.name for p in CONF_DIR.iterdir()) == ["config.yaml", "hydra"]
    for package in registry.PACKAGES:
        conf = Path(package.__file__).parent / "conf"
        name = package.SPEC.name
        assert (conf / "model" / f"{name}.yaml").is_file() and (conf / "debug" / f"{name}.yaml").is_file()
        for dataset in datasets_for(name):
            assert (conf / "dataset" / f"{dataset}.yaml").is_file()


def test_dataset_files_hold_dataset_keys_and_name_the_model_s_preset_for_them():
    for path in REPO.glob("reference_models/*/conf/dataset/*.yaml"):
        text = yaml.safe_load(path.read_text())
        assert set(text) <= {"defaults", "dataset", "mlperf"}, path
        assert set(text["dataset"]) <= {"name", "model", "path", "generator"}, path
        # a dataset may say which MLPerf division its runs belong to: the scaled-down model on generated data
        # is an open-division run where the closed rules pin the real scale (llama31_8b's sequence length)
        assert set(text.get("mlperf", {})) <= {"division"}, path
        for entry in text.get("defaults", []):
            assert entry == "_self_" or entry == {"/model_for@model": path.stem}, path
            assert entry == "_self_" or (path.parent.parent / "model_for" / f"{path.stem}.yaml").is_file()


def test_the_embedded_dataset_scales_the_model_down_and_a_real_one_keeps_the_real_scale():
    embedded, real = compose(["model=gnmt"]).model, compose(["model=gnmt", "dataset=wmt16"]).model
    assert (embedded.batch_size, embedded.hidden_size, embedded.max_epochs) == (64, 128, 16)
    assert (real.batch_size, real.hidden_size, real.max_epochs, real.target) == (128, 1024, 8, 0.24)
    debug = compose(["model=gnmt", "dataset=wmt16", "+debug=gnmt"]).model
    assert (debug.batch_size, debug.hidden_size, debug.learning_rate) == (32, 16, real.learning_rate)


@pytest.mark.parametrize("model,dataset", [(m, d) for m in choices("model") for d in datasets_for(m)])
def test_every_dataset_composes_with_its_model(model, dataset):
    cfg = compose([f"model={model}", f"dataset={dataset}"])
    OmegaConf.resolve(cfg)
    assert cfg.model.name == model and cfg.dataset.name == dataset


def test_every_dataset_belongs_to_a_model_and_each_model_has_its_embedded_one():
    owned = [d for m in choices("model") for d in datasets_for(m)]
    assert sorted(owned) == choices("dataset")
    for model in choices("model"):
        if registry.get(model).throughput_only:  # synthetic batches only: no dataset at all
            assert datasets_for(model) == [] and compose([f"model={model}", "mode=throughput"]).get("dataset") is None
        else:
            assert compose([f"model={model}"]).dataset.name == f"{model}_embedded"


@pytest.mark.parametrize("args,message", [
    (["model=ncf", "dataset=wmt16"], "dataset=wmt16 is a gnmt dataset, not for model=ncf; choose one of: ml20m, "
                                     "ml20m_generated, ncf_embedded"),
    # its model_for preset names Mask R-CNN's options, which SSD has not: refused before it is merged
    (["model=ssd", "dataset=maskrcnn_embedded"], "dataset=maskrcnn_embedded is a maskrcnn dataset, not for "
                                                 "model=ssd; choose one of: ssd_coco2017, ssd_embedded"),
])
def test_a_dataset_of_another_model_is_refused(args, message):
    with pytest.raises(ConfigError) as err:
        compose(args)
    assert str(err.value) == message


def test_every_preset_composes_and_passes_its_checks_with_each_dataset_and_the_debug_preset():
    """Including the debug preset on a real dataset: its one epoch once held ResNet's real warm-up of
    5 epochs, which logged a decay of -16 steps."""
    for model in choices("model"):
        for dataset in datasets_for(model) or [None]:
            for debug in ([], [f"+debug={model}"]):
                cfg = compose(_base(model) + ([f"dataset={dataset}"] if dataset else []) + debug)
                if model == "resnet":
                    assert cfg.model.lr_warmup_epochs <= cfg.max_epochs


def test_each_value_names_the_file_that_set_it_last_or_the_command_line_or_the_default():
    where = sources(["model=gnmt", "+debug=gnmt", "model.dropout=0.1", "dataset.generator.nouns=7"])
    gnmt = "reference_models/gnmt/conf/"
    assert source_of(where, "model.target") == gnmt + "model/gnmt.yaml"
    assert source_of(where, "model.lr_scaling") == gnmt + "model_for/gnmt_embedded.yaml"
    assert source_of(where, "model.batch_size") == gnmt + "debug/gnmt.yaml"  # the last of the three
    assert source_of(where, "dataset.generator.verbs") == gnmt + "dataset/gnmt_embedded.yaml"
    assert source_of(where, "model.dropout") == source_of(where, "dataset.generator.nouns") == COMMAND_LINE
    assert source_of(where, "model.vocab_size") == source_of(where, "seed") == DEFAULT
    assert source_of(where, "model") == COMMAND_LINE and source_of(where, "dataset") == "conf/config.yaml"
    real = sources(["model=gnmt", "dataset=wmt16"])
    assert source_of(real, "model.batch_size") == gnmt + "model/gnmt.yaml"
    assert source_of(real, "dataset.path") == gnmt + "dataset/wmt16.yaml"


def test_help_says_where_each_value_came_from(capsys):
    from harness.train import main

    assert main(["--help", "model=gnmt", "model.dropout=0.3"]) == 0
    out = capsys.readouterr().out
    assert "  batch_size = 64    [batch_size >= 1]    <- reference_models/gnmt/conf/model_for/gnmt_embedded.yaml" in out
    assert "  target = 0.24    <- reference_models/gnmt/conf/model/gnmt.yaml" in out
    assert "  dropout = 0.3    [0 <= dropout < 1]    <- command line" in out
    assert "  vocab_size = 32320    [vocab_size >= 5]    <- default" in out


def test_a_model_package_outside_the_repository_brings_its_own_presets(tmp_path):
    """End to end through `python -m harness.train` (about 3 s): HARNESS_MODELS names a package whose
    conf/ folder Hydra then searches, as it searches reference_models/<m>/conf."""
    package = tmp_path / "extpart"
    for folder, name, text in [
        ("model", "extpart", "defaults:\n  - /schema/model@_here_: extpart\n  - _self_\nname: extpart\nbatch_size: 32\n"),
        ("dataset", "extpart_embedded", "# @package _global_\ndefaults:\n  - /model_for@model: extpart_embedded\n"
                                        "  - _self_\ndataset:\n  name: extpart_embedded\n  model: extpart\n"
                                        "  path: ${data_root}/extpart\n  generator: {points: 400, seed: 0}\n"),
        ("model_for", "extpart_embedded", "target: {A: 0.6, B: 0.5}\n")]:
        (package / "conf" / folder).mkdir(parents=True)
        (package / "conf" / folder / f"{name}.yaml").write_text(text)
    (package / "__init__.py").write_text("import dataclasses\nfrom tests.models.twopart import SPEC as TWO\n"
                                         "SPEC = dataclasses.replace(TWO, name='extpart')\n")
    out = run_cli("harness.train", "--help", "model=extpart", cwd=tmp_path,
                  env={"HARNESS_MODELS": "extpart", "PYTHONPATH": f"{REPO}:{tmp_path}"})
    assert out.returncode == 0, out.stderr
    assert f"  batch_size = 32    <- {package}/conf/model/extpart.yaml" in out.stdout
    assert f"  target = {{'A': 0.6, 'B': 0.5}}    <- {package}/conf/model_for/extpart_embedded.yaml" in out.stdout
    assert "datasets of extpart: extpart_embedded" in out.stdout
