"""Cost and energy per run, from prices the user gives and the NVML energy counter in result.json.

    python -m harness.report outputs/ --price "1xNVIDIA H200=3.50" --price CPU=0.05 --rank cost
    python -m harness.report A B --compare --price prices.yaml        # prices.yaml: {"NVIDIA H200": 3.5, T4: 0.35}

A price names groups by their platform (`8xNVIDIA DGX-1`, `1xCPU`: the report's platform column), their
system (a submission tree's system name) or their accelerator (`NVIDIA H200`, its chip `H200`, or a
whole word of its name: `A6000` for `NVIDIA RTX A6000`), matched without regard to case, in that order;
last, whole words of a system's name however spaced (`DGX A100` for `dgxa100_ngc20.06_pytorch`,
`DGX-1` for `dgx1_ngc20.06_pytorch`). A platform's or a system's price is per hour of the whole
system (a system of several nodes: name it whole, or price its accelerator); an accelerator's is per
accelerator-hour, times the GPU count (CPU ranks count as one each).

- cost per run = USD per hour x the group's time to train (its score, else the mean of its converged
  runs) / 60, with that time's 95% interval (harness.results.analysis.confidence);
- samples per dollar = mean throughput x 3,600 / USD per hour (the throughput's own unit: samples,
  tokens, epochs);
- energy per run = mean energy to train of the converged runs (result.json telemetry.energy_j: all
  GPUs of the run, run_start..run_stop), with its 95% interval.

Rows rank within each benchmark by time, cost or energy (`--rank`), lowest first. The table, its notes and
a comparison's cost in words: harness.results.report.decision.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.results.analysis.confidence import GroupConfidence, Interval
from harness.results.analysis.stats import GroupKey, GroupStats, accelerator_kind, platform_kind
from harness.results.read.summary import RunSummary

RANKS = ("time", "cost", "energy")
MAX_PRICE_FILE = 1_000_000  # bytes: a price list is a few lines


class PriceError(ValueError):
    """A --price that cannot be read; the message says what to give instead."""


def _price(text: Any, where: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise PriceError(f"{where}: {text!r} is not a price in USD per hour (a number such as 3.5)") from None
    if not math.isfinite(value) or value < 0:
        raise PriceError(f"{where}: {text!r} is not a price in USD per hour (a number, 0 or more)")
    return value


def _put(out: dict[str, float], key: str, value: float) -> None:
    """A name's price; the same name (without regard to case) priced again at another price is refused."""
    for old in [k for k in out if k.lower() == key.lower()]:
        if out[old] != value:
            raise PriceError(f"--price {key}: priced twice ({old}={out[old]:g} and {key}={value:g}): give each "
                             "platform, system or accelerator one price")
        del out[old]
    out[key] = value


def parse_prices(items: Sequence[str]) -> dict[str, float]:
    """--price values: PLATFORM=USD_PER_HOUR, or a YAML file mapping names to prices (optionally under
    `prices:`); names match without regard to case, and one name given two prices is a PriceError."""
    import yaml

    out: dict[str, float] = {}
    for item in items:
        path = Path(item)
        if path.is_file() or ("=" not in item and path.suffix in (".yaml", ".yml", ".json")):
            try:
                if path.stat().st_size > MAX_PRICE_FILE:
                    raise PriceError(f"--price {item}: over {MAX_PRICE_FILE:,} bytes, not a price list")
                data = yaml.safe_load(path.read_text())  # safe_load builds plain data only: nothing runs
            except OSError as err:
                raise PriceError(f"--price {item}: cannot be read ({err.strerror or err})") from None
            except yaml.YAMLError as err:
                raise PriceError(f"--price {item}: not YAML ({str(err).splitlines()[0]})") from None
            if isinstance(data, dict) and isinstance(data.get("prices"), dict):
                data = data["prices"]
            if not isinstance(data, dict):
                raise PriceError(f"--price {item}: give a mapping of platform (or accelerator) to USD per hour")
            for key, value in data.items():
                _put(out, str(key).strip(), _price(value, f"--price {item}: {key}"))
        elif "=" in item:
            key, value = item.rsplit("=", 1)
            if not key.strip():
                raise PriceError(f"--price {item!r}: name a platform, system or accelerator before '='")
            _put(out, key.strip(), _price(value, f"--price {key.strip()}"))
        else:
            raise PriceError(f"--price {item!r}: give PLATFORM=USD_PER_HOUR (e.g. --price '8xA100=32.8') or a YAML "
                             "file of them")
    return out


def price_for(key: GroupKey, runs: Sequence[RunSummary], prices: dict[str, float]) -> tuple[Optional[float], str]:
    """(USD per hour of the group's system, how it was priced) or (None, "")."""
    if not prices:
        return None, ""
    lower = {k.lower(): k for k in prices}
    whole = [key.platform] + sorted({r.system for r in runs if r.system})
    for name in whole:
        if name and name.lower() in lower:
            return prices[lower[name.lower()]], lower[name.lower()]
    count = max(key.world or 1, 1)
    for each in (key.accelerator, accelerator_kind(key.accelerator, key.platform), platform_kind(key.platform)):
        if each and each.lower() in lower:
            return prices[lower[each.lower()]] * count, f"{lower[each.lower()]} x {count}"
    # a name within the accelerator's, as a whole word: A6000 for NVIDIA RTX A6000; the longest wins
    name = (key.accelerator or "").lower()
    inside = [k for k in lower if name and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", name)]
    if inside:
        best = lower[max(inside, key=len)]
        return prices[best] * count, f"{best} x {count}"
    # a name of the system in other words: "DGX A100" for dgxa100_ngc20.06_pytorch, "DGX-1" for dgx1_...;
    # last, so that it never takes a price another rule gives (a harness platform's words are its accelerator's)
    tree = {key.platform.rsplit("/", 1)[-1]} if "/" in key.platform else set()
    for name in sorted({r.system for r in runs if r.system} | tree):
        spans = _word_spans(name)
        found = [k for k in lower if _squash(k) in spans]
        if found:
            best = lower[max(found, key=len)]
            return prices[best], f"{best} (system {name})"
    return None, ""


def _squash(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _word_spans(name: str) -> set[str]:
    """Every run of whole words of a system's name, squashed (lower case, letters and digits only)."""
    words = [w for w in re.split(r"[\s_/]+", name) if w]
    return {_squash("".join(words[i:j])) for i in range(len(words)) for j in range(i + 1, len(words) + 1)} - {""}


@dataclass(frozen=True)
class CostRow:
    key: GroupKey
    runs: int
    minutes: Optional[float]
    minutes_interval: Optional[Interval]
    usd_per_hour: Optional[float]
    priced_by: str
    cost: Optional[float]  # USD per run
    cost_interval: Optional[Interval]
    samples_per_usd: Optional[float]
    throughput_unit: Optional[str]
    energy_kj: Optional[float]
    energy_interval: Optional[Interval]  # kJ
    input_bound: bool
    rank: Optional[int] = None  # within its benchmark, by the report's rank_by
    side: str = ""  # A or B in a comparison
    void: bool = False  # MLPerf voids its score: `minutes` is its converged runs' mean, and it is not ranked


def _scaled(iv: Optional[Interval], k: float) -> Optional[Interval]:
    if iv is None:
        return None
    return replace(iv, low=None if iv.low is None else iv.low * k, high=None if iv.high is None else iv.high * k)


def cost_rows(stats: Sequence[GroupStats], groups: dict[GroupKey, list[RunSummary]],
              conf: dict[GroupKey, GroupConfidence], prices: dict[str, float], rank_by: str = "time",
              scores: Optional[dict[GroupKey, Any]] = None) -> list[CostRow]:
    """A row per group, ranked within its benchmark; a group whose score MLPerf voids (`scores`: the
    groups' Score) keeps its converged runs' figures but ranks after the scored ones, unranked."""
    rows = []
    for g in stats:
        c = conf.get(g.key)
        usd, how = price_for(g.key, groups.get(g.key, []), prices)
        minutes = c.minutes if c else None
        cost = usd * minutes / 60 if usd is not None and minutes is not None else None
        tput = c.throughput if c else None
        energy = c.energy_j / 1000 if c and c.energy_j is not None else None
        rows.append(CostRow(g.key, g.runs, minutes, c.interval if c else None, usd, how, cost,
                            _scaled(c.interval, usd / 60) if c and usd is not None else None,
                            tput * 3600 / usd if tput is not None and usd else None, g.throughput_unit, energy,
                            _scaled(c.energy_interval, 1 / 1000) if c else None, bool(c and c.input_bound),
                            void=scores is not None and g.key in scores and scores[g.key].minutes is None))
    return rank(rows, rank_by)


def _value(row: CostRow, rank_by: str) -> Optional[float]:
    return {"time": row.minutes, "cost": row.cost, "energy": row.energy_kj}[rank_by]


def rank(rows: Sequence[CostRow], rank_by: str) -> list[CostRow]:
    """Per benchmark, lowest first; rows without the figure, and void ones, last and unranked."""
    out: list[CostRow] = []
    for bench in dict.fromkeys(r.key.benchmark for r in rows):
        members = [r for r in rows if r.key.benchmark == bench]
        known = sorted((r for r in members if _value(r, rank_by) is not None and not r.void),
                       key=lambda r: _value(r, rank_by) or 0.0)
        out += [replace(r, rank=i + 1) for i, r in enumerate(known)]
        out += [replace(r, rank=None) for r in members if _value(r, rank_by) is None or r.void]
    return out


@dataclass(frozen=True)
class CostRatio:
    """A against B: what an hour costs and how fast each is; the words: harness.results.report.decision."""

    per_hour: float  # A's USD per hour / B's
    speedup: float  # A's speedup over B (time to train)
    speedup_interval: Optional[Interval]

    @property
    def per_run(self) -> float:
        return self.per_hour / self.speedup

    @property
    def per_run_interval(self) -> Optional[tuple[Optional[float], Optional[float]]]:
        """(low, high) of a run's cost ratio from the speedup's interval; None stands for 0 and unbounded."""
        if self.speedup_interval is None:
            return None
        lo, hi = self.speedup_interval.low, self.speedup_interval.high
        return (None if hi is None else self.per_hour / hi, None if not lo else self.per_hour / lo)


def compare_cost(a_usd: Optional[float], b_usd: Optional[float], speedup: Optional[float],
                 speedup_interval: Optional[Interval]) -> Optional[CostRatio]:
    """A's price per hour against B's beside A's speedup; None without both prices and the speedup."""
    if a_usd is None or b_usd is None or not b_usd or speedup is None:
        return None
    return CostRatio(a_usd / b_usd, speedup, speedup_interval)
