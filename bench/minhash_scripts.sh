#!/usr/bin/env bash
# MinHash on a mixed-script corpus (issue 32, "any script"): recall / precision / F1
# per language of `webdedup minhash` at the defaults (`--shingles auto:5`), with
# `words:5` and with `chars:5`, against exact Jaccard truth of character 5-grams in
# zh / ja / th and word 5-grams elsewhere (crates/minhash/examples/minhash_script_study.rs).
#
#   bench/minhash_scripts.sh          (SEED=N: another draw of the corpus)
#
# Quality only, no timing: debug builds (the decisions are the same in every profile).
#
# Needs CORPUS (default ../shared/corpus) with web3-jsonl/, and apt-get (the Thai
# messages of LibreOffice, libreoffice-l10n-th, are downloaded into target/).
# Also remakes the test slice: `bench/minhash_scripts.sh slice`.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${CORPUS:-../shared/corpus}
work=target/scripts-study
mkdir -p "$work"
mo_dir=$work/th/usr/lib/libreoffice/program/resource/th/LC_MESSAGES
if [[ ! -d $mo_dir ]]; then
    (cd "$work" && apt-get download libreoffice-l10n-th && dpkg-deb -x libreoffice-l10n-th_*.deb th)
fi
if [[ ${1:-} == slice ]]; then
    python3 bench/minhash_scripts_corpus.py "$CORPUS/web3-jsonl" "$mo_dir" sample/scripts-mini/scripts.jsonl.gz --slice
    exit
fi
python3 bench/minhash_scripts_corpus.py "$CORPUS/web3-jsonl" "$mo_dir" "$work/corpus.jsonl"
cargo build -q --locked -p webdedup
cargo build -q --locked -p webdedup-minhash --example minhash_script_study
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
runs=()
for sh in auto:5 words:5 chars:5; do
    out=$work/out-${sh/:/}
    rm -rf "$out"
    target/debug/webdedup minhash -i "$work/corpus.jsonl" -o "$out" -q --shingles "$sh"
    runs+=("$sh=$out/corpus.dedup.pairs")
done
target/debug/examples/minhash_script_study "$work/corpus.jsonl" "${runs[@]}"
