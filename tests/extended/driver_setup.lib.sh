# A library, sourced by tests/extended/ray_local.sh and spark_local.sh (not a check
# of its own): what both checks of a batch driver (deploy/ray, deploy/spark) set up
# and compare against.

# driver_setup PACKAGE VENV: builds the binary (unless WEBDEDUP_BIN names one),
# installs PACKAGE (newest, or the pin it is given as PACKAGE==X.Y.Z) and ./python
# into the venv VENV, and runs the command line the driver must equal. Sets $bin,
# $venv and $tmp (removed on exit), which holds in1/ and in2/ (the sample's crawls
# as two runs, as crawls come), cli1/ and cli2/ (`webdedup dedup --dd --store` on
# each in turn) and all/ (the three crawls, for MinHash mode).
driver_setup() {
  local package=$1
  venv=$2
  if [ -z "${WEBDEDUP_BIN:-}" ]; then
    cargo build -q --locked -p webdedup
    WEBDEDUP_BIN=$PWD/target/debug/webdedup
  fi
  bin=$WEBDEDUP_BIN
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -U "$package"
  "$venv/bin/pip" install -q --disable-pip-version-check ./python
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/in1" "$tmp/in2" "$tmp/all"
  cp -r sample/web3-mini/cc-2023-14 sample/web3-mini/cc-2023-50 "$tmp/in1/"
  cp -r sample/web3-mini/cc-2024-33 "$tmp/in2/"
  cp -r "$tmp/in1/." "$tmp/in2/." "$tmp/all/"
  "$bin" dedup -q -i "$tmp/in1" -o "$tmp/cli1" --dd --store "$tmp/cli-store"
  "$bin" dedup -q -i "$tmp/in2" -o "$tmp/cli2" --dd --store "$tmp/cli-store"
}

# minhash_pairs DIR: the near-duplicate pairs `webdedup minhash` wrote into DIR;
# fails when there are none (the comparison would prove nothing).
minhash_pairs() {
  local n
  n=$(find "$1" -name '*.pairs' -exec cat {} + | wc -l)
  [ "$n" -gt 0 ] || { echo "webdedup minhash found no near-duplicates in the sample" >&2; return 1; }
  echo "$n"
}
