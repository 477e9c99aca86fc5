#!/usr/bin/env bash
# Throughput of `webdedup dedup` on ../shared/corpus/web3, decompressed to a
# temporary directory and read once before timing, against `wc -l` over the same
# files in the same run (the I/O floor). Then the store alone at 50M random keys.
# Usage: bench/dedup.sh [CORPUS_DIR] (default ../shared/corpus/web3)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_start "$corpus" -p webdedup-store --examples --bins

best() { sort -n | head -1; }
wc_s=$(for i in 1 2 3; do /usr/bin/time -f %e wc -l $(find "$tmp/in" -type f) 2>&1 >/dev/null | tail -1; done | best)
echo "wc -l: ${wc_s}s, $(echo "$bytes / $wc_s / 1000000" | bc -l | xargs printf %.0f) MB/s"
for t in 1 2; do
  secs=$(for i in 1 2 3; do
    rm -rf "$tmp/out"
    /usr/bin/time -f "%e %M" -o "$tmp/time" $bin dedup -i "$tmp/in" -o "$tmp/out" -t $t -q --json "$tmp/stats.json"
    cat "$tmp/time"
  done | sort -n | head -1)
  read -r s rss <<<"$secs"
  bpk=$(grep -o '"bytes_per_key": [0-9.]*' "$tmp/stats.json" | cut -d' ' -f2)
  echo "webdedup -t $t: ${s}s, $(echo "$bytes / $s / 1000000" | bc -l | xargs printf %.0f) MB/s, peak RSS ${rss} kB, store $(printf %.2f "$bpk") bytes/key"
done
# Memory does not grow with the input beyond the store: the same corpus three times
# (only duplicates added) must need about the same peak RSS.
for i in 1 2 3; do mkdir -p "$tmp/x3/copy$i"; cp -r "$tmp/in/." "$tmp/x3/copy$i/"; done
rm -rf "$tmp/out"
/usr/bin/time -f "%e %M" -o "$tmp/time" $bin dedup -i "$tmp/x3" -o "$tmp/out" -t 2 -q --json "$tmp/stats.json"
read -r s rss <<<"$(cat "$tmp/time")"
echo "webdedup -t 2 on the corpus x3 ($((bytes * 3)) bytes): ${s}s, peak RSS ${rss} kB"
rm -rf "$tmp/x3" "$tmp/out"
echo "store alone, 50M random keys in batches of 4096:"
/usr/bin/time -f "peak RSS %M kB" target/release/examples/store_bench 50000000 4096
