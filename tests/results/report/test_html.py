"""`--html`: one self-contained page, checked in a real browser (headless Chromium, Debian's package): it
loads without a console message or error, the first thing on screen is the figure, every plot is drawn,
the tables hold the numbers the JSON has, and it prints."""
from __future__ import annotations

import io
import json
import re

import pytest

from harness.results.report import html
from tests.helpers import run_cli
from tests.results import chromium
from tests.results.analysis.test_chances import T4_EPOCHS
from tests.results.analysis.test_speedups import THROUGHPUT, write_run

needs_chromium = pytest.mark.skipif(chromium.find() is None, reason="no Chromium on the PATH (apt-get install chromium; "
                                    ".ci/run installs it): the page is not checked in a browser")


def test_the_markdown_subset_is_escaped_and_tables_keep_their_cells():
    text = ("## Runs <b>\n\n| benchmark | platform | ttt |\n|---|---|---|\n| gnmt | <script>alert(1)</script> | 2.37x |\n"
            "| a\\|b | x_y*z* | n/a |\n\n- note & <img src=x onerror=alert(1)>\n- input-bound: the numbers measure the "
            "loader (A)\nplain <i>line</i>\n")
    out = html.markdown_to_html(text)
    assert "<script" not in out and "<img" not in out and "<i>" not in out and "<b>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out and "&amp; &lt;img src=x" in out
    assert '<td>a|b</td><td>x_y*z*</td>' in out  # an escaped bar stays in its cell; * and _ are text
    assert '<td class="num">2.37x</td>' in out
    assert '<table data-section="Runs &lt;b&gt;">' in out
    assert '<span class="flag">input-bound: the numbers measure the loader</span>' in out


@pytest.fixture(scope="module")
def t4_page(tmp_path_factory):
    """The T4 study (four GPU counts, five seeds each) as a page and as JSON, from one command."""
    root = tmp_path_factory.mktemp("t4")
    for gpus, seeds in T4_EPOCHS.items():
        for seed, epochs in seeds.items():
            write_run(root / "runs" / f"g{gpus}" / f"s{seed}" / "mlperf.log", gpus, seed, epochs, THROUGHPUT[gpus])
    out = run_cli("harness.report", str(root / "runs"), "--html", str(root / "report.html"),
                  "--json", str(root / "report.json"))
    assert out.returncode == 0, out.stderr
    return root / "report.html", json.loads((root / "report.json").read_text())


def test_the_page_is_one_file_that_loads_nothing(t4_page):
    page, _ = t4_page
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    sources = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert len(re.findall(r"<figure", text)) == 4  # quality, time to train, epochs, speedup
    # the figure comes before any table, list or paragraph of text
    assert text.index('<figure class="headline"') < min(text.find(t) for t in ("<table", "<ul", "<p>") if t in text)


def _rows(browser, section):
    """The rows of the table under a heading that starts with `section`, as {header: cell} dicts."""
    return browser.evaluate(f"""(() => {{
        const t = [...document.querySelectorAll('table')].find(t => t.dataset.section.startsWith({json.dumps(section)}));
        if (!t) return null;
        const head = [...t.querySelectorAll('thead th')].map(th => th.innerText);
        return [...t.querySelectorAll('tbody tr')].map(tr => Object.fromEntries(
            [...tr.children].map((td, i) => [head[i], td.innerText])));
    }})()""")


def _drawn(png: bytes, box: dict) -> bool:
    """The screenshot's pixels inside box hold a picture, not a blank or a broken-image square."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    crop = image.crop((int(box["x"]) + 2, int(box["y"]) + 2, int(box["x"] + box["width"]) - 2,
                       int(box["y"] + box["height"]) - 2))
    colors = crop.getcolors(maxcolors=1 << 20) or []
    inked = sum(n for n, (r, g, b) in colors if r + g + b < 600)  # lines, labels, bars: not the white ground
    return len(colors) > 20 and inked > 0.01 * crop.width * crop.height


def _boxes(browser):
    return browser.evaluate("""[...document.querySelectorAll('figure img')].map(img => {
        const r = img.getBoundingClientRect();
        return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, loaded: img.complete,
                natural: img.naturalWidth, plot: img.closest('figure').dataset.plot};
    })""")


@needs_chromium
def test_the_report_page_in_a_browser(t4_page, tmp_path):
    page, data = t4_page
    with chromium.Chromium() as browser:
        browser.open(page)
        assert browser.problems() == []  # no console message, no exception, no failed load
        first = browser.evaluate("""(() => {
            const f = document.querySelector('figure.headline');
            const r = f.getBoundingClientRect();
            return {top: r.top, bottom: r.bottom, plot: f.dataset.plot, innerHeight};
        })()""")
        assert first["plot"] == "speedup.png" and first["top"] < 120 and first["bottom"] <= first["innerHeight"]
        shot = browser.screenshot()
        (tmp_path / "report.png").write_bytes(shot)
        boxes = _boxes(browser)
        assert len(boxes) == 4 and all(b["loaded"] and b["natural"] > 100 for b in boxes)
        assert _drawn(shot, boxes[0])  # the headline figure, on the first screen
        whole = browser.screenshot(full_page=True)
        (tmp_path / "report_full.png").write_bytes(whole)
        assert all(_drawn(whole, b) for b in boxes), [b["plot"] for b in boxes if not _drawn(whole, b)]
        # the tables hold the JSON's numbers
        scores = _rows(browser, "Scores with 95% intervals")
        assert len(scores) == len(data["groups"]) == 4
        for g in data["groups"]:
            row = next(r for r in scores if r["platform"] == g["platform"])
            conf = g["confidence"]
            assert row["time_min"] == f"{conf['minutes']:.4g}"
            assert row["time 95% interval"] == f"{conf['interval']['low']:.4g}-{conf['interval']['high']:.4g}"
            assert row["runs"] == str(g["runs"])
        speedups = _rows(browser, "Speedup over the smallest world size")
        for s in data["speedups"]:
            row = next(r for r in speedups if r["GPUs"] == f"{s['world']} vs {s['baseline_world']}")
            iv = s["confidence"]["time_interval"]
            assert row["ttt speedup"] == f"{s['time_to_train']:.2f}x"
            assert row["ttt 95% interval"] == f"{iv['low']:.2f}x-{iv['high']:.2f}x"
            assert row["verdict"] == f"{s['world']} GPUs faster"
        verdicts = browser.evaluate("[...document.querySelectorAll('.verdicts li')].map(li => li.innerText)")
        said = [v.split(": ", 1)[1] for v in verdicts]
        assert said == [t for s in data["speedups"] for t in (s["confidence"]["text"], "chances: " + s["chances"]["text"])]
        text = browser.evaluate("document.body.innerText")
        assert "a 10.4x result (seed 2: 12 -> 4 epochs) happens with probability 4.0%" in text
        assert browser.pdf()[:5] == b"%PDF-"  # printable
        assert browser.problems() == []


@needs_chromium
def test_the_compare_page_in_a_browser(trees_dir, tmp_path):
    base = trees_dir / "v0.7" / "NVIDIA" / "results"
    out = run_cli("harness.report", str(base / "dgxa100_ngc20.06_pytorch"), str(base / "dgx1_ngc20.06_pytorch"),
                  "--compare", "--html", str(tmp_path / "c.html"), "--json", str(tmp_path / "c.json"))
    assert out.returncode == 0, out.stderr
    (pair,) = json.loads((tmp_path / "c.json").read_text())["pairs"]
    with chromium.Chromium() as browser:
        browser.open(tmp_path / "c.html")
        assert browser.problems() == []
        title = browser.evaluate("document.querySelector('h1').innerText")
        assert title == "harness.report --compare: A (dgxa100_ngc20.06_pytorch) against B (dgx1_ngc20.06_pytorch)"
        shot = browser.screenshot()
        (tmp_path / "compare.png").write_bytes(shot)
        (box,) = _boxes(browser)
        assert box["plot"] == "compare.png" and box["y"] < 120 and _drawn(shot, box)
        (row,) = _rows(browser, "A against B")
        iv = pair["confidence"]["time_interval"]
        assert row["A speedup (ttt)"] == f"{pair['time_to_train']:.2f}x" == "2.37x"
        assert row["ttt 95% interval"] == f"{iv['low']:.2f}x-{iv['high']:.2f}x" and row["verdict"] == "A faster"
        assert row["GPUs"] == "8"
