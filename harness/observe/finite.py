"""The non-finite-loss check: a loss that turns NaN or infinite on any rank ends the run as failed,
naming the step, the epoch, the loss term and the rank, within one check interval.

    python -m harness.train model=resnet seed=1 model.learning_rate=1e6    # status failed, the step named

Without a sync per step: each step's loss (and its named terms) is copied into a small buffer on the
device; every `every` steps, before each evaluation and at each epoch's end the buffer is checked
once, the verdict all-reduced (MAX) so that every rank stops at the same step, and, only when some
rank saw a bad value, every rank's first bad step is gathered so that all of them name the same one.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.distributed as dist

from harness.observe.hooks import EpochStats, Hook, StepDone

CHECK_EVERY = 100  # steps between checks: one device read and one tiny all-reduce per interval


class NonFiniteLoss(FloatingPointError):
    """The training loss went NaN or infinite; the message says where, in one line."""

    def __init__(self, step: int, epoch: int, term: str, value: float, rank: int, checked_at: int, every: int):
        self.step, self.epoch, self.term, self.value, self.rank = step, epoch, term, value, rank
        what = "the loss" if term == "loss" else f"loss term {term}"
        super().__init__(f"{what} is {value} at step {step} (epoch {epoch}) on rank {rank}; the run stopped at "
                         f"step {checked_at} (checked every {every} steps): lower the learning rate or check the data")


class FiniteLossCheck(Hook):
    def __init__(self, device: torch.device, rank: int = 0, every: int = CHECK_EVERY):
        self.device, self.rank, self.every = device, rank, every
        self._window: Optional[torch.Tensor] = None  # (every, 1 + terms): this interval's losses
        self._names: tuple[str, ...] = ("loss",)
        self._where: list[tuple[int, int]] = []  # (global step, epoch) of each row
        self._last_step = 0

    def after_step(self, done: StepDone) -> None:
        names = ("loss", *done.terms) if done.terms else ("loss",)
        if self._window is None or names != self._names:
            self.check()
            self._names = names
            self._window = torch.empty((self.every, len(names)), dtype=torch.float32, device=self.device)
        row = len(self._where)
        if done.terms:
            self._window[row].copy_(torch.stack([done.loss.float(), *(t.float() for t in done.terms.values())]))
        else:
            self._window[row, 0].copy_(done.loss)
        self._where.append((done.global_step, done.epoch))
        self._last_step = done.global_step
        if len(self._where) == self.every:
            self.check()

    def before_eval(self, epoch_num: float) -> None:
        self.check()

    def end_epoch(self, stats: EpochStats) -> None:
        self.check()

    def check(self) -> None:
        """Raise NonFiniteLoss on every rank if any rank's loss of this interval is not finite. Ranks
        step in lockstep, so they all come here with the same number of rows."""
        rows = len(self._where)
        if rows == 0 or self._window is None:
            return
        bad = ~torch.isfinite(self._window[:rows])
        flag = bad.any().to(torch.int32).reshape(1)
        if _distributed():
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # sync point: once per check interval
        if not flag.item():  # sync point: the verdict, once per check interval
            self._where.clear()
            return
        mine = self._first_bad(bad, rows)
        found = [mine]
        if _distributed():
            found = [None] * dist.get_world_size()
            dist.all_gather_object(found, mine)  # the run is ending: every rank learns where
        step, rank, term, value, epoch = min(f for f in found if f is not None)
        raise NonFiniteLoss(step, epoch, term, value, rank, self._last_step, self.every)

    def _first_bad(self, bad: torch.Tensor, rows: int) -> Optional[tuple[int, int, str, float, int]]:
        hits = bad.any(dim=1).nonzero()
        if hits.numel() == 0:
            return None
        i = int(hits[0])
        values = self._window[i].tolist()  # type: ignore[index]
        # a term names the cause better than their sum: the first bad term, else the loss itself
        col = next((c for c in range(1, len(values)) if not math.isfinite(values[c])), 0)
        step, epoch = self._where[i]
        return step, self.rank, self._names[col], values[col], epoch


def _distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
