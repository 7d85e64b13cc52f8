"""Small MLPerf result logs in the formats of newer rounds, generated here (no submitter's file is copied):
RetinaNet (`ssd` in v2.0-v4.1, `retinanet` from v5.0), stable diffusion with its offline FID and CLIP
evaluations (step_num in v3.1, samples_count from v4.0), and the submission tree around them
(`<org>/results/<system>/<benchmark>/result_<i>.txt`, `<org>/systems/<system>.json`, scaling.json).
Each log carries every key its round's closed-division rules require, so the official checker passes it
unless a test makes it fail."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Optional, Sequence

T0 = 1_700_000_000_000


def mllog(key: str, value=None, t: int = T0, event: str = "POINT_IN_TIME", **meta) -> str:
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t, "event_type": event, "key": key, "value": value,
                                     "metadata": {"file": "train.py", "lineno": 1, **meta}}) + "\n"


def _head(t: int, benchmark: str, platform: str, seed: int, hyper: dict) -> list[str]:
    lines = [mllog("cache_clear", True, t)]
    for key, value in (("submission_benchmark", benchmark), ("submission_org", "Org"),
                       ("submission_division", "closed"), ("submission_status", "onprem"),
                       ("submission_platform", platform)):
        lines.append(mllog(key, value, t))
    lines += [f"[{r}] " + mllog("init_start", None, t + 10 + r, "INTERVAL_START") for r in range(2)]  # two ranks
    lines.append(mllog("seed", seed, t + 20))
    lines += [mllog(k, v, t + 30) for k, v in hyper.items()]
    lines.append("framework chatter that is not a log record\n")
    lines.append(mllog("init_stop", None, t + 60_000, "INTERVAL_END"))
    lines.append(mllog("run_start", None, t + 60_001, "INTERVAL_START"))
    return lines


def retinanet_log(qualities: Sequence[float], *, benchmark: str = "ssd", status: str = "success", seed: int = 1,
                  platform: str = "1xSUBMISSION_PLATFORM_PLACEHOLDER", batch: int = 256, t0: int = T0,
                  epoch_ms: int = 120_000) -> str:
    """RetinaNet: one evaluation per epoch (epoch_num from 1), mAP as a fraction."""
    hyper = {"global_batch_size": batch, "opt_name": "adam", "opt_base_learning_rate": 0.0001,
             "opt_weight_decay": 0.0, "opt_learning_rate_warmup_epochs": 1, "opt_learning_rate_warmup_factor": 0.001,
             "gradient_accumulation_steps": 1, "train_samples": 1_170_301, "eval_samples": 24_781}
    lines = _head(t0, benchmark, platform, seed, hyper)
    now = t0 + 60_001
    for epoch, quality in enumerate(qualities, start=1):
        lines.append(mllog("epoch_start", None, now, "INTERVAL_START", epoch_num=epoch))
        now += epoch_ms
        lines.append(mllog("epoch_stop", None, now, "INTERVAL_END", epoch_num=epoch))
        lines.append(mllog("eval_start", None, now, "INTERVAL_START", epoch_num=epoch))
        now += 5_000
        lines.append(mllog("eval_accuracy", quality, now, epoch_num=epoch))
        lines.append(mllog("eval_stop", None, now, "INTERVAL_END", epoch_num=epoch))
    lines.append(mllog("run_stop", None, now + 1, "INTERVAL_END", status=status))
    return "".join(lines)


def stable_diffusion_log(scores: Sequence[tuple[float, float]], *, unit: str = "step_num", every: int = 250,
                         seed: int = 1, platform: str = "8xNVIDIA DGX H100", batch: int = 2048, t0: int = T0,
                         stop_after: Optional[int] = None) -> str:
    """Stable diffusion as NVIDIA's logs have it: training in blocks with checkpoints every `every` steps;
    the FID and CLIP of each checkpoint computed offline and logged after training, out of order; then the
    evaluation that converged and run_stop, stamped with the training's end (earlier than the lines
    before them). `unit` is step_num (v3.1) or samples_count (v4.0 on); `scores` holds (FID, CLIP) per
    checkpoint; training stops at checkpoint `stop_after` (default: the first that reaches the target)."""
    hyper = {"global_batch_size": batch, "opt_name": "adamw", "opt_adamw_beta_1": 0.9, "opt_adamw_beta_2": 0.999,
             "opt_adamw_epsilon": 1e-08, "opt_adamw_weight_decay": 0.01, "opt_base_learning_rate": 1.25e-7,
             "opt_learning_rate_warmup_steps": 1000, "gradient_accumulation_steps": 1, "train_samples": 6_513_144,
             "eval_samples": 30_000}
    lines = _head(t0, "stable_diffusion", platform, seed, hyper)
    reached = [i for i, (fid, clip) in enumerate(scores) if fid <= 90.0 and clip >= 0.15]
    last = stop_after if stop_after is not None else (reached[0] if reached else len(scores) - 1)
    count = (lambda i: (i + 1) * every) if unit == "step_num" else (lambda i: (i + 1) * every * batch)
    now = t0 + 60_001
    for i in range(last + 1):
        lines.append(mllog("block_start", "training_step", now, "INTERVAL_START", **{unit: count(i - 1) if i else 0}))
        now += 9_000
        lines.append(mllog("block_stop", "training_step", now, "INTERVAL_END", **{unit: count(i)}))
    end = now
    for i in range(last + 1):  # offline: each checkpoint's evaluation, after training
        now += 60_000
        lines.append(mllog("eval_start", None, now, "INTERVAL_START", **{unit: count(i)}))
        now += 70_000
        lines.append(mllog("eval_stop", None, now, "INTERVAL_END", **{unit: count(i)}))
    for metric, index in (("FID", 0), ("CLIP", 1)):
        for i in reversed(range(last + 1)):
            now += 3_000
            lines.append(mllog("eval_accuracy", scores[i][index], now, **{unit: count(i)}, metric=metric))
    for metric, index in (("FID", 0), ("CLIP", 1)):
        lines.append(mllog("eval_accuracy", scores[last][index], end, **{unit: count(last)}, metric=metric))
    reached_at_end = scores[last][0] <= 90.0 and scores[last][1] >= 0.15
    lines.append(mllog("run_stop", None, end, "INTERVAL_END", status="success" if reached_at_end else "aborted",
                       **{unit: count(last)}))
    return "".join(lines)


def system_json(name: str, nodes: int = 1, per_node: int = 8, division: str = "closed") -> str:
    return json.dumps({"submitter": "Org", "division": division, "status": "onprem", "system_name": name,
                       "number_of_nodes": str(nodes), "host_processors_per_node": "2",
                       "host_processor_model_name": "CPU", "host_processor_core_count": "56",
                       "accelerators_per_node": str(per_node), "accelerator_model_name": "NVIDIA H100-SXM5-80GB",
                       "framework": "PyTorch NVIDIA Release 23.09", "hw_notes": "", "sw_notes": ""})


def write_folder(root: Path, round_: str, system: str, benchmark: str, logs: Iterable[str],
                 scaling: Optional[float] = None, division: str = "closed", nodes: int = 1) -> Path:
    """<root>/training_results_<round>/Org/results/<system>/<benchmark>/result_<i>.txt, with the system's JSON."""
    org = root / f"training_results_{round_}" / "Org"
    folder = org / "results" / system / benchmark
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(logs):
        (folder / f"result_{i}.txt").write_text(text, encoding="latin-1")
    (org / "systems").mkdir(exist_ok=True)
    (org / "systems" / f"{system}.json").write_text(system_json(system, nodes=nodes, division=division))
    if scaling is not None:
        (folder / "scaling.json").write_text(json.dumps({"scaling_factor": scaling}))
    return folder
