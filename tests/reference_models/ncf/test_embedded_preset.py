"""The embedded NCF preset keeps the values calibrated on 1, 2, 4 and 8 ranks (docs/ncf.md, "Epochs to
converge by world size"): an edit that would move the measured epochs fails here first.

    python -m pytest -q tests/reference_models/ncf/test_embedded_preset.py
"""
from __future__ import annotations

from omegaconf import OmegaConf

from harness.config import compose
from harness.interface import scaled_learning_rate

# the most epochs any of seeds 1-5 needed to reach HR@10 0.635 (docs/ncf.md)
SLOWEST_SEED = {1: 3, 2: 3, 4: 3, 8: 4}


def test_the_embedded_preset_keeps_its_calibrated_values():
    cfg = compose(["model=ncf"])
    m = cfg.model
    assert (m.factors, list(m.layers), m.dropout, m.train_negatives) == (16, [64, 32, 16], 0.0, 4)
    assert (m.batch_size, m.learning_rate, m.lr_scaling, m.lr_reference_batch) == (2048, 0.003, "sqrt", 2048)
    assert (m.adam_beta1, m.adam_beta2, m.adam_eps, m.target, m.max_epochs) == (0.9, 0.999, 1e-8, 0.635, 10)
    assert OmegaConf.to_container(cfg.dataset.generator) == {
        "users": 4000, "items": 3000, "dim": 8, "taste": 5.0, "popularity": 2.5, "mean_ratings": 30.0, "seed": 0}


def test_each_world_trains_at_the_calibrated_rate():
    m = compose(["model=ncf"]).model
    rates = {n: round(scaled_learning_rate(m.learning_rate, m.lr_scaling, m.batch_size * n, m.lr_reference_batch), 6)
             for n in SLOWEST_SEED}
    assert rates == {1: 0.003, 2: 0.004243, 4: 0.006, 8: 0.008485}


def test_the_cap_leaves_room_above_the_slowest_seed_of_every_world():
    assert compose(["model=ncf"]).model.max_epochs >= 2 * max(SLOWEST_SEED.values())
