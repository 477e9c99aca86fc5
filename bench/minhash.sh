#!/usr/bin/env bash
# MinHash LSH benchmarks (issue 18): signature + banding speed on one thread, the
# quality study against exact word 5-gram Jaccard >= 0.8 (with SimHash k = 3 and 9 in
# the same table), and datatrove's MinHash pipeline side by side on the same
# documents as JSON Lines. Writes markdown / key=value lines to stdout.
#
#   bench/minhash.sh [speed|study|datatrove|all]     (default: all)
#
# CORPUS (default ../shared/corpus) must hold web3/ (verticals) and web3-jsonl/.
# The datatrove part makes a throwaway venv under target/ (PyPI: datatrove 0.10.1 and
# what it needs to read zstd JSONL); it is never a test dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
what=${1:-all}
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"

if [[ $what == speed || $what == all ]]; then
    cargo build --release -q --locked -p webdedup-minhash --example minhash_bench
    echo "## signatures + band keys, one thread, verticals (documents in memory)"
    target/release/examples/minhash_bench "$CORPUS"/web3/*/*.zst
    echo "## the same, JSON Lines"
    target/release/examples/minhash_bench --reps 1 "$CORPUS"/web3-jsonl/*/*.zst
fi

dt_export=target/datatrove-work/export
if [[ $what == datatrove || $what == all ]]; then
    venv=target/datatrove-venv
    if [[ ! -x $venv/bin/python ]]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check \
            'datatrove==0.10.1' 'xxhash<4' regex tokenizers orjson zstandard
    fi
    rm -rf target/datatrove-work target/datatrove.log
    echo "## datatrove 0.10.1 MinHash, one worker (tasks: one per file), web3-jsonl (its log: target/datatrove.log)"
    /usr/bin/time -o target/datatrove.time -f "datatrove: %e s wall, %U s user, %S s system, %M KB max RSS" \
        "$venv/bin/python" bench/datatrove_minhash.py "$CORPUS/web3-jsonl" target/datatrove-work 1 \
        2> target/datatrove.log
    cat target/datatrove.time
fi

if [[ $what == study || $what == all ]]; then
    cargo build --release -q --locked -p webdedup-minhash --example minhash_study
    args=()
    [[ -f $dt_export/removed.tsv ]] && args=(--datatrove "$dt_export")
    target/release/examples/minhash_study "${args[@]}" "$CORPUS"/web3/*/*.zst
fi
