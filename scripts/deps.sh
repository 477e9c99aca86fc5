#!/usr/bin/env bash
# System packages the tests need, installed when missing (Debian's packages; root,
# or sudo when present). Usage: scripts/deps.sh [GROUP...]
#   redis  redis-server and redis-cli, for the Redis store tests
#   slurm  slurm-wlm (slurmctld, slurmd, the client commands) and munge, for
#          tests/extended/slurm_local.sh
#   readme iproute2 and zstd, for tests/readme/check_readme.py (namespaces, the
#          examples' zstd inputs); unshare is util-linux's, always there
#   java   a Java runtime, for tests/extended/spark_local.sh
#   chromium  Debian's chromium, for crates/cli/tests/report.rs (the report opened
#          headless: its DOM and screenshots)
# With no GROUP: what scripts/test.sh needs (redis, slurm, readme, chromium).
set -euo pipefail
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(redis slurm readme chromium)
has() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ]; }
need=()
for g in "${groups[@]}"; do
  case $g in
    redis)
      has redis-server || need+=(redis-server)
      has redis-cli || need+=(redis-tools)
      ;;
    slurm)
      { has slurmctld && has slurmd && has sbatch && has munged; } || need+=(slurm-wlm munge)
      ;;
    readme)
      has ip || need+=(iproute2)
      has zstd || need+=(zstd)
      ;;
    java)
      has java || need+=(openjdk-17-jre-headless)
      ;;
    chromium)
      has chromium || need+=(chromium)
      ;;
    *)
      echo "scripts/deps.sh: unknown group '$g' (redis, slurm, readme, java, chromium)" >&2
      exit 2
      ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
