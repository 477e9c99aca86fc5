"""datatrove's MinHash deduplication on the web3 JSONL, for the side-by-side in
BENCHMARKS.md ("MinHash"). Not a test: it needs datatrove, which bench/minhash.sh
installs into a throwaway venv.

    python bench/datatrove_minhash.py INPUT_DIR WORK_DIR [WORKERS]

Runs datatrove's four MinHash steps (signatures, buckets, clusters, filter) with
its defaults (5-grams, 14 buckets x 8 hashes, 64-bit xxhash) over every
*.jsonl.zst under INPUT_DIR (one task per file, files in sorted order), with a
whitespace word tokenizer (datatrove's WhitespaceTokenizer calls spaCy). Prints
each step's wall and CPU time, and writes, in (file rank, line index) terms:

    WORK_DIR/export/candidates.tsv  r1 i1 r2 i2: pairs that share a bucket
    WORK_DIR/export/removed.tsv     r i: documents the filter step removed
    WORK_DIR/export/ids.tsv         r i id: every document

which `minhash_study --datatrove WORK_DIR/export` scores against the ground truth.
Peak memory: run the script under `/usr/bin/time -v` (bench/minhash.sh does).
"""

import os
import resource
import struct
import sys
import time
from collections import defaultdict


def main():
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.hashing import HashConfig
    from datatrove.utils.word_tokenizers import WordTokenizer

    class SplitTokenizer(WordTokenizer):
        """Words = whitespace-separated tokens (no spaCy, no NLTK)."""

        def word_tokenize(self, text):
            return text.split()

        def sent_tokenize(self, text):
            return text.split("\n")

        def span_tokenize(self, text):
            spans, pos = [], 0
            for w in text.split():
                pos = text.index(w, pos)
                spans.append((pos, pos + len(w)))
                pos += len(w)
            return spans

    inp, work = sys.argv[1], sys.argv[2]
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    files = sorted(
        os.path.relpath(os.path.join(d, f), inp)
        for d, _, fs in os.walk(inp)
        for f in fs
        if f.endswith(".jsonl.zst")
    )
    tasks = len(files)
    config = MinhashConfig(
        n_grams=5, num_buckets=14, hashes_per_bucket=8, hash_config=HashConfig(precision=64, hash_fc="xxhash")
    )

    def reader():
        return JsonlReader(inp, glob_pattern="**/*.jsonl.zst", compression="zstd", text_key="text", id_key="id")

    steps = [
        (
            "signatures",
            [reader(), MinhashDedupSignature(output_folder=f"{work}/signatures", config=config, language=SplitTokenizer())],
            tasks,
        ),
        (
            "buckets",
            [
                MinhashDedupBuckets(
                    input_folder=f"{work}/signatures", output_folder=f"{work}/buckets", config=config
                )
            ],
            config.num_buckets,
        ),
        ("clusters", [MinhashDedupCluster(input_folder=f"{work}/buckets", output_folder=f"{work}/remove_ids", config=config)], 1),
        (
            "filter",
            [
                reader(),
                MinhashDedupFilter(input_folder=f"{work}/remove_ids"),
                JsonlWriter(f"{work}/deduped"),
            ],
            tasks,
        ),
    ]
    total_wall = total_cpu = 0.0
    for name, pipeline, n in steps:
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        me0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.time()
        LocalPipelineExecutor(
            pipeline=pipeline, tasks=n, workers=min(workers, n), logging_dir=f"{work}/logs/{name}"
        ).run()
        wall = time.time() - t0
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        me1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) + (
            me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime
        )
        total_wall += wall
        total_cpu += cpu
        print(f"datatrove {name}: tasks={n} workers={min(workers, n)} wall_s={wall:.1f} cpu_s={cpu:.1f}", flush=True)
    print(f"datatrove total: wall_s={total_wall:.1f} cpu_s={total_cpu:.1f} files={tasks}", flush=True)
    export(work, inp, files)


def export(work, inp, files):
    """Candidate pairs from the .dups files, removed documents from .remove files,
    and the id of every (file rank, line index) so the study can check that it
    numbers the documents the same way."""
    import json

    import zstandard

    out = f"{work}/export"
    os.makedirs(out, exist_ok=True)
    with open(f"{out}/ids.tsv", "w") as ids:
        for rank, rel in enumerate(files):
            with open(os.path.join(inp, rel), "rb") as f:
                text = zstandard.ZstdDecompressor().stream_reader(f).read().decode()
            for i, line in enumerate(text.splitlines()):
                ids.write(f"{rank}\t{i}\t{json.loads(line)['id']}\n")
    n_pairs = 0
    with open(f"{out}/candidates.tsv", "w") as cand:
        for name in sorted(os.listdir(f"{work}/buckets")):
            if not name.endswith(".dups"):
                continue
            # A bucket file lists (previous, next) for each run of equal band
            # signatures in sorted order: the runs are the groups sharing the band.
            parent = {}

            def find(x):
                while parent.setdefault(x, x) != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            with open(f"{work}/buckets/{name}", "rb") as f:
                data = f.read()
            for f1, d1, f2, d2 in struct.iter_unpack("<4I", data):
                ra, rb = find((f1, d1)), find((f2, d2))
                if ra != rb:
                    parent[rb] = ra
            groups = defaultdict(list)
            for x in list(parent):
                groups[find(x)].append(x)
            for g in groups.values():
                g.sort()
                for i in range(len(g)):
                    for j in range(i + 1, len(g)):
                        cand.write(f"{g[i][0]}\t{g[i][1]}\t{g[j][0]}\t{g[j][1]}\n")
                        n_pairs += 1
    n_removed = 0
    with open(f"{out}/removed.tsv", "w") as rem:
        for name in sorted(os.listdir(f"{work}/remove_ids")):
            if not name.endswith(".remove"):
                continue
            rank = int(name.split(".")[0])
            with open(f"{work}/remove_ids/{name}", "rb") as f:
                for (doc,) in struct.iter_unpack("<I", f.read()):
                    rem.write(f"{rank}\t{doc}\n")
                    n_removed += 1
    print(f"datatrove export: {n_pairs} candidate pair rows (before dedup), {n_removed} removed -> {out}", flush=True)


if __name__ == "__main__":
    main()
