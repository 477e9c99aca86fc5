#!/usr/bin/env bash
# Extended check (not in scripts/test.sh: it downloads pyspark, ~400 MB, and needs
# Java 17): the Spark driver of batch mode in local[2] mode over the shipped sample,
# compared byte for byte with `webdedup dedup`. Usage: tests/extended/spark_local.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v java >/dev/null || { echo "needs java (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
cargo build -q --locked -p webdedup
venv=target/spark-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q "pyspark==4.0.1" ./python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" deploy/spark/dedup_spark.py --master 'local[2]' --input sample/web3-mini \
  --work "$tmp/work" --output "$tmp/spark" --tasks 3 --partitions 8 --dd
target/debug/webdedup dedup -q -i sample/web3-mini -o "$tmp/cli" --dd
diff -r "$tmp/cli" "$tmp/spark"
echo "spark local[2]: outputs identical to webdedup dedup"
