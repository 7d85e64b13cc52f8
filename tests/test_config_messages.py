"""A bad command line gives one line that names the option, the value and what it needs: an unknown
choice lists the choices, an unknown option the options beside it (the closest first), a value of the
wrong type the type (harness/config/messages.py)."""
from __future__ import annotations

import pytest

from harness.config import check_cli
from harness.errors import ConfigError
from tests.helpers import REPO


def _choices(group: str) -> str:
    """Every config of a group, as the error lists them: a new model or dataset needs no edit here."""
    return ", ".join(sorted(p.stem for p in REPO.glob(f"reference_models/*/conf/{group}/*.yaml")))


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
    (["model.batch_size=1.5"], "model.batch_size: Value '1.5' of type 'float' could not be converted to Integer"),
    (["model.layers=3"], "model.layers: Invalid value assigned: int is not a ListConfig, list or tuple"),
    (["model=resnet", "model.optimizer=adam"], "model.optimizer=adam is not an option; choose one of: sgd, lars"),
    (["model=bert_base", "mode=throughput", "model.workload=squad2"],
     "model.workload=squad2 is not an option; choose one of: squad384, pretrain128, pretrain512"),
    (["dataset.generator.users=1.5"], "dataset.generator.users=1.5: expected an integer like the default 4000"),
    (["model.target=high"], "model.target must be a number, got 'high'"),
    (["precision=amp", "device=cpu"], "precision=amp needs a CUDA device, not device=cpu"),
    (["eval_every=3", "model.eval_offset=3"], "eval_offset=3: need 0 <= offset < eval_every (3)"),
    (["max_epochs=0"], "max_epochs=0: out of range; need max_epochs >= 1"),
    (["model.batch_size=0"], "model.batch_size=0: out of range; need batch_size >= 1"),
    (["gpus=0"], "gpus=0: out of range; need gpus >= 1"),
    (["telemetry_interval_s=0"], "telemetry_interval_s=0.0: out of range; need telemetry_interval_s > 0"),
    (["progress_timeout_s=0"], "progress_timeout_s=0.0: out of range; need progress_timeout_s > 0"),
    (["model.learning_rate=inf"], "model.learning_rate=inf: out of range; need a finite number, learning_rate > 0"),
    (["model.dropout=nan"], "model.dropout=nan: out of range; need a finite number, 0 <= dropout < 1"),
    (["run_id=../../elsewhere"], "run_id='../../elsewhere': out of range; need a name of letters, digits"),
    (["model.lr=0.01"], "unknown option 'model.lr'; did you mean 'model.learning_rate'? 'model' has: name,"),
    (["+model.lr=0.01"], "unknown option 'model.lr'; did you mean 'model.learning_rate'?"),
    # the options listed are the model's own, not the default model's
    (["model=resnet", "model.lr=-1"], "did you mean 'model.learning_rate'? 'model' has: name, batch_size, max_epochs, "
                                      "target, eval_every, eval_offset, eval_epochs, eval_every_samples, layers, width"),
    (["model=ssd", "model.lr=-1"], "'model' has: name, batch_size, max_epochs, target, eval_every, eval_offset, "
                                   "eval_epochs, eval_every_samples, image_size, backbone_layers"),
    # the learning-rate warm-ups are lr_warmup_*: the throughput's warmup_steps is the harness's own option
    (["model=gnmt", "model.warmup_steps=5"], "unknown option 'model.warmup_steps'; did you mean 'model.lr_warmup_steps'"),
    (["model=transformer", "model.warmup_steps=5"],
     "unknown option 'model.warmup_steps'; did you mean 'model.lr_warmup_steps'"),
    (["model=gnmt", "model.warmup_samples=64"], "did you mean 'model.lr_warmup_samples'"),
    (["model=resnet", "model.warmup_epochs=1"], "did you mean 'model.lr_warmup_epochs'"),
    (["model.layers.x=1"], "model.layers.x=1: model.layers is a list; give a position (model.layers.0=...) "
                           "or the whole list (model.layers=[...])"),
    (["seed=1,x"], "seed: Value 'x' of type 'str' could not be converted to Integer"),
    (["model=ncf,foo"], "unknown model 'foo'"),
    # a sweep of nothing: Hydra's first value raised StopIteration, an 18-line traceback
    (["seed=range(3,1)"], "seed=range(3,1): sweeps no values; give at least one (seed=range(1,4) or seed=1,2)"),
    # a generator's count below 1: the run wrote an empty dataset over the good one, then failed
    (["model=ncf", "+debug=ncf", "dataset.generator.users=-5"],
     "dataset.generator.users=-5: out of range; need dataset.generator.users >= 1 (a count: the preset gives 400)"),
    (["model=ncf", "dataset.generator.seed=-1"],
     "dataset.generator.seed=-1: out of range; need dataset.generator.seed >= 0 (the preset gives 0)"),
    # another model's preset: the line ended at "ConfigKeyError raised while composing config:"
    (["model=ncf", "+debug=resnet"], "+debug=resnet is model=resnet's preset, not model=ncf's: use +debug=ncf"),
    # Hydra's grammar reads no letter beyond ASCII unquoted: the hint says how to quote it
    (["output_root=/tmp/ünï cødé"], """cannot parse output_root=/tmp/ünï cødé: LexerNoViableAltException: """
                                    """output_root=/tmp/ünï cødé; quote a value with spaces or letters beyond ASCII """
                                    """inside the override ('key="a b"')"""),
    # a switch says true or false (OmegaConf would read 2 as true); torch.compile is CUDA's in every model
    (["model=retinanet", "model.compile=2"], "model.compile=2: model.compile is a switch; give it true or false"),
    (["tensorboard=-1"], "tensorboard=-1: tensorboard is a switch; give it true or false"),
    (["model=retinanet", "model.compile=true", "device=cpu"],
     "model.compile=true compiles for a CUDA device, not device=cpu: leave it out (on a CPU the step runs eager)"),
    (["model=gnmt", "model.compile_attention=yes", "device=cpu"], "model.compile_attention=true compiles for a CUDA"),
    # fp8's products sit beside a 16-bit autocast (harness/interface/fp8.py)
    (["fp8=true", "device=cpu"], "fp8=true multiplies in fp8 beside bf16 or fp16 autocast: on device=cpu add "
                                 "precision=bf16"),
    (["fp8=true", "precision=fp32"], "fp8=true multiplies in fp8 beside bf16 or fp16 autocast: use it with "
                                     "precision=bf16 or precision=amp, not precision=fp32"),
])
def test_bad_options_give_one_line(args, message):
    with pytest.raises(ConfigError) as err:
        check_cli(args)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
