"""`--html` on submission trees: the round's page, checked in headless Chromium. It loads nothing and says
nothing on the console; the first screen holds the summary (per benchmark the fastest system and the fastest
per accelerator, the JSON's winners) and its legend; every benchmark has its anchor and the bar of links
reaches it; the charts (small SVGs, one per benchmark beside its tables and one for the chips) are drawn;
the ranking's cells are the JSON's numbers; the runs table is folded away; the page prints. The terminal
gets the summary and the "wrote" lines, not the tables."""
from __future__ import annotations

import json

from harness.results.report.html import _slug
from harness.rounds.text import SUMMARY
from tests.helpers import run_cli
from tests.results import chromium
from tests.results.report.test_html import _drawn, _rows, needs_chromium


@needs_chromium
def test_the_round_page_in_a_browser(trees_dir, tmp_path):
    trees = [str(trees_dir / r) for r in ("v0.7", "v0.6", "v4.0")]
    out = run_cli("harness.report", *trees, "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(SUMMARY) and out.stdout.rstrip().endswith(f"wrote {tmp_path / 'r.html'}")
    assert "Runs" not in out.stdout and len(out.stdout) < 5_000
    data = json.loads((tmp_path / "r.json").read_text())["round"]
    page = tmp_path / "r.html"
    assert page.stat().st_size < 3_000_000
    text = page.read_text()
    assert "<script" not in text and "default-src 'none'" in text
    with chromium.Chromium() as browser:
        browser.open(page)
        assert browser.problems() == []
        first = browser.evaluate("""(() => {
            const t = document.querySelector('table'), legend = document.querySelector('.summary ul');
            return {bottom: t.getBoundingClientRect().bottom, section: t.dataset.section, innerHeight,
                    legend: legend.getBoundingClientRect().bottom, text: legend.textContent,
                    rows: [...t.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent))};
        })()""")
        assert first["section"] == SUMMARY and first["legend"] < first["innerHeight"]  # the answer on the first screen
        assert "(d) = throughput derived" in first["text"] and "per accelerator = accelerator-minutes" in first["text"]
        closed = [e for e in data["entries"] if e["division"] == "closed" and e["minutes"]]
        for bench, round_, _, fastest, cheapest in first["rows"]:
            scored = [e for e in closed if (e["benchmark"], e["round"]) == (bench, round_)]
            best = min(scored, key=lambda e: e["minutes"])
            least = min(scored, key=lambda e: e["accelerator_minutes"])
            assert fastest.startswith(f"{best['minutes']:.3f}: {best['submitter']}/{best['system']} (")
            assert cheapest.startswith(f"{least['accelerator_minutes']:,.0f}: {least['submitter']}/{least['system']} (")
        shot = browser.screenshot()
        (tmp_path / "round.png").write_bytes(shot)
        for bench in data["benchmarks"]:  # the bar of links jumps to each benchmark
            browser.evaluate(f"document.querySelector('nav.jump a[href=\"#{_slug(bench)}\"]').click()")
            top = browser.evaluate(f"document.getElementById('{_slug(bench)}').getBoundingClientRect().top")
            assert 0 <= top < 60, bench
        boxes = browser.evaluate("""[...document.querySelectorAll('figure img')].map(img => {
            const r = img.getBoundingClientRect();
            return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, loaded: img.complete,
                    natural: img.naturalWidth, plot: img.closest('figure').dataset.plot};
        })""")
        charted = {(e["benchmark"], e["round"]) for e in data["entries"] if e["division"] == "closed" and e["minutes"]}
        names = [f"{b}_{r}.svg" if b == "gnmt" else f"{b}.svg" for b, r in charted]  # gnmt: v0.6 and v0.7
        assert sorted(b["plot"] for b in boxes) == sorted(names + ["accelerators.svg"])
        whole = browser.screenshot(full_page=True)
        (tmp_path / "round_full.png").write_bytes(whole)
        assert all(b["loaded"] and b["natural"] > 100 and _drawn(whole, b) for b in boxes)
        rows = _rows(browser, "gnmt")  # its first table: v0.6's (rounds in order), DGX-2H's 256 V100s first
        gnmt = [e for e in data["entries"] if e["benchmark"] == "gnmt" and e["round"] == "v0.6"]
        assert [e["accelerators"] for e in gnmt] == [256, 8]
        assert [(r["rank"], r["score (min)"], r["system"], r["count"]) for r in rows] == \
            [(str(e["rank"]), f"{e['minutes']:.3f}", e["system"], str(e["accelerators"])) for e in gnmt]
        assert browser.evaluate("document.querySelector('details').open") is False  # the runs, folded away
        assert browser.pdf()[:5] == b"%PDF-"
        assert browser.problems() == []


def test_the_round_page_is_the_same_bytes_in_every_process(tmp_path):
    # two chips with one system each tie in the chart's order, which a set's order decided: their colours
    # (and the page's bytes) changed between processes, as did the charts' random SVG ids
    from tests.results.roundlogs import retinanet_log, system_json, write_folder

    for name, chip in (("sys_a", "NVIDIA A100-SXM4-80GB"), ("sys_b", "NVIDIA H100-SXM5-80GB")):
        folder = write_folder(tmp_path, "v3.1", name, "ssd", [retinanet_log([0.2, 0.3, 0.345], seed=s,
                                                                            t0=1_700_000_000_000 + s * 10**7)
                                                              for s in range(5)])
        system = json.loads(system_json(name))
        system["accelerator_model_name"] = chip
        (folder.parents[2] / "systems" / f"{name}.json").write_text(json.dumps(system))
    pages = []
    for seed in ("1", "2", "3"):
        out = run_cli("harness.report", str(tmp_path), "--html", str(tmp_path / f"page{seed}.html"),
                      env={"PYTHONHASHSEED": seed})
        assert out.returncode == 0, out.stderr
        pages.append((tmp_path / f"page{seed}.html").read_bytes())
    assert pages[0] == pages[1] == pages[2] and b"data:image/svg" in pages[0]
