#!/usr/bin/env bash
# The whole test suite (the README's test command; CI runs exactly this).
# Needs only the Rust toolchain; tests never read ../shared.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
