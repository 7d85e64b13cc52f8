"""Every option of conf/ composes, and every bad option gives one line that names the choices."""
from __future__ import annotations

import sys

import pytest
from omegaconf import OmegaConf

from harness.config import CHOICES, ConfigError, check_cli, choices, compose, datasets_for
from harness.outputs import check_paths, check_run_dirs, claim_dir
from tests.helpers import REPO


def test_defaults_compose_to_ncf_on_its_embedded_data():
    cfg = compose([])
    assert cfg.model.name == "ncf" and cfg.dataset.name == "ncf_embedded"
    assert cfg.seed is None and cfg.gpus == 1 and cfg.precision == "fp32"
    assert cfg.max_epochs == cfg.model.max_epochs
    assert cfg.data_root == "outputs/datasets"
    assert cfg.model.factors == 16  # the embedded dataset scales the real-scale model down


@pytest.mark.parametrize("model,dataset", [(m, d) for m in choices("model") for d in datasets_for(m)])
def test_every_dataset_composes_with_its_model(model, dataset):
    cfg = compose([f"model={model}", f"dataset={dataset}"])
    OmegaConf.resolve(cfg)
    assert cfg.model.name == model and cfg.dataset.name == dataset


def test_every_dataset_belongs_to_a_model_and_each_model_has_its_embedded_one():
    from harness import registry

    owned = [d for m in choices("model") for d in datasets_for(m)]
    assert sorted(owned) == choices("dataset")
    for model in choices("model"):
        if registry.get(model).throughput_only:  # synthetic batches only: no dataset at all
            assert datasets_for(model) == [] and compose([f"model={model}", "mode=throughput"]).get("dataset") is None
        else:
            assert compose([f"model={model}"]).dataset.name == f"{model}_embedded"


def test_a_dataset_of_another_model_is_refused():
    with pytest.raises(ConfigError, match="dataset=wmt16 is a gnmt dataset, not for model=ncf; choose one of: ml20m, ml20m_generated, ncf_embedded"):
        compose(["model=ncf", "dataset=wmt16"])


def test_real_scale_ncf_keeps_the_mlperf_reference_hyperparameters():
    m = compose(["model=ncf", "dataset=ml20m"]).model
    assert (m.factors, list(m.layers), m.batch_size, m.learning_rate) == (64, [256, 256, 128, 64], 2048, 0.0005)
    assert (m.adam_beta1, m.adam_beta2, m.adam_eps, m.train_negatives, m.target) == (0.9, 0.999, 1e-8, 4, 0.635)


@pytest.mark.parametrize("key,values", sorted(CHOICES.items()))
def test_every_choice_of_every_option_composes(key, values):
    for value in values:
        assert OmegaConf.select(compose([f"{key}={value}"]), key) == value


@pytest.mark.parametrize("override", [
    "seed=5", "gpus=2", "max_epochs=3", "eval_every=2", "warmup_steps=0", "clear_caches=true",
    "progress=false", "tensorboard=false", "telemetry=false", "progress_timeout_s=60.0", "output_root=/tmp/x", "data_root=/data", "mlperf.org=acme", "mlperf.platform=box",
    "model.batch_size=4096", "model.learning_rate=1e-3", "model.layers=[8,4]", "dataset.generator.users=500",
])
def test_scalar_options_compose(override):
    key, value = override.split("=", 1)
    got = str(OmegaConf.select(compose([override]), key)).replace(" ", "").lower()
    assert got == value.replace("1e-3", "0.001")


def _choices(group: str) -> str:
    """Every config of a group, as the error lists them: a new model or dataset needs no edit here."""
    return ", ".join(sorted(p.stem for p in (REPO / "conf" / group).glob("*.yaml")))


@pytest.mark.parametrize("args,message", [
    (["model=foo"], f"unknown model 'foo'; choose one of: {_choices('model')}"),
    (["dataset=nope"], f"unknown dataset 'nope'; choose one of: {_choices('dataset')}"),
    (["foo=1"], "unknown option 'foo'; options are: model, dataset, seed"),
    (["model.zz=1"], "unknown option 'model.zz'; 'model' has: name, batch_size, max_epochs, target"),
    (["gpus=abc"], "gpus: Value 'abc' of type 'str' could not be converted to Integer"),
    (["precision=fp64"], "precision=fp64 is not an option; choose one of: fp32, tf32, amp, bf16"),
    (["device=tpu"], "device=tpu is not an option; choose one of: auto, cpu, cuda"),
    (["mlperf.division=semi"], "mlperf.division=semi is not an option; choose one of: closed, open"),
    (["model.batch_size=abc"], "model.batch_size: Value 'abc' of type 'str' could not be converted to Integer"),
    (["model.layers=3"], "model.layers: Invalid value assigned: int is not a ListConfig, list or tuple"),
    (["model=resnet", "model.optimizer=adam"], "model.optimizer: Invalid value 'adam', expected one of [sgd, lars]"),
    (["model.target=high"], "model.target must be a number, got 'high'"),
    (["precision=amp", "device=cpu"], "precision=amp needs a CUDA device, not device=cpu"),
    (["eval_every=3", "model.eval_offset=3"], "eval_offset=3: need 0 <= offset < eval_every (3)"),
    (["max_epochs=0"], "max_epochs=0: need at least 1"),
    (["model.batch_size=0"], "model.batch_size=0: need at least 1 sample per rank"),
    (["gpus=0"], "gpus=0, nodes=1: need at least 1 each"),
    (["telemetry_interval_s=0"], "telemetry_interval_s=0.0: must be above 0 (telemetry=false turns it off)"),
    (["progress_timeout_s=0"], "progress_timeout_s=0.0: must be above 0 seconds"),
    (["model.layers.x=1"], "model.layers.x=1: model.layers is a list; give a position (model.layers.0=...) "
                           "or the whole list (model.layers=[...])"),
    (["seed=1,x"], "seed: Value 'x' of type 'str' could not be converted to Integer"),
    (["model=ncf,foo"], "unknown model 'foo'"),
])
def test_bad_options_give_one_line(args, message):
    with pytest.raises(ConfigError) as err:
        check_cli(args)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_sweeps_are_checked_value_by_value():
    checked = []
    check_cli(["seed=range(1,4)", "model=ncf"], check_run=lambda cfg: checked.append(cfg.seed))
    assert sorted(checked) == [1, 1, 2, 3]  # the base composition, then each swept value


def test_output_and_data_roots_that_cannot_hold_a_run_are_refused_in_one_line(tmp_path):
    (tmp_path / "afile").write_text("")
    cases = [
        (["output_root=F"], "output_root=F is a file, not a folder; choose a folder"),
        (["output_root=F/sub"], "output_root=F/sub lies under F, which is a file; choose a folder"),
        (["data_root=F"], "data_root=F is a file, not a folder; choose a folder"),
        (["data_root=F/x/y"], "data_root=F/x/y lies under F, which is a file; choose a folder"),
    ]
    for overrides, message in cases:
        with pytest.raises(ConfigError) as err:
            check_paths(compose([o.replace("F", str(tmp_path / "afile")) for o in overrides]))
        assert str(err.value) == message.replace("F", str(tmp_path / "afile"))
    check_paths(compose([f"output_root={tmp_path}/new/deeper", f"data_root={tmp_path}/data"]))  # made later


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self is read-only on Linux alone")
def test_an_output_root_this_user_cannot_write_is_refused():
    with pytest.raises(ConfigError, match="^output_root=/proc/self/out: /proc/self is not writable by this user; "
                                          "choose another output_root$"):
        check_paths(compose(["output_root=/proc/self/out"]))


def test_a_run_id_names_one_run_and_a_given_sweep_folder_one_sweep(tmp_path):
    cfg = compose([f"output_root={tmp_path}", "run_id=nightly"])
    check_run_dirs(cfg, [], multirun=False)  # new: fine
    (tmp_path / "runs" / "run-nightly_ncf").mkdir(parents=True)
    with pytest.raises(ConfigError, match="run-nightly_ncf exists: a run directory names one run; choose a new run_id"):
        check_run_dirs(cfg, [], multirun=False)
    several = compose([f"output_root={tmp_path}", "run_id=nightly", "nodes=2"])
    check_run_dirs(several, [], multirun=False)  # the other nodes of the run share it ...
    (tmp_path / "runs" / "run-nightly_ncf" / "result.json").write_text("{}")
    with pytest.raises(ConfigError, match="holds result.json"):  # ... until a run has finished in it
        check_run_dirs(several, [], multirun=False)
    sweep = tmp_path / "s"
    check_run_dirs(cfg, [f"hydra.sweep.dir={sweep}"], multirun=True)
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("")
    with pytest.raises(ConfigError, match="already holds a sweep; choose a new folder"):
        check_run_dirs(cfg, [f"hydra.sweep.dir={sweep}"], multirun=True)


def test_directories_are_claimed_once_even_under_the_same_name(tmp_path):
    name = lambda n: tmp_path / "sweeps" / ("2026_ncf" + (f"-{n + 1}" if n else ""))  # noqa: E731
    assert [claim_dir(name).name for _ in range(3)] == ["2026_ncf", "2026_ncf-2", "2026_ncf-3"]
