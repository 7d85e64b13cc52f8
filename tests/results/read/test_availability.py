"""MLPerf's availability categories from the status a system description writes, freely before 4.0."""
from __future__ import annotations

import json

import pytest

from harness.results.read import availability


@pytest.mark.parametrize("status,category", [
    ("onprem", availability.ON_PREMISE), ("Available on premise", availability.ON_PREMISE),
    ("available", availability.ON_PREMISE), ("Available on-premise", availability.ON_PREMISE),
    ("cloud", availability.CLOUD), ("Available in cloud", availability.CLOUD),
    ("preview", availability.PREVIEW), ("Research, Development, or Internal (RDI)", availability.RDI),
    ("research", availability.RDI), ("", availability.UNKNOWN), (None, availability.UNKNOWN),
    ("beta", "beta"),  # no category's words: kept as written
])
def test_each_status_reads_into_mlperf_s_category(status, category):
    assert availability.category(status) == category


def test_the_listing_names_the_description_s_submitter_else_the_folder(tmp_path):
    org = tmp_path / "NVIDIA"
    (org / "results" / "cw_n8" / "bert").mkdir(parents=True)
    (org / "results" / "plain" / "bert").mkdir(parents=True)
    (org / "systems").mkdir()
    (org / "systems" / "cw_n8.json").write_text(json.dumps({"submitter": "NVIDIA+CoreWeave", "status": "cloud",
                                                            "system_name": "cw"}))
    found = availability.listing(str(org / "results" / "cw_n8" / "bert"))
    assert (found.submitter, found.availability, found.status, found.system_name) == \
        ("NVIDIA+CoreWeave", availability.CLOUD, "cloud", "cw")
    plain = availability.listing(str(org / "results" / "plain" / "bert"))
    assert (plain.submitter, plain.availability) == ("NVIDIA", availability.UNKNOWN)
