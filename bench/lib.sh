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
