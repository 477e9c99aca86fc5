#!/usr/bin/env bash
# Benchmarks of the web-archive commands (issue 7), each next to the classic tool
# on the same input in the same run:
#   cdx dups   vs  NutchWAX's dedup-cdx pipeline (awk | sort -u | awk)
#   cdx dates  vs  awk | sort -u | awk (one line per version with all its dates)
#   warc index vs  cdxj-indexer (installed in a temporary venv)
#   warc dedup on sqlite-recrawl: MB/s and bytes saved
#
# Usage: bench/archive.sh [LINES]      (synthetic CDX size, default 5000000)
# Env:   WEBDEDUP_BIN (default target/release/webdedup), WARC_DIR (default
#        ../shared/warc), WORK (scratch dir, default a fresh temp dir), PYTHON.
set -euo pipefail
export LC_ALL=C
LINES=${1:-5000000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WEBDEDUP_BIN:-$ROOT/target/release/webdedup}
WARC_DIR=${WARC_DIR:-$ROOT/../shared/warc}
WORK=${WORK:-$(mktemp -d /tmp/webdedup-archive-bench.XXXXXX)}
PYTHON=${PYTHON:-python3}
[ -x "$BIN" ] || { echo "no binary at $BIN (cargo build --release)"; exit 2; }
[ -d "$WARC_DIR/sqlite-recrawl" ] || { echo "no $WARC_DIR/sqlite-recrawl: set WARC_DIR"; exit 2; }
mkdir -p "$WORK"
echo "# $(date -u +%FT%TZ) on $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# binary: $BIN; scratch: $WORK"

now() { date +%s.%N; }
# user CPU seconds of the last `cpu` run
cpu() { /usr/bin/time -f %U -o "$WORK/cpu" "$@"; }
cpurate() { awk -v n="$1" -v u="$(cat "$WORK/cpu")" -v unit="$2" 'BEGIN { printf "CPU %.2f s user = %.2f %s per thread", u, n / u / 1e6, unit }'; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" -v u="$4" 'BEGIN { t = b - a; printf "%.2f s, %.2f %s\n", t, n / t / (u == "MB/s" ? 1e6 : 1e6), (u == "MB/s" ? "MB/s" : "M lines/s") }'; }

SQ=("$WARC_DIR"/sqlite-recrawl/*.warc.gz)
SQ_BYTES=$(cat "${SQ[@]}" | wc -c)

# --- synthetic CDX: the sqlite-recrawl index, each line repeated under REP url keys
"$BIN" warc index --format cdx11 "${SQ[@]}" 2>/dev/null | tail -n +2 > "$WORK/seed.cdx"
SEED=$(wc -l < "$WORK/seed.cdx")
REP=$(( (LINES + SEED - 1) / SEED ))
# Replica i of every line gets url key KEY/i: the duplicates are those of the three
# crawls (same page, same payload, later date), input order stays chronological.
awk -v rep="$REP" -v n="$LINES" '{ k = $1; for (i = 0; i < rep; i++) { if (c++ >= n) exit; $1 = k "/" i; print } }' "$WORK/seed.cdx" > "$WORK/big.cdx"
N=$(wc -l < "$WORK/big.cdx")
echo "# synthetic CDX: $N lines, $(( $(wc -c < "$WORK/big.cdx") / 1000000 )) MB"
cat "$WORK/big.cdx" > /dev/null  # warm the page cache

echo "## cdx dups ($N lines)"
a=$(now); cpu "$BIN" cdx dups "$WORK/big.cdx" > "$WORK/dups.webdedup" 2>/dev/null; b=$(now)
echo "webdedup cdx dups:            $(rate "$N" "$a" "$b" lines) wall, $(cpurate "$N" "M lines/s"), $(wc -l < "$WORK/dups.webdedup") dups"
a=$(now)
awk '{ print $1 " sha1:" $6 " " $2 }' "$WORK/big.cdx" | sort -u -S 1G |
  awk '{ if (url == $1 && digest == $2) print $0; url = $1; digest = $2 }' > "$WORK/dups.sort"
b=$(now)
echo "awk | sort -u | awk (dedup-cdx): $(rate "$N" "$a" "$b" lines) wall, $(wc -l < "$WORK/dups.sort") dups"
if sort -S 256M "$WORK/dups.webdedup" | cmp -s - "$WORK/dups.sort"; then echo "(same set of lines)"; else echo "(SETS DIFFER)"; fi

echo "## cdx dates ($N lines)"
a=$(now); cpu "$BIN" cdx dates --memory 256M --tmp-dir "$WORK" "$WORK/big.cdx" > "$WORK/dates.webdedup" 2>"$WORK/dates.log"; b=$(now)
echo "webdedup cdx dates --memory 256M: $(rate "$N" "$a" "$b" lines) wall, $(cpurate "$N" "M lines/s"), $(wc -l < "$WORK/dates.webdedup") versions"
sed 's/^/  /' "$WORK/dates.log"
a=$(now)
awk '{ print $1 " sha1:" toupper($6) " " $2 }' "$WORK/big.cdx" | sort -u -S 256M -T "$WORK" |
  awk '{ k = $1 " " $2; if (k != p) { if (p != "") print line; line = k " " $3; p = k } else line = line " " $3 } END { if (p != "") print line }' > "$WORK/dates.sort"
b=$(now)
echo "awk | sort -u -S 256M | awk:      $(rate "$N" "$a" "$b" lines), $(wc -l < "$WORK/dates.sort") versions"
if cmp -s "$WORK/dates.webdedup" "$WORK/dates.sort"; then echo "(outputs identical)"; else echo "(OUTPUTS DIFFER)"; fi

echo "## warc index (sqlite-recrawl: ${#SQ[@]} files, $((SQ_BYTES / 1000000)) MB)"
if [ ! -x "$WORK/venv/bin/cdxj-indexer" ]; then
  "$PYTHON" -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install -q cdxj-indexer
fi
cat "${SQ[@]}" > /dev/null
a=$(now); for i in 1 2 3 4; do "$BIN" warc index --threads 1 "${SQ[@]}" > "$WORK/index.webdedup" 2>/dev/null; done
cpu "$BIN" warc index --threads 1 "${SQ[@]}" > "$WORK/index.webdedup" 2>/dev/null; b=$(now)
echo "webdedup warc index --threads 1 (x5): $(rate $((SQ_BYTES * 5)) "$a" "$b" MB/s) wall, last run $(cpurate "$SQ_BYTES" "MB/s")"
a=$(now); for i in 1 2 3 4 5; do "$BIN" warc index "${SQ[@]}" > "$WORK/index.webdedup.mt" 2>/dev/null; done; b=$(now)
echo "webdedup warc index, $(nproc) threads (x5): $(rate $((SQ_BYTES * 5)) "$a" "$b" MB/s) wall"
cmp -s "$WORK/index.webdedup" "$WORK/index.webdedup.mt" || echo "(THREADED OUTPUT DIFFERS)"
a=$(now); "$WORK/venv/bin/cdxj-indexer" "${SQ[@]}" > "$WORK/index.cdxj-indexer"; b=$(now)
echo "cdxj-indexer:              $(rate "$SQ_BYTES" "$a" "$b" MB/s)"
if cmp -s "$WORK/index.webdedup" "$WORK/index.cdxj-indexer"; then echo "(outputs identical)"; else echo "(OUTPUTS DIFFER)"; fi

echo "## warc dedup (sqlite-recrawl, by digest)"
rm -rf "$WORK/dedup"
a=$(now); "$BIN" warc dedup "${SQ[@]}" -o "$WORK/dedup/" 2> "$WORK/dedup.log"; b=$(now)
echo "webdedup warc dedup:       $(rate "$SQ_BYTES" "$a" "$b" MB/s)"
sed 's/^/  /' "$WORK/dedup.log"
OUT_BYTES=$(cat "$WORK"/dedup/*.warc.gz | wc -c)
echo "  bytes: $SQ_BYTES -> $OUT_BYTES, saved $((SQ_BYTES - OUT_BYTES)) ($(awk -v a="$SQ_BYTES" -v b="$OUT_BYTES" 'BEGIN { printf "%.1f", 100 * (a - b) / a }')%)"
rm -rf "$WORK/dedup"
a=$(now); "$BIN" warc dedup --by url+digest "${SQ[@]}" -o "$WORK/dedup/" 2> "$WORK/dedup.log"; b=$(now)
echo "webdedup warc dedup --by url+digest: $(rate "$SQ_BYTES" "$a" "$b" MB/s)"
sed 's/^/  /' "$WORK/dedup.log"
