"""rensa's MinHash LSH deduplication, keep-first in input order, for the quality
study's side-by-side (docs/minhash.md, "Quality study"). Not a test: it needs
rensa, which bench/minhash.sh installs into a throwaway venv.

    python bench/rensa_minhash.py INPUT_DIR OUT_DIR [alnum|split]

Reads every *.jsonl.zst under INPUT_DIR (files in sorted order, as the study reads
them) and runs rensa's RMinHash (128 permutations, seed 42) over each document's
word 5-grams (a text of fewer than 5 words is one shingle), with RMinHashLSH (16
bands of 8 rows). Words: the lowercased whitespace-separated words that hold a
letter or digit, as the study's ground truth takes them (`alnum`, the default), or
all of them (`split`, `text.lower().split()`). Documents are taken in
input order: a document is removed when a kept document it shares a band with has
a Jaccard estimate (full signatures) >= 0.8; otherwise it is kept and inserted.
Prints wall and CPU time, and writes, in (file rank, line index) terms:

    OUT_DIR/removed.tsv     r i: documents removed
    OUT_DIR/ids.tsv         r i id: every document
    OUT_DIR/name.txt        what ran, for the study's table

which `minhash_study --rensa OUT_DIR` scores against the ground truth.
"""

import io
import json
import os
import sys
import time

import rensa
import zstandard
from importlib.metadata import version

PERMUTATIONS, BANDS, CHECK, SEED = 128, 16, 0.8, 42


def shingles(text, alnum):
    words = text.lower().split()
    if alnum:
        words = [w for w in words if any(c.isalnum() for c in w)]
    if len(words) < 5:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + 5]) for i in range(len(words) - 4)]


def documents(path):
    with open(path, "rb") as f:
        reader = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), encoding="utf-8")
        for line in reader:
            if line.strip():
                yield json.loads(line)


def main():
    inp, out = sys.argv[1], sys.argv[2]
    words = sys.argv[3] if len(sys.argv) > 3 else "alnum"
    if words not in ("alnum", "split"):
        sys.exit(f"words must be alnum or split, not {words!r}")
    os.makedirs(out, exist_ok=True)
    files = sorted(
        os.path.relpath(os.path.join(d, f), inp)
        for d, _, fs in os.walk(inp)
        for f in fs
        if f.endswith(".jsonl.zst")
    )
    lsh = rensa.RMinHashLSH(threshold=CHECK, num_perm=PERMUTATIONS, num_bands=BANDS)
    kept = {}
    removed, ids = [], []
    n = 0
    wall0, cpu0 = time.time(), time.process_time()
    for rank, rel in enumerate(files):
        for index, doc in enumerate(documents(os.path.join(inp, rel))):
            ids.append((rank, index, doc.get("id", "")))
            sh = shingles(doc["text"], words == "alnum")
            if not sh:
                continue
            m = rensa.RMinHash(num_perm=PERMUTATIONS, seed=SEED)
            m.update(sh)
            if any(m.jaccard(kept[k]) >= CHECK for k in sorted(lsh.query(m))):
                removed.append((rank, index))
                continue
            lsh.insert(n, m)
            kept[n] = m
            n += 1
    wall, cpu = time.time() - wall0, time.process_time() - cpu0
    name = (
        f"rensa {version('rensa')} RMinHash ({PERMUTATIONS} permutations, {BANDS} x {PERMUTATIONS // BANDS}, "
        f"check {CHECK} on full signatures, words {words})"
    )
    print(f"{name}: documents={len(ids)} removed={len(removed)} wall_s={wall:.1f} cpu_s={cpu:.1f}", flush=True)
    with open(os.path.join(out, "name.txt"), "w") as f:
        f.write(name)
    with open(os.path.join(out, "removed.tsv"), "w") as f:
        f.writelines(f"{r}\t{i}\n" for r, i in removed)
    with open(os.path.join(out, "ids.tsv"), "w") as f:
        f.writelines(f"{r}\t{i}\t{d}\n" for r, i, d in ids)


if __name__ == "__main__":
    main()
