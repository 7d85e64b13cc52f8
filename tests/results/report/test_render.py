"""The runs table's cells: qualities of named parts, epochs counted in samples, derived throughput, marks."""
from harness.results.report import render
from harness.results.read.summary import RunSummary


def test_run_cells_say_what_their_numbers_are():
    runs = [
        RunSummary(path="a/mlperf.log", benchmark="bert", status="success", epochs_to_converge=2_621_440,
                   epoch_unit="samples", evals=[(2_621_440, 0.721)], busy=True),
        RunSummary(path="b/result_0.txt", benchmark="maskrcnn", status="success", epochs_to_converge=13,
                   evals=[(13, {"BBOX": 0.3781, "SEGM": 0.3412})], throughput=14_411.2, throughput_derived=True,
                   throughput_unit="samples/s", problems=["no run_stop"]),
        RunSummary(path="c/result_0.txt", benchmark="gnmt", status="success", throughput=0.003267,
                   throughput_derived=True, throughput_unit="epochs/s"),
    ]
    header, rows = render.run_rows(runs)
    cells = [dict(zip(header, row)) for row in rows]
    assert cells[0]["epochs"] == "2,621,440 samples" and cells[0]["status"] == "success!"
    assert cells[1]["quality"] == "BBOX=0.3781 SEGM=0.3412" and cells[1]["status"] == "success*"
    assert cells[1]["throughput/s"] == "14,411 (d)" and cells[2]["throughput/s"] == "0.003267 epochs (d)"
    notes = render.run_footnotes(runs)
    assert [n[0] for n in notes] == ["*", "!", "("]
