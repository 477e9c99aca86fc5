#!/usr/bin/env bash
# Extended check (not in scripts/test.sh: it downloads Ray, ~100 MB): the Ray
# driver of batch mode on a Ray of its own (2 CPUs; its files under a temporary
# directory, RAY_TMPDIR), run twice
# with --store as crawls are (a crawl, then the next), compared byte for byte with
# `webdedup dedup --store` run the same way; then with --minhash (and settings
# passed through) on all three crawls, compared with `webdedup minhash`. The
# first hash task of each mode raises once (tests/extended/fail_once): Ray must
# retry it.
#
# Usage: tests/extended/ray_local.sh   (RAY_VERSION=X.Y.Z pins Ray; default: the
# newest that installs; the venv is target/ray-venv)
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS
source tests/extended/driver_setup.lib.sh
driver_setup "ray${RAY_VERSION:+==$RAY_VERSION}" target/ray-venv
for run in 1 2; do
  PYTHONPATH=$PWD/tests/extended/fail_once WEBDEDUP_FAIL_ONCE=$tmp/failed-once RAY_ADDRESS='' RAY_TMPDIR=$tmp/ray \
    "$venv/bin/python" deploy/ray/dedup_ray.py --num-cpus 2 --input "$tmp/in$run" \
    --work "$tmp/work$run" --output "$tmp/ray$run" --tasks 3 --partitions 8 --dd \
    --store "$tmp/ray-store"
done
[ -e "$tmp/failed-once" ] || { echo "the injected failure did not happen" >&2; exit 1; }
diff -r "$tmp/cli1" "$tmp/ray1"
diff -r "$tmp/cli2" "$tmp/ray2"
# MinHash mode: the bytes of `webdedup minhash` (outputs, .pairs, .dd, files.idx).
mh=(--bands 8 --rows 14 --verify 0.85)
"$bin" minhash -q -i "$tmp/all" -o "$tmp/cli-mh" --dd "${mh[@]}"
pairs=$(minhash_pairs "$tmp/cli-mh")
PYTHONPATH=$PWD/tests/extended/fail_once WEBDEDUP_FAIL_ONCE=$tmp/failed-once-mh RAY_ADDRESS='' RAY_TMPDIR=$tmp/ray \
  "$venv/bin/python" deploy/ray/dedup_ray.py --num-cpus 2 --input "$tmp/all" \
  --work "$tmp/work-mh" --output "$tmp/ray-mh" --tasks 3 --partitions 8 --dd --minhash "${mh[@]}"
[ -e "$tmp/failed-once-mh" ] || { echo "the injected failure (MinHash) did not happen" >&2; exit 1; }
diff -r "$tmp/cli-mh" "$tmp/ray-mh"
echo "ray $("$venv/bin/python" -c 'import ray; print(ray.__version__)'): a failed task retried;" \
  "two runs with --store identical to webdedup dedup; --minhash identical to webdedup minhash" \
  "($pairs near-duplicates) ($((SECONDS - started)) s)"
