#!/usr/bin/env bash
# MinHash LSH benchmarks (issue 18): signature + banding speed on one thread, the
# quality study against exact word 5-gram Jaccard >= 0.8 (with SimHash k = 3 and 9 in
# the same table), and datatrove's MinHash pipeline side by side on the same
# documents as JSON Lines. Writes markdown / key=value lines to stdout.
#
#   bench/minhash.sh [speed|stream|study|datatrove|rensa|all]     (default: all)
#
# CORPUS (default ../shared/corpus) must hold web3/ (verticals) and web3-jsonl/.
# The datatrove part makes a throwaway venv under target/ (PyPI: datatrove 0.10.1 and
# what it needs to read zstd JSONL); it is never a test dependency. The rensa part
# likewise (PyPI: rensa 0.5.0, zstandard): rensa's MinHash LSH, keep-first in input
# order, whose removed documents the study scores beside webdedup's (issue 32).
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

if [[ $what == stream || $what == all ]]; then
    # End to end: `webdedup minhash` (read zstd JSONL, signatures, band keys, the
    # embedded store, verification, outputs, pairs) on web3-jsonl, 1 and 2 threads.
    cargo build --release -q --locked -p webdedup
    mb=$(du -sbL "$CORPUS/web3-jsonl" | cut -f1)
    for t in 1 2; do
        rm -rf target/minhash-stream-out
        /usr/bin/time -o target/minhash-stream.time -f "%e %U %S %M" \
            target/release/webdedup minhash -i "$CORPUS/web3-jsonl" -o target/minhash-stream-out \
            -q -t $t --json target/minhash-stream.json
        read -r wall user sys rss < target/minhash-stream.time
        dropped=$(grep -o '"documents_dropped": [0-9]*' target/minhash-stream.json | grep -o '[0-9]*$')
        bytes_in=$(grep -o '"bytes_in": [0-9]*' target/minhash-stream.json | grep -o '[0-9]*$' || echo 0)
        echo "minhash_stream threads=$t wall_s=$wall cpu_s=$(echo "$user + $sys" | bc) max_rss_kb=$rss dropped=$dropped input_bytes_compressed=$mb input_bytes=$bytes_in"
    done
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

rensa_words=(alnum split)
if [[ $what == rensa || $what == all ]]; then
    venv=target/rensa-venv
    if [[ ! -x $venv/bin/python ]]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --disable-pip-version-check 'rensa==0.5.0' zstandard
    fi
    echo "## rensa 0.5.0 MinHash LSH, keep-first, one process, web3-jsonl (words as the truth's, then all)"
    for w in "${rensa_words[@]}"; do
        rm -rf "target/rensa-$w"
        "$venv/bin/python" bench/rensa_minhash.py "$CORPUS/web3-jsonl" "target/rensa-$w" "$w"
    done
fi

if [[ $what == study || $what == all ]]; then
    # The same documents as verticals (web3) and as JSON Lines (web3-jsonl, where
    # the peers ran): the options table scores every run by the same truth.
    cargo build --release -q --locked -p webdedup-minhash --example minhash_study
    args=()
    [[ -f $dt_export/removed.tsv ]] && args+=(--datatrove "$dt_export")
    for w in "${rensa_words[@]}"; do
        [[ -f target/rensa-$w/removed.tsv ]] && args+=(--rensa "target/rensa-$w")
    done
    # The binary's own decisions at the defaults, scored beside its simulation.
    cargo build --release -q --locked -p webdedup
    rm -rf target/minhash-study-out target/webdedup-export
    target/release/webdedup minhash "$CORPUS/web3-jsonl" -o target/minhash-study-out -q -t 1 -d
    python3 bench/webdedup_export.py target/minhash-study-out target/webdedup-export \
        "webdedup minhash $(git rev-parse --short HEAD), defaults, -t 1 (the binary)"
    args+=(--rensa target/webdedup-export)
    target/release/examples/minhash_study "${args[@]}" "$CORPUS"/web3/*/*.zst
    echo "## the options table on web3-jsonl"
    target/release/examples/minhash_study "${args[@]}" --only options "$CORPUS"/web3-jsonl/*/*.zst
fi
