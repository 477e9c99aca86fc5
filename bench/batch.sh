#!/usr/bin/env bash
# Batch mode against stream mode on ../shared/corpus/web3 (decompressed to a temporary
# directory, read once before timing), 2 threads, best of 3 each, in one run:
# wall time, peak RSS, and the work directory's size per key asked.
# Usage: bench/batch.sh [CORPUS_DIR] [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
threads=${2:-2}
source bench/lib.sh
bench_start "$corpus"
best() { sort -n | head -1; }
s=$(for i in 1 2 3; do rm -rf "$tmp/s"; /usr/bin/time -f "%e %M" -o "$tmp/t" $bin dedup -q -t "$threads" -i "$tmp/in" -o "$tmp/s" --json "$tmp/s.json"; cat "$tmp/t"; done | best)
b=$(for i in 1 2 3; do rm -rf "$tmp/b" "$tmp/w"; /usr/bin/time -f "%e %M" -o "$tmp/t" $bin batch run -t "$threads" -i "$tmp/in" -o "$tmp/b" -w "$tmp/w" 2> "$tmp/b.log"; cat "$tmp/t"; done | best)
diff -r "$tmp/s" "$tmp/b" > /dev/null && echo "outputs: identical" || echo "outputs: DIFFER"
read -r ss srss <<<"$s"; read -r bs brss <<<"$b"
work=$(du -sb "$tmp/w" | cut -f1)
asked=$(python3 -c "import json;d=json.load(open('$tmp/s.json'));print(2*d['documents_read']+d['paragraphs_long'])")
echo "stream  -t $threads: ${ss}s, peak RSS ${srss} kB"
echo "batch   -t $threads: ${bs}s, peak RSS ${brss} kB ($(echo "$bs / $ss" | bc -l | xargs printf %.2f)x the time)"
echo "work directory: $work bytes for at most $asked keys asked ($(echo "$work / $asked" | bc -l | xargs printf %.2f) bytes/key)"
