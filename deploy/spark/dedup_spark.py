"""webdedup batch mode on Spark: every phase is one Spark job whose tasks call the
Python module (`import webdedup`) on their task index, with `mapPartitions` over the
phase's calls. Tasks are idempotent, so Spark's retries and speculative copies are
harmless; the outputs equal `webdedup dedup`'s (with --minhash, `webdedup
minhash`'s: resolve is the stage `bands` on every task, then `pick` on one). The
phases and options are deploy/batch_driver.py's (shared with the Ray driver); the
driver imports it from beside this folder (spark-submit in cluster mode: add
`--py-files deploy/batch_driver.py`).

IN, WORK and OUT must be on a file system every executor sees (NFS, a mounted
bucket). Every executor needs `pip install webdedup` (the wheel of ./python).

    spark-submit deploy/spark/dedup_spark.py --input IN --work WORK --output OUT \\
        --tasks 64 [--partitions 64] [--store STORE_DIR] [--dd]
        [--minhash [--shingles auto:5] [--hashes 112] [--bands 14] [--rows 8] [--verify 0.8]]

Run with plain `python` and `--master local[N]`, it binds to 127.0.0.1 (unless
SPARK_LOCAL_IP says otherwise); under spark-submit, the cluster's settings apply.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import batch_driver  # noqa: E402 (deploy/batch_driver.py, found through the line above)


def spark_phase(sc):
    """batch_driver's run_phase on Spark: one Spark task per call; collect() waits
    for the whole phase."""

    # Defined here, in the script Spark pickles by value: executors need only webdedup.
    def each(calls):
        import webdedup  # imported on the executor

        for name, args, kwargs in calls:
            yield getattr(webdedup, name)(*args, **kwargs)

    return lambda calls: sc.parallelize(calls, len(calls)).mapPartitions(each).collect()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    batch_driver.add_arguments(p)
    p.add_argument("--master", help="e.g. local[2] (default: spark-submit's)")
    a = p.parse_args()
    minhash = batch_driver.minhash_settings(p, a)
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
        batch_driver.run(
            spark_phase(spark.sparkContext), a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions, minhash
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
