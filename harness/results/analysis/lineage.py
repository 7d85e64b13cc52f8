"""Which official results form one system family, so that a speedup over accelerator counts is scaling.

A published round holds, per benchmark, systems of many submitters at many accelerator counts. A ratio
between two of them is scaling only when the two differ in the count alone: the same submitter, the same
system line, the same accelerator and the same software. Otherwise the ratio also measures another
organisation's tuning, another server, another framework release: one submitter's 4-GPU server against
another's 8-GPU server can make BERT look slower on twice the GPUs. The rule, in a submission tree
(docs/report.md, "Scaling within a system family"):

- one submitter: the system description's `submitter` (else the organisation's folder) and one division;
- one system line: the system folder's name with its scale taken out, as submitters write it: a node or
  accelerator count token (`_n8`, `-N32`, `16-nodes-`, a leading `2x`, the `8` of `x8H100` or `8xA100`, a
  TPU slice's `128` in `tpu-v4-128-TF`, a pod's `16` in `ipu-pod16-`, a bare `_256_`);
  so `eos_n8_ngc23.09_pytorch` and `eos_ngc23.09_pytorch` are one line, `eos_n64_ngc23.04_pytorch` another
  (its software differs);
- one accelerator, as the system description names it (`NVIDIA H100-SXM5-80GB`, not the chip alone);
- one software stack: the description's `framework`, compared without case or spacing.

Pairs of one family are vouched for. Pairs of one submitter and one chip that the rule cannot vouch
for (another line, accelerator model or framework) are kept, marked with what differs; pairs of two
submitters are never made. harness.results.report.explain says it in words.

    python -m harness.check.show family SYSTEM_NAME...     # the system line of each name
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from harness.results.read.submission import listing
from harness.results.analysis.stats import GroupKey, accelerator_kind

_SCALE = [
    (re.compile(r"^\d+\s*[xX](?=[A-Za-z])"), ""),  # a leading node multiplier: 2xXE9680x8H100, 16xR750
    (re.compile(r"(?<![A-Za-z0-9])[nN]\d+(?![A-Za-z0-9.])"), "nN"),  # eos_n8_, HLS-Gaudi2-N32-PT
    (re.compile(r"(?<![A-Za-z0-9.])\d+[-_]nodes?(?![A-Za-z0-9])", re.I), "N-nodes"),  # 16-nodes-SPR
    (re.compile(r"(?<=\d)[xX]\d+(?=[A-Za-z_\-]|$)"), "xN"),  # A100x10-, XE9680x8H100, G5500V7x8xL40 (not dgx1)
    (re.compile(r"(?<![A-Za-z0-9.])\d+[xX](?=[A-Za-z])"), "Nx"),  # 8xA100, 4xH100_SXM5
    # a TPU slice's size after its generation: tpu-v4-128-TF, cloud-tpu-v5p-4096-maxtext, cloud-tpu-trillium-512-maxtext
    (re.compile(r"(tpu-(?:v\d+[a-z]*|trillium)-)\d+(?=[-_]|$)", re.I), r"\1N"),
    (re.compile(r"(?<=pod)\d+(?=[-_]|$)", re.I), "N"),  # Graphcore's ipu-pod16-..., ipu-pod64-...
    (re.compile(r"(?<=[_-])\d+(?=[_-])"), "N"),  # a bare count between separators: CloudBrainII_256_mindspore
]


def system_line(name: str) -> str:
    """A system folder's name without its scale: 'eos_n8_ngc23.09_pytorch' -> 'eos_ngc23.09_pytorch'."""
    line = name
    for pattern, replacement in _SCALE:
        line = pattern.sub(replacement, line)
    line = re.sub(r"(?:^|[_\-])nN(?=[_\-]|$)", "", line)  # the count token itself is no part of the line
    return line.strip("_-") or name


@dataclass(frozen=True)
class Family:
    submitter: str
    division: str
    line: str
    accelerator: str
    framework: str

    def label(self, kind: str) -> str:
        return f"{self.submitter}/{self.line} ({kind})"


def _norm(text: Optional[str]) -> str:
    return re.sub(r"\s+", " ", (text or "").strip().lower())


def family_of(key: GroupKey) -> Optional[Family]:
    """The family of a submission folder's group; None for runs outside a tree."""
    if key.folder is None:
        return None
    parts = Path(key.folder).parts
    system = parts[-2] if len(parts) >= 2 else "?"
    found = listing(key.folder)
    return Family(found.submitter, division_of(key), system_line(system), key.accelerator or "n/a",
                  _norm(key.framework))


def division_of(key: GroupKey) -> str:
    """'closed' from the platform '<division>/<org>/<system>' a tree's group carries."""
    if key.folder is None or key.platform.startswith("division n/a/"):
        return "n/a"
    return key.platform.split("/", 1)[0] or "n/a"


def submitter_key(key: GroupKey) -> tuple:
    """What a speedup family adds for a tree's group: its submitter and division (no pair crosses them);
    nothing for runs outside a tree."""
    family = family_of(key)
    return () if family is None else (family.submitter, family.division)


@dataclass(frozen=True)
class Kinship:
    """Two tree groups' families, and their frameworks as the descriptions write them (Family holds them
    normalised): one family when the two families are equal."""
    base: Family
    other: Family
    base_framework: Optional[str]
    other_framework: Optional[str]

    @property
    def vouched(self) -> bool:
        return self.base == self.other


def vouch(base: GroupKey, other: GroupKey) -> Optional[Kinship]:
    """The two groups' kinship (`vouched` where they are one family); None outside a tree."""
    a, b = family_of(base), family_of(other)
    if a is None or b is None:
        return None
    return Kinship(a, b, base.framework, other.framework)


def pair_label(base: GroupKey, other: GroupKey) -> str:
    """A speedup's system: the family where the pair is one ('NVIDIA/eos_ngc23.09_pytorch (H100)'), else
    the submitter and the chip ('NVIDIA V100'); outside a tree, the chip."""
    kind = accelerator_kind(other.accelerator, other.platform)
    a, b = family_of(base), family_of(other)
    if b is None:
        return kind
    return b.label(kind) if a == b else f"{b.submitter} {kind}"

