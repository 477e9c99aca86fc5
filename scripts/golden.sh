#!/usr/bin/env bash
# The golden list: one line per output file of a fixed matrix of runs on the shipped
# samples (every command, every input format, exact / near / feedback / MinHash,
# embedded / --store DIR / hash-server stores, -t 1 and -t 2), as
#   RUN<TAB>OUTPUT<TAB>SHA-256
# sorted. The list of today's code is tests/golden/outputs.tsv; scripts/test.sh checks
# that the code still makes it. A change that alters outputs on purpose says so by
# writing the list again (scripts/golden.sh > tests/golden/outputs.tsv) in the same
# commit, where a reviewer sees which outputs moved.
# `--contents` prints RUN<TAB>SHA-256 only (sorted), for a change that renames outputs
# on purpose. Usage: scripts/golden.sh [--contents] [BIN] (default: target/debug/webdedup,
# built when missing). Summaries on stderr are not part of the list: their wording may
# change; the bytes users keep may not.
set -euo pipefail
cd "$(dirname "$0")/.."
contents=0
if [ "${1:-}" = "--contents" ]; then contents=1; shift; fi
bin=${1:-target/debug/webdedup}
[ -x "$bin" ] || cargo build -q --locked -p webdedup
bin=$(realpath "$bin")
samples=$PWD/sample
work=$(mktemp -d)
servers=()
cleanup() {
  stop_servers
  rm -rf "$work"
}
trap cleanup EXIT

# run NAME CMD...: CMD runs in $work/NAME with its outputs under out/ (and any side
# files it writes next to them); a run that fails stops the list.
run() {
  local name=$1
  shift
  mkdir -p "$work/runs/$name"
  (cd "$work/runs/$name" && "$@" -q >/dev/null 2>"$work/runs/$name.stderr") || {
    echo "golden: run '$name' failed:" >&2
    cat "$work/runs/$name.stderr" >&2
    exit 1
  }
}

vert=$samples/web3-mini
jsonl=$samples/web3-mini-jsonl
parquet=$samples/web3-mini-parquet
wet=$samples/web3-mini-wet
warcs=("$samples"/sqlite-recrawl/crawl-{1,2,3}.warc.gz)

# Two hash servers on free loopback ports (the kernel picks them; a race with another
# process taking one in between only fails the run, loudly).
stop_servers() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  servers=()
}
start_servers() {
  stop_servers
  local dir=$work/servers
  mkdir -p "$dir"
  python3 -c 'import socket
for _ in range(2):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); print("127.0.0.1:%d" % s.getsockname()[1]); s.close()' \
    >"$dir/servers"
  "$bin" distribute -s "$dir/servers" -o "$dir/map" >/dev/null 2>&1
  local addr
  for addr in $(cat "$dir/servers"); do
    "$bin" server -m "$dir/map" --listen "$addr" >/dev/null 2>&1 &
    servers+=($!)
  done
  for addr in $(cat "$dir/servers"); do
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null && break
      sleep 0.1
    done
  done
  map=$dir/map
}

formats=(vert jsonl parquet wet)
for f in "${formats[@]}"; do
  in=${!f}
  for t in 1 2; do
    run "dedup-$f-t$t" "$bin" dedup -i "$in" -o out -t "$t" --dd
    run "near-$f-t$t" "$bin" dedup -i "$in" -o out -t "$t" -n --dd
    run "minhash-$f-t$t" "$bin" minhash -i "$in" -o out -t "$t" --dd
  done
  run "feedback-$f" "$bin" dedup -i "$in" -o out -t 2 -f --dd
  for crawl in cc-2023-14 cc-2023-50 cc-2024-33; do
    run "store-$f" "$bin" dedup -i "$in/$crawl" -o "out-$crawl" -t 2 --store store
  done
  run "batch-$f" "$bin" batch run -i "$in" -o out -w work -t 2 --dd
  run "batch-minhash-$f" "$bin" batch run -i "$in" -o out -w work -t 2 --minhash
  run "simhash-$f" "$bin" simhash "$in" -o fps.tsv -t 2
done
run check-vert "$bin" check -i "$vert" -o "$work/runs/feedback-vert/out"
# check writes nothing but its verdict: the feedback outputs it read are the list's.
# A key set holds one kind of key: fresh servers for each run.
for f in vert jsonl; do
  in=${!f}
  start_servers
  run "servers-$f" "$bin" dedup -i "$in" -o out -t 2 -s "$map" --dd
  start_servers
  run "servers-minhash-$f" "$bin" minhash -i "$in" -o out -t 2 -s "$map"
done
stop_servers
run similar "$bin" similar "$work/runs/simhash-vert/fps.tsv" -k 3 -o pairs.tsv
run similar-clusters "$bin" similar "$work/runs/simhash-vert/fps.tsv" -k 3 --clusters -o clusters.tsv
run warc-index "$bin" warc index "${warcs[@]}" -o index.cdxj
run warc-index-cdx11 "$bin" warc index "${warcs[@]}" --format cdx11 -o index.cdx
run warc-dedup "$bin" warc dedup "${warcs[@]}" -o deduped
cdxj=$work/runs/warc-index/index.cdxj
run cdx-dups "$bin" cdx dups "$cdxj" -o dups.cdx
run cdx-revisits "$bin" cdx revisits "$cdxj" -o revisits.cdx
run cdx-dates "$bin" cdx dates "$cdxj" -o dates.txt

cd "$work/runs"
# Journals, snapshots and run ids hold run salts and timestamps; work folders hold task
# scratch: the outputs users keep are the list.
find . -type f ! -name '*.stderr' ! -name '.webdedup.run-id' ! -path '*/work/*' ! -path '*/store/*' -print0 |
  sort -z | xargs -0 sha256sum |
  while read -r sum path; do
    path=${path#./}
    printf '%s\t%s\t%s\n' "${path%%/*}" "${path#*/}" "$sum"
  done |
  if [ $contents = 1 ]; then cut -f1,3 | sort; else sort; fi
