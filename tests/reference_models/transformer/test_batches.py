"""The Transformer's training batches: padded with one gather, and on a GPU collated in DataLoader
workers, they are the very batches the training thread made before, epoch by epoch, on every rank."""
from __future__ import annotations

from typing import Iterator, Optional

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from harness.config import compose
from harness.interface.corpus import Corpus
from harness.run.build import context_for
from harness.run.world import World
from reference_models.transformer import data as wmt
from reference_models.transformer.benchmark import TransformerBenchmark, prepare

COLLATE_WORKERS = 2  # model.collate_workers of a GPU run that pads in worker processes
from reference_models.transformer.tokenizer import PAD_ID

Listed = tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], int]


def _listed_collate(src: Corpus, tgt: Corpus, idx: np.ndarray) -> Listed:
    """The collation as it was written first: a Python loop over the batch's sentences, the lengths
    from Corpus.lengths."""
    src_t, tgt_t = wmt.pad([src[int(i)] for i in idx]), wmt.pad([tgt[int(i)] for i in idx])
    lengths = src.lengths[idx]
    src_pad = None if lengths.min() == src_t.shape[1] else src_t == PAD_ID
    return src_t, tgt_t, src_pad, int(lengths.sum() + tgt.lengths[idx].sum())


def _listed_train_batches(bench: TransformerBenchmark, epoch: int) -> Iterator[Listed]:
    """train_batches as it was: the rank's batches collated one after the other in the training thread."""
    assert bench.data is not None
    hp, world = bench.hp, bench.world_size
    batches = wmt.epoch_batches(bench.buckets, hp.max_length, hp.batch_size, bench.shared_seed + epoch)
    for idx in batches[bench.rank: bench.steps_per_epoch() * world: world]:
        yield _listed_collate(bench.data.train_src, bench.data.train_tgt, idx)


def _assert_same(batch: wmt.Batch, listed: Listed) -> None:
    src, tgt, src_pad, tokens = listed
    assert batch.tokens == tokens and type(batch.tokens) is int
    for mine, theirs in ((batch.src, src), (batch.tgt, tgt)):
        assert mine.dtype == theirs.dtype == torch.int64 and torch.equal(mine, theirs)
    assert (batch.src_pad is None) == (src_pad is None)
    if src_pad is not None:
        assert batch.src_pad is not None and batch.src_pad.dtype == torch.bool and torch.equal(batch.src_pad, src_pad)


@pytest.fixture(scope="module")
def debug_cfg(tmp_path_factory):
    cfg = compose(["model=transformer", "+debug=transformer", "seed=1", "device=cpu",
                   f"data_root={tmp_path_factory.mktemp('data')}"])
    OmegaConf.resolve(cfg)
    return cfg, prepare(cfg)


def _bench(debug_cfg, rank: int, world: int) -> TransformerBenchmark:
    cfg, path = debug_cfg
    where = World(rank=rank, local_rank=rank, world_size=world, local_world_size=world, node_rank=0, nodes=1,
                  source="elastic")
    return TransformerBenchmark(context_for(cfg, data_dir=path, world=where, device=torch.device("cpu")))


def test_gathered_padding_is_the_looped_padding(debug_cfg):
    d = wmt.load(debug_cfg[1], 256)
    rng = np.random.default_rng(3)
    longest = np.flatnonzero(d.train_src.lengths == d.train_src.lengths.max())[:3]  # no source padded: no mask
    assert wmt.collate(d.train_src, d.train_tgt, longest).src_pad is None
    for idx in [longest, rng.choice(len(d.train_src), 1)] + [rng.choice(len(d.train_src), n, replace=False)
                                                             for n in (2, 7, 64, 300)]:
        _assert_same(wmt.collate(d.train_src, d.train_tgt, idx), _listed_collate(d.train_src, d.train_tgt, idx))


@pytest.mark.parametrize("rank, world", [(0, 1), (0, 2), (1, 2)])
def test_every_epochs_batches_are_the_training_threads_of_before(debug_cfg, rank, world):
    """On a CPU the batches are collated in the training thread (as the embedded default was timed);
    on a GPU in DataLoader workers: either way, epoch after epoch, the batches and their order are
    what train_batches made before (what the golden losses and calibrated targets were trained on)."""
    bench = _bench(debug_cfg, rank, world)
    assert bench.collate_workers == 0  # a CPU run collates inline
    for workers in (0, COLLATE_WORKERS):  # the CPU's path, then the GPU's workers (without pinning here)
        bench.collate_workers = workers
        for epoch in (1, 2, 3):
            ours, before = list(bench.train_batches(epoch)), list(_listed_train_batches(bench, epoch))
            assert len(ours) == len(before) == bench.steps_per_epoch() > 2
            for batch, listed in zip(ours, before):
                _assert_same(batch, listed)
    if world == 2:  # the ranks take different batches of one order
        other = _bench(debug_cfg, 1 - rank, world)
        assert not torch.equal(next(iter(bench.train_batches(1))).src, next(iter(other.train_batches(1))).src)


def test_the_workers_serve_every_epoch_and_an_epoch_cut_short_leaves_nothing_behind(debug_cfg):
    """One DataLoader and the same worker processes for every epoch (no restart between epochs); an
    epoch left after a few batches (a warm-up, a throughput window) does not leak its batches in
    flight into the next one; a generator of an earlier epoch advanced again is refused."""
    bench = _bench(debug_cfg, 1, 2)
    bench.collate_workers = COLLATE_WORKERS
    first = bench.train_batches(1)
    for batch, listed in zip([next(first), next(first)], _listed_train_batches(bench, 1)):
        _assert_same(batch, listed)
    loader = bench._loader
    assert loader is not None
    pids = [w.pid for w in loader._iterator._workers]  # type: ignore[union-attr]  # the running worker processes
    for epoch in (2, 1, 3):
        ours = list(bench.train_batches(epoch))
        assert len(ours) == bench.steps_per_epoch()
        for batch, listed in zip(ours, _listed_train_batches(bench, epoch)):
            _assert_same(batch, listed)
    assert bench._loader is loader and [w.pid for w in loader._iterator._workers] == pids  # type: ignore[union-attr]
    stale = bench.train_batches(4)
    next(stale)
    later = bench.train_batches(5)
    _assert_same(next(later), next(_listed_train_batches(bench, 5)))
    for old in (stale, first):  # two earlier epochs' generators, each left mid-epoch
        with pytest.raises(RuntimeError, match="batches were taken after another epoch's had started"):
            next(old)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinned memory needs a CUDA device")
def test_the_loaders_pin_thread_pins_every_tensor_of_a_batch(debug_cfg):
    d = wmt.load(debug_cfg[1], 256)
    idx = np.arange(40)
    batch = wmt.collate(d.train_src, d.train_tgt, idx)
    assert batch.src_pad is not None
    pinned = torch.utils.data._utils.pin_memory.pin_memory(batch)  # what the DataLoader's pin thread calls
    assert all(t.is_pinned() for t in (pinned.src, pinned.tgt, pinned.src_pad))
    _assert_same(pinned, _listed_collate(d.train_src, d.train_tgt, idx))
