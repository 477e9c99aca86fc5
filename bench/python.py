#!/usr/bin/env python3
"""worker.process through Python against the command line's single thread, same run.

Usage: python bench/python.py [CORPUS_DIR]   (default ../shared/corpus/web3)
Needs `pip install ./python` in the running interpreter and target/release/webdedup
(cargo build --release). Documents are read into memory first (both sides read
decompressed files from the page cache or memory); best of 3 each. Cases: one
thread (the issue's target), two threads (workers in two Python threads: the GIL is
released while working), and feedback mode (`feedback=True` against `dedup -f`).
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

import threading


def python_run(threads, **options):
    """Seconds for all documents through `threads` workers of one Dedup, each in its
    own Python thread (documents dealt round-robin)."""
    d = webdedup.Dedup(**options)
    workers = [d.create_worker() for _ in range(threads)]

    def work(k):
        w = workers[k]
        if options.get("feedback"):
            for x in docs[k::threads]:
                w.process(x, source="bench")
        else:
            for x in docs[k::threads]:
                w.process(x)

    t = time.perf_counter()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return time.perf_counter() - t


def cli_run(i, *args):
    t = time.perf_counter()
    subprocess.run([str(root / "target/release/webdedup"), "dedup", "-q", "--fsync", "off", *args,
                    "-i", str(tmp / "in"), "-o", str(tmp / f"out{i}")], check=True)
    return time.perf_counter() - t


# Each case: (label, Python runner, CLI runner); best of 3, the runs interleaved.
cases = [
    ("one thread", lambda: python_run(1), lambda i: cli_run(i, "-t", "1")),
    ("two threads", lambda: python_run(2), lambda i: cli_run(i, "-t", "2")),
    ("feedback, one thread", lambda: python_run(1, feedback=True), lambda i: cli_run(i, "-t", "1", "-f")),
]
print(f"{len(docs)} documents, {total / 1e6:.1f} MB")
for label, py, cli in cases:
    best_py = best_cli = float("inf")
    for i in range(3):
        best_py = min(best_py, py())
        best_cli = min(best_cli, cli(i))
    print(f"{label}: worker.process {best_py:.2f} s ({total / best_py / 1e6:.1f} MB/s), "
          f"webdedup dedup {best_cli:.2f} s ({total / best_cli / 1e6:.1f} MB/s): "
          f"{best_cli / best_py * 100:.0f}% of the command line's throughput")
