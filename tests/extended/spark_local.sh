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
source tests/extended/driver_setup.lib.sh
driver_setup "pyspark${PYSPARK_VERSION:+==$PYSPARK_VERSION}" target/spark-venv
for run in 1 2; do
  "$venv/bin/python" deploy/spark/dedup_spark.py --master 'local[2]' --input "$tmp/in$run" \
    --work "$tmp/work$run" --output "$tmp/spark$run" --tasks 3 --partitions 8 --dd \
    --store "$tmp/spark-store"
done
diff -r "$tmp/cli1" "$tmp/spark1"
diff -r "$tmp/cli2" "$tmp/spark2"
# MinHash mode: the bytes of `webdedup minhash` (outputs, .pairs, .dd, files.idx).
"$bin" minhash -q -i "$tmp/all" -o "$tmp/cli-mh" --dd --verify 0.9
pairs=$(minhash_pairs "$tmp/cli-mh")
"$venv/bin/python" deploy/spark/dedup_spark.py --master 'local[2]' --input "$tmp/all" \
  --work "$tmp/work-mh" --output "$tmp/spark-mh" --tasks 3 --partitions 8 --dd \
  --minhash --verify 0.9
diff -r "$tmp/cli-mh" "$tmp/spark-mh"
echo "pyspark $("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)') local[2]:" \
  "two runs with --store identical to webdedup dedup; --minhash identical to webdedup minhash" \
  "($pairs near-duplicates) ($((SECONDS - started)) s)"
