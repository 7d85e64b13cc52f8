"""The round view in words (harness.rounds.text) on the real v0.7 submission tree: an entry
whose throughput per accelerator disagrees with its score by more than round.OFF_BY times loses the figure,
and the view's notes and the JSON's `throughput_note` say why in one sentence."""
from __future__ import annotations

from dataclasses import replace

from harness.results.analysis import collect
from harness.rounds import export, text as round_render, view as round_view


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
