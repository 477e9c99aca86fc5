#!/usr/bin/env bash
# Extended check: deploy/slurm/batch.sbatch and deploy/slurm/cluster.sbatch, run
# unchanged under a real Slurm on this machine, give the bytes `webdedup dedup`
# gives (diff -r).
#
# It installs slurm-wlm and munge from Debian's packages when missing
# (scripts/deps.sh slurm; needs root or sudo), starts munged, slurmctld and six
# `slurmd -N NAME` as root with their own ports, spool directories, pid files
# and logs under a scratch directory, n1-n4 at 127.0.0.11-14 (NodeAddr) and s1, s2
# both at 127.0.0.20 (partition shared: nodes sharing an address), and
# stops every daemon it started when it ends, failed or not. Nothing outside the
# scratch directory is changed, but for the packages.
#
# Usage: tests/extended/slurm_local.sh (scripts/test.sh runs it; about three
# minutes on 2 busy cores, plus half a minute for the packages)
#   WEBDEDUP_BIN   the binary to test (default: target/debug/webdedup, built)
#   KEEP=1         keep the scratch directory (printed at the end)
#
# The checks:
#   batch    batch.sbatch on the sample (3 crawls + one file directly in IN) with
#            TASKS=3, MEM, DD, STORE: a hash task that fails once cancels the
#            later phases (none left pending) and, with WAIT=1, the script exits
#            1 naming the unfinished phase; the same command run again finishes
#            the job; outputs equal `webdedup dedup --dd`; the task logs are in
#            WORK/logs, none in the directory it was run from.
#   docs     the Slurm examples of docs/clusters.md and docs/batch.md, exactly as
#            written but for their paths: cluster.sbatch with 2 servers on 3 nodes,
#            then SERVERS=3 on 4 (migration), each equal to `webdedup dedup
#            --store`, keys saved; batch.sbatch with STORE and with MINHASH=1 (no
#            MINHASH_ARGS), equal to `webdedup dedup` / `webdedup minhash`, their
#            check jobs reporting success.
#   cluster  a server that cannot start (its port taken) fails the job at once
#            with its log, and the next run succeeds; servers that never get
#            ready fail it after START_TIMEOUT; a one-node run; scancel stops the
#            worker first (cleanly) then the servers, which save, and the rerun
#            equals `webdedup dedup`; on nodes sharing an address, 2 servers are
#            refused with the reason, 1 server finds its keys from either node,
#            and a server of the map without its keys is refused.
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
. tests/extended/lib/slurm_cluster.sh
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

# n1-n4 at their own addresses (partition all; four for the docs' --nodes=4);
# s1, s2 share one address (partition shared), as several slurmd on one host.
# 2 GB a node: the docs' MEM=1G.
SLURM_NODES="n1=127.0.0.11 n2=127.0.0.12 n3=127.0.0.13 n4=127.0.0.14" \
  SLURM_SHARED_NODES="s1=127.0.0.20 s2=127.0.0.20" SLURM_NODE_MEM=2000 slurm_start "$d" || fail "no cluster"
say "cluster up: n1-n4 at 127.0.0.11-14, s1 and s2 both at 127.0.0.20 ($((SECONDS - started)) s)"
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
"$bin" dedup -q -i "$c/in1" -o "$d/ref1-plain" --store "$d/ref-store-plain"
"$bin" dedup -q -i "$c/all" -o "$d/ref-all-plain"
"$bin" minhash -q -i "$c/all" -o "$d/ref-minhash-plain"

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
    MEM=100M DD=1 STORE="$d/batch-store" WEBDEDUP="$d/flaky-webdedup" "$@" \
    "$repo/deploy/slurm/batch.sbatch")
}
t=$SECONDS
# WAIT=1: the script waits for the check job and reports the failed phase.
code=0
batch WAIT=1 > "$d/batch1.out" 2>&1 || code=$?
drained 120
[ -d "$d/failed-once" ] || fail "batch: the injected failure did not happen"
[ "$code" -eq 1 ] || fail "batch WAIT=1 with a failed hash task: status $code, not 1"
grep -q "the run did not finish: hash tasks 1 of 3 have not finished" "$d/batch1.out" ||
  fail "batch WAIT=1: no clear report of the failed phase: $(cat "$d/batch1.out")"
grep -q "injected failure" "$d"/work/logs/hash-*_1.out || fail "batch: no log of the failed hash task in WORK/logs"
[ ! -e "$d/out-batch" ] || [ -z "$(ls -A "$d/out-batch")" ] || fail "batch: filter ran after a failed hash task"
batch > "$d/batch2.out"
drained 120
grep -q "every phase finished" "$d"/work/logs/check-*.out || fail "batch: the check job did not report success"
diff -r "$d/ref-all" "$d/out-batch" || fail "batch: outputs differ from webdedup dedup"
[ -s "$d/batch-store/store.snap" ] || fail "batch: STORE was not published"
[ -z "$(ls -A "$d/submit")" ] || fail "batch: files left in the directory it ran from: $(ls "$d/submit")"
say "batch: a failed task cancels the later phases; rerun equals webdedup dedup ($((SECONDS - t)) s)"


# Waits (up to 300 s) for a job to leave the queue and returns its exit code; WHAT
# names it in the failure.
job_exit() { # WHAT JOB
  local what=$1 job=$2 end code
  end=$((SECONDS + 300))
  while [ -n "$(sl squeue -h -j "$job" 2>/dev/null)" ]; do
    ((SECONDS < end)) || fail "$what: job $job still running after 300 s"
    sleep 0.2
  done
  code=$(sl scontrol show job -o "$job" | grep -o ' ExitCode=[0-9]*' | cut -d= -f2)
  return "${code:-99}"
}

# --- cluster.sbatch -------------------------------------------------------------
# Submits the script and returns the job's exit status; "$1" names the run, the
# rest are sbatch options, the script and its arguments; SERVERS, WORKERS, DD come
# from the caller. (Polls itself: sbatch --wait polls at up to 10 s intervals.)
cluster() {
  local name=$1 job
  shift
  job=$(sl env PORT="$port" WEBDEDUP="$bin" THREADS=1 START_TIMEOUT="${START_TIMEOUT:-60}" \
    STOP_TIMEOUT=60 SERVER_TIMEOUT=10 sbatch --parsable -o "$d/$name.out" "$@")
  job_exit "$name" "$job"
}
saved() { # STATE ADDR...: each server (ADDR:port) saved its keys and left no journal
  local s=$1 a snap
  shift
  for a in "$@"; do
    snap=$s/server-$a:$port.snap
    [ -s "$snap" ] || fail "no snapshot $snap"
    [ ! -e "$snap.journal" ] || fail "the server at $a left its journal $snap.journal"
  done
}
# --- the docs' Slurm examples, exactly as written -------------------------------
# The commands of the blocks of docs/clusters.md and docs/batch.md marked "not run:
# needs a Slurm cluster", run as written from a directory holding deploy/, but for
# the paths (/data, /scratch and /shared are under $D) and the optional
# [STORE=...], given. webdedup is on PATH, PORT is a free port.
t=$SECONDS
D=$d/docs
mkdir -p "$D/data" "$D/scratch" "$D/shared" "$D/run" "$D/bin"
ln -s "$repo/deploy" "$D/run/deploy"
ln -s "$bin" "$D/bin/webdedup"
cp -r "$c/in1" "$D/data/crawl1"
cp -r "$c/in2" "$D/data/crawl2"
cp -r "$c/all" "$D/data/crawl"
mapfile -t examples < <(python3 - docs/clusters.md docs/batch.md <<'PY'
import re, sys
for path in sys.argv[1:]:
    text = open(path).read()
    blocks = re.findall(r"<!-- not run: needs a Slurm cluster[^>]*-->\n```sh\n(.*?)```", text, re.S)
    for block in blocks:
        for cmd in block.replace("\\\n", " ").splitlines():
            if cmd.strip() and not cmd.lstrip().startswith("#"):
                print(" ".join(cmd.split()))
PY
)
[ ${#examples[@]} -eq 4 ] || fail "docs: ${#examples[@]} Slurm examples, not the 4 this check knows: ${examples[*]}"
example() { # N: runs the docs' example N, prints its output
  local cmd
  cmd=$(sed -e 's#\[\(STORE=[^]]*\)\]#\1#' -e "s#/data/#$D/data/#g; s#/scratch/#$D/scratch/#g; s#/shared/#$D/shared/#g" <<< "${examples[$1]}")
  (cd "$D/run" && SLURM_CONF=$slurm_conf PATH=$D/bin:$PATH PORT=$port bash -c "set -e; $cmd")
}
job_status() { # the output of sbatch: waits for the job, returns its exit code
  local job
  job=$(grep -o 'Submitted batch job [0-9]*' <<< "$1" | cut -d' ' -f4)
  [ -n "$job" ] || fail "docs: no job submitted: $1"
  job_exit docs "$job"
}
# The cluster.sbatch examples first, on an idle cluster: the first job gets n1-n3
# (the second names n1 and n2, as the docs do).
out=$(example 0) || fail "docs: the first cluster.sbatch example: sbatch failed: $out"
code=0; job_status "$out" || code=$?
[ "$code" -eq 0 ] || fail "docs: the first cluster.sbatch example exited with status $code"
state=$D/shared/wd-state
diff -r -x .webdedup.run-id "$d/ref1-plain" "$D/data/crawl1.dedup" || fail "docs: cluster example 1: outputs differ from webdedup dedup"
saved "$state" 127.0.0.11 127.0.0.12
out=$(example 1) || fail "docs: the second cluster.sbatch example: sbatch failed: $out"
code=0; job_status "$out" || code=$?
[ "$code" -eq 0 ] || fail "docs: the second cluster.sbatch example (SERVERS=3) exited with status $code"
grep -q "migrating from" "$D"/run/slurm-*.out || fail "docs: cluster example 2 did not migrate"
[ ! -e "$state/hashmap.prev" ] || fail "docs: cluster example 2: hashmap.prev left after the migration"
diff -r -x .webdedup.run-id "$d/ref2" "$D/data/crawl2.dedup" || fail "docs: cluster example 2 (a server added): outputs differ from webdedup dedup --store"
saved "$state" 127.0.0.11 127.0.0.12 127.0.0.13
# The two batch.sbatch examples (docs/clusters.md's with STORE, docs/batch.md's
# MinHash one) at once: each submits its phases and a check job.
example 2 > "$D/batch.out" || fail "docs: the batch.sbatch example failed: $(cat "$D/batch.out")"
example 3 > "$D/minhash.out" || fail "docs: the MINHASH=1 example failed: $(cat "$D/minhash.out")"
drained 180
grep -q "every phase finished" "$D"/scratch/wd-work/logs/check-*.out || fail "docs: the batch example's check job did not report success"
grep -q "every phase finished" "$D"/scratch/wd-mh/logs/check-*.out ||
  fail "docs: the MINHASH=1 example's check job did not report success: $(cat "$D"/scratch/wd-mh/logs/check-*.out)"
diff -r "$d/ref-all-plain" "$D/data/crawl.dedup" || fail "docs: batch example: outputs differ from webdedup dedup"
[ -s "$D/data/wd-store/store.snap" ] || fail "docs: batch example: STORE was not published"
diff -r "$d/ref-minhash-plain" "$D/data/crawl.minhash" || fail "docs: MINHASH=1 example: outputs differ from webdedup minhash"
say "docs: the 4 Slurm examples of docs/clusters.md and docs/batch.md, as written, equal webdedup dedup/minhash ($((SECONDS - t)) s)"

# A server step that dies: n2's port is taken (bound, not listening).
t=$SECONDS
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.12", int(sys.argv[1])))
time.sleep(600)' "$port" &
holder=$!
sleep 0.5
code=0
SERVERS=3 WORKERS=1 cluster cluster3 -N3 deploy/slurm/cluster.sbatch "$c/in2" "$d/out3" "$state" || code=$?
kill "$holder"
wait "$holder" 2>/dev/null || true
holder=""
[ "$code" -eq 2 ] || fail "a dead server step: status $code, not 2"
grep -q "the server step on n2 .* exited with status" "$d/cluster3.out" ||
  fail "a dead server step: no clear error in the job's output"
saved "$state" 127.0.0.11 127.0.0.13
say "cluster: a dead server step fails the job at once, with its log ($((SECONDS - t)) s)"
t=$SECONDS
"$bin" dedup -q -i "$c/in2" -o "$d/ref3" --store "$d/ref-store"
SERVERS=3 WORKERS=1 cluster cluster3b -N3 deploy/slurm/cluster.sbatch "$c/in2" "$d/out3" "$state" ||
  fail "the run after the dead server step exited with status $?"
diff -r -x .webdedup.run-id "$d/ref3" "$d/out3" || fail "the run after the dead server step: outputs differ"
saved "$state" 127.0.0.11 127.0.0.12 127.0.0.13
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
saved "$d/state-one" 127.0.0.11
say "cluster: one node (server and worker sharing it) equals webdedup dedup ($((SECONDS - t)) s)"
# --- scancel: the workers stop first (cleanly), then the servers save -----------
# The worker reads a named pipe, fed 2 MB and then held open, when the job is
# cancelled.
t=$SECONDS
sc=$d/scancel
mkdir -p "$sc/in" "$sc/ref-in"
cp -r "$c/in1/cc-2023-14" "$sc/in/"
cp -r "$c/in1/cc-2023-14" "$sc/ref-in/"
zcat sample/web3-mini/cc-2024-33/*.gz > "$sc/ref-in/zz-feed.vert"
mkfifo "$sc/in/zz-feed.vert"
"$bin" dedup -q -i "$sc/ref-in" -o "$sc/ref"
(exec 3> "$sc/in/zz-feed.vert"; head -c 2000000 "$sc/ref-in/zz-feed.vert" >&3; touch "$sc/fed"
 until [ -e "$sc/done" ]; do sleep 0.2; done) &
holder=$!
job=$(sl env PORT="$port" WEBDEDUP="$bin" THREADS=1 SERVER_TIMEOUT=10 SERVERS=1 \
  sbatch --parsable -o "$d/scancel.out" -N2 deploy/slurm/cluster.sbatch "$sc/in" "$sc/out" "$sc/state")
until [ -e "$sc/fed" ]; do
  ((SECONDS - t < 120)) || fail "scancel: the worker never read the named pipe"
  sleep 0.2
done
sl scancel "$job"
drained 60
touch "$sc/done"
# The holder may have seen "done" and ended already: then there is nothing to kill.
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
holder=""
grep -q "signalled: stopping the workers, then the servers" "$d/scancel.out" || fail "scancel: the script did not stop the workers first"
w=$(grep -n "worker on n2: signalled, stopped at $sc/in/zz-feed.vert" "$d/scancel.out" | cut -d: -f1)
[ -n "$w" ] || fail "scancel: the worker did not stop by itself: $(cat "$d/scancel.out")"
s=$(grep -n "stopping the servers" "$d/scancel.out" | cut -d: -f1)
[ -n "$s" ] && [ "$s" -gt "$w" ] || fail "scancel: the servers were not stopped after the worker: $(cat "$d/scancel.out")"
saved "$sc/state" 127.0.0.11
# The same run again, the pipe now a file: it finishes, nothing lost.
rm "$sc/in/zz-feed.vert"
cp "$sc/ref-in/zz-feed.vert" "$sc/in/"
SERVERS=1 cluster scancel2 -N2 deploy/slurm/cluster.sbatch "$sc/in" "$sc/out" "$sc/state" ||
  fail "scancel: the rerun exited with status $?"
diff -r -x .webdedup.run-id "$sc/ref" "$sc/out" || fail "scancel: the rerun's outputs differ from webdedup dedup"
say "cluster: scancel stops the worker cleanly, then the servers, which save; the rerun equals webdedup dedup ($((SECONDS - t)) s)"

# --- nodes sharing one address (partition shared: s1 and s2 at 127.0.0.20) -------
t=$SECONDS
code=0
SERVERS=2 cluster shared1 -p shared -N2 deploy/slurm/cluster.sbatch "$c/in1" "$d/out-sh0" "$d/state-sh0" || code=$?
[ "$code" -eq 2 ] || fail "two servers on two nodes sharing an address: status $code, not 2"
grep -q "SERVERS=2 needs 2 nodes at distinct addresses .* s2 (127.0.0.20)" "$d/shared1.out" ||
  fail "two servers on nodes sharing an address: no clear reason: $(cat "$d/shared1.out")"
# One server: the next job lands on the other node of that address and finds
# the server's keys by its address in the map, not by the node.
SERVERS=1 DD=1 cluster shared2 -p shared -N1 -w s1 deploy/slurm/cluster.sbatch "$c/in1" "$d/out-sh1" "$d/state-sh" ||
  fail "one server on s1 exited with status $?"
diff -r -x .webdedup.run-id "$d/ref1" "$d/out-sh1" || fail "one server on s1: outputs differ from webdedup dedup"
SERVERS=1 cluster shared3 -p shared -N1 -w s2 deploy/slurm/cluster.sbatch "$c/in2" "$d/out-sh2" "$d/state-sh" ||
  fail "the next job, on s2, exited with status $?"
diff -r -x .webdedup.run-id "$d/ref2" "$d/out-sh2" || fail "the next job, on s2: outputs differ from webdedup dedup --store (it started empty?)"
saved "$d/state-sh" 127.0.0.20
# The map's server has no keys in STATE while other keys are there: refused, not
# started empty.
cp -r "$d/state-sh" "$d/state-moved"
mv "$d/state-moved/server-127.0.0.20:$port.snap" "$d/state-moved/elsewhere.snap"
code=0
SERVERS=1 cluster shared4 -p shared -N1 -w s1 deploy/slurm/cluster.sbatch "$c/in2" "$d/out-sh4" "$d/state-moved" || code=$?
[ "$code" -eq 2 ] || fail "a server of the map without its keys: status $code, not 2"
grep -q "would start empty" "$d/shared4.out" || fail "a server of the map without its keys: no clear reason: $(cat "$d/shared4.out")"
[ ! -e "$d/out-sh4" ] || [ -z "$(ls -A "$d/out-sh4")" ] || fail "a server of the map without its keys: a worker ran"
say "cluster: nodes sharing an address: 2 servers refused with the reason, 1 server finds its keys from either node, a server without its keys refused ($((SECONDS - t)) s)"
say "batch.sbatch and cluster.sbatch under Slurm $(sl sinfo -V | cut -d' ' -f2): outputs identical to webdedup dedup"
