"""When a model evaluates: every N epochs (with an optional offset), at listed epochs, or every N samples.

MLPerf groups the training between two evaluations into a block (block_start/block_stop). The loop
(harness/run/loop.py) asks this schedule, whatever its kind, for the block that opens where it stands
(`block_at`): its MLPerf metadata and the point that closes it, a sample count that falls inside an
epoch or the end of an epoch. Whatever the schedule, a run ends on an evaluation, so a run that ends
at its epoch cap ends on a quality it can be judged by.

- every N epochs, offset k: evaluations after epochs N-k, 2N-k, ... (MLPerf's ResNet runs used N=4,
  k=1: epochs 3, 7, 11, ...);
- listed epochs (SSD's reference evaluates at set epochs);
- every N samples (BERT, Llama 3.1 8B, DLRM-DCNv2): evaluations fall inside epochs, after the step that
  crosses each multiple of N training samples (all ranks together); every evaluation and block event
  carries the sample count as samples_count, the key the rulesets of the benchmarks MLPerf counts in
  samples require (closed_llama31_8b.yaml's eval_accuracy). epoch_num is what the benchmark's RCPs count
  (`epoch_samples`): the sample count, or, for a benchmark MLPerf counts in epochs (DLRM-DCNv2, whose
  reference evaluates every 1/20 epoch), the fraction of an epoch trained, samples / epoch_samples: the
  RCP checker reads epoch_num so, and 164,864 "epochs" passed its test whatever they were.

    python -c "from harness.interface.schedule import EvalSchedule as S; print(S(every_epochs=4, offset=1).blocks(12))"
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence


class ScheduleError(ValueError):
    """A schedule that cannot be followed; the message is one line."""


@dataclass(frozen=True)
class Block:
    """One MLPerf block: block_start's metadata and where its evaluation falls."""

    first: int  # first_epoch_num: the block's first epoch, or the samples trained before it
    count: int  # epoch_count: its epochs, or its samples
    at_samples: Optional[int] = None  # its evaluation falls inside an epoch once the run has trained this
    # many samples (all ranks); None: after an epoch that evaluates_after names


@dataclass(frozen=True)
class EvalSchedule:
    every_epochs: int = 1
    offset: int = 0
    epochs: tuple[int, ...] = ()
    every_samples: Optional[int] = None
    epoch_samples: Optional[int] = None  # by samples, for a benchmark counted in epochs: the samples of an epoch

    def __post_init__(self) -> None:
        if self.every_samples is not None:
            if self.every_samples < 1:
                raise ScheduleError(f"eval_every_samples={self.every_samples}: need at least 1")
            return
        if self.epochs:
            if any(e < 1 for e in self.epochs) or list(self.epochs) != sorted(set(self.epochs)):
                raise ScheduleError(f"eval_epochs={list(self.epochs)}: need increasing epoch numbers from 1")
            return
        if self.every_epochs < 1:
            raise ScheduleError(f"eval_every={self.every_epochs}: need at least 1")
        if not 0 <= self.offset < self.every_epochs:
            raise ScheduleError(f"eval_offset={self.offset}: need 0 <= offset < eval_every ({self.every_epochs})")

    @classmethod
    def of(cls, every: int = 1, offset: int = 0, epochs: Optional[Sequence[int]] = None,
           every_samples: Optional[int] = None, epoch_samples: Optional[int] = None) -> "EvalSchedule":
        return cls(int(every), int(offset), tuple(int(e) for e in epochs or ()), every_samples, epoch_samples)

    @property
    def by_samples(self) -> bool:
        return self.every_samples is not None

    def evaluates_after(self, epoch: int, max_epochs: int) -> bool:
        """Whether an evaluation follows `epoch` once it is closed (epoch schedules: the last epoch
        always; a schedule by samples evaluates inside epochs only)."""
        if self.by_samples:
            return False
        if epoch >= max_epochs:
            return True
        if self.epochs:
            return epoch in self.epochs
        return (epoch + self.offset) % self.every_epochs == 0

    def blocks(self, max_epochs: int) -> list[tuple[int, int]]:
        """(first epoch, epoch count) of each block up to max_epochs (epoch schedules; a sample
        schedule's blocks are spans of samples, which the loop opens as it goes)."""
        if self.by_samples:
            raise ScheduleError("a schedule by samples has no epoch blocks")
        out, first = [], 1
        for epoch in range(1, max_epochs + 1):
            if self.evaluates_after(epoch, max_epochs):
                out.append((first, epoch - first + 1))
                first = epoch + 1
        return out

    def block_at(self, epoch: int, samples: int, max_epochs: int) -> Block:
        """The block that opens before `epoch` (an epoch schedule: its first epoch) or after `samples`
        trained samples (all ranks: a schedule by samples)."""
        if self.every_samples is not None:
            return Block(samples, self.every_samples, samples + self.every_samples)
        return Block(epoch, dict(self.blocks(max_epochs))[epoch])

    def epoch_num(self, epoch: int, samples: int) -> int:
        """Where an evaluation falls: the epoch, or the samples trained (all ranks) under a schedule by
        samples (what the model's evaluate and the hooks get; `logged` is the log's epoch_num)."""
        return samples if self.by_samples else epoch

    def logged(self, position: float) -> float:
        """The log's epoch_num for a position (`epoch_num`): the epoch or the samples, or the fraction of
        an epoch where the benchmark is counted in epochs (`epoch_samples`)."""
        return position / self.epoch_samples if self.by_samples and self.epoch_samples else position

    def metadata(self, position: float) -> dict[str, float]:
        """An evaluation's MLPerf metadata: its epoch_num, and under a schedule by samples samples_count."""
        if not self.by_samples:
            return {"epoch_num": position}
        return {"epoch_num": self.logged(position), "samples_count": position}

    def block_metadata(self, block: Block, start: bool) -> dict[str, float]:
        """block_start's (start) or block_stop's metadata: first_epoch_num (and epoch_count at the start),
        and under a schedule by samples the samples trained before the block as samples_count."""
        out: dict[str, float] = {"first_epoch_num": self.logged(block.first)}
        if start:
            out["epoch_count"] = self.logged(block.count)
        return {**out, "samples_count": block.first} if self.by_samples else out

    def where(self, position: float, max_epochs: int) -> str:
        """Where an evaluation fell, for the console: "epoch 3/10", "samples 3,072" (and its epoch)."""
        if not self.by_samples:
            return f"epoch {position:g}/{max_epochs}"
        return f"samples {position:,.0f}" + (f" (epoch {self.logged(position):.3g})" if self.epoch_samples else "")

    def describe(self) -> str:
        if self.by_samples:
            return f"every {self.every_samples:,} samples"
        if self.epochs:
            return f"after epochs {', '.join(map(str, self.epochs))}"
        if self.offset:
            return f"every {self.every_epochs} epochs, offset {self.offset}"
        return "every epoch" if self.every_epochs == 1 else f"every {self.every_epochs} epochs"
