"""Prepare WMT17 English-German in MLPerf's Transformer layout, as the reference's process_data.py does.

    python scripts/prepare_wmt17.py outputs/datasets/wmt17 --raw-dir raw_data --vocab vocab.ende.32768
    python scripts/prepare_wmt17.py outputs/datasets/wmt17 --raw-dir raw_data --download   # fetch what is missing
    python -m harness.train model=transformer dataset=wmt17 seed=1

--raw-dir holds the reference's sources, as archives or already unpacked (found anywhere below it):
training-parallel-nc-v12.tgz (news-commentary-v12.de-en.{en,de}), training-parallel-commoncrawl.tgz
(commoncrawl.de-en.{en,de}), training-parallel-europarl-v7.tgz (europarl-v7.de-en.{en,de}) for
training, dev.tgz (newstest2013.{en,de}) for the dev shard, and the plain newstest2014.en and
newstest2014.de that the reference translates for BLEU. --download fetches whichever is missing from
the reference's addresses (the only step that needs the internet; the harness never downloads).

Then, as process_data.py: the three corpora are joined per language in the reference's order;
the vocabulary is --vocab, the reference's vocab.ende.32768 (33,708 subtokens; MLPerf shipped it
with the v0.7 reference and NVIDIA's container holds it as reference_dictionary.ende.txt), or, if
none is given, one built from the training text with the reference's algorithm (min_count 6 over
about 1 MB sampled from each file), which need not be the same file; every pair (each line
stripped) is encoded with EOS appended and dealt round robin into 100 shards
utf8/wmt32k-encoded-train-NNNNN-of-00100.{src,dst}, each shuffled (with a fixed seed here, where the
reference's shuffle was unseeded); newstest2013 becomes the one dev shard; newstest2014.{en,de} are
copied, their MD5s checked against the reference's verify_dataset.sh. Encoding runs on every core.
"""
from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import shutil
import sys
import tarfile
import urllib.request
from itertools import islice
from typing import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reference_models.transformer import data as layout  # noqa: E402
from reference_models.transformer.subwords import build, count_tokens, sampled_lines  # noqa: E402
from reference_models.transformer.tokenizer import Subtokenizer, write_vocab  # noqa: E402
from harness.usage import module_doc  # noqa: E402

TRAIN = [  # (archive URL, English file, German file), in the reference's order
    ("http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz",
     "news-commentary-v12.de-en.en", "news-commentary-v12.de-en.de"),
    ("http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz", "commoncrawl.de-en.en", "commoncrawl.de-en.de"),
    ("http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz", "europarl-v7.de-en.en", "europarl-v7.de-en.de"),
]
DEV = ("http://data.statmt.org/wmt17/translation-task/dev.tgz", "newstest2013.en", "newstest2013.de")
TEST_URL = "https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de/"
TEST_MD5 = {"newstest2014.en": "dabf51a9c02b2235632f3cee75c72d49", "newstest2014.de": "f6c3818b477e4a25cad68b61cc883c17"}
TRAIN_SHARDS, MIN_COUNT, CHUNK = 100, 6, 20000


def find(root: Path, name: str) -> Path | None:
    return next(iter(sorted(root.rglob(name))), None)


def fetch(url: str, dest: Path) -> None:
    print(f"downloading {url}", flush=True)
    part = dest.with_name(dest.name + ".part")
    urllib.request.urlretrieve(url, part)
    part.rename(dest)


def unpacked(raw: Path, url: str, names: tuple[str, ...], download: bool) -> list[Path]:
    """The files `names` below raw, unpacking (and with download, fetching) their archive first."""
    found = [find(raw, n) for n in names]
    if all(found):
        return found  # type: ignore[return-value]
    archive = raw / url.rsplit("/", 1)[1]
    if not archive.is_file():
        if not download:
            sys.exit(f"error: neither {', '.join(names)} nor {archive.name} in {raw}: put them there or add --download")
        fetch(url, archive)
    with tarfile.open(archive) as tar:
        tar.extractall(raw, filter="data")  # members stay inside raw
    found = [find(raw, n) for n in names]
    if not all(found):
        sys.exit(f"error: {archive.name} holds no {', '.join(n for n, f in zip(names, found) if not f)}")
    return found  # type: ignore[return-value]


def _lines(paths: list[Path]) -> Iterator[str]:
    for path in paths:
        with open(path, encoding="utf-8", newline="\n") as f:
            yield from (line.strip() for line in f)


_TOKENIZER: Subtokenizer | None = None


def _init(vocab: str) -> None:
    global _TOKENIZER
    _TOKENIZER = Subtokenizer.from_file(vocab)


def _encode(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    enc = _TOKENIZER.encode  # type: ignore[union-attr]
    return [(" ".join(map(str, enc(en, add_eos=True))), " ".join(map(str, enc(de, add_eos=True)))) for en, de in pairs]


def encode_shards(out: Path, tag: str, en: list[Path], de: list[Path], shards: int, vocab: Path, workers: int) -> int:
    """Encode the pairs into round-robin shards, then shuffle each; the number of pairs."""
    names = [out / layout.SHARD_DIR / layout.shard_name(tag, n + 1, shards) for n in range(shards)]
    files = [(open(p.with_suffix(".src"), "w", encoding="ascii"), open(p.with_suffix(".dst"), "w", encoding="ascii"))
             for p in names]
    pairs = zip(_lines(en), _lines(de))
    chunks = iter(lambda: list(islice(pairs, CHUNK)), [])
    count = 0
    with multiprocessing.Pool(workers, _init, (str(vocab),)) as pool:
        for encoded in pool.imap(_encode, chunks):
            for src, tgt in encoded:
                f_src, f_tgt = files[count % shards]
                f_src.write(src + "\n")
                f_tgt.write(tgt + "\n")
                count += 1
            print(f"\r{tag}: {count:,} pairs", end="", flush=True)
    print()
    for f_src, f_tgt in files:
        f_src.close()
        f_tgt.close()
    rng = random.Random(0)
    for name in names:
        src_lines = name.with_suffix(".src").read_text(encoding="ascii").splitlines(keepends=True)
        tgt_lines = name.with_suffix(".dst").read_text(encoding="ascii").splitlines(keepends=True)
        order = list(range(len(src_lines)))
        rng.shuffle(order)
        name.with_suffix(".src").write_text("".join(src_lines[i] for i in order), encoding="ascii")
        name.with_suffix(".dst").write_text("".join(tgt_lines[i] for i in order), encoding="ascii")
    return count


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=module_doc(__name__).splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--raw-dir", type=Path, required=True, help="the sources, archives or unpacked")
    parser.add_argument("--vocab", type=Path, help="the reference's vocab.ende.32768; built from the text if left out")
    parser.add_argument("--download", action="store_true", help="fetch missing sources from the reference's addresses")
    parser.add_argument("--shards", type=int, default=TRAIN_SHARDS)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    out, raw = args.out_dir, args.raw_dir
    raw.mkdir(parents=True, exist_ok=True)
    (out / layout.SHARD_DIR).mkdir(parents=True, exist_ok=True)

    train = [unpacked(raw, url, (en, de), args.download) for url, en, de in TRAIN]
    dev = unpacked(raw, DEV[0], DEV[1:], args.download)
    for name, want in TEST_MD5.items():
        src = find(raw, name)
        if src is None:
            if not args.download:
                sys.exit(f"error: no {name} in {raw}: put it there or add --download")
            src = raw / name
            fetch(TEST_URL + name, src)
        if md5(src) != want:
            print(f"warning: {name} differs from the reference's (MD5 {md5(src)}, wanted {want})", flush=True)
        shutil.copyfile(src, out / name)

    vocab = out / layout.VOCAB_FILE
    if args.vocab is not None:
        shutil.copyfile(args.vocab, vocab)
    else:
        print(f"building the vocabulary from the training text (min_count {MIN_COUNT})", flush=True)
        sample = (line for pair in train for path in pair for line in sampled_lines(path))
        write_vocab(vocab, build(count_tokens(sample), MIN_COUNT))
    size = len(Subtokenizer.from_file(vocab))
    print(f"{layout.VOCAB_FILE}: {size:,} subtokens" + ("" if size == 33708 else " (the reference's has 33,708)"))

    pairs = encode_shards(out, "train", [p[0] for p in train], [p[1] for p in train], args.shards, vocab, args.workers)
    encode_shards(out, "dev", [dev[0]], [dev[1]], 1, vocab, args.workers)
    print(f"{pairs:,} training pairs in {out}")


if __name__ == "__main__":
    main()
