"""Benchmarks and models by MLPerf category, for the comparison's geometric means."""
from harness.results.categories import category


def test_each_name_falls_in_its_mlperf_category_and_unknown_names_in_other():
    assert [category(n) for n in ("resnet", "ssd", "maskrcnn", "unet3d")] == ["vision"] * 4
    assert [category(n) for n in ("gnmt", "transformer", "bert", "bert_large", "txl_base")] == ["language"] * 5
    assert [category(n) for n in ("ncf", "dlrm")] == ["recommendation"] * 2
    assert [category(n) for n in ("tacotron2", "waveglow", "rnnt")] == ["speech"] * 3
    assert category("minigo") == "reinforcement" and category("berta") == "other" and category("") == "other"
