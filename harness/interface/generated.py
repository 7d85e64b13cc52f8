"""A generated dataset on disk, written once and checked on every use.

Every model's embedded default is written by its generator the first time a run needs it. The
folder then holds a stamp, GENERATED.json, that records the generator's name and version, the
parameters it was given and the size and SHA-256 of every file it wrote. `ensure` returns the folder
when the stamp matches what is asked and every file still has its recorded content; a missing,
truncated or edited file, another version or other parameters make it write the dataset again
(into a temporary folder, moved into place in one step, so a reader never sees half of one). A file
lock makes concurrent runs (a sweep's jobs, torchrun's ranks) write it once.

    python -c "from harness.interface.generated import verify; print(verify('outputs/datasets/ncf_embedded'))"
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

log = logging.getLogger("harness.generated")

STAMP = "GENERATED.json"
LEGACY_STAMPS = ("GENERATOR.txt",)  # what earlier generators left: such a folder is regenerated
_CHUNK = 1 << 22


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != STAMP and not p.name.startswith(".lock"))


def verify(folder: str | Path, generator: Optional[str] = None, version: Optional[int] = None,
           params: Optional[dict[str, Any]] = None) -> Optional[str]:
    """None when the folder holds the dataset its stamp describes (and, when given, this generator,
    version and parameters); otherwise one line saying what differs."""
    folder = Path(folder)
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except FileNotFoundError:
        return "no generator stamp"
    except (OSError, ValueError) as err:
        return f"unreadable stamp ({err})"
    if generator is not None and stamp.get("generator") != generator:
        return f"made by {stamp.get('generator')!r}, not {generator!r}"
    if version is not None and stamp.get("version") != version:
        return f"generator version {stamp.get('version')}, wanted {version}"
    if params is not None and stamp.get("params") != json.loads(json.dumps(params)):
        return "made with other generator parameters"
    files = stamp.get("files")
    if not isinstance(files, dict) or not files:
        return "the stamp lists no files"
    for rel, want in files.items():
        path = folder / rel
        if not path.is_file():
            return f"{rel} is missing"
        if path.stat().st_size != want.get("bytes"):
            return f"{rel} has {path.stat().st_size} bytes, {want.get('bytes')} were written"
        if sha256(path) != want.get("sha256"):
            return f"{rel} was changed after it was generated (checksum differs)"
    return None


def write_stamp(folder: Path, generator: str, version: int, params: dict[str, Any]) -> None:
    files = {str(p.relative_to(folder)): {"bytes": p.stat().st_size, "sha256": sha256(p)} for p in _files(folder)}
    stamp = {"generator": generator, "version": version, "params": params, "files": files,
             "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (folder / STAMP).write_text(json.dumps(stamp, indent=1, sort_keys=True) + "\n")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".lock-{folder.name}", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        yield


def ensure(folder: str | Path, generator: str, version: int, params: dict[str, Any],
           write: Callable[[Path], Any]) -> Path:
    """`folder`, holding what `write(tmp_folder)` writes for these parameters; written only when
    missing or not what the stamp says."""
    folder = Path(folder)
    params = json.loads(json.dumps(params))  # plain JSON types, as the stamp will hold them
    with _locked(folder):
        problem = verify(folder, generator, version, params)
        if problem is None:
            return folder
        if folder.exists():
            ours = any((folder / name).exists() for name in (STAMP, *LEGACY_STAMPS))
            if not ours and any(folder.iterdir()):
                # never overwrite what a generator did not write: it may be a user's real data
                raise FileExistsError(f"{folder} holds files that no generator wrote; "
                                      "move them away or point dataset.path elsewhere")
            log.warning("regenerating %s: %s", folder, problem)
        else:
            log.info("generating %s (first use)", folder)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            write(tmp)
            write_stamp(tmp, generator, version, params)
            tmp.chmod(0o755)  # mkdtemp's 0700 would hide the data from other users
            if folder.exists():
                shutil.rmtree(folder)
            os.replace(tmp, folder)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return folder


def spawn_can_start() -> bool:
    """A spawned child re-imports the parent's __main__ by its file: a script read from standard
    input (`python - <<EOF`) has none, and a process pool would break. Such a parent works in-process."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return getattr(main, "__spec__", None) is not None or path is None or os.path.isfile(path)


def run_parallel(work: Callable[..., Any], tasks: Sequence[tuple], workers: Optional[int] = None) -> list[Any]:
    """[work(*task) for task in tasks], in order, over `workers` processes (default: every core).
    `work` must be a module-level function: spawned children import it. A generator whose every
    item comes from its own seeded stream writes the same files whichever process draws them."""
    workers = min(len(tasks), os.cpu_count() or 1) if workers is None else min(workers, len(tasks))
    if workers <= 1 or not spawn_can_start():
        return [work(*task) for task in tasks]
    # spawn, not fork: a forked child of a process whose BLAS threads already ran can hang in BLAS
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(work, *zip(*tasks)))
