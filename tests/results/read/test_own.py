"""Benchmarks and models by MLPerf category, for the comparison's geometric means: a registered model's
from its spec, any other benchmark's from MLPerf's own areas."""
from harness import registry
from harness.results.read.own import MLPERF_CATEGORIES, category


def test_each_name_falls_in_its_mlperf_category_and_unknown_names_in_other():
    assert [category(n) for n in ("resnet", "ssd", "maskrcnn", "unet3d")] == ["vision"] * 4
    assert [category(n) for n in ("gnmt", "transformer", "bert", "bert_large", "txl_base")] == ["language"] * 5
    assert [category(n) for n in ("ncf", "dlrm")] == ["recommendation"] * 2
    assert [category(n) for n in ("tacotron2", "waveglow", "rnnt")] == ["speech"] * 3
    assert category("minigo") == "reinforcement" and category("berta") == "other" and category("") == "other"
    assert category("bert-squad384") == "language" and category("llama2_70b_lora") == "language"


def test_a_registered_model_is_filed_by_its_own_spec_and_mlperf_s_table_lists_only_the_others():
    for spec in registry.MODELS:
        assert category(spec.name) == category(spec.benchmark) == spec.category
    assert not {s.name for s in registry.MODELS} & set(MLPERF_CATEGORIES)
