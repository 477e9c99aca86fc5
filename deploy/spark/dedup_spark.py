"""webdedup batch mode on Spark: every phase is one Spark job whose tasks call the
Python module (`import webdedup`) on their task index, with `mapPartitions` over the
task indexes. Tasks are idempotent, so Spark's retries and speculative copies are
harmless; the outputs equal `webdedup dedup`'s.

IN, WORK and OUT must be on a file system every executor sees (NFS, a mounted
bucket). Every executor needs `pip install webdedup` (the wheel of ./python).

    spark-submit deploy/spark/dedup_spark.py --input IN --work WORK --output OUT \\
        --tasks 64 [--partitions 64] [--store STORE_DIR] [--dd]

Run with plain `python` and `--master local[N]`, it binds to 127.0.0.1 (unless
SPARK_LOCAL_IP says otherwise); under spark-submit, the cluster's settings apply.
"""

import argparse


def run(spark, inp, work, out, tasks, store=None, dd=False, partitions=64):
    sc = spark.sparkContext
    indexes = sc.parallelize(range(tasks), tasks)

    def phase(fn):
        # One Spark task per webdedup task; collect() waits for the whole phase.
        def each(part):
            import webdedup  # imported on the executor

            for i in part:
                yield i, fn(webdedup, i)

        return indexes.mapPartitions(each).collect()

    common = dict(partitions=partitions)
    phase(lambda w, i: w.batch_hash(inp, work, i, tasks, **common))
    for stage in ("url-title", "docs", "paras"):
        phase(lambda w, i, s=stage: w.batch_resolve(inp, work, i, tasks, s, store=store, **common))
    phase(lambda w, i: w.batch_filter(inp, work, out, i, tasks, dd=dd, **common))
    if store:
        import webdedup

        return webdedup.batch_publish(inp, work, tasks, store, **common)
    return None


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
    a = p.parse_args()
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
        run(spark, a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
