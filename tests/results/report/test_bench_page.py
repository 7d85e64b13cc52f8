"""harness.bench's one page (OUT/results.html): the machine, throughput, scaling, precision gain and fast
path vs eager, built from cells' result.json by `python -m harness.bench --tables-only`, self-contained,
and checked in a real browser (headless Chromium, Debian's package)."""
from __future__ import annotations

import json
import re

import pytest

from harness import bench
from harness.results.report import bench_page
from tests.results import chromium
from tests.results.report.test_bench_tables import write_run
from tests.results.report.test_html import _boxes, _drawn, _rows, needs_chromium

FALLBACK = "CUDA graph capture failed: Cannot copy between CPU and CUDA tensors during CUDA graph capture"
CELLS = [  # (model, workload, label, GPUs, median, unit, extra keys): figures of the kind issue 37 lists
    ("tacotron2", None, "tf32", 1, 32_148.0, "mel frames/s", {}),
    ("tacotron2", None, "amp", 1, 30_613.0, "mel frames/s", {}),
    ("tacotron2", None, "tf32+graph", 1, 132_404.0, "mel frames/s", {"path": "graph"}),
    ("tacotron2", None, "amp+graph", 1, 165_965.0, "mel frames/s", {"path": "graph"}),
    ("waveglow", None, "tf32", 1, 436_782.0, "samples/s", {}),
    ("waveglow", None, "amp", 1, 395_923.0, "samples/s", {}),
    ("waveglow", None, "amp+graph", 1, 750_108.0, "samples/s", {"path": "graph"}),
    ("txl_base", None, "amp", 1, 86_489.0, "tokens/s", {}),
    ("txl_base", None, "amp+compile(reduce-overhead)", 1, 212_250.0, "tokens/s", {"path": "compile(reduce-overhead)"}),
    ("bert_large", "squad384", "amp", 1, 414.0, "sequences/s", {}),
    ("bert_large", "squad384", "amp", 2, 805.0, "sequences/s", {}),
    ("bert_large", "squad384", "amp+compile+graph", 1, 514.0, "sequences/s", {"path": "compile+graph"}),
    ("bert_large", "squad384", "amp+compile+graph", 2, 1_001.0, "sequences/s", {"path": "compile+graph"}),
    ("gnmt", None, "amp", 1, 808_170.0, "tokens/s", {"path": "eager", "fallback": FALLBACK}),
]


@pytest.fixture(scope="module")
def facts() -> dict:
    """The machine as harness.bench records it (this host's: its keys are what the page must show)."""
    return bench.machine()


@pytest.fixture(scope="module")
def bench_out(tmp_path_factory, facts):
    """A bench folder as a run of the suite leaves it (each cell's result.json written by the record
    writer, bench.json with the machine as machine() records it), its tables and page rebuilt by
    --tables-only."""
    out = tmp_path_factory.mktemp("bench")
    for model, workload, label, gpus, median, unit, keys in CELLS:
        name = f"{model}{'-' + workload if workload else ''}-{label}-{gpus}gpu"
        write_run(out / "runs", model, label, gpus, [median * 0.98, median, median * 1.01], workload, unit=unit,
                  cell=name, **keys)
    write_run(out / "runs", "maskrcnn", "amp", 1, [], status="failed", cell="maskrcnn-amp-1gpu")
    meta = {**facts, "machine": "2x NVIDIA H200", "accelerator": "NVIDIA H200", "gpu_count": 2,
            "driver": "580.95.05", "cuda": "13.0", "cudnn": 91500,
            "command": "python -m harness.bench --models tacotron2 waveglow txl_base bert_large gnmt maskrcnn"}
    (out / "bench.json").write_text(json.dumps({**meta, "cells": []}))
    assert bench.main(["--tables-only", "--out", str(out)]) == 1  # the failed cell fails the suite
    return out, meta


def test_the_page_is_one_small_file_that_loads_nothing(bench_out):
    out, meta = bench_out
    text = (out / "results.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text and "default-src 'none'" in text
    sources = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert len(sources) == 3 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert len(text) < 400_000  # three charts and five tables
    assert f">{meta['driver']}</td>" in text and FALLBACK in text
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # written whole, in one step
    assert (out / "results.html").stat().st_mode & 0o044 == 0o044  # readable by whoever may read the folder


def test_every_machine_fact_the_bench_records_is_on_the_page(facts):
    gpu = {"accelerator": "NVIDIA H200", "gpu_count": 2, "driver": "580.95.05", "cuda": "13.0", "device": "NVIDIA H200"}
    meta = {**facts, **gpu, "cells_run": 3, "minutes": 1.5, "nvlink": "NV18"}
    rows = dict(map(tuple, bench_page.machine_rows(meta)))
    assert list(rows)[:4] == ["machine", "cells ran on", "GPU", "GPUs"] and rows["nvlink"] == "NV18"
    assert "cells_run" not in rows and "minutes" not in rows  # the counts are said in the text
    assert len(rows) == len({**facts, **gpu}) + 1
    assert rows["torch"] == meta["torch"] and rows["date"] == meta["date"] and rows["CUDA"] == "13.0"


def test_a_run_on_the_cpu_names_the_cpu_and_no_gpu_driver_or_cuda(facts):
    # torch built with CUDA reports its CUDA on a host without a GPU: the page must not show it
    meta = {**facts, "cuda": "13.0", "device": "CPU", "smoke": True}
    rows = dict(map(tuple, bench_page.machine_rows(meta)))
    assert rows["cells ran on"] == "CPU" and not {"GPU", "GPUs", "driver", "CUDA", "cuDNN", "smoke"} & set(rows)


@needs_chromium
def test_the_bench_page_in_a_browser(bench_out, tmp_path):
    """Essential end-to-end coverage (about 2 s with the browser's start): the page a user opens."""
    out, meta = bench_out
    with chromium.Chromium() as browser:
        browser.open(out / "results.html")
        assert browser.problems() == []  # no console message, no exception, no failed load
        assert browser.evaluate("document.querySelector('h1').innerText") == "GPU benchmark suite: 2x NVIDIA H200"
        shot = browser.screenshot()
        (tmp_path / "bench.png").write_bytes(shot)
        machine = {r["what"]: r["value"] for r in _rows(browser, "Machine")}
        assert machine["driver"] == "580.95.05" and machine["torch"] == meta["torch"] and machine["date"] == meta["date"]
        assert machine["command"] == meta["command"] and machine["GPUs"] == "2"
        throughput = _rows(browser, "Throughput")
        assert len(throughput) == len(CELLS) + 1  # every (model, label, GPUs), the failed cell's included
        row = next(r for r in throughput if (r["model"], r["precision"]) == ("tacotron2", "amp+graph"))
        assert row["median"] == "165,965" and row["unit"] == "mel frames/s"
        scaling = _rows(browser, "Scaling efficiency")
        assert {(r["precision"], r["efficiency"]) for r in scaling} == {("amp", "97%"), ("amp+compile+graph", "97%")}
        gains = {(r["workload"], r["gain"]): r["throughput ratio"] for r in _rows(browser, "Precision gain")}
        assert gains == {("tacotron2", "amp / tf32"): "0.95x", ("tacotron2", "amp+graph / tf32+graph"): "1.25x",
                         ("waveglow", "amp / tf32"): "0.91x"}  # waveglow's amp+graph has no graphed tf32 beside it
        fast = {(r["workload"], r["GPUs"], r["precision"], r["path"]): r["fast / eager"]
                for r in _rows(browser, "Fast path vs eager")}
        assert fast == {("tacotron2", "1", "tf32", "graph"): "4.12x", ("tacotron2", "1", "amp", "graph"): "5.42x",
                        ("waveglow", "1", "amp", "graph"): "1.89x",
                        ("txl_base", "1", "amp", "compile(reduce-overhead)"): "2.45x",
                        ("bert_large squad384", "1", "amp", "compile+graph"): "1.24x",
                        ("bert_large squad384", "2", "amp", "compile+graph"): "1.24x"}
        text = browser.evaluate("document.body.innerText")
        assert f"gnmt amp 1 GPU(s): {FALLBACK}" in text and "maskrcnn amp 1 GPU(s): CUDA out of memory" in text
        boxes = _boxes(browser)
        assert [b["plot"] for b in boxes] == ["scaling.png", "precision.png", "fast_path.png"]
        assert all(b["loaded"] and b["natural"] > 100 and b["width"] <= 1280 for b in boxes)
        whole = browser.screenshot(full_page=True)
        (tmp_path / "bench_full.png").write_bytes(whole)
        assert all(_drawn(whole, b) for b in boxes), [b["plot"] for b in boxes if not _drawn(whole, b)]
        wide = browser.evaluate("document.documentElement.scrollWidth")
        assert wide <= chromium.WIDTH  # nothing runs off the window's right edge
        assert browser.pdf()[:5] == b"%PDF-"
        assert browser.problems() == []
