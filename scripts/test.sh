#!/usr/bin/env bash
# The whole test suite (the README's test command; CI runs exactly this):
# the Rust tests (some against real redis-server processes, installed by
# scripts/deps.sh from Debian's packages when missing), the Slurm scripts under a
# real Slurm on this machine (tests/extended/slurm_local.sh: slurm-wlm and munge from
# Debian's packages; about 1.5 minutes), then, in a virtual environment under
# target/, the Python module built with maturin and pytest: the module's tests and
# the checks against real tools (warcio, cdxj-indexer).
# Needs root (for Slurm), the Rust toolchain, python3 and access to PyPI and
# Debian's packages; tests never read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cargo test --workspace --locked
cargo build --locked -p webdedup
WEBDEDUP_BIN="$PWD/target/debug/webdedup" tests/extended/slurm_local.sh
venv=target/test-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
# The Python module (`import webdedup`), built with maturin from python/ as a user
# would install it.
"$venv/bin/python" -m pip install -q --disable-pip-version-check ./python
status=0
WEBDEDUP_BIN="$PWD/target/debug/webdedup" "$venv/bin/python" -m pytest -q tests/python python/tests || status=$?
# pytest's 5 means it collected nothing: that is a broken suite, not a pass.
[ "$status" -eq 5 ] && echo "pytest collected no tests" >&2
exit "$status"
