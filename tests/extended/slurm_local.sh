#!/usr/bin/env bash
# Extended check: deploy/slurm/batch.sbatch and deploy/slurm/cluster.sbatch, run
# unchanged under a real Slurm on this machine, give the bytes `webdedup dedup`
# gives (diff -r).
#
# It installs slurm-wlm and munge from Debian's packages when missing
# (scripts/deps.sh slurm; needs root or sudo), starts munged, slurmctld and three
# `slurmd -N n1..n3` as root with their own ports, spool directories, pid files
# and logs under a scratch directory, the nodes at 127.0.0.11-13 (NodeAddr), and
# stops every daemon it started when it ends, failed or not. Nothing outside the
# scratch directory is changed, but for the packages.
#
# Usage: tests/extended/slurm_local.sh (scripts/test.sh runs it; about a minute
# and a half on 2 cores, plus half a minute for the packages)
#   WEBDEDUP_BIN   the binary to test (default: target/debug/webdedup, built)
#   KEEP=1         keep the scratch directory (printed at the end)
#
# The checks:
#   batch    batch.sbatch on the sample (3 crawls + one file directly in IN) with
#            TASKS=3, MEM, DD, STORE: a hash task that fails once cancels the
#            later phases (none left pending), and the same command run again
#            finishes the job; outputs equal `webdedup dedup --dd`; the task logs
#            are in WORK/logs, none in the directory it was run from.
#   cluster  cluster.sbatch with 2 servers and 1 worker on 3 nodes, then again on
#            new input with 3 servers (a server added: migration), servers and
#            workers sharing nodes; each run equals `webdedup dedup --store` run
#            the same way twice, and the servers saved their keys (snapshots, no
#            journals). Then a server that cannot start (its port taken) fails
#            the job at once with its log, and the next run succeeds; servers
#            that never get ready fail it after START_TIMEOUT; a one-node run.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
say() { echo "slurm_local: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || { say "needs root (slurmd starts jobs as their users)"; exit 2; }
scripts/deps.sh slurm
if [ -z "${WEBDEDUP_BIN:-}" ]; then
  cargo build -q --locked -p webdedup
  WEBDEDUP_BIN=$repo/target/debug/webdedup
fi
bin=$WEBDEDUP_BIN
started=$SECONDS

d=$(mktemp -d /tmp/webdedup-slurm.XXXXXX)
. tests/extended/slurm_cluster.sh
holder="" # a process keeping a port busy
cleanup() {
  local code=$?
  set +e
  trap - EXIT INT TERM
  if [ "$code" -ne 0 ] && [ -d "$d/log" ]; then
    say "logs of the failed run (in $d):"
    tail -n 20 "$d"/log/slurmctld.log >&2
    for f in "$d"/*.out; do [ -e "$f" ] && { echo "== $f" >&2; tail -n 20 "$f" >&2; }; done
  fi
  [ -n "$holder" ] && kill "$holder" 2>/dev/null
  slurm_stop || { [ "$code" -ne 0 ] || code=1; }
  if [ "${KEEP:-}" = 1 ]; then say "kept $d"; else rm -rf "$d"; fi
  say "$([ "$code" -eq 0 ] && echo passed || echo "failed (status $code)") in $((SECONDS - started)) s"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

slurm_start "$d" || fail "no cluster"
say "cluster up: n1-n3 at 127.0.0.11-13 ($((SECONDS - started)) s)"
# The hash servers' port.
port=$(python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
drained() { slurm_drained "$1" || fail "jobs left in the queue"; }

# The corpus, from the repository's sample: in1 has a crawl as a directory and one
# as a file directly in IN; in2 a third crawl; all, every crawl and that file.
c=$d/corpus
mkdir -p "$c/in1" "$c/in2" "$c/all"
cp -r sample/web3-mini/cc-2023-14 "$c/in1/"
cp sample/web3-mini/cc-2023-50/part-00000.vert.gz "$c/in1/cc-2023-50.vert.gz"
cp -r sample/web3-mini/cc-2024-33 "$c/in2/"
cp -r sample/web3-mini/. "$c/all/"
cp "$c/in1/cc-2023-50.vert.gz" "$c/all/"
"$bin" dedup -q -i "$c/all" -o "$d/ref-all" --dd
"$bin" dedup -q -i "$c/in1" -o "$d/ref1" --dd --store "$d/ref-store"
"$bin" dedup -q -i "$c/in2" -o "$d/ref2" --store "$d/ref-store"

# --- batch.sbatch ---------------------------------------------------------------
# A binary that fails hash task 1 once, as a crashed node would.
cat > "$d/flaky-webdedup" <<EOF
#!/bin/sh
if [ "\$2" = hash ] && [ "\${SLURM_ARRAY_TASK_ID:-}" = 1 ] && mkdir "$d/failed-once" 2>/dev/null; then
  echo "injected failure of hash task 1" >&2
  exit 2
fi
exec "$bin" "\$@"
EOF
chmod +x "$d/flaky-webdedup"
mkdir -p "$d/submit"
batch() {
  (cd "$d/submit" && sl env IN="$c/all" WORK="$d/work" OUT="$d/out-batch" TASKS=3 \
    MEM=100M DD=1 STORE="$d/batch-store" WEBDEDUP="$d/flaky-webdedup" \
    "$repo/deploy/slurm/batch.sbatch")
}
t=$SECONDS
batch
drained 120
[ -d "$d/failed-once" ] || fail "batch: the injected failure did not happen"
grep -q "injected failure" "$d"/work/logs/hash-*_1.out || fail "batch: no log of the failed hash task in WORK/logs"
[ ! -e "$d/out-batch" ] || [ -z "$(ls -A "$d/out-batch")" ] || fail "batch: filter ran after a failed hash task"
batch
drained 120
diff -r "$d/ref-all" "$d/out-batch" || fail "batch: outputs differ from webdedup dedup"
[ -s "$d/batch-store/store.snap" ] || fail "batch: STORE was not published"
[ -z "$(ls -A "$d/submit")" ] || fail "batch: files left in the directory it ran from: $(ls "$d/submit")"
say "batch: a failed task cancels the later phases; rerun equals webdedup dedup ($((SECONDS - t)) s)"

# MinHash mode: the same script with MINHASH=1 gives webdedup minhash's bytes.
t=$SECONDS
"$bin" minhash -q -i "$c/all" -o "$d/ref-minhash" --dd --verify 0.9
(cd "$d/submit" && sl env IN="$c/all" WORK="$d/work-mh" OUT="$d/out-mh" TASKS=3 \
  MEM=100M DD=1 MINHASH=1 MINHASH_ARGS="--verify 0.9" WEBDEDUP="$bin" \
  "$repo/deploy/slurm/batch.sbatch")
drained 120
diff -r "$d/ref-minhash" "$d/out-mh" || fail "batch MINHASH=1: outputs differ from webdedup minhash"
say "batch MINHASH=1: equals webdedup minhash ($((SECONDS - t)) s)"

# --- cluster.sbatch -------------------------------------------------------------
# Submits the script and returns the job's exit status; "$1" names the run, the
# rest are sbatch options, the script and its arguments; SERVERS, WORKERS, DD come
# from the caller. (Polls itself: sbatch --wait polls at up to 10 s intervals.)
cluster() {
  local name=$1 job end
  shift
  job=$(sl env PORT="$port" WEBDEDUP="$bin" THREADS=1 START_TIMEOUT="${START_TIMEOUT:-60}" \
    STOP_TIMEOUT=60 SERVER_TIMEOUT=10 sbatch --parsable -o "$d/$name.out" "$@")
  end=$((SECONDS + 300))
  while [ -n "$(sl squeue -h -j "$job" 2>/dev/null)" ]; do
    ((SECONDS < end)) || fail "$name: job $job still running after 300 s"
    sleep 0.2
  done
  code=$(sl scontrol show job -o "$job" | grep -o ' ExitCode=[0-9]*' | cut -d= -f2)
  return "${code:-99}"
}
saved() { # STATE NODE...: each server saved its keys and left no journal
  local s=$1 n
  shift
  for n in "$@"; do
    [ -s "$s/$n.snap" ] || fail "no snapshot $s/$n.snap"
    [ ! -e "$s/$n.snap.journal" ] || fail "the server on $n left its journal $s/$n.snap.journal"
  done
}
t=$SECONDS
SERVERS=2 WORKERS=1 DD=1 cluster cluster1 -N3 deploy/slurm/cluster.sbatch "$c/in1" "$d/out1" "$d/state" ||
  fail "cluster run 1 exited with status $?"
diff -r -x .webdedup.run-id "$d/ref1" "$d/out1" || fail "cluster run 1: outputs differ from webdedup dedup"
saved "$d/state" n1 n2
say "cluster: 2 servers + 1 worker on 3 nodes equal webdedup dedup, keys saved ($((SECONDS - t)) s)"

t=$SECONDS
SERVERS=3 WORKERS=1 cluster cluster2 -N3 deploy/slurm/cluster.sbatch "$c/in2" "$d/out2" "$d/state" ||
  fail "cluster run 2 exited with status $?"
grep -q "migrating from" "$d/cluster2.out" || fail "cluster run 2 did not migrate"
[ ! -e "$d/state/hashmap.prev" ] || fail "cluster run 2: hashmap.prev left after the migration"
diff -r -x .webdedup.run-id "$d/ref2" "$d/out2" || fail "cluster run 2 (a server added): outputs differ from webdedup dedup --store"
saved "$d/state" n1 n2 n3
say "cluster: a third server added between runs (migration), equal again ($((SECONDS - t)) s)"

# A server step that dies: n2's port is taken (bound, not listening).
t=$SECONDS
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.12", int(sys.argv[1])))
time.sleep(600)' "$port" &
holder=$!
sleep 0.5
code=0
SERVERS=3 WORKERS=1 cluster cluster3 -N3 deploy/slurm/cluster.sbatch "$c/in2" "$d/out3" "$d/state" || code=$?
kill "$holder"
wait "$holder" 2>/dev/null || true
holder=""
[ "$code" -eq 2 ] || fail "a dead server step: status $code, not 2"
grep -q "the server step on n2 .* exited with status" "$d/cluster3.out" ||
  fail "a dead server step: no clear error in the job's output"
saved "$d/state" n1 n3
say "cluster: a dead server step fails the job at once, with its log ($((SECONDS - t)) s)"
t=$SECONDS
"$bin" dedup -q -i "$c/in2" -o "$d/ref3" --store "$d/ref-store"
SERVERS=3 WORKERS=1 cluster cluster3b -N3 deploy/slurm/cluster.sbatch "$c/in2" "$d/out3" "$d/state" ||
  fail "the run after the dead server step exited with status $?"
diff -r -x .webdedup.run-id "$d/ref3" "$d/out3" || fail "the run after the dead server step: outputs differ"
saved "$d/state" n1 n2 n3
say "cluster: the next run (port free again) equals webdedup dedup ($((SECONDS - t)) s)"

# Servers alive but never ready: a migration from a server that is gone.
t=$SECONDS
mkdir -p "$d/state-stuck"
printf '127.0.0.11:%s\n127.0.0.14:%s\n' "$port" "$port" > "$d/state-stuck/old"
printf '127.0.0.14:%s\n' "$port" > "$d/state-stuck/leaving"
"$bin" distribute --quick -s "$d/state-stuck/old" -o "$d/state-stuck/hashmap.prev" 2>/dev/null
"$bin" distribute --quick -i "$d/state-stuck/hashmap.prev" -E "$d/state-stuck/leaving" \
  -o "$d/state-stuck/hashmap.conf" 2>/dev/null
code=0
SERVERS=1 START_TIMEOUT=5 cluster cluster4 -N1 -w n1 deploy/slurm/cluster.sbatch \
  "$c/in2" "$d/out4" "$d/state-stuck" || code=$?
[ "$code" -eq 2 ] || fail "servers never ready: status $code, not 2"
grep -q "not ready within 5s" "$d/cluster4.out" || fail "servers never ready: no clear error"
say "cluster: servers never ready fail the job after START_TIMEOUT ($((SECONDS - t)) s)"

# One node: a server and a worker share it.
t=$SECONDS
SERVERS=1 DD=1 cluster cluster5 -N1 deploy/slurm/cluster.sbatch "$c/in1" "$d/out5" "$d/state-one" ||
  fail "one-node run exited with status $?"
diff -r -x .webdedup.run-id "$d/ref1" "$d/out5" || fail "one-node run: outputs differ from webdedup dedup"
saved "$d/state-one" n1
say "cluster: one node (server and worker sharing it) equals webdedup dedup ($((SECONDS - t)) s)"
say "batch.sbatch and cluster.sbatch under Slurm $(sl sinfo -V | cut -d' ' -f2): outputs identical to webdedup dedup"
