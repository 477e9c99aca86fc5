#!/usr/bin/env bash
# SimHash benchmarks (issue 6): all-pairs search, single queries, fingerprinting.
#
#   bench/simhash.sh [CORPUS_DIR]        (default ../shared/corpus/web3 if present)
#   BIG=1 bench/simhash.sh               also runs 100M fingerprints (needs ~6 GB RAM)
#   THREADS=2 bench/simhash.sh           threads for the search and the CLI runs
#
# Synthetic parts need no data. Corpus parts read the web3 verticals (*.vert.zst).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${1:-../shared/corpus/web3}
THREADS=${THREADS:-2}
cargo build --release -q -p webdedup-simhash --examples
cargo build --release -q -p webdedup
B=target/release/examples
W=target/release/webdedup
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"

echo "## all pairs within k (N random fingerprints + 1% planted neighbours), $THREADS threads"
"$B/search_bench" 10000000 3 "$THREADS" 100000
"$B/search_bench" 10000000 6 "$THREADS" 20000
echo "## persisted index: 10M documents, save, load, prepare for k=3, single queries"
"$B/index_bench" 10000000 3 "$THREADS" "$(mktemp -d)/ix"
if [ "${BIG:-0}" = 1 ]; then
  "$B/search_bench" 100000000 3 "$THREADS" 0
fi

if ls "$CORPUS"/*/*.zst >/dev/null 2>&1; then
  echo "## fingerprinting, one thread, documents in memory (MB/s of document text)"
  "$B/fp_bench" 5 "$CORPUS"/*/*.zst
  echo "## end to end: simhash over the corpus, then similar -k 3 on the fingerprints"
  tmp=$(mktemp -d)
  for t in 1 "$THREADS"; do
    /usr/bin/time -f "simhash --threads $t: %e s wall, %U s user, %M KB max RSS" \
      "$W" simhash --threads "$t" "$CORPUS"/*/*.zst -o "$tmp/fps.tsv"
  done
  du -b $(ls "$CORPUS"/*/*.zst) | awk '{s+=$1} END {printf "compressed input: %.1f MB\n", s/1e6}'
  for f in "$CORPUS"/*/*.zst; do zstd -dc "$f"; done | wc -c | awk '{printf "decompressed input: %.1f MB\n", $1/1e6}'
  /usr/bin/time -f "similar -k 3: %e s wall" "$W" similar -k 3 "$tmp/fps.tsv" -o "$tmp/pairs.tsv"
  /usr/bin/time -f "similar -k 3 --dedup: %e s wall" "$W" similar -k 3 --dedup --output-dir "$tmp/dedup" "$CORPUS"/cc-2023-14/*.zst
  rm -rf "$tmp"
else
  echo "## corpus $CORPUS not found: fingerprinting benchmarks skipped"
fi
