"""The round view in words (harness.rounds.text) on the real v0.7 submission tree: an entry
whose throughput per accelerator disagrees with its score by more than round.OFF_BY times loses the figure,
and the view's notes and the JSON's `throughput_note` say why in one sentence; a chip-against-chip row whose
interval is open says why beneath the table, and its verdict claims no more than the interval."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from harness.results.analysis import collect
from harness.results.analysis.confidence import judge
from harness.results.read.summary import RunSummary
from harness.rounds import export, text as round_render, view as round_view
from harness.rounds.accelerators import AcceleratorPair, GeoMean


def test_a_throughput_at_odds_with_its_score_is_not_shown_and_the_notes_say_why(trees_dir):
    report = collect.build([str(trees_dir / "v0.7")], jobs=1)
    view = round_view.view(report, judge=False)
    assert view is not None
    shown = [e for e in view.entries if e.throughput_per_accelerator and e.accelerator_minutes]
    assert len(shown) >= 3 and all(e.implied_samples is None for e in view.entries)
    odd = replace(shown[0], throughput_per_accelerator=shown[0].throughput_per_accelerator * 40)
    entries = round_view._plausible([odd if e is shown[0] else e for e in view.entries])
    (hidden,) = [e for e in entries if e.implied_samples is not None]
    assert hidden.system == odd.system and hidden.throughput_per_accelerator is None and hidden.implied_samples > 5
    view = replace(view, entries=entries)
    why = round_render.throughput_note(hidden)
    assert why == (f"throughput per accelerator not shown: with its score it implies {hidden.implied_samples:.3g}x "
                   "the samples the benchmark's median system trains on")
    assert f"- {hidden.submitter}/{hidden.system}: {why}" in round_render.render_round(view, markdown=True)
    rows = export.round_json(view)["entries"]
    assert [r["throughput_note"] for r in rows] == [why if e is hidden else None for e in entries]
    assert list(rows[0])[-1] == "throughput_note"  # the key keeps its place in the JSON


def _runs(minutes, rejected=0):
    out = [RunSummary(path=f"r{i}", benchmark="bert", status="success", seed=i, time_to_train_min=m) for i, m in
           enumerate(minutes)]
    return out + [RunSummary(path=f"x{i}", benchmark="bert", status="aborted", seed=99 + i) for i in range(rejected)]


def test_an_open_interval_in_the_chip_table_is_explained_and_holds_back_the_verdict():
    """As tinycorp's v5.0 BERT: RTX 4090 (9 of 10 runs counted) against 7900 XTX; the 4090's score is void in a
    quarter of the bootstrap's resamples, so its interval reads 0x-... and the row cannot say "faster"."""
    fast, slow = [200.0 + 5 * i for i in range(9)], [290.0 + 5 * i for i in range(10)]
    j = judge("RTX 4090", _runs(fast, rejected=1), sum(sorted(fast)[1:]) / 8, "7900 XTX", _runs(slow),
              sum(sorted(slow)[1:-1]) / 8, "bert", same_unit=False)
    pair = AcceleratorPair("RTX 4090", "7900 XTX", "bert", "v5.0", "language", 6, "t/green", "t/red", 220.0, 312.5,
                           312.5 / 220.0, j.time_interval, j.verdict, j)
    view = SimpleNamespace(accelerators=[pair], means=[GeoMean("RTX 4090", "7900 XTX", "overall", 1, 1.42)])
    header, (row,) = round_render.accelerator_rows([pair])
    assert row[header.index("95% interval")].startswith("0x-") and row[header.index("verdict")] == "not distinguishable"
    text = "\n".join(round_render.accelerator_section(view, markdown=True))
    assert "- RTX 4090 vs 7900 XTX, bert v5.0, 6: not distinguishable with 10 and 10 runs" in text
    assert "open below: " in text and "resamples void RTX 4090's score" in text
    assert "a verdict claims no more than its interval" in text
