"""Checks of image files before training reads them: present, an image, whole, of the size listed.

A missing or truncated file found by a DataLoader worker ends a run when it is reached, possibly
after a whole training epoch (a bad validation image is read only at the first evaluation), and a
FIFO named as an image blocks the worker that opens it for ever. What can be checked cheaply is
checked when the model is built: every listed file exists and is a regular file; each file's header
opens (its format and size, compared with what an annotation lists) and a JPEG ends with its
end-of-image marker, the one cheap sign of a file cut short (one that does not is decoded in full to
be sure: some writers leave bytes after the marker); each rank checks its share of both splits.
`python -m harness.check_data` decodes every file (decode=True).

PIL decodes here, as the loaders do (Pillow's JPEG decoder is libjpeg-turbo): a file PIL reads is
a file training reads. Pillow has no integrity check for JPEG (Image.verify() checks PNG only), so
"whole" means "decodes".

    python -c "from harness.interface.images import image_problem; print(image_problem('x.JPEG', decode=True))"
"""
from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from PIL import Image

EOI = b"\xff\xd9"  # JPEG's end-of-image marker
_TAIL = 4096  # bytes searched for the marker from the end (trailing padding after it is harmless)
# what PIL raises for a file that is not a readable image: truncated data, bad markers, unknown formats
DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)


def _ends_whole(path: str | Path) -> bool:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - _TAIL))
        return EOI in f.read()


def describe_error(err: BaseException) -> str:
    first = (str(err).strip().splitlines() or [""])[0]
    return first or type(err).__name__


def what_is_wrong(err: BaseException) -> str:
    """A few words for an error reading an image: the file system's (missing, permission) or the
    decoder's (PIL's errors carry no errno)."""
    if isinstance(err, FileNotFoundError):
        return "is missing"
    if isinstance(err, OSError) and err.errno is not None:
        return f"cannot be read ({err.strerror or err})"
    text = describe_error(err)
    if "cannot identify image file" in text:
        return "is not an image PIL can read"
    return f"is truncated or corrupt ({text})"


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in a few words, from its st_mode."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


@dataclass(frozen=True)
class ImageFacts:
    path: str
    problem: Optional[str] = None  # what is wrong, in a few words; None for a readable image
    format: Optional[str] = None  # PIL's name of the format the content has ("JPEG", "PNG"), whatever the name
    mode: Optional[str] = None  # "RGB", "L" (greyscale), "CMYK", ...


def probe(path: str | Path, *, decode: bool = False, size: Optional[tuple[int, int]] = None) -> ImageFacts:
    """What the file is, and what is wrong with it if anything (when `size`, width x height, is given,
    a different size is wrong). decode=False reads the header and, for a JPEG, the file's end."""
    path = str(path)
    try:
        st = os.stat(path)
    except OSError as err:
        return ImageFacts(path, what_is_wrong(err))
    if not stat.S_ISREG(st.st_mode):  # opening a FIFO waits for a writer for ever
        return ImageFacts(path, f"is {file_kind(st.st_mode)}, not an image file")
    nbytes = st.st_size
    if nbytes == 0:
        return ImageFacts(path, "is empty (0 bytes)")
    fmt = mode = None
    try:
        with Image.open(path) as image:
            fmt, mode = image.format, image.mode
            if size is not None and image.size != tuple(size):
                return ImageFacts(path, f"is {image.size[0]}x{image.size[1]}, its annotation says {size[0]}x{size[1]}",
                                  fmt, mode)
            if decode or (fmt == "JPEG" and not _ends_whole(path)):
                image.load()
    except DECODE_ERRORS as err:
        return ImageFacts(path, what_is_wrong(err), fmt, mode)
    return ImageFacts(path, None, fmt, mode)


def image_problem(path: str | Path, *, decode: bool = False, size: Optional[tuple[int, int]] = None) -> Optional[str]:
    """None when the file is a readable image (of `size`, when given); otherwise what is wrong."""
    return probe(path, decode=decode, size=size).problem


def probe_all(items: Iterable[tuple[str | Path, Optional[tuple[int, int]]]], *, decode: bool = False,
              threads: int = 8) -> list[ImageFacts]:
    """probe() of every item (path, expected size or None), in the items' order. Threads overlap the
    reads (opening a file waits on the disk) and the decodes (Pillow's decoders release the GIL)."""
    todo = list(items)

    def one(item: tuple[str | Path, Optional[tuple[int, int]]]) -> ImageFacts:
        return probe(item[0], decode=decode, size=item[1])

    if len(todo) < 64 or threads <= 1:
        return [one(item) for item in todo]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, todo, chunksize=64))


def find_problems(items: Iterable[tuple[str | Path, Optional[tuple[int, int]]]], *, decode: bool = False,
                  threads: int = 8) -> list[tuple[str, str]]:
    """(path, problem) of every item (path, expected size or None) that has one, in the items' order."""
    return [(f.path, f.problem) for f in probe_all(items, decode=decode, threads=threads) if f.problem is not None]


def summary_of(problems: Sequence[tuple[str, str]], what_to_do: str) -> str:
    """One line: the first problem, how many more, what to do."""
    path, problem = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{path} {problem}{more}: {what_to_do}"
