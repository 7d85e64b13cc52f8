#!/usr/bin/env bash
# Download and preprocess WMT16 English-German the way MLPerf's GNMT reference does
# (rnn_translator/download_dataset.sh): Europarl v7 + Common Crawl + News Commentary v11 for training,
# newstest2015+2016 as the dev set, newstest2014 as the test set; Moses tokenizer (pinned commit),
# clean-corpus-n 1..80, pairs that latin-1 cannot encode dropped, a joint BPE of 32,000 merges
# (subword-nmt, pinned commit) and its vocabulary. Needs git, perl, python3, wget and ~25 GB.
# Run it on a machine with internet access; the harness itself never downloads anything.
#
#   scripts/download_wmt16.sh outputs/datasets/wmt16
#   python -m harness.train model=gnmt dataset=wmt16 seed=1
set -euo pipefail
export LANG=C.UTF-8 LC_ALL=C.UTF-8
OUT=${1:-outputs/datasets/wmt16}
RAW="$OUT/raw"
mkdir -p "$RAW"

fetch() {
  if [ ! -f "$RAW/$1" ]; then
    wget -nv -O "$RAW/$1.part" "$2"
    mv "$RAW/$1.part" "$RAW/$1"
  fi
}
fetch europarl-v7-de-en.tgz http://www.statmt.org/europarl/v7/de-en.tgz
fetch common-crawl.tgz http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz
fetch nc-v11.tgz http://data.statmt.org/wmt16/translation-task/training-parallel-nc-v11.tgz
fetch dev.tgz http://data.statmt.org/wmt16/translation-task/dev.tgz
fetch test.tgz http://data.statmt.org/wmt16/translation-task/test.tgz
for t in europarl-v7-de-en common-crawl nc-v11 dev test; do
  mkdir -p "$RAW/$t" && tar -xzf "$RAW/$t.tgz" -C "$RAW/$t"
done

for lang in en de; do
  cat "$RAW/europarl-v7-de-en/europarl-v7.de-en.$lang" "$RAW/common-crawl/commoncrawl.de-en.$lang" \
      "$RAW/nc-v11/training-parallel-nc-v11/news-commentary-v11.de-en.$lang" > "$OUT/train.$lang"
done

MOSES="$OUT/mosesdecoder"
if [ ! -d "$MOSES" ]; then
  git clone -q https://github.com/moses-smt/mosesdecoder.git "$MOSES"
  git -C "$MOSES" reset -q --hard 8c5eaa1a122236bbf927bde4ec610906fea599e6
fi
sgm() { "$MOSES/scripts/ems/support/input-from-sgm.perl" < "$1" > "$2"; }
sgm "$RAW/dev/dev/newstest2014-deen-src.de.sgm" "$OUT/newstest2014.de"
sgm "$RAW/dev/dev/newstest2014-deen-ref.en.sgm" "$OUT/newstest2014.en"
sgm "$RAW/dev/dev/newstest2015-deen-src.de.sgm" "$OUT/newstest2015.de"
sgm "$RAW/dev/dev/newstest2015-deen-ref.en.sgm" "$OUT/newstest2015.en"
sgm "$RAW/test/test/newstest2016-deen-src.de.sgm" "$OUT/newstest2016.de"
sgm "$RAW/test/test/newstest2016-deen-ref.en.sgm" "$OUT/newstest2016.en"

for f in "$OUT"/*.de "$OUT"/*.en; do
  lang=${f##*.}
  "$MOSES/scripts/tokenizer/tokenizer.perl" -q -l "$lang" -threads 8 < "$f" > "${f%.*}.tok.$lang"
done
for f in "$OUT"/*.tok.en; do
  base=${f%.*}
  "$MOSES/scripts/training/clean-corpus-n.perl" "$base" de en "$base.clean" 1 80
done
for lang in en de; do
  cat "$OUT/newstest2015.tok.clean.$lang" "$OUT/newstest2016.tok.clean.$lang" > "$OUT/newstest_dev.tok.clean.$lang"
done

# drop pairs that latin-1 cannot encode, as the reference's filter_dataset.py does
for base in train.tok.clean newstest_dev.tok.clean; do
  python3 - "$OUT/$base.en" "$OUT/$base.de" <<'PY'
import sys
a, b = sys.argv[1:3]
pairs = list(zip(open(a, encoding="utf-8"), open(b, encoding="utf-8")))
def ok(s):
    try:
        s.encode("latin-1")
        return True
    except UnicodeEncodeError:
        return False
kept = [(x, y) for x, y in pairs if ok(x) and ok(y)]
open(a, "w", encoding="utf-8").writelines(x for x, _ in kept)
open(b, "w", encoding="utf-8").writelines(y for _, y in kept)
print(f"{a}: kept {len(kept)} of {len(pairs)} pairs")
PY
done

BPE="$OUT/subword-nmt"
if [ ! -d "$BPE" ]; then
  git clone -q https://github.com/rsennrich/subword-nmt.git "$BPE"
  git -C "$BPE" reset -q --hard 48ba99e657591c329e0003f0c6e32e493fa959ef
fi
cat "$OUT/train.tok.clean.de" "$OUT/train.tok.clean.en" | python3 "$BPE/learn_bpe.py" -s 32000 > "$OUT/bpe.32000"
for lang in en de; do
  for f in "$OUT"/*.tok.$lang "$OUT"/*.tok.clean.$lang; do
    python3 "$BPE/apply_bpe.py" -c "$OUT/bpe.32000" < "$f" > "${f%.*}.bpe.32000.$lang"
  done
done
cat "$OUT/train.tok.clean.bpe.32000.en" "$OUT/train.tok.clean.bpe.32000.de" | \
  python3 "$BPE/get_vocab.py" | cut -f1 -d ' ' > "$OUT/vocab.bpe.32000"

python -m reference_models.gnmt.data "$OUT"
