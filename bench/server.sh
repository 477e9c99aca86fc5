#!/usr/bin/env bash
# Hash servers on loopback (issue 4 targets), all in one run on this machine:
# 1. one server, two client connections sending batches of fresh keys
#    (test-and-insert with ids, 4 requests in flight each): keys per second and
#    RSS per key, with and without preallocation (-s);
# 2. a worker on ../shared/corpus/web3 with the embedded store and with a remote
#    store (1 server and 3 servers on loopback), same thread count: MB/s and ratio.
# Usage: bench/server.sh [KEYS] [CORPUS_DIR]   (defaults 40000000, ../shared/corpus/web3)
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-40000000}
corpus=${2:-../shared/corpus/web3}
cargo build --release -q -p webdedup
cargo build --release -q -p webdedup-net --example server_load
bin=target/release/webdedup
load=target/release/examples/server_load
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
map() { # file port...
  local f=$1; shift
  python3 - "$f" "$@" <<'PY'
import sys
f, ports = sys.argv[1], sys.argv[2:]
with open(f, "w") as out:
    out.write("blocks 1999\n")
    for i, p in enumerate(ports):
        out.write(f"server {i} 127.0.0.1:{p} weight 1\n")
    for b in range(1999):
        out.write(f"{b} {b % len(ports)}\n")
PY
}
start() { # port map extra...
  local port=$1 m=$2; shift 2
  rm -f "$tmp/ready-$port"
  $bin server -m "$m" --listen "127.0.0.1:$port" --ready-file "$tmp/ready-$port" "$@" 2>>"$tmp/server-$port.log" &
  pids+=($!)
  until [ -s "$tmp/ready-$port" ]; do sleep 0.05; done
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
base=$((20000 + RANDOM % 20000))
echo "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== one server, 2 connections, batches of 8192, $keys fresh keys"
for prealloc in 0 "$keys"; do
  port=$((base++))
  map "$tmp/map-$port" "$port"
  start "$port" "$tmp/map-$port" -s "$prealloc" -o "$tmp/s-$port.snap"
  pid=${pids[-1]}
  before=$(rss_kb "$pid")
  result=$($load "127.0.0.1:$port" "$tmp/map-$port" "$keys" 2 8192 4)
  after=$(rss_kb "$pid")
  echo "prealloc -s $prealloc: $result  RSS $((after - before)) kB more = $(python3 -c "print(f'{($after - $before) * 1024 / $keys:.2f}')") bytes/key (journaled)"
  kill "$pid"; wait "$pid" 2>/dev/null || true
done
if [ -d "$corpus" ]; then
  source bench/lib.sh
  prepare_corpus "$corpus" "$tmp"
  echo "== worker on $(basename "$corpus"), 2 threads (best of 3)"
  best() { # name, args...
    local name=$1; shift
    for i in 1 2 3; do
      rm -rf "$tmp/$name"
      /usr/bin/time -f "%e" -o "$tmp/time" $bin dedup -i "$tmp/in" -o "$tmp/$name" -t 2 -q --fsync off "$@"
      cat "$tmp/time"
    done | sort -n | head -1
  }
  # Fresh servers for each try: a second try would find every key seen.
  remote_best() { # servers, dedup args...
    local n=$1; shift
    local times=() ports first
    for i in 1 2 3; do
      ports=(); for j in $(seq "$n"); do ports+=($((base++))); done
      map "$tmp/map-w$n" "${ports[@]}"
      first=${#pids[@]}
      for p in "${ports[@]}"; do start "$p" "$tmp/map-w$n" --fsync off; done
      rm -rf "$tmp/w$n"
      /usr/bin/time -f "%e" -o "$tmp/time" $bin dedup -i "$tmp/in" -o "$tmp/w$n" -t 2 -q -s "$tmp/map-w$n" "$@"
      times+=("$(cat "$tmp/time")")
      for p in "${pids[@]:$first}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
      pids=("${pids[@]:0:$first}")
    done
    printf '%s\n' "${times[@]}" | sort -n | head -1
  }
  mbs() { python3 -c "print(f'{$bytes/$1/1e6:.1f}')"; }
  e=$(best embedded)
  echo "embedded store:      ${e}s  $(mbs "$e") MB/s"
  for n in 1 3; do
    r=$(remote_best "$n")
    echo "remote, $n server(s): ${r}s  $(mbs "$r") MB/s  = $(python3 -c "print(f'{$e/$r:.2f}')")x the embedded store"
  done
  # Feedback mode (-f): located requests (24 bytes a key out, originals back).
  ef=$(best embedded-f -f)
  rf=$(remote_best 3 -f)
  echo "feedback -f: embedded ${ef}s $(mbs "$ef") MB/s, remote 3 servers ${rf}s $(mbs "$rf") MB/s = $(python3 -c "print(f'{$ef/$rf:.2f}')")x the embedded store"
else
  echo "no corpus at $corpus: worker comparison skipped"
fi
