#!/usr/bin/env bash
# Near mode (-n) against exact mode on ../shared/corpus/web3, one thread, in one run
# (decompressed to a temporary directory and read once before timing; best of 3),
# then feedback-mode costs and `webdedup check`, then the quality report
# (bench/near_report.py: paragraphs kept per crawl and language, and 20 near
# duplicates beside their originals).
# Usage: bench/near.sh [CORPUS_DIR] (default ../shared/corpus/web3)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
source bench/lib.sh
bench_start "$corpus"
run() { # name, args...
  local name=$1; shift
  local best
  best=$(for i in 1 2 3; do
    rm -rf "$tmp/$name"
    /usr/bin/time -f "%e %U %M" -o "$tmp/time" $bin dedup -i "$tmp/in" -o "$tmp/$name" -t 1 -q --fsync off --dd --json "$tmp/$name.json" "$@"
    cat "$tmp/time"
  done | sort -n | head -1)
  read -r s u rss <<<"$best"
  python3 - "$tmp/$name.json" "$name" "$s" "$u" "$rss" "$bytes" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); name, s, u, rss, b = sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
print(f"{name:14s} {s:6.2f}s wall {u:6.2f}s user  {b/s/1e6:6.1f} MB/s  paragraphs kept {d['paragraphs_retained']/d['paragraphs_read']*100:5.1f}%  keys {d['keys_stored']:,}  {d['bytes_per_key']:.2f} B/key  peak RSS {rss} kB")
PY
}
run exact
run near -n
run near-smooth -n --smooth
run exact-fb -f
run near-fb -n -f
echo "check (exact, every reference):"
$bin check -i "$tmp/in" -o "$tmp/exact-fb" 2>&1 | tail -8
echo "check (near, every reference):"
$bin check -i "$tmp/in" -o "$tmp/near-fb" --near 2>&1 | tail -8
python3 bench/near_report.py "$tmp/in" "$tmp/exact" "$tmp/near" "$tmp/near-smooth" "$tmp/near-fb"
