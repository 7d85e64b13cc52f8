"""A model reads its options as its own typed dataclass, with the command line's values and whatever the
harness set in the config before the model was built."""
from __future__ import annotations

from omegaconf import open_dict

from harness.config import compose
from harness.run.build import context_for
from reference_models.ncf.options import NCFOptions


def test_a_model_reads_its_options_as_its_own_dataclass():
    cfg = compose(["model=ncf", "model.factors=7", "model.layers=[32,16]", "device=cpu", "seed=1"])
    ctx = context_for(cfg)
    with open_dict(cfg):
        cfg.model.dropout = 0.25  # as the fast path sets model.* after the context is made, before the build
    options = ctx.options
    assert isinstance(options, NCFOptions) and options.factors == 7 and options.layers == [32, 16]
    assert options.dropout == 0.25 and ctx.options is options  # made once, at the model's first read

