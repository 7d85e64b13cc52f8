"""What a model's quality is and when it has reached its target.

A quality value is one number (HR@10, BLEU, top-1) or a mapping of named numbers (Mask R-CNN's
{"BBOX": .., "SEGM": ..}); MLPerf logs either as eval_accuracy's value. Each model states its
direction (higher or lower is better: accuracy or perplexity) and its parts; "reached" means every
part is at or beyond its own target. Pure Python: the report reads qualities with no torch around.

    python -c "from harness.interface.quality import QualitySpec as Q; print(Q('mAP', parts=('BBOX','SEGM')).reached({'BBOX':.4,'SEGM':.35}, {'BBOX':.377,'SEGM':.339}))"
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping, Union

Quality = Union[float, Mapping[str, float]]
FRACTION = (0.0, 1.0)  # a share: HR@10, accuracy, BLEU as MLPerf logs it, mAP


class QualityError(ValueError):
    """A quality value or target that does not have the model's shape; the message is one line."""


@dataclass(frozen=True)
class QualitySpec:
    """A model's quality metric.

    name: what eval_accuracy measures ("HR@10", "BLEU", "mAP").
    higher_is_better: False for perplexity or a loss, where "reached" means at or below the target.
    parts: the names of a mapping-valued quality, in display order; () for one number.
    bounds: the lowest and highest value the metric takes (HR@10, accuracy, BLEU and mAP: FRACTION); a
        target must be one a run can reach and not one every run has reached before it starts.
    """

    name: str
    higher_is_better: bool = True
    parts: tuple[str, ...] = ()
    bounds: tuple[float, float] = (-math.inf, math.inf)  # the values the metric can take (FRACTION: 0 to 1)

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    def value(self, raw: Any, what: str = "quality") -> Quality:
        """`raw` as this metric's shape with plain Python floats, or QualityError."""
        if self.parts:
            if not isinstance(raw, Mapping):
                raise QualityError(f"{what} of {self.name} must be a mapping of {', '.join(self.parts)}, got {raw!r}")
            missing = [p for p in self.parts if p not in raw]
            if missing:
                raise QualityError(f"{what} of {self.name} lacks {', '.join(missing)} (has {', '.join(map(str, raw))})")
            return {p: _number(raw[p], f"{what} {p}") for p in self.parts}
        if isinstance(raw, Mapping):
            raise QualityError(f"{what} of {self.name} is one number, got the mapping {dict(raw)!r}")
        return _number(raw, what)

    def target(self, raw: Any, what: str = "target") -> Quality:
        """`raw` as a target of this metric: its shape, and each part inside the metric's bounds (above the
        lowest, up to the highest, for a higher-is-better metric; from the lowest, below the highest, for a
        lower-is-better one), or QualityError."""
        value = self.value(raw, what)
        lo, hi = self.bounds
        for part, v in self.scalars(value).items():
            if not ((lo < v <= hi) if self.higher_is_better else (lo <= v < hi)):
                where = f"{what}.{part}" if self.parts else what
                need = f"above {lo:g} and at most {hi:g}" if self.higher_is_better else f"at least {lo:g} and below {hi:g}"
                raise QualityError(f"{where}={v:g}: the target of {self.name} must be {need}")
        return value

    def reached(self, quality: Quality, target: Quality) -> bool:
        """Every part at or beyond its target, in the model's direction."""
        q, t = self.scalars(self.value(quality)), self.scalars(self.value(target, "target"))
        if self.higher_is_better:
            return all(q[k] >= t[k] for k in t)
        return all(q[k] <= t[k] for k in t)

    def scalars(self, quality: Quality) -> dict[str, float]:
        """One named number per part: {"BLEU": 0.24} or {"BBOX": .., "SEGM": ..} (TensorBoard tags, plot lines)."""
        if isinstance(quality, Mapping):
            return {str(k): float(v) for k, v in quality.items()}
        return {self.name: float(quality)}

    def describe(self, quality: Quality, digits: int = 4) -> str:
        """'HR@10 0.6550' or 'mAP BBOX 0.3812 SEGM 0.3401'."""
        if isinstance(quality, Mapping):
            return f"{self.name} " + " ".join(f"{k} {float(v):.{digits}f}" for k, v in quality.items())
        return f"{self.name} {float(quality):.{digits}f}"

    def describe_target(self, target: Quality) -> str:
        sign = ">=" if self.higher_is_better else "<="
        if isinstance(target, Mapping):
            return " and ".join(f"{k} {sign} {float(v):g}" for k, v in target.items())
        return f"{sign} {float(target):g}"


def _number(raw: Any, what: str) -> float:
    if hasattr(raw, "item") and getattr(raw, "ndim", 0) == 0:
        raw = raw.item()  # a 0-d tensor or NumPy scalar: one device read, here at the evaluation's end
    if isinstance(raw, bool) or not isinstance(raw, numbers.Real):
        raise QualityError(f"{what} must be a number, got {raw!r}")
    value = float(raw)
    if math.isnan(value):
        raise QualityError(f"{what} is NaN")
    return value
