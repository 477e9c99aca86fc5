#!/usr/bin/env bash
# SimHash quality study (issue 6): precision / recall / F1 of SimHash near-duplicates
# against exact word 5-gram Jaccard >= 0.8 on the web3 corpus, for k = 0..6, every
# tokenizer x weights x shingle setting, per language; ten false positives and ten
# false negatives at the chosen defaults. Writes markdown to stdout.
#
#   bench/simhash_study.sh [CORPUS_DIR] [--show TOKENIZER/SHINGLE/K[/WEIGHTS]] [--weights count,distinct]
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${1:-../shared/corpus/web3}
shift || true
cargo build --release -q -p webdedup-simhash --example quality_study
exec target/release/examples/quality_study "$@" "$CORPUS"/*/*.zst
