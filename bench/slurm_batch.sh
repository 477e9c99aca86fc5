#!/usr/bin/env bash
# When does a Slurm job array beat one process? deploy/slurm/batch.sbatch with
# TASKS=N (5 job arrays of N tasks) on a local Slurm (tests/extended/lib/slurm_cluster.sh:
# three slurmd on this machine, SLURM_NODE_CPUS each, default 1), from submission
# until the queue is empty, against `webdedup dedup -t 2` and `webdedup batch run -t 2`
# in one process; outputs compared. Then the peak RSS of one task of each phase
# (task 0, run directly) for N tasks: what MEM must allow.
# Usage: bench/slurm_batch.sh [CORPUS_DIR] [N...]   (default: sample/web3-mini, 2 64)
# Needs root and scripts/deps.sh slurm.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
corpus=${1:-sample/web3-mini}
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(2 64)
cargo build --release -q --locked -p webdedup
bin=$repo/target/release/webdedup
d=$(mktemp -d /tmp/webdedup-slurm-bench.XXXXXX)
. tests/extended/lib/slurm_cluster.sh
trap 'slurm_stop; rm -rf "$d"' EXIT
cp -rL "$corpus" "$d/in"
find "$d/in" -name '*.json' -delete # web3's MANIFEST.json is no vertical
find "$d/in" -type f -exec cat {} + > /dev/null
echo "input: $corpus, $(find "$d/in" -type f | wc -l) files, $(du -sb "$d/in" | cut -f1) bytes (compressed), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
SLURM_NODE_CPUS=${SLURM_NODE_CPUS:-1} slurm_start "$d"
echo "slurm $(sl sinfo -V | cut -d' ' -f2): 3 nodes x ${SLURM_NODE_CPUS:-1} CPU"
secs() { /usr/bin/time -q -f %e -o "$d/t" "$@" || [ $? -eq 1 ]; cat "$d/t"; }
echo "dedup -t 2:      $(secs "$bin" dedup -q -t 2 -i "$d/in" -o "$d/ref") s"
echo "batch run -t 2:  $(secs "$bin" batch run -t 2 -i "$d/in" -o "$d/run" -w "$d/w-run" 2>/dev/null) s"
diff -r -q "$d/ref" "$d/run" > /dev/null || echo "batch run: outputs DIFFER"
for n in "${counts[@]}"; do
  start=$(date +%s.%N)
  (cd "$d" && sl env IN="$d/in" WORK="$d/w-$n" OUT="$d/out-$n" TASKS="$n" WEBDEDUP="$bin" \
    "$repo/deploy/slurm/batch.sbatch" > /dev/null)
  slurm_drained 3600
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  same=identical
  diff -r -q "$d/ref" "$d/out-$n" > /dev/null || same=DIFFER
  printf 'batch.sbatch TASKS=%s: %.1f s for %d jobs (%.2f s a job), outputs %s\n' \
    "$n" "$wall" $((5 * n)) "$(echo "$wall / (5 * $n)" | bc -l)" "$same"
done
for n in "${counts[@]}"; do
  w=$d/rss-$n
  common=(-i "$d/in" -w "$w" --task-count "$n")
  rss() { /usr/bin/time -q -f %M -o "$d/t" "$bin" batch "$@" 2>/dev/null || [ $? -eq 1 ]; cat "$d/t"; }
  line="peak RSS of task 0 of $n, kB:"
  for i in $(seq 0 $((n - 1))); do
    r=$(rss hash "${common[@]}" --task-index "$i")
    [ "$i" -eq 0 ] && line+=" hash $r"
  done
  for stage in url-title docs paras; do
    for i in $(seq 0 $((n - 1))); do
      r=$(rss resolve --stage "$stage" "${common[@]}" --task-index "$i")
      [ "$i" -eq 0 ] && line+=" $stage $r"
    done
  done
  line+=" filter $(rss filter "${common[@]}" --task-index 0 -o "$d/rss-out-$n")"
  echo "$line"
done
