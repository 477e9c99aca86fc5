# shellcheck shell=bash
# A Slurm cluster of a few nodes on this machine, for tests/extended/slurm_local.sh
# and bench/slurm_batch.sh (sourced, not run). Needs root and Debian's slurm-wlm
# and munge (scripts/deps.sh slurm).
#
#   slurm_start DIR    starts munged, slurmctld and one `slurmd -N NAME` a node, each
#                      with its own port, spool directory, pid file and log under
#                      DIR; returns when every node is idle. SLURM_NODES ("n1=127.0.0.11
#                      n2=127.0.0.12 n3=127.0.0.13") names the nodes of partition
#                      `all` (the default) and their NodeAddr; SLURM_SHARED_NODES
#                      (none by default) those of partition `shared`, which may
#                      share one NodeAddr (distinct ports: Debian's slurmd is built
#                      with multiple-slurmd support). SLURM_NODE_CPUS (2) and
#                      SLURM_NODE_MEM (1000, MB) size each node.
#   sl CMD...          runs a Slurm command against this cluster
#   slurm_drained SEC  waits until no job is left (1 after SEC seconds)
#   slurm_stop         cancels every job, stops every daemon slurm_start started
#                      and kills any process a job left (1 if there was one)
#
# Slurm's commands and daemons find the cluster through SLURM_CONF, given to each
# command and never exported, so that the processes of this cluster are exactly
# those whose environment holds it.

slurm_daemons=() # NAME:PID, in start order
slurm_conf=""

sl() { SLURM_CONF=$slurm_conf "$@"; }

slurm_start() {
  local dir=$1 ctld_port n e
  # shellcheck disable=SC2206 # lists of NAME=ADDR words
  local all=(${SLURM_NODES:-n1=127.0.0.11 n2=127.0.0.12 n3=127.0.0.13}) shared=(${SLURM_SHARED_NODES:-})
  local count=$((${#all[@]} + ${#shared[@]})) ports
  chmod 755 "$dir" # munged wants its socket's directories searchable by all
  slurm_conf=$dir/slurm.conf
  read -r -a ports < <(python3 -c '
import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]) + 1)]
for s in ss:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))' "$count")
  ctld_port=${ports[0]} ports=("${ports[@]:1}")
  mkdir -p "$dir"/{munge,ctld,log}
  for e in "${all[@]}" "${shared[@]}"; do mkdir -p "$dir/spool/${e%%=*}"; done
  head -c 1024 /dev/urandom > "$dir/munge/munge.key"
  chmod 600 "$dir/munge/munge.key"
  munged -F --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" > "$dir/log/munged.out" 2>&1 &
  slurm_daemons+=("munged:$!")
  local cpus=${SLURM_NODE_CPUS:-2} mem=${SLURM_NODE_MEM:-1000}
  cat > "$slurm_conf" <<EOF
ClusterName=webdedup-test
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.sock
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=10
EOF
  local k=0 names=()
  for e in "${all[@]}" "${shared[@]}"; do
    echo "NodeName=${e%%=*} NodeAddr=${e#*=} Port=${ports[k]} CPUs=$cpus RealMemory=$mem State=UNKNOWN"
    names+=("${e%%=*}")
    k=$((k + 1))
  done >> "$slurm_conf"
  slurm_list() { local IFS=,; echo "${*%%=*}"; }
  echo "PartitionName=all Nodes=$(slurm_list "${all[@]}") Default=YES MaxTime=INFINITE State=UP" >> "$slurm_conf"
  [ ${#shared[@]} -eq 0 ] ||
    echo "PartitionName=shared Nodes=$(slurm_list "${shared[@]}") MaxTime=INFINITE State=UP" >> "$slurm_conf"
  for _ in $(seq 40); do [ -S "$dir/munge/munge.sock" ] && break; sleep 0.25; done
  SLURM_CONF=$slurm_conf slurmctld -D -f "$slurm_conf" > "$dir/log/slurmctld.out" 2>&1 &
  slurm_daemons+=("slurmctld:$!")
  for n in "${names[@]}"; do
    SLURM_CONF=$slurm_conf slurmd -D -N "$n" -f "$slurm_conf" > "$dir/log/slurmd-$n.out" 2>&1 &
    slurm_daemons+=("slurmd-$n:$!")
  done
  for _ in $(seq 120); do
    [ "$(sl sinfo -h -N -o '%N %t' 2>/dev/null | sort -u | grep -c ' idle$')" -eq "$count" ] && return 0
    sleep 0.5
  done
  echo "slurm_start: the $count nodes did not come up:" >&2
  sl sinfo -N >&2
  return 1
}

slurm_drained() {
  local end=$((SECONDS + $1))
  until [ -z "$(sl squeue -h)" ]; do
    if ((SECONDS >= end)); then
      echo "jobs still queued after $1 s:" >&2
      sl squeue >&2
      return 1
    fi
    sleep 0.5
  done
}

slurm_stop() {
  local entry pid name k e status=0 leftover=()
  [ -n "$slurm_conf" ] || return 0
  if [ ${#slurm_daemons[@]} -gt 1 ]; then
    sl squeue -h -o %A 2>/dev/null | xargs -r env SLURM_CONF="$slurm_conf" scancel
    for _ in $(seq 60); do [ -z "$(sl squeue -h 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  for ((k = ${#slurm_daemons[@]} - 1; k >= 0; k--)); do
    kill -TERM "${slurm_daemons[k]##*:}" 2>/dev/null
  done
  for entry in "${slurm_daemons[@]}"; do
    name=${entry%%:*} pid=${entry##*:}
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm_stop: $name ($pid) did not stop: killing it" >&2
      kill -KILL "$pid" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
  done
  slurm_daemons=()
  # Job steps outlive slurmd by design; any left now (there should be none) are
  # this cluster's, told by their environment.
  for e in /proc/[0-9]*/environ; do
    pid=${e#/proc/} pid=${pid%/environ}
    tr '\0' '\n' 2>/dev/null < "$e" | grep -qxF "SLURM_CONF=$slurm_conf" && leftover+=("$pid")
  done
  if [ ${#leftover[@]} -gt 0 ]; then
    echo "slurm_stop: killing processes left by jobs: ${leftover[*]}" >&2
    kill -KILL "${leftover[@]}" 2>/dev/null
    status=1
  fi
  return "$status"
}
