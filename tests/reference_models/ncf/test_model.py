"""NeuMF at the MLPerf reference's sizes, and the calibration of the embedded data."""
from __future__ import annotations

import numpy as np
import torch

from harness.config import compose

from reference_models.ncf.generate import GeneratorSpec, generate, latent_factors, movie_ids
from reference_models.ncf.data import preprocess
from reference_models.ncf.model import NeuMF


def test_real_scale_neumf_has_the_reference_parameter_count():
    users, items, f, layers = 138_493, 26_744, 64, [256, 256, 128, 64]
    model = NeuMF(users, items, f, layers)
    embeddings = (users + items) * (f + layers[0] // 2)
    mlp = sum(a * b + b for a, b in zip(layers[:-1], layers[1:]))
    final = layers[-1] + f + 1
    assert sum(p.numel() for p in model.parameters()) == embeddings + mlp + final == 31_832_577
    out = model(torch.tensor([0, users - 1]), torch.tensor([items - 1, 0]))
    assert out.shape == (2,)


def test_embedded_target_is_out_of_popularitys_reach_but_not_the_truths():
    """HR@10 0.635 must need learned tastes: ranking by popularity falls well short, ranking by the
    generator's own appeal scores passes it easily."""
    spec = GeneratorSpec(**compose(["model=ncf"]).dataset.generator)
    assert spec == GeneratorSpec()  # the generator's defaults are the embedded dataset's
    users, movies, _, times = generate(spec)
    d = preprocess(users, movies, times)
    counts = np.bincount(d.train_items, minlength=d.n_items).astype(float)
    popularity_hr = np.mean((counts[d.test_negatives] >= counts[d.test_items][:, None]).sum(1) < 10)

    u, v, pop = latent_factors(spec)
    gen_item = np.searchsorted(movie_ids(spec), d.item_ids)  # dense item index -> generator item
    scale = spec.taste / np.sqrt(spec.dim)

    def appeal(user_idx, item_idx):
        i = gen_item[item_idx]
        return scale * np.einsum("ij,ij->i", u[d.user_ids[user_idx] - 1], v[i]) + pop[i]

    rows = np.arange(d.n_users)
    pos = appeal(rows, d.test_items)
    neg = appeal(np.repeat(rows, 999), d.test_negatives.ravel()).reshape(d.n_users, 999)
    oracle_hr = np.mean((neg >= pos[:, None]).sum(1) < 10)
    assert popularity_hr < 0.45
    assert oracle_hr > 0.80
