# Shared by the benchmark scripts (source it): decompresses the corpus's .zst files
# into "$tmp/in", reads them once so timings start from the page cache, and sets
# $bytes and prints the input line.
prepare_corpus() { # corpus tmp
  local corpus=$1 tmp=$2 f
  [ -d "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 1; }
  for f in $(cd "$corpus" && find . -name '*.zst' | sort); do
    mkdir -p "$tmp/in/$(dirname "$f")"
    zstd -qdc "$corpus/$f" > "$tmp/in/${f%.zst}"
  done
  cat $(find "$tmp/in" -type f) > /dev/null
  bytes=$(cat $(find "$tmp/in" -type f) | wc -c)
  echo "input: $(find "$tmp/in" -type f | wc -l) files, $bytes bytes, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The scale benchmarks' settings (bench/minhash_scale.sh, bench/report.sh) from the
# environment: THREADS (default 2), DUPS (0.2), WORK (target/minhash-scale), WEBDEDUP
# (default target/release/webdedup, built if missing) into $threads, $dups, $work, $bin.
scale_settings() {
  threads=${THREADS:-2}
  dups=${DUPS:-0.2}
  work=${WORK:-target/minhash-scale}
  bin=${WEBDEDUP:-target/release/webdedup}
  if [ -z "${WEBDEDUP:-}" ] && [ ! -x "$bin" ]; then
    cargo build -q --release --locked -p webdedup
  fi
}

# The scale benchmarks' input (bench/minhash_scale.sh, bench/report.sh): N synthetic
# JSON Lines documents, a share DUPS of them near-duplicates (bench/minhash_synth.py),
# zstd-compressed in WORK/in-N-DUPS, made once and reused; sets $input and $raw_bytes
# (the decompressed size).
synth_input() { # n dups work
  local n=$1 dups=$2 work=$3
  mkdir -p "$work"
  input=$work/in-$n-$dups
  if [ ! -s "$input/synth.jsonl.zst" ]; then
    rm -rf "$input"
    mkdir -p "$input"
    echo "generating $n documents ($dups near-duplicates) into $input" >&2
    python3 bench/minhash_synth.py "$n" "$dups" 1 | zstd -q -T2 -3 -o "$input/synth.jsonl.zst"
  fi
  [ -s "$input.bytes" ] || zstd -dc "$input/synth.jsonl.zst" | wc -c > "$input.bytes"
  raw_bytes=$(cat "$input.bytes")
}

# The opening of a benchmark on the corpus: builds the release binary (`cargo build`
# ARGS beyond `-p webdedup`, e.g. examples), makes $tmp (removed on exit) and
# prepares the corpus in it. Sets $bin, $tmp and $bytes.
bench_start() { # corpus [cargo build args...]
  local corpus=$1
  shift
  cargo build --release -q -p webdedup "$@"
  bin=target/release/webdedup
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  prepare_corpus "$corpus" "$tmp"
}
