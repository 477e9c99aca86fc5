#!/usr/bin/env bash
# `webdedup report` of a 1M-document MinHash run: the scale benchmark's synthetic
# input (bench/minhash_synth.py, made and kept by synth_input in bench/lib.sh, as
# bench/minhash_scale.sh makes it), one `webdedup minhash -d --json` run on it, then
# its report, without and with --source (the sampled drops' texts read again from
# the input). Prints the run's time, each report's time and peak RSS, and the
# page's size.
#
# Usage: bench/report.sh [N]            (default N = 1,000,000)
# Environment: THREADS (the run's threads, default 2), DUPS (share of near-duplicates,
# default 0.2), WORK (scratch directory, default target/minhash-scale, shared with
# bench/minhash_scale.sh), WEBDEDUP (the binary, default target/release/webdedup,
# built if missing), KEEP=1 (keep the run's outputs and the pages).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
n=${1:-1000000}
scale_settings
synth_input "$n" "$dups" "$work"
out=$work/report-run-$n
cleanup() {
  [ "${KEEP:-}" = 1 ] || rm -rf "$out" "$work"/report-"$n"*.html
}
trap cleanup EXIT

# timed NAME CMD...: CMD's wall time (s) and peak RSS (KB) into $work/NAME.time.
timed() {
  local name=$1
  shift
  /usr/bin/time -f '%e %M' -o "$work/$name.time" "$@"
}
seconds() { cut -d' ' -f1 "$work/$1.time"; }
rss_mb() { echo $(($(cut -d' ' -f2 "$work/$1.time") / 1024)); }

echo "input: $n documents, $raw_bytes bytes of JSON Lines; $threads threads; $("$bin" --version); load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$out"
mkdir -p "$out"
timed report-run "$bin" minhash -q -i "$input" -o "$out" -t "$threads" --compress zst -d \
  --json "$out/run.json"
echo "run:                 $(seconds report-run) s, $(rss_mb report-run) MB peak RSS"
page=$work/report-$n.html
timed report "$bin" report -q "$out" -o "$page"
echo "report:              $(seconds report) s, $(rss_mb report) MB peak RSS, page $(wc -c < "$page") bytes"
page=$work/report-$n-source.html
timed report-source "$bin" report -q "$out" --source "$input" -o "$page"
echo "report --source:     $(seconds report-source) s, $(rss_mb report-source) MB peak RSS, page $(wc -c < "$page") bytes"
python3 - "$(seconds report-run)" "$(seconds report)" "$(seconds report-source)" <<'PY'
import sys
run, report, source = map(float, sys.argv[1:])
print(f"report / run: {report / run:.1%} without --source, {source / run:.1%} with it")
PY
