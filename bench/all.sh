#!/usr/bin/env bash
# The hot paths of issue 20 in one run, as a Markdown table of figures and ratios
# measured side by side (so that a loaded machine moves both sides of a ratio):
# exact dedup against `wc -l` and a naive loop over the same files, one thread
# against two, near mode, SimHash fingerprints, `similar -k 3` on 10M synthetic fingerprints, the
# store at 50M keys, batch against stream; JSON Lines, Parquet and MinHash when
# CORPUS_DIR-jsonl and CORPUS_DIR-parquet exist. Best of $REPS (default 3) per figure.
#
#   bench/all.sh [CORPUS_DIR]      (default ../shared/corpus/web3; rows that need it
#                                   are skipped without it)
#   REPS=1 bench/all.sh            quicker, noisier
#
# Needs zstd, bc, python3; about 10 minutes on the 2-core build machine when it is
# idle. The 10M fingerprint file (0.9 GB) goes to /dev/shm when it exists, and so
# do the dedup and MinHash rows' outputs: a VM disk's fsync latency is not the
# tool's, and it would enter the thread ratios as a serial part.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3}
REPS=${REPS:-3}
cargo build --release -q --locked -p webdedup
cargo build --release -q --locked -p webdedup-store -p webdedup-simhash -p webdedup-formats -p webdedup-dedup --examples
bin=target/release/webdedup
ex=target/release/examples
tmp=$(mktemp -d)
big=$(mktemp -d "$([ -d /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/webdedup-bench.XXXXXX")
trap 'rm -rf "$tmp" "$big"' EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
best() { sort -n | head -1; }
# Best wall seconds of $REPS runs of a command (its output discarded).
wall() {
  for _ in $(seq "$REPS"); do
    /usr/bin/time -f %e -o "$tmp/time" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    cat "$tmp/time"
  done | best
}
# Best CPU seconds (user + sys, children included) of $REPS runs: the naive-loop
# ratio is stated in CPU, which a loaded machine or a slow disk moves less.
cpu() {
  for _ in $(seq "$REPS"); do
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" > /dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
    awk '{ printf "%.2f\n", $1 + $2 }' "$tmp/time"
  done | best
}
ratio() { echo "$1 / $2" | bc -l | xargs printf %.2f; }
mbs() { echo "$1 / $2 / 1000000" | bc -l | xargs printf %.0f; }
verdict() { # value op target
  if [ "$(echo "$1 $2 $3" | bc -l)" = 1 ]; then echo met; else echo "not met"; fi
}

load_start=$(load)
echo "# bench/all.sh $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/Mem:/ {print $2}') GB RAM; best of $REPS"
echo
echo "| path | measured (this run) | ratio | target | |"
echo "|---|---|---|---|---|"

if ls "$corpus"/*/*.zst > /dev/null 2>&1; then
  # shellcheck source=bench/lib.sh
  source bench/lib.sh
  prepare_corpus "$corpus" "$tmp" > "$tmp/input.txt"
  files=$(find "$tmp/in" -type f | sort)
  # shellcheck disable=SC2086
  wc_s=$(wall wc -l $files)
  t1=$(wall sh -c "rm -rf $big/o; $bin dedup -q -t 1 -i $tmp/in -o $big/o")
  t2=$(wall sh -c "rm -rf $big/o; $bin dedup -q -t 2 -i $tmp/in -o $big/o")
  echo "| exact dedup (defaults), 1 thread, $(basename "$corpus") | ${t1} s, $(mbs "$bytes" "$t1") MB/s; \`wc -l\` ${wc_s} s | $(ratio "$t1" "$wc_s")x \`wc -l\` | >= 300 MB/s, <= 15x \`wc -l\` | $(verdict "$(ratio "$t1" "$wc_s")" '<=' 15) |"
  # The naive loop (crates/dedup/examples/naive_loop.rs): memchr lines, ASCII
  # lowercase, xxh3 a paragraph, a hash set; none of webdedup's rules.
  # shellcheck disable=SC2086
  nl=$(cpu "$ex/naive_loop" $files)
  c1=$(cpu sh -c "rm -rf $big/o; $bin dedup -q -t 1 -i $tmp/in -o $big/o")
  echo "| exact dedup, 1 thread, against a naive loop (\`naive_loop\` example: memchr lines, ASCII lowercase, xxh3 a paragraph, a hash set), CPU seconds (outputs on tmpfs) | ${c1} s vs ${nl} s | $(ratio "$c1" "$nl")x the naive loop | <= 0.5x | $(verdict "$(ratio "$c1" "$nl")" '<=' 0.5) |"
  echo "| exact dedup, 2 threads | ${t2} s, $(mbs "$bytes" "$t2") MB/s | $(ratio "$t1" "$t2")x one thread | >= 1.85x | $(verdict "$(ratio "$t1" "$t2")" '>=' 1.85) |"
  n1=$(wall sh -c "rm -rf $big/o; $bin dedup -q -n -t 1 -i $tmp/in -o $big/o")
  n2=$(wall sh -c "rm -rf $big/o; $bin dedup -q -n -t 2 -i $tmp/in -o $big/o")
  echo "| near mode (\`-n\`), 1 thread | ${n1} s, $(mbs "$bytes" "$n1") MB/s | $(ratio "$n1" "$wc_s")x \`wc -l\` | >= 100 MB/s | $(verdict "$(mbs "$bytes" "$n1")" '>=' 100) |"
  echo "| near mode, 2 threads | ${n2} s, $(mbs "$bytes" "$n2") MB/s | $(ratio "$n1" "$n2")x one thread | >= 1.8x | $(verdict "$(ratio "$n1" "$n2")" '>=' 1.8) |"
  # SimHash fingerprints: documents in memory, one thread, default settings.
  fp=$(for _ in $(seq "$REPS"); do
    FP_ONLY=unicode/distinct "$ex/fp_bench" 5 "$corpus"/*/*.zst | grep -o 'cpu_mb_per_s=[0-9.]*' | tail -1 | cut -d= -f2
  done | sort -n | tail -1)
  echo "| SimHash fingerprints, defaults (unicode, shingle 5, distinct), 1 thread, documents in memory | $fp MB/s of document text (per second of CPU) | - | >= 100 MB/s | $(verdict "$fp" '>=' 100) |"
  # Batch against stream, 2 threads.
  s2=$(wall sh -c "rm -rf $tmp/s; $bin dedup -q -t 2 -i $tmp/in -o $tmp/s --json $tmp/s.json")
  b2=$(wall sh -c "rm -rf $tmp/b $tmp/w; $bin batch run -t 2 -i $tmp/in -o $tmp/b -w $tmp/w")
  same=$(diff -r "$tmp/s" "$tmp/b" > /dev/null && echo "outputs identical" || echo "OUTPUTS DIFFER")
  work=$(du -sb "$tmp/w" | cut -f1)
  asked=$(python3 -c "import json;d=json.load(open('$tmp/s.json'));print(2*d['documents_read']+d['paragraphs_long'])")
  echo "| batch run vs stream, 2 threads | ${b2} s vs ${s2} s; work dir $(ratio "$work" "$asked") B/key; $same | $(ratio "$b2" "$s2")x the time | <= 1.5x, <= 12 B/key | $(verdict "$(ratio "$b2" "$s2")" '<=' 1.5) / $(verdict "$(ratio "$work" "$asked")" '<=' 12) |"
  rm -rf "$tmp/s" "$tmp/b" "$tmp/w" "$tmp/o"
  # The formats of issue 17 and MinHash (issue 18), one thread, on the same
  # documents: JSON Lines decompressed as the verticals are (the same text, so the
  # time ratio is the ratio of speed per byte of text); Parquet at equal
  # compression: as shipped (zstd) against the shipped .zst JSON Lines, and
  # uncompressed (rewritten by the parquet_recode example) against decompressed
  # JSON Lines; the uneven pair (zstd Parquet, decompressed JSON Lines) beside.
  if [ -d "${corpus}-jsonl" ] && [ -d "${corpus}-parquet" ]; then
    for f in $(cd "${corpus}-jsonl" && find . -name '*.zst' | sort); do
      mkdir -p "$tmp/jl/$(dirname "$f")"
      zstd -qdc "${corpus}-jsonl/$f" > "$tmp/jl/${f%.zst}"
    done
    jl_bytes=$(cat $(find "$tmp/jl" -type f) | wc -c)
    j1=$(wall sh -c "rm -rf $tmp/o; $bin dedup -q -t 1 -i $tmp/jl -o $tmp/o")
    "$ex/parquet_recode" none "${corpus}-parquet" "$tmp/pn"
    jz=$(wall sh -c "rm -rf $tmp/o; $bin dedup -q -t 1 -i ${corpus}-jsonl -o $tmp/o")
    p1=$(wall sh -c "rm -rf $tmp/o; $bin dedup -q -t 1 -i ${corpus}-parquet -o $tmp/o")
    pn=$(wall sh -c "rm -rf $tmp/o; $bin dedup -q -t 1 -i $tmp/pn -o $tmp/o")
    m1=$(wall sh -c "rm -rf $big/o; $bin minhash -q -t 1 -i $tmp/jl -o $big/o")
    m2=$(wall sh -c "rm -rf $big/o; $bin minhash -q -t 2 -i $tmp/jl -o $big/o")
    echo "| JSON Lines exact dedup, 1 thread, $(basename "$corpus")-jsonl decompressed | ${j1} s, $(mbs "$jl_bytes" "$j1") MB/s | $(ratio "$t1" "$j1")x the verticals' speed per byte of text | >= 0.8x | $(verdict "$(ratio "$t1" "$j1")" '>=' 0.8) |"
    echo "| Parquet exact dedup, 1 thread, $(basename "$corpus")-parquet (zstd; uncompressed) | ${p1} s; ${pn} s | $(ratio "$jz" "$p1")x JSON Lines .zst; $(ratio "$j1" "$pn")x JSON Lines decompressed (zstd Parquet against decompressed JSON Lines: $(ratio "$j1" "$p1")x) | >= 0.8x | $(verdict "$(ratio "$jz" "$p1")" '>=' 0.8) / $(verdict "$(ratio "$j1" "$pn")" '>=' 0.8) |"
    echo "| MinHash stream mode (defaults), 1 thread, $(basename "$corpus")-jsonl decompressed | ${m1} s, $(mbs "$jl_bytes" "$m1") MB/s of JSON Lines | - | - | |"
    echo "| MinHash stream mode, 2 threads | ${m2} s, $(mbs "$jl_bytes" "$m2") MB/s of JSON Lines | $(ratio "$m1" "$m2")x one thread | >= 1.8x | $(verdict "$(ratio "$m1" "$m2")" '>=' 1.8) |"
    rm -rf "$tmp/jl" "$tmp/pn" "$tmp/o"
  fi
else
  echo "| (corpus rows) | skipped: no corpus at $corpus | | | |"
fi

# similar -k 3 on 10M random fingerprints (1% planted neighbours), the command end to end.
"$ex/make_fps" 10000000 "$big/fps.tsv"
cat "$big/fps.tsv" > /dev/null
q1=$(wall "$bin" similar --quiet -k 3 --threads 1 "$big/fps.tsv" -o "$big/pairs1.tsv")
q2=$(wall "$bin" similar --quiet -k 3 --threads 2 "$big/fps.tsv" -o "$big/pairs2.tsv")
same=$(cmp -s "$big/pairs1.tsv" "$big/pairs2.tsv" && echo "same pairs" || echo "PAIRS DIFFER")
echo "| \`similar -k 3\`, 10M random fingerprints, end to end | ${q2} s with 2 threads, ${q1} s with 1; $same | $(ratio "$q1" "$q2")x from the second thread | <= 5 s, >= 1.7x | $(verdict "$q2" '<=' 5) / $(verdict "$(ratio "$q1" "$q2")" '>=' 1.7) |"
rm -rf "${big:?}"/*

# The store alone.
st=$(for _ in $(seq "$REPS"); do "$ex/store_bench" 50000000 4096; done |
  python3 -c "import json,sys; r=max((json.loads(l) for l in sys.stdin), key=lambda r: r['inserts_per_second']); print(round(r['inserts_per_second']/1e6, 2), r['rss_bytes_per_key'])")
read -r mps bpk <<< "$st"
echo "| store test-and-insert, 50M random keys, batches of 4096, 1 thread | ${mps}M keys/s at $bpk B/key (RSS) | - | >= 10M/s at <= 10 B/key | $(verdict "$mps" '>=' 10) / $(verdict "$bpk" '<=' 10) |"
echo
[ -f "$tmp/input.txt" ] && cat "$tmp/input.txt"
echo "load average: $load_start at the start, $(load) at the end"
