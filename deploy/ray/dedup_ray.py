"""webdedup batch mode on Ray: every phase is a set of Ray tasks calling the Python
module (`import webdedup`) on their task index; `ray.get` on a phase's tasks is the
barrier before the next. Tasks are idempotent, so Ray retries them, after a lost
worker and after a Python exception alike; outputs equal `webdedup dedup`'s.

IN, WORK, OUT (and STORE) must be on storage every node sees, and every node needs
the webdedup module (`pip install ./python`) in the interpreter Ray runs.

    python deploy/ray/dedup_ray.py --input IN --work WORK --output OUT --tasks 64 \\
        [--partitions 64] [--store STORE_DIR] [--dd] [--address ray://HEAD:10001]

Without --address (or RAY_ADDRESS) it starts a Ray of its own on this machine (no
dashboard; Ray listens on the machine's address, not only on loopback: Ray's choice).
"""

import argparse

# Attempts of a task beyond the first (a crash, a lost node, an exception).
RETRIES = 3


def run(inp, work, out, tasks, store=None, dd=False, partitions=64):
    import ray

    @ray.remote(max_retries=RETRIES, retry_exceptions=True)
    def task(kind, i, stage=None):
        import webdedup

        if kind == "hash":
            return webdedup.batch_hash(inp, work, i, tasks, partitions=partitions)
        if kind == "resolve":
            return webdedup.batch_resolve(inp, work, i, tasks, stage, store=store, partitions=partitions)
        return webdedup.batch_filter(inp, work, out, i, tasks, dd=dd, partitions=partitions)

    ray.get([task.remote("hash", i) for i in range(tasks)])
    for stage in ("url-title", "docs", "paras"):
        ray.get([task.remote("resolve", i, stage) for i in range(tasks)])
    ray.get([task.remote("filter", i) for i in range(tasks)])
    if store:
        import webdedup

        webdedup.batch_publish(inp, work, tasks, store, partitions=partitions)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--tasks", type=int, default=8, help="tasks of each phase (default 8)")
    p.add_argument("--partitions", type=int, default=64, help="hash partitions (default 64)")
    p.add_argument("--store", help="key store of earlier runs; this run's keys are published into it")
    p.add_argument("--dd", action="store_true", help="also write .dd lists")
    p.add_argument("--address", help="an existing Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    a = p.parse_args()
    import os

    import ray

    if a.address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=a.address)
    else:
        # A Ray of our own on this machine, for this run only.
        ray.init(include_dashboard=False, num_cpus=a.num_cpus)
    try:
        run(a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
