"""Every option of every preset composes, and every bad option gives one line that names the choices or the
bound: every option of the harness and of every model is bounded (by its type, its declared range or
the model's rules between options) or says why not, and a value out of bounds stops before anything
is written."""
from __future__ import annotations

import copy
import dataclasses
import enum
import math
import sys
import typing

import pytest
from omegaconf import OmegaConf

from harness import registry
from harness.config import HarnessConfig, check, check_cli, compose
from harness.errors import ConfigError
from harness.interface import options as opts
from harness.outputs import check_paths, check_run_dirs, claim_dir
from tests.helpers import run_cli, said


def test_defaults_compose_to_ncf_on_its_embedded_data():
    cfg = compose([])
    assert cfg.model.name == "ncf" and cfg.dataset.name == "ncf_embedded"
    assert cfg.seed is None and cfg.gpus == 1 and cfg.precision is None  # fp32 on a CPU, amp on CUDA (harness/fastpath.py)
    assert cfg.max_epochs == cfg.model.max_epochs
    assert cfg.data_root == "outputs/datasets"
    assert cfg.model.factors == 16  # the embedded dataset scales the real-scale model down


def test_real_scale_ncf_keeps_the_mlperf_reference_hyperparameters():
    m = compose(["model=ncf", "dataset=ml20m"]).model
    assert (m.factors, list(m.layers), m.batch_size, m.learning_rate) == (64, [256, 256, 128, 64], 2048, 0.0005)
    assert (m.adam_beta1, m.adam_beta2, m.adam_eps, m.train_negatives, m.target) == (0.9, 0.999, 1e-8, 4, 0.635)


def _base(model: str) -> list[str]:
    return [f"model={model}"] + (["mode=throughput"] if registry.get(model).throughput_only else [])


def _fields(options: type, prefix: str = ""):
    """(dotted key, field, type) of every option, nested blocks (GNMT's synthetic) opened."""
    kinds = opts.field_types(options)
    for f in dataclasses.fields(options):
        nested = opts.nested_options(kinds[f.name])
        if nested is not None:
            yield from _fields(nested, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", f, kinds[f.name]


def _choice_type(kind):
    plain = opts.without_none(kind)
    return plain if isinstance(plain, type) and issubclass(plain, enum.Enum) else None


OWNERS = [(None, HarnessConfig, "")] + [(s.name, s.options, "model.") for s in registry.MODELS]


# a choice that a model's relations allow only beside another option (its refusal alone: the model's tests)
COMPANIONS = {"model.attention_grads=one_pass": ["model.compile_attention=true"]}  # GNMT: the compiled backward


@pytest.mark.parametrize("model,options,prefix", OWNERS, ids=[o[0] or "harness" for o in OWNERS])
def test_every_choice_of_every_option_composes(model, options, prefix):
    base = _base(model or "ncf")
    for key, _, kind in _fields(options):
        for member in _choice_type(kind) or ():
            choice = f"{prefix}{key}={member.value}"
            value = OmegaConf.select(compose(base + [choice, *COMPANIONS.get(choice, [])]), prefix + key)
            assert str(value) == member.value


@pytest.mark.parametrize("override", [
    "seed=5", "gpus=2", "max_epochs=3", "eval_every=2", "warmup_steps=0", "clear_caches=true",
    "progress=false", "tensorboard=false", "telemetry=false", "progress_timeout_s=60.0", "output_root=/tmp/x", "data_root=/data", "mlperf.org=acme", "mlperf.platform=box",
    "model.batch_size=4096", "model.learning_rate=1e-3", "model.layers=[8,4]", "dataset.generator.users=500",
])
def test_scalar_options_compose(override):
    key, value = override.split("=", 1)
    got = str(OmegaConf.select(compose([override]), key)).replace(" ", "").lower()
    assert got == value.replace("1e-3", "0.001")


def test_sweeps_are_checked_value_by_value_and_seeds_by_their_bound_alone():
    checked = []
    check_cli(["model.batch_size=64,128", "model=ncf"], check_run=lambda cfg: checked.append(cfg.model.batch_size))
    assert sorted(checked) == [64, 64, 128]  # the base composition, then each swept value
    checked.clear()
    check_cli(["seed=range(1,1000)", "model=ncf"], check_run=lambda cfg: checked.append(cfg.seed))
    assert checked == [1]  # a seed changes no other option: 999 compositions would take minutes
    with pytest.raises(ConfigError, match="seed"):
        check_cli(["seed=1,-2", "model=ncf"])


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


@pytest.mark.parametrize("model,options,prefix", OWNERS, ids=[o[0] or "harness" for o in OWNERS])
def test_every_option_is_bounded_or_says_why_not(model, options, prefix):
    """A bool or a Choice is bounded by its type; any other option declares a range or a reason."""
    loose = [key for key, f, kind in _fields(options)
             if not opts.bounded_by_type(kind) and opts.bound_of(f) is None and not opts.unbounded_reason(f)]
    assert loose == [], f"give these options a bound (harness.interface.option) or unbounded='why not': {loose}"


def _outside(bound: opts.Bound, kind, default):
    """A value out of `bound`, derived from it: just past its low or high end (for a list, its first
    number), or a string its pattern refuses."""
    if bound.pattern is not None:
        return "not a name/../"
    if bound.ge is not None:
        number = bound.ge - 1
    elif bound.gt is not None:
        number = bound.gt
    elif bound.le is not None:
        number = bound.le + 1
    else:
        assert bound.lt is not None, "a list bound by its length alone"
        number = bound.lt
    plain = opts.without_none(kind)
    leaf = plain
    while typing.get_origin(leaf) is list:
        leaf = typing.get_args(leaf)[0]
    number = int(math.floor(number)) if leaf is int else float(number)
    if typing.get_origin(plain) is not list:
        return number
    value = copy.deepcopy(default) if default else [1]
    holder = value
    while isinstance(holder[0], list):
        holder = holder[0]
    holder[0] = number
    return value


def _bounded(options: type, prefix: str):
    for key, f, kind in _fields(options):
        bound = opts.bound_of(f)
        if bound is not None:
            yield prefix + key, f.name, bound, kind


@pytest.mark.parametrize("model", [s.name for s in registry.MODELS])
def test_every_option_out_of_its_bound_is_one_line_naming_the_option_the_value_and_the_bound(model):
    """Each bounded option of the harness and of every model, set just outside its declared bound on
    the model's embedded preset, is refused by the config's check with the one line the command line
    prints: `<key>=<value>: out of range; need <bound>`. Its length too, for a list of fixed length."""
    base = compose(_base(model))
    cases = list(_bounded(registry.get(model).options, "model."))
    if model == "ncf":  # the harness's own options once, beside the default model
        cases += list(_bounded(HarnessConfig, ""))
    tried = 0
    for key, name, bound, kind in cases:
        default = OmegaConf.to_container(base, resolve=True)
        for part in key.split("."):
            default = default[part]
        values = [_outside(bound, kind, default)]
        if bound.length is not None:
            values.append(list(default) + list(default)[:1])
        for value in values:
            cfg = copy.deepcopy(base)
            OmegaConf.update(cfg, key, value)  # through the schema, as an override is
            with pytest.raises(ConfigError) as err:
                check(cfg)
            shown = opts.shown(OmegaConf.select(cfg, key))
            is_list = typing.get_origin(opts.without_none(kind)) is list
            assert str(err.value) == f"{key}={shown}: out of range; need {bound.text(name, is_list)}"
            tried += 1
    assert tried >= len(cases) > 5


@pytest.mark.parametrize("args,message", [
    (["model=ncf", "model.layers=[15,8]"], "model.layers=[15, 8]: out of range; need an even first width"),
    (["model=gnmt", "model.min_length=80"], "model.min_length=80: out of range; need min_length <= max_length (75)"),
    (["model=transformer", "model.num_heads=3"], "model.hidden_size=128: out of range; need a multiple of num_heads (3)"),
    (["model=resnet", "model.resize_size=10"], "model.resize_size=10: out of range; need resize_size >= image_size (64)"),
    (["model=resnet", "model.crop_ratio=[2,1]"], "model.crop_ratio=[2.0, 1.0]: out of range; need [low, high] with low <= high"),
    (["model=resnet", "model.lr_warmup_epochs=11"], "model.lr_warmup_epochs=11.0: out of range; need lr_warmup_epochs <= max_epochs (10)"),
    # the run's cap, not the model's, bounds it
    (["model=resnet", "dataset=imagenet", "max_epochs=3"], "model.lr_warmup_epochs=5.0: out of range; need "
                                                           "lr_warmup_epochs <= max_epochs (3)"),
    (["model=ssd", "model.image_size=20"], "model.image_size=20: out of range; need every feature map at least 1 pixel"),
    (["model=ssd", "model.anchor_steps=[8]"], "model.anchor_steps=[8]: out of range; need one entry per feature map (5"),
    (["model=ssd", "model.extra_blocks=[[64,128,0,1]]"], "model.extra_blocks=[[64, 128, 0, 1]]: out of range; need [1x1"),
    (["model=ssd", "model.lr_decay_epochs=[15,12]"], "model.lr_decay_epochs=[15, 12]: out of range; need increasing"),
    (["model=ssd", "model.color_jitter=[0.1,0.1,0.1,0.6]"], "need a hue of at most 0.5"),
    (["model=maskrcnn", "model.anchor_sizes=[16]"], "model.anchor_sizes=[16]: out of range; need one size per FPN level (5"),
    (["model=maskrcnn", "model.max_size=100"], "model.max_size=100: out of range; need max_size >= min_size (128)"),
    (["model=bert_base", "mode=throughput", "model.seq_len=1024"],
     "model.seq_len=1024: out of range; need seq_len <= max_position_embeddings (512)"),
    (["model=bert_base", "mode=throughput", "model.workload=pretrain128", "model.max_predictions=200"],
     "model.max_predictions=200: out of range; need max_predictions <= seq_len (128)"),
    (["model=txl_base", "mode=throughput", "model.cutoffs=[10,5]"], "model.cutoffs=[10, 5]: out of range; need boundaries"),
    (["model=tacotron2", "mode=throughput", "model.postnet_kernel_size=4"], "need an odd kernel"),
    (["model=tacotron2", "mode=throughput", "model.utterances.mel_max=10"],
     "model.utterances.mel_max=10: out of range; need mel_max >= utterances.mel_min (96)"),
    (["model=waveglow", "mode=throughput", "model.n_group=7"], "model.n_group=7: out of range; need an even count"),
    (["model=waveglow", "mode=throughput", "model.n_early_size=6"], "model.n_early_size=6: out of range; need an even "
                                                                    "count that leaves the last flow at least 2"),
])
def test_rules_between_options_are_one_line_naming_the_option(args, message):
    with pytest.raises(ConfigError) as err:
        check_cli(args)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_ssd_rule_on_feature_maps_computes_the_sides_the_model_has():
    import torch

    from reference_models.ssd.model import SSD300
    from reference_models.ssd.options import feature_sides

    for extra in ([], ["+debug=ssd"], ["dataset=ssd_coco2017"]):
        m = compose(["model=ssd", *extra]).model
        blocks = [list(b) for b in m.extra_blocks]
        with torch.device("meta"):
            pass
        net = SSD300(81, [4] * (len(blocks) + 1), list(m.backbone_layers), list(m.backbone_widths), m.backbone_stem,
                     blocks)
        assert feature_sides(m.image_size, len(m.backbone_layers), blocks) == net.feature_sizes(m.image_size)


def test_the_cuda_rule_of_amp_and_tf32_is_one_rule_wherever_the_device_is_decided():
    import torch

    from harness.fastpath import CUDA_ONLY
    from harness.run.launch import check_resources
    from harness.run.precision import policy

    assert set(CUDA_ONLY) == {"amp", "tf32"}
    for precision in CUDA_ONLY:
        with pytest.raises(ConfigError, match=f"^precision={precision} needs a CUDA device; on CPU use precision=fp32"):
            policy(precision, torch.device("cpu"))
        with pytest.raises(ConfigError, match=f"^precision={precision} needs a CUDA device, not device=cpu; on CPU"):
            compose([f"precision={precision}", "device=cpu"])
        if not torch.cuda.is_available():
            with pytest.raises(ConfigError, match=f"^precision={precision} needs a CUDA device and this host has none"):
                check_resources(compose([f"precision={precision}"]))
    policy("bf16", torch.device("cpu"))


def test_help_shows_the_model_a_bare_run_trains_with_each_option_s_bound(capsys):
    from harness.train import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "  model = 'ncf'" in out and "  dataset = 'ncf_embedded'" in out and "(required)" not in out
    assert "model=ncf (" in out and "  max_epochs = 10    [max_epochs >= 1]" in out  # resolved, not ${...}
    assert main(["--help", "model=gnmt"]) == 0
    out = capsys.readouterr().out
    assert "mlperf.    " not in out and "  mlperf.org = 'harness'    <- default\n      submission_org." in out
    assert "  mlperf.division = 'closed'    [one of: closed, open]" in out
    assert "  model = 'gnmt'" in out and "  dropout = 0.2    [0 <= dropout < 1]" in out
    assert "  synthetic.src_len = 30    [src_len >= 2]" in out


def test_an_option_out_of_range_exits_2_with_one_line_before_anything_is_written(tmp_path):
    for args, shown in ((["model=resnet", "model.momentum=-5"], "model.momentum=-5.0: out of range; need 0 <="),
                        (["model=resnet", "model.resize_size=10"], "model.resize_size=10: out of range; need resize_size"),
                        (["model=gnmt", "model.lr_warmup_samples=-5"], "model.lr_warmup_samples=-5: out of range; need")):
        out = run_cli("harness.train", *args, f"output_root={tmp_path}/out", cwd=tmp_path)
        assert out.returncode == 2 and len(said(out.stderr)) == 1, out.stderr
        assert said(out.stderr)[0].startswith(f"harness.train: error: {shown}"), out.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("override", ["model.target=${nowhere}", "output_root=${oc.env:HOME}/${nope}", "model.layers=[8"])
def test_an_interpolation_that_names_nothing_or_an_override_hydra_cannot_parse_is_one_line(override):
    with pytest.raises(ConfigError) as err:
        compose(["model=ncf", override])
    assert "\n" not in str(err.value) and ("nowhere" in str(err.value) or "nope" in str(err.value)
                                           or "model.layers" in str(err.value))
