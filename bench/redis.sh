#!/usr/bin/env bash
# The key set on Redis against the embedded store, one run: throughput and bytes per
# key of MemStore, Redis SET NX (pipelined) and Redis in the bucketed layout
# (crates/redis-store/examples/redis_bench.rs), on a fresh redis-server started here
# with `set-max-intset-entries 4096`, no persistence.
# Usage: bench/redis.sh [KEYS] [CLIENT_THREADS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo build --release -q -p webdedup-redis --example redis_bench
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
  --set-max-intset-entries 4096 --dir "$dir" --daemonize yes --logfile "$dir/log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
echo "$(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
target/release/examples/redis_bench "redis://127.0.0.1:$port" "${1:-2000000}" "${2:-2}" "${3:-4096}"
