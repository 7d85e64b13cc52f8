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


def test_a_newline_in_a_log_or_a_system_description_stays_inside_its_cell(tmp_path):
    # a platform logged as "x\n## H | x" broke its table row and became a heading (and an anchor) of the page
    import json

    from tests.helpers import run_cli
    from tests.results.roundlogs import retinanet_log, system_json, write_folder

    logs = [retinanet_log([0.2, 0.3, 0.345], seed=s, platform="<img src=x onerror=alert(1)>\n## H | x",
                          t0=1_700_000_000_000 + s * 10**7) for s in range(5)]
    folder = write_folder(tmp_path, "v3.1", "sys_a", "ssd", logs)
    system = json.loads(system_json("sys_a"))
    system["submitter"] = "Org\n## Injected heading"
    (folder.parents[2] / "systems" / "sys_a.json").write_text(json.dumps(system))
    out = run_cli("harness.report", str(tmp_path), "--md", str(tmp_path / "r.md"), "--html", str(tmp_path / "r.html"))
    assert out.returncode == 0, out.stderr
    markdown = (tmp_path / "r.md").read_text()
    assert not any(line.startswith(("## H", "## Injected")) for line in markdown.splitlines() + out.stdout.splitlines())
    assert "Org ## Injected heading" in markdown or "## Injected" not in markdown
    page = (tmp_path / "r.html").read_text()
    assert "<img src=x" not in page and "<h2 id=\"h-" not in page and "injected-heading" not in page
