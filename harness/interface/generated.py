"""A generated dataset on disk, written once and checked on every use.

Every model's embedded default is written by its generator the first time a run needs it. The
folder then holds a stamp, GENERATED.json, that records the generator's name and version, the
parameters it was given and the size and SHA-256 of every file it wrote. `ensure` returns the folder
when the stamp matches what is asked and the folder holds exactly the files it lists, with their
recorded content. Another version or other parameters make it write the dataset again (into a
temporary folder, moved into place in one step, so a reader never sees half of one). A folder that
differs from its stamp (a file added, edited, truncated or removed; a stamp that cannot be read) is
taken to be the user's: it is never deleted, and `ensure` stops with one line saying how to
regenerate it on purpose. A file lock makes concurrent runs (a sweep's jobs, torchrun's ranks) write
it once. A generator killed while it writes (SIGKILL, out of memory) leaves no part of a dataset in
the folder: the next run finds what it left beside it (a folder it marked as its own when it made it;
no other is touched), removes it, and writes the dataset again. A disk that fills while it is written is one line naming the path and data_root.

    python -c "from harness.interface.generated import verify; print(verify('outputs/datasets/ncf_embedded'))"
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from harness.interface.contract import DataError

log = logging.getLogger("harness.generated")

STAMP = "GENERATED.json"
LEGACY_STAMPS = ("GENERATOR.txt",)  # what earlier generators left: a stamp that lists no files
MARK = ".harness-staging"  # in each folder a writer stages in, naming it: proof that a leftover is the writer's
CACHE = ".harness-cache"  # what a loader keeps beside the data it read (NCF's preprocessed arrays): the harness's own
FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # a write refused for want of room
_CHUNK = 1 << 22


class UsersFolder(DataError):
    """The dataset folder holds what no generator's stamp lists: it is kept, and the run stops."""


class GenerationFull(DataError):
    """The disk (or a quota) filled while the dataset was written; nothing half-written is left."""


class ReadOnlyData(DataError):
    """The dataset must be written, and its folder cannot be: read-only storage, or another user's."""


READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}  # a write refused for want of permission


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != STAMP and not p.name.startswith(".lock"))


def _read_stamp(folder: Path) -> tuple[Optional[dict], Optional[str]]:
    """(the stamp, None), or (None, why there is none)."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except FileNotFoundError:
        return None, "no generator stamp"
    except (OSError, ValueError) as err:
        return None, f"its {STAMP} cannot be read ({err})"
    if not isinstance(stamp, dict) or not isinstance(stamp.get("files"), dict) or not stamp["files"]:
        return None, f"its {STAMP} lists no files"
    outside = next((rel for rel in stamp["files"] if Path(rel).is_absolute() or ".." in Path(rel).parts), None)
    if outside is not None:  # a dataset's file never chooses a path outside it, not even one to read
        return None, f"its {STAMP} lists {outside!r}, outside the folder"
    return stamp, None


def unlisted(folder: Path, files: dict[str, Any]) -> Optional[str]:
    """The first entry of `folder` (a file, a folder, a link) that is not a file the stamp lists nor a
    folder holding one: what someone other than the generator put there. The stamp itself and the
    loaders' CACHE are the harness's own."""
    keep_dirs = {str(parent) for rel in files for parent in Path(rel).parents if str(parent) != "."}
    for top, dirs, names in os.walk(folder):  # links are not followed: a link is an entry of its own
        here = Path(top).relative_to(folder)
        for name in sorted(dirs):
            rel = str(here / name) if str(here) != "." else name
            if rel == CACHE:
                dirs.remove(name)
            elif rel not in keep_dirs or os.path.islink(os.path.join(top, name)):
                return rel + "/"
        for name in sorted(names):
            rel = str(here / name) if str(here) != "." else name
            if rel != STAMP and (rel not in files or os.path.islink(os.path.join(top, name))):
                return rel
    return None


def _drift(folder: Path, files: dict[str, Any], checksums: bool = True) -> Optional[str]:
    """How the folder differs from the files its stamp lists, in a few words; None when it does not.
    checksums=False compares names and sizes only (no file is read)."""
    extra = unlisted(folder, files)
    if extra is not None:
        return f"{extra} is not a file its generator wrote"
    for rel, want in files.items():
        path = folder / rel
        if not path.is_file():
            return f"{rel} is missing"
        if path.stat().st_size != want.get("bytes"):
            return f"{rel} has {path.stat().st_size} bytes, {want.get('bytes')} were written"
    if checksums:
        for rel, want in files.items():
            if sha256(folder / rel) != want.get("sha256"):
                return f"{rel} was changed after it was generated (checksum differs)"
    return None


def _other_generation(stamp: dict, generator: Optional[str], version: Optional[int],
                      params: Optional[dict[str, Any]]) -> Optional[str]:
    if generator is not None and stamp.get("generator") != generator:
        return f"made by {stamp.get('generator')!r}, not {generator!r}"
    if version is not None and stamp.get("version") != version:
        return f"generator version {stamp.get('version')}, wanted {version}"
    if params is not None and stamp.get("params") != json.loads(json.dumps(params)):
        return "made with other generator parameters"
    return None


def verify(folder: str | Path, generator: Optional[str] = None, version: Optional[int] = None,
           params: Optional[dict[str, Any]] = None) -> Optional[str]:
    """None when the folder holds exactly the dataset its stamp describes (and, when given, this
    generator, version and parameters); otherwise a few words saying what differs."""
    folder = Path(folder)
    stamp, missing = _read_stamp(folder)
    if stamp is None:
        return missing
    return _other_generation(stamp, generator, version, params) or _drift(folder, stamp["files"])


def _kept(folder: Path, why: str) -> UsersFolder:
    return UsersFolder(f"{folder} differs from what its generator wrote ({why}), so it is kept as yours: to "
                       f"regenerate it on purpose, delete it (rm -r {folder}) and run again, or set dataset.path "
                       "to another folder")


def check_kept(folder: str | Path) -> None:
    """UsersFolder when `folder` exists and is not what a generator's stamp lists (names and sizes
    only: no file is read), ReadOnlyData when it must be generated where nothing can be written; the
    command calls it before anything is written. `ensure` also compares the checksums."""
    folder = Path(folder)
    with _reading(folder):
        if not folder.is_dir() or not any(folder.iterdir()):
            _check_writable(folder)
            return
        stamp, missing = _read_stamp(folder)
        if stamp is None:
            raise _owner_unknown(folder, missing)
        why = _drift(folder, stamp["files"], checksums=False)
        if why is not None:
            raise _kept(folder, why)


def _check_writable(folder: Path) -> None:
    """ReadOnlyData where `folder` must be generated and the nearest folder that exists on its way cannot
    be written (read-only storage, another user's): said before the run makes its directory."""
    place = folder if folder.is_dir() else next((p for p in folder.parents if p.is_dir()), Path("."))
    if not os.access(place, os.W_OK | os.X_OK):
        raise ReadOnlyData(f"cannot generate the dataset {folder}: {place} cannot be written (read-only, or "
                           "another user's); set data_root to a writable folder")


def _owner_unknown(folder: Path, missing: Optional[str]) -> UsersFolder:
    if any((folder / name).exists() for name in LEGACY_STAMPS):
        return _kept(folder, "an earlier generator's stamp, which lists no files")
    if (folder / STAMP).exists():
        return _kept(folder, missing or "its stamp cannot be read")
    # never overwrite what a generator did not write: it may be a user's real data
    return UsersFolder(f"{folder} holds files that no generator wrote; move them away or point dataset.path "
                       "elsewhere")


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


@contextlib.contextmanager
def _reading(folder: Path) -> Iterator[None]:
    """Wait while another process (torchrun's rank 0) rewrites the folder, without creating the lock
    file: a check writes nothing. No lock file yet means no writer has started."""
    try:
        fd = os.open(folder.parent / f".lock-{folder.name}", os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def ensure(folder: str | Path, generator: str, version: int, params: dict[str, Any],
           write: Callable[[Path], Any]) -> Path:
    """`folder`, holding what `write(tmp_folder)` writes for these parameters; written when missing
    or empty, rewritten when it holds exactly another generation's files. A folder that differs from
    its stamp, or holds no stamp, is a UsersFolder error; a disk that fills, GenerationFull."""
    folder = Path(folder)
    params = json.loads(json.dumps(params))  # plain JSON types, as the stamp will hold them
    if folder.exists() and not folder.is_dir():
        raise UsersFolder(f"{folder} is a file, not a dataset folder: move it away or set dataset.path elsewhere")
    try:
        return _ensure(folder, generator, version, params, write)
    except OSError as err:
        if err.errno not in READ_ONLY:
            raise
        return _read_only(folder, generator, version, params, err)


def _read_only(folder: Path, generator: str, version: int, params: dict[str, Any], err: OSError) -> Path:
    """`folder` as it is, where it is whole and this generation's: a dataset kept on read-only storage
    (or written by another user) is read, not locked; else one line that says where to write it."""
    with _reading(folder):
        if folder.is_dir() and verify(folder, generator, version, params) is None:
            return folder
    where = err.filename or folder.parent
    raise ReadOnlyData(f"cannot generate the dataset {folder}: {where} cannot be written "
                       f"({os.strerror(err.errno or 0)}); set data_root to a writable folder") from None


def _ensure(folder: Path, generator: str, version: int, params: dict[str, Any],
            write: Callable[[Path], Any]) -> Path:
    try:
        with _locked(folder):
            if folder.exists() and any(folder.iterdir()):
                stamp, missing = _read_stamp(folder)
                if stamp is None:
                    raise _owner_unknown(folder, missing)
                why = _drift(folder, stamp["files"])
                if why is not None:
                    raise _kept(folder, why)
                other = _other_generation(stamp, generator, version, params)
                if other is None:
                    return folder
                log.warning("regenerating %s: %s", folder, other)  # every file in it is one the stamp lists
            else:
                log.info("generating %s (first use)", folder)
            _write_in_place(folder, generator, version, params, write)
    except OSError as err:
        if err.errno not in FULL:
            raise
        where = err.filename or folder
        raise GenerationFull(f"cannot write {where}: {os.strerror(err.errno or 0)} while generating the dataset "
                             f"{folder}: free space there, or set data_root to a folder on a disk with room "
                             f"(data_root holds every generated dataset)") from None
    return folder


def _staging(folder: Path, kind: str = "") -> Path:
    """A new folder beside `folder` for a writer to stage in, marked as the generator's own (MARK names it)
    before anything else is put in it: what lets a later run prove a leftover is one to remove."""
    stage = Path(tempfile.mkdtemp(prefix=f".{folder.name}-{kind}", dir=folder.parent))
    try:
        (stage / MARK).write_text(stage.name + "\n")
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


def _partial(folder: Path) -> list[Path]:
    """What a writer of `folder` killed before it finished left beside it: its staging folders (the dataset
    half written, or the previous generation moved aside), each marked with its own name. A folder merely
    named like one (a user's `.ds-backup`, a copy of a leftover) is not provably the generator's and is left
    alone. Only the lock's holder calls this, so no living writer owns them."""
    return sorted(p for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}-") and _marked(p))


def _marked(stage: Path) -> bool:
    try:  # a link is never the generator's: it made real folders and a plain file
        return not stage.is_symlink() and not (stage / MARK).is_symlink() and (stage / MARK).read_text() == f"{stage.name}\n"
    except (OSError, UnicodeDecodeError):  # no mark (a user's folder, a file), or an unreadable one
        return False


def _write_in_place(folder: Path, generator: str, version: int, params: dict[str, Any],
                    write: Callable[[Path], Any]) -> None:
    """Write into a staging folder's `dataset`, stamp it last, and move it into place in one step; the
    previous generation is first moved into a staging folder in one step too, so a kill at any moment leaves
    either a whole stamped dataset or none at `folder` (then the next run writes it), never part of one. The
    dataset never holds the staging mark: it is the folder around it that is marked."""
    for left in _partial(folder):
        log.warning("removing %s: a partial dataset a killed generator left", left)
        shutil.rmtree(left, ignore_errors=True)
    stage = _staging(folder)
    aside: Optional[Path] = None
    try:
        tmp = stage / "dataset"
        tmp.mkdir()
        write(tmp)
        write_stamp(tmp, generator, version, params)
        tmp.chmod(0o755)  # whatever the umask, other users can read the data
        if folder.exists():  # empty, or exactly the files of another generation
            aside = _staging(folder, "old-")
            os.replace(folder, aside / "dataset")
        os.replace(tmp, folder)
    finally:
        for gone in (stage, aside):
            if gone is not None and gone.exists():
                shutil.rmtree(gone, ignore_errors=True)
