"""Whether a speedup pairs one system family, in words (harness.results.analysis.lineage applies the rule):
'one system family', or what differs: 'not one system family: system line A vs B; framework X vs Y'.
The report's speedup notes, the round view and the JSON's `family` give this text.

    python -m harness.results.report.families SYSTEM_NAME...     # the system line of each name
"""
from __future__ import annotations

import sys

from harness.results.analysis.lineage import Kinship, system_line

VOUCHED = "one system family"


def family_text(kin: Kinship) -> str:
    """VOUCHED where the pair is one family, else what differs."""
    if kin.vouched:
        return VOUCHED
    a, b = kin.base, kin.other
    differs = []
    if (a.submitter, a.division) != (b.submitter, b.division):
        differs.append(f"submitter {a.submitter} ({a.division}) vs {b.submitter} ({b.division})")
    if a.line != b.line:
        differs.append(f"system line {a.line} vs {b.line}")
    if a.accelerator != b.accelerator:
        differs.append(f"accelerator {a.accelerator} vs {b.accelerator}")
    if a.framework != b.framework:
        differs.append(f"framework {kin.base_framework or 'n/a'} vs {kin.other_framework or 'n/a'}")
    return "not one system family: " + "; ".join(differs)


def main(argv: list[str]) -> int:
    for name in argv:
        print(f"{name}: {system_line(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
