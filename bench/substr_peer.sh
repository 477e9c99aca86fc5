#!/usr/bin/env bash
# ExactSubstr's rule beside google-research/deduplicate-text-datasets (their
# Rust tool, built outside this repository): the removed byte ranges on the
# shipped samples, and on a corpus the time and memory of both, one run each.
#
#   bench/substr_peer.sh PEER_DIR [CORPUS_DIR...]
#     PEER_DIR: a clone of their repository with `cargo build --release` done
#     CORPUS_DIR: timed (e.g. a directory of web3-jsonl); none: samples only
#   L=100 (default) sets the length threshold of both; SAMPLES=0 skips the samples.
#
# Both read the same texts: exact_substr writes them in their layout
# (`\xff\xff` + document number before each text, as their load_dataset_hf.py)
# and their pipeline runs on that file: `make`, `self-similar` (one thread),
# `collect`. Their ranges (offsets in that file) are cut to each text and
# compared per document with ours. Needs python3 and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
peer=$(cd "${1:?usage: bench/substr_peer.sh PEER_DIR [CORPUS_DIR...]}" && pwd)
shift
L=${L:-100}
cargo build --release -q -p webdedup-substr --example exact_substr
ex=$PWD/target/release/examples/exact_substr
dd=$peer/target/release/dedup_dataset
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
# Runs a command (its output discarded), then prints "seconds max_kb".
timed() { /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >/dev/null 2>&1; cat "$tmp/time"; }

# Their pipeline on $tmp/data.bin; prints "seconds max_kb" of each step.
peer_run() {
    rm -rf "$tmp/cache" "$tmp/data.bin.table.bin"
    (cd "$peer" &&
        echo "make $(timed "$dd" make --data-file "$tmp/data.bin")" &&
        echo "self-similar $(timed "$dd" self-similar --data-file "$tmp/data.bin" --length-threshold "$L" --cache-dir "$tmp/cache" --num-threads 1)" &&
        /usr/bin/time -f "%e %M" -o "$tmp/time" "$dd" collect --data-file "$tmp/data.bin" --cache-dir "$tmp/cache" --length-threshold "$L" >"$tmp/peer.out" &&
        echo "collect $(cat "$tmp/time")")
}

compare() {
    python3 - "$tmp/data.bin.starts" "$tmp/peer.out" "$tmp/ours.tsv" "$L" <<'PY'
import sys
starts_f, peer_f, ours_f, L = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
docs = [tuple(map(int, l.split())) for l in open(starts_f)]
import bisect
begins = [s for s, _ in docs]
peer = {}
lines = open(peer_f).read().split("\n")
after = lines[lines.index("out") + 1:] if "out" in lines else []
for l in after:
    if not l.strip():
        continue
    a, b = map(int, l.split())
    i = max(bisect.bisect_right(begins, a) - 1, 0)
    while i < len(docs) and docs[i][0] < b:
        s, n = docs[i]
        lo, hi = max(a, s), min(b, s + n)
        if lo < hi:
            peer.setdefault(i, set()).update(range(lo - s, hi - s))
        i += 1
ours = {}
for l in open(ours_f):
    d, a, b = map(int, l.split())
    ours.setdefault(d, set()).update(range(a, b))
def runs(bytes_):
    out, prev = [], None
    for x in sorted(bytes_):
        if prev is not None and x == prev + 1:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
        prev = x
    return out
same = diff = only_peer = only_ours = edge = 0
for d in sorted(set(peer) | set(ours)):
    p, o = peer.get(d, set()), ours.get(d, set())
    if p == o:
        same += len(runs(o))
        continue
    diff += 1
    only_peer += len(p - o)
    only_ours += len(o - p)
    n = docs[d][1]
    # A difference at a text's edge: their separators let a repeat run on
    # into `\xff\xff` (a repeated end of L-2 bytes) or start in the number's
    # zero bytes (a repeated beginning of L-3 bytes).
    if all(r[0] == 0 or r[1] == n for r in runs(p ^ o)):
        edge += 1
print(f"ranges equal in every document but {diff}; equal ranges {same}; bytes struck only by theirs {only_peer}, only by ours {only_ours}; documents whose differences all touch a text's start or end: {edge} of {diff}")
PY
}

echo "# load $(load)"
[ "${SAMPLES:-1}" = 0 ] || for s in sample/web3-mini sample/web3-mini-jsonl sample/web3-mini-parquet sample/web3-mini-wet; do
    "$ex" --length "$L" --peer-data "$tmp/data.bin" "$s" >"$tmp/ours.tsv" 2>"$tmp/ours.err"
    peer_run >/dev/null
    echo "$s (L=$L): $(compare)"
done
for c in "$@"; do
    echo "# $c, L=$L, load $(load)"
    "$ex" --length "$L" --peer-data "$tmp/data.bin" "$c" >/dev/null 2>&1
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$ex" --length "$L" "$c" 2>/dev/null >"$tmp/ours.tsv"
    echo "webdedup exact_substr (libsais, one shard): $(cat "$tmp/time") (s, max KB)"
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$ex" --length "$L" --max-memory 128 "$c" 2>/dev/null >"$tmp/ours-sharded.tsv"
    echo "webdedup exact_substr --max-memory 128 (shards merged): $(cat "$tmp/time") (s, max KB); same spans: $(cmp -s "$tmp/ours.tsv" "$tmp/ours-sharded.tsv" && echo yes || echo NO)"
    echo "their data file: $(stat -c %s "$tmp/data.bin") bytes"
    peer_run | sed 's/^/deduplicate-text-datasets /'
    echo "ranges: $(compare)"
done
