"""One line for each way the composition of a command line can fail: an unknown group choice, an
unknown option (with the options beside it, the closest first), a value of the wrong type or not among
a choice's values, a list indexed by a name. harness.config.compose raises ConfigError with them.

    python -m harness.train model.lr=0.01    # unknown option 'model.lr'; did you mean 'model.learning_rate'? ...
"""
from __future__ import annotations

import difflib
import re
from typing import Any, Optional

from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf import DictConfig, OmegaConf

from harness.config.presets import choices, compose_unchecked

# the command-line options that choose a group: the rest of a command line changes values in them
GROUPS = ("model", "dataset")


def value_message(overrides: list[str], err: ValueError) -> str:
    groups = [o for o in overrides if o.split("=", 1)[0] in GROUPS]
    try:
        defaults = compose_unchecked(groups)
    except Exception:
        defaults = None
    for override in overrides:
        parts = override.split("=", 1)[0].lstrip("+~").split(".")
        for i in range(1, len(parts)):
            node = OmegaConf.select(defaults, ".".join(parts[:i])) if defaults is not None else None
            if OmegaConf.is_list(node) and not parts[i].lstrip("-").isdigit():
                where = ".".join(parts[:i])
                return (f"{override}: {where} is a list; give a position ({where}.0=...) "
                        f"or the whole list ({where}=[...])")
    return f"cannot apply the command line: {str(err).splitlines()[0]}"


def missing_group_message(err: MissingConfigException) -> str:
    group, _, name = (err.missing_cfg_file or "").rpartition("/")
    options = ", ".join(err.options or choices(group))
    if group:
        return f"unknown {group} '{name}'; choose one of: {options}"
    return str(err).splitlines()[0]


_NOT_A_CHOICE = re.compile(r"Invalid value '(.*)', expected one of \[(.*)\]")


_IN_PRESET = re.compile(r"In '([^/']+)/([^']+)': ")


def composition_message(err: ConfigCompositionException, overrides: list[str]) -> str:
    cause = err.__cause__ or err.__context__  # Hydra raises some inside an except block, without `from`
    first = str(err).splitlines()[0]
    preset = _IN_PRESET.match(first)
    if preset and cause is not None:  # a preset file's keys that the chosen model does not have
        return preset_message(preset.group(1), preset.group(2), cause, overrides)
    choice = _NOT_A_CHOICE.match(str(cause)) if cause is not None else None
    if choice and getattr(cause, "full_key", None):  # a Choice field: the values as the user types them
        return f"{cause.full_key}={choice.group(1)} is not an option; choose one of: {choice.group(2)}"  # type: ignore[union-attr]
    if first.startswith(("Could not override '", "Could not append to config. An item is already at '")):
        key = first.split("'")[1]
        if cause is not None and ("not in struct" in str(cause) or "not in '" in str(cause)):
            return f"unknown option '{key}'; {known_options(key, overrides)}"
        if cause is not None:
            return f"bad value for '{key}': {omegaconf_message(cause)}"
    if cause is not None:
        return omegaconf_message(cause)
    return first


def preset_message(group: str, name: str, cause: BaseException, overrides: list[str]) -> str:
    """'+debug=resnet is model=resnet's preset, not model=ncf's: use +debug=ncf', or the preset and what
    in it does not fit."""
    model = next((o.split("=", 1)[1] for o in overrides if o.split("=", 1)[0] == "model"), None)
    if model and name != model and name in choices("model"):
        return f"+{group}={name} is model={name}'s preset, not model={model}'s: use +{group}={model}"
    return f"+{group}={name}: {omegaconf_message(cause)}"


def omegaconf_message(err: BaseException) -> str:
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    key = getattr(err, "full_key", None)
    return f"{key}: {msg}" if key and key not in msg else msg


def known_options(key: str, overrides: list[str]) -> str:
    """The options beside a misspelt one, of the model and dataset this command line picks, with
    the closest names first where some are close (model.lr: did you mean model.learning_rate?)."""
    parent, _, leaf = key.rpartition(".")
    try:
        cfg = compose_unchecked([o for o in overrides if o.split("=", 1)[0] in GROUPS])
    except Exception:
        return "run with --cfg job to list the options"
    node = OmegaConf.select(cfg, parent) if parent else cfg
    if isinstance(node, DictConfig):
        names = [str(k) for k in node.keys()]
        close = _close_names(leaf, names)
        where = f"'{parent}' has" if parent else "options are"
        hint = f"did you mean {' or '.join(repr('.'.join(filter(None, (parent, c)))) for c in close)}? " if close else ""
        return f"{hint}{where}: {', '.join(names)}"
    return "run with --cfg job to list the options"


def _close_names(name: str, names: list[str]) -> list[str]:
    """Names like `name`: difflib's close matches, and the names it abbreviates (lr: learning_rate)."""
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    initials = [n for n in names if "_" in n and "".join(w[0] for w in n.split("_") if w) == name]
    prefixed = [n for n in names if len(name) >= 3 and n.startswith(name)]
    return list(dict.fromkeys(initials + close + prefixed))[:3]


def kind_message(override: str, old: Any, new: Any) -> Optional[str]:
    """`override` gave `new` where the preset has `old`: None when it is of the same kind (a float
    takes an integer), else the line that says what it needs."""
    if isinstance(old, bool) == isinstance(new, bool) and _same_kind(old, new):
        return None
    return f"{override}: expected {_kind(old)} like the default {old!r}"


def _same_kind(old: Any, new: Any) -> bool:
    if isinstance(old, float):
        return isinstance(new, (int, float))
    if isinstance(old, int):
        return isinstance(new, int)
    if isinstance(old, str):
        return isinstance(new, str)
    if OmegaConf.is_list(old):
        return OmegaConf.is_list(new)
    if OmegaConf.is_dict(old):
        return OmegaConf.is_dict(new)
    return True


def _kind(value: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        type(value), "a list" if OmegaConf.is_list(value) else "a mapping")
