#!/usr/bin/env bash
# Agreement with dolma's `dedupe` (paragraph mode, one process) on the JSON Lines
# corpus, and the speed of the two per core.
#
# webdedup runs as `dedup --normalize none --min-para-chars 0 --doc-check none
# -t 1 --dd` (paragraphs only, keys = the raw lines), three ways: writing the kept
# text back (zstd outputs like the inputs, and plain outputs) and `--mark` (the
# input unchanged, attribute spans beside it: what dolma writes); dolma 1.2.1 as `dolma dedupe`
# with paragraph spans, `skip_empty` (whitespace-only lines are not paragraphs, as
# in webdedup), `processes: 1` and a Bloom filter sized for 2 million paragraphs at
# a false positive rate of 1e-6. Both read the same files in the same order (the
# sorted relative paths webdedup walks, listed one by one in dolma's config): the
# web3-jsonl corpus as shipped (.jsonl.zst) plus a small edge-case file (CRLF,
# blank and whitespace-only lines, an empty text; bench/dolma_agreement.py edges).
# bench/dolma_agreement.py compare then checks paragraph by paragraph that what
# webdedup dropped is what dolma marked, every difference explained, and that
# `--mark`'s attribute spans mark exactly the dropped paragraphs (its outputs
# being the inputs).
#
# Speed: best of 3 (RUNS=N to change; wall and CPU each), the commands alternating; the ratio is dolma's over
# webdedup's, wall time and CPU time (user + system) both; dolma's Python start-up
# (its CLI with `dryrun: true`) is reported separately and subtracted in the
# "engine only" figure.
#
# dolma is not a dependency of webdedup: it lives in a throwaway virtualenv
# (python3 -m venv DIR && DIR/bin/pip install dolma==1.2.1).
# Usage: bench/dolma_agreement.sh [CORPUS_DIR] [DOLMA_VENV]
#        (defaults ../shared/corpus/web3-jsonl and ../peers/dolma)
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=${1:-../shared/corpus/web3-jsonl}
venv=${2:-../peers/dolma}
[ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
[ -x "$venv/bin/dolma" ] || { echo "no dolma in $venv (pip install dolma==1.2.1 in a venv)" >&2; exit 1; }
corpus=$(cd "$corpus" && pwd)
# WEBDEDUP=PATH times that binary instead of this checkout's release build.
if [ -z "${WEBDEDUP:-}" ]; then
  cargo build --release --locked -q -p webdedup
fi
bin=${WEBDEDUP:-$PWD/target/release/webdedup}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# dolma wants the documents under a `documents/` directory and writes its
# attributes beside it (`attributes/NAME/...`): the corpus is linked in, file by
# file, with the edge cases beside it.
(cd "$corpus" && find . -name '*.jsonl*' -type f) | while read -r f; do
  mkdir -p "$tmp/documents/$(dirname "$f")"
  ln -s "$corpus/$f" "$tmp/documents/$f"
done
python3 bench/dolma_agreement.py edges "$tmp"
files=$(cd "$tmp/documents" && find . -type l -o -type f | sed 's|^\./||' | LC_ALL=C sort)
cat $(for f in $files; do echo "$tmp/documents/$f"; done) > /dev/null
bytes=$(cat $(for f in $files; do echo "$tmp/documents/$f"; done) | wc -c)
echo "input: $(echo "$files" | wc -l) files, $bytes bytes compressed, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), dolma $("$venv/bin/pip" show dolma 2>/dev/null | sed -n 's/^Version: //p')"

config() { # dryrun -> dolma's config (JSON)
  python3 - "$tmp" "$1" $files <<'EOF'
import json, sys
tmp, dryrun, files = sys.argv[1], sys.argv[2] == "true", sys.argv[3:]
print(json.dumps({
    "documents": [f"{tmp}/documents/{f}" for f in files],
    "dedupe": {"name": "dups", "paragraphs": {"attribute_name": "dups"}, "skip_empty": True},
    "bloom_filter": {"file": f"{tmp}/bloom.bin", "read_only": False,
                     "estimated_doc_count": 2_000_000, "desired_false_positive_rate": 1e-6},
    "processes": 1,
    "dryrun": dryrun,
}))
EOF
}
config false > "$tmp/dolma.json"
config true > "$tmp/dolma-dryrun.json"

timed() { # out command... -> appends "wall cpu" to out
  local out=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" > "$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 2; }
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$tmp/time" >> "$out"
}
ours() { # out dir [extra...]
  local out=$1 dir=$2; shift 2
  rm -rf "$dir"
  timed "$out" "$bin" dedup -q -t 1 --dd --normalize none --min-para-chars 0 --doc-check none \
    -i "$tmp/documents" -o "$dir" "$@"
}
dolma() {
  rm -rf "$tmp/attributes" "$tmp/bloom.bin"
  timed "$tmp/t-dolma" "$venv/bin/dolma" -c "$tmp/dolma.json" dedupe
}
: > "$tmp/t-ours"; : > "$tmp/t-plain"; : > "$tmp/t-mark"; : > "$tmp/t-dolma"; : > "$tmp/t-dry"
for _ in $(seq "${RUNS:-3}"); do
  ours "$tmp/t-mark" "$tmp/mark" --mark
  ours "$tmp/t-plain" "$tmp/ours" --compress none
  ours "$tmp/t-ours" "$tmp/ours"
  dolma
  timed "$tmp/t-dry" "$venv/bin/dolma" -c "$tmp/dolma-dryrun.json" dedupe
done
read -r ow oc <<<"$(sort -n "$tmp/t-ours" | head -1)"
read -r pw pc <<<"$(sort -n "$tmp/t-plain" | head -1)"
read -r mw mc <<<"$(sort -n "$tmp/t-mark" | head -1)"
read -r dw dc <<<"$(sort -n "$tmp/t-dolma" | head -1)"
read -r sw sc <<<"$(sort -n "$tmp/t-dry" | head -1)"
# CPU times: the best of the runs' CPU times (not the CPU of the best wall time).
best_cpu() { sort -n -k2 "$1" | head -1 | cut -d' ' -f2; }
oc=$(best_cpu "$tmp/t-ours"); pc=$(best_cpu "$tmp/t-plain"); mc=$(best_cpu "$tmp/t-mark")
dc=$(best_cpu "$tmp/t-dolma"); sc=$(best_cpu "$tmp/t-dry")
ratio() { echo "$1 / $2" | bc -l | xargs printf %.1f; }
echo "webdedup dedup -t 1 --mark: ${mw}s wall, ${mc}s CPU; dolma / webdedup --mark per core:" \
  "$(ratio "$dw" "$mw")x wall, $(ratio "$dc" "$mc")x CPU, engine only (start-up subtracted)" \
  "$(ratio "$(echo "$dw - $sw" | bc -l)" "$mw")x wall, $(ratio "$(echo "$dc - $sc" | bc -l)" "$mc")x CPU"
echo "webdedup dedup -t 1: ${ow}s wall, ${oc}s CPU (outputs zstd-compressed like the inputs);" \
  "with --compress none: ${pw}s wall, ${pc}s CPU"
echo "dolma dedupe, processes 1: ${dw}s wall, ${dc}s CPU (of which start-up, dryrun: ${sw}s wall, ${sc}s CPU)"
echo "dolma / webdedup per core: $(ratio "$dw" "$ow")x wall, $(ratio "$dc" "$oc")x CPU;" \
  "engine only (start-up subtracted): $(ratio "$(echo "$dw - $sw" | bc -l)" "$ow")x wall," \
  "$(ratio "$(echo "$dc - $sc" | bc -l)" "$oc")x CPU; against --compress none:" \
  "$(ratio "$dw" "$pw")x wall, $(ratio "$dc" "$pc")x CPU, engine only $(ratio "$(echo "$dc - $sc" | bc -l)" "$pc")x CPU"

# The last runs' outputs (webdedup's with zstd outputs, and --mark's), paragraph by paragraph.
python3 bench/dolma_agreement.py compare "$tmp/documents" "$tmp/attributes/dups" "$tmp/ours" "$tmp/mark"
