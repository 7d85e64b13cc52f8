"""Write a synthetic MovieLens-format ratings.csv that NCF can learn.

    python -m reference_models.ncf.generate OUT_DIR                  # the embedded default
    python -m reference_models.ncf.generate OUT_DIR --users 138493 --items 26744 --mean-ratings 144

Users and movies get latent taste vectors; a movie's appeal to a user is their scaled dot product
plus a Zipf-like popularity term. Each user rates 20 or more movies drawn without replacement in
proportion to exp(appeal) (Gumbel top-k), at random times, so the held-out latest rating is a
fresh draw from the same preferences. Ranking by popularity alone recovers only part of that
signal; a model has to learn the tastes to pass the calibrated HR@10 target (docs/ncf.md).
The file has MovieLens' header, sparse movie ids, half-star ratings and Unix timestamps, so the
loader that reads real ml-20m reads it unchanged.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from harness.interface.option_help import module_doc
from harness.interface import generated, generator_cli
from reference_models.ncf.ratings_file import RATINGS_FILE, DatasetError

VERSION = 1  # of what the generator writes for a given spec: a change that alters the file bumps it


@dataclass(frozen=True)
class GeneratorSpec:
    # the embedded default (conf/dataset/ncf_embedded.yaml repeats these; a test keeps them equal)
    users: int = 4000
    items: int = 3000
    dim: int = 8  # rank of the taste structure
    taste: float = 5.0  # weight of taste against popularity
    popularity: float = 2.5  # Zipf exponent of the popularity term
    mean_ratings: float = 30.0  # mean ratings per user; every user has at least 20
    seed: int = 0

    def __post_init__(self) -> None:
        # what the generator can write at all; what NCF can train on is trainable()'s rule
        if self.users < 1 or self.dim < 1:
            raise ValueError(f"users={self.users}, dim={self.dim}: need at least 1 each")
        if self.items < 2 * LEAST_RATINGS:  # a user's ratings are drawn from at most half of the movies
            raise ValueError(f"items={self.items}: each user rates {LEAST_RATINGS} movies of at most half of them; "
                             f"choose items >= {2 * LEAST_RATINGS}")


LEAST_RATINGS = 20  # every user's, as MLPerf's preprocessing keeps only users with 20 or more


def needed_movies() -> int:
    """Distinct rated movies NCF's preprocessing needs: each user's held-out one is ranked against
    999 the user never rated."""
    from reference_models.ncf.data import EVAL_NEGATIVES, MIN_RATINGS  # imports torch: not in the spawned writers

    return EVAL_NEGATIVES + MIN_RATINGS


def trainable(**params: Any) -> GeneratorSpec:
    """The spec of a config's (or the command line's) generator parameters; ValueError, one line and
    before anything is written, where too few movies could never make a dataset NCF trains on."""
    items = params.get("items", GeneratorSpec.items)  # said before what the generator itself would refuse
    if isinstance(items, int) and items < needed_movies():
        raise ValueError(f"items={items}: NCF ranks each user's held-out movie against 999 the user never "
                         f"rated, so it needs at least {needed_movies()} movies; choose items >= {needed_movies()}")
    return GeneratorSpec(**params)


@functools.lru_cache(maxsize=2)  # every chunk of a spec needs them; they are small
def latent_factors(spec: GeneratorSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """User tastes, movie tastes and movie popularity: the truth the data is drawn from.
    User u has userId u + 1; movie i has movieId movie_ids(spec)[i]."""
    rng = np.random.default_rng([spec.seed, 0])
    user_vecs = rng.standard_normal((spec.users, spec.dim)).astype(np.float32)
    item_vecs = rng.standard_normal((spec.items, spec.dim)).astype(np.float32)
    popularity = -spec.popularity * np.log(1 + rng.permutation(spec.items)).astype(np.float32)
    return user_vecs, item_vecs, popularity


@functools.lru_cache(maxsize=2)
def movie_ids(spec: GeneratorSpec) -> np.ndarray:
    """Sparse, increasing movie ids, as MovieLens numbers its movies."""
    rng = np.random.default_rng([spec.seed, 1])
    return np.sort(rng.choice(np.arange(1, 40 * spec.items), spec.items, replace=False))


CHUNK_USERS = 2048  # users drawn together; each chunk has its own random stream


def _draw_chunk(spec: GeneratorSpec, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(userId, movieId, rating, timestamp) of the chunk's users, sorted by userId then movieId.

    Chunks draw from their own seeded streams, so the output is the same whichever process draws
    which chunk, and at ml-20m's size (68 chunks) the chunks can be drawn in parallel."""
    user_vecs, item_vecs, popularity = latent_factors(spec)
    rng = np.random.default_rng([spec.seed, 2, index])
    start, stop = index * CHUNK_USERS, min((index + 1) * CHUNK_USERS, spec.users)
    extra = rng.geometric(1.0 / max(1.0, spec.mean_ratings - 19.0), size=stop - start) - 1
    counts = np.minimum(20 + extra, spec.items // 2)

    appeal = spec.taste / np.sqrt(spec.dim) * (user_vecs[start:stop] @ item_vecs.T) + popularity
    # Gumbel top-k: the k largest perturbed logits are a draw without replacement in proportion to
    # exp(appeal). Gumbel noise as -log(-log(U)) from float32 uniforms: 3x faster than rng.gumbel.
    with np.errstate(divide="ignore"):  # U = 0 gives -inf: that item is never drawn
        perturbed = appeal - np.log(-np.log(rng.random(appeal.shape, dtype=np.float32)))
    # only the chunk's largest count needs ranking: a partition, then a sort of that slice
    k = int(counts.max())  # at most items // 2
    top = np.argpartition(-perturbed, k - 1, axis=1)[:, :k]
    ranked = np.take_along_axis(top, np.argsort(-np.take_along_axis(perturbed, top, axis=1), axis=1), axis=1)
    taken = np.arange(k)[None, :] < counts[:, None]
    users = np.broadcast_to(np.arange(start, stop)[:, None], ranked.shape)[taken]
    items = ranked[taken]
    chosen_appeal = np.take_along_axis(appeal, ranked, axis=1)[taken]

    # Half-star ratings from the appeal's quantile within the chunk: a rough stand-in for scores.
    quantile = chosen_appeal.argsort().argsort() / max(1, len(chosen_appeal) - 1)
    rating = np.round(1 + 8 * quantile) / 2.0 + 0.5
    start_time = 1_104_537_600  # 2005-01-01, inside ml-20m's span
    timestamps = start_time + rng.integers(0, 10 * 365 * 86400, size=len(users))
    movies = movie_ids(spec)[items]
    order = np.lexsort((movies, users))
    return users[order] + 1, movies[order], rating[order], timestamps[order]


def _csv_chunk(spec: GeneratorSpec, index: int) -> str:
    users, movies, ratings, timestamps = _draw_chunk(spec, index)
    return "".join(f"{u},{m},{r:.1f},{t}\n" for u, m, r, t in zip(users.tolist(), movies.tolist(),
                                                                   ratings.tolist(), timestamps.tolist()))


def _chunks(spec: GeneratorSpec, work, workers: Optional[int]):
    """work(spec, i) for every chunk, in order; over a process pool when there are many chunks."""
    n = -(-spec.users // CHUNK_USERS)
    workers = min(n, os.cpu_count() or 1) if workers is None else workers
    if workers <= 1 or n <= 2 or not generator_cli.spawn_can_start():
        yield from (work(spec, i) for i in range(n))
        return
    # spawn, not fork: a forked child of a process whose BLAS threads already ran can hang in BLAS
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield from pool.map(work, [spec] * n, range(n))


def generate(spec: GeneratorSpec, workers: Optional[int] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(userId, movieId, rating, timestamp) columns, sorted like ml-20m by userId then movieId."""
    parts = list(_chunks(spec, _draw_chunk, workers))
    return tuple(np.concatenate(col) for col in zip(*parts))  # type: ignore[return-value]


def write(spec: GeneratorSpec, out_dir: str | Path, workers: Optional[int] = None) -> Path:
    """Write OUT_DIR/ratings.csv atomically (a concurrent reader never sees half a file); the
    chunks are drawn and formatted on every core (ml-20m's size: 4.4 min on 2 cores)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".ratings-", suffix=".csv")
    with os.fdopen(fd, "w") as f:
        f.write("userId,movieId,rating,timestamp\n")
        for text in _chunks(spec, _csv_chunk, workers):
            f.write(text)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the data from other users
    target = out_dir / RATINGS_FILE
    os.replace(tmp, target)
    return target


def ensure(spec: GeneratorSpec, out_dir: str | Path) -> Path:
    """The generated ratings.csv in out_dir, written first if it is missing, made from another spec,
    or no longer what was written (harness.interface.generated checks the stamp's checksums)."""
    spec = trainable(**asdict(spec))
    folder = generated.ensure(out_dir, "reference_models.ncf.generate", VERSION, asdict(spec),
                              lambda tmp: _rates_enough(spec, write(spec, tmp)))
    return folder / RATINGS_FILE


def _rates_enough(spec: GeneratorSpec, path: Path) -> None:
    """DatasetError where the ratings drawn name too few distinct movies to train on (few users, a steep
    popularity): raised in the staging folder, so a dataset already in place is kept."""
    import pandas as pd  # a few seconds at ml-20m's size, against minutes to draw it

    rated = int(pd.read_csv(path, usecols=["movieId"])["movieId"].nunique())
    if rated < needed_movies():
        raise DatasetError(f"the generator's users={spec.users}, items={spec.items}, mean_ratings={spec.mean_ratings} "
                           f"rate only {rated} distinct movies, and NCF needs at least {needed_movies()}: raise users or mean_ratings "
                           "(or lower popularity)")


def main() -> None:
    generator_cli.generator_main(module_doc(__name__), trainable, ensure)


if __name__ == "__main__":
    main()
