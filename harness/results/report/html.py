"""One self-contained HTML page of a report or a comparison (`--html FILE`): the headline figure first,
the verdicts, the other plots, then every table and note the Markdown has. Plots are inlined as PNG data
URIs; a Content-Security-Policy allows nothing to load from anywhere, and there is no script; styles are
inline and printable (figures and table rows are kept whole across pages).

    python -m harness.report outputs/sweeps/X --html report.html
    python -m harness.report A B --compare --html compare.html

The page is built from the report's own Markdown (harness.results.report.sections and decision, or
comparison_render.render_compare), so it holds the same sections. That Markdown is a small known subset (##
headings, pipe tables with escaped bars, - bullets, lines of text, and `![caption](chart.png)` lines
naming a chart the caller hands over, drawn where the line stands), converted here line by line: a
general Markdown library would read `*` and `_` in log paths and platform names as emphasis and pass
raw HTML in log content through, where every cell here is escaped text. harness.bench's page
(harness/results/report/bench_page.py) and a round's (harness/rounds/page.py) are built from the same pieces;
harness.report says which page a report gets.
"""
from __future__ import annotations

import base64
import html
import re
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union

Figures = Union[Sequence[Path], Callable[[Path], list[Path]]]

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; margin: 0; }
main { max-width: 1280px; margin: 0 auto; padding: 12px 20px 40px; }
h1 { font-size: 20px; margin: 4px 0; }
h2 { font-size: 16px; margin: 22px 0 6px; border-bottom: 1px solid #ccc; }
.paths { color: #555; font-size: 12px; margin: 0 0 8px; overflow-wrap: anywhere; }
figure { margin: 6px 0; break-inside: avoid; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figure.headline img { max-height: 62vh; }
figcaption { font-size: 12px; color: #555; }
.plots { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 10px; }
.verdicts { background: #f4f7fb; border: 1px solid #d6e0ee; padding: 6px 12px; margin: 8px 0; }
.verdicts li, ul li { margin: 2px 0; }
.wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; white-space: nowrap; }
th { background: #eef1f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr { break-inside: avoid; page-break-inside: avoid; }
.flag { color: #a40000; font-weight: 600; }
@media print {
  main { max-width: none; padding: 0; }
  .wrap { overflow: visible; }
  table { font-size: 9px; }
  th, td { white-space: normal; }
  figure.headline img { max-height: 45vh; }
}
"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^()\s]+)\)$")  # a chart's line: ![caption](name.png)
NUMBER = re.compile(r"^[<>~]?-?[\d,.]+(e[-+]?\d+)?(x|%|s| min| kJ| W)?( \(d\))?$")
HEADLINES = ("compare.png", "speedup.png", "time_to_train.png", "quality.png")
CAPTIONS = {
    "compare.png": "A's speedup over B per benchmark, with 95% intervals",
    "compare_throughput.png": "A's throughput over B's (mode=throughput results)",
    "speedup.png": "speedup against GPUs: throughput and time to train (its 95% intervals shaded), with the ideal line",
    "time_to_train.png": "time to train of each run (one y-axis for every panel; red: did not converge)",
    "epochs.png": "epochs to converge: runs at each count",
    "quality.png": "quality per evaluation, each run, with the target",
}


def _split_row(line: str) -> list[str]:
    """Cells of a pipe-table row; `\\|` is a bar inside a cell."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _cell(text: str, tag: str = "td") -> str:
    cls = ' class="num"' if tag == "td" and NUMBER.match(text) else ""
    flagged = "input-bound" in text or text.endswith("FAIL")
    inner = html.escape(text)
    if flagged:
        inner = f'<span class="flag">{inner}</span>'
    return f"<{tag}{cls}>{inner}</{tag}>"


def markdown_to_html(text: str, images: Optional[Mapping[str, str]] = None) -> str:
    """The report's Markdown subset as HTML: headings, tables, bullets and lines, every text escaped; a
    `![caption](name)` line whose name is in `images` ({name: data URI}) is that figure."""
    out: list[str] = []
    lines = text.splitlines()
    i, title = 0, ""
    while i < len(lines):
        line = lines[i]
        image = IMAGE.match(line.strip())
        if image and image.group(2) in (images or {}):
            out.append(_figure(image.group(2), (images or {})[image.group(2)], caption=image.group(1)))
            i += 1
        elif line.startswith("## "):
            title = line[3:].strip()
            out.append(f'<h2 id="{_slug(title)}">{html.escape(title)}</h2>')
            i += 1
        elif line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            header = _split_row(block[0])
            rows = [_split_row(b) for b in block[2:]] if len(block) > 1 and set(block[1]) <= set("|-: ") else \
                [_split_row(b) for b in block[1:]]
            head = "".join(_cell(h, "th") for h in header)
            body = "".join("<tr>" + "".join(_cell(c) for c in r) + "</tr>" for r in rows)
            out.append(f'<div class="wrap"><table data-section="{html.escape(title, quote=True)}"><thead><tr>{head}'
                       f"</tr></thead><tbody>{body}</tbody></table></div>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_flag(html.escape(lines[i][2:]))}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        elif line.strip():
            out.append(f"<p>{_flag(html.escape(line))}</p>")
            i += 1
        else:
            i += 1
    return "\n".join(out)


FLAGGED = ("input-bound: the numbers measure the loader", "taken on a loaded machine")  # drawn in red


def _flag(escaped: str) -> str:
    for words in FLAGGED:
        escaped = escaped.replace(words, f'<span class="flag">{words}</span>')
    return escaped


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "section"


def _figures(figures: Figures) -> list[tuple[str, str]]:
    """(file name, data URI) of each PNG, made in a temporary folder when only a maker is given."""
    if callable(figures):
        with tempfile.TemporaryDirectory(prefix="report-plots-") as tmp:
            return _encode(figures(Path(tmp)))
    return _encode(list(figures))


def _encode(paths: Sequence[Path]) -> list[tuple[str, str]]:
    out = []
    for p in paths:
        data = Path(p).read_bytes()
        out.append((Path(p).name, "data:image/png;base64," + base64.b64encode(data).decode("ascii")))
    return out


def _figure(name: str, uri: str, headline: bool = False, caption: Optional[str] = None) -> str:
    caption = caption or CAPTIONS.get(name, name)
    cls = ' class="headline"' if headline else ""
    return (f'<figure{cls} data-plot="{html.escape(name, quote=True)}"><img src="{uri}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(name)}: {html.escape(caption)}</figcaption></figure>")


def page(title: str, paths: Sequence[str], figures: Figures, verdicts: Sequence[str], markdown: str,
         images: Optional[Mapping[str, str]] = None, css: str = "") -> str:
    """The page: the title, the paths it reads, the headline figure, the verdicts, the other figures,
    then the Markdown's sections (with `images` drawn where their lines stand); `css` after the styles."""
    figs = _figures(figures)
    figs.sort(key=lambda f: HEADLINES.index(f[0]) if f[0] in HEADLINES else len(HEADLINES))
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if paths:
        parts.append(f'<p class="paths">{html.escape(" | ".join(paths))}</p>')
    if figs:
        parts.append(_figure(*figs[0], headline=True))
    if verdicts:
        parts.append('<section class="verdicts"><h2 id="verdicts">Verdicts</h2><ul>'
                     + "".join(f"<li>{_flag(html.escape(v))}</li>" for v in verdicts) + "</ul></section>")
    if len(figs) > 1:
        parts.append('<h2 id="plots">Plots</h2><div class="plots">' + "".join(_figure(*f) for f in figs[1:])
                     + "</div>")
    parts.append(markdown_to_html(markdown, images))
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{CSS}{css}</style></head>\n<body><main>\n{body}\n</main></body></html>\n")
