"""Which MLPerf category a benchmark or model belongs to, for geometric means per category.

A plain mapping from benchmark (or harness model) name to "vision", "language", "recommendation",
"speech" or "reinforcement", after MLPerf's own areas; a name not listed goes to "other".

    python -c "from harness.results.categories import category; print(category('gnmt'))"
"""
from __future__ import annotations

import re

VISION, LANGUAGE, RECOMMENDATION, SPEECH, REINFORCEMENT, OTHER = (
    "vision", "language", "recommendation", "speech", "reinforcement", "other")

CATEGORIES: dict[str, str] = {
    "resnet": VISION, "resnet50": VISION, "ssd": VISION, "retinanet": VISION, "maskrcnn": VISION,
    "unet3d": VISION, "stable_diffusion": VISION, "flux1": VISION,
    "gnmt": LANGUAGE, "transformer": LANGUAGE, "bert": LANGUAGE, "gpt3": LANGUAGE, "txl": LANGUAGE,
    "transformerxl": LANGUAGE, "transformer_xl": LANGUAGE, "llama2_70b_lora": LANGUAGE, "llama31_8b": LANGUAGE,
    "llama31_405b": LANGUAGE,
    "ncf": RECOMMENDATION, "dlrm": RECOMMENDATION, "dlrm_dcnv2": RECOMMENDATION, "dlrmv4": RECOMMENDATION,
    "gnn": RECOMMENDATION, "rgat": RECOMMENDATION,
    "tacotron2": SPEECH, "waveglow": SPEECH, "rnnt": SPEECH,
    "minigo": REINFORCEMENT,
}
# families whose members carry a suffix: bert_large, bert-squad384, txl_base, ...
_PREFIXES = (("bert", LANGUAGE), ("txl", LANGUAGE), ("transformer", LANGUAGE), ("resnet", VISION), ("llama", LANGUAGE),
             ("gpt", LANGUAGE), ("dlrm", RECOMMENDATION), ("tacotron", SPEECH), ("waveglow", SPEECH))


def category(name: str) -> str:
    key = (name or "").strip().lower()
    if key in CATEGORIES:
        return CATEGORIES[key]
    for prefix, cat in _PREFIXES:
        if re.match(rf"{prefix}(?:[\W_]|\d|$)", key):
            return cat
    return OTHER
