"""Write a small click log in the MLPerf DLRM-DCNv2 multi-hot format, with a click signal a DLRM can learn.

    python -m reference_models.dlrm_dcnv2.generate OUT_DIR                        # the embedded default
    python -m reference_models.dlrm_dcnv2.generate OUT_DIR --rows-per-day 2000 --eval-rows 4000

The files are those the reference reads (reference_models/dlrm_dcnv2/data.py): for each day d of
`days`, day_{d}_dense.npy (float32, 13 columns), day_{d}_labels.npy (int32, one column) and
day_{d}_sparse_multi_hot.npz (uncompressed; arrays "0".."25" of int32 ids, one column per hot id).
Days 0..days-2 are the training set; the last day is split in halves, validation and test, as the
reference splits day 23.

Each sample draws one id per sparse feature (Zipf-like popularity over the feature's cardinality,
ids in a random order), then expands it to its multi-hot ids through lookup tables made as the
reference's materialize_synthetic_multihot_dataset.py makes them (NumPy's legacy generator seeded 0,
for each feature randint(0, rows, (rows, hotness - 1)) beside the id itself). Dense features are
Criteo-like counts c >= 0, stored as log(c + 2) (the reference's preprocessing, log(x - min + 2), for
counts whose minimum is 0). The click logit is

    bias + sum_j a_j[id_j]                      first-order effects of each feature's id
         + cross / sqrt(rank) x sum over `pairs` feature pairs (j, k) of u_j[id_j] . u_k[id_k]
         + dense x w . z                         z: the stored dense values standardised, w a unit vector

and the label a Bernoulli draw of its sigmoid, so the best possible AUC is that of the true logits.
The first-order terms alone fall short of the target (docs/dlrm_dcnv2.md): the cross network has to
learn the feature crosses. Each day draws from its own seeded stream.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Optional

import numpy as np

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.dlrm_dcnv2.criteo import DENSE_FEATURES, MULTI_HOT_SIZES
from reference_models.dlrm_dcnv2.data import day_files

VERSION = 1  # of what the generator writes for a given spec: a change that alters the files bumps it

# the reference's cardinalities scaled down: each at most 500 (conf/dataset/dlrm_dcnv2_embedded.yaml)
EMBEDDED_CARDINALITIES = (500, 500, 500, 500, 500, 3, 500, 500, 63, 500, 500, 500, 10, 500, 500, 155, 4, 500, 14, 500,
                          500, 500, 500, 500, 108, 36)


@dataclass(frozen=True)
class GeneratorSpec:
    # the embedded default (conf/dataset/dlrm_dcnv2_embedded.yaml repeats these; a test keeps them equal)
    days: int = 24  # the reference's 24 days: 23 to train on, the last to evaluate on
    rows_per_day: int = 10000  # each training day's samples
    eval_rows: int = 40000  # the last day's: its first half is the validation set
    cardinalities: tuple[int, ...] = EMBEDDED_CARDINALITIES
    zipf: float = 1.4  # popularity exponent of each feature's ids
    first_order: float = 0.3  # standard deviation of each id's own effect on the logit
    pairs: int = 6  # feature pairs whose ids interact
    rank: int = 4  # width of the interaction vectors
    cross: float = 0.6  # weight of the pair interactions
    dense: float = 0.8  # weight of the dense features' linear term
    bias: float = -1.1  # the mean logit (about a third of the samples are clicks: the logits spread)
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "cardinalities", tuple(int(n) for n in self.cardinalities))
        if len(self.cardinalities) != len(MULTI_HOT_SIZES):
            raise ValueError(f"{len(self.cardinalities)} cardinalities: Criteo has {len(MULTI_HOT_SIZES)} sparse features")
        if self.days < 2:
            raise ValueError(f"days={self.days}: need at least one training day and the evaluation day")


@dataclass(frozen=True)
class Truth:
    """What the labels are drawn from: per feature the ids' popularity order, effects and vectors."""

    order: list[np.ndarray]  # id of each popularity rank
    effect: list[np.ndarray]  # a_j: (rows,)
    vectors: list[np.ndarray]  # u_j: (rows, rank)
    pairs: np.ndarray  # (pairs, 2) feature indices
    levels: np.ndarray  # each dense count's log-normal level
    weights: np.ndarray  # each dense feature's weight in the logit (unit norm)
    centre: np.ndarray  # each stored dense value's mean and standard deviation, (2, 13)


@functools.lru_cache(maxsize=2)
def truth(spec: GeneratorSpec) -> Truth:
    rng = np.random.default_rng([spec.seed, 0])
    order = [rng.permutation(n) for n in spec.cardinalities]
    # each id's effect, less the popularity-weighted mean: the mean logit is the bias
    effect = [e - _popularity(n, spec.zipf) @ e[o] for n, o in zip(spec.cardinalities, order)
              for e in [rng.normal(0.0, spec.first_order, n)]]
    vectors = [rng.standard_normal((n, spec.rank)) for n in spec.cardinalities]
    # pairs among the features with more than a handful of ids: a cross of two 3-valued features is
    # hardly a cross worth learning
    wide = np.flatnonzero(np.array(spec.cardinalities) >= 50)
    candidates = np.array([(j, k) for i, j in enumerate(wide) for k in wide[i + 1:]])
    pairs = candidates[rng.choice(len(candidates), size=min(spec.pairs, len(candidates)), replace=False)]
    levels = rng.uniform(0.5, 4.0, DENSE_FEATURES)
    weights = rng.standard_normal(DENSE_FEATURES)
    sample = _dense_values(rng, levels, 20000)
    centre = np.stack((sample.mean(axis=0), sample.std(axis=0)))
    return Truth(order, effect, vectors, pairs, levels, weights / np.linalg.norm(weights), centre)


def _popularity(rows: int, exponent: float) -> np.ndarray:
    """The probability of each popularity rank: proportional to (rank + 1) ** -exponent."""
    weights = np.arange(1, rows + 1, dtype=np.float64) ** -exponent
    return weights / weights.sum()


def _dense_values(rng: np.random.Generator, levels: np.ndarray, n: int) -> np.ndarray:
    """Stored dense values log(c + 2) of Criteo-like counts c: log-normal around each feature's level, a
    third of them missing (0, as the preprocessing fills a missing count)."""
    counts = np.floor(np.exp(levels + rng.standard_normal((n, DENSE_FEATURES)))).astype(np.int64)
    counts[rng.random((n, DENSE_FEATURES)) < 1 / 3] = 0
    return np.log(counts + 2.0).astype(np.float32)


@functools.lru_cache(maxsize=2)
def multi_hot_tables(cardinalities: tuple[int, ...]) -> list[np.ndarray]:
    """Each feature's (rows, hotness) table: row v is v followed by hotness - 1 random ids, drawn as the
    reference's Multihot class draws them (np.random.seed(0), then randint per feature in order)."""
    legacy = np.random.RandomState(0)
    tables = []
    for rows, hot in zip(cardinalities, MULTI_HOT_SIZES):
        extra = legacy.randint(0, rows, size=(rows, hot - 1))
        tables.append(np.concatenate((np.arange(rows)[:, None], extra), axis=1).astype(np.int32))
    return tables


def _zipf_ids(rng: np.random.Generator, rows: int, exponent: float, size: int) -> np.ndarray:
    """Popularity ranks 0..rows-1 drawn with _popularity's probabilities."""
    return np.searchsorted(np.cumsum(_popularity(rows, exponent)), rng.random(size), side="right").clip(max=rows - 1)


def draw_day(spec: GeneratorSpec, day: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(dense float32 (n, 13), labels int32 (n, 1), one-hot ids int (n, 26), true logits (n,)) of one day."""
    t = truth(spec)
    n = spec.eval_rows if day == spec.days - 1 else spec.rows_per_day
    rng = np.random.default_rng([spec.seed, 1, day])
    ids = np.stack([t.order[j][_zipf_ids(rng, rows, spec.zipf, n)] for j, rows in enumerate(spec.cardinalities)],
                   axis=1)
    logit = spec.bias + sum(t.effect[j][ids[:, j]] for j in range(len(spec.cardinalities)))
    for j, k in t.pairs:
        logit += spec.cross / np.sqrt(spec.rank) * np.einsum("ij,ij->i", t.vectors[j][ids[:, j]],
                                                             t.vectors[k][ids[:, k]])
    dense = _dense_values(rng, t.levels, n)
    logit += spec.dense * ((dense - t.centre[0]) / t.centre[1]) @ t.weights
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int32)[:, None]
    return dense, labels, ids, logit


def write(spec: GeneratorSpec, out_dir: str | Path) -> Path:
    """Every day's three files in out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tables = multi_hot_tables(spec.cardinalities)
    for day in range(spec.days):
        dense, labels, ids, _ = draw_day(spec, day)
        dense_path, labels_path, sparse_path = day_files(out, day)
        np.save(dense_path, dense)
        np.save(labels_path, labels)
        np.savez(sparse_path, **{str(j): table[ids[:, j]] for j, table in enumerate(tables)})
    return out


def ensure(spec: GeneratorSpec, out_dir: str | Path) -> Path:
    """The generated days in out_dir, written first if missing, made from another spec, or changed since
    (harness.interface.generated checks the stamp's checksums)."""
    params = asdict(spec) | {"cardinalities": list(spec.cardinalities)}
    return generated.ensure(out_dir, "reference_models.dlrm_dcnv2.generate", VERSION, params,
                            lambda tmp: write(spec, tmp))


def main(argv: Optional[list[str]] = None) -> None:
    defaults: dict[str, Any] = {f.name: getattr(GeneratorSpec(), f.name) for f in fields(GeneratorSpec)}
    listed = ",".join(map(str, defaults.pop("cardinalities")))
    parser = generator_cli.command_line(module_doc(__name__), "out_dir", defaults, cardinalities={
        "default": listed, "help": "26 comma-separated table sizes (ids are below them)"})
    args = vars(parser.parse_args(argv))
    out_dir = args.pop("out_dir")
    args["cardinalities"] = tuple(int(n) for n in str(args["cardinalities"]).split(","))
    print(f"wrote {ensure(GeneratorSpec(**args), out_dir)}")


if __name__ == "__main__":
    main()
