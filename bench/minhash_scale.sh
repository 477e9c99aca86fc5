#!/usr/bin/env bash
# MinHash at scale: N synthetic JSON Lines documents (bench/minhash_synth.py, a known
# share of near-duplicates) through `webdedup minhash`, once on the embedded store
# and once on 3 hash servers on loopback. Prints documents/s, MB/s, CPU time, peak
# RSS (of the worker, and of each server), stored band keys and bytes per key.
#
# Usage: bench/minhash_scale.sh [N]     (default N = 10,000,000; about 600 bytes
#                                        of JSON Lines a document, zstd on disk)
# Environment: THREADS (worker threads, default 2), DUPS (share of near-duplicates,
# default 0.2), WORK (scratch directory, default target/minhash-scale; the input is
# kept there and reused for the same N and DUPS), WEBDEDUP (the binary, default
# target/release/webdedup, built if missing), KEEP=1 (keep the outputs), SMAPS=DIR
# (save each server's /proc/PID/smaps and status, and `webdedup status --json`, in
# DIR after the run: where its memory is, bench/smaps_summary.py reads them),
# SERVERS_ONLY=1 (skip the embedded run; the servers' output's hash is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000000}
source bench/lib.sh
scale_settings
synth_input "$n" "$dups" "$work"
cleanup() {
  for p in ${pids:-}; do kill "$p" 2>/dev/null || true; done
  [ "${KEEP:-}" = 1 ] || rm -rf "$work/out-embedded" "$work/out-servers" "$work/servers.d"
}
trap cleanup EXIT

# Runs `webdedup minhash` with its figures in JSON and its resources from time(1).
run() { # NAME ARGS...
  local name=$1
  shift
  rm -rf "$work/out-$name"
  /usr/bin/time -f '%e %U %S %M' -o "$work/$name.time" \
    "$bin" minhash -q -i "$input" -o "$work/out-$name" -t "$threads" --compress zst \
    --json "$work/$name.json" "$@"
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }
report() { # NAME [SERVER_RSS_KB]
  local name=$1 server_kb=${2:-0}
  read -r wall user sys rss_kb < "$work/$name.time"
  local docs kept keys store
  docs=$(field "$work/$name.json" documents_read)
  kept=$(field "$work/$name.json" documents_kept)
  keys=$(field "$work/$name.json" keys_stored)
  store=$(field "$work/$name.json" store_bytes)
  python3 - "$name" "$wall" "$user" "$sys" "$rss_kb" "$server_kb" "$docs" "$kept" "$keys" "$store" "$raw_bytes" <<'PY'
import sys
name, wall, user, sys_, rss, srv, docs, kept, keys, store, raw = sys.argv[1:]
wall, cpu = float(wall), float(user) + float(sys_)
docs, kept, keys, store, raw = int(docs), int(kept), int(keys), int(store), int(raw or 0)
srv = int(srv)
line = (f"{name:9} {docs:>11,} docs  {docs / wall:>9,.0f} docs/s  {raw / 1e6 / wall:6.1f} MB/s"
        f"  CPU {cpu:7.1f} s ({raw / 1e6 / cpu:5.1f} MB/s per CPU s)  wall {wall:7.1f} s"
        f"  worker RSS {int(rss) / 1024:7.0f} MB")
if srv:
    line += f"  servers RSS {srv / 1024:7.0f} MB"
line += f"  kept {kept:,}  keys {keys:,}"
if keys and store:
    line += f"  store {store / keys:5.1f} B/key"
if keys and srv:
    line += f"  servers {srv * 1024 / keys:5.1f} RSS B/key"
print(line)
PY
}

echo "input: $n documents, $raw_bytes bytes of JSON Lines; $threads threads; $("$bin" --version)"
if [ "${SERVERS_ONLY:-}" != 1 ]; then
  run embedded
  report embedded
fi

# Three hash servers on loopback, each its own process (as on three machines).
d=$work/servers.d
rm -rf "$d"
mkdir -p "$d"
ports=$(python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
for p in $ports; do echo "127.0.0.1:$p"; done > "$d/servers"
"$bin" distribute -q -s "$d/servers" -o "$d/hashmap.conf"
pids=""
for p in $ports; do
  "$bin" server -m "$d/hashmap.conf" --listen "127.0.0.1:$p" --ready-file "$d/$p.ready" 2> "$d/$p.log" &
  pids="$pids $!"
done
for p in $ports; do
  for _ in $(seq 600); do [ -s "$d/$p.ready" ] && break; sleep 0.1; done
  [ -s "$d/$p.ready" ] || { echo "server on port $p did not start: $(cat "$d/$p.log")" >&2; exit 1; }
done
run servers -s "$d/hashmap.conf"
server_kb=0
for pid in $pids; do
  kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
  server_kb=$((server_kb + kb))
done
report servers "$server_kb"
if [ -n "${SMAPS:-}" ]; then
  mkdir -p "$SMAPS"
  for pid in $pids; do
    cp "/proc/$pid/smaps" "$SMAPS/$pid.smaps"
    cp "/proc/$pid/status" "$SMAPS/$pid.status"
  done
  "$bin" status -m "$d/hashmap.conf" --json "$SMAPS/status.json" > /dev/null || true
fi
if [ "${SERVERS_ONLY:-}" = 1 ]; then
  echo "output: $(zstd -dc "$work/out-servers/synth.dedup.jsonl.zst" | sha256sum | cut -c1-16) (servers)"
  exit 0
fi
cmp -s <(zstd -dc "$work/out-embedded/synth.dedup.jsonl.zst") <(zstd -dc "$work/out-servers/synth.dedup.jsonl.zst") &&
  echo "outputs: embedded == servers" || echo "outputs DIFFER between embedded and servers"
