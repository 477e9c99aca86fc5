"""webdedup batch mode on Spark: every phase is one Spark job whose tasks call the
Python module (`import webdedup`) on their task index, with `mapPartitions` over the
task indexes. Tasks are idempotent, so Spark's retries and speculative copies are
harmless; the outputs equal `webdedup dedup`'s (with --minhash, `webdedup
minhash`'s: resolve is the stage `bands` on every task, then `pick` on one).

IN, WORK and OUT must be on a file system every executor sees (NFS, a mounted
bucket). Every executor needs `pip install webdedup` (the wheel of ./python).

    spark-submit deploy/spark/dedup_spark.py --input IN --work WORK --output OUT \\
        --tasks 64 [--partitions 64] [--store STORE_DIR] [--dd]
        [--minhash [--shingles words:5] [--hashes 112] [--bands 14] [--rows 8] [--verify 0.8]]

Run with plain `python` and `--master local[N]`, it binds to 127.0.0.1 (unless
SPARK_LOCAL_IP says otherwise); under spark-submit, the cluster's settings apply.
"""

import argparse

# The MinHash settings passed through to the webdedup module (as the command line's
# --shingles, --hashes, ...); see `webdedup minhash --help`.
MINHASH_SETTINGS = ("shingles", "hashes", "bands", "rows", "verify")


def run(spark, inp, work, out, tasks, store=None, dd=False, partitions=64, minhash=None):
    """minhash: None (exact mode), or the MinHash settings as a dict (may be empty:
    the defaults)."""
    sc = spark.sparkContext

    def phase(fn, indexes=range(tasks)):
        # One Spark task per webdedup task; collect() waits for the whole phase.
        def each(part):
            import webdedup  # imported on the executor

            for i in part:
                yield i, fn(webdedup, i)

        return sc.parallelize(indexes, len(indexes)).mapPartitions(each).collect()

    common = dict(partitions=partitions)
    if minhash is not None:
        if store:
            raise ValueError("--minhash takes no --store (not supported yet)")
        common.update(minhash, minhash=True)
    phase(lambda w, i: w.batch_hash(inp, work, i, tasks, **common))
    if minhash is not None:
        # The order of the Slurm script's: bands on every task, then one pick.
        phase(lambda w, i: w.batch_resolve(inp, work, i, tasks, "bands", **common))
        phase(lambda w, i: w.batch_resolve(inp, work, i, tasks, "pick", **common), range(1))
    else:
        for stage in ("url-title", "docs", "paras"):
            phase(lambda w, i, s=stage: w.batch_resolve(inp, work, i, tasks, s, store=store, **common))
    phase(lambda w, i: w.batch_filter(inp, work, out, i, tasks, dd=dd, **common))
    if store:
        import webdedup

        return webdedup.batch_publish(inp, work, tasks, store, **common)
    return None


def add_minhash_arguments(p):
    g = p.add_argument_group("MinHash mode (the decisions of `webdedup minhash`; defaults as its)")
    g.add_argument("--minhash", action="store_true", help="near-duplicate documents by MinHash LSH")
    g.add_argument("--shingles", help="words:N or chars:N")
    g.add_argument("--hashes", type=int, help="signature values")
    g.add_argument("--bands", type=int, help="LSH bands")
    g.add_argument("--rows", type=int, help="signature values per band")
    g.add_argument("--verify", type=float, help="drop only at estimated Jaccard >= J (0: off)")


def minhash_settings(p, a):
    """The MinHash settings given (None without --minhash)."""
    given = {k: getattr(a, k) for k in MINHASH_SETTINGS if getattr(a, k) is not None}
    if not a.minhash:
        if given:
            p.error("--%s applies with --minhash" % next(iter(given)))
        return None
    if a.store:
        p.error("--minhash takes no --store (not supported yet)")
    return given


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--tasks", type=int, default=8, help="tasks of each phase (default 8)")
    p.add_argument("--partitions", type=int, default=64, help="hash partitions (default 64)")
    p.add_argument("--store", help="key store of earlier runs; this run's keys are published into it")
    p.add_argument("--dd", action="store_true", help="also write .dd lists")
    p.add_argument("--master", help="e.g. local[2] (default: spark-submit's)")
    add_minhash_arguments(p)
    a = p.parse_args()
    minhash = minhash_settings(p, a)
    import os
    import sys

    # Executors run the driver's interpreter unless told otherwise (it has webdedup).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if a.master and a.master.startswith("local"):
        # A Spark of our own on this machine: loopback, not the external interface.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName("webdedup-batch")
    if a.master:
        b = b.master(a.master)
    spark = b.getOrCreate()
    try:
        run(spark, a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions, minhash)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
