"""webdedup batch mode on Ray: every phase is a set of Ray tasks calling the Python
module (`import webdedup`) on their task index; `ray.get` on a phase's tasks is the
barrier before the next. Tasks are idempotent, so Ray retries them, after a lost
worker and after a Python exception alike; outputs equal `webdedup dedup`'s (with
--minhash, `webdedup minhash`'s: resolve is the stage `bands` on every task, then
`pick` on one). The phases and options are deploy/batch_driver.py's (shared with
the Spark driver): the driver imports it from beside this folder.

IN, WORK, OUT (and STORE) must be on storage every node sees, and every node needs
the webdedup module (`pip install ./python`) in the interpreter Ray runs.

    python deploy/ray/dedup_ray.py --input IN --work WORK --output OUT --tasks 64 \\
        [--partitions 64] [--store STORE_DIR] [--dd] [--address ray://HEAD:10001]
        [--minhash [--shingles auto:5] [--hashes 112] [--bands 14] [--rows 8] [--verify 0.8]]

Without --address (or RAY_ADDRESS) it starts a Ray of its own on this machine (no
dashboard; Ray listens on the machine's address, not only on loopback: Ray's choice).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import batch_driver  # noqa: E402 (deploy/batch_driver.py, found through the line above)

# Attempts of a task beyond the first (a crash, a lost node, an exception).
RETRIES = 3


def ray_phase():
    """batch_driver's run_phase on Ray: one Ray task per call, all awaited."""
    import ray

    # Defined here, in the script Ray pickles by value: workers need only webdedup.
    @ray.remote(max_retries=RETRIES, retry_exceptions=True)
    def task(name, args, kwargs):
        import webdedup

        return getattr(webdedup, name)(*args, **kwargs)

    return lambda calls: ray.get([task.remote(*c) for c in calls])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    batch_driver.add_arguments(p)
    p.add_argument("--address", help="an existing Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    a = p.parse_args()
    minhash = batch_driver.minhash_settings(p, a)
    import ray

    if a.address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=a.address)
    else:
        # A Ray of our own on this machine, for this run only.
        ray.init(include_dashboard=False, num_cpus=a.num_cpus)
    try:
        batch_driver.run(ray_phase(), a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions, minhash)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
