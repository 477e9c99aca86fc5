#!/usr/bin/env bash
# `webdedup dedup -n --near-rules onion` against onion 1.2 itself on
# ../shared/corpus/web3, in one run: paragraph decisions compared one by one
# (bench/onion_compare.py), the stripped outputs compared byte for byte, and the
# speed ratio (best of 3 wall times, input decompressed and in the page cache;
# onion reads the files concatenated in webdedup's order, sorted relative paths,
# and writes its stripped output, -s; webdedup writes its outputs, --fsync off).
# Usage: bench/onion_identical.sh [CORPUS_DIR] [ONION_BINARY]
#   (defaults ../shared/corpus/web3 and ../peers/onion-src/src/onion)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
onion=${2:-../peers/onion-src/src/onion}
[ -x "$onion" ] || { echo "no onion binary at $onion" >&2; exit 1; }
cargo build --release -q --locked -p webdedup
bin=target/release/webdedup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source bench/lib.sh
prepare_corpus "$corpus" "$tmp"
echo "commit $(git rev-parse --short HEAD), onion $("$onion" -V 2>&1 | head -1)"
# The same bytes in the same order for onion.
(cd "$tmp/in" && find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs cat) > "$tmp/all.vert"

best() { # shell command: best wall time of 3, in seconds
  for _ in 1 2 3; do
    /usr/bin/time -f "%e" -o "$tmp/time" bash -c "$1"
    cat "$tmp/time"
  done | sort -n | head -1
}
ours() { # threads
  echo "rm -rf $tmp/out && $bin dedup -i $tmp/in -o $tmp/out -t $1 -q --fsync off --dd -n --near-rules onion"
}

t_onion=$(best "$onion -q -s $tmp/all.vert > $tmp/onion.vert")
t_ours2=$(best "$(ours 2)")
t_ours1=$(best "$(ours 1)")
"$onion" -q "$tmp/all.vert" > "$tmp/onion.marked"
python3 bench/onion_compare.py "$tmp/in" "$tmp/out" "$tmp/onion.marked"
(cd "$tmp/out" && find . -name '*.dedup' | sed 's|^\./||' | LC_ALL=C sort | xargs cat) > "$tmp/ours.vert"
if cmp -s "$tmp/ours.vert" "$tmp/onion.vert"; then
  echo "stripped outputs: byte for byte identical ($(wc -c < "$tmp/ours.vert") bytes)"
else
  echo "stripped outputs differ: webdedup $(wc -c < "$tmp/ours.vert") bytes, onion $(wc -c < "$tmp/onion.vert") bytes"
fi
python3 - "$bytes" "$t_onion" "$t_ours1" "$t_ours2" <<'PY'
import sys
b, o, w1, w2 = int(sys.argv[1]), *map(float, sys.argv[2:])
print(f"onion -s            {o:6.2f}s  {b/o/1e6:6.1f} MB/s")
print(f"webdedup -t 1 onion {w1:6.2f}s  {b/w1/1e6:6.1f} MB/s  {o/w1:5.2f}x onion")
print(f"webdedup -t 2 onion {w2:6.2f}s  {b/w2/1e6:6.1f} MB/s  {o/w2:5.2f}x onion")
PY
