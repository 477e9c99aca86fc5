#!/usr/bin/env bash
# Extended check (not in scripts/test.sh: it downloads pyspark, ~400 MB, and needs
# Java 17 or later, installed by scripts/deps.sh java when missing): the Spark
# driver of batch mode in local[2] mode (bound to 127.0.0.1), run twice with --store
# as crawls are (a crawl, then the next), compared byte for byte with
# `webdedup dedup --store` run the same way; then with --minhash (and a setting
# passed through) on all three crawls, compared with `webdedup minhash`.
#
# Usage: tests/extended/spark_local.sh   (PYSPARK_VERSION=X.Y.Z pins pyspark;
# default: the newest that installs; the venv is target/spark-venv)
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
scripts/deps.sh java
if [ -z "${WEBDEDUP_BIN:-}" ]; then
  cargo build -q --locked -p webdedup
  WEBDEDUP_BIN=$PWD/target/debug/webdedup
fi
bin=$WEBDEDUP_BIN
venv=target/spark-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -U "pyspark${PYSPARK_VERSION:+==$PYSPARK_VERSION}"
"$venv/bin/pip" install -q --disable-pip-version-check ./python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/in1" "$tmp/in2"
cp -r sample/web3-mini/cc-2023-14 sample/web3-mini/cc-2023-50 "$tmp/in1/"
cp -r sample/web3-mini/cc-2024-33 "$tmp/in2/"
"$bin" dedup -q -i "$tmp/in1" -o "$tmp/cli1" --dd --store "$tmp/cli-store"
"$bin" dedup -q -i "$tmp/in2" -o "$tmp/cli2" --dd --store "$tmp/cli-store"
for run in 1 2; do
  "$venv/bin/python" deploy/spark/dedup_spark.py --master 'local[2]' --input "$tmp/in$run" \
    --work "$tmp/work$run" --output "$tmp/spark$run" --tasks 3 --partitions 8 --dd \
    --store "$tmp/spark-store"
done
diff -r "$tmp/cli1" "$tmp/spark1"
diff -r "$tmp/cli2" "$tmp/spark2"
# MinHash mode: the bytes of `webdedup minhash` (outputs, .pairs, .dd, files.idx).
mkdir -p "$tmp/all"
cp -r "$tmp/in1/." "$tmp/in2/." "$tmp/all/"
"$bin" minhash -q -i "$tmp/all" -o "$tmp/cli-mh" --dd --verify 0.9
pairs=$(find "$tmp/cli-mh" -name '*.pairs' -exec cat {} + | wc -l)
[ "$pairs" -gt 0 ] || { echo "webdedup minhash found no near-duplicates in the sample" >&2; exit 1; }
"$venv/bin/python" deploy/spark/dedup_spark.py --master 'local[2]' --input "$tmp/all" \
  --work "$tmp/work-mh" --output "$tmp/spark-mh" --tasks 3 --partitions 8 --dd \
  --minhash --verify 0.9
diff -r "$tmp/cli-mh" "$tmp/spark-mh"
echo "pyspark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)') local[2]:" \
  "two runs with --store identical to webdedup dedup; --minhash identical to webdedup minhash" \
  "($pairs near-duplicates) ($((SECONDS - started)) s)"
