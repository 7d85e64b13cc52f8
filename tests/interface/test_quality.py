"""A quality is a number or named parts; 'reached' follows the model's direction and needs every part."""
from __future__ import annotations

import math
import re

import pytest

from harness.interface import QualityError, QualitySpec

MASKS = QualitySpec("mAP", parts=("BBOX", "SEGM"))


def test_one_number_reaches_at_or_above_its_target():
    hr = QualitySpec("HR@10")
    assert hr.reached(0.635, 0.635) and hr.reached(0.7, 0.635) and not hr.reached(0.63, 0.635)


def test_lower_is_better_reaches_at_or_below_its_target():
    ppl = QualitySpec("perplexity", higher_is_better=False)
    assert ppl.reached(20.0, 21.0) and ppl.reached(21.0, 21.0) and not ppl.reached(21.5, 21.0)
    assert ppl.describe_target(21.0) == "<= 21"


def test_two_parts_reach_only_together():
    target = {"BBOX": 0.377, "SEGM": 0.339}
    assert MASKS.reached({"BBOX": 0.38, "SEGM": 0.34}, target)
    assert not MASKS.reached({"BBOX": 0.40, "SEGM": 0.33}, target)
    assert not MASKS.reached({"BBOX": 0.37, "SEGM": 0.35}, target)
    assert MASKS.describe({"BBOX": 0.38, "SEGM": 0.34}) == "mAP BBOX 0.3800 SEGM 0.3400"
    assert MASKS.scalars({"BBOX": 0.38, "SEGM": 0.34}) == {"BBOX": 0.38, "SEGM": 0.34}


def test_a_quality_of_the_wrong_shape_is_a_one_line_error():
    with pytest.raises(QualityError, match="lacks SEGM"):
        MASKS.value({"BBOX": 0.3})
    with pytest.raises(QualityError, match="must be a mapping of BBOX, SEGM"):
        MASKS.value(0.3)
    with pytest.raises(QualityError, match="is one number"):
        QualitySpec("BLEU").value({"BLEU": 0.2})
    with pytest.raises(QualityError, match="NaN"):
        QualitySpec("BLEU").value(float("nan"))


def test_tensors_and_numpy_scalars_become_plain_floats():
    import numpy as np
    import torch

    assert QualitySpec("acc").value(torch.tensor(0.5)) == 0.5
    value = MASKS.value({"BBOX": np.float32(0.25), "SEGM": torch.tensor(0.5)})
    assert value == {"BBOX": 0.25, "SEGM": 0.5} and all(type(v) is float for v in value.values())


def test_a_target_outside_its_metric_s_range_or_one_every_run_has_reached_is_refused_in_one_line():
    from harness.config import compose
    from harness.errors import ConfigError
    from harness.interface.quality import FRACTION, QualityError, QualitySpec

    loss = QualitySpec("loss", higher_is_better=False, bounds=(0.0, math.inf))
    assert loss.target(0.0) == 0.0 and loss.target(3.5) == 3.5  # a loss may aim at 0; higher is reached by any
    for spec, bad in ((loss, -0.1), (loss, math.inf), (QualitySpec("top-1", bounds=FRACTION), 0.0),
                      (QualitySpec("mAP", parts=("BBOX", "SEGM"), bounds=FRACTION), {"BBOX": 0.3, "SEGM": 1.01})):
        with pytest.raises(QualityError):
            spec.target(bad)
    for override, line in (("model.target=1.5", "model.target=1.5: the target of BLEU must be above 0 and at most 1"),
                           ("model.target=-0.2", "model.target=-0.2: the target of BLEU must be above 0")):
        with pytest.raises(ConfigError, match="^" + re.escape(line)):
            compose(["model=transformer", override])
