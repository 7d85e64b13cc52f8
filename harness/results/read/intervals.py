"""Throughput derived from a log's own timing, for logs that carry no tracked_stats (official v0.5-v0.7).

Samples per second of training: the samples of an epoch (v0.7's `train_samples`, v0.5's per-epoch
`input_size`) times the epochs timed, over the seconds those epochs took, evaluation excluded:

- `epoch_start` .. `epoch_stop` of each epoch (v0.6 on), a stop that counts the epochs completed (MosaicML's
  v2.0 logs) closing the epoch before its number;
- else `block_start` .. `block_stop` less the evaluations inside (`eval_start` .. `eval_stop`),
  counting `epoch_count` epochs per block;
- v0.5: `train_epoch: N` .. the next `eval_start`, `train_epoch` or `run_stop`.

Blocks that time less than half of the run (evaluations excluded) do not time training: some v0.7 logs
(Google's TPU logs) open a block around each evaluation and train between blocks. Their training time is
then the whole timed run less its evaluations.

BERT has no epochs: its v0.7 logs write `train_samples` as the run's total (the samples trained, logged
once at the end, in a log of one epoch that spans the run; or the samples that the step budget allows, in a
log whose "epochs" are optimizer steps). A one-epoch BERT log trained `train_samples` samples; a log of
many steps trained steps x `global_batch_size`.

A `train_samples` that is not the benchmark's epoch (a count of steps, or the run's step budget) is read by
harness.results.read.trainsets.epoch_samples.

Blocks that carry `samples_count` at both ends (stable diffusion from v4.0 on, Llama 2 70B LoRA and the
benchmarks that followed it: the samples trained so far) trained (stop - start) samples, or, where the stop
repeats the start (mlperf_common's callbacks, NVIDIA's from v5.0: a block's first sample, or in v5.1's Llama 3.1
8B its size), from that count (or the last evaluation's, where higher) to the next block's or evaluation's; a
benchmark counted in samples whose blocks count none has no
figure (its blocks are no epochs of `train_samples`: read so, Llama 3.1 405B made 3,059 samples/s a GB200,
for 0.09); blocks that carry
`step_num` at both ends (stable diffusion's `training_step` blocks of v3.1, 100 optimizer steps each) trained
(stop step - start step) x `global_batch_size` samples, whatever `train_samples` says (the dataset, of which a
run trains a part). Such blocks, where a log has them, time its training; blocks of neither (validation) are
left out.

GPT-3's logs count tokens in every epoch number (a block's `epoch_count` is 50,331,648 tokens, `train_samples`
the run's tokens, and some logs open one block for the whole run): its figure is tokens per second, the tokens
of its last evaluation's `epoch_num` (trained since run_start, from the checkpoint) over the time to that
evaluation less the evaluations before it. A log in which no epoch or block closes is read the same way, in
what its epoch numbers count (official.convergence_unit): DLRM-DCNv2's runs converge inside their first epoch
(`epoch_start` alone, evaluations at fractions of an epoch: x `train_samples`, from the `epoch_start`'s number).
Whole epoch numbers are not read so: whether a log counts them from 0 or from 1, it does not say. A benchmark whose epoch numbers
count samples (BERT from v1.0 on) is read so wherever its evaluations' epoch numbers are sample counts (at least
SAMPLE_COUNT global batches): its blocks are no epochs (Graphcore's v1.0 BERT logs a block of 175,000 samples as
`epoch_count: 1` and no `train_samples`), and some logs never close their one epoch (tinycorp's v4.1).

Where the log counts no samples (v0.6 GNMT, v0.5 NCF) the figure is epochs per second: proportional to
samples per second between two systems that train the same dataset, so its ratios are the same.
Only the timed region counts (run_start .. run_stop).
"""
from __future__ import annotations

from typing import Optional, Sequence

from harness.results.read import v05 as v05_rules
from harness.results.read.formats import Record
from harness.results.read.official import SAMPLES_BENCHMARKS, convergence_unit
from harness.results.read.trainsets import epoch_samples


SAMPLES_UNIT, EPOCHS_UNIT, TOKENS_UNIT = "samples/s", "epochs/s", "tokens/s"
# a last evaluation's epoch_num this many global batches or more is a sample count: BERT trains 1-4 M samples,
# while v0.7's logs counted epochs (1) or optimizer steps (Google: 978 at a batch of 3,072) in it
SAMPLE_COUNT = 100


def derived_throughput(records: Sequence[Record], v05: bool) -> tuple[Optional[float], Optional[str]]:
    """(throughput, unit), or (None, None) when the log times no epoch."""
    start = next((r.t for r in records if r.key == "run_start"), None)
    stop = next((r.t for r in records if r.key == "run_stop"), None)
    timed = [r for r in records if (start is None or r.t >= start) and (stop is None or r.t <= stop)]
    benchmark = _value(records, "submission_benchmark")
    counts = convergence_unit(benchmark if isinstance(benchmark, str) else None, None)  # what epoch_num counts
    if counts == "tokens":
        return _progress(timed, start, 1.0, TOKENS_UNIT)
    steps_samples, steps_seconds = _step_blocks(timed, _value(records, "global_batch_size"))
    if steps_samples and steps_seconds > 0:
        return steps_samples / steps_seconds, SAMPLES_UNIT
    if benchmark in SAMPLES_BENCHMARKS:
        return None, None
    batch = _value(records, "global_batch_size")
    if counts == "samples" and _positive(batch) and _to_last_evaluation(timed, start)[0] >= SAMPLE_COUNT * batch:
        return _progress(timed, start, 1.0, SAMPLES_UNIT)  # evaluations at sample counts (BERT from v1.0)
    if v05:
        epochs, seconds, samples = v05_rules.timed_epochs(timed, start, stop)
    else:
        epochs, seconds = _epochs(timed)
        if not epochs:
            epochs, seconds = _blocks(timed)
            seconds = max(seconds, _training_span(timed, start, stop, seconds))
        samples = _samples(records, epochs)
    if not v05 and (not epochs or seconds <= 0):  # no epoch or block closes: the evaluations' epoch numbers
        if counts == "samples":
            return _progress(timed, start, 1.0, SAMPLES_UNIT)
        last = _to_last_evaluation(timed, start)[0]
        if last == int(last):  # whole epochs, from 0 or from 1: the log does not say which
            return None, None
        # the epoch_start's number where the evaluations count on from it (Google's 1.05 after epoch_start 1); R-GAT's
        # logs open epoch 1 and evaluate at 0.05 .. 0.85, counted from 0
        origin = _positive_or_none(next((r.meta.get("epoch_num") for r in timed if r.key == "epoch_start"), 0)) or 0.0
        per_epoch = _samples(records, 1)
        return _progress(timed, start, per_epoch or 1.0, SAMPLES_UNIT if per_epoch else EPOCHS_UNIT,
                         origin if last > origin else 0.0)
    if not epochs or seconds <= 0:
        return None, None
    if samples:
        return samples / seconds, SAMPLES_UNIT
    return epochs / seconds, EPOCHS_UNIT


def _progress(records: Sequence[Record], start: Optional[float], per: float, unit: str, origin: float = 0.0
              ) -> tuple[Optional[float], Optional[str]]:
    """Throughput from the last evaluation's epoch_num less `origin` (x `per`: the samples of an epoch
    where it counts epochs) over the training seconds before it; (None, None) where the log gives neither."""
    last, seconds = _to_last_evaluation(records, start)
    trained = last - origin
    return (trained * per / seconds, unit) if trained > 0 and seconds > 0 else (None, None)


def _value(records: Sequence[Record], key: str):
    return next((r.value for r in records if r.key == key), None)


def _samples(records: Sequence[Record], epochs: float) -> Optional[float]:
    """The samples that `epochs` timed epochs trained on, or None where the log counts none."""
    per_epoch = _value(records, "train_samples")
    if not _positive(per_epoch):
        return None
    benchmark = _value(records, "submission_benchmark")
    if benchmark != "bert":
        return epoch_samples(benchmark, per_epoch, _positive_or_none(_value(records, "global_batch_size"))) * epochs
    if epochs == 1:
        return float(per_epoch)
    batch = _value(records, "global_batch_size")
    if _positive(batch) and epochs * batch <= 2 * per_epoch:  # steps: a budget of steps x batch
        return float(epochs) * batch
    return float(epochs) if epochs >= per_epoch / 2 else None  # epochs counted in samples (v1.0 on)


def _training_span(records: Sequence[Record], start: Optional[float], stop: Optional[float], blocks: float
                   ) -> float:
    """The timed run less its evaluations, in seconds, where the blocks time less than half of it (blocks
    around evaluations, training between them); else 0."""
    if start is None or stop is None:
        return 0.0
    evals, opened = 0.0, None
    for r in records:
        if r.key == "eval_start":
            opened = r.t
        elif r.key == "eval_stop" and opened is not None:
            evals += (r.t - opened) / 1000.0
            opened = None
    span = (stop - start) / 1000.0 - evals
    return span if blocks < span / 2 else 0.0


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def _positive_or_none(x) -> Optional[float]:
    return float(x) if _positive(x) else None


def _step_blocks(records: Sequence[Record], batch) -> tuple[float, float]:
    """(samples, seconds) of the blocks that count samples (`samples_count` at both ends) or optimizer steps
    (`step_num` at both ends, with the log's global batch), evaluations inside them excluded; (0, 0) where
    there are none."""
    samples, seconds = 0.0, 0.0
    begun: Optional[Record] = None
    in_eval: Optional[float] = None
    eval_t = 0.0
    reached = 0  # the highest samples_count an evaluation (or run_stop) has given so far
    named: Optional[tuple[int, float]] = None  # a block whose ends repeat one count: (where it began, its seconds)
    for r in records:
        found = r.meta.get("samples_count")
        count: Optional[int] = found if isinstance(found, int) and not isinstance(found, bool) else None
        if count is not None and named is not None and count > named[0] and r.key.startswith(("block_start", "eval_")):
            samples, seconds, named = samples + count - named[0], seconds + named[1], None
        if count is not None and (r.key.startswith("eval_") or r.key == "run_stop"):
            reached = max(reached, count)
        if r.key == "block_start":
            begun, eval_t = r, 0.0
        elif r.key == "eval_start" and begun is not None:
            in_eval = r.t
        elif r.key == "eval_stop" and in_eval is not None:
            eval_t += (r.t - in_eval) / 1000.0
            in_eval = None
        elif r.key == "block_stop" and begun is not None:
            trained = _span(begun, r, "samples_count")
            steps = _span(begun, r, "step_num")
            if trained is None and steps is not None and _positive(batch):
                trained = steps * batch
            if trained is not None and trained > 0:
                samples += trained
                seconds += (r.t - begun.t) / 1000.0 - eval_t
            elif trained == 0 and steps is None:  # from its count (or the last evaluation's) to the next count
                named = (max(begun.meta["samples_count"], reached), (r.t - begun.t) / 1000.0 - eval_t)
            begun = None
    return samples, seconds


def _span(begun: Record, ended: Record, key: str) -> Optional[int]:
    """ended's count less begun's, where both carry `key` as a count (samples_count, step_num)."""
    first, last = begun.meta.get(key), ended.meta.get(key)
    if isinstance(first, int) and isinstance(last, int) and not isinstance(first, bool) and not isinstance(last, bool):
        return last - first if first >= 0 else None
    return None


def _to_last_evaluation(records: Sequence[Record], start: Optional[float]) -> tuple[float, float]:
    """(what the last evaluation's epoch_num counts, the seconds from run_start to that evaluation less the
    evaluations before it); (0, 0) without an evaluation or run_start."""
    last = next((r for r in reversed(records) if r.key == "eval_accuracy" and _positive(r.meta.get("epoch_num"))),
                None)
    if last is None or start is None:
        return 0.0, 0.0
    ends, evals, opened = last.t, 0.0, None
    for r in records:
        if r.key == "eval_start":
            opened = r.t
            if r.meta.get("epoch_num") == last.meta["epoch_num"]:
                ends = r.t  # the last evaluation starts here: its own time is not training
                break
        elif r.key == "eval_stop" and opened is not None:
            evals += (r.t - opened) / 1000.0
            opened = None
    return float(last.meta["epoch_num"]), (ends - start) / 1000.0 - evals


def _epochs(records: Sequence[Record]) -> tuple[int, float]:
    """(epochs, seconds) of the closed epochs. An epoch_stop closes the epoch its epoch_num opened. Where none
    does and each names the epoch after one still open (MosaicML's v2.0 Composer logs: start 0, stop 1,
    start 1, stop 2: a stop counts the epochs completed), a stop closes that one; two such epochs at least, as
    one spanning the run (Dell's v1.0 DLRM: start 1, stop 2 at run_stop) times its evaluations too."""
    count, seconds = _closed(records, 0)
    if not count:
        shifted = _closed(records, 1)
        if shifted[0] >= 2:
            return shifted
    return count, seconds


def _closed(records: Sequence[Record], shift: int) -> tuple[int, float]:
    open_at: dict = {}
    count, seconds = 0, 0.0
    for r in records:
        epoch = r.meta.get("epoch_num")
        if r.key == "epoch_start":
            open_at[epoch] = r.t
        elif r.key == "epoch_stop":
            opened = epoch - shift if shift and isinstance(epoch, int) and not isinstance(epoch, bool) else epoch
            if opened in open_at:
                seconds += (r.t - open_at.pop(opened)) / 1000.0
                count += 1
    return count, seconds


def _blocks(records: Sequence[Record]) -> tuple[float, float]:
    """(epochs, seconds) of the closed blocks, evaluations inside them excluded. A block trains its
    `epoch_count` epochs, or fewer where the next block starts sooner: Google's v1.0 DLRM logs give every
    block `epoch_count: 1` while their `first_epoch_num` steps by 0.05 (an evaluation every 0.05 epochs)."""
    closed: list[tuple[int, float]] = []  # (the block's place among the blocks begun, its seconds)
    firsts: list[Optional[float]] = []  # each begun block's first_epoch_num
    counts: list[float] = []  # ... and its epoch_count
    block_t: Optional[float] = None
    in_eval: Optional[float] = None
    eval_t = 0.0
    for r in records:
        if r.key == "block_start":
            n, first = r.meta.get("epoch_count"), r.meta.get("first_epoch_num")
            block_t, eval_t = r.t, 0.0
            counts.append(float(n) if n is not None and _positive(n) else 1.0)
            firsts.append(float(first) if isinstance(first, (int, float)) and not isinstance(first, bool) else None)
        elif r.key == "eval_start" and block_t is not None:
            in_eval = r.t
        elif r.key == "eval_stop" and in_eval is not None:
            eval_t += (r.t - in_eval) / 1000.0
            in_eval = None
        elif r.key == "block_stop" and block_t is not None:
            closed.append((len(counts) - 1, (r.t - block_t) / 1000.0 - eval_t))
            block_t = None
    spans = list(counts)
    for i in range(len(counts) - 1):
        a, b = firsts[i], firsts[i + 1]
        if a is not None and b is not None and 0 < b - a < counts[i]:
            spans[i] = b - a
            if i + 1 == len(counts) - 1:  # the last block, steps alike
                spans[i + 1] = min(counts[i + 1], b - a)
    return sum(spans[i] for i, _ in closed), sum(s for _, s in closed)
