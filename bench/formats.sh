#!/usr/bin/env bash
# JSON Lines against verticals, on the same documents: `webdedup dedup` (exact
# paragraph dedup, the defaults) on ../shared/corpus/web3-jsonl and on
# ../shared/corpus/web3 (the verticals web3-jsonl was made from), both
# decompressed to a temporary directory and read once before timing, the two
# commands alternating in one run (best of 3). Both hold the same text, so the
# speed ratio per byte of text is the verticals' time over the JSON Lines' time.
# Then: the same on the zstd files as shipped, peak RSS at 1x and 3x the corpus,
# and the equivalence on all of web3: the same kept/dropped document ids and the
# same number of paragraphs kept per document (`.dd` statuses), exact and near.
# Parquet (../shared/corpus/web3-parquet, the same documents in FineWeb's layout)
# is timed against JSON Lines (target: at least 0.8x its speed) and checked for
# the same decisions as web3-jsonl, exact and near. Its timing compares the
# formats at equal compression both ways, plus the uneven pair: the shipped zstd
# Parquet against the shipped .zst JSON Lines; uncompressed Parquet (the same
# files rewritten by the `parquet_recode` example) against decompressed JSON
# Lines; and the shipped zstd Parquet against decompressed JSON Lines. CPU time
# (user + system) summed over ROUNDS (default 5) alternating rounds of `-t 1`.
# Usage: bench/formats.sh [CORPUS_ROOT] (default ../shared/corpus)
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-../shared/corpus}
[ -d "$root/web3" ] && [ -d "$root/web3-jsonl" ] || { echo "no web3 / web3-jsonl under $root" >&2; exit 1; }
cargo build --release -q -p webdedup
cargo build --release -q -p webdedup-formats --example parquet_recode
bin=$PWD/target/release/webdedup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for kind in web3 web3-jsonl; do
  for f in $(cd "$root/$kind" && find . -name '*.zst' | sort); do
    mkdir -p "$tmp/$kind/$(dirname "$f")"
    zstd -qdc "$root/$kind/$f" > "$tmp/$kind/${f%.zst}"
  done
  cat $(find "$tmp/$kind" -type f) > /dev/null
done
cp -r "$root/web3-parquet" "$tmp/web3-parquet"
target/release/examples/parquet_recode none "$tmp/web3-parquet" "$tmp/web3-parquet-none"
cat $(find "$tmp/web3-parquet" "$tmp/web3-parquet-none" -type f) > /dev/null
pbytes=$(cat $(find "$tmp/web3-parquet" -type f) | wc -c)
vbytes=$(cat $(find "$tmp/web3" -type f) | wc -c)
jbytes=$(cat $(find "$tmp/web3-jsonl" -type f) | wc -c)
tbytes=$(cat $(find "$tmp/web3-jsonl" -type f) | python3 -c '
import json, sys
print(sum(len(json.loads(l)["text"].encode()) for l in sys.stdin))')
echo "verticals: $vbytes bytes; JSON Lines: $jbytes bytes; Parquet: $pbytes bytes; text: $tbytes bytes; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # input threads [extra...] -> "seconds peak_rss_kB user_seconds"
  local in=$1 t=$2; shift 2
  rm -rf "$tmp/out"
  /usr/bin/time -f "%e %M %U" -o "$tmp/time" "$bin" dedup -i "$in" -o "$tmp/out" -t "$t" -q "$@"
  cat "$tmp/time"
}
mbs() { echo "$1 / $2 / 1000000" | bc -l | xargs printf %.0f; }
for t in 1 2; do
  : > "$tmp/v"; : > "$tmp/j"
  for i in 1 2 3; do
    run "$tmp/web3" "$t" >> "$tmp/v"
    run "$tmp/web3-jsonl" "$t" >> "$tmp/j"
  done
  read -r vs vr vu <<<"$(sort -n "$tmp/v" | head -1)"
  read -r js jr ju <<<"$(sort -n "$tmp/j" | head -1)"
  echo "-t $t verticals:  ${vs}s (${vu}s CPU), $(mbs "$vbytes" "$vs") MB/s of input, $(mbs "$tbytes" "$vs") MB/s of text, peak RSS ${vr} kB"
  echo "-t $t JSON Lines: ${js}s (${ju}s CPU), $(mbs "$jbytes" "$js") MB/s of input, $(mbs "$tbytes" "$js") MB/s of text, peak RSS ${jr} kB"
  echo "-t $t JSON Lines / verticals, speed per byte of text: $(echo "$vs / $js" | bc -l | xargs printf %.2f)x (user CPU: $(echo "$vu / $ju" | bc -l | xargs printf %.2f)x)"
done
# The .zst files as shipped (only them: web3/ also holds a MANIFEST.json).
for kind in web3 web3-jsonl; do
  (cd "$root/$kind" && find . -name '*.zst') | while read -r f; do
    mkdir -p "$tmp/zst/$kind/$(dirname "$f")"; cp "$root/$kind/$f" "$tmp/zst/$kind/$f"
  done
done
read -r vs _ _ <<<"$(run "$tmp/zst/web3" 2)"
read -r js _ _ <<<"$(run "$tmp/zst/web3-jsonl" 2)"
echo "-t 2 on the .zst files as shipped: verticals ${vs}s (plain outputs), JSON Lines ${js}s (zstd outputs, like the inputs)"

# Parquet against JSON Lines by CPU time, alternating, -t 1.
cpu() { # input -> "cpu_seconds peak_rss_kB"
  rm -rf "$tmp/out"
  /usr/bin/time -f "%U %S %M" -o "$tmp/time" "$bin" dedup -i "$1" -o "$tmp/out" -t 1 -q
  awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$tmp/time"
}
declare -A input=([jz]="$tmp/zst/web3-jsonl" [jd]="$tmp/web3-jsonl" [pz]="$tmp/web3-parquet" [pn]="$tmp/web3-parquet-none")
for k in jz jd pz pn; do : > "$tmp/c-$k"; done
for _ in $(seq "${ROUNDS:-5}"); do
  for k in jz pz jd pn; do cpu "${input[$k]}" >> "$tmp/c-$k"; done
done
sum() { awk '{ s += $1 } END { printf "%.2f", s }' "$tmp/c-$1"; }
rss() { sort -k2 -n "$tmp/c-$1" | tail -1 | cut -d' ' -f2; }
ratio() { echo "$(sum "$1") / $(sum "$2")" | bc -l | xargs printf %.2f; }
echo "-t 1 CPU over ${ROUNDS:-5} rounds: JSON Lines .zst $(sum jz)s, decompressed $(sum jd)s (peak RSS $(rss jd) kB); Parquet zstd $(sum pz)s (peak RSS $(rss pz) kB), uncompressed $(sum pn)s"
echo "-t 1 Parquet / JSON Lines, speed by CPU (target >= 0.8x): both compressed (zstd) $(ratio jz pz)x; both uncompressed $(ratio jd pn)x; zstd Parquet against decompressed JSON Lines $(ratio jd pz)x"
rm -rf "$tmp/zst"

# Memory does not grow with the input beyond the store: three copies of the corpus.
for i in 1 2 3; do mkdir -p "$tmp/x3/copy$i"; cp -r "$tmp/web3-jsonl/." "$tmp/x3/copy$i/"; done
read -r s1 r1 _ <<<"$(run "$tmp/web3-jsonl" 2)"
read -r s3 r3 _ <<<"$(run "$tmp/x3" 2)"
echo "JSON Lines -t 2, peak RSS: 1x ${r1} kB (${s1}s), 3x ${r3} kB (${s3}s)"
rm -rf "$tmp/x3"

# Equivalence on all of web3: same ids, same statuses (K, D, E, N/M) in order,
# for web3 converted by the project's converter (`webdedup to-jsonl`) and, for
# comparison, for the shared web3-jsonl (whose converter left out the tokens that
# start with `<`, such as `<`, `<=`, `<<`, in 6,635 documents).
cat > "$tmp/eq.py" <<'EOF'
import pathlib, re, sys
tmp, mode, other, what = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
def dd(d):
    out = []
    for f in sorted((tmp / d).rglob("*.dd")):
        for line in f.read_text().splitlines():
            m = re.search(r'(?: id="([^"]*)")? url=.* status="([^"]*)"', line)
            out.append((m.group(1), m.group(2)))
    return out
ids = []
for f in sorted((tmp / "web3").rglob("*.vert")):
    ids += re.findall(r'^<doc id="([^"]*)"', f.read_text(), re.M)
v, j = dd("ov"), dd(other)
diff = sum(1 for (_, vs), (jid, js), i in zip(v, j, ids) if vs != js or jid != i)
same = len(v) == len(j) == len(ids) and diff == 0
kept = sum(1 for _, s in v if s == "K" or "/" in s)
print(f"equivalence ({mode}, JSON Lines {what}): {len(v)} documents, {kept} kept; "
      + ("same ids and statuses" if same else f"{diff} documents differ"))
sys.exit(0 if same else 1)
EOF
"$bin" to-jsonl -i "$tmp/web3" -o "$tmp/conv"
status=0
for mode in exact near; do
  extra=(); [ "$mode" = near ] && extra=(-n)
  rm -rf "$tmp/ov" "$tmp/oc" "$tmp/oj"
  "$bin" dedup -i "$tmp/web3" -o "$tmp/ov" -q --dd "${extra[@]}"
  "$bin" dedup -i "$tmp/conv" -o "$tmp/oc" -q --dd "${extra[@]}"
  "$bin" dedup -i "$tmp/web3-jsonl" -o "$tmp/oj" -q --dd "${extra[@]}"
  python3 "$tmp/eq.py" "$tmp" "$mode" oc "converted by webdedup to-jsonl" || status=1
  python3 "$tmp/eq.py" "$tmp" "$mode" oj "the shared web3-jsonl" || true
  # Parquet: the shared web3-parquet holds web3-jsonl's texts: the same decisions.
  rm -rf "$tmp/op"
  "$bin" dedup -i "$tmp/web3-parquet" -o "$tmp/op" -q --dd "${extra[@]}"
  python3 - "$tmp" "$mode" <<'EOF2' || status=1
import pathlib, re, sys
tmp, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
def dd(d):
    return [line for f in sorted((tmp / d).rglob("*.dd")) for line in f.read_text().splitlines()]
j, p = dd("oj"), dd("op")
diff = sum(1 for a, b in zip(j, p) if a != b) + abs(len(j) - len(p))
print(f"equivalence ({mode}, Parquet web3-parquet against JSON Lines web3-jsonl): {len(p)} documents; "
      + ("same ids, URLs, titles and statuses" if diff == 0 else f"{diff} documents differ"))
sys.exit(0 if diff == 0 else 1)
EOF2
done
exit "$status"
