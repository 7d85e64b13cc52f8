"""Chip against chip (harness.rounds.accelerators): chips named alike whatever the description writes,
divisions whatever their case, and a pair whose systems differ beyond the chip labelled with both shapes."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harness.rounds.accelerators import unlike
from harness.rounds.view import form_factor
from harness.results.analysis.stats import accelerator_kind
from harness.results.read import tree
from harness.results.read import submission


@pytest.mark.parametrize("name, platform, chip", [
    ("NVIDIA L4", "?", "L4"), ("NVIDIA L40S", "?", "L40S"), ("NVIDIA L40", "?", "L40"),
    ("NVIDIA H100-SXM5-80GB", "?", "H100"), ("Nvidia Tesla V100S-PCIe-32GB", "?", "V100S"),
    ("TPU", "closed/Google/tpu-v4-128-TF", "TPU v4"), ("TPU v3", "closed/Google/tpu-v3-32-TF2.0", "TPU v3"),
    ("tpuv3-8", "?", "TPU v3"), ("CPU", "?", "CPU"),
    # Google's descriptions from v2.0 and Intel's from v4.0: v5e and v5p are two chips, not one 'TPU v5'; v2.0's
    # 'TPU-v4' is v1.0's bare 'TPU' of tpu-v4 systems; Trillium is v6e
    ("TPU-v4", "?", "TPU v4"), ("TPU-v5e", "?", "TPU v5e"), ("TPU v5p", "?", "TPU v5p"),
    ("TPU", "closed/Google/cloud-tpu-v5p-1024-maxtext", "TPU v5p"), ("TPU-trillium", "?", "TPU v6e"),
    ("Intel(R) Gaudi(R) 2 AI Accelerator", "?", "Gaudi 2"), ("Intel Gaudi2", "?", "Gaudi 2"),
    ("Habana Gaudi HL-205", "?", "Gaudi"), ("Intel Gaudi 3", "?", "Gaudi 3"),
    ("AMD Instinct MI325X 256GB HBM3E", "?", "MI325X"), ("NVIDIA Blackwell Ultra GPU (GB300)", "?", "GB300"),
])
def test_a_chip_is_named_the_same_whatever_the_description_writes(name, platform, chip):
    assert accelerator_kind(name, platform) == chip


def test_a_description_s_division_and_node_count_are_read_whatever_their_spelling(tmp_path):
    systems = tmp_path / "Org" / "systems"
    folder = tmp_path / "Org" / "results" / "sys" / "gnmt"
    systems.mkdir(parents=True)
    folder.mkdir(parents=True)
    # Fujitsu's v0.7 "Closed" and Dell EMC's "number of nodes"
    (systems / "sys.json").write_text(json.dumps({"submitter": "Org", "division": "Closed", "status": "onprem",
                                                  "number of nodes": "4", "accelerators_per_node": "4",
                                                  "accelerator_model_name": "Nvidia Tesla V100-SXM2-32GB"}))
    found = tree.read_system(str(systems / "sys.json"))
    assert found is not None and (found.division, found.world_size) == ("closed", 16)
    listing = submission.listing(str(folder))
    assert (listing.nodes, listing.per_node) == (4, 4)


def _entry(chip: str, accelerator: str, count: int, nodes) -> SimpleNamespace:
    return SimpleNamespace(chip=chip, accelerators=count, nodes=nodes, form=form_factor(accelerator))


def test_a_pair_of_unlike_form_factors_or_node_shapes_says_both_shapes():
    h100 = _entry("H100", "NVIDIA H100-SXM5-80GB", 16, 2)
    a100_pcie = _entry("A100", "NVIDIA A100-PCIe-80GB", 16, 8)
    assert unlike(h100, a100_pcie) == "H100 SXM, 2 nodes x 8 vs A100 PCIe, 8 nodes x 2"
    assert unlike(h100, _entry("A100", "NVIDIA A100-SXM4-80GB", 16, 2)) == ""
    # a chip without a form factor (a TPU) is not unlike for that; an unknown node count is not guessed
    assert unlike(_entry("TPU v4", "TPU", 8, 1), _entry("A100", "NVIDIA A100-SXM4-40GB", 8, 1)) == ""
    assert unlike(_entry("TPU v4", "TPU", 8, None), _entry("A100", "NVIDIA A100-SXM4-40GB", 8, 1)) == ""


def test_a_superchip_against_a_card_is_unlike_though_its_name_writes_no_form():
    """GB200 and GB300 name no form factor ('NVIDIA Blackwell GPU (GB200)'): a Grace superchip racked as NVL72
    is not an H200 NVL card (PCIe, NVLink bridge) or an SXM board, and a pair of them says so; 'NVL72' in a
    name is a rack, not the NVL card."""
    gb200 = _entry("GB200", "NVIDIA Blackwell GPU (GB200)", 8, 2)
    h200_nvl = _entry("H200", "NVIDIA H200-NVL-141GB", 8, 1)
    assert (gb200.form, h200_nvl.form) == ("superchip", "NVL")
    assert unlike(gb200, h200_nvl) == "GB200 superchip, 2 nodes x 4 vs H200 NVL, 1 node x 8"
    # at one node shape, the form alone flags it
    assert unlike(_entry("GB300", "NVIDIA Blackwell Ultra GPU (GB300)", 8, 1), h200_nvl) == \
        "GB300 superchip, 1 node x 8 vs H200 NVL, 1 node x 8"
    assert unlike(gb200, _entry("B200", "NVIDIA Blackwell GPU (B200-SXM-180GB)", 8, 2)) != ""
    assert unlike(gb200, _entry("GB300", "NVIDIA Blackwell Ultra GPU (GB300)", 8, 2)) == ""
    assert form_factor("NVIDIA GB200 NVL72") == "superchip" and form_factor("NVIDIA H100 NVL") == "NVL"
    # cards made as PCIe boards alone, whose names write no form
    l40s = _entry("L40S", "NVIDIA L40S", 8, 1)
    assert l40s.form == "PCIe" and unlike(gb200, l40s) != ""
    assert form_factor("NVIDIA GeForce RTX 4090") == form_factor("AMD Radeon RX 7900 XTX") == "PCIe"
    assert form_factor("AMD Instinct MI300X 192GB HBM3") is None and form_factor("TPU-v5p") is None
