"""Generator counts that cannot make a dataset NCF trains on are refused in one line, and a dataset
already in place is kept: before, items=1 regenerated the shared debug dataset as a header alone, and
training then stopped on 'has a header but no ratings'."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import compose
from harness.errors import ConfigError
from harness.train import check_dataset
from reference_models.ncf import generate
from tests.interface.test_generated import snapshot
from tests.test_data_faults import _check

NEED = "NCF ranks each user's held-out movie against 999 the user never rated, so it needs at least 1019 movies"


@pytest.fixture
def debug(tmp_path: Path, capsys) -> tuple[list[str], Path]:
    """The debug preset's dataset, generated under a data_root of the test's own."""
    overrides = ["model=ncf", "+debug=ncf", f"data_root={tmp_path}/data"]
    code, lines = _check(capsys, overrides)
    assert code == 0 and lines == []
    return overrides, tmp_path / "data"


@pytest.mark.parametrize("items", [1, 41, 1018])
def test_too_few_items_are_refused_before_anything_is_written(debug, capsys, items: int) -> None:
    overrides, root = debug
    before = snapshot(root)
    code, lines = _check(capsys, [*overrides, f"dataset.generator.items={items}"])
    said = f"dataset.generator.items={items}: {NEED}; choose items >= 1019"
    assert code == 2 and lines == [said]
    with pytest.raises(ConfigError) as caught:  # harness.train: exit 2, before its run directory
        check_dataset(compose([*overrides, f"dataset.generator.items={items}", "device=cpu"]))
    assert str(caught.value) == said
    assert snapshot(root) == before


def test_counts_whose_draw_rates_too_few_movies_keep_the_dataset_in_place(debug, capsys) -> None:
    overrides, root = debug
    before = snapshot(root)
    code, lines = _check(capsys, [*overrides, "dataset.generator.items=1100", "dataset.generator.users=30"])
    assert code == 1 and lines == [
        "the generator's users=30, items=1100, mean_ratings=40.0 rate only 414 distinct movies, and NCF needs at "
        "least 1019: raise users or mean_ratings (or lower popularity)"]
    assert snapshot(root) == before  # the debug dataset is whole, and nothing was left beside it


@pytest.mark.parametrize("items", [5, 100])
def test_the_generator_command_refuses_them_as_a_bad_option(tmp_path: Path, capsys, items: int) -> None:
    with pytest.raises(SystemExit) as caught:
        generate.generator_cli.generator_main(generate.__doc__, generate.trainable, generate.ensure,
                                              [str(tmp_path / "out"), "--items", str(items)])
    assert caught.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: items={items}: {NEED}; choose items >= 1019")
    assert not (tmp_path / "out").exists()


def test_the_spec_refuses_what_the_generator_cannot_write_as_every_generators_spec_does() -> None:
    with pytest.raises(ValueError, match="^items=39: each user rates 20 movies of at most half of them; choose "
                                         "items >= 40$"):
        generate.GeneratorSpec(items=39)
