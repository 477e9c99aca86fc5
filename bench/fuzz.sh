#!/usr/bin/env bash
# A short cargo-fuzz run of each fuzz target (fuzz/fuzz_targets): the vertical reader
# with the policy, and the hash servers' wire decoder. Each starts from its checked-in
# corpus (fuzz/corpus/TARGET, which `cargo test` replays) and writes what it finds to
# a scratch directory, so the repository is left as it was; a crash is saved under
# fuzz/artifacts/TARGET and makes the script exit 1.
#
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]   (default 60 s each, every target)
# Env:   UPDATE_CORPUS=1  merge the new inputs into fuzz/corpus/TARGET, minimized
#                         (`cargo fuzz cmin`), to commit;
#        WORK (scratch dir, default a fresh temp dir).
# A crash found here: fix it, and add its (minimized: `cargo fuzz tmin`) input to
# fuzz/regressions/TARGET under a name that says what it was; `cargo test` replays
# those too, and cmin never drops them.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a compiler that takes
# -Zsanitizer: a nightly toolchain if rustup has one (`cargo +nightly fuzz`), else the
# stable one with RUSTC_BOOTSTRAP=1, which unlocks nightly flags on a stable compiler.
# That is acceptable for a benchmark script, never for the build itself.
set -euo pipefail
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(vertical wire)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/webdedup-fuzz.XXXXXX)}
mkdir -p "$WORK"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "bench/fuzz.sh: cargo-fuzz is missing: install it with 'cargo install cargo-fuzz'" \
        "(outside the repository), then run this script again." >&2
    exit 2
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    CARGO=(cargo +nightly)
    HOW="nightly toolchain ($(rustc +nightly -V))"
else
    CARGO=(env RUSTC_BOOTSTRAP=1 cargo)
    HOW="stable toolchain with RUSTC_BOOTSTRAP=1 ($(rustc -V))"
fi
cd "$ROOT/fuzz"
echo "# $(date -u +%FT%TZ) on $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(cargo fuzz --version), $HOW; scratch: $WORK"
if ! "${CARGO[@]}" fuzz build -O >"$WORK/build.log" 2>&1; then
    tail -20 "$WORK/build.log" >&2
    echo "bench/fuzz.sh: cannot build the fuzz targets with the $HOW (log: $WORK/build.log)." \
        "cargo-fuzz needs -Zsanitizer: install a nightly toolchain (rustup toolchain install" \
        "nightly) or a stable one whose sanitizer runtimes are present." >&2
    exit 2
fi

# Inputs longer than this are not tried: keeps the corpus small (bytes).
max_len() { case "$1" in vertical) echo 4096 ;; *) echo 1024 ;; esac; }

status=0
for t in "${TARGETS[@]}"; do
    mkdir -p "$WORK/new/$t" "$ROOT/fuzz/artifacts/$t"
    before=$(ls "$ROOT/fuzz/corpus/$t" 2>/dev/null | wc -l)
    echo "## $t: ${SECONDS_EACH} s from $before checked-in inputs"
    mkdir -p "$ROOT/fuzz/regressions/$t"
    if "${CARGO[@]}" fuzz run -O "$t" "$WORK/new/$t" "$ROOT/fuzz/corpus/$t" \
        "$ROOT/fuzz/regressions/$t" -- \
        -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$t")" \
        -artifact_prefix="$ROOT/fuzz/artifacts/$t/" -print_final_stats=1 \
        >"$WORK/$t.log" 2>&1; then
        grep -aE '^#[0-9]+ +DONE|^Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb' \
            "$WORK/$t.log" || tail -3 "$WORK/$t.log"
        echo "new inputs: $(ls "$WORK/new/$t" | wc -l) (in $WORK/new/$t)"
    else
        status=1
        grep -aE 'panicked|ERROR: |SUMMARY|Test unit written' "$WORK/$t.log" | head -20
        echo "$t: FAILED, log $WORK/$t.log, reproducer in fuzz/artifacts/$t/"
    fi
    if [ "${UPDATE_CORPUS:-0}" = 1 ] && [ $status = 0 ]; then
        cp -n "$WORK/new/$t"/* "$ROOT/fuzz/corpus/$t/" 2>/dev/null || true
        # Edges only (no hit counters): a few hundred inputs instead of thousands.
        "${CARGO[@]}" fuzz cmin -O "$t" "$ROOT/fuzz/corpus/$t" -- -max_len="$(max_len "$t")" \
            -use_counters=0 >"$WORK/$t.cmin.log" 2>&1
        echo "corpus now: $(ls "$ROOT/fuzz/corpus/$t" | wc -l) inputs," \
            "$(du -sb "$ROOT/fuzz/corpus/$t" | cut -f1) bytes"
    fi
done
exit $status
