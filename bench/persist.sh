#!/usr/bin/env bash
# Persistence figures:
#  1. snapshot save and load (first and warm) time, and bytes on disk per key, at
#     10M and 100M random keys (the store_bench key generator; 1999 blocks);
#  2. journal overhead on `webdedup dedup` throughput over ../shared/corpus/web3
#     (decompressed to a temporary directory first): no journal vs the journal with
#     --fsync off / batch / always, modes interleaved, best of 5, 1 and 2 threads.
# Usage: bench/persist.sh [CORPUS_DIR] [KEYS...]   (default: web3, 10000000 100000000)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000000 100000000)
cargo build --release -q -p webdedup-store -p webdedup-dedup --examples
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (shared with other work)"
for n in "${sizes[@]}"; do
  /usr/bin/time -f "peak RSS %M kB" target/release/examples/persist_bench "$n" "$tmp"
done
if [ -d "$corpus" ]; then
  for f in $(cd "$corpus" && find . -name '*.zst' | sort); do
    mkdir -p "$tmp/in/$(dirname "$f")"
    zstd -qdc "$corpus/$f" > "$tmp/in/${f%.zst}"
  done
  cat $(find "$tmp/in" -type f) > /dev/null
  for t in 1 2; do
    target/release/examples/journal_overhead "$tmp/in" "$t" 5
  done
else
  echo "no corpus at $corpus: journal overhead not measured" >&2
fi
