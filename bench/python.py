#!/usr/bin/env python3
"""worker.process through Python against the command line's single thread, same run.

Usage: python bench/python.py [CORPUS_DIR]   (default ../shared/corpus/web3)
Needs `pip install ./python` in the running interpreter and target/release/webdedup
(cargo build --release). Documents are read into memory first (both sides read
decompressed files from the page cache or memory); best of 3 each.
"""

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import webdedup

root = Path(__file__).resolve().parents[1]
corpus = Path(sys.argv[1] if len(sys.argv) > 1 else root.parent / "shared" / "corpus" / "web3")
tmp = Path(tempfile.mkdtemp())
files = sorted(corpus.rglob("*.zst"))
docs, total = [], 0
for f in files:
    out = tmp / "in" / f.relative_to(corpus).with_suffix("")
    out.parent.mkdir(parents=True, exist_ok=True)
    data = subprocess.run(["zstd", "-qdc", str(f)], check=True, capture_output=True).stdout
    out.write_bytes(data)
    total += len(data)
    cur = []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"<doc") and cur:
            docs.append(b"".join(cur))
            cur = []
        cur.append(line)
    if cur:
        docs.append(b"".join(cur))

best_py = float("inf")
for _ in range(3):
    w = webdedup.Dedup().create_worker()
    t = time.perf_counter()
    for d in docs:
        w.process(d)
    best_py = min(best_py, time.perf_counter() - t)

best_cli = float("inf")
for i in range(3):
    t = time.perf_counter()
    subprocess.run([str(root / "target/release/webdedup"), "dedup", "-q", "-t", "1", "--fsync", "off",
                    "-i", str(tmp / "in"), "-o", str(tmp / f"out{i}")], check=True)
    best_cli = min(best_cli, time.perf_counter() - t)

print(f"{len(docs)} documents, {total / 1e6:.1f} MB")
print(f"worker.process (Python, one thread): {best_py:.2f} s, {total / best_py / 1e6:.1f} MB/s")
print(f"webdedup dedup -t 1:                 {best_cli:.2f} s, {total / best_cli / 1e6:.1f} MB/s")
print(f"ratio: {best_cli / best_py * 100:.0f}% of the command line's throughput")
