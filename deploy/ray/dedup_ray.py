"""webdedup batch mode on Ray: every phase is a set of Ray tasks calling the Python
module (`import webdedup`) on their task index; `ray.get` on a phase's tasks is the
barrier before the next. Tasks are idempotent, so Ray retries them, after a lost
worker and after a Python exception alike; outputs equal `webdedup dedup`'s (with
--minhash, `webdedup minhash`'s: resolve is the stage `bands` on every task, then
`pick` on one).

IN, WORK, OUT (and STORE) must be on storage every node sees, and every node needs
the webdedup module (`pip install ./python`) in the interpreter Ray runs.

    python deploy/ray/dedup_ray.py --input IN --work WORK --output OUT --tasks 64 \\
        [--partitions 64] [--store STORE_DIR] [--dd] [--address ray://HEAD:10001]
        [--minhash [--shingles words:5] [--hashes 112] [--bands 14] [--rows 8] [--verify 0.8]]

Without --address (or RAY_ADDRESS) it starts a Ray of its own on this machine (no
dashboard; Ray listens on the machine's address, not only on loopback: Ray's choice).
"""

import argparse

# Attempts of a task beyond the first (a crash, a lost node, an exception).
RETRIES = 3

# The MinHash settings passed through to the webdedup module (as the command line's
# --shingles, --hashes, ...); see `webdedup minhash --help`.
MINHASH_SETTINGS = ("shingles", "hashes", "bands", "rows", "verify")


def run(inp, work, out, tasks, store=None, dd=False, partitions=64, minhash=None):
    """minhash: None (exact mode), or the MinHash settings as a dict (may be empty:
    the defaults)."""
    import ray

    common = dict(partitions=partitions)
    if minhash is not None:
        if store:
            raise ValueError("--minhash takes no --store (not supported yet)")
        common.update(minhash, minhash=True)
    # Only exact mode's resolve reads a store.
    resolve = dict(common, store=store) if minhash is None else common

    @ray.remote(max_retries=RETRIES, retry_exceptions=True)
    def task(kind, i, stage=None):
        import webdedup

        if kind == "hash":
            return webdedup.batch_hash(inp, work, i, tasks, **common)
        if kind == "resolve":
            return webdedup.batch_resolve(inp, work, i, tasks, stage, **resolve)
        return webdedup.batch_filter(inp, work, out, i, tasks, dd=dd, **common)

    ray.get([task.remote("hash", i) for i in range(tasks)])
    if minhash is not None:
        # The order of the Slurm script's: bands on every task, then one pick.
        ray.get([task.remote("resolve", i, "bands") for i in range(tasks)])
        ray.get(task.remote("resolve", 0, "pick"))
    else:
        for stage in ("url-title", "docs", "paras"):
            ray.get([task.remote("resolve", i, stage) for i in range(tasks)])
    ray.get([task.remote("filter", i) for i in range(tasks)])
    if store:
        import webdedup

        webdedup.batch_publish(inp, work, tasks, store, partitions=partitions)


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
    p.add_argument("--address", help="an existing Ray cluster (default: RAY_ADDRESS, else a local Ray)")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray (default: all)")
    add_minhash_arguments(p)
    a = p.parse_args()
    minhash = minhash_settings(p, a)
    import os

    import ray

    if a.address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=a.address)
    else:
        # A Ray of our own on this machine, for this run only.
        ray.init(include_dashboard=False, num_cpus=a.num_cpus)
    try:
        run(a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions, minhash)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
