"""Which MLPerf category a benchmark or model belongs to, for geometric means per category.

A registered model declares its own (ModelSpec.category, found by its name or its MLPerf benchmark's);
any other name, such as the benchmarks of official MLPerf logs that no model here runs, is looked up in
MLPerf's own areas below. A name found nowhere goes to "other".

    python -c "from harness import registry; registry.publish(); from harness.results.analysis.categories import category; print(category('gnmt'), category('dlrm'))"
"""
from __future__ import annotations

import re

from harness.interface.suite import LANGUAGE, OTHER, RECOMMENDATION, REINFORCEMENT, SPEECH, VISION
from harness.results.read import own

# MLPerf Training's benchmarks of every round from v0.5 on that no model here registers, by MLPerf's
# own areas (the names official logs carry in submission_benchmark, and the aliases of result folders);
# the registered models' benchmarks (resnet, ssd, gnmt, ...) come from their specs
MLPERF_CATEGORIES: dict[str, str] = {
    "resnet50": VISION, "unet3d": VISION, "stable_diffusion": VISION, "flux1": VISION,
    "bert": LANGUAGE, "gpt3": LANGUAGE, "llama31_405b": LANGUAGE,
    "dlrm": RECOMMENDATION, "dlrmv4": RECOMMENDATION, "gnn": RECOMMENDATION,
    "rgat": RECOMMENDATION,
    "rnnt": SPEECH,
    "minigo": REINFORCEMENT,
}
# MLPerf's families whose members carry a suffix: bert-squad384, llama2_70b, gpt3_175b, dlrm_dcnv2, ...
_PREFIXES = (("bert", LANGUAGE), ("resnet", VISION), ("llama", LANGUAGE), ("gpt", LANGUAGE),
             ("dlrm", RECOMMENDATION))


def category(name: str) -> str:
    key = (name or "").strip().lower()
    own = _registered(key)
    if own is not None:
        return own
    if key in MLPERF_CATEGORIES:
        return MLPERF_CATEGORIES[key]
    for prefix, cat in _PREFIXES:
        if re.match(rf"{prefix}(?:[\W_]|\d|$)", key):
            return cat
    return OTHER


def _registered(key: str) -> str | None:
    """The category a registered model declares, by its name or its MLPerf benchmark's."""
    entry = own.named(key)
    return entry.category if entry is not None else None
