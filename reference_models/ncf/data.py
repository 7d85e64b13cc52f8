"""MovieLens ratings.csv -> the MLPerf NCF training and evaluation sets.

The preprocessing follows the MLPerf NCF reference (recommendation/pytorch/convert.py, v0.5):
every rating is an implicit positive, users with fewer than 20 ratings are dropped, user and item
ids are renumbered densely, each user's latest rating is held out for evaluation, and each test
user gets 999 sampled items they never interacted with. Two choices are stricter than the
reference and documented in docs/ncf.md: the 999 evaluation negatives are distinct and exclude
the held-out item itself (the reference samples with replacement from the items left after the
hold-out is popped, which can draw the positive as its own negative); and the evaluation set is
drawn from a fixed seed, so every run of a seed sweep is judged on the same users and candidates.
A user who rated so many items that fewer than 999 are left gets those left drawn with
replacement, as the reference draws every user's; a user who rated every item is an error.

ratings.csv is found and read by reference_models/ncf/ratings_file.py (a line it cannot read is named).

Check a dataset by hand:  python -m reference_models.ncf.data PATH/TO/ml-20m
"""
from __future__ import annotations

import logging
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from harness.interface.generated import CACHE
from harness.interface.findings import describe_command
from reference_models.ncf.ratings_file import DatasetError, ratings_path, read_ratings

MIN_RATINGS = 20
EVAL_NEGATIVES = 999
EVAL_SET_SEED = 0  # the evaluation candidates are part of the dataset, not of a run

log = logging.getLogger("reference_models.ncf.data")


@dataclass
class NCFData:
    """The preprocessed sets. User u's evaluation row is index u of test_items / test_negatives."""

    n_users: int
    n_items: int
    train_users: np.ndarray  # int64, one entry per training positive
    train_items: np.ndarray  # int64
    test_items: np.ndarray  # int64 (n_users,), the held-out latest item of each user
    test_negatives: np.ndarray  # int64 (n_users, EVAL_NEGATIVES)
    user_ids: np.ndarray  # original userId of each dense user index
    item_ids: np.ndarray  # original movieId of each dense item index

    @property
    def n_train(self) -> int:
        return int(self.train_users.shape[0])


def preprocess(
    user_ids: np.ndarray,
    item_ids: np.ndarray,
    timestamps: np.ndarray,
    *,
    min_ratings: int = MIN_RATINGS,
    eval_negatives: int = EVAL_NEGATIVES,
) -> NCFData:
    """Implicit feedback, leave-latest-out split and sampled evaluation negatives."""
    # A user rating the same movie twice is one implicit positive; keep the latest rating.
    codes_u, _ = _dense(user_ids)
    codes_i, _ = _dense(item_ids)
    order = _order(codes_u, codes_i, timestamps)
    user_ids, item_ids, timestamps = user_ids[order], item_ids[order], timestamps[order]
    codes_u, codes_i = codes_u[order], codes_i[order]
    last_of_pair = np.ones(len(user_ids), dtype=bool)
    last_of_pair[:-1] = (codes_u[1:] != codes_u[:-1]) | (codes_i[1:] != codes_i[:-1])
    user_ids, item_ids, timestamps = user_ids[last_of_pair], item_ids[last_of_pair], timestamps[last_of_pair]
    codes_u = codes_u[last_of_pair]

    keep = np.bincount(codes_u)[codes_u] >= min_ratings
    user_ids, item_ids, timestamps = user_ids[keep], item_ids[keep], timestamps[keep]
    if not keep.any():
        raise DatasetError(f"no user has {min_ratings} or more ratings")

    users, user_vocab = _dense(user_ids)
    items, item_vocab = _dense(item_ids)
    n_users, n_items = len(user_vocab), len(item_vocab)
    if n_items < eval_negatives + min_ratings:
        raise DatasetError(
            f"{n_items} items: too few to sample {eval_negatives} evaluation negatives per user"
        )

    # Latest rating per user is the test item; equal timestamps resolve to the larger movieId so
    # the split never depends on the order of rows in the file.
    order = _order(users, timestamps, items)
    users, items = users[order], items[order]
    is_last = np.ones(len(users), dtype=bool)
    is_last[:-1] = users[1:] != users[:-1]
    test_items = items[is_last]
    train_users, train_items = users[~is_last], items[~is_last]

    all_keys = np.sort(users * n_items + items)  # every positive, the held-out ones included
    test_negatives = sample_eval_negatives(all_keys, n_users, n_items, eval_negatives, user_vocab)
    return NCFData(
        n_users=n_users,
        n_items=n_items,
        train_users=train_users.astype(np.int64),
        train_items=train_items.astype(np.int64),
        test_items=test_items.astype(np.int64),
        test_negatives=test_negatives,
        user_ids=user_vocab,
        item_ids=item_vocab,
    )


def _dense(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(ids, return_inverse=True) reversed: (codes, vocabulary). For ids of moderate size
    through a lookup table instead of a sort: 0.5 s against 2.3 s for 20M user ids on 2 cores."""
    if len(ids) and 0 <= ids.min() and ids.max() < 64 * len(ids) + 1_000_000:
        present = np.zeros(int(ids.max()) + 1, dtype=bool)
        present[ids] = True
        code_of = np.cumsum(present) - 1
        return code_of[ids], np.flatnonzero(present)
    vocab, codes = np.unique(ids, return_inverse=True)
    return codes, vocab


def _order(*keys: np.ndarray) -> np.ndarray:
    """The stable order by keys[0], then keys[1], ... (non-negative integers): one argsort of a
    packed int64 key where it fits (0.9-1.9 s for 20M ratings on 2 cores), np.lexsort otherwise
    (28 s for the same)."""
    lows = [int(k.min()) if len(k) else 0 for k in keys]
    spans = [int(k.max()) - low + 1 if len(k) else 1 for k, low in zip(keys, lows)]
    if np.prod([float(x) for x in spans]) >= 2.0**62:
        return np.lexsort(keys[::-1])
    packed = np.zeros(len(keys[0]), dtype=np.int64)
    for k, low, span in zip(keys, lows, spans):
        packed = packed * span + (k - low)
    return np.argsort(packed, kind="stable")


def sample_eval_negatives(
    positive_keys: np.ndarray, n_users: int, n_items: int, count: int, user_ids: Optional[np.ndarray] = None,
) -> np.ndarray:
    """`count` distinct items per user, none of them among the user's positives, uniformly drawn.

    Items are drawn with replacement and repeats or positives are dropped, keeping draw order:
    what is left is a uniformly random sequence of distinct allowed items, and its first `count`
    entries a uniform sample without replacement. Rows left short are drawn again, larger.
    A user with fewer than `count` items left to draw from gets them with replacement, as MLPerf's
    reference (convert.py, np.random.choice) draws every user's; `user_ids` (the original ids)
    name such users in the log and in the error for a user who rated every item.
    """
    rng = np.random.default_rng(EVAL_SET_SEED)
    out = np.empty((n_users, count), dtype=np.int64)
    if count == 0:
        return out
    users_of = positive_keys // n_items
    left = n_items - np.bincount(users_of, minlength=n_users)
    short = np.flatnonzero(left < count)
    if len(short):
        _report_short(short, left, n_items, count, user_ids)
    chunk = max(1, min(4_000_000 // count, 100_000_000 // n_items))  # bounds the dense mask below
    for start in range(0, n_users, chunk):
        stop = min(start + chunk, n_users)
        # the chunk's positives as a dense (users x items) mask: one gather per candidate
        lo, hi = np.searchsorted(users_of, [start, stop])
        positive = np.zeros((stop - start, n_items), dtype=bool)
        positive[users_of[lo:hi] - start, positive_keys[lo:hi] % n_items] = True
        pending = np.arange(start, stop)
        few = pending[left[pending] < count]
        for u in few:
            out[u] = rng.choice(np.flatnonzero(~positive[u - start]), size=count)
        pending = pending[left[pending] >= count]
        draw = count + count // 4 + 16
        while len(pending):
            cand = rng.integers(0, n_items, size=(len(pending), draw), dtype=np.int32)
            ok = ~positive[(pending - start)[:, None], cand]
            order = np.argsort(cand, axis=1, kind="stable")
            by_value = np.take_along_axis(cand, order, axis=1)
            repeat = np.zeros_like(ok)
            # in a stable sort the first draw of a value comes first: mark the later ones
            np.put_along_axis(repeat, order[:, 1:], by_value[:, 1:] == by_value[:, :-1], axis=1)
            ok &= ~repeat
            enough = ok.sum(axis=1) >= count
            keep = ok & (np.cumsum(ok, axis=1) <= count)
            out[pending[enough]] = cand[enough][keep[enough]].reshape(-1, count)
            pending = pending[~enough]
            draw *= 2
    return out


def _report_short(short: np.ndarray, left: np.ndarray, n_items: int, count: int,
                  user_ids: Optional[np.ndarray]) -> None:
    def name(u: int) -> str:
        return f"userId {user_ids[u]}" if user_ids is not None else f"user {u}"

    full = short[left[short] == 0]
    if len(full):
        raise DatasetError(f"{name(int(full[0]))} rated all {n_items} items: no item is left to rank the "
                           "held-out one against; remove that user's ratings")
    u = int(short[0])
    log.warning("%d user(s) rated more than %d of the %d items (first: %s, %d left): their %d evaluation "
                "negatives are drawn from those left with replacement, as MLPerf's reference draws every user's",
                len(short), n_items - count, n_items, name(u), int(left[u]), count)


CACHE_VERSION = 2  # bump when preprocess() or the cached fields change


def load(data_dir: str | Path) -> NCFData:
    """The preprocessed sets of DATA_DIR/ratings.csv; cached beside it after the first load.

    Like the preprocessed tensors MLPerf's NCF implementations keep: at ml-20m's size parsing and
    preprocessing take 38 s on 2 cores, reading the cache 2 s. The cache is keyed by the
    file's size and modification time and by the preprocessing constants, so an edited
    ratings.csv is preprocessed again; where the folder is read-only, nothing is cached."""
    path = ratings_path(data_dir)
    stat = path.stat()
    key = f"v{CACHE_VERSION}-{stat.st_size}-{stat.st_mtime_ns}-{MIN_RATINGS}-{EVAL_NEGATIVES}-{EVAL_SET_SEED}"
    cache = path.parent / CACHE / f"ncf-{key}.npz"  # a generated folder counts it as the harness's own
    if cache.is_file():
        try:
            with open(cache, "rb") as stored, np.load(stored) as z:  # np.load leaves its own file open on a BadZipFile
                data = NCFData(int(z["n_users"]), int(z["n_items"]), *(z[f].astype(np.int64) for f in _CACHED))
                rows = int(z["rows"])
            why = _unfit(data)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as err:  # a cut or flipped .npz is a BadZipFile
            why = f"it cannot be read ({type(err).__name__})"
        if why is None:
            _log_read(path, rows, data, cached=True)
            return data
        log.warning("%s is not %s preprocessed (%s): preprocessing it again", cache, path, why)  # rebuilt below
    users, items, timestamps = read_ratings(path)
    data = preprocess(users, items, timestamps)
    _log_read(path, len(users), data, cached=False)
    tmp = None
    try:
        cache.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, suffix=".npz")
        with os.fdopen(fd, "wb") as f:  # int32 halves the file: ids and counts fit
            np.savez(f, n_users=data.n_users, n_items=data.n_items, rows=len(users),
                     **{name: getattr(data, name).astype(np.int32) for name in _CACHED})
        os.replace(tmp, cache)
        for stale in cache.parent.glob("ncf-*.npz"):  # an earlier version of the file: 700 MB at ml-20m's size
            if stale != cache:
                stale.unlink(missing_ok=True)
    except OSError:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)  # a full disk: no half-written cache left behind
        # a read-only dataset folder: preprocess on every load
    return data


def _unfit(data: NCFData) -> Optional[str]:
    """Why cached arrays cannot be the sets preprocess() made (a length that differs, an id outside the
    counts), or None: a copied or edited cache must not reach the embeddings as an IndexError."""
    n_users, n_items = data.n_users, data.n_items
    if n_users < 1 or n_items < 1:
        return f"{n_users} users and {n_items} items"
    train = (data.train_users.size,)
    shapes = {"train_users": train, "train_items": train, "test_items": (n_users,), "user_ids": (n_users,),
              "item_ids": (n_items,), "test_negatives": (n_users, EVAL_NEGATIVES)}
    for name, shape in shapes.items():
        if getattr(data, name).shape != shape:
            return f"{name} has shape {getattr(data, name).shape}, not {shape}"
    for name, count in (("train_users", n_users), ("train_items", n_items), ("test_items", n_items),
                        ("test_negatives", n_items)):
        ids = getattr(data, name)
        if ids.size and (ids.min() < 0 or ids.max() >= count):
            return f"{name} holds ids outside 0..{count - 1}"
    return None


def _log_read(path: Path, rows: int, data: NCFData, cached: bool) -> None:
    """What was read, in the run's log: a file cut short shows as too few rows."""
    log.info("%s: %s rating rows%s -> %s", path, f"{rows:,}", " (preprocessed before, cached)" if cached else "",
             describe(data))


_CACHED = ("train_users", "train_items", "test_items", "test_negatives", "user_ids", "item_ids")


def sample_train_negatives(
    users: torch.Tensor,
    positive_keys: torch.Tensor,
    n_items: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """One uniformly drawn item per entry of `users` that is not a training positive of that user.

    Training negatives may include a user's held-out test item, as in the reference: the
    training side must not know which item is held out.
    """
    items = torch.randint(0, n_items, users.shape, generator=generator, device=users.device)
    todo = torch.arange(users.numel(), device=users.device)
    while todo.numel():
        keys = users[todo] * n_items + items[todo]
        pos = torch.searchsorted(positive_keys, keys).clamp_(max=positive_keys.numel() - 1)
        clash = positive_keys[pos] == keys
        todo = todo[clash]
        # rejection sampling: redraw only the clashes until none is left
        items[todo] = torch.randint(
            0, n_items, todo.shape, generator=generator, device=users.device
        )
    return items


def describe(data: NCFData) -> str:
    return (
        f"{data.n_users} users, {data.n_items} items, {data.n_train} training positives, "
        f"{data.n_users} test users x {data.test_negatives.shape[1]} negatives"
    )


if __name__ == "__main__":
    describe_command("python -m reference_models.ncf.data PATH/TO/ml-20m", lambda path: describe(load(path)))
