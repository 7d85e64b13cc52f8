"""A DataLoader for models that read samples from files (images, COCO), the same way for all of them.

    loader = make_loader(dataset, ctx, batch_size=hp.batch_size, workers=hp.workers, shuffle=True)
    for batch in loader.epoch(epoch): ...

- Each rank reads its shard of a per-epoch permutation drawn from the run's shared seed
  (DistributedSampler; the same permutation on every rank, so the shards never overlap).
- groups=[a group id per sample]: every batch holds samples of one group (images of one aspect
  ratio: harness.interface.grouping, the MLPerf detection reference's rule), cut from the same
  per-epoch permutation; drop_last then says whether a group's short last batch is left out or kept.
- Each worker process seeds Python's and NumPy's generators from torch's seed for it, which the
  loader derives from this rank's seed and the worker id: augmentations differ between workers and
  ranks, and repeat exactly for the same run seed. Without workers, the main process's generators
  (seeded by the harness from the rank seed) are used.
- Pinned memory on CUDA (faster host-to-device copies), persistent workers (no re-spawn per epoch:
  each worker's generators run on across epochs, and batches go to workers in a fixed order).

    evaluation = make_shard_loader(val_set, ctx, batch_size=256, workers=hp.workers)

reads this rank's contiguous shard of an evaluation set in order (or the batches the model names:
`batches=`), every sample exactly once (a DistributedSampler pads shards to equal length, which
would count some samples twice), so that counts summed over ranks (gather.sum_over_ranks) equal
what one rank counts.

A sample that cannot be loaded ends the run with one line that names it, with or without worker
processes: each loader reads its dataset through NamedSamples, which turns any error of a sample
into a DataError naming what the dataset says the sample is (its `describe_sample(index)`: the
file, the annotation record) and what to do; and each loader's batches come through `named_errors`,
which takes the one line back out of the text DataLoader makes of a worker's exception ("Caught
DataError in DataLoader worker process 0. Original Traceback ..."). The worker's traceback goes to
the log file only (train.log), for a bug that is not the data's.
"""
from __future__ import annotations

import logging
import random
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from harness.interface.contract import DataError, RunContext
from harness.interface.grouping import GroupedBatchSampler
from harness.interface.sharding import shard_range
from harness.interface.workers import start_workers, stop_with_parent, worker_options

log = logging.getLogger("harness.loader")
FILE_ONLY = {"file_only": True}  # harness.observe.console's marker: the log file gets it, the console not
_WORKER_TEXT = "in DataLoader worker process"


def check_command(ctx: Optional[RunContext]) -> str:
    """The check-data command for this run's model and dataset, for a message that says what to do."""
    cfg = getattr(ctx, "cfg", None)
    try:
        model, dataset = str(cfg.model.name), str(cfg.dataset.name)  # type: ignore[union-attr]
    except Exception:  # a test's context without a config
        return "python -m harness.check_data model=<model> dataset=<dataset>"
    return f"python -m harness.check_data model={model} dataset={dataset}"


class NamedSamples(Dataset):
    """`dataset`, whose samples fail with a DataError that names them: a DataError of the dataset's
    own names its file already and gains the check-data command; any other error of a sample
    becomes one line with the sample's description, the error and what to do."""

    def __init__(self, dataset: Dataset, hint: str = ""):
        self.dataset, self.hint = dataset, hint

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def describe(self, index: int) -> str:
        describe = getattr(self.dataset, "describe_sample", None)
        if describe is None:
            return f"sample {index} of {type(self.dataset).__name__}"
        try:
            return str(describe(index))
        except Exception:
            return f"sample {index} of {type(self.dataset).__name__}"

    def __getitem__(self, index: int) -> Any:
        try:
            return self.dataset[index]
        except DataError as err:
            if not self.hint or "harness.check_data" in str(err):
                raise
            raise type(err)(f"{err} ({self.hint} lists every such problem)") from err
        except Exception as err:
            first = (str(err).strip().splitlines() or [""])[0]
            what = f"{type(err).__name__}: {first}" if first else type(err).__name__
            hint = f" ({self.hint} lists every such problem)" if self.hint else ""
            # `from err`: the log file keeps where it failed, for an error that is the code's, not the data's
            raise DataError(f"{self.describe(index)}: {what}: fix or replace it, or remove it from the "
                            f"dataset's list{hint}") from err


def worker_message(err: BaseException) -> Optional[str]:
    """The original one-line message of an exception DataLoader re-raised from a worker, or None
    when `err` did not come from a worker. DataLoader re-raises the worker's exception type with
    the whole worker traceback as its message; its last line is "<module>.<type>: <message>"."""
    text = str(err.args[0]) if err.args and isinstance(err.args[0], str) else str(err)
    if not text.startswith("Caught ") or _WORKER_TEXT not in text.splitlines()[0]:
        return None
    lines = [line for line in text.rstrip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    cls = type(err)
    for prefix in (f"{cls.__module__}.{cls.__qualname__}: ", f"{cls.__qualname__}: "):
        if last.startswith(prefix):
            return last[len(prefix):]
    return last


def named_errors(batches: Iterable[Any]) -> Iterator[Any]:
    """The batches; an exception from a loader worker comes out as its own one line (the same type
    where it can be rebuilt from a message), the worker's traceback to the log file alone. A worker
    that died without an exception (killed: out of memory, a crash in a decoder) is a DataError that
    says so and how to find the file."""
    it = start_workers(batches)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except Exception as err:
            message = worker_message(err)
            if message is None:
                died = isinstance(err, RuntimeError) and str(err).startswith("DataLoader worker (")
                # a worker that dies while handing over a batch breaks the connection it was sending on
                if died or isinstance(err, (ConnectionError, EOFError)):
                    what = str(err).splitlines()[0].rstrip(". ") if died else \
                        f"a DataLoader worker died while handing over a batch ({type(err).__name__})"
                    raise DataError(f"{what}: the machine may be out of memory, or a decoder crashed on a file; "
                                    "model.workers=0 reads in the training process and names the file, and "
                                    "python -m harness.check_data checks every file") from None
                raise
            log.error("a loader worker failed:\n%s", err, extra=FILE_ONLY)
            try:
                clean = type(err)(message)
            except Exception:
                clean = RuntimeError(message)
            raise clean from None
        yield batch


def seed_worker(worker_id: int) -> None:
    """DataLoader's worker_init_fn: torch seeded this worker from the loader's generator + worker id; and
    Ctrl-C and SIGTERM are the training process's to act on (`stop_with_parent`)."""
    stop_with_parent()
    seed = torch.initial_seed() % 2**32
    random.seed(seed)
    np.random.seed(seed)


class RankLoader:
    """This rank's DataLoader over a dataset, one `epoch(e)` iterator per epoch; with `groups`, batches
    of one group each (GroupedBatchSampler)."""

    def __init__(self, dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0, shuffle: bool = True,
                 drop_last: bool = True, collate: Optional[Callable[[list], Any]] = None, prefetch: int = 2,
                 groups: Optional[Sequence[int]] = None):
        dataset = NamedSamples(dataset, check_command(ctx))
        self.sampler: DistributedSampler | GroupedBatchSampler
        batching: dict[str, Any]
        if groups is None:
            self.sampler = DistributedSampler(dataset, num_replicas=ctx.world_size, rank=ctx.rank, shuffle=shuffle,
                                              seed=ctx.shared_seed, drop_last=drop_last)
            batching = {"batch_size": batch_size, "sampler": self.sampler, "drop_last": drop_last}
        else:
            if len(groups) != len(dataset):
                raise ValueError(f"{len(groups)} group ids for {len(dataset)} samples: one per sample")
            self.sampler = GroupedBatchSampler(groups, batch_size, rank=ctx.rank, world_size=ctx.world_size,
                                               seed=ctx.shared_seed, shuffle=shuffle, drop_last=drop_last)
            batching = {"batch_sampler": self.sampler}
        self.loader = DataLoader(
            dataset, **batching, num_workers=workers, collate_fn=collate,
            pin_memory=ctx.device.type == "cuda",
            **worker_options(workers, seed_worker),
            generator=torch.Generator().manual_seed(ctx.seed),  # the workers' base seed: per rank
            persistent_workers=workers > 0, prefetch_factor=prefetch if workers else None,
        )

    def __len__(self) -> int:
        return len(self.loader)

    def epoch(self, epoch: int) -> Iterator[Any]:
        """The batches of one epoch (1-based), in this epoch's order."""
        self.sampler.set_epoch(epoch)
        return named_errors(self.loader)

    def close(self) -> None:
        """Stop the persistent workers (and the pin thread) now, while the interpreter is whole.
        Left to the exit, DataLoader skips its own shutdown and leaves the workers to
        multiprocessing's, which a thread still waiting on them can outlast (a decode thread of
        vision.prefetch); a later epoch() starts new workers."""
        iterator = getattr(self.loader, "_iterator", None)  # the persistent workers' iterator, if started
        self.loader._iterator = None  # type: ignore[attr-defined]
        shutdown = getattr(iterator, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()


def make_loader(dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0, shuffle: bool = True,
                drop_last: bool = True, collate: Optional[Callable[[list], Any]] = None,
                groups: Optional[Sequence[int]] = None) -> RankLoader:
    """This rank's training loader (see the module docstring); groups: a group id per sample, for
    batches of one group each."""
    return RankLoader(dataset, ctx, batch_size=batch_size, workers=workers, shuffle=shuffle, drop_last=drop_last,
                      collate=collate, groups=groups)


class ShardLoader:
    """A DataLoader over this rank's evaluation samples whose errors name the sample (named_errors)."""

    def __init__(self, loader: DataLoader):
        self.loader = loader

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Any]:
        return named_errors(self.loader)


def make_shard_loader(dataset: Dataset, ctx: RunContext, *, batch_size: int, workers: int = 0,
                      collate: Optional[Callable[[list], Any]] = None, indices: Optional[Sequence[int]] = None,
                      persistent: bool = True, batches: Optional[Sequence[Sequence[int]]] = None) -> ShardLoader:
    """This rank's contiguous shard of `dataset`, in order, each sample once (for evaluation); or
    exactly `indices`, in order, where the model chooses its shard (whole batches of one-rank order);
    or exactly `batches` (lists of dataset indices), where the model also chooses what is batched
    together (images of one aspect ratio). persistent=False: workers for one pass (a loader made for
    one evaluation)."""
    named = NamedSamples(dataset, check_command(ctx))
    if batches is not None:
        return ShardLoader(DataLoader(named, batch_sampler=[list(b) for b in batches], num_workers=workers,
                                      collate_fn=collate, pin_memory=ctx.device.type == "cuda",
                                      **worker_options(workers, seed_worker),
                                      generator=torch.Generator().manual_seed(ctx.seed),
                                      persistent_workers=persistent and workers > 0))
    mine = shard_range(len(dataset), ctx.rank, ctx.world_size) if indices is None else indices  # type: ignore[arg-type]
    part = Subset(named, mine)
    return ShardLoader(DataLoader(part, batch_size=batch_size, shuffle=False, num_workers=workers, collate_fn=collate,
                                  pin_memory=ctx.device.type == "cuda", **worker_options(workers, seed_worker),
                                  generator=torch.Generator().manual_seed(ctx.seed),
                                  persistent_workers=persistent and workers > 0))
