"""scripts/prepare_wmt17.py on small stand-ins for the WMT17 files: the layout the loader reads, every
pair once and in its shard, the vocabulary built by the reference's algorithm when none is given."""
from __future__ import annotations

import subprocess
import sys

import pytest

from reference_models.text.language import LanguageSpec, raw, sentence_pairs
from reference_models.transformer import data as wmt
from tests.helpers import REPO

SCRIPT = REPO / "scripts" / "prepare_wmt17.py"
CORPORA = ("news-commentary-v12.de-en", "commoncrawl.de-en", "europarl-v7.de-en", "newstest2013")


def _raw_dir(tmp_path):
    train, dev, test = sentence_pairs(LanguageSpec(train_pairs=600, dev_pairs=30, test_pairs=20, seed=2))
    root = tmp_path / "raw"
    for i, name in enumerate(CORPORA):
        part = dev if name == "newstest2013" else train[i * 200: (i + 1) * 200]
        folder = root / f"unpacked{i}"  # found anywhere below the raw folder
        folder.mkdir(parents=True)
        (folder / f"{name}.en").write_text("".join(f"  {raw(s)}\n" for s, _ in part))
        (folder / f"{name}.de").write_text("".join(f"{raw(t)}\n" for _, t in part))
    (root / "newstest2014.en").write_text("".join(f"{raw(s)}\n" for s, _ in test))
    (root / "newstest2014.de").write_text("".join(f"{raw(t)}\n" for _, t in test))
    return root, [raw(s) for s, _ in train]


@pytest.mark.e2e
def test_the_prepared_folder_is_the_layout_the_loader_reads(tmp_path):
    root, sources = _raw_dir(tmp_path)
    out = tmp_path / "wmt17"
    proc = subprocess.run([sys.executable, str(SCRIPT), str(out), "--raw-dir", str(root), "--shards", "3",
                           "--workers", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "600 training pairs" in proc.stdout and "the reference's has 33,708" in proc.stdout
    assert "newstest2014.en differs from the reference's" in proc.stdout
    data = wmt.load(out, 256)
    assert len(data.train_src) == 600 and len(data.test_refs) == 20
    decoded = [data.vocab.decode_until_eos(data.train_src[i].tolist()) for i in range(600)]
    assert sorted(decoded) == sorted(sources)  # every pair once, each line stripped as the reference does
    third = (out / "utf8" / "wmt32k-encoded-train-00003-of-00003.src").read_text().splitlines()
    assert sorted(data.vocab.decode_until_eos(map(int, line.split())) for line in third) == sorted(sources[2::3])
    assert (out / "utf8" / "wmt32k-encoded-dev-00001-of-00001.dst").read_text().count("\n") == 30


def test_a_missing_source_is_one_line_naming_it_and_the_fix(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--raw-dir", str(tmp_path / "raw")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"error: neither news-commentary-v12.de-en.en, news-commentary-v12.de-en.de nor "
                                   f"training-parallel-nc-v12.tgz in {tmp_path / 'raw'}: put them there or add --download")
