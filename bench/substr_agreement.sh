#!/usr/bin/env bash
# Agreement of the streaming substring mode (`dedup --substr=K,W --mark`) with the
# exact keep-first answer of ExactSubstr's rule (each position's longest previous
# factor, from the suffix array; `keep_first_agreement`): precision and recall of
# the removed characters, for a few K,W,B.
#
#   bench/substr_agreement.sh [CORPUS_DIR] [L]     (default: sample/web3-mini-jsonl, 100)
#
# KW="10,4,80 12,8" picks the settings (K,W or K,W,B); BIN the webdedup binary (default: release).
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-sample/web3-mini-jsonl}
length=${2:-100}
profile=${PROFILE:-release}
flag=(); [[ $profile == release ]] && flag=(--release)
cargo build -q --locked "${flag[@]}" -p webdedup -p webdedup-substr --example keep_first_agreement
bin=${BIN:-target/$profile/webdedup}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD), corpus $corpus, L=$length"
for kw in ${KW:-10,4,80 12,8,100 12,4,80 8,4,80}; do
    rm -rf "$work/out"
    "$bin" dedup --substr="$kw" "$corpus" -o "$work/out" --mark -q
    marks=()
    while IFS= read -r f; do marks+=(--marks "$f"); done < <(find "$work/out" -name '*.attributes.jsonl' | sort)
    echo "K,W=$kw: $(target/$profile/examples/keep_first_agreement --length "$length" \
        --attribute webdedup_repeated_spans "${marks[@]}" -- "$corpus" | tail -1)"
done
