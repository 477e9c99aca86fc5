#!/usr/bin/env bash
# System packages the test suite needs, installed when missing (Debian's packages;
# root, or sudo when present): redis-server and redis-cli for the Redis store tests.
set -euo pipefail
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
[ ${#need[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
