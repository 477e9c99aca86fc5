#!/usr/bin/env bash
# `webdedup dedup -n --near-rules onion` against onion 1.2 itself on
# ../shared/corpus/web3, in one run:
# * decisions: every paragraph numbered (`<p n="K">`, bench/onion_compare.py: no
#   token or boundary changes), both tools run on the numbered corpus (onion on the
#   files concatenated in webdedup's order, sorted relative paths), and each
#   paragraph's fate compared;
# * outputs: onion's stripped output (-s) against webdedup's outputs concatenated;
# * speed: best of 3 on the original corpus (decompressed, in the page cache), onion
#   writing its stripped output, webdedup its outputs (--fsync off), 1 and 2
#   threads; wall time and CPU time (user + sys: fairer on a busy machine).
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
echo "commit $(git rev-parse --short HEAD), $("$onion" -V 2>&1 | head -1)"
concat() { (cd "$1" && find . -type f -name "${2:-*}" | sed 's|^\./||' | LC_ALL=C sort | xargs cat); }

best() { # shell command: "wall cpu" of the run with the least wall time of 3
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" bash -c "set -o pipefail; $1" || { cat "$tmp/time" >&2; exit 1; }
    read -r e u s < "$tmp/time"
    echo "$e $(awk "BEGIN{print $u + $s}")"
  done | sort -n | head -1
}
ours() { # threads input output
  echo "rm -rf $3 && $bin dedup -i $2 -o $3 -t $1 -q --fsync off -n --near-rules onion"
}
export -f concat

# onion reads the files concatenated (through a pipe, to spare the disk).
t_onion=$(best "concat $tmp/in | $onion -q -s > $tmp/onion.vert")
t_ours2=$(best "$(ours 2 "$tmp/in" "$tmp/out")")
t_ours1=$(best "$(ours 1 "$tmp/in" "$tmp/out")")

concat "$tmp/out" '*.dedup' > "$tmp/ours.vert"
rm -rf "$tmp/out"
if cmp -s "$tmp/ours.vert" "$tmp/onion.vert"; then
  echo "stripped outputs: byte for byte identical ($(wc -c < "$tmp/ours.vert") bytes)"
else
  echo "stripped outputs: $(wc -c < "$tmp/ours.vert") bytes (webdedup), $(wc -c < "$tmp/onion.vert") (onion), $(diff "$tmp/ours.vert" "$tmp/onion.vert" | grep -c '^[<>]') lines differ"
fi
rm -f "$tmp/ours.vert" "$tmp/onion.vert"

python3 bench/onion_compare.py number "$tmp/in" "$tmp/num"
rm -rf "$tmp/in"
bash -c "$(ours 2 "$tmp/num" "$tmp/num-out")"
concat "$tmp/num" | "$onion" -q | python3 bench/onion_compare.py compare "$tmp/num" "$tmp/num-out" -

python3 - "$bytes" $t_onion $t_ours1 $t_ours2 <<'PY'
import sys
b = int(sys.argv[1])
o, oc, w1, c1, w2, c2 = map(float, sys.argv[2:])
print(f"onion -s                  {o:6.2f}s wall {oc:6.2f}s cpu  {b/o/1e6:6.1f} MB/s")
for name, w, c in (("webdedup -t 1 onion rules", w1, c1), ("webdedup -t 2 onion rules", w2, c2)):
    print(f"{name} {w:6.2f}s wall {c:6.2f}s cpu  {b/w/1e6:6.1f} MB/s  {o/w:5.2f}x onion (wall), {oc/c:5.2f}x (cpu)")
PY
