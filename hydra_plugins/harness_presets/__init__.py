"""Each registered model's presets on Hydra's config search path: the conf/ folder of its package
(reference_models/<m>/conf: model/, dataset/, model_for/, debug/), after the harness's own conf/,
so that a model's files live in its package and the registry's list alone names them
(harness.registry.conf_folders). Hydra runs this for every composition, however it starts: a run,
a `-m` sweep, `--cfg`/`--info`, harness.config.compose, a torchrun or SLURM worker's own
`python -m harness.train`; a SLURM task reuses the search path its sweep was composed with.

    python -m harness.train --info searchpath model=gnmt

Hydra imports every module of the hydra_plugins namespace at start, for any Hydra application in
this environment: the folders are added only where the search path holds the harness's conf/, and
the registry is imported only then.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class ModelPresets(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        entries = [e.path for e in search_path.get_path() if e.path is not None]
        conf = _harness_conf()
        if conf is None or conf not in {_folder(p) for p in entries}:
            return
        from harness import registry

        for folder in registry.conf_folders():
            if not any(_folder(p) == folder for p in entries):
                search_path.append(provider=f"harness:{folder.parent.name}", path=f"file://{folder}")


def _harness_conf() -> Path | None:
    """The conf/ folder beside the harness package Python imports (harness/config/presets.py's CONF_DIR),
    found without importing it."""
    spec = importlib.util.find_spec("harness")
    return Path(spec.origin).resolve().parent.parent / "conf" if spec is not None and spec.origin else None


def _folder(path: str) -> Path | None:
    """The folder of a file:// entry, or of a bare path (Hydra's main entry, as hydra.main and
    initialize_config_dir give it); None for pkg:// and structured://."""
    if "://" in path and not path.startswith("file://"):
        return None
    return Path(path.removeprefix("file://")).resolve()
