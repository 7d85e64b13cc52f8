"""`--html` on submission trees: the round's page, checked in headless Chromium. It loads nothing and says
nothing on the console; the first screen holds the ranking, not a chart; every benchmark has its anchor and
the bar of links reaches it; the charts (small SVGs, one per benchmark and one for the chips) are drawn;
the ranking's cells are the JSON's numbers; the runs table is folded away; the page prints."""
from __future__ import annotations

import json

from harness.results.report.html import _slug
from tests.helpers import run_cli
from tests.results import chromium
from tests.results.report.test_html import _drawn, _rows, needs_chromium


@needs_chromium
def test_the_round_page_in_a_browser(trees_dir, tmp_path):
    trees = [str(trees_dir / r) for r in ("v0.7", "v0.6", "v4.0")]
    out = run_cli("harness.report", *trees, "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stderr
    data = json.loads((tmp_path / "r.json").read_text())["round"]
    page = tmp_path / "r.html"
    assert page.stat().st_size < 3_000_000
    text = page.read_text()
    assert "<script" not in text and "default-src 'none'" in text
    with chromium.Chromium() as browser:
        browser.open(page)
        assert browser.problems() == []
        first = browser.evaluate("""(() => {
            const t = document.querySelector('table'), f = document.querySelector('figure');
            return {table: t.getBoundingClientRect().top, section: t.dataset.section,
                    figure: f.getBoundingClientRect().top, innerHeight};
        })()""")
        assert first["table"] < first["innerHeight"] < first["figure"]  # tables first, charts after
        assert first["section"] == data["benchmarks"][0]
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
