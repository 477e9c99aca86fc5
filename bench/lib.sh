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
