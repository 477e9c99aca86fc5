#!/usr/bin/env bash
# The whole test suite (the README's test command; CI runs exactly this), in phases,
# each announced on a line of its own:
#   1. system packages: scripts/deps.sh installs Debian's redis-server/redis-tools,
#      slurm-wlm/munge, iproute2, zstd and chromium (the report's browser test)
#      when missing;
#   2. the Rust tests (some against real redis-server processes);
#   3. the golden list: scripts/golden.sh runs a fixed matrix of commands on the
#      shipped samples and its output hashes must equal tests/golden/outputs.tsv;
#   4. every example of README.md (tests/readme/check_readme.py: each in a private
#      network namespace, on the shipped samples);
#   5. the Slurm scripts under a real Slurm on this machine
#      (tests/extended/slurm_local.sh, about 2 to 3 minutes);
#   6. in a virtual environment under target/, the Python module built with maturin
#      (about 3 minutes on 2 cores; pip shows its progress) and pytest: the module's
#      tests and the checks against real tools (warcio, cdxj-indexer, pywb).
# Needs root (Slurm, namespaces), the Rust toolchain (1.88 or newer), python3 with
# venv (Debian: python3-venv) and access to PyPI and Debian's packages; tests never
# read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase() { printf '\n==> [%s, %d s] %s\n' "$(date +%H:%M:%S)" $((SECONDS - started)) "$*"; }
phase "system packages (scripts/deps.sh)"
scripts/deps.sh
phase "Rust tests (cargo test --workspace --locked)"
cargo test --workspace --locked
cargo build --locked -p webdedup
phase "golden outputs (scripts/golden.sh against tests/golden/outputs.tsv)"
scripts/golden.sh target/debug/webdedup | diff -u tests/golden/outputs.tsv - || {
  echo "the outputs of the fixed runs changed (scripts/golden.sh); if on purpose, write the list again" >&2
  exit 1
}
phase "README examples (tests/readme/check_readme.py)"
python3 tests/readme/check_readme.py --bin target/debug/webdedup
phase "Slurm scripts under a local Slurm (tests/extended/slurm_local.sh)"
WEBDEDUP_BIN="$PWD/target/debug/webdedup" tests/extended/slurm_local.sh
venv=target/test-venv
phase "Python test requirements into $venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || {
  echo "python3 -m venv failed: install the venv module (Debian: apt-get install python3-venv)" >&2
  exit 1
}
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
# The Python module (`import webdedup`), built with maturin from python/ as a user
# would install it; not quiet: the Rust build takes minutes and shows its progress.
phase "the Python module (pip install ./python: a maturin build, about 3 minutes)"
log=target/pip-install-python.log
set +e
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -v ./python 2>&1 |
  tee "$log" | grep --line-buffered -E '^\s*(Compiling|Finished|Built wheel|Successfully installed)'
pip_status=${PIPESTATUS[0]}
set -e
if [ "$pip_status" -ne 0 ]; then
  tail -n 40 "$log" >&2
  echo "pip install ./python failed (status $pip_status; the whole log: $log)" >&2
  exit 1
fi
phase "pytest (tests/python, python/tests)"
status=0
WEBDEDUP_BIN="$PWD/target/debug/webdedup" "$venv/bin/python" -m pytest -q tests/python python/tests || status=$?
# pytest's 5 means it collected nothing: that is a broken suite, not a pass.
[ "$status" -eq 5 ] && echo "pytest collected no tests" >&2
phase "done (status $status)"
exit "$status"
