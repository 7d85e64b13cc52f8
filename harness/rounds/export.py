"""The round view as JSON: harness.report's `round` key (docs/report.md has the schema), null outside a
submission tree. Built from harness.results.report.export's conversion of records, with the words the
text prints (a score's note, a throughput's note, an accelerator pair's verdict) beside the numbers.

    python -m harness.report training_results_v3.1 --json round.json
"""
from __future__ import annotations

from typing import Any, Optional

from harness.results.analysis.speedups import Speedup
from harness.results.report.explain import family_text
from harness.results.report.export import plain
from harness.results.report.verdicts import describe, score_note
from harness.rounds.accelerators import AcceleratorPair
from harness.rounds.text import across_line, throughput_note
from harness.rounds.view import Entry, RoundView


def round_json(v: Optional[RoundView]) -> Optional[dict[str, Any]]:
    """The round view as JSON; None outside a submission tree."""
    if v is None:
        return None
    return {
        "benchmarks": v.benchmarks,
        "entries": [{_ENTRY_KEYS.get(k, k): _entry_text(e, k) if k in _ENTRY_KEYS else val
                     for k, val in plain(e).items() if k != "key"} for e in v.entries],
        "scaling": [_speedup(s) for s in v.scaling],
        "across_submitters": [across_line(a) for a in v.across],
        "accelerators": {"pairs": [_pair(p) for p in v.accelerators], "geomeans": [plain(m) for m in v.means]},
    }


_ENTRY_KEYS = {"score": "note", "implied_samples": "throughput_note"}  # a round entry's record -> the JSON's words


def _entry_text(e: Entry, field: str) -> Optional[str]:
    return score_note(e.score) if field == "score" else throughput_note(e)


def _speedup(s: Speedup) -> dict[str, Any]:
    iv = s.confidence.time_interval if s.confidence is not None else None
    return {"benchmark": s.benchmark, "system": s.system, "accelerators": s.world,
            "baseline_accelerators": s.baseline_world, "speedup": s.time_to_train,
            "interval": None if iv is None else plain(iv),
            "speedup_per_count_ratio": None if s.time_to_train is None else s.time_to_train / s.gpu_ratio,
            "family": None if s.family is None else family_text(s.family),
            "one_family": s.family is not None and s.family.vouched,
            "platforms": None if s.platforms is None else list(s.platforms),
            "verdict": None if s.confidence is None else s.confidence.verdict}


def _pair(p: AcceleratorPair) -> dict[str, Any]:
    """A pair's numbers and its verdict in words; its judgement's record is said by the words alone."""
    fields = {k: v for k, v in plain(p).items() if k != "judgement"}
    return {**fields, "text": "" if p.judgement is None else describe(p.judgement)}
