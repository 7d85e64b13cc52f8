"""NCF preprocessing as MLPerf defines it, on the generated data and on hand-made ratings."""
from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import torch

from reference_models.ncf import data as ncf_data
from reference_models.ncf.generate import GeneratorSpec, generate, write

SMALL = GeneratorSpec(users=300, items=1500, popularity=1.0, mean_ratings=25.0, seed=3)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("ncf")
    write(SMALL, out)
    return out, ncf_data.load(out)


def test_generator_writes_movielens_format(small):
    out, _ = small
    frame = pd.read_csv(out / "ratings.csv")
    assert list(frame.columns) == ["userId", "movieId", "rating", "timestamp"]
    assert set(np.unique(frame["rating"])) <= set(np.arange(0.5, 5.01, 0.5))
    assert frame.groupby("userId").size().min() >= 20
    assert (frame.sort_values(["userId", "movieId"]).index == frame.index).all()  # ml-20m's order
    assert frame["movieId"].max() > len(np.unique(frame["movieId"]))  # sparse ids, as in MovieLens


def test_generator_is_deterministic():
    a, b = generate(SMALL), generate(SMALL)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_held_out_item_is_the_latest_and_never_in_training(small):
    out, d = small
    frame = pd.read_csv(out / "ratings.csv")
    latest = frame.sort_values(["timestamp", "movieId"]).groupby("userId").tail(1).set_index("userId")["movieId"]
    assert np.array_equal(d.item_ids[d.test_items], latest.loc[d.user_ids].to_numpy())
    train = set(zip(d.train_users.tolist(), d.train_items.tolist()))
    assert not any((u, int(i)) in train for u, i in enumerate(d.test_items))
    assert d.n_train + d.n_users == len(frame)


def test_eval_negatives_are_999_distinct_non_positives(small):
    _, d = small
    assert d.test_negatives.shape == (d.n_users, 999)
    positives = {}
    for u, i in zip(d.train_users.tolist(), d.train_items.tolist()):
        positives.setdefault(u, set()).add(i)
    for u in range(d.n_users):
        row = d.test_negatives[u].tolist()
        assert len(set(row)) == 999
        assert not set(row) & (positives[u] | {int(d.test_items[u])})


def test_train_negatives_are_never_training_positives(small):
    _, d = small
    users = torch.from_numpy(d.train_users).repeat(4)
    keys = torch.sort(torch.from_numpy(d.train_users * d.n_items + d.train_items)).values
    items = ncf_data.sample_train_negatives(users, keys, d.n_items, torch.Generator().manual_seed(0))
    drawn = set(zip(users.tolist(), items.tolist()))
    assert not drawn & set(zip(d.train_users.tolist(), d.train_items.tolist()))
    assert len(set(items.tolist())) > 0.5 * d.n_items  # spread over the catalogue, not a few items


def test_repeated_ratings_collapse_and_small_users_are_dropped():
    users = np.array([1] * 21 + [2] * 19 + [1])
    items = np.array(list(range(21)) + list(range(19)) + [5])  # user 1 rates movie 5 twice
    times = np.arange(len(users))
    with pytest.raises(ncf_data.DatasetError, match="too few"):
        ncf_data.preprocess(users, items, times)  # 21 items cannot hold 999 negatives
    d = ncf_data.preprocess(users, items + 0, times, eval_negatives=0)
    assert d.n_users == 1 and d.user_ids.tolist() == [1]  # user 2 has only 19 ratings
    assert d.test_items.tolist() == [int(np.where(d.item_ids == 5)[0][0])]  # the re-rating is the latest
    assert d.n_train == 20


def test_missing_or_malformed_ratings_give_clear_errors(tmp_path):
    with pytest.raises(ncf_data.DatasetError, match="no ratings.csv in"):
        ncf_data.load(tmp_path)
    (tmp_path / "ratings.csv").write_text("user,item\n1,2\n")
    with pytest.raises(ncf_data.DatasetError, match="not a MovieLens ratings.csv"):
        ncf_data.load(tmp_path)


def test_the_embedded_dataset_is_the_one_its_target_was_calibrated_on():
    """The embedded HR@10 target was calibrated on exactly these ratings (docs/ncf.md): a change to
    the generator that changes them needs a new calibration, not just a new hash."""
    import hashlib

    users, movies, _, timestamps = generate(GeneratorSpec())
    digest = hashlib.sha256()
    for col in (users, movies, timestamps):
        digest.update(np.ascontiguousarray(col, dtype=np.int64).tobytes())
    assert len(users) == 119_451
    assert digest.hexdigest() == "cba16f420e20d3bdc8ebbe6e0f5b79c9afb2c3dbab306345a89d12130bf5b98c"


def test_the_file_does_not_depend_on_how_many_processes_draw_it(tmp_path):
    """Chunks draw from their own streams: one process or a pool writes the same bytes."""
    spec = GeneratorSpec(users=5000, items=1200, mean_ratings=22.0, seed=4)  # 3 chunks: a real pool
    write(spec, tmp_path / "one", workers=1)
    write(spec, tmp_path / "pool", workers=2)
    assert (tmp_path / "one" / "ratings.csv").read_bytes() == (tmp_path / "pool" / "ratings.csv").read_bytes()
    assert oct((tmp_path / "pool" / "ratings.csv").stat().st_mode & 0o777) == "0o644"


def test_fast_sorting_gives_exactly_what_lexsort_and_unique_give():
    rng = np.random.default_rng(0)
    for ids, times in [(rng.integers(1, 300, 5000) * 7, rng.integers(0, 50, 5000)),
                       (rng.integers(1, 300, 5000) * 10**12, rng.integers(0, 2**40, 5000))]:  # packing overflows
        codes, vocab = ncf_data._dense(ids)
        ref_vocab, ref_codes = np.unique(ids, return_inverse=True)
        assert np.array_equal(vocab, ref_vocab) and np.array_equal(codes, ref_codes)
        assert np.array_equal(ncf_data._order(codes, times), np.lexsort((times, codes)))


def test_preprocessed_data_is_cached_and_redone_when_the_file_changes(tmp_path):
    write(SMALL, tmp_path)
    first = ncf_data.load(tmp_path)
    caches = list((tmp_path / ".harness-cache").glob("ncf-*.npz"))
    assert len(caches) == 1
    again = ncf_data.load(tmp_path)
    for name in ncf_data._CACHED:
        assert np.array_equal(getattr(first, name), getattr(again, name))
    assert (again.n_users, again.n_items) == (first.n_users, first.n_items)

    ratings = tmp_path / "ratings.csv"
    lines = ratings.read_text().splitlines(keepends=True)
    ratings.write_text("".join(lines[:-40]))  # the last user loses ratings: a different dataset
    changed = ncf_data.load(tmp_path)
    assert changed.n_train != first.n_train
    assert len(list((tmp_path / ".harness-cache").glob("ncf-*.npz"))) == 1  # the stale one is gone


@pytest.mark.parametrize("damage", ["cut", "flipped"])
def test_a_damaged_cache_is_made_again(tmp_path, damage):
    # np.load raises zipfile.BadZipFile (no OSError nor ValueError) on a cut or flipped .npz: every run failed
    write(SMALL, tmp_path)
    first = ncf_data.load(tmp_path)
    (cache,) = (tmp_path / ".harness-cache").glob("ncf-*.npz")
    data = bytearray(cache.read_bytes())
    if damage == "cut":
        data = data[:1000]
    else:
        data[200] ^= 0xFF
    cache.write_bytes(bytes(data))
    again = ncf_data.load(tmp_path)
    assert all(np.array_equal(getattr(first, n), getattr(again, n)) for n in ncf_data._CACHED)
    assert ncf_data.load(tmp_path).n_train == first.n_train  # and the cache made again reads back


def test_a_script_read_from_standard_input_can_generate(tmp_path):
    """`python - <<EOF` has no main file for a spawned worker to re-import: the generator must
    draw in-process there instead of failing with a broken pool."""
    import subprocess
    import sys

    from tests.helpers import REPO

    script = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
              "from reference_models.ncf.generate import GeneratorSpec, write\n"
              f"write(GeneratorSpec(users=5000, items=1200, mean_ratings=22.0, seed=4), {str(tmp_path)!r}, workers=2)\n")
    proc = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ratings.csv").stat().st_size > 0


def _heavy_rater(items: int, heavy: int, others: int = 30) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """userId 1 rated movies 0..`heavy`-1 of `items`; userIds 2.. rated 20 each, from movie `heavy`
    on and around, so that every movie is rated by someone."""
    users = np.concatenate([np.full(heavy, 1), np.repeat(np.arange(2, others + 2), 20)])
    movies = np.concatenate([np.arange(heavy), (heavy + np.arange(others * 20)) % items])
    return users, movies, np.arange(len(users))


def test_a_user_who_rated_all_but_a_few_items_gets_negatives_as_the_reference_draws_them(caplog):
    """ratings.csv of 1,100 items where userId 1 rated 1,000: 100 items are left for its 999
    negatives. MLPerf's reference draws every user's with replacement; so does this, for that user,
    and says so in one line (before: the distinct draw doubled forever)."""
    users, movies, times = _heavy_rater(items=1100, heavy=1000)
    with caplog.at_level("WARNING", logger="reference_models.ncf.data"):
        d = ncf_data.preprocess(users, movies, times)
    u = int(np.where(d.user_ids == 1)[0][0])
    rated = set(d.train_items[d.train_users == u].tolist()) | {int(d.test_items[u])}
    row = d.test_negatives[u]
    assert d.test_negatives.shape == (d.n_users, 999) and not set(row.tolist()) & rated
    assert set(row.tolist()) == set(range(d.n_items)) - rated  # all 100 left, repeats among them
    assert [r.getMessage() for r in caplog.records] == [
        "1 user(s) rated more than 101 of the 1100 items (first: userId 1, 100 left): their 999 evaluation "
        "negatives are drawn from those left with replacement, as MLPerf's reference draws every user's"]
    others = [v for v in range(d.n_users) if v != u]
    assert all(len(set(d.test_negatives[v].tolist())) == 999 for v in others)  # everyone else: distinct


def test_a_user_who_rated_every_item_is_named_in_one_line():
    users, movies, times = _heavy_rater(items=1100, heavy=1100)
    with pytest.raises(ncf_data.DatasetError, match="^userId 1 rated all 1100 items: no item is left"):
        ncf_data.preprocess(users, movies, times)


def test_loading_real_data_logs_how_many_rows_were_read(tmp_path, caplog):
    """A ratings.csv cut short mid-file still parses: the log's row count is what shows it."""
    write(SMALL, tmp_path)
    rows = len(pd.read_csv(tmp_path / "ratings.csv"))
    with caplog.at_level("INFO", logger="reference_models.ncf.data"):
        d = ncf_data.load(tmp_path)
        ncf_data.load(tmp_path)  # from the cache: the same count
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"{tmp_path / 'ratings.csv'}: {rows:,} rating rows -> {ncf_data.describe(d)}",
                     f"{tmp_path / 'ratings.csv'}: {rows:,} rating rows (preprocessed before, cached) -> "
                     f"{ncf_data.describe(d)}"]


@pytest.mark.parametrize("fault", ["item id", "user id", "short"])
def test_a_cache_that_does_not_fit_its_counts_is_made_again_with_a_note(tmp_path, caplog, fault):
    """A whole .npz whose ids lie outside its counts (copied from another dataset, edited) stopped training
    with 'IndexError: index out of range in self'; it is preprocessed again, said in one line."""
    write(SMALL, tmp_path)
    first = ncf_data.load(tmp_path)
    (cache,) = (tmp_path / ".harness-cache").glob("ncf-*.npz")
    with np.load(cache) as z:
        arrays = dict(z)
    if fault == "item id":
        arrays["train_items"][5] = arrays["n_items"]
    elif fault == "user id":
        arrays["train_users"][0] = -1
    else:
        arrays["test_negatives"] = arrays["test_negatives"][:-1]
    with open(cache, "wb") as f:
        np.savez(f, **arrays)
    with caplog.at_level("WARNING", logger="reference_models.ncf.data"):
        again = ncf_data.load(tmp_path)
    why = {"item id": f"train_items holds ids outside 0..{first.n_items - 1}",
           "user id": f"train_users holds ids outside 0..{first.n_users - 1}",
           "short": f"test_negatives has shape {(first.n_users - 1, 999)}, not {(first.n_users, 999)}"}[fault]
    # the warnings alone: a test before this one in the process may have left the logger at INFO
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"{cache} is not {tmp_path / 'ratings.csv'} preprocessed ({why}): preprocessing it again"]
    assert all(np.array_equal(getattr(first, n), getattr(again, n)) for n in ncf_data._CACHED)
    caplog.clear()
    with caplog.at_level("WARNING", logger="reference_models.ncf.data"):
        ncf_data.load(tmp_path)  # the cache made again fits
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
